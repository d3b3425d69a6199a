"""Adding the beyond-accuracy metrics to an evaluation's :class:`~receval.result.Result`
(what :func:`receval.evaluate` calls with the engine's top-k lists).

Per-user metrics get a ``per_user`` column, a summary reduced by the exact
:class:`~receval.accumulate.Accumulator` under the ``empty`` policy, and their sums in
``Result.sums``; catalogue metrics appear in the summary only (one number over the union of
the lists, nothing to average or merge). ``Result.options["beyond"]`` records every switch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from receval import checks
from receval.accumulate import Accumulator
from receval.beyond._lists import cut
from receval.beyond.compute import compute
from receval.beyond.fair_compute import protected_name, undefined_reasons
from receval.beyond.frames import build, features_needed
from receval.beyond.names import BeyondSpec
from receval.beyond.settings import BeyondOptions, resolve
from receval.beyond.tied_exposure import needs_scores, tied_columns
from receval.checks import ProtectedGroupWarning
from receval.exceptions import ReceValError, UndefinedMetricWarning
from receval.options import Options
from receval.result import Result, null_reasons


def reads_protected_group(spec: BeyondSpec) -> bool:
    """Whether ``spec`` reads the protected group (its entry declares the switch).

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> [reads_protected_group(parse_beyond(m)) for m in ("rKL@5", "AWRF@5")]
        [True, False]
    """
    return "protected_group" in spec.entry.options


#: what is read from the training data (:data:`receval.beyond.names.READS`): ``train=``
TRAIN_READS = frozenset({"history", "popularity", "pairs", "pooled_history"})


def check_inputs(specs: Sequence[BeyondSpec], options: BeyondOptions, *, has_train: bool,
                 has_features: bool, has_groups: bool | None = None) -> None:
    """A one-line error naming the option when a requested metric lacks its input: what its
    entry declares it reads under ``options``
    (:meth:`~receval.beyond.names.BeyondEntry.reading`).

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> check_inputs([parse_beyond("novelty@10")], BeyondOptions(), has_train=False,
        ...              has_features=False)
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: metric 'novelty@10' needs the training data: pass train= (a frame of user, item rows)
    """  # noqa: E501
    for spec in specs:
        reads = spec.entry.reading(options)  # what it reads under these switches, declared
        if reads & TRAIN_READS and not has_train:
            raise ReceValError(f"metric {spec.name!r} needs the training data: pass train= "
                               f"(a frame of user, item rows)")
        if "groups" in reads and not (has_features if has_groups is None else has_groups):
            raise ReceValError(f"metric {spec.name!r} needs item groups: pass item_groups= "
                               f"(item -> group) or item_features= (categories)")
        if "features" in reads and not has_features:
            raise ReceValError(f"metric {spec.name!r} needs item features: pass "
                               f"item_features= (item -> categories or vector), or "
                               f"beyond={{'similarity': 'cooccurrence'}} with train=")
    if options.catalogue == "train" and not has_train and any(
            s.entry.reduction == "catalogue" and "catalogue" in s.entry.reading(options)
            for s in specs):
        raise ReceValError("beyond catalogue='train' needs the training data: pass train=")
    if options.catalogue == "features" and not has_features:
        raise ReceValError("beyond catalogue='features' needs item_features=")


def attach(
    result: Result,
    specs: Sequence[BeyondSpec],
    requested: Sequence[str],
    *,
    top: np.ndarray | None,
    n_list: np.ndarray,
    user_ids: np.ndarray,
    decode: Any,
    truth: tuple[np.ndarray, np.ndarray],
    train: tuple[Any, Any] | None,
    item_features: Any,
    options: Options,
    beyond: BeyondOptions | Mapping[str, Any] | None,
    profile: str | None,
    truth_items: np.ndarray | None = None,
    features_columns: Mapping[str, str] | None = None,
    item_groups: Any = None,
    scored: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    popularity: Any = None,
    catalogue: Any = None,
    raw: dict[str, Any] | None = None,
) -> Result:
    """Compute ``specs`` from the engine's lists and add them to ``result`` (in place, also
    returned), the summary and metrics in the ``requested`` order. ``truth`` holds each
    list's relevant items; ``truth_items`` every truth item (the catalogue's, whatever the
    relevance threshold). ``scored``: each list's scored items and scores in engine codes
    (the expected exposure of ``ee_ties="permute"``). The per-group tables of
    ``group_exposure`` go to
    ``result.counts["group_exposure"]`` (name -> group, exposure, target). ``popularity``:
    the whole training data's counts when ``train`` is part of it (a Spark partition:
    :class:`receval.beyond.frames.Popularity`), ``catalogue`` the catalogue's item ids when
    the lists and ``train`` cannot tell it. ``raw`` (a dict) receives the per-user metrics'
    ``names``, their ``value`` matrix before the ``empty`` policy fills it and the ``users``
    (for the groups of users: :mod:`receval.strata`).
    """
    opts = resolve(profile, beyond)
    if top is None:  # pragma: no cover - the engine was asked for the lists
        raise ReceValError("the engine returned no top-k lists")
    top_mine, ctx = build(top, n_list, decode, user_ids, truth, train, item_features, opts,
                          truth_items=truth_items, features_columns=features_columns,
                          item_groups=item_groups,
                          groups_needed=any("groups" in s.entry.needs for s in specs),
                          features_needed=features_needed(specs, opts),
                          popularity=popularity, catalogue=catalogue)
    tables: dict[str, Any] = {}
    tied = [s for s in specs if needs_scores([s], opts.ee_ties)]
    per_user, summary = compute([s for s in specs if s not in tied], top_mine, ctx, opts,
                                tables=tables)
    if tied:  # each item's exposure over every order of its tied scores, in engine codes
        per_user.update(tied_columns(tied, scored, truth, opts))
    if tables:
        result.counts = {**result.counts, "group_exposure": tables}
    empty = options.empty if opts.empty == "inherit" else opts.empty
    names = [s.name for s in specs if s.name in per_user]
    new_summary = dict(result.summary)
    _record_protected_group(result, specs, ctx, opts)
    if names:
        by_name = {s.name: s for s in specs}
        reasons = {n: undefined_reasons(by_name[n], cut(top_mine, by_name[n].k, ctx.n_items),
                                        ctx, opts, np.isnan(per_user[n]))
                   for n in names}
        value = np.column_stack([per_user[n] for n in names])
        if raw is not None:  # before the empty policy fills the values in place
            raw.update(names=names, value=value.copy(), users=user_ids)
        acc = user_sums(specs, names, value, list(user_ids), empty)
        beyond_values = beyond_summary(acc, specs, empty)
        new_summary.update(beyond_values)
        _count_undefined(result, acc, specs, reasons, empty)
        report_undefined(result, specs, beyond_values, empty)
        if result.sums is not None:
            result.sums = Accumulator(tuple(result.sums.metrics) + tuple(acc.metrics))
        frame = pd.DataFrame(value, columns=names)
        frame.insert(0, "user", user_ids)
        per = result.per_user
        if len(per) == len(frame) and (per["user"].to_numpy() == frame["user"].to_numpy()
                                       ).all():
            for n in names:
                per[n] = frame[n].to_numpy()
        else:
            result.per_user = per.merge(frame, on="user", how="left")
    new_summary.update(summary)
    missing = [n for n in requested if n not in new_summary]
    if missing:  # pragma: no cover - every requested name is computed above
        raise ReceValError(f"metric {missing[0]!r} was not computed")
    result.summary = {n: (float(new_summary[n]) if new_summary[n] is not None else math.nan)
                      for n in requested}
    result.metrics = list(requested)
    result.per_user = result.per_user[["user", *[n for n in requested
                                                  if n in result.per_user.columns]]]
    return result  # Result.options["beyond"] was written with the plan: recorded()


def user_sums(specs: Sequence[BeyondSpec], names: Sequence[str], value: np.ndarray,
              ids: Sequence[Any], empty: str) -> Accumulator:
    """The exact sums of the per-user beyond metrics ``names`` (columns of ``value``, NaN:
    undefined; rows: the users ``ids``) under the ``empty`` policy: the whole's and each
    group's of users (:mod:`receval.strata`).

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> acc = user_sums([parse_beyond("rND@2")], ["rND@2"], np.array([[0.5], [np.nan]]),
        ...                 ["a", "b"], "zero")
        >>> acc.metrics[0].n_defined, acc.metrics[0].n_undefined
        (1, 1)
    """
    by_name = {s.name: s for s in specs}
    return Accumulator.from_arrays(list(names), value, ids=list(ids),
                                   fill={"zero": 0.0, "one": 1.0}.get(empty),
                                   fillable=[not _left_out(by_name[n], empty) for n in names])


def _left_out(spec: BeyondSpec, empty: str) -> bool:
    """Whether ``spec``'s undefined users are left out of its mean: a metric whose 0 reads
    as the best value (:attr:`~receval.beyond.names.BeyondEntry.zero_is_best`) under
    ``empty="zero"`` (a perfect 0 would hide them)."""
    return empty == "zero" and spec.entry.zero_is_best


def beyond_summary(sums: Accumulator, specs: Sequence[BeyondSpec], empty: str
                   ) -> dict[str, float]:
    """The per-user beyond metrics' summary from their exact ``sums`` under the ``empty``
    policy, except the metrics whose 0 reads as perfect (rND, rKL, rRD, calibration), whose
    undefined users are left out of the mean under ``empty="zero"``: the local plan's and the
    Spark driver's one rule.

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> acc = Accumulator.from_arrays(["rND@2", "novelty@2"],
        ...                               np.array([[0.5, 2.0], [np.nan, np.nan]]))
        >>> beyond_summary(acc, [parse_beyond("rND@2"), parse_beyond("novelty@2")], "zero")
        {'rND@2': 0.5, 'novelty@2': 1.0}
    """
    by_name = {s.name: s for s in specs}
    out: dict[str, float] = {}
    for ms in sums.metrics:
        spec = by_name.get(ms.name)
        policy = "skip" if spec is not None and _left_out(spec, empty) else empty
        out[ms.name] = ms.finalize(policy)
    return out


def _count_undefined(result: Result, sums: Accumulator, specs: Sequence[BeyondSpec],
                     reasons: Mapping[str, Mapping[str, int]], empty: str) -> None:
    """The beyond metrics' undefined users into ``result.counts`` as the accuracy metrics'
    are: ``undefined.users``, ``undefined.reasons`` (per metric, reason -> users; every
    metric has its entry, so that Spark partitions' counts add up) and ``averaged``."""
    by_name = {s.name: s for s in specs}
    undefined = result.counts.setdefault("undefined", {"policy": empty, "users": {}})
    undefined.setdefault("users", {})
    averaged = result.counts.setdefault("averaged", {})
    for ms in sums.metrics:
        left_out = _left_out(by_name[ms.name], empty)
        undefined["users"][ms.name] = ms.n_undefined
        averaged[ms.name] = ms.n_defined + (0 if left_out or empty in ("skip", "nan")
                                            else ms.n_undefined)
        undefined.setdefault("reasons", {})[ms.name] = dict(reasons.get(ms.name, {}))


def report_undefined(result: Result, specs: Sequence[BeyondSpec],
                     summary: Mapping[str, float], empty: str) -> None:
    """From the counts :func:`_count_undefined` wrote (one evaluation's, or every Spark
    partition's added up): ``summary_null`` for a per-user beyond metric left without a
    value, and one warning naming each metric's undefined users, their reasons and what
    became of them (none under ``empty="skip"``, as for the accuracy metrics, unless the
    metric's users are left out for reading as perfect).

    Example:
        >>> import pandas as pd, warnings
        >>> from receval.beyond.names import parse_beyond
        >>> r = Result({}, pd.DataFrame(), {"undefined": {"users": {"rND@2": 2}, "reasons": {
        ...     "rND@2": {"empty list": 2}}}, "averaged": {"rND@2": 0}, "summary_null": {}}, {})
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     report_undefined(r, [parse_beyond("rND@2")], {"rND@2": math.nan}, "zero")
        >>> r.counts["summary_null"], str(caught[0].message).split(",")[0]
        ({'rND@2': 'undefined for every user'}, 'rND@2 undefined for 2 user(s) (empty list: 2)')
    """
    counts = result.counts
    undefined = counts.get("undefined", {})
    users, reasons = undefined.get("users", {}), undefined.get("reasons", {})
    averaged = counts.get("averaged", {})
    notes = []
    for spec in specs:
        name = spec.name
        if name not in users:
            continue
        left_out = _left_out(spec, empty)
        value = summary.get(name, math.nan)
        if math.isnan(value) and "summary_null" in counts:
            counts["summary_null"].update(null_reasons(
                {name: value}, users, averaged, "skip" if left_out else empty, set()))
        if not users[name] or (empty == "skip" and not left_out):
            continue
        why = "; ".join(f"{r}: {n}" for r, n in reasons.get(name, {}).items() if n)
        fate = ("left out of the mean (a 0 would read as perfect)" if left_out
                else f"set by empty={empty!r}")
        notes.append(f"{name} undefined for {users[name]} user(s) ({why}), {fate}")
    _absent_group(result, specs, empty)
    if notes:
        checks.warn(UndefinedMetricWarning, "; ".join(notes) + "; Result.counts['undefined'] "
                    "has the count and reasons per metric")


def _record_protected_group(result: Result, specs: Sequence[BeyondSpec], ctx: Any,
                            opts: BeyondOptions) -> None:
    """rND/rKL/rRD: the protected group used, given or the default (chosen from the
    catalogue), into ``Result.options["beyond"]``; :func:`report_undefined` warns when no
    list holds an item of it."""
    if ctx.groups is None or not any(reads_protected_group(s) for s in specs):
        return
    result.options["beyond"] = {**(result.options.get("beyond") or {}),
                                "protected_group": protected_name(ctx, opts)}


def _absent_group(result: Result, specs: Sequence[BeyondSpec], empty: str) -> None:
    """Warn (``protected-group``) when the protected group is in no list: every list of the
    deepest rND/rKL/rRD metric is undefined for holding no item of it (or none at all)."""
    ranked = [s for s in specs if reads_protected_group(s)]
    if not ranked:
        return
    deepest = max(ranked, key=lambda s: s.k)
    group = (result.options.get("beyond") or {}).get("protected_group")
    undefined = result.counts.get("undefined", {})
    n = undefined.get("users", {}).get(deepest.name, 0)
    reasons = {r: c for r, c in undefined.get("reasons", {}).get(deepest.name, {}).items() if c}
    no_item = f"no item of the protected group {group!r} in the list"
    filled = empty in ("zero", "one") and not _left_out(deepest, empty)
    defined = result.counts.get("averaged", {}).get(deepest.name, 0) - (n if filled else 0)
    if defined == 0 and no_item in reasons and set(reasons) <= {no_item, "empty list"}:
        checks.warn(ProtectedGroupWarning,
                    f"the protected group {group!r} is in no list: "
                    f"{', '.join(s.name for s in ranked)} are undefined for every user; name "
                    f"the group with protected_group= (beyond=; the default is the group "
                    f"with the fewest catalogue items)")

def recorded(specs: Sequence[BeyondSpec], options: Options,
             beyond: BeyondOptions | Mapping[str, Any] | None,
             profile: str | None) -> dict[str, Any]:
    """``Result.options["beyond"]``: every switch in force, the ``empty`` policy and which of
    ``specs`` are catalogue-level (one number over all lists), known before any list is
    ranked (:func:`receval.finalize.record_profile` writes it with the options).

    Example:
        >>> from receval.beyond.names import split_metrics
        >>> specs = split_metrics(["coverage@5"])[1]
        >>> r = recorded(specs, Options(), None, None)
        >>> r["empty"], r["catalogue_metrics"]
        ('zero', ['coverage@5'])
    """
    opts = resolve(profile, beyond)
    empty = options.empty if opts.empty == "inherit" else opts.empty
    return {**opts.to_dict(), "empty": empty,
            "catalogue_metrics": [s.name for s in specs if s.entry.reduction == "catalogue"]}
