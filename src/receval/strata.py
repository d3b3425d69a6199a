"""Strata: the same evaluation per group of users (a user -> group mapping), reconciled exactly.

``strata=`` on :func:`receval.evaluate` and :func:`receval.compare` takes a mapping from user to
group: a dict, a pandas Series (index = user), or a DataFrame with a ``user`` column and a
group column (a column named ``group``, or the only other column). Every evaluated user falls
in exactly one group; users the mapping does not name fall in the group :data:`NONE` (counted
like any other), users it names that are not evaluated are ignored.

Per group, the exact mergeable sums (:class:`receval.accumulate.Accumulator`) are computed from
the engine's per-user outputs before the ``empty`` policy fills them, exactly as the whole's are,
so the groups reconcile with the whole bit for bit: merging every group's sums gives the
whole's sums (micro averages and pooled RMSE/MAE included), and each group's summary is what an
evaluation of that group's users alone would give. :attr:`receval.result.Result.strata` is a
DataFrame, one row per group (sorted; :data:`NONE` last): ``group``, ``users`` and one column
per metric; :attr:`~receval.result.Result.strata_sums` maps each group to its Accumulator
(:class:`Strata` holds both while the plan builds them).

The per-user beyond-accuracy and fairness metrics asked for (``reduction == "user"`` in
:data:`receval.beyond.names.ENTRIES`: novelty, diversity, AWRF, rND, calibration, ...) are
columns of the table too, with the whole's accounting (:func:`add_user_metrics`,
:func:`complete`): each group's exact sums of its users' values under the beyond ``empty``
policy, finished by the whole's rule (:func:`receval.beyond.attach.beyond_summary`: rND, rKL,
rRD and calibration leave their undefined users out under ``empty="zero"``). The
catalogue-level metrics (coverage, gini, personalization, group_exposure, PopREO, PopRSP,
distributional coverage; novelty pooled over slots) are one number over every list: they
have no column, and ``Result.counts["strata"]["not_per_group"]`` names them with the reason
(the per-group tables print it under the table). ``Result.counts["strata"]["undefined"]``
counts each group's undefined users per metric (group -> metric -> users); every one of them
is an undefined user of the whole, counted and warned there.

The training-data helpers resolve names such as ``strata="activity"`` into such a frame first;
:func:`as_mapping` is the one entry point that normalises what is passed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from receval.accumulate import Accumulator
from receval.aggregate import accumulate
from receval.exceptions import ReceValError, UndefinedMetricError
from receval.measures.spec import MetricSpec
from receval.options import Options
from receval.scalars import plain

if TYPE_CHECKING:
    from receval.beyond.names import BeyondSpec

#: the group of users the mapping does not name
NONE = "(none)"
#: why a catalogue-level metric has no per-group column (``Result.counts["strata"]``)
NOT_PER_GROUP = "not per group: one number over every list (catalogue-level)"
#: why novelty pooled over list slots has none
NOT_PER_GROUP_SLOTS = "not per group: pooled over every list's slots (novelty_average='slots')"


@dataclass(frozen=True)
class Strata:
    """The groups of users of one evaluation: ``table`` (``group``, ``users`` and one column
    per metric: :attr:`Result.strata <receval.result.Result>`) and ``sums``, each group's
    exact sums (:attr:`Result.strata_sums <receval.result.Result>`).

    Example:
        >>> s = Strata(pd.DataFrame({"group": ["a"], "users": [1]}), {})
        >>> s.table["group"].tolist(), s.sums
        (['a'], {})
    """

    table: pd.DataFrame
    sums: dict[str, Accumulator]


def as_mapping(strata: Any, *, user_col: str = "user") -> pd.Series:
    """The user -> group mapping as a Series (index: user, values: group label, as strings).

    Example:
        >>> import pandas as pd
        >>> as_mapping({1: "a", 2: "b"}).to_dict()
        {1: 'a', 2: 'b'}
        >>> as_mapping(pd.DataFrame({"user": [1, 2], "activity": ["low", "high"]})).to_dict()
        {1: 'low', 2: 'high'}
    """
    if isinstance(strata, pd.Series):
        series = strata
    elif isinstance(strata, Mapping):
        series = pd.Series(dict(strata), dtype=object)
    elif isinstance(strata, pd.DataFrame):
        if user_col not in strata.columns:
            raise ReceValError(f"strata: the frame has no {user_col!r} column (columns: "
                               f"{', '.join(map(str, strata.columns))})")
        others = [c for c in strata.columns if c != user_col]
        column = "group" if "group" in others else others[0] if len(others) == 1 else None
        if column is None:
            raise ReceValError("strata: the frame needs a 'group' column or exactly one column "
                               f"besides {user_col!r} (it has {', '.join(map(str, others))})")
        series = pd.Series(strata[column].to_numpy(), index=strata[user_col].to_numpy())
    else:
        raise ReceValError("strata must be a dict, a pandas Series or a DataFrame with a user "
                           f"column and a group column; got {type(strata).__name__}")
    missing = series.isna().to_numpy()
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise ReceValError(f"strata: the group is missing for user {plain(series.index[first])!r}"
                           f" (row {first}; {int(missing.sum())} rows without a group)")
    repeated = series.index.duplicated(keep="first")
    if repeated.any():
        first = int(np.flatnonzero(repeated)[0])
        raise ReceValError(f"strata: user {plain(series.index[first])!r} is mapped more than "
                           f"once (row {first}; {int(repeated.sum())} repeated rows)")
    return series.astype(str)


def assign(users: Sequence[Any] | np.ndarray, mapping: pd.Series, *,
           require_match: bool = True) -> tuple[np.ndarray, list[str]]:
    """Each user's group as a code into the sorted labels (:data:`NONE` last, when used).

    Raises when no user is in the mapping (the ids do not match: ``"7"`` is not ``7``),
    unless not ``require_match`` (a Spark partition: the driver checks every partition's).

    Example:
        >>> codes, labels = assign([1, 2, 3], as_mapping({1: "b", 2: "a"}))
        >>> codes.tolist(), labels
        ([1, 0, 2], ['a', 'b', '(none)'])
    """
    index = pd.Index(mapping.index)
    position = index.get_indexer(pd.Index(list(users) if not isinstance(users, np.ndarray)
                                          else users))
    if require_match and len(position) and (position < 0).all():
        raise no_match_error(users[0], index)
    labels = mapping.to_numpy(dtype=object)
    named = sorted({str(v) for v in labels[position[position >= 0]]})
    if NONE in named:
        raise ReceValError(f"strata: {NONE!r} is reserved for users the mapping does not name")
    order = {label: i for i, label in enumerate(named)}
    codes = np.full(len(position), len(named), dtype=np.int64)
    hit = position >= 0
    codes[hit] = [order[str(v)] for v in labels[position[hit]]]
    return codes, named + ([NONE] if (~hit).any() else [])


def no_match_error(user: Any, index: pd.Index) -> ReceValError:
    """No evaluated user (``user``: the first) is in the mapping (its users: ``index``)."""
    return ReceValError(
        f"strata: no evaluated user is in the mapping (e.g. user {plain(user)!r}; "
        f"the mapping's users look like {plain(index[0]) if len(index) else None!r}): "
        "do the id types match?")


def stratify(specs: list[MetricSpec], out: Any, options: Options, users: np.ndarray,
             mapping: pd.Series, *, require_match: bool = True) -> Strata:
    """Per group: the users, each metric's summary and the exact sums, from the engine's
    outputs ``out`` of ``users`` before the ``empty`` policy is applied.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2, 3], "item": [1, 1, 1]}
        >>> preds = {"user": [1, 2, 3], "item": [1, 2, 1], "score": [1.0] * 3}
        >>> r = receval.evaluate(truth, preds, ["P@1"], strata={1: "a", 2: "a", 3: "b"})
        >>> r.strata[["group", "users", "P@1"]].values.tolist()
        [['a', 2, 0.5], ['b', 1, 1.0]]
        >>> sorted(r.strata_sums)
        ['a', 'b']
    """
    codes, labels = assign(users, mapping, require_match=require_match)
    groups = {}
    for code, label in enumerate(labels):
        mask = codes == code
        part = out.take(mask)
        groups[label] = (int(mask.sum()), accumulate(specs, part, options, first_row=0,
                                                     ids=np.asarray(users, dtype=object)[mask]))
    return summarise(groups, specs, [options] * len(specs))


def summarise(groups: Mapping[str, tuple[int, Accumulator]], specs: list[MetricSpec],
              per_spec: list[Options]) -> Strata:
    """The strata from each group's users and exact sums (one engine run's, or every Spark
    partition's merged): one row per group (sorted, :data:`NONE` last), each metric finalized
    under its options ``per_spec``, and the sums.

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> acc = Accumulator.from_arrays(["P@1"], np.array([[1.0], [0.0]]))
        >>> summarise({NONE: (2, acc)}, parse_metrics(["P@1"]), [Options()]).table.values.tolist()
        [['(none)', 2, 0.5]]
    """
    labels = sorted(g for g in groups if g != NONE) + ([NONE] if NONE in groups else [])
    rows = []
    for label in labels:
        n, acc = groups[label]
        by_name = {m.name: m for m in acc.metrics}
        row: dict[str, Any] = {"group": label, "users": n}
        # empty="error": no values (the whole raises right after, naming the user)
        with contextlib.suppress(UndefinedMetricError):
            row.update({s.name: by_name[s.name].finalize(o.empty, o.average, o.all_skipped)
                        for s, o in zip(specs, per_spec, strict=True)})
        rows.append(row)
    frame = pd.DataFrame(rows, columns=["group", "users", *[s.name for s in specs]])
    return Strata(frame, {label: groups[label][1] for label in labels})


def merge_metric_parts(parts: Sequence[Strata | None], names: Sequence[str]) -> Strata | None:
    """One strata frame from frames over groups of metrics (a profile's per-metric options):
    the metric columns side by side in ``names`` order, the sums' metrics concatenated.

    Example:
        >>> import pandas as pd
        >>> a = pd.DataFrame({"group": ["x"], "users": [2], "P@1": [0.5]})
        >>> b = pd.DataFrame({"group": ["x"], "users": [2], "R@1": [1.0]})
        >>> merged = merge_metric_parts([Strata(b, {}), Strata(a, {})], ["P@1", "R@1"])
        >>> merged.table.columns.tolist()
        ['group', 'users', 'P@1', 'R@1']
    """
    kept = [p for p in parts if p is not None]
    if not kept:
        return None
    frames = [p.table for p in kept]
    merged = frames[0][["group", "users"]].copy()
    for frame in frames:
        for column in frame.columns[2:]:
            merged[column] = frame[column].to_numpy()
    merged = merged[["group", "users", *[n for n in names if n in merged.columns]]]
    all_sums = [p.sums for p in kept]
    sums = {group: Accumulator(tuple(sorted(
        (m for s in all_sums if s for m in s[group].metrics),
        key=lambda m: list(names).index(m.name))))
        for group in merged["group"]} if any(all_sums) else {}
    return Strata(merged, sums)


def group_rows(users: np.ndarray, mapping: pd.Series) -> dict[str, np.ndarray]:
    """The rows of ``users`` in each group (sorted labels, :data:`NONE` last): for paired
    comparisons per group.

    Example:
        >>> {k: v.tolist() for k, v in group_rows(np.array([5, 6, 7]),
        ...                                        as_mapping({5: "x", 7: "x"})).items()}
        {'x': [0, 2], '(none)': [1]}
    """
    codes, labels = assign(users, mapping)
    return {label: np.flatnonzero(codes == i) for i, label in enumerate(labels)}


def _ordered(labels: Sequence[str]) -> list[str]:
    """Group labels sorted, :data:`NONE` last."""
    return sorted(g for g in labels if g != NONE) + ([NONE] if NONE in labels else [])


def add_user_metrics(strata: Strata, mapping: pd.Series, per_user: pd.DataFrame,
                     specs: Sequence[BeyondSpec], empty: str, *,
                     require_match: bool = True) -> Strata:
    """``strata`` with each group's exact sums of the per-user beyond metrics ``specs`` (their
    columns of ``per_user``, NaN: undefined) under the beyond ``empty`` policy, the whole's
    rule (:func:`receval.beyond.attach.user_sums`); a group without such users gets empty sums.
    The columns come with :func:`finish_user_metrics`.

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> base = Strata(pd.DataFrame({"group": ["a", "b"], "users": [1, 1]}), {})
        >>> per_user = pd.DataFrame({"user": [1, 2], "novelty@2": [1.0, np.nan]})
        >>> s = add_user_metrics(base, as_mapping({1: "a", 2: "b"}), per_user,
        ...                      [parse_beyond("novelty@2")], "nan")
        >>> [(g, a.metrics[0].n_defined, a.metrics[0].n_undefined) for g, a in s.sums.items()]
        [('a', 1, 0), ('b', 0, 1)]
    """
    from receval.beyond.attach import user_sums  # beyond-accuracy metrics only: loaded then

    names = [s.name for s in specs if s.name in per_user.columns]
    if not names:
        return strata
    users = per_user["user"].to_numpy()
    codes, labels = assign(users, mapping, require_match=require_match)
    value = per_user[names].to_numpy(dtype=np.float64)
    ids = np.asarray(users, dtype=object)
    table, sums = strata.table, dict(strata.sums)
    known = set(table["group"])
    added = [{"group": label, "users": int((codes == code).sum())}
             for code, label in enumerate(labels) if label not in known]
    if added:  # users of a group the accuracy part did not evaluate (another selection)
        table = pd.concat([table, pd.DataFrame(added)], ignore_index=True)
        order = _ordered(list(table["group"]))
        table = table.set_index("group").loc[order].reset_index()
    for label in table["group"]:
        mask = codes == (labels.index(label) if label in labels else -1)
        acc = user_sums(specs, names, value[mask], list(ids[mask]), empty)
        old = sums.get(label)
        sums[label] = acc if old is None else Accumulator(tuple(old.metrics) + acc.metrics)
    return Strata(table, {label: sums[label] for label in table["group"]})


def finish_user_metrics(strata: Strata, specs: Sequence[BeyondSpec], empty: str) -> Strata:
    """``strata`` with a column per per-user beyond metric of ``specs`` whose sums it holds:
    each group's summary by the whole's rule
    (:func:`receval.beyond.attach.beyond_summary`); the local plan's and the Spark driver's.

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> acc = Accumulator.from_arrays(["rND@2"], np.array([[0.5], [np.nan]]))
        >>> s = Strata(pd.DataFrame({"group": ["a"], "users": [2]}), {"a": acc})
        >>> finish_user_metrics(s, [parse_beyond("rND@2")], "zero").table.values.tolist()
        [['a', 2, 0.5]]
    """
    from receval.beyond.attach import beyond_summary

    held = {m.name for acc in strata.sums.values() for m in acc.metrics}
    names = [s.name for s in specs if s.name in held]
    table = strata.table.copy()
    if not names:
        return strata
    rows = []
    for label in table["group"]:
        acc = strata.sums.get(label)
        kept = Accumulator(tuple(m for m in acc.metrics if m.name in names)) if acc else None
        values: dict[str, float] = {}
        if kept is not None and kept.metrics:
            # empty="error": no values (the whole raises, naming the user)
            with contextlib.suppress(UndefinedMetricError):
                values = beyond_summary(kept, specs, empty)
        rows.append([values.get(n, np.nan) for n in names])
    for j, name in enumerate(names):
        table[name] = [row[j] for row in rows]
    return Strata(table, strata.sums)


def complete(result: Any, specs: Sequence[BeyondSpec]) -> None:
    """Finish ``result``'s groups of users (in place): a column per per-user beyond metric of
    ``specs`` from the groups' sums (:func:`finish_user_metrics`, under the beyond ``empty``
    recorded in ``Result.options["beyond"]``), the columns in the metrics' order, and
    ``Result.counts["strata"]``: ``undefined`` (group -> metric -> users whose value is
    undefined) and ``not_per_group`` (metric -> why it has no column). The local plan and the
    Spark driver call it once.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> preds = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> r = receval.evaluate(truth, preds, ["P@1", "R@1"], strata={1: "a", 2: "b"})
        >>> r.counts["strata"]
        {'undefined': {'a': {'P@1': 0, 'R@1': 0}, 'b': {'P@1': 0, 'R@1': 0}}, 'not_per_group': {}}
    """
    if result.strata is None:
        return
    settings = (result.options or {}).get("beyond") or {}
    empty = settings.get("empty") or (result.options or {}).get("empty", "zero")
    slots = settings.get("novelty_average") == "slots"
    per_user = [s for s in specs if s.entry.reduction == "user"
                and not (slots and s.metric == "novelty")]
    not_per_group = {s.name: NOT_PER_GROUP_SLOTS if s.entry.reduction == "user"
                     else NOT_PER_GROUP for s in specs if s not in per_user}
    sums = result.strata_sums or {}
    strata = finish_user_metrics(Strata(result.strata, sums), per_user, empty)
    order = list(result.metrics or [])
    names = [m for m in order if m in strata.table.columns]
    names += [c for c in strata.table.columns[2:] if c not in names]
    result.strata = strata.table[["group", "users", *names]]
    rank = {n: i for i, n in enumerate(names)}
    result.strata_sums = {label: Accumulator(tuple(sorted(
        acc.metrics, key=lambda m: rank.get(m.name, len(rank))))) for label, acc in sums.items()}
    result.counts["strata"] = {
        "undefined": {label: {m.name: m.n_undefined for m in acc.metrics}
                      for label, acc in result.strata_sums.items()},
        "not_per_group": not_per_group}


def with_user_metrics(result: Any, mapping: pd.Series, specs: Sequence[BeyondSpec],
                      raw: Mapping[str, Any], *, partition: bool = False) -> None:
    """Add the per-user beyond metrics of ``specs`` to ``result``'s groups of users, in place
    (:func:`add_user_metrics`), from ``raw``: their ``names``, ``value`` matrix before the
    ``empty`` policy filled it and ``users`` (:func:`receval.beyond.attach.attach`'s
    ``raw=``); then finish them (:func:`complete`); in a Spark ``partition`` the sums only
    (the driver finishes once).

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> preds = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> r = receval.evaluate(truth, preds, ["P@1", "novelty@1"], strata={1: "a", 2: "b"},
        ...                      train={"user": [3, 3], "item": [1, 2]})
        >>> r.strata.columns.tolist()
        ['group', 'users', 'P@1', 'novelty@1']
    """
    if result.strata is None:
        return
    per_user = [s for s in specs if s.entry.reduction == "user"]
    if per_user and raw.get("names"):
        values = pd.DataFrame(raw["value"], columns=list(raw["names"]))
        values.insert(0, "user", raw["users"])
        settings = (result.options or {}).get("beyond") or {}
        empty = settings.get("empty") or (result.options or {}).get("empty", "zero")
        strata = add_user_metrics(Strata(result.strata, result.strata_sums or {}), mapping,
                                  values, per_user, empty,
                                  require_match=not partition)
        result.strata, result.strata_sums = strata.table, strata.sums
    if not partition:
        complete(result, specs)
