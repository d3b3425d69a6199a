"""Inputs sorted by user: one pass over both files side by side, users that straddle a chunk
boundary carried over to the next batch.

Whether a Parquet file is sorted is read from its footer (each row group's smallest and
largest user, in order and not overlapping: :func:`sorted_by_footer`) and checked again on
every chunk as it is read: a chunk out of order raises :class:`NotSorted`, and the caller
falls back to partitioning by hash (:mod:`receval.streaming.spill`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


class NotSorted(Exception):
    """A chunk's users are not in ascending order (or start below the previous chunk's)."""


def sorted_by_footer(path: str | Path, column: str) -> bool:
    """Whether the footer's statistics say the row groups are in ascending order of
    ``column`` and do not overlap (a necessary condition, checked again while reading).

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "t.parquet"
        >>> pq.write_table(pa.table({"user": [1, 1, 2, 3]}), p, row_group_size=2)
        >>> sorted_by_footer(p, "user")
        True
        >>> pq.write_table(pa.table({"user": [3, 1, 2, 1]}), p, row_group_size=2)
        >>> sorted_by_footer(p, "user")
        False
    """
    meta = pq.ParquetFile(path).metadata
    try:
        index = meta.schema.to_arrow_schema().get_field_index(column)
    except (KeyError, ValueError):
        return False
    if index < 0:
        return False
    previous: Any = None
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        if group.num_rows == 0:
            continue
        stats = group.column(index).statistics
        if stats is None or not stats.has_min_max:
            return False
        low, high = stats.min, stats.max
        if low > high or (previous is not None and low < previous):
            return False
        previous = high
    return True


def _check(users: pa.Array, last: Any) -> None:
    """Raise :class:`NotSorted` unless ``users`` ascend and start at or above ``last``."""
    n = len(users)
    if n == 0:
        return
    if last is not None and pc.less(users[0], pa.scalar(last, users.type)).as_py():
        raise NotSorted
    if n > 1 and not pc.all(pc.greater_equal(users.slice(1), users.slice(0, n - 1))).as_py():
        raise NotSorted


def lockstep(
    truth: Iterator[pa.Table],
    predictions: Iterator[pa.Table],
    rows: int,
    align: Callable[[str, pa.Table], pa.Table],
) -> Iterator[tuple[pa.Table, pa.Table]]:
    """Batches of complete users (their rows of both sides), about ``rows`` rows each, from
    two user-sorted streams of chunks; ``align`` gives a side's chunk its final id types.

    Example:
        >>> t = iter([pa.table({"user": [1, 2]}), pa.table({"user": [2, 4]})])
        >>> p = iter([pa.table({"user": [1, 3, 3, 4]})])
        >>> [(a["user"].to_pylist(), b["user"].to_pylist())
        ...  for a, b in lockstep(t, p, 2, lambda side, chunk: chunk)]
        [([1], [1]), ([2, 2], [3, 3]), ([4], [4])]
    """
    its = {"truth": truth, "predictions": predictions}
    buf: dict[str, list[pa.Table]] = {"truth": [], "predictions": []}
    schema: dict[str, pa.Schema] = {}
    last: dict[str, Any] = {"truth": None, "predictions": None}
    done = {"truth": False, "predictions": False}
    held, force = 0, False
    while True:
        open_sides = [s for s in its if not done[s]]
        waiting = [s for s in open_sides if last[s] is None]
        if open_sides and (force or held < rows or waiting):
            side = waiting[0] if waiting else min(open_sides, key=lambda s: last[s])
            chunk = next(its[side], None)
            if chunk is None:
                done[side] = True
                continue
            chunk = align(side, chunk)
            schema.setdefault(side, chunk.schema)
            users = chunk.column("user").combine_chunks()
            _check(users, last[side])
            if len(users):
                buf[side].append(chunk)
                last[side] = users[-1].as_py()
                held += len(users)
                force = False
            continue
        bounds = [last[s] for s in open_sides]
        frontier = min(bounds) if bounds else None
        parts: dict[str, pa.Table] = {}
        for side in its:
            table = pa.concat_tables(buf[side]) if buf[side] else schema[side].empty_table()
            if frontier is None:
                cut = table.num_rows
            else:
                users = table.column("user")
                cut = int(pc.sum(pc.less(users, pa.scalar(frontier, users.type))).as_py() or 0)
            buf[side] = [table.slice(cut)] if cut < table.num_rows else []
            parts[side] = table.slice(0, cut)
        held = sum(t.num_rows for s in its for t in buf[s])
        if parts["truth"].num_rows or parts["predictions"].num_rows:
            yield parts["truth"], parts["predictions"]
        elif not open_sides:
            return
        else:
            force = True  # one user larger than a batch: read on
