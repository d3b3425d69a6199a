"""The Spark engine's executor task: what ``mapInArrow`` runs on each partition.

It unpacks the partition's users' rows (:mod:`receval.spark.packing`), asks for the order
column when a user's scores tie, runs the local plan on the task's cores
(:class:`receval.partitions.LocalPlan`) and emits the per-user rows and one meta row (the
partition's counts and exact sums, :func:`receval.partitions.describe`, and its timings).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from receval.exceptions import ReceValError
from receval.partitions import LocalPlan, PartitionFn, PartitionMode, describe, finite_range
from receval.scalars import plain
from receval.spark.footers import Footers
from receval.spark.packing import _columns_sides, _tied, _unpacked


@dataclass
class _Task:
    """The function ``mapInArrow`` runs on each partition (pickled with its settings)."""

    names: tuple[str | None, ...]
    ordered: bool
    fn: PartitionFn | None = None
    metrics: list[str] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    n_metrics: int = 0
    per_user: bool = True
    out_schema: pa.Schema | None = None
    #: the ``partitions`` option: part of the plan, so a cached result of the same query with
    #: other partitions is not taken for this one
    partitions: int | None = None
    #: no order column was shuffled (``ties="stable"``): a user's tied scores ask for it
    tie_check: bool = False
    #: training rows (``s`` 2) travel with each user's rows: the local plan gets them as
    #: ``train=`` (each user's training items: calibration)
    history: bool = False
    #: the metrics whose first undefined user is a row of the partition's per-user values
    #: (the accuracy metrics; the beyond-accuracy sums name the user already)
    row_firsts: frozenset[str] = frozenset()
    #: the inputs' Parquet footers say that no packed id, score or order column holds a null:
    #: the shuffle counts no nulls per user (``g``)
    null_free: bool = False
    #: the columns the packed lists read: item ids per side, the score (or rank), the order
    #: column (set by :func:`receval.spark.schema._union`)
    packed: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    #: what the partition's rows cannot tell: the driver's whole training popularity and
    #: catalogue (:class:`receval.partitions.PartitionMode`)
    mode: PartitionMode = field(default_factory=PartitionMode)
    #: the beyond-accuracy entries of the metrics asked, as the driver's table holds them:
    #: registered in the executor's table for the task (an entry added at run time)
    entries: tuple[Any, ...] = ()

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        got = [b for b in batches if b.num_rows]
        if not got:
            return
        import numba
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context else 0
        began = time.perf_counter()
        table = pa.Table.from_batches(got)
        if "r" not in table.column_names:  # columns mode
            if "g" in table.column_names and pc.sum(table.column("g")).as_py():
                yield self._meta_batch({"partition": partition, "retry": "nulls"})
                return
            sides, n_rows = _columns_sides(table)
        else:
            table = _unpacked(table)
            flags = table.column("s").to_numpy()
            sides = [table.filter(pa.array(flags == f)) for f in (0, 1, 2)]
            n_rows = table.num_rows
        if self.tie_check and _tied(table, sides[1]):
            yield self._meta_batch({"partition": partition, "retry": "ties"})
            return
        if self.ordered:
            sides = [s.take(pc.sort_indices(s.column("o"))) for s in sides]
        tu, ti, tv, pu, pi, pv = self.names
        t_cols = {tu: sides[0].column("u"), ti: sides[0].column("i")}
        if tv is not None:
            t_cols[tv] = sides[0].column("tv")
        p_cols = {pu: sides[1].column("u"), pi: sides[1].column("i")}
        if pv is not None:
            p_cols[pv] = sides[1].column("pv")
        truth, preds = pa.table(t_cols), pa.table(p_cols)
        meta: dict[str, Any] = {"partition": partition, "rating_range": finite_range(truth, tv)}
        per_user = None
        start = time.perf_counter()
        threads = None
        try:
            with _task_threads(context.cpus() if context else None), _registered(self.entries):
                threads = int(numba.get_num_threads())
                result = self.plan().evaluate(
                    truth, preds, _history(sides[2]) if self.history else None
                )
            meta.update(describe(result, self.row_firsts))
            per_user = result.per_user
        except ReceValError as exc:
            meta["error"] = [type(exc).__name__, str(exc)]
        meta["task"] = {
            "partition": meta["partition"],
            "pid": os.getpid(),
            "rows": n_rows,
            "seconds": time.perf_counter() - start,
            "first_in_process": _first_in_process(),
            "unpack_seconds": start - began,
            "batches": len(got),
            "threads": threads,
            "null_check": "g" in table.column_names,
        }
        if self.per_user and per_user is not None and len(per_user):
            yield self._rows(per_user)
        yield self._meta_batch(meta)

    def _meta_batch(self, meta: dict[str, Any]) -> pa.RecordBatch:
        """The partition's one ``k=1`` row: its meta as JSON."""
        assert self.out_schema is not None
        cols: list[Any] = [pa.array([1], pa.int8()), pa.nulls(1, self.out_schema.field("u").type)]
        cols += [pa.nulls(1, pa.float64())] * self.n_metrics
        cols.append(pa.array([json.dumps(meta, default=plain)]))
        return pa.RecordBatch.from_arrays(cols, schema=self.out_schema)

    def _rows(self, per_user: pd.DataFrame) -> pa.RecordBatch:
        assert self.out_schema is not None
        n = len(per_user)
        users = pa.array(per_user["user"].to_numpy()).cast(self.out_schema.field("u").type)
        cols: list[Any] = [pa.array(np.zeros(n, np.int8)), users]
        cols += [
            pa.array(per_user.iloc[:, 1 + j].to_numpy(np.float64)) for j in range(self.n_metrics)
        ]
        cols.append(pa.nulls(n, pa.string()))
        return pa.RecordBatch.from_arrays(cols, schema=self.out_schema)

    def plan(self) -> LocalPlan:
        """The local plan this task runs on its partition's users."""
        assert self.fn is not None
        return LocalPlan(
            names=self.names,
            fn=self.fn,
            metrics=self.metrics,
            kwargs=self.kwargs,
            row_firsts=self.row_firsts,
            mode=self.mode,
        )


def _registered(entries: tuple[Any, ...]) -> contextlib.AbstractContextManager[None]:
    """:func:`receval.spark.beyond.registered` when the task carries entries."""
    if not entries:
        return contextlib.nullcontext()
    from receval.spark.beyond import registered

    return registered(entries)


def _null_free(
    feet: tuple[Footers | None, Footers | None], task: _Task, order_by: str | None
) -> bool:
    """Whether both inputs' footers say that no column the lists pack (the items, the score
    or rank, ``order_by``) holds a null; no training rows travel with the users' rows.

    Example:
        >>> f = Footers(rows=3, no_nulls=frozenset({"user", "item", "score"}))
        >>> task = _Task(names=(), ordered=False, packed=(("item",), ("item", "score")))
        >>> _null_free((f, f), task, None), _null_free((f, f), task, "t"), _null_free((f, None), task, None)
        (True, False, False)
    """  # noqa: E501
    truth, preds = feet
    if truth is None or preds is None or task.history:
        return False
    t_cols, p_cols = task.packed
    extra = () if order_by is None else (order_by,)
    return (set(t_cols + extra) <= truth.no_nulls) and (set(p_cols + extra) <= preds.no_nulls)


def _history(side: pa.Table) -> pa.Table:
    """The training rows of a partition (``s`` 2) as a ``u``, ``i`` table."""
    return pa.table({"u": side.column("u"), "i": side.column("i")})


_SEEN: list[bool] = []


@contextlib.contextmanager
def _task_threads(cpus: int | None) -> Iterator[None]:
    """The local plan on the task's cores (``spark.task.cpus``, 1 by default), not every core
    of the machine: the executor runs a task on each of its cores at once.

    Example:
        >>> import numba
        >>> before = numba.get_num_threads()
        >>> with _task_threads(1):
        ...     numba.get_num_threads()
        1
        >>> numba.get_num_threads() == before
        True
    """
    import numba

    before = numba.get_num_threads()
    if cpus is None or cpus >= before:
        yield
        return
    numba.set_num_threads(max(int(cpus), 1))
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _first_in_process() -> bool:
    """Whether this is the first partition this Python worker evaluates (the numba kernels
    load, or compile, on the first)."""
    first = not _SEEN
    _SEEN.append(True)
    return first
