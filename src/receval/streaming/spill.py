"""Rows in any order, partitioned by a hash of the user into spill files.

Each side's chunks are split by ``hash(user) % partitions`` and appended, in the file's row
order, to one file per partition and side (Arrow's IPC stream format) in a temporary
folder: a user's rows all land in one partition, in the order they were read, so
``ties="stable"`` and ``duplicates="first"`` see the order the in-memory path sees. Arrow's
writer rather than DuckDB's ``COPY ... PARTITION_BY``: the chunks are already checked Arrow
tables, pyarrow is a dependency (DuckDB is not), and the row order within a partition is
kept by construction (a stable split of each chunk, written in order). IPC rather than
Parquet: an open IPC writer holds no page or dictionary buffers (a hundred open Parquet
writers held tens of MB), and a batch is written as it comes.
The folder is removed on success, on error and on Ctrl-C (:class:`SpillFolder`).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: the spill files' compression: none (LZ4 took 1.4 s more of 7 s at 11M rows and shrinks
#: random ids little; a spilled row takes about 24 bytes of disk)
COMPRESSION = None
_OPTIONS = pa.ipc.IpcWriteOptions(compression=COMPRESSION)


class SpillFolder:
    """A temporary folder (``receval-spill-*`` under ``parent`` or the system's temporary
    folder) removed when the block ends, however it ends.

    Example:
        >>> with SpillFolder() as folder:
        ...     _ = (folder / "x").write_text("spilled")
        ...     kept = folder
        >>> kept.exists()
        False
    """

    def __init__(self, parent: str | Path | None = None) -> None:
        self.parent = None if parent is None else str(parent)
        self.path: Path | None = None

    def __enter__(self) -> Path:
        self.path = Path(tempfile.mkdtemp(prefix="receval-spill-", dir=self.parent))
        return self.path

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)


def user_hash(users: pa.Array | pa.ChunkedArray, as_text: bool) -> np.ndarray:
    """A 64-bit hash of each user id; ``as_text``: of the id's text (so an integer id and
    the same id read as text fall in one partition). Integers are mixed by a multiply and
    shifts (splitmix64's finaliser), text by pandas' SipHash.

    Example:
        >>> a = user_hash(pa.array([7, 8]), as_text=True)
        >>> b = user_hash(pa.array(["7", "8"]), as_text=True)
        >>> bool((a == b).all()), a.dtype
        (True, dtype('uint64'))
        >>> bool((user_hash(pa.array([7, 8]), as_text=False) != a).any())
        True
    """
    if isinstance(users, pa.ChunkedArray):
        users = users.combine_chunks()
    if not as_text and pa.types.is_integer(users.type):
        x = users.to_numpy(zero_copy_only=False).astype(np.uint64)
        with np.errstate(over="ignore"):
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return np.asarray(x ^ (x >> np.uint64(31)), dtype=np.uint64)
    import pandas as pd

    if not pa.types.is_string(users.type):
        users = pc.cast(users, pa.string())
    values = users.to_numpy(zero_copy_only=False)
    return np.asarray(pd.util.hash_array(values, categorize=False), dtype=np.uint64)


class Partitioner:
    """Writes one side's chunks into ``parts`` files under ``folder``, ``buffer_rows`` rows
    per partition held before a write; rows are split by the hash of column ``key``.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> w = Partitioner(folder, "truth", 2, as_text=False)
        >>> w.add(pa.table({"user": [1, 2, 3, 1], "item": [5, 6, 7, 8]}))
        >>> w.close()
        >>> [r for p in range(2) for r in w.read(p).to_pylist() if r["user"] == 1]
        [{'user': 1, 'item': 5}, {'user': 1, 'item': 8}]
    """

    def __init__(
        self,
        folder: Path,
        side: str,
        parts: int,
        *,
        as_text: bool,
        buffer_rows: int = 1 << 16,
        key: str = "user",
    ) -> None:
        self.folder, self.side, self.parts, self.as_text = folder, side, parts, as_text
        self.key = key
        self.buffer_rows = max(int(buffer_rows), 1)
        self.schema: pa.Schema | None = None
        self._buffers: list[list[pa.Table]] = [[] for _ in range(parts)]
        self._buffered = np.zeros(parts, dtype=np.int64)
        self._writers: dict[int, tuple[pa.NativeFile, pa.ipc.RecordBatchStreamWriter]] = {}
        self.rows = np.zeros(parts, dtype=np.int64)

    def path(self, part: int) -> Path:
        """The spill file of one partition."""
        return self.folder / f"{self.side}-{part:05d}.arrows"

    def add(self, chunk: pa.Table) -> None:
        """Split ``chunk`` by partition (row order kept within each) and buffer the pieces."""
        if self.schema is None:
            self.schema = chunk.schema
        elif chunk.schema != self.schema:
            chunk = chunk.cast(self.schema)
        part = user_hash(chunk.column(self.key), self.as_text) % np.uint64(self.parts)
        # few partitions: Arrow's stable sort of 16-bit integers counts them (ten times
        # numpy's stable argsort, measured on 136k-row chunks)
        part = part.astype(np.uint16 if self.parts <= 1 << 16 else np.int64)
        ordered = chunk.take(pc.array_sort_indices(pa.array(part)))
        bounds = np.concatenate([[0], np.cumsum(np.bincount(part, minlength=self.parts))])
        for p in np.flatnonzero(np.diff(bounds)):
            lo, hi = int(bounds[p]), int(bounds[p + 1])
            self._buffers[p].append(ordered.slice(lo, hi - lo))
            self._buffered[p] += hi - lo
            self.rows[p] += hi - lo
            if self._buffered[p] >= self.buffer_rows:
                self._flush(int(p))

    def _flush(self, p: int) -> None:
        if not self._buffers[p]:
            return
        table = pa.concat_tables(self._buffers[p])
        if p not in self._writers:
            assert self.schema is not None
            sink = pa.OSFile(str(self.path(p)), "wb")
            self._writers[p] = (sink, pa.ipc.new_stream(sink, self.schema, options=_OPTIONS))
        self._writers[p][1].write_table(table)
        self._buffers[p], self._buffered[p] = [], 0

    def close(self) -> None:
        """Write what is buffered and close every file."""
        for p in range(self.parts):
            self._flush(p)
        for sink, writer in self._writers.values():
            writer.close()
            sink.close()
        self._writers = {}

    def read(self, part: int) -> pa.Table:
        """One partition's rows in the order they were read (empty with the side's schema
        when it has none)."""
        if self.path(part).exists():
            with pa.OSFile(str(self.path(part)), "rb") as source:
                return pa.ipc.open_stream(source).read_all()
        assert self.schema is not None
        return self.schema.empty_table()


def spill(chunks: Iterable[pa.Table], writer: Partitioner) -> None:
    """Every chunk into ``writer``'s partitions, then its files closed."""
    for chunk in chunks:
        writer.add(chunk)
    writer.close()
