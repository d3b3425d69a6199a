"""Finalize: one :class:`~receval.result.Result` from the results of groups of metrics that a
profile evaluates with different options."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, cast

import pandas as pd

from receval.accumulate import Accumulator
from receval.measures.spec import MetricSpec
from receval.options import Options
from receval.result import Counts, RecordedOptions, Result


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
    return Result(summary={n: values[n] for n in names}, per_user=per_user[["user", *names]],
                  counts=counts, options=record, metrics=names, sums=merged_sums)


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
