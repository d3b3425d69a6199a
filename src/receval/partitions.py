"""One partition of users through the local plan, and the partitions merged exactly.

A Spark task (:mod:`receval.spark`) and a streamed batch (:mod:`receval.streaming`) each
hold every row of some users and no row of the others. Each runs the local plan on its users
(:func:`receval.evaluation.evaluate_partition`, handed in as a :data:`PartitionFn`) through a
:class:`LocalPlan`, which also evaluates a partition holding rows of one side only (dummy
users on the other side, their counts taken out by difference), and describes the result as
a JSON-ready meta (:func:`describe`: counts, exact sums, strata). The partitions hold
disjoint users, so every count adds up and the sums merge exactly: :func:`merge` and
:func:`merge_strata` give what :func:`receval.finalize.finish` finishes once, as the
in-memory path finishes its one run.

:class:`PartitionMode` is what tells the local plan that it runs on one partition: passed
explicitly down the plan (``evaluate_partition`` -> ``evaluate`` -> ``evaluate_prepared``),
never through global state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from receval.accumulate import Accumulator
from receval.exceptions import ReceValError, UndefinedMetricError
from receval.options import Options
from receval.profiles import get as get_profile
from receval.result import Counts, Result
from receval.scalars import plain
from receval.strata import NONE, Strata, no_match_error, summarise


@dataclass(frozen=True)
class PartitionMode:
    """The local plan runs on one partition of the users: a partition may select no user
    (the driver raises when none does), its finish is partial (the driver finishes the
    merged sums), its catalogue metrics count exposures for the driver, and a group mapping
    may name none of its users. ``popularity`` (the whole training data's:
    :class:`receval.beyond.frames.Popularity`) and ``catalogue`` (the catalogue's item ids)
    are what its rows cannot tell (its ``train=`` holds its users' rows only), each ``None``
    when not sent.

    Example:
        >>> PartitionMode().popularity is None
        True
    """

    popularity: Any = None
    catalogue: Any = None


#: the local plan of one partition: ``(truth, predictions, metrics, kwargs, mode) -> Result``
#: (:func:`receval.evaluation.evaluate_partition`)
PartitionFn = Callable[[Any, Any, list[str], dict[str, Any], PartitionMode], Result]

#: a partition that holds rows of one side only is evaluated with a dummy user on the other
#: side; ``users`` is swapped for one that selects the same real users and not the dummy
_SWAP_USERS = {
    "predictions": {
        "truth": "truth",
        "relevant": "relevant",
        "both": "both",
        "predictions": "both",
        "union": "truth",
    },
    "truth": {
        "truth": "both",
        "relevant": "both",
        "both": "both",
        "predictions": "predictions",
        "union": "predictions",
    },
}


@dataclass
class LocalPlan:
    """The local plan of a partition's users: ``fn`` with ``metrics``, ``kwargs`` and
    ``mode``; ``names`` the truth's user, item and value columns, then the predictions'
    (a value ``None`` where the side has none); ``row_firsts`` the metrics whose first
    undefined user is a row of the per-user values (:func:`with_first_ids`).

    Example:
        >>> from receval.evaluation import evaluate_partition
        >>> names = ("user", "item", None, "user", "item", "score")
        >>> plan = LocalPlan(names, evaluate_partition, ["P@1"], {})
        >>> truth = pa.table({"user": [1, 2], "item": [5, 6]})
        >>> preds = pa.table({"user": [1, 2], "item": [5, 7], "score": [0.5, 0.4]})
        >>> plan.evaluate(truth, preds).summary
        {'P@1': 0.5}
        >>> plan.evaluate(truth, preds.slice(0, 0)).counts["users"]["evaluated"]
        2
    """

    names: tuple[str | None, ...]
    fn: PartitionFn
    metrics: list[str]
    kwargs: dict[str, Any]
    row_firsts: frozenset[str] = frozenset()
    mode: PartitionMode = field(default_factory=PartitionMode)

    def evaluate(self, truth: pa.Table, preds: pa.Table, history: pa.Table | None = None) -> Result:
        """The local plan on this partition; with one side empty, twice with dummy users on
        that side (one, then two), the dummies' counts taken out by difference. ``history``:
        the partition's training rows (``u``, ``i``; given as ``train=``; one row of a user no
        side has when there are none: the plan reads no empty training data)."""
        base = self.kwargs
        if history is not None:
            if not history.num_rows:
                other = truth if truth.num_rows else preds
                history = pa.table(
                    {
                        "u": _fresh_ids(other.column(0), 1).cast(history.schema.field("u").type),
                        "i": other.column(1).slice(0, 1),
                    }
                )
            base = {**base, "train": history, "train_columns": {"user": "u", "item": "i"}}
        if truth.num_rows and preds.num_rows:
            return self.fn(truth, preds, self.metrics, base, self.mode)
        empty_side = "predictions" if truth.num_rows else "truth"
        kwargs = _swap_users(base, empty_side)
        runs = []
        for n in (1, 2):
            if empty_side == "truth":
                t, p = _pad(truth, preds, n, self.names[2]), preds
            else:
                t, p = truth, _pad(preds, truth, n, self.names[5])
            runs.append(self.fn(t, p, self.metrics, kwargs, self.mode))
        one, two = runs
        one.counts = _affine(one.counts, two.counts)
        return one


def describe(result: Result, row_firsts: frozenset[str]) -> dict[str, Any]:
    """A partition's result as its meta for the merge: its counts (the catalogue metrics'
    ``exposure`` counts taken out of them), exact sums (first undefined users as ids:
    :func:`with_first_ids`), rND/rKL/rRD's protected group as it chose it, and each stratum's
    users and exact sums with the partition's first user.

    Example:
        >>> from receval.evaluation import evaluate_partition
        >>> r = evaluate_partition({"user": [1], "item": [2]},
        ...                        {"user": [1], "item": [2], "score": [1.0]}, ["P@1"], {})
        >>> meta = describe(r, frozenset({"P@1"}))
        >>> meta["counts"]["users"]["evaluated"], meta["exposure"], meta["protected_group"]
        (1, None, None)
    """
    meta: dict[str, Any] = {
        "exposure": result.counts.pop("exposure", None),
        "counts": result.counts,
        "protected_group": (result.options.get("beyond") or {}).get("protected_group"),
        "sums": with_first_ids(result, row_firsts).to_dict(),
    }
    if result.strata is not None:  # each group's users and exact sums (ids: users)
        meta["strata"] = {
            label: [n, acc.to_dict()]
            for label, (n, acc) in zip(
                result.strata["group"],
                zip(result.strata["users"], (result.strata_sums or {}).values(), strict=True),
                strict=True,
            )
        }
        if len(result.per_user):
            meta["first_user"] = result.per_user["user"].iloc[0]
    return meta


def finite_range(truth: pa.Table, name: str | None) -> list[float] | None:
    """The smallest and largest finite rating of a partition (the relevance-threshold
    warning's input; :func:`rating_range` merges them).

    Example:
        >>> finite_range(pa.table({"r": [3.0, float("nan"), 1.5]}), "r")
        [1.5, 3.0]
        >>> finite_range(pa.table({"r": ["a"]}), "r") is None
        True
    """
    if name is None or truth.num_rows == 0:
        return None
    try:
        values = truth.column(name).cast(pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    finite = values[np.isfinite(values)]
    return [float(finite.min()), float(finite.max())] if len(finite) else None


def rating_range(metas: Sequence[Mapping[str, Any]]) -> list[float] | None:
    """The smallest and largest finite rating over every partition's ``rating_range``.

    Example:
        >>> rating_range([{"rating_range": [1.0, 3.0]}, {"rating_range": None},
        ...               {"rating_range": [0.5, 2.0]}])
        [0.5, 3.0]
    """
    found = [m["rating_range"] for m in metas if m.get("rating_range")]
    if not found:
        return None
    return [min(r[0] for r in found), max(r[1] for r in found)]


def with_first_ids(result: Result, rows: frozenset[str]) -> Accumulator:
    """The partition's sums with each first undefined user as its id (rows are
    partition-local; the merge keeps the smallest id).

    Example:
        >>> from receval.evaluation import evaluate_partition
        >>> r = evaluate_partition({"user": ["b", "c"], "item": [1, 1]},
        ...     {"user": ["b", "c"], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1"], {})
        >>> with_first_ids(r, frozenset({"P@1"})).metrics[0].name
        'P@1'
    """
    acc: Accumulator = result.sums
    single = "users_per_metric" not in result.counts
    users = result.per_user["user"].to_numpy() if single else None
    metrics = []
    for ms in acc.metrics:
        first = ms.first_undefined
        if first is not None and ms.name in rows:
            first = plain(users[int(first)]) if users is not None else None
        metrics.append(dataclasses.replace(ms, first_undefined=first))
    return Accumulator(tuple(metrics))


def merge(metas: list[dict[str, Any]]) -> tuple[Counts, Accumulator]:
    """The counts and exact sums of every partition, merged (the partitions hold disjoint
    users: every count is additive); the first error of the lowest-numbered partition raised
    as it was raised there. :func:`receval.finalize.finish` finishes them.

    Example:
        >>> merge([{"partition": 0, "error": ["ReceValError", "bad input"]}])
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: bad input
        >>> merge([])
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: truth is empty (no rows)
    """
    metas.sort(key=lambda m: m["partition"])
    for meta in metas:
        if meta.get("error"):
            kind, message = meta["error"]
            raise (UndefinedMetricError if kind == "UndefinedMetricError" else ReceValError)(
                message
            )
    if not metas:
        raise ReceValError("truth is empty (no rows)")
    counts: dict[str, Any] = {}
    sums: Accumulator | None = None
    for meta in metas:
        meta["counts"].pop("summary_null", None)  # not additive: the finish writes it
        counts = _add(counts, meta["counts"]) if counts else meta["counts"]
        acc = Accumulator.from_dict(meta["sums"])
        sums = acc if sums is None else sums.merge(acc)
    assert sums is not None
    for side in ("truth", "predictions"):
        if counts["rows"][side] == 0:
            raise ReceValError(f"{side} is empty (no rows)")
    counts["ties_at_cutoff"] = {int(k): v for k, v in counts["ties_at_cutoff"].items()}
    firsts: dict[str, list[Any]] = {}
    for meta in metas:
        for m in meta["sums"]["metrics"]:
            if m["first_undefined"] is not None:
                firsts.setdefault(m["name"], []).append(m["first_undefined"])
    sums = Accumulator(
        tuple(
            dataclasses.replace(ms, first_undefined=min(firsts[ms.name]))
            if ms.name in firsts
            else ms
            for ms in sums.metrics
        )
    )
    return cast(Counts, counts), sums


def merge_strata(
    metas: list[dict[str, Any]], specs: list[Any], per_spec: list[Options], mapping: pd.Series
) -> Strata:
    """The strata from every partition's groups: users added, sums merged exactly (the
    first undefined user: the smallest id), finished as the local plan finishes them.

    Example:
        >>> empty = Accumulator(()).to_dict()
        >>> merge_strata([{"partition": 0, "strata": {"(none)": [1, empty]}, "first_user": "a"}],
        ...              [], [], pd.Series({"z": "g"}))
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: strata: no evaluated user is in the mapping (e.g. user 'a'; the mapping's users look like 'z'): do the id types match?
    """  # noqa: E501
    groups: dict[str, tuple[int, Accumulator]] = {}
    firsts: dict[tuple[str, str], list[Any]] = {}
    for meta in sorted(metas, key=lambda m: m["partition"]):
        for label, (n, data) in meta.get("strata", {}).items():
            acc = Accumulator.from_dict(data)
            for m in acc.metrics:
                if m.first_undefined is not None:
                    firsts.setdefault((label, m.name), []).append(m.first_undefined)
            if label in groups:
                acc = groups[label][1].merge(acc)
                n += groups[label][0]
            groups[label] = (n, acc)
    if set(groups) == {NONE}:  # as the local plan, naming the first evaluated user
        first = min(m["first_user"] for m in metas if "first_user" in m)
        raise no_match_error(first, pd.Index(mapping.index))
    groups = {
        label: (
            n,
            Accumulator(
                tuple(
                    dataclasses.replace(m, first_undefined=min(firsts[(label, m.name)]))
                    if (label, m.name) in firsts
                    else m
                    for m in acc.metrics
                )
            ),
        )
        for label, (n, acc) in groups.items()
    }
    return summarise(groups, specs, per_spec)


def _swap_users(kwargs: dict[str, Any], empty_side: str) -> dict[str, Any]:
    """``kwargs`` with every ``users`` option swapped (:data:`_SWAP_USERS`)."""
    swap = _SWAP_USERS[empty_side]
    out = dict(kwargs)
    prof = out.get("profile")
    if "users" in out:
        out["users"] = swap[out["users"]]
    elif prof is None:
        out["users"] = swap["truth"]
    if prof is not None:
        p = get_profile(prof)

        def mapped(opts: Mapping[str, Any]) -> dict[str, Any]:
            return {**opts, "users": swap[opts["users"]]} if "users" in opts else dict(opts)

        out["profile"] = dataclasses.replace(
            p,
            options={**p.options, "users": swap[p.options.get("users", "truth")]},
            per_family={f: mapped(o) for f, o in p.per_family.items()},
            pinned={f: mapped(o) for f, o in p.pinned.items()},
        )
    return out


def _pad(empty: pa.Table, other: pa.Table, n: int, value_name: str | None) -> pa.Table:
    """``n`` rows of fresh users (ids no row uses) for the ``empty`` side, on ``other``'s first
    item, value 1."""
    names = empty.column_names
    ids = _fresh_ids(other.column(0), n).cast(empty.schema.field(0).type)
    cols: dict[str, Any] = {
        names[0]: ids,
        names[1]: pa.concat_arrays([other.column(1).combine_chunks().slice(0, 1)] * n),
    }
    if value_name is not None:
        cols[value_name] = pa.array([1.0] * n).cast(empty.schema.field(value_name).type)
    return pa.table(cols, schema=empty.schema)


def _fresh_ids(users: pa.ChunkedArray, n: int) -> pa.Array:
    kind = users.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        top = pc.max(users).as_py()
        return pa.array([f"{top}\x00{j}" for j in range(1, n + 1)])
    low, high = pc.min(users).as_py(), pc.max(users).as_py()
    if pa.types.is_integer(kind):
        info = np.iinfo(kind.to_pandas_dtype())
        if high + n <= info.max:
            return pa.array([high + j for j in range(1, n + 1)])
        return pa.array([low - j for j in range(1, n + 1)])
    if pa.types.is_floating(kind):
        return pa.array([float(np.nextafter(high, np.inf)) + j for j in range(n)])
    raise ReceValError(f"user ids of type {kind} are not supported by engine='spark'")


def _affine(one: Any, two: Any) -> Any:
    """``2 * one - two`` over the numbers of nested count dicts (one dummy user taken out)."""
    if isinstance(one, dict):
        return {k: _affine(v, two.get(k, 0)) for k, v in one.items()}
    if isinstance(one, int) and not isinstance(one, bool):
        return 2 * one - two
    return one


def _add(total: Any, part: Any) -> Any:
    if isinstance(total, dict):
        keys = list(total) + [k for k in part if k not in total]
        return {k: _add(total.get(k, 0), part.get(k, 0)) for k in keys}
    if isinstance(total, int) and not isinstance(total, bool):
        return total + part
    return total
