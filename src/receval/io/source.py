"""Open an input file once checked: gzip found by its magic bytes, a peek at the first lines.

Every problem becomes a one-line :class:`~receval.exceptions.ReceValError` naming the file.
"""

from __future__ import annotations

import atexit
import gzip
import shutil
import stat
import tempfile
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


#: pipes already read, by (path, device, inode): the regular file holding what each gave
_SPOOLED: dict[tuple[str, int, int], Path] = {}


def seekable(path: str | Path) -> Path:
    """``path``, or, for a pipe or another input that can be read only once (``-t <(cat
    t.csv)``, ``/dev/stdin``), a temporary regular file holding its bytes, read once and
    reused by every later read of the same path (the format is sniffed, then the file read).

    Example:
        >>> import os, threading
        >>> r, w = os.pipe()
        >>> t = threading.Thread(target=lambda: (os.write(w, b"a,b\\n"), os.close(w)))
        >>> t.start(); copy = seekable(f"/dev/fd/{r}"); t.join()
        >>> copy.read_bytes(), seekable(f"/dev/fd/{r}") == copy
        (b'a,b\\n', True)
        >>> os.close(r)
    """
    path = Path(path)
    try:
        info = path.stat()
    except OSError:
        return path  # check_file names the problem
    if stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
        return path
    key = (str(path), info.st_dev, info.st_ino)
    if key not in _SPOOLED:
        folder = Path(tempfile.mkdtemp(prefix="receval-pipe-"))
        atexit.register(shutil.rmtree, folder, True)
        copy = folder / (path.name or "input")
        try:
            with path.open("rb") as src, copy.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except OSError as err:
            raise ReceValError(f"cannot read {path}: {one_line(err)}") from None
        _SPOOLED[key] = copy
    return _SPOOLED[key]


def read_text(path: str | Path, side: str) -> str:
    """The whole text (UTF-8) of a small input such as a gate file, once :func:`check_file`
    has checked it (the one check of every input file: a missing, directory, unreadable or
    empty file is refused the same way as a truth file); a file that is not UTF-8 is a
    one-line error naming the file.

    Example:
        >>> read_text("/no/such/gate.toml", "gate")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: gate file not found: /no/such/gate.toml
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "gate.toml"; _ = p.write_text("")
        >>> read_text(p, "gate")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: gate file is empty: .../gate.toml
    """
    source = check_file(path, side)
    try:
        return source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None


def check_file(path: str | Path, side: str) -> Path:
    """``path`` as a :class:`Path` once it is known to be a readable, non-empty file (a pipe
    is read once into a regular file: :func:`seekable`, which is what is returned); the
    errors name ``path`` as given.

    Example:
        >>> check_file("/no/such/file.csv", "truth")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: truth file not found: /no/such/file.csv
    """
    source = seekable(path)
    if not source.exists():
        raise ReceValError(f"{side} file not found: {path}")
    if source.is_dir():
        raise ReceValError(f"{side} path is a directory, not a file: {path}")
    try:
        with source.open("rb") as fh:
            first = fh.read(1)
    except OSError as err:
        raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None
    if not first:
        raise ReceValError(f"{side} file is empty: {path}")
    return source


def magic(path: Path, n: int = 4) -> bytes:
    """The first ``n`` bytes of the file (to recognise gzip and Parquet).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "x"; _ = p.write_bytes(b"PAR1....")
        >>> magic(p)
        b'PAR1'
    """
    with seekable(path).open("rb") as fh:
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
    path = seekable(path)
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
    path = seekable(path)
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
