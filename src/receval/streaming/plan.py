"""The streaming plan: both files read in chunks, users evaluated batch by batch, the exact
sums merged; the numbers of the in-memory path bit for bit.

Two ways through the files (``Result.counts["streaming"]`` says which, how many partitions
and how many passes over the data):

- ``"sorted"``: both files Parquet and sorted by user (the footers say so, or ``order=
  "sorted"``): one pass, both files side by side (:func:`receval.streaming.ordered.lockstep`);
  a chunk found out of order falls back to the next way.
- ``"partitioned"``: rows in any order: each side split by a hash of the user into spill
  files (:mod:`receval.streaming.spill`), then each partition evaluated.

Each batch of users runs the local plan (:func:`receval.evaluation.evaluate_partition`, as a
Spark partition runs it, a batch with one side empty included); the batches hold disjoint
users, so every count adds up and the sums merge exactly (:class:`~receval.accumulate.
Accumulator`); the finish and the common-mistake warnings run once, on the merged counts,
as on the Spark driver. What needs every user at once is refused under a budget, in one line
(:data:`REFUSED`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from receval import checks
from receval._version import __version__
from receval.accumulate import Accumulator
from receval.exceptions import ReceValError
from receval.finalize import canonical_names, check_inputs, finish, record_profile, recorded_inputs
from receval.io import SOURCE_KEY
from receval.io.chunks import ChunkedSource
from receval.io.ids import ID_COLUMNS, refuse_typed_integers
from receval.io.wanted import Wanted
from receval.measures.spec import parse_metrics
from receval.partitions import (
    LocalPlan,
    PartitionFn,
    describe,
    finite_range,
    merge,
    merge_strata,
    rating_range,
)
from receval.profiles import resolve
from receval.result import Counts, RecordedOptions, Result
from receval.strata import as_mapping
from receval.strata import complete as complete_strata
from receval.streaming.budget import (
    auto_budget,
    chunk_rows,
    parse_budget,
    partition_rows,
    text_rows,
)
from receval.streaming.ordered import NotSorted, lockstep, sorted_by_footer
from receval.streaming.peruser import PER_USER_SHARE, PerUserSpill, StreamedResult, frame_bytes
from receval.streaming.spill import Partitioner, SpillFolder

#: the arguments of ``evaluate`` a budget refuses, and why (each needs every user at once, or
#: is not read from a file)
REFUSED = {
    "train": "the training audit joins every user's training rows",
    "exclude_train": "the training audit joins every user's training rows",
    "beyond": "beyond-accuracy metrics read every user's list at once",
    "item_features": "beyond-accuracy metrics read every user's list at once",
    "item_groups": "beyond-accuracy metrics read every user's list at once",
    "debias": "the propensities are fitted over every user",
    "propensity": "the propensities are fitted over every user",
    "propensity_clip": "the propensities are fitted over every user",
    "device": "the streaming path runs the numba engine",
    "spark_options": "the streaming path runs on this machine",
}
#: from this budget up, Parquet chunks are decoded on Arrow's threads
THREADED_BUDGET = 1 << 30
#: how the rows are ordered: ``auto`` (the footers tell), ``sorted`` (declared: both sides
#: ascending by user), ``any`` (partition by hash)
ORDERS = ("auto", "sorted", "any")


def evaluate_files(
    truth: str | Path,
    predictions: str | Path,
    metrics: str | Iterable[str],
    partition_fn: PartitionFn,
    *,
    profile: Any = None,
    explicit: Mapping[str, Any] | None = None,
    silence: Any = None,
    columns: Mapping[str, Any] | None = None,
    strata: Any = None,
    memory_budget: str | int | None = None,
    order: str = "auto",
    spill_dir: str | Path | None = None,
    partitions: int | None = None,
    rows_per_chunk: int | None = None,
    per_user_bytes: int | None = None,
) -> Result:
    """Evaluate two files (CSV, TSV or Parquet) within ``memory_budget`` bytes (``"2GiB"``;
    ``None``: :func:`receval.streaming.budget.auto_budget`).

    ``partition_fn`` is the local plan of one batch of users
    (:func:`receval.evaluation.evaluate_partition`); ``explicit`` the options passed to
    ``evaluate``, ``columns`` its column arguments. ``order``: ``"auto"``, ``"sorted"`` or
    ``"any"`` (:data:`ORDERS`); ``spill_dir`` the parent of the temporary folder;
    ``partitions`` and ``rows_per_chunk`` override the sizes the budget gives (tests).
    The per-user values are held in memory up to ``per_user_bytes`` (default
    :data:`receval.streaming.peruser.PER_USER_SHARE` of the budget), then spilled to Parquet
    (:mod:`receval.streaming.peruser`) and read back when asked for.

    Example:
        >>> import tempfile, pathlib
        >>> from receval.evaluation import evaluate_partition
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "t.csv").write_text("user,item\\na,x\\na,y\\nb,x\\n")
        >>> _ = (d / "p.csv").write_text("user,item,score\\na,x,0.9\\na,z,0.8\\nb,z,0.7\\n"
        ...                              "b,x,0.1\\n")
        >>> r = evaluate_files(d / "t.csv", d / "p.csv", ["P@1", "R@2"], evaluate_partition,
        ...                    memory_budget="64MiB", partitions=2)
        >>> r.summary, r.counts["streaming"]["partitions"]
        ({'P@1': 0.5, 'R@2': 0.75}, 2)
    """
    if order not in ORDERS:
        raise ReceValError(f"order must be one of {', '.join(ORDERS)}; got {order!r}")
    budget = auto_budget() if memory_budget is None else parse_budget(memory_budget)
    explicit = dict(explicit or {})
    columns = dict(columns or {})
    resolved = resolve(profile, explicit)
    options = resolved.options
    metric_list = [metrics] if isinstance(metrics, str) else list(metrics)
    specs = parse_metrics(metric_list)
    per_spec = [resolved.options_for(s.family) for s in specs]
    with checks.silence(silence):  # unknown codes are an error before any read
        pass
    wt, wp = Wanted.sides(columns)
    rows = rows_per_chunk or chunk_rows(budget)
    sources = {
        "truth": ChunkedSource.open(truth, wt, chunk_rows=rows),
        "predictions": ChunkedSource.open(predictions, wp, chunk_rows=rows),
    }
    for src in sources.values():  # Arrow's decoding threads hold tens of MB: big budgets only
        src.threads = budget >= THREADED_BUDGET
    # the shared user column names the mapping's, as in memory
    mapping = (
        None if strata is None else as_mapping(strata, user_col=columns.get("user_col", "user"))
    )
    t_value = next((c for c in sources["truth"].columns if c not in ID_COLUMNS), None)
    p_value = next((c for c in sources["predictions"].columns if c not in ID_COLUMNS), None)
    kwargs: dict[str, Any] = {
        "profile": profile,
        **explicit,
        "user_col": "user",
        "item_col": "item",
        "rating_col": "rating",
        "score_col": "score",
    }
    if mapping is not None:
        kwargs["strata"] = mapping
    task = LocalPlan(
        names=("user", "item", t_value, "user", "item", p_value),
        fn=partition_fn,
        metrics=metric_list,
        kwargs=kwargs,
        row_firsts=frozenset(s.name for s in specs),
    )
    limit = int(budget * PER_USER_SHARE) if per_user_bytes is None else per_user_bytes
    run = _Run(task, sources, limit, spill_dir)
    both_parquet = all(s.kind == "parquet" for s in sources.values())
    mode, passes = "partitioned", 0
    if (
        both_parquet
        and order != "any"
        and (
            order == "sorted"
            or all(sorted_by_footer(s.path, s.columns["user"]) for s in sources.values())
        )
    ):
        try:
            passes += 1
            for t_part, p_part in lockstep(
                sources["truth"].chunks(),
                sources["predictions"].chunks(),
                partition_rows(budget)
                if partitions is None
                else max(_rows_hint(sources) // partitions, 1),
                run.align,
            ):
                run.evaluate(t_part, p_part)
            mode = "sorted"
        except NotSorted:
            run.reset()
    if mode == "partitioned":
        n_parts = partitions or _partitions(sources, budget)
        with SpillFolder(spill_dir) as folder:
            as_text = not (both_parquet and all(s.int_ids["user"] for s in sources.values()))
            writers = {
                side: Partitioner(
                    folder,
                    side,
                    n_parts,
                    as_text=as_text,
                    buffer_rows=max(partition_rows(budget) // (4 * n_parts), 4096),
                )
                for side in sources
            }
            for side, src in sources.items():
                for chunk in src.chunks():
                    writers[side].add(chunk)
                writers[side].close()
            passes += 2  # the inputs read once, the spill files once
            for p in range(n_parts):
                run.evaluate(
                    run.align("truth", writers["truth"].read(p)),
                    run.align("predictions", writers["predictions"].read(p)),
                )
        run.parts_total = n_parts
    try:
        result = run.finish(specs, per_spec, options, explicit, silence, mapping, wt)
    except BaseException:
        run.drop_spill()
        raise
    record_profile(
        result,
        specs,
        per_spec,
        options,
        resolved.name,
        inputs=recorded_inputs(strata=mapping),
        metrics=canonical_names(specs, [], metric_list),
    )
    counts = cast(dict[str, Any], result.counts)
    counts["streaming"] = {
        "mode": mode,
        "partitions": run.parts_total if mode == "partitioned" else run.batches,
        "batches": run.batches,
        "passes": passes,
        "budget_bytes": budget,
        "per_user": "spilled" if isinstance(result, StreamedResult) else "memory",
    }
    return result


class _Run:
    """The batches evaluated so far: their metas (counts, sums), per-user values, ratings."""

    def __init__(
        self,
        task: LocalPlan,
        sources: dict[str, ChunkedSource],
        per_user_bytes: int | None = None,
        spill_dir: str | Path | None = None,
    ) -> None:
        self.task, self.sources = task, sources
        self.per_user_bytes, self.spill_dir = per_user_bytes, spill_dir
        self.spill: PerUserSpill | None = None
        self.reset()

    def reset(self) -> None:
        self.metas: list[dict[str, Any]] = []
        self.per_user: list[pd.DataFrame] = []
        self.held = 0
        self.batches = 0
        self.parts_total = 0
        self.drop_spill()

    def drop_spill(self) -> None:
        """Remove the spilled per-user values (a fallback starts over; an error ends)."""
        if self.spill is not None:
            self.spill.close()
            self.spill = None

    def keep(self, frame: pd.DataFrame) -> None:
        """One batch's per-user values: held while they fit ``per_user_bytes``, else every
        batch's written to Parquet (:class:`~receval.streaming.peruser.PerUserSpill`)."""
        if self.spill is None:
            self.per_user.append(frame)
            self.held += frame_bytes(frame)
            if self.per_user_bytes is None or self.held <= self.per_user_bytes:
                return
            # the merge's blocks, their copies and the allocator's slack: about ten times
            # the blocks (measured, 2026-12-07): an eighth of the values' share
            merge_bytes = max(self.per_user_bytes // 8, 1 << 20)
            self.spill = PerUserSpill(self.spill_dir, merge_bytes=merge_bytes)
            held, self.per_user, self.held = self.per_user, [], 0
            for f in held:
                self.spill.add(f)
            return
        self.spill.add(frame)

    def align(self, side: str, table: pa.Table) -> pa.Table:
        """``table``'s ids in their final types (int64 only where both sides' readers give
        int64, as :func:`receval.io.ids.align_id_types` after the whole reader), carrying
        the file it comes from (messages name the file's columns). A Parquet side that stores
        integer ids against text on the other side is refused with the in-memory path's line."""
        self._refuse_mixed_types()
        for name in ID_COLUMNS:
            as_int = all(s.int_ids.get(name, False) for s in self.sources.values())
            col = table.column(name)
            want = pa.int64() if as_int else pa.string()
            if col.type != want:
                table = table.set_column(
                    table.schema.get_field_index(name), name, pc.cast(col, want)
                )
        src = self.sources[side]
        meta = {
            "side": side,
            "path": str(src.path),
            "found": list(src.wanted.found),
            "asked": src.wanted.asked(),
        }
        return table.replace_schema_metadata({SOURCE_KEY: json.dumps(meta).encode()})

    def _refuse_mixed_types(self) -> None:
        sides = list(self.sources)
        for name in ID_COLUMNS:
            refuse_typed_integers(
                name,
                [self.sources[s].int_ids.get(name, False) for s in sides],
                [self.sources[s].kind for s in sides],
                sides,
            )

    def evaluate(self, truth: pa.Table, predictions: pa.Table) -> None:
        """One batch of complete users through the local plan."""
        if truth.num_rows == 0 and predictions.num_rows == 0:
            return
        task = self.task
        meta: dict[str, Any] = {
            "partition": len(self.metas),
            "rating_range": finite_range(truth, task.names[2]),
        }
        result = task.evaluate(truth, predictions)
        meta.update(describe(result, task.row_firsts))
        self.metas.append(meta)
        try:
            self.keep(result.per_user)
        except BaseException:
            self.drop_spill()
            raise
        self.batches += 1

    def finish(
        self,
        specs: list[Any],
        per_spec: list[Any],
        options: Any,
        explicit: Mapping[str, Any],
        silence: Any,
        mapping: Any,
        wt: Wanted,
    ) -> Result:
        """The merged counts and sums finished as the in-memory path finishes them."""
        if not self.metas:
            raise ReceValError("truth is empty (no rows)")
        ranges = rating_range(self.metas)
        counts, sums = merge(self.metas)
        names = {s.name for s in specs}
        sums = Accumulator(tuple(m for m in sums.metrics if m.name in names))
        with checks.silence(silence):
            summary = finish(specs, per_spec, counts, sums)
        groups = None if mapping is None else merge_strata(self.metas, specs, per_spec, mapping)
        per_user: pd.DataFrame | None = None
        if self.spill is None:
            # a batch that evaluated no user gives an empty frame whose ids may be typed
            # apart (text: object, not the others' string dtype): left out where others hold
            frames = [f for f in self.per_user if len(f)] or self.per_user[:1]
            per_user = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
            self.per_user = []
            per_user = per_user.sort_values("user", kind="stable").reset_index(drop=True)
        record = options.to_dict()
        record.update(
            version=__version__, engine="numba", metrics={s.name: s.canonical for s in specs}
        )
        result = (Result if self.spill is None else StreamedResult)(
            summary=summary,
            per_user=per_user,
            counts=cast(Counts, counts),
            options=cast(RecordedOptions, record),
            metrics=[s.name for s in specs],
            sums=sums,
            strata=None if groups is None else groups.table,
            strata_sums=None if groups is None else groups.sums,
        )
        if isinstance(result, StreamedResult):
            result.per_user_spill, self.spill = self.spill, None
        complete_strata(result, [])  # the groups' accounting, as the local plan's
        ratings = None if ranges is None else np.array(ranges)
        with checks.silence(silence):
            check_inputs(
                counts,
                options,
                ratings=ratings,
                column=wt.value,
                threshold_given="relevance_threshold" in explicit,
                item_overlap=lambda: item_overlap(self),
            )
        return result


def item_overlap(run: _Run) -> float:
    """The share of distinct predicted items found anywhere in the truth (one more pass over
    the item columns: only when the no-match warning asks for it)."""
    found = {}
    for side, src in run.sources.items():
        seen: pa.Array | None = None
        for chunk in src.chunks():
            items = pc.unique(run.align(side, chunk).column("item").combine_chunks())
            seen = items if seen is None else pc.unique(pa.concat_arrays([seen, items]))
        found[side] = seen
    predicted, truth = found["predictions"], found["truth"]
    if predicted is None or not len(predicted):
        return 1.0
    return float(np.asarray(pc.is_in(predicted, truth).to_numpy(zero_copy_only=False)).mean())


def _rows_hint(sources: Mapping[str, ChunkedSource]) -> int:
    """Both sides' rows: the footers' counts, or an estimate from a text file's size and
    its first lines."""
    total = 0
    for src in sources.values():
        rows = src.rows
        if rows is None:
            rows = text_rows(src.path)
        total += rows
    return total


def _partitions(sources: Mapping[str, ChunkedSource], budget: int) -> int:
    """Partitions such that each holds at most :func:`partition_rows` rows (a third more
    partitions than the mean needs: hash partitions are not all of one size)."""
    return max(1, math.ceil(_rows_hint(sources) * 4 / 3 / partition_rows(budget)))
