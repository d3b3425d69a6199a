"""A rich progress bar over the bytes of a file being read (shown for large files only)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from receval.io.source import Progress as ProgressCallback

#: files at least this large get a progress bar (smaller ones read in about a second)
LARGE_FILE_BYTES = 64 << 20


@contextmanager
def file_progress(
    path: str | Path, label: str, console: Console, *, force: bool = False
) -> Iterator[ProgressCallback | None]:
    """A callback for a reader's ``progress=``, drawing a bar on ``console``; ``None`` (no bar)
    when the console is not a terminal or the file is small, unless ``force``.

    Example:
        >>> import io, tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"; _ = p.write_text("user,item\\n1,2\\n")
        >>> with file_progress(p, "truth", Console(file=io.StringIO())) as callback:
        ...     callback is None
        True
    """
    size = Path(path).stat().st_size if Path(path).exists() else 0
    if not force and (not console.is_terminal or size < LARGE_FILE_BYTES):
        yield None
        return
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
               TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(f"reading {label}", total=size)
        yield lambda done: bar.update(task, completed=done)
