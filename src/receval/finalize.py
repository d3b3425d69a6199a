"""Finalize: the one finish of every door (:func:`finish`: the "no user" errors, the summary
from the exact sums, ``counts["summary_null"]`` and the warnings; :func:`check_inputs`: the
common-mistake warnings on the inputs), and one :class:`~receval.result.Result` from the
results of groups of metrics that a profile evaluates with different options
(:func:`merge_parts`). The local plan calls them per option group, the Spark driver once on
its partitions' merged counts and sums."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import numpy as np
import pandas as pd

from receval import checks
from receval.accumulate import Accumulator
from receval.aggregate import warn_undefined
from receval.audit import no_user_error
from receval.measures.spec import RATING, MetricSpec
from receval.options import Options
from receval.result import Counts, RecordedOptions, Result, null_reasons


def merge_parts(specs: list[MetricSpec], parts: list[tuple[list[int], Result]],
                 options: Options) -> Result:
    """One :class:`Result` from results over groups of metrics evaluated with different options
    (a profile's per-metric options): the summary in request order, per-user values merged on
    the user id (NaN where a user is outside a metric's population), per-metric counts merged.
    """
    names = [s.name for s in specs]
    values: dict[str, float] = {}
    per_user: pd.DataFrame | None = None
    counts: Counts = {}
    for _members, part in parts:
        values.update(part.summary)
        frame = part.per_user
        per_user = frame if per_user is None else per_user.merge(frame, on="user", how="outer")
        if not counts:
            counts = cast(Counts, {key: (dict(val) if isinstance(val, dict) else val)
                                   for key, val in part.counts.items()})
            counts["undefined"] = dict(counts["undefined"])
            counts["undefined"]["users"] = dict(counts["undefined"]["users"])
            counts["users_per_metric"] = {}
        else:
            counts["undefined"]["users"].update(part.counts["undefined"]["users"])
            counts["averaged"].update(part.counts["averaged"])
            counts["summary_null"].update(part.counts["summary_null"])
        for name in part.metrics:
            counts["users_per_metric"][name] = part.counts["users"]["evaluated"]
    assert per_user is not None
    sums = [part.sums for _members, part in parts]
    merged_sums = (Accumulator(tuple(sorted((m for acc in sums for m in acc.metrics),
                                            key=lambda m: names.index(m.name))))
                   if all(acc is not None for acc in sums) else None)
    record = parts[0][1].options.copy()
    record.update(cast(RecordedOptions, options.to_dict()))
    record["metrics"] = {s.name: s.canonical for s in specs}
    depths = [part.list_depth for _members, part in parts if part.list_depth is not None]
    return Result(summary={n: values[n] for n in names}, per_user=per_user[["user", *names]],
                  counts=counts, options=record, metrics=names, sums=merged_sums,
                  list_depth=max(depths) if depths else None)


def record_profile(result: Result, specs: list[MetricSpec], per_spec: list[Options],
                   options: Options, profile: str | None,
                   inputs: Mapping[str, Any] | None = None,
                   metrics: Mapping[str, str] | None = None) -> None:
    """Record in ``result.options`` the options in force, the profile's name, for each
    metric a profile evaluates with other options (``per_spec[i]``) how they differ, and
    ``inputs``: what the plan records of the inputs besides :class:`Options`
    (:func:`recorded_inputs`: ``train``, ``exclude_train``, ``item_features``,
    ``item_groups``, ``strata``, ``beyond``; every key is there, ``None`` where not given)
    and, when given, ``metrics``: each requested name's canonical name, in request order.
    The one place the options of a finished result are written: nothing adds to them later.

    Example:
        >>> import pandas as pd
        >>> from receval.measures.spec import parse_metrics
        >>> r = Result(summary={}, per_user=pd.DataFrame(), counts={}, options={}, metrics=[])
        >>> specs = parse_metrics(["P@1", "nDCG@1"])
        >>> record_profile(r, specs, [Options(), Options(relevance_threshold=1)],
        ...                Options(), "mine")
        >>> r.options["profile"], r.options["per_metric"], r.options["train"]
        ('mine', {'nDCG@1': {'relevance_threshold': 1}}, None)
    """
    base = options.to_dict()
    overrides = {
        specs[i].name: {name: value for name, value in per_spec[i].to_dict().items()
                        if base[name] != value}
        for i in range(len(specs)) if per_spec[i] != options
    }
    record: dict[str, Any] = {**result.options, **base, "profile": profile,
                              **({"per_metric": overrides} if overrides else {}),
                              **recorded_inputs(), **(inputs or {}),
                              **({"metrics": dict(metrics)} if metrics is not None else {})}
    result.options = cast(RecordedOptions, record)


def canonical_names(specs: list[MetricSpec], beyond_specs: list[Any],
                    requested: Iterable[str]) -> dict[str, str]:
    """``Result.options["metrics"]``: each requested name's canonical name (with
    beyond-accuracy metrics, in request order).

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> canonical_names(parse_metrics(["p@5"]), [], ["p@5"])
        {'p@5': 'P@5'}
    """
    canon = {s.name: s.canonical for s in specs}
    canon.update({s.name: f"{s.entry.name}@{s.k}" for s in beyond_specs})
    return {n: canon.get(n, n) for n in requested} if beyond_specs else canon


def recorded_inputs(*, train: Any = None, exclude_train: bool = False,
                    item_features: Any = None, item_groups: Any = None, strata: Any = None,
                    beyond: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What ``Result.options`` records of the inputs besides :class:`Options`, as part of the
    plan: for each table a short description (:func:`describe`), never the table; ``beyond``
    is the beyond-accuracy settings in force (``None`` without such a metric).

    Example:
        >>> recorded_inputs(train={"user": [1, 1, 2], "item": [3, 4, 3]}, strata="activity")
        ... # doctest: +NORMALIZE_WHITESPACE
        {'train': {'rows': 3, 'users': 2}, 'exclude_train': False, 'item_features': None,
         'item_groups': None, 'strata': 'activity', 'beyond': None}
    """
    return {"train": describe(train, users=True), "exclude_train": bool(exclude_train),
            "item_features": describe(item_features, keyed="items"),
            "item_groups": describe(item_groups, keyed="items", grouped=True),
            "strata": describe(strata, keyed="users", grouped=True),
            "beyond": None if beyond is None else dict(beyond)}


class Described(dict[str, Any]):
    """An input described already (a Spark frame by the counts its audit made: never collected
    to be counted again): :func:`describe` records it as it is."""


def describe(data: Any, *, users: bool = False, keyed: str = "rows",
             grouped: bool = False) -> Any:
    """A short description of an input for ``Result.options``, never the input itself: a
    file's path, a column's or a built-in's name as given; a table ``{"rows": n}`` (with
    ``users``, also the distinct values of its ``users`` or ``user`` column); a dict or Series
    keyed by item or user ``{keyed: n}`` (``grouped``: and ``"groups"``, its distinct values).

    Example:
        >>> import pandas as pd
        >>> describe("train.csv"), describe(None)
        ('train.csv', None)
        >>> describe(pd.DataFrame({"item": [1, 2], "genres": ["a", "b|c"]}))
        {'rows': 2}
        >>> describe({7: "low", 8: "high", 9: "low"}, keyed="users", grouped=True)
        {'users': 3, 'groups': 2}
    """
    if isinstance(data, Described):
        return dict(data)
    if data is None or isinstance(data, str | os.PathLike):
        return None if data is None else os.fspath(data)
    if isinstance(data, pd.Series | Mapping) and not users:
        values = pd.Series(list(data.values()) if isinstance(data, Mapping) else data.to_numpy())
        return {keyed: len(values), **({"groups": int(values.astype(str).nunique())}
                                       if grouped else {})}
    ids = getattr(data, "users", None)  # receval.training.Training: read already
    if ids is None and users:
        try:
            ids = data["user"]
        except (KeyError, TypeError, IndexError, ValueError):
            ids = None
    out: dict[str, Any] = {"rows": len(ids) if ids is not None else _rows(data)}
    if ids is not None:
        out["users"] = int(pd.Series(_plain(ids)).nunique())
    return out


def _rows(data: Any) -> int | None:
    """Rows of a table: a frame, an Arrow table, a dict of columns."""
    if isinstance(data, Mapping):
        return len(next(iter(data.values()))) if data else 0
    try:
        return len(data)
    except TypeError:
        return None


def _plain(ids: Any) -> Any:
    """Ids as something pandas counts (an Arrow array becomes numpy)."""
    to_numpy = getattr(ids, "to_numpy", None)
    if to_numpy is None:
        return ids
    try:
        return to_numpy(zero_copy_only=False)
    except TypeError:
        return to_numpy()


def finish(specs: list[MetricSpec], per_spec: list[Options], counts: Counts,
           sums: Accumulator, *, partial: bool = False) -> dict[str, float]:
    """The summary of ``specs`` (each under its options ``per_spec``) from the exact ``sums``
    and the ``counts`` of the users they came from (one engine run, or every Spark partition's
    merged): raises when a metric's population is empty (not when ``partial``: a Spark
    partition may hold none of it), writes ``counts["summary_null"]`` and gives the
    undefined-value and ties warnings once per option group.

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> acc = Accumulator.from_arrays(["P@1"], np.array([[1.0], [0.0]]))
        >>> counts = {"users": {"evaluated": 2, "in_truth": 2}, "averaged": {"P@1": 2},
        ...           "undefined": {"users": {"P@1": 0}}, "ties_at_cutoff": {1: 0}}
        >>> finish(parse_metrics(["P@1"]), [Options()], counts, acc), counts["summary_null"]
        ({'P@1': 0.5}, {})
        >>> counts["users"]["evaluated"] = 0
        >>> finish(parse_metrics(["P@1"]), [Options()], counts, acc)
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: no user to evaluate with users='truth': truth and predictions share no user id (check the user column and its type)
    """  # noqa: E501
    per_metric = counts.get("users_per_metric", {})
    if not partial:
        for spec, opts in zip(specs, per_spec, strict=True):
            if per_metric.get(spec.name, counts["users"]["evaluated"]) == 0:
                raise no_user_error(opts.users, relevant_only=opts.users == "relevant"
                                    and bool(counts["users"]["in_truth"]))
    by_name = {ms.name: ms for ms in sums.metrics}
    summary = {s.name: by_name[s.name].finalize(o.empty, o.average, o.all_skipped)
               for s, o in zip(specs, per_spec, strict=True)}
    rating = {s.name for s in specs if s.family in RATING}
    undefined, used = counts["undefined"]["users"], counts["averaged"]
    counts["summary_null"] = {}
    groups: dict[Options, list[MetricSpec]] = {}
    for s, o in zip(specs, per_spec, strict=True):
        counts["summary_null"].update(null_reasons({s.name: summary[s.name]}, undefined, used,
                                                   o.empty, rating))
        groups.setdefault(o, []).append(s)
    for opts, members in groups.items():
        warn_undefined(members, opts, undefined)
        checks.check_ties(counts["ties_at_cutoff"], opts.ties)
    return summary


def check_inputs(counts: Counts, options: Options, *, ratings: np.ndarray | None,
                 column: str, threshold_given: bool, item_overlap: Callable[[], float]) -> None:
    """The common-mistake warnings on what was read, from a finished result's ``counts``:
    graded ``ratings`` (the values, or their smallest and largest) without a threshold, and
    predictions that do not meet the truth (``item_overlap``: the share of predicted items
    found in the truth, computed only when most users have no hit).

    Example:
        >>> counts = {"users": {"evaluated": 1, "without_predictions": 0, "without_match": 0},
        ...           "rows": {"predictions_without_truth": 0}}
        >>> check_inputs(counts, Options(), ratings=None, column="rating",
        ...              threshold_given=False, item_overlap=lambda: 1.0)
    """
    checks.check_relevance_threshold(
        ratings, column=column, gain=options.gain,
        threshold_given=threshold_given or options.relevance_threshold is not None)
    checks.check_threshold_range(ratings, options.relevance_threshold, column=column)
    users, rows = counts["users"], counts["rows"]
    checks.check_matches(
        predictions_without_truth=rows["predictions_without_truth"],
        users=users["evaluated"] - users["without_predictions"],
        users_without_match=users["without_match"], predicted_item_overlap=item_overlap)
