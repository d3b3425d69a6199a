"""The per-user values of a streamed run, held in memory or spilled to Parquet.

Each batch of users gives its per-user values (``user`` and one column per metric). While
they take less than a share of the budget (:data:`PER_USER_SHARE`) they are held, as the
in-memory path holds them; past it, every batch's values so far and from then on are written,
sorted by user, as one Parquet file (a *run*) in a temporary folder of their own
(``receval-peruser-*``: it outlives the evaluation, since the values are read after it, and
is removed when the :class:`PerUserSpill` is collected or the interpreter exits). The batches
hold disjoint users, so the in-memory path's order (every user sorted, ascending) is a merge
of the sorted runs: :meth:`PerUserSpill.batches` merges them a block at a time (the rows up
to the smallest last user of the runs' current blocks), and :meth:`PerUserSpill.write` writes
them straight to a CSV, TSV or Parquet file without holding the table; :class:`StreamedResult`
reads them back (:meth:`PerUserSpill.to_pandas`) the first time ``per_user`` is asked for.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from receval.result import Result

#: the share of the memory budget the per-user values may take before they are spilled
PER_USER_SHARE = 0.125
#: the most rows read from each run at a time when the runs are merged
MERGE_ROWS = 1 << 16
#: about how many bytes of values a row group of a run holds (the merge's readers, one a
#: run, each hold a row group's pages)
RUN_GROUP_BYTES = 1 << 20
#: what the merge's blocks hold at most, all runs together, unless told (bytes)
MERGE_BYTES = 32 << 20


def frame_bytes(frame: pd.DataFrame) -> int:
    """What a per-user frame holds in memory (text ids counted in full).

    Example:
        >>> frame_bytes(pd.DataFrame({"user": [1, 2], "P@1": [0.5, 1.0]}))
        32
    """
    return int(frame.memory_usage(index=False, deep=True).sum())


class PerUserSpill:
    """Per-user values written as sorted Parquet runs under a temporary folder (made under
    ``parent``, or the system's temporary folder), read back merged in user order.

    Example:
        >>> spill = PerUserSpill()
        >>> spill.add(pd.DataFrame({"user": [4, 2], "P@1": [0.0, 1.0]}))
        >>> spill.add(pd.DataFrame({"user": [3], "P@1": [0.5]}))
        >>> spill.to_pandas()
           user  P@1
        0     2  1.0
        1     3  0.5
        2     4  0.0
        >>> folder = spill.folder
        >>> spill.close(); folder.exists()
        False
    """

    def __init__(self, parent: str | Path | None = None, merge_bytes: int | None = None) -> None:
        self.folder = Path(
            tempfile.mkdtemp(prefix="receval-peruser-", dir=None if parent is None else parent)
        )
        self.runs: list[Path] = []
        self.rows = 0
        self.bytes = 0  # the runs' values as frames in memory
        self.merge_bytes = MERGE_BYTES if merge_bytes is None else max(int(merge_bytes), 1)
        self.schema: pa.Schema | None = None
        #: a batch that evaluated no user: its empty frame may type the ids apart from the
        #: others' (text: object, not string), so it is written only if no batch has a user
        self.empty: pd.DataFrame | None = None
        # removed when the spill is collected, closed, or the interpreter exits
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.folder), True)

    def add(self, frame: pd.DataFrame) -> None:
        """One batch's per-user values, written sorted by user as one run."""
        if frame.shape[0] == 0:
            if self.empty is None:
                self.empty = frame
            return
        self._write(frame)

    def _write(self, frame: pd.DataFrame) -> None:
        frame = frame.sort_values("user", kind="stable")
        table = pa.Table.from_pandas(frame, preserve_index=False)
        if self.schema is None:
            self.schema = table.schema
        path = self.folder / f"run-{len(self.runs):06d}.parquet"
        # small row groups: the merge reads each run a block at a time, not whole
        row = max(frame_bytes(frame) // max(frame.shape[0], 1), 16)
        pq.write_table(table, path, row_group_size=max(RUN_GROUP_BYTES // row, 256))
        self.runs.append(path)
        self.rows += frame.shape[0]
        self.bytes += frame_bytes(frame)

    def block_rows(self) -> int:
        """Rows read from each run at a time when merging: the runs' blocks together hold
        about ``merge_bytes`` (at least 256 rows a run, at most :data:`MERGE_ROWS`).

        Example:
            >>> spill = PerUserSpill(merge_bytes=1 << 20)
            >>> spill.add(pd.DataFrame({"user": [1, 2], "P@1": [0.0, 1.0]}))
            >>> spill.block_rows()
            65536
            >>> PerUserSpill(merge_bytes=1 << 10).block_rows()
            256
        """
        row = max(self.bytes // max(self.rows, 1), 16)
        return int(min(max(self.merge_bytes // (max(len(self.runs), 1) * row), 256), MERGE_ROWS))

    def _finished(self) -> None:
        """Every batch evaluated no user: the first one's empty frame is the one run."""
        if not self.runs and self.empty is not None:
            self._write(self.empty)

    def to_pandas(self, columns: list[str] | None = None) -> pd.DataFrame:
        """Every run read back and sorted by user, as the in-memory path concatenates the
        batches' values and sorts them (so the frame equals it bit for bit)."""
        self._finished()
        frames = [pq.read_table(p, columns=columns).to_pandas() for p in self.runs]
        frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        return frame.sort_values("user", kind="stable").reset_index(drop=True)

    def batches(self, columns: list[str] | None = None) -> Iterator[pa.Table]:
        """The runs merged in ascending order of user, a block at a time: each run's block is
        topped up to :meth:`block_rows` rows, then the rows of every block up to the smallest
        last user of the runs not read to their end are yielded, sorted (a run read to its
        end holds no later user, so it bounds nothing)."""
        self._finished()
        target = self.block_rows()
        readers = [
            pq.ParquetFile(p).iter_batches(batch_size=target, columns=columns) for p in self.runs
        ]
        blocks: list[pa.Table | None] = [None] * len(readers)
        done = [False] * len(readers)

        def top_up(i: int) -> None:
            held = [] if blocks[i] is None else [blocks[i]]
            rows = sum(t.num_rows for t in held)  # type: ignore[union-attr]
            while not done[i] and rows < target:
                try:
                    batch = next(readers[i])
                except StopIteration:
                    done[i] = True
                    break
                held.append(pa.Table.from_batches([batch]))
                rows += batch.num_rows
            blocks[i] = pa.concat_tables(held) if len(held) > 1 else (held[0] if held else None)

        while True:
            for i in range(len(readers)):
                top_up(i)
            open_ends = [
                b.column("user")[-1]
                for b, d in zip(blocks, done, strict=True)
                if not d and b is not None and b.num_rows
            ]
            frontier = min(open_ends, key=lambda s: s.as_py()) if open_ends else None
            pieces = []
            for i, block in enumerate(blocks):
                if block is None or not block.num_rows:
                    continue
                n = (
                    block.num_rows
                    if frontier is None
                    else int(pc.sum(pc.less_equal(block.column("user"), frontier)).as_py() or 0)
                )
                if n:
                    pieces.append(block.slice(0, n))
                    blocks[i] = block.slice(n)
            if not pieces:
                return
            table = pa.concat_tables(pieces)
            yield table.take(pc.sort_indices(table, [("user", "ascending")]))

    def write(
        self, path: str | Path, *, columns: list[str] | None = None, raw: bool = False
    ) -> None:
        """The merged values to ``path`` (CSV, TSV or Parquet by suffix), a block at a time;
        CSV and TSV text cells neutralised as :func:`receval.io.output.write_table` does
        unless ``raw``.

        Example:
            >>> import tempfile
            >>> spill = PerUserSpill()
            >>> spill.add(pd.DataFrame({"user": ["b", "a"], "P@1": [0.0, 1.0]}))
            >>> spill.add(pd.DataFrame({"user": ["=c"], "P@1": [0.5]}))
            >>> out = Path(tempfile.mkdtemp()) / "per_user.csv"
            >>> spill.write(out); print(out.read_text().strip())
            "user","P@1"
            "'=c",0.5
            "a",1
            "b",0
        """
        import pyarrow.csv as pacsv

        from receval.io.formulas import neutralise_table

        path = Path(path)
        self._finished()
        # the schema (pandas' metadata included) a frame of these columns is written with
        empty = pq.read_table(self.runs[0], columns=columns).slice(0, 0).to_pandas()
        schema = pa.Table.from_pandas(empty, preserve_index=False).schema
        if path.suffix.lower() in (".parquet", ".pq"):
            with pq.ParquetWriter(path, schema) as writer:
                row = max(self.bytes // max(self.rows, 1), 16)
                gather = min(max(4 * self.merge_bytes // row, 1024), MERGE_ROWS)
                for table in _gathered(self.batches(columns), gather):
                    writer.write_table(table.replace_schema_metadata(schema.metadata))
            return
        delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
        writer_csv: Any = None
        try:
            for table in self.batches(columns):
                out = table if raw else neutralise_table(table)
                if writer_csv is None:
                    writer_csv = pacsv.CSVWriter(
                        str(path), out.schema, write_options=pacsv.WriteOptions(delimiter=delimiter)
                    )
                writer_csv.write_table(out)
            if writer_csv is None:  # no user evaluated: the header alone
                out = schema.empty_table()
                out = out if raw else neutralise_table(out)
                pacsv.write_csv(out, str(path), pacsv.WriteOptions(delimiter=delimiter))
        finally:
            if writer_csv is not None:
                writer_csv.close()

    def close(self) -> None:
        """Remove the runs now."""
        self._cleanup()


def _gathered(tables: Iterator[pa.Table], at_least: int) -> Iterator[pa.Table]:
    """Merged blocks gathered into tables of at least ``at_least`` rows (the last one
    aside): a Parquet row group each, not one per block."""
    held: list[pa.Table] = []
    rows = 0
    for table in tables:
        held.append(table)
        rows += table.num_rows
        if rows >= at_least:
            yield pa.concat_tables(held)
            held, rows = [], 0
    if held:
        yield pa.concat_tables(held)


class StreamedResult(Result):
    """A :class:`~receval.result.Result` whose per-user values were spilled to Parquet
    (:class:`PerUserSpill`): ``per_user`` reads them back the first time it is asked for
    (then holds the frame, as any result does); :meth:`to_parquet` and the command line's
    ``--per-user`` write them straight from the spill without holding them.

    Example:
        >>> spill = PerUserSpill()
        >>> spill.add(pd.DataFrame({"user": [2, 1], "P@1": [0.0, 1.0]}))
        >>> r = StreamedResult({"P@1": 0.5}, None, {}, {}, ["P@1"])  # type: ignore[arg-type]
        >>> r.per_user_spill = spill
        >>> r.spilled, r.per_user["user"].tolist(), r.spilled
        (True, [1, 2], False)
    """

    per_user_spill: PerUserSpill | None = None
    #: the per-user columns shown (``None``: all), as a restricted result shows them
    per_user_columns: list[str] | None = None

    @property
    def per_user(self) -> pd.DataFrame:
        frame = self.__dict__.get("_per_user")
        if frame is None and self.per_user_spill is not None:
            frame = self.per_user_spill.to_pandas(self.per_user_columns)
            self.__dict__["_per_user"] = frame
        return frame

    @per_user.setter
    def per_user(self, value: pd.DataFrame | None) -> None:
        self.__dict__["_per_user"] = value

    def __reduce__(self) -> Any:
        """Pickled or deep-copied as a plain :class:`~receval.result.Result`, its per-user
        values read back (the spill's files belong to this process).

        Example:
            >>> import pickle
            >>> spill = PerUserSpill()
            >>> spill.add(pd.DataFrame({"user": [2, 1], "P@1": [0.0, 1.0]}))
            >>> r = StreamedResult({"P@1": 0.5}, None, {}, {}, ["P@1"])  # type: ignore[arg-type]
            >>> r.per_user_spill = spill
            >>> back = pickle.loads(pickle.dumps(r))
            >>> type(back).__name__, back.per_user["user"].tolist()
            ('Result', [1, 2])
        """
        import dataclasses

        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(Result)}
        return (_plain_result, (fields,))

    def __copy__(self) -> StreamedResult:
        """A shallow copy sharing the spill (the values stay on disk)."""
        view = StreamedResult.__new__(StreamedResult)
        view.__dict__.update(self.__dict__)
        return view

    @property
    def spilled(self) -> bool:
        """Whether the per-user values are still only on disk (not read back yet)."""
        return self.per_user_spill is not None and self.__dict__.get("_per_user") is None

    def to_parquet(self, path: str | Path) -> None:
        """The per-user values to a Parquet file: from the spill while not read back.

        Example:
            >>> import tempfile
            >>> spill = PerUserSpill()
            >>> spill.add(pd.DataFrame({"user": [2, 1], "P@1": [0.0, 1.0]}))
            >>> r = StreamedResult({"P@1": 0.5}, None, {}, {}, ["P@1"])  # type: ignore[arg-type]
            >>> r.per_user_spill = spill
            >>> out = Path(tempfile.mkdtemp()) / "u.parquet"
            >>> r.to_parquet(out); pq.read_table(out).column("user").to_pylist(), r.spilled
            ([1, 2], True)
        """
        if self.spilled:
            assert self.per_user_spill is not None
            self.per_user_spill.write(path, columns=self.per_user_columns)
        else:
            Result.to_parquet(self, path)


def _plain_result(fields: dict[str, Any]) -> Result:
    """A :class:`~receval.result.Result` of these fields (a streamed result unpickled)."""
    return Result(**fields)


def still_spilled(result: Any) -> PerUserSpill | None:
    """``result``'s spill when its per-user values are on disk only (not read back yet).

    Example:
        >>> still_spilled(object()) is None
        True
    """
    if isinstance(result, StreamedResult) and result.spilled:
        return result.per_user_spill
    return None


def restricted(result: Any, restrict: Callable[[Any], Any]) -> Any:
    """``restrict(result)`` (a copy showing fewer metrics) without reading spilled per-user
    values back: ``restrict`` sees an empty frame of the spilled columns, and the copy it
    returns reads (or writes) the columns it kept from the same spill. A result held in
    memory is passed to ``restrict`` as it is.

    Example:
        >>> spill = PerUserSpill()
        >>> spill.add(pd.DataFrame({"user": [2, 1], "P@1": [0.0, 1.0], "R@1": [0.0, 0.5]}))
        >>> r = StreamedResult({"P@1": 0.5, "R@1": 0.25}, None, {}, {}, ["P@1", "R@1"])  # type: ignore[arg-type]
        >>> r.per_user_spill = spill
        >>> shown = restricted(r, lambda x: Result(x.summary, x.per_user[["user", "R@1"]],
        ...                                        x.counts, x.options, ["R@1"]))
        >>> r.spilled, shown.spilled, shown.per_user_columns
        (True, True, ['user', 'R@1'])
        >>> shown.per_user["R@1"].tolist(), shown.spilled
        ([0.5, 0.0], False)
    """  # noqa: E501
    spill = still_spilled(result)
    if spill is None:
        return restrict(result)
    spill._finished()
    empty = pq.read_table(spill.runs[0], columns=result.per_user_columns).slice(0, 0)
    result.per_user = empty.to_pandas()
    try:
        shown = restrict(result)
    finally:
        result.per_user = None  # read from the spill again when asked
    view = StreamedResult.__new__(StreamedResult)
    view.__dict__.update({k: v for k, v in shown.__dict__.items() if k != "per_user"})
    view.per_user = None
    view.per_user_spill = spill
    view.per_user_columns = list(shown.per_user.columns)
    return view
