"""The monitor's state file: what a later run needs so it never rereads history.

A SQLite database (stdlib :mod:`sqlite3`), so that SQLite does what it is trusted for: one
writer at a time (a run holds the write lock from reading the state to committing the new one;
a second run waits up to ``lock_timeout`` seconds, then fails with one line), an atomic commit
(a run killed at any point, ``kill -9`` included, leaves the previous state), and its own
integrity check. Table ``receval_monitor`` holds, by key:

- ``format`` and ``version`` (:data:`FORMAT`, :data:`VERSION`);
- ``meta``: JSON: the parameters of the run (a later run must ask the same), the largest event
  time seen, the id types, the time zone kind, the running counts (late rows, rows read),
  each open window's exact sums (:meth:`receval.accumulate.Accumulator.to_dict`) and counts,
  the final rows of the closed windows (floats as hexadecimal text: exact) and the number of
  batches replayed;
- ``rows``: an Arrow table (IPC stream, LZ4) of the pending impressions (lists whose
  attribution period is not over), the feedback that can still judge them (and one
  attribution period more), the per-list values of the lists already
  closed in windows still open (the bootstrap resamples them) and the impressions of lists
  closed within the last attribution period (feedback that would judge them is late, and
  counted); a ``kind`` column tells them apart;
- ``checksum``: the SHA-256 of ``meta``, ``rows`` and the applied batches, so a state changed
  outside receval is refused, never misread.

Table ``applied_batches`` holds the content hash of every log batch applied (feeding the same
batch twice changes nothing). Every check of a state read back ends in a
:class:`StateFileError`: one line naming the file and what is wrong.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval.accumulate import Accumulator
from receval.exceptions import ReceValError

FORMAT = "receval.monitor.state"
VERSION = 2
PENDING, FEEDBACK, VALUES, CLOSED = 0, 1, 2, 3
#: the suffixes a state file may have
SUFFIXES = (".sqlite", ".sqlite3", ".db")
#: the range of times a state may hold: pandas' nanoseconds (1677-09-22 .. 2262-04-11)
TIME_RANGE = (int(pd.Timestamp.min.value), int(pd.Timestamp.max.value))
_SQLITE_MAGIC = b"SQLite format 3\x00"
_KEYS = ("format", "version", "meta", "rows", "checksum")
#: the running counts a state carries: late rows ignored, feedback dated before serving, rows read
_TALLY_KEYS = ("impressions", "feedback", "before_served", "impressions_read", "feedback_read")


class StateFileError(ReceValError):
    """A state file that cannot be used: damaged, changed by hand, of another version, or
    locked by another run. The message is one line naming the file and the problem."""


@dataclass
class Bucket:
    """One (window, variant): the closed lists' exact sums, their per-list values (``user``,
    ``served`` and one column per metric) and the counts of closed lists."""

    sums: Accumulator
    values: pd.DataFrame
    evaluated: int = 0
    unjudged: int = 0


def _no_tally() -> dict[str, int]:
    return dict.fromkeys(_TALLY_KEYS, 0)


@dataclass
class State:
    """Everything a run carries to the next (see the module text).

    Example:
        >>> s = State(params={"window": "7D"})
        >>> s.max_time is None and s.pending.empty and s.batches == set()
        True
    """

    params: dict[str, Any]
    max_time: int | None = None
    pending: pd.DataFrame = field(default_factory=pd.DataFrame)
    feedback: pd.DataFrame = field(default_factory=pd.DataFrame)
    buckets: dict[tuple[int, Any], Bucket] = field(default_factory=dict)
    closed_rows: list[dict[str, Any]] = field(default_factory=list)
    closed_comparisons: list[dict[str, Any]] = field(default_factory=list)
    #: running counts (:data:`_TALLY_KEYS`): late impressions and feedback ignored, feedback
    #: dated before its item was served, impressions and feedback rows read
    tally: dict[str, int] = field(default_factory=_no_tally)
    #: impressions (user, item, served) of lists closed within the last attribution period
    closed: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: content hashes of the log batches applied so far
    batches: set[str] = field(default_factory=set)
    #: log batches fed again and skipped
    replayed: int = 0
    #: "aware" or "naive": how the times of the logs were written (never mixed)
    zone: str | None = None
    #: "int64" or "string" per id column ("user", "item"), once ids were seen
    id_types: dict[str, str] = field(default_factory=dict)
    #: the cumulative variant comparison (:meth:`receval.monitor.ab.Sequence.to_json`)
    sequence: dict[str, Any] = field(default_factory=dict)


def hex_floats(row: dict[str, Any]) -> dict[str, Any]:
    """Floats as exact hexadecimal text (``float.hex``), for JSON.

    Example:
        >>> hex_floats({"a": 0.1, "b": 2}) == {"a": {"hex": (0.1).hex()}, "b": 2}
        True
    """
    return {k: {"hex": float(v).hex()} if isinstance(v, float | np.floating) else v
            for k, v in row.items()}


def unhex_floats(row: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`hex_floats`.

    Example:
        >>> unhex_floats(hex_floats({"a": float("nan")}))["a"]
        nan
    """
    return {k: float.fromhex(v["hex"]) if isinstance(v, dict) and "hex" in v else v
            for k, v in row.items()}


# --- the file: lock, read, write ----------------------------------------------------------------


class Store:
    """An open state file holding SQLite's write lock (see :func:`open_state`)."""

    def __init__(self, con: sqlite3.Connection, path: Path):
        self.con, self.path = con, path

    def read(self, metric_names: list[str] | None = None) -> State | None:
        """The state in the file, checked; ``None`` for a file without a state yet."""
        tables = {r[0] for r in self.con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "receval_monitor" not in tables:
            if tables:
                raise self.error("is a SQLite database but not a receval monitor state "
                                 f"(tables: {', '.join(sorted(tables))})")
            return None
        try:
            stored = dict(self.con.execute("SELECT key, value FROM receval_monitor").fetchall())
            batches = self._batches()
        except sqlite3.DatabaseError as err:  # a table lost a column: changed by hand
            raise self.error(f"is damaged or was changed by hand (SQLite: {err}); it is not "
                             "read (start a new state file, or restore a copy)") from None
        if not stored and "applied_batches" in tables and not batches:
            return None
        missing = [k for k in _KEYS if k not in stored]
        if missing:
            raise self.error(f"has no {', '.join(missing)} entry (damaged or changed by hand)")
        fmt, version = _text(stored["format"]), _text(stored["version"])
        if fmt != FORMAT:
            raise self.error(f"has format {fmt!r}, not {FORMAT!r}")
        if version != str(VERSION):
            raise self.error(f"has version {version}; this receval reads version {VERSION}: "
                             "start a new state file")
        meta, rows = bytes(stored["meta"]), bytes(stored["rows"])
        if _text(stored["checksum"]) != checksum(meta, rows, batches):
            raise self.error("fails its checksum: it was changed outside receval or damaged; "
                             "it is not read (start a new state file, or restore a copy)")
        return decode(meta, rows, set(batches), metric_names, self.path)

    def write(self, state: State, metric_names: list[str]) -> None:
        """Replace the stored state by ``state`` (committed by :func:`open_state`)."""
        meta, rows = encode(state, metric_names)
        new = sorted(state.batches - set(self._batches()))
        self.con.executemany("INSERT INTO applied_batches (hash) VALUES (?)",
                             [(h,) for h in new])
        batches = self._batches()
        values = {"format": FORMAT.encode(), "version": str(VERSION).encode(), "meta": meta,
                  "rows": rows, "checksum": checksum(meta, rows, batches).encode()}
        self.con.executemany("INSERT OR REPLACE INTO receval_monitor (key, value) VALUES (?, ?)",
                             list(values.items()))

    def applied_lists(self, keys: np.ndarray) -> np.ndarray:
        """Which of the served-list ``keys`` (:func:`list_keys`) an earlier run applied.

        Example:
            >>> import tempfile, pathlib
            >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.sqlite"
            >>> with open_state(p) as store:
            ...     store.add_lists(np.array([5, 7]), np.array([10, 20]))
            >>> with open_state(p) as store:
            ...     store.applied_lists(np.array([7, 8, 5])).tolist()
            [True, False, True]
        """
        unique = np.unique(keys)
        if not unique.size:
            return np.zeros(len(keys), dtype=bool)
        self.con.execute("CREATE TEMP TABLE IF NOT EXISTS probe (key INTEGER PRIMARY KEY)")
        self.con.execute("DELETE FROM probe")
        self.con.executemany("INSERT INTO probe (key) VALUES (?)",
                             ((int(k),) for k in unique))
        try:
            found = np.array([r[0] for r in self.con.execute(
                "SELECT key FROM applied_lists WHERE key IN (SELECT key FROM probe)")],
                dtype=np.int64)
        except sqlite3.DatabaseError as err:
            raise self.error(f"is damaged or was changed by hand (SQLite: {err})") from None
        return np.isin(keys, found)

    def add_lists(self, keys: np.ndarray, served: np.ndarray) -> None:
        """Record the served lists ``keys`` (served at ``served``, int64 ns, one per key) as
        applied (committed with the state)."""
        unique, first = np.unique(keys, return_index=True)
        self.con.executemany("INSERT OR IGNORE INTO applied_lists (key, served) VALUES (?, ?)",
                             ((int(k), int(t)) for k, t in zip(unique, served[first],
                                                              strict=True)))

    def forget_lists(self, before: int) -> None:
        """Forget the lists served before ``before`` (int64 ns): a later run ignores them as
        late impressions, so their keys are no longer needed (the table stays small).

        Example:
            >>> import tempfile, pathlib
            >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.sqlite"
            >>> with open_state(p) as store:
            ...     store.add_lists(np.array([5, 7]), np.array([10, 20]))
            ...     store.forget_lists(15)
            ...     store.applied_lists(np.array([5, 7])).tolist()
            [False, True]
        """
        self.con.execute("DELETE FROM applied_lists WHERE served < ?", (int(before),))

    def _batches(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT hash FROM applied_batches ORDER BY hash")]

    def error(self, what: str) -> StateFileError:
        return StateFileError(f"state {str(self.path)!r} {what}")


@contextlib.contextmanager
def open_state(path: str | Path, lock_timeout: float = 600.0) -> Iterator[Store]:
    """The state file ``path`` (created if missing) with SQLite's write lock held: another run
    waits up to ``lock_timeout`` seconds, then fails with one line. What :meth:`Store.write`
    wrote is committed when the block ends without an error, else nothing changes.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "state.sqlite"
        >>> with open_state(p) as store:
        ...     store.write(State(params={"metric_names": []}, max_time=5), [])
        >>> with open_state(p) as store:
        ...     store.read([]).max_time
        5
    """
    path = Path(path)
    if isinstance(lock_timeout, bool) or not isinstance(lock_timeout, int | float) or \
            not math.isfinite(lock_timeout) or lock_timeout < 0:
        raise StateFileError(f"lock_timeout must be a finite number of seconds >= 0, got "
                             f"{lock_timeout!r}")
    if not path.exists():
        _create(path)
    _check_file_kind(path)
    try:
        con = sqlite3.connect(path, timeout=lock_timeout, isolation_level=None)
    except (sqlite3.Error, OSError) as err:
        raise StateFileError(f"state {str(path)!r} cannot be opened: {err}") from None
    try:
        try:
            con.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as err:
            if "locked" in str(err) or "busy" in str(err):
                raise StateFileError(
                    f"state {str(path)!r} is locked by another receval monitor run (waited "
                    f"{lock_timeout:g} s); run again when it has finished, or raise "
                    "lock_timeout (--lock-timeout)") from None
            raise StateFileError(f"state {str(path)!r} is not a SQLite database: {err}") from None
        except sqlite3.DatabaseError as err:
            raise StateFileError(f"state {str(path)!r} is not a SQLite database: {err}") from None
        try:
            check = con.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise StateFileError(f"state {str(path)!r} is damaged (SQLite: {check})")
            tables = {r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "receval_monitor" not in tables:  # another program's database:
                # refused before a table of ours is added to it
                raise StateFileError(f"state {str(path)!r} is a SQLite database but not a "
                                     f"receval monitor state (tables: "
                                     f"{', '.join(sorted(tables))}); it is left as it is")
            for statement in _TABLES:
                con.execute(statement)
        except sqlite3.OperationalError as err:  # read-only file or folder, disk full...
            con.execute("ROLLBACK")
            raise StateFileError(f"state {str(path)!r} cannot be written: {err}") from None
        except sqlite3.DatabaseError as err:
            con.execute("ROLLBACK")
            raise StateFileError(f"state {str(path)!r} is damaged (SQLite: {err})") from None
        except StateFileError:
            con.execute("ROLLBACK")
            raise
        try:
            yield Store(con, path)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    finally:
        con.close()


_TABLES = ("CREATE TABLE IF NOT EXISTS receval_monitor (key TEXT PRIMARY KEY, value BLOB NOT "
           "NULL)", "CREATE TABLE IF NOT EXISTS applied_batches (hash TEXT PRIMARY KEY)",
           "CREATE TABLE IF NOT EXISTS applied_lists (key INTEGER PRIMARY KEY, served INTEGER "
           "NOT NULL)")


def list_keys(imps: pd.DataFrame) -> np.ndarray:
    """One int64 key per impression row naming its served list: a hash of (user, served time,
    variant), the same for every row of one list and in every run, so a list fed again in a
    later batch (a batch repeating part of an earlier one) is recognised and applied once.

    Example:
        >>> f = pd.DataFrame({"user": [1, 1, 2], "served": [5, 5, 5], "item": [1, 2, 1]})
        >>> k = list_keys(f)
        >>> bool(k[0] == k[1]), bool(k[0] == k[2])
        (True, False)
    """
    columns = ["user", "served"] + (["variant"] if "variant" in imps.columns else [])
    frame = imps[columns].reset_index(drop=True)
    if "variant" in frame.columns:  # a variant's type varies between files: its text
        frame["variant"] = frame["variant"].astype(str)
    hashed = pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64)
    return hashed.view(np.int64)


def _create(path: Path) -> None:
    """A new, empty state at ``path``, made beside it and linked into place whole: a state file
    is never seen empty (0 bytes), so an empty file is refused as what it is (a state lost or
    truncated), not taken for a new one. Another run creating it at the same time is fine."""
    import os
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".new", dir=path.parent)
        os.close(fd)
        try:
            con = sqlite3.connect(tmp, isolation_level=None)
            try:
                for statement in _TABLES:
                    con.execute(statement)
            finally:
                con.close()
            with contextlib.suppress(FileExistsError):  # another run made it first: theirs
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    except (sqlite3.Error, OSError) as err:
        raise StateFileError(f"state {str(path)!r} cannot be created: {err}") from None


def read_state(path: str | Path, lock_timeout: float = 600.0) -> State | None:
    """The state in ``path``, checked (``None`` for a file without one); see
    :func:`open_state`.

    Example:
        >>> import tempfile, pathlib
        >>> read_state(pathlib.Path(tempfile.mkdtemp()) / "new.sqlite") is None
        True
    """
    with open_state(path, lock_timeout) as store:
        return store.read()


def _check_file_kind(path: Path) -> None:
    """An existing file must be a SQLite database; a Parquet one is a version-1 state."""
    if not path.exists():
        return
    if path.is_dir():
        raise StateFileError(f"state {str(path)!r} is a directory")
    with open(path, "rb") as fh:
        head = fh.read(len(_SQLITE_MAGIC))
    if head.startswith(b"PAR1"):
        raise StateFileError(
            f"state {str(path)!r} is a version-1 (Parquet) monitor state; states are now "
            "SQLite files: to migrate, run receval monitor once over all the logs with a new "
            "--state FILE.sqlite (the old file is left as it is)")
    if not head:
        raise StateFileError(f"state {str(path)!r} is an empty file (0 bytes), not a receval "
                             "monitor state: its history is not there; restore a copy, or "
                             "delete the file to start a new state")
    if head != _SQLITE_MAGIC:
        raise StateFileError(f"state {str(path)!r} is not a receval monitor state file (not "
                             "a SQLite database)")


def checksum(meta: bytes, rows: bytes, batches: list[str]) -> str:
    """SHA-256 (hex) of the stored payload: meta, rows and the applied batch hashes.

    Example:
        >>> len(checksum(b"{}", b"", [])), checksum(b"{}", b"", []) == checksum(b"{}", b"", ["a"])
        (64, False)
    """
    h = hashlib.sha256()
    for part in (meta, rows, "\n".join(sorted(batches)).encode()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# --- the payload: encode and decode ------------------------------------------------------------


def _array(values: pd.Series | None, n: int, kind: pa.DataType | None = None) -> pa.Array:
    if values is None:
        return pa.nulls(n, kind or pa.null())
    out = pa.array(values.reset_index(drop=True), from_pandas=True)
    if pa.types.is_large_string(out.type) or pa.types.is_string_view(out.type):
        out = out.cast(pa.string())  # pandas' str dtype: one text type in the state
    return out


def _column(parts: list[tuple[pd.Series | None, int]], name: str) -> pa.ChunkedArray:
    """One column of the state table from its parts (``None``: nulls)."""
    arrays = [_array(s, n) for s, n in parts if s is not None]
    kind = arrays[0].type if arrays else pa.null()
    for a in arrays:
        if a.type != kind and a.type != pa.null():
            if kind == pa.null():
                kind = a.type
            elif pa.types.is_integer(a.type) and pa.types.is_integer(kind):
                kind = pa.int64()
            else:
                raise ReceValError(f"monitor state: column {name!r} mixes {kind} and {a.type} "
                                   "(ids of one type in impressions and feedback)")
    return pa.chunked_array([_array(s, n, kind).cast(kind) for s, n in parts], type=kind)


def encode(state: State, metric_names: list[str]) -> tuple[bytes, bytes]:
    """``state`` as (meta JSON, rows Parquet) bytes.

    Example:
        >>> meta, rows = encode(State(params={"metric_names": []}, max_time=5), [])
        >>> json.loads(meta)["max_time"], from_ipc(rows).num_rows
        (5, 0)
    """
    values = [(key, b.values) for key, b in state.buckets.items() if len(b.values)]
    n_p, n_f, n_c = len(state.pending), len(state.feedback), len(state.closed)
    n_v = sum(len(v) for _, v in values)
    kinds = np.concatenate([np.full(n_p, PENDING, np.int8), np.full(n_f, FEEDBACK, np.int8),
                            np.full(n_v, VALUES, np.int8), np.full(n_c, CLOSED, np.int8)])

    def col(frame: pd.DataFrame, name: str) -> pd.Series | None:
        return frame[name] if name in frame.columns and len(frame) else None

    value_frames = [v for _, v in values]
    columns: dict[str, Any] = {"kind": pa.array(kinds, pa.int8())}
    columns["user"] = _column([(col(state.pending, "user"), n_p),
                               (col(state.feedback, "user"), n_f),
                               *[(col(v, "user"), len(v)) for v in value_frames],
                               (col(state.closed, "user"), n_c)], "user")
    columns["item"] = _column([(col(state.pending, "item"), n_p),
                               (col(state.feedback, "item"), n_f), (None, n_v),
                               (col(state.closed, "item"), n_c)], "item")
    columns["time"] = _column([(col(state.pending, "served"), n_p),
                               (col(state.feedback, "at"), n_f),
                               *[(col(v, "served"), len(v)) for v in value_frames],
                               (col(state.closed, "served"), n_c)], "time")
    columns["x"] = _column([(col(state.pending, "order"), n_p),
                            (col(state.feedback, "value"), n_f), (None, n_v), (None, n_c)], "x")
    variants = [pd.Series([key[1]] * len(v)) for key, v in values]
    columns["variant"] = _column([(col(state.pending, "variant"), n_p), (None, n_f),
                                  *[(s, len(s)) for s in variants], (None, n_c)], "variant")
    for j, name in enumerate(metric_names):
        columns[f"m{j}"] = _column([(None, n_p), (None, n_f),
                                    *[(col(v, name), len(v)) for v in value_frames],
                                    (None, n_c)], name)
    meta = {
        "params": state.params, "max_time": state.max_time, "tally": state.tally,
        "replayed": state.replayed, "zone": state.zone, "id_types": state.id_types,
        "buckets": [{"window": key[0], "variant": key[1], "sums": b.sums.to_dict(),
                     "evaluated": b.evaluated, "unjudged": b.unjudged}
                    for key, b in state.buckets.items()],
        "closed_rows": [hex_floats(r) for r in state.closed_rows],
        "closed_comparisons": [hex_floats(r) for r in state.closed_comparisons],
        "sequence": state.sequence,
    }
    return json.dumps(meta, allow_nan=False).encode(), to_ipc(pa.table(columns))


def to_ipc(table: pa.Table) -> bytes:
    """``table`` as Arrow IPC stream bytes (LZ4-compressed): several times faster to write and
    read than Parquet, which matters for a daily update.

    Example:
        >>> from_ipc(to_ipc(pa.table({"a": [1]}))).to_pylist()
        [{'a': 1}]
    """
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="lz4")
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def from_ipc(data: bytes) -> pa.Table:
    """The table of :func:`to_ipc`'s bytes.

    Example:
        >>> from_ipc(to_ipc(pa.table({"a": ["x"]}))).column("a").to_pylist()
        ['x']
    """
    with pa.ipc.open_stream(pa.BufferReader(data)) as reader:
        return reader.read_all()


class _Checker:
    """One-line errors about a decoded payload."""

    def __init__(self, path: str | Path):
        self.path = path

    def __call__(self, ok: Any, what: str) -> None:
        if not ok:
            raise StateFileError(f"state {str(self.path)!r} {what}; it is not read (start a "
                                 "new state file, or restore a copy)")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _in_time_range(value: Any) -> bool:
    return _is_int(value) and TIME_RANGE[0] <= value <= TIME_RANGE[1]


def decode(meta_bytes: bytes, rows_bytes: bytes, batches: set[str],
           metric_names: list[str] | None, path: str | Path) -> State:
    """The state of :func:`encode`'s bytes, every part checked (a :class:`StateFileError`
    naming the first problem).

    Example:
        >>> meta, rows = encode(State(params={"metric_names": []}, max_time=2**70 // 2**20), [])
        >>> decode(meta, rows, set(), [], "s.sqlite").max_time == 2**50
        True
        >>> meta, rows = encode(State(params={"metric_names": []}, max_time=2**70), [])
        >>> decode(meta, rows, set(), [], "s.sqlite")
        Traceback (most recent call last):
        ...
        receval.monitor.state.StateFileError: state 's.sqlite' has max_time 1180591620717411303424, not a time within 1677-09-21 .. 2262-04-11 (int64 ns); it is not read (start a new state file, or restore a copy)
    """  # noqa: E501
    check = _Checker(path)
    try:
        meta = json.loads(meta_bytes)
    except ValueError:
        meta = None
    check(isinstance(meta, dict), "has a meta entry that is not a JSON object")
    for key in ("params", "max_time", "tally", "buckets", "closed_rows", "closed_comparisons"):
        check(key in meta, f"has no {key!r} in its meta entry")
    params = meta["params"]
    check(isinstance(params, dict) and isinstance(params.get("metric_names"), list),
          "has no metric names in its parameters")
    if metric_names is None:
        metric_names = list(params["metric_names"])
    check(params.get("metric_names") == metric_names,
          f"holds the metrics {params.get('metric_names')}, this run asks {metric_names}")
    max_time = meta["max_time"]
    check(max_time is None or _in_time_range(max_time),
          f"has max_time {max_time!r}, not a time within 1677-09-21 .. 2262-04-11 (int64 ns)")
    tally = meta["tally"]
    check(isinstance(tally, dict) and set(tally) == set(_TALLY_KEYS)
          and all(_is_int(v) and v >= 0 for v in tally.values()),
          f"has counts {tally!r} (expected whole numbers >= 0 for "
          f"{', '.join(_TALLY_KEYS)})")
    replayed = meta.get("replayed", 0)
    check(_is_int(replayed) and replayed >= 0, f"has a replay count {replayed!r}")
    zone = meta.get("zone")
    check(zone in (None, "aware", "naive"), f"has a time zone kind {zone!r}")
    id_types = meta.get("id_types", {})
    check(isinstance(id_types, dict) and set(id_types) <= {"user", "item"}
          and set(id_types.values()) <= {"int64", "string"}, f"has id types {id_types!r}")
    try:
        table = from_ipc(rows_bytes)
    except (OSError, pa.ArrowInvalid) as err:
        raise StateFileError(f"state {str(path)!r} has rows that are not an Arrow table "
                             f"({str(err).splitlines()[0] if str(err) else 'unreadable'})"
                             ) from None
    expected = {"kind": "int8", "time": "int64", "x": "double",
                **{f"m{j}": "double" for j in range(len(metric_names))}}
    for name in ["kind", "user", "item", "time", "x", "variant", *expected]:
        check(name in table.column_names, f"has no column {name!r} in its rows")
    for name, kind in expected.items():
        actual = table.schema.field(name).type
        check(actual == pa.null() or str(actual) == kind,
              f"has column {name!r} of type {actual}, expected {kind}")
    for name in ("user", "item"):
        actual = table.schema.field(name).type
        want = id_types.get(name)
        if actual != pa.null():
            shown = "int64" if actual == pa.int64() else "string" \
                if pa.types.is_string(actual) or pa.types.is_large_string(actual) else str(actual)
            check(want is not None and shown == want,
                  f"has {name} ids of type {shown} where its meta says "
                  f"{want or 'none were stored'}")
    kind = table.column("kind").to_numpy(zero_copy_only=False)
    bad = ~np.isin(kind, [PENDING, FEEDBACK, VALUES, CLOSED])
    check(not bad.any(), f"has a row kind {int(kind[bad][0]) if bad.any() else 0} "
          f"({int(bad.sum())} rows) that is not one of {PENDING}, {FEEDBACK}, {VALUES}, "
          f"{CLOSED}")
    time = table.column("time")
    check(time.null_count == 0 or table.num_rows == 0, "has rows without a time")
    if table.num_rows and time.type == pa.int64():
        t = time.to_numpy()
        check(int(t.min()) >= TIME_RANGE[0] and int(t.max()) <= TIME_RANGE[1],
              "has a row time outside 1677-09-21 .. 2262-04-11")
    names = metric_names

    # written in blocks of one kind each: slices (no copy), unless edited out of order
    blocks = bool((np.diff(kind.astype(np.int16)) >= 0).all())

    def rows(k: int, cols: dict[str, str]) -> pd.DataFrame:
        if blocks:
            lo, hi = np.searchsorted(kind, k, "left"), np.searchsorted(kind, k, "right")
            sub = table.slice(int(lo), int(hi - lo))
        else:
            sub = table.filter(pa.array(kind == k))
        frame = pd.DataFrame({new: sub.column(old).to_pandas() for old, new in cols.items()})
        for new in ("user", "item"):
            if new in frame.columns and len(frame):
                check(not frame[new].isna().any(), f"has a row of kind {k} without its {new}")
        return frame

    pending_cols = {"user": "user", "item": "item", "x": "order", "time": "served"}
    if params.get("variant_col") is not None:
        pending_cols["variant"] = "variant"
    pending = rows(PENDING, pending_cols)
    if len(pending):
        check(np.isfinite(pending["order"].to_numpy(dtype=float)).all(),
              "has a pending impression without a finite rank or score")
    feedback = rows(FEEDBACK, {"user": "user", "item": "item", "x": "value", "time": "at"})
    if len(feedback):
        check(np.isfinite(feedback["value"].to_numpy(dtype=float)).all(),
              "has a feedback row without a finite value")
    closed = rows(CLOSED, {"user": "user", "item": "item", "time": "served"})
    value_cols = {"user": "user", "time": "served", "variant": "variant",
                  **{f"m{j}": name for j, name in enumerate(names)}}
    values = rows(VALUES, value_cols)
    buckets: dict[tuple[int, Any], Bucket] = {}
    check(isinstance(meta["buckets"], list), "has buckets that are not a list")
    for b in meta["buckets"]:
        check(isinstance(b, dict) and {"window", "variant", "sums", "evaluated",
                                        "unjudged"} <= set(b),
              f"has a malformed bucket {str(b)[:100]}")
        check(_in_time_range(b["window"]), f"has a bucket window {b['window']!r}")
        check(all(_is_int(b[k]) and b[k] >= 0 for k in ("evaluated", "unjudged")),
              f"has bucket counts {b['evaluated']!r}, {b['unjudged']!r} (whole numbers >= 0)")
        try:
            sums = Accumulator.from_dict(b["sums"])
        except Exception as err:  # any damage to the sums' JSON
            raise StateFileError(f"state {str(path)!r} has unreadable sums in the bucket of "
                                 f"window {b['window']}: {type(err).__name__}") from None
        check(sums.names == list(names), f"has sums of metrics {sums.names} in the bucket of "
              f"window {b['window']}, expected {list(names)}")
        check(all(m.n_users == b["evaluated"] for m in sums.metrics),
              f"has sums over another number of lists than the {b['evaluated']} evaluated "
              f"in the bucket of window {b['window']}")
        bucket_key = (int(b["window"]), b["variant"])
        check(bucket_key not in buckets, f"has the bucket of window {b['window']} twice")
        mine = values[_same(values["variant"], b["variant"])] if len(values) else values
        if len(mine):
            mine = mine[_window_of(mine["served"], params) == bucket_key[0]]
        check(len(mine) == b["evaluated"], f"has {len(mine)} per-list values for the "
              f"{b['evaluated']} lists evaluated in the bucket of window {b['window']}")
        buckets[bucket_key] = Bucket(sums, mine.drop(columns="variant").reset_index(drop=True),
                              int(b["evaluated"]), int(b["unjudged"]))
    held = sum(len(b.values) for b in buckets.values())
    check(held == len(values), f"has {len(values) - held} per-list values outside every "
          "bucket (missing buckets)")
    try:
        closed_rows = [unhex_floats(r) for r in meta["closed_rows"]]
        comparisons = [unhex_floats(r) for r in meta["closed_comparisons"]]
    except (TypeError, ValueError, AttributeError):
        raise StateFileError(f"state {str(path)!r} has malformed closed windows") from None
    return State(params=params, max_time=max_time, pending=pending, feedback=feedback,
                 buckets=buckets, closed_rows=closed_rows, closed_comparisons=comparisons,
                 tally={k: int(v) for k, v in tally.items()}, closed=closed, batches=batches,
                 replayed=int(replayed), zone=zone, id_types=dict(id_types),
                 sequence=_sequence(meta.get("sequence", {}), check))


def _sequence(data: Any, check: _Checker) -> dict[str, Any]:
    """The stored cumulative comparison (:class:`receval.monitor.ab.Sequence`), its shape
    checked (its tables are read when the run loads it).

    Example:
        >>> _sequence({}, _Checker("s.sqlite"))
        {}
    """
    check(isinstance(data, dict) and all(isinstance(data.get(k, []), list)
                                         for k in ("totals", "readings")),
          "has a malformed cumulative comparison (sequence)")
    return dict(data)


def _same(series: pd.Series, value: Any) -> np.ndarray:
    if value is None:
        return series.isna().to_numpy()
    return (series == value).to_numpy()


def _window_of(served: pd.Series, params: dict[str, Any]) -> np.ndarray:
    t = served.to_numpy(dtype=np.int64)
    origin, width = int(params["origin"]), int(params["step"])
    return origin + np.floor_divide(t - origin, width) * width


def check_params(state: State, params: dict[str, Any], path: str | Path) -> None:
    """A state continues only the run that made it: the same metrics, windows, options...

    Example:
        >>> check_params(State(params={"window": "7D"}), {"window": "1D"}, "s.sqlite")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: state 's.sqlite' was made with window='7D', this run asks window='1D'; start a new state file
    """  # noqa: E501
    for key in [*params, *(k for k in state.params if k not in params)]:
        old, new = state.params.get(key), params.get(key)
        if json.dumps(old, sort_keys=True) != json.dumps(new, sort_keys=True):
            raise ReceValError(f"state {str(path)!r} was made with {key}={old!r}, this run asks "
                               f"{key}={new!r}; start a new state file")
