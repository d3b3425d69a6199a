"""Finalize: one :class:`~receval.result.Result` from the results of groups of metrics that a
profile evaluates with different options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from receval.accumulate import Accumulator
from receval.measures.spec import MetricSpec
from receval.options import Options
from receval.result import Result


def merge_parts(specs: list[MetricSpec], parts: list[tuple[list[int], Result]],
                 options: Options) -> Result:
    """One :class:`Result` from results over groups of metrics evaluated with different options
    (a profile's per-metric options): the summary in request order, per-user values merged on
    the user id (NaN where a user is outside a metric's population), per-metric counts merged.
    """
    names = [s.name for s in specs]
    values: dict[str, float] = {}
    per_user: pd.DataFrame | None = None
    counts: dict[str, Any] = {}
    for _members, part in parts:
        values.update(part.summary)
        frame = part.per_user
        per_user = frame if per_user is None else per_user.merge(frame, on="user", how="outer")
        if not counts:
            counts = {key: (dict(val) if isinstance(val, dict) else val)
                      for key, val in part.counts.items()}
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
    record = dict(parts[0][1].options)
    record.update(options.to_dict())
    record["metrics"] = {s.name: s.canonical for s in specs}
    return Result(summary={n: values[n] for n in names}, per_user=per_user[["user", *names]],
                  counts=counts, options=record, metrics=names, sums=merged_sums)


def record_profile(result: Result, specs: list[MetricSpec], per_spec: list[Options],
                   options: Options, profile: str | None,
                   inputs: Mapping[str, Any] | None = None) -> None:
    """Record in ``result.options`` the options in force, the profile's name, for each
    metric a profile evaluates with other options (``per_spec[i]``) how they differ, and
    ``inputs``: what the plan records of the inputs besides :class:`Options`
    (``exclude_train``, :meth:`receval.training.Leakage.recorded`). The one place the
    options of a finished result are written: nothing adds to them later.

    Example:
        >>> import pandas as pd
        >>> from receval.measures.spec import parse_metrics
        >>> r = Result(summary={}, per_user=pd.DataFrame(), counts={}, options={}, metrics=[])
        >>> specs = parse_metrics(["P@1", "nDCG@1"])
        >>> record_profile(r, specs, [Options(), Options(relevance_threshold=1)],
        ...                Options(), "mine")
        >>> r.options["profile"], r.options["per_metric"]
        ('mine', {'nDCG@1': {'relevance_threshold': 1}})
    """
    base = options.to_dict()
    overrides = {
        specs[i].name: {name: value for name, value in per_spec[i].to_dict().items()
                        if base[name] != value}
        for i in range(len(specs)) if per_spec[i] != options
    }
    result.options = {**result.options, **base, "profile": profile,
                      **({"per_metric": overrides} if overrides else {}), **(inputs or {})}
