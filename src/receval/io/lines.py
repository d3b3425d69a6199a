"""Where a data row is in its file: the 1-based line number, for error messages.

Readers know a bad value's row (0-based, among the rows read); the user needs the line of the
file. The header and the lines a reader skips (empty lines, TREC ``#`` comments) are counted
here, on the error path only: the file is read again line by line up to that row.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

from receval.io.source import is_gzip

#: which lines a reader skips: Arrow's CSV reader skips empty lines; the JSON reader and the
#: TREC reader skip blank ones; TREC also skips ``#`` comments (as trec_eval 10)
SKIPPED: dict[str, Callable[[bytes], bool]] = {
    "csv": lambda line: line in (b"\n", b"\r\n", b""),
    "jsonl": lambda line: not line.strip(),
    "trec": lambda line: not line.strip() or line.lstrip().startswith(b"#"),
}


def data_line(path: Path, row: int, *, kind: str, header_lines: int = 0) -> int | None:
    """The 1-based line of ``path`` that holds data row ``row`` (0-based), or ``None`` when
    the file has fewer rows (or cannot be read again).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
        >>> _ = p.write_text("user,item\\n\\nu1,i1\\nu2,i2\\n")
        >>> data_line(p, 1, kind="csv", header_lines=1)
        4
    """
    skipped = SKIPPED[kind]
    wanted = row + header_lines
    seen = 0
    try:
        opener = gzip.open if is_gzip(path) else open
        with opener(path, "rb") as fh:
            for number, line in enumerate(fh, start=1):
                if skipped(line):
                    continue
                if seen == wanted:
                    return number
                seen += 1
    except (OSError, EOFError):
        return None
    return None


def locator(path: Path, kind: str, header_lines: int = 0) -> Callable[[int], str]:
    """A function that says where a data row is: ``line N of FILE`` for text files, ``row N of
    FILE`` (0-based) for Parquet.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.run"
        >>> _ = p.write_text("# a comment\\nq1 Q0 d1 1 2.0 t\\n")
        >>> locator(p, "trec")(0).endswith("line 2 of " + str(p))
        True
    """
    if kind not in SKIPPED:
        return lambda row: f"row {row} of {path}"

    def where(row: int) -> str:
        line = data_line(path, row, kind=kind, header_lines=header_lines)
        return f"line {line} of {path}" if line is not None else f"data row {row} of {path}"

    return where
