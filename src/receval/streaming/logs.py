"""Logs bigger than memory (``receval.monitor(..., memory_budget=)``): two Parquet logs cut into
pieces of time, written to Parquet files in a temporary folder and read back one piece at a
time, in time order.

Every row goes to the piece whose time range holds its time (``served_at`` of an impression,
``at`` of a feedback row), in the order the file holds it; the pieces split the range from the
earliest to the latest time of both logs into equal spans. Fed to the monitor's state one after
another, they give the numbers of one run over the whole logs: a piece's rows are all later than
every row of the pieces before, so no feedback arrives after its list closed (docs/monitoring.md,
the condition under which a run over logs split in pieces equals one run).

Text ids are narrowed to integers only when every id of the whole file is canonical, as the
whole-file reader narrows them (:func:`receval.io.ids.narrow`): a piece whose ids all look like
integers, of a file that holds other text, keeps them as text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from receval.exceptions import ReceValError
from receval.io.batches import is_parquet, open_parquet
from receval.io.ids import narrow

#: bytes a log row costs the monitor at its peak, read and judged (measured about 300 on the
#: 2-core dev machine, 2026-12-07, with the margin of a piece larger than the mean)
LOG_ROW_BYTES = 600

#: a function from a chunk's time column (as pandas) to int64 ns since the epoch
TimesOf = Callable[[object], np.ndarray]


@dataclass
class LogSide:
    """One log file: its path, its time column, the id columns and how to read times."""

    side: str
    path: Path
    time_col: str
    ids: tuple[str, ...]
    times_of: TimesOf
    #: per id column: whether every id of the whole file narrows to int64
    int_ids: dict[str, bool] = field(default_factory=dict)
    rows: int = 0


def _parquet(side: LogSide) -> pq.ParquetFile:
    return open_parquet(side.path, f"{side.side}")


def check_parquet(path: object, side: str) -> Path:
    """``path`` as a Parquet file's path, or a one-line error: a budget streams Parquet logs.

    Example:
        >>> check_parquet("logs.csv", "impressions")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: memory_budget streams Parquet logs; the impressions log logs.csv is not a Parquet file (convert it, or run without a budget)
    """  # noqa: E501
    if isinstance(path, str | Path):
        p = Path(path)
        if is_parquet(p):
            return p
    shown = path if isinstance(path, str | Path) else f"a {type(path).__name__}"
    raise ReceValError(
        f"memory_budget streams Parquet logs; the {side} log {shown} is not a Parquet file "
        "(convert it, or run without a budget)"
    )


def time_range(sides: list[LogSide], chunk_rows: int) -> tuple[int, int] | None:
    """The earliest and latest time of every log (one pass over their time columns), and
    each side's ``int_ids`` and ``rows``; ``None`` when the logs hold no row.

    Example:
        >>> import tempfile, pandas as pd
        >>> p = Path(tempfile.mkdtemp()) / "f.parquet"
        >>> pq.write_table(pa.table({"user": ["1", "x"], "at": [5, 3]}), p)
        >>> s = LogSide("feedback", p, "at", ("user",), lambda c: c.to_numpy())
        >>> time_range([s], 1), s.int_ids
        ((3, 5), {'user': False})
    """
    lo, hi = None, None
    for s in sides:
        parquet = _parquet(s)
        names = parquet.schema_arrow.names
        if s.time_col not in names:
            raise ReceValError(f"{s.side}: no column {s.time_col!r}; columns: {', '.join(names)}")
        s.int_ids = {c: True for c in s.ids if c in names}
        s.rows = parquet.metadata.num_rows
        for batch in parquet.iter_batches(batch_size=chunk_rows, columns=[s.time_col, *s.int_ids]):
            t = s.times_of(batch.column(0).to_pandas())
            if len(t):
                lo = int(t.min()) if lo is None else min(lo, int(t.min()))
                hi = int(t.max()) if hi is None else max(hi, int(t.max()))
            for i, c in enumerate(s.int_ids, start=1):
                s.int_ids[c] &= pa.types.is_integer(narrow(batch.column(i)).type)
    return None if lo is None or hi is None else (lo, hi)


def pieces_for(sides: list[LogSide], budget: int) -> int:
    """How many pieces keep a piece's rows within ``budget`` (about :data:`LOG_ROW_BYTES` a
    row, the rows split evenly).

    Example:
        >>> s = LogSide("feedback", Path("f"), "at", (), lambda c: c, rows=10_000_000)
        >>> pieces_for([s], 1 << 30)
        6
    """
    return max(1, math.ceil(sum(s.rows for s in sides) * LOG_ROW_BYTES / budget))


def edges(lo: int, hi: int, pieces: int) -> np.ndarray:
    """The ``pieces - 1`` inner boundaries splitting ``[lo, hi]`` into equal spans (a time
    ``t`` goes to piece ``searchsorted(edges, t, "right")``).

    Example:
        >>> edges(0, 9, 2).tolist()
        [5]
    """
    span = hi - lo + 1
    return np.array([lo + span * j // pieces for j in range(1, pieces)], dtype=np.int64)


def split(sides: list[LogSide], inner: np.ndarray, folder: Path, chunk_rows: int) -> None:
    """Each side's rows written to ``folder/<side>-<piece>.parquet`` by their time's piece, in
    the file's order (one pass, a chunk at a time)."""
    for s in sides:
        parquet = _parquet(s)
        writers: dict[int, pq.ParquetWriter] = {}
        try:
            for batch in parquet.iter_batches(batch_size=chunk_rows):
                table = pa.Table.from_batches([batch])
                t = s.times_of(table.column(s.time_col).to_pandas())
                piece = np.searchsorted(inner, t, side="right")
                for k in np.unique(piece).tolist():
                    if k not in writers:
                        writers[k] = pq.ParquetWriter(
                            folder / f"{s.side}-{k}.parquet", parquet.schema_arrow
                        )
                    writers[k].write_table(table.take(pa.array(np.flatnonzero(piece == k))))
        finally:
            for w in writers.values():
                w.close()


def read_piece(s: LogSide, folder: Path, k: int) -> pa.Table:
    """Piece ``k`` of side ``s`` (no row: the file's empty table), its ids in the whole
    file's types."""
    from receval.io.frames import read_frame

    path = folder / f"{s.side}-{k}.parquet"
    if not path.exists():
        empty = _parquet(s).schema_arrow.empty_table()
        pq.write_table(empty, path)
    table = read_frame(path, s.side, ids=s.ids, empty_ok=True)
    for c, as_int in s.int_ids.items():
        i = table.schema.get_field_index(c)
        if not as_int and pa.types.is_integer(table.schema.field(i).type):
            table = table.set_column(
                i, table.field(i).with_type(pa.string()), pc.cast(table.column(i), pa.string())
            )
    path.unlink()
    return table


def pieces(
    sides: list[LogSide], budget: int, folder: Path, *, chunk_rows: int, count: int | None = None
) -> tuple[int, Iterator[list[pa.Table]]]:
    """The number of pieces and an iterator over them in time order, each one table per
    side (``count`` overrides the number the budget gives: tests).

    Example:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> pq.write_table(pa.table({"at": [3, 1, 2, 9]}), d / "f.parquet")
        >>> s = LogSide("feedback", d / "f.parquet", "at", (), lambda c: c.to_numpy())
        >>> n, it = pieces([s], 1 << 30, d, chunk_rows=2, count=2)
        >>> [t.column("at").to_pylist() for (t,) in it]
        [[3, 1, 2], [9]]
    """
    found = time_range(sides, chunk_rows)
    if found is None:
        n = 1
        inner = np.zeros(0, dtype=np.int64)
    else:
        n = count or pieces_for(sides, budget)
        inner = edges(found[0], found[1], n)
    split(sides, inner, folder, chunk_rows)

    def each() -> Iterator[list[pa.Table]]:
        for k in range(n):
            yield [read_piece(s, folder, k) for s in sides]

    return n, each()
