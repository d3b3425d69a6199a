"""Open an input file once checked: gzip found by its magic bytes, a peek at the first lines.

Every problem becomes a one-line :class:`~receval.exceptions.ReceValError` naming the file.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from receval.exceptions import ReceValError

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
#: bytes read to sniff the format, the delimiter and the column types
PEEK_BYTES = 1 << 20

#: a callback told how many bytes of the file on disk have been consumed so far
Progress = Callable[[int], None]


def check_file(path: str | Path, side: str) -> Path:
    """``path`` as a :class:`Path` once it is known to be a readable, non-empty file.

    Example:
        >>> check_file("/no/such/file.csv", "truth")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: truth file not found: /no/such/file.csv
    """
    path = Path(path)
    if not path.exists():
        raise ReceValError(f"{side} file not found: {path}")
    if path.is_dir():
        raise ReceValError(f"{side} path is a directory, not a file: {path}")
    try:
        with path.open("rb") as fh:
            first = fh.read(1)
    except OSError as err:
        raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None
    if not first:
        raise ReceValError(f"{side} file is empty: {path}")
    return path


def magic(path: Path, n: int = 4) -> bytes:
    """The first ``n`` bytes of the file (to recognise gzip and Parquet).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "x"; _ = p.write_bytes(b"PAR1....")
        >>> magic(p)
        b'PAR1'
    """
    with path.open("rb") as fh:
        return fh.read(n)


def is_gzip(path: Path) -> bool:
    """Whether the file is gzip-compressed, by its content rather than its name.

    Example:
        >>> import gzip, tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"; _ = p.write_bytes(gzip.compress(b"a"))
        >>> is_gzip(p)
        True
    """
    return magic(path, 2) == GZIP_MAGIC


def open_stream(path: Path, side: str) -> tuple[pa.NativeFile, Callable[[], int]]:
    """A decompressed Arrow input stream, and a function giving the bytes read from disk.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"; _ = p.write_bytes(b"a,b\\n")
        >>> stream, done = open_stream(p, "truth")
        >>> stream.read(), done()
        (b'a,b\\n', 4)
    """
    try:
        raw = pa.OSFile(str(path), "rb")
    except OSError as err:
        raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None
    if is_gzip(path):
        return pa.CompressedInputStream(raw, "gzip"), raw.tell
    return raw, raw.tell


def head_text(path: Path, side: str, max_bytes: int = PEEK_BYTES) -> str:
    """Up to ``max_bytes`` of the (decompressed) file, cut after its last complete line.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"; _ = p.write_text("a,b\\n1,2")
        >>> head_text(p, "truth")
        'a,b\\n1,2'
    """
    try:
        if is_gzip(path):
            with gzip.open(path, "rb") as fh:
                data = fh.read(max_bytes)
        else:
            with path.open("rb") as fh:
                data = fh.read(max_bytes)
    except (OSError, EOFError, zlib.error) as err:
        raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None
    if len(data) == max_bytes and b"\n" in data:
        data = data[: data.rfind(b"\n") + 1]
    if b"\x00" in data[:4096]:
        raise ReceValError(f"cannot read {side} file {path}: it is binary, not text")
    return data.decode("utf-8", errors="replace")


def head_lines(path: Path, side: str, n: int = 50) -> list[str]:
    """The first ``n`` non-blank lines of the file, without line ends.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"; _ = p.write_text("a,b\\n\\n1,2\\n")
        >>> head_lines(p, "truth")
        ['a,b', '1,2']
    """
    lines = [line for line in head_text(path, side).splitlines() if line.strip()]
    if not lines:
        raise ReceValError(f"{side} file is empty: {path}")
    return lines[:n]


def one_line(err: BaseException, limit: int = 240) -> str:
    """The first line of an exception's message, shortened, for a one-line error.

    Example:
        >>> one_line(ValueError("first\\nsecond"))
        'first'
    """
    text = str(err).strip()
    if isinstance(err, OSError) and err.strerror:
        text = err.strerror.lower()
    first = text.splitlines()[0] if text else type(err).__name__
    return first if len(first) <= limit else first[: limit - 3] + "..."
