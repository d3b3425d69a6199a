"""Output files written safely: checked before any work, written whole or not at all.

:func:`check_outputs` refuses, before the evaluation starts, an output path that is one of the
inputs (also through a symbolic or hard link), that two outputs share, whose suffix does not
fit, that is a directory or a read-only file, or whose directory cannot be written.

:func:`atomic_output` gives a temporary file in the target directory to write to; once the
writer has finished, the file is flushed to disk and renamed over the target in one step
(``os.replace``). An error, Ctrl-C, ``SIGTERM`` (under :func:`sigterm_as_exit`) or a killed
process leaves the old file at the path as it was, never a partial file; only ``SIGKILL``
leaves a hidden ``.NAME.*.tmp.SUFFIX`` file beside it. Two runs writing the same path leave
one of the two complete files.

:func:`write_table` writes a table as CSV, TSV or Parquet (by suffix) that way, with the text
cells of CSV/TSV neutralised against formula injection (see :mod:`receval.io.formulas`).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import pyarrow as pa

from receval.exceptions import ReceValError
from receval.io.formulas import neutralise_table
from receval.io.source import one_line

TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq")


def check_outputs(outputs: Mapping[str, tuple[str | Path | None, Sequence[str]]],
                  inputs: Iterable[str | Path] = ()) -> dict[str, Path]:
    """Check every output before any work: ``outputs`` maps a label (the flag) to ``(path or
    None, allowed suffixes)``; the checked paths come back by label (``None`` ones left out).

    Raises :class:`~receval.exceptions.ReceValError` naming the flag and the path when a path
    has another suffix, is a directory, a read-only file or not a regular file, is one of
    ``inputs`` (same file, also through links), is shared by two outputs, or cannot be created
    (a parent is a file, or the nearest existing directory is not writable). Missing parent
    directories are fine: :func:`atomic_output` creates them.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "truth.csv").write_text("user,item\\n")
        >>> ok = check_outputs({"--per-user": (d / "out.csv", TABLE_SUFFIXES),
        ...                     "--report": (None, (".html",))}, [d / "truth.csv"])
        >>> {flag: path.name for flag, path in ok.items()}
        {'--per-user': 'out.csv'}
        >>> try:
        ...     check_outputs({"--per-user": (d / "truth.csv", TABLE_SUFFIXES)}, [d / "truth.csv"])
        ... except ReceValError as err:
        ...     print(str(err).replace(str(d), "DIR"))
        --per-user DIR/truth.csv is the input file: writing it would destroy it; choose another path
    """
    checked: dict[str, Path] = {}
    for label, (path, suffixes) in outputs.items():
        if path is None or str(path) == "":
            continue
        checked[label] = _check_one(Path(path), label, tuple(suffixes))
    _refuse_inputs(checked, [Path(p) for p in inputs])
    _refuse_shared(checked)
    return checked


def _check_one(path: Path, label: str, suffixes: tuple[str, ...]) -> Path:
    if suffixes and path.suffix.lower() not in suffixes:
        raise ReceValError(f"{label} must end in {', '.join(suffixes)}; got {str(path)!r}")
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):  # to be created (the probe says if not)
        info = None
    except OSError as err:
        raise ReceValError(f"{label}: cannot write {path}: {one_line(err)}") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise ReceValError(f"{label} {path} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise ReceValError(f"{label} {path} exists and is not a regular file")
        if not os.access(path, os.W_OK):
            raise ReceValError(f"{label}: cannot write {path}: the file is read-only")
    _probe_directory(_target(path).parent, label, path)
    return path


def _probe_directory(directory: Path, label: str, path: Path) -> None:
    """Create and remove a temporary file in ``directory`` (or its nearest existing ancestor,
    when it is still to be created), so a directory we cannot write fails now, not later."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ReceValError(f"{label}: cannot write {path}: {existing} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".receval-probe.", suffix=".tmp")
    except OSError as err:
        raise ReceValError(f"{label}: cannot write {path}: {existing}: "
                           f"{one_line(err)}") from None
    os.close(fd)
    os.unlink(probe)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _refuse_inputs(outputs: Mapping[str, Path], inputs: Sequence[Path]) -> None:
    for label, path in outputs.items():
        target, mine = _target(path), _identity(path)
        for source in inputs:
            if _target(source) == target or (mine is not None and mine == _identity(source)):
                same = "" if str(source) == str(path) else f" {source}"
                raise ReceValError(f"{label} {path} is the input file{same}: writing it "
                                   "would destroy it; choose another path")


def _refuse_shared(outputs: Mapping[str, Path]) -> None:
    seen: dict[Path, str] = {}
    for label, path in outputs.items():
        target = _target(path)
        if target in seen:
            raise ReceValError(f"{seen[target]} and {label} name the same file {path}; "
                               "give each output its own path")
        seen[target] = label


def _target(path: Path) -> Path:
    """The file a write to ``path`` changes: symbolic links resolved, as ``open`` would."""
    return Path(os.path.realpath(path))


def _umask() -> int:
    """The process's umask, read without changing it where Linux allows."""
    with contextlib.suppress(OSError):
        status = Path("/proc/self/status").read_text()
        found = re.search(r"^Umask:\s*([0-7]+)", status, re.M)
        if found:
            return int(found.group(1), 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(path: str | Path, label: str | None = None) -> Iterator[Path]:
    """A temporary path to write ``path``'s content to; on a clean exit it is fsync'd and
    renamed over ``path`` (a symbolic link is followed: its target is replaced).

    On an exception (or Ctrl-C) the temporary file is removed and ``path`` is left as it was;
    an ``OSError`` (a full disk, a lost mount) becomes a :class:`ReceValError` naming ``path``.
    The file gets the permissions (and, where allowed, the owner) of the file it replaces, or
    those a new file would get (``0o666`` less the umask). The temporary name keeps ``path``'s
    suffix, for writers that choose the format by it.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "out.csv"; _ = p.write_text("old")
        >>> try:
        ...     with atomic_output(p) as tmp:
        ...         _ = tmp.write_text("half of the new")
        ...         raise KeyboardInterrupt
        ... except KeyboardInterrupt:
        ...     pass
        >>> p.read_text(), sorted(x.name for x in p.parent.iterdir())
        ('old', ['out.csv'])
        >>> with atomic_output(p) as tmp:
        ...     _ = tmp.write_text("new")
        >>> p.read_text()
        'new'
    """
    final = _target(Path(path))
    name = f"{label}: cannot write {path}" if label else f"cannot write {path}"
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.",
                                        suffix=f".tmp{final.suffix}")
    except OSError as err:
        raise ReceValError(f"{name}: {one_line(err)}") from None
    tmp = Path(tmp_name)
    try:
        os.close(fd)
        yield tmp
        try:
            old = final.stat()
        except FileNotFoundError:
            os.chmod(tmp, 0o666 & ~_umask())
        else:  # the replaced file's mode, and its owner where we may set it
            os.chmod(tmp, stat.S_IMODE(old.st_mode))
            if hasattr(os, "chown") and (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
                with contextlib.suppress(OSError):
                    os.chown(tmp, old.st_uid, old.st_gid)
        _fsync(tmp)
        os.replace(tmp, final)
        _fsync_directory(final.parent)
    except BaseException as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(err, OSError) and not isinstance(err, ReceValError):
            raise ReceValError(f"{name}: {one_line(err)}") from err
        raise


@contextlib.contextmanager
def sigterm_as_exit() -> Iterator[None]:
    """While writing: ``SIGTERM`` raises ``SystemExit(143)`` (the shell's code for it), so the
    temporary files of :func:`atomic_output` are removed as on Ctrl-C. Only in the main thread
    (signal handlers can be set nowhere else); the previous handler comes back afterwards.

    Example:
        >>> import signal
        >>> with sigterm_as_exit():
        ...     signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        True
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDWR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (POSIX; a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def write_table(table: pa.Table, path: str | Path, *, raw: bool = False,
                label: str | None = None, atomic: bool = True) -> Path:
    """Write ``table`` to ``path`` as CSV, TSV or Parquet (by suffix), atomically
    (:func:`atomic_output`; ``atomic=False`` writes ``path`` directly, for a path that is
    already a temporary file). Text cells and column names of CSV/TSV starting with ``=``,
    ``+``, ``-``, ``@``, tab or CR get a ``'`` in front unless ``raw`` (numbers never change).

    Example:
        >>> import tempfile, pathlib, pyarrow as pa
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "per_user.csv"
        >>> t = pa.table({"user": ["=1+1", "u2"], "P@1": [-1.0, 0.5]})
        >>> print(write_table(t, p).read_text().strip())
        "user","P@1"
        "'=1+1",-1
        "u2",0.5
        >>> print(write_table(t, p, raw=True).read_text().splitlines()[1])
        "=1+1",-1
    """
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise ReceValError(f"a table file must end in {', '.join(TABLE_SUFFIXES)}; "
                           f"got {str(path)!r}")
    with atomic_output(path, label) if atomic else contextlib.nullcontext(path) as target:
        if suffix in (".parquet", ".pq"):
            pq.write_table(table, target)
        else:
            out = table if raw else neutralise_table(table)
            delimiter = "\t" if suffix == ".tsv" else ","
            pacsv.write_csv(out, target, pacsv.WriteOptions(delimiter=delimiter))
    return path
