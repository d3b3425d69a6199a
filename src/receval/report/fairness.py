"""The report's "Fairness" section: who gets exposure, and how calibrated the lists are.

Shown when a fairness or calibration metric was evaluated (docs/fairness.md):

- per ``group_exposure@k``: each item group's share of the discounted exposure in each model's
  lists against the target share (``result.counts["group_exposure"]``), the gap to the target
  and, with several models, each model's share minus the first model's; the last row is the
  metric itself (the total variation distance to the target);
- the per-user fairness and calibration metrics (``AWRF@k``, ``calibration@k``, ``rND@k``,
  ``EE_L@k``...): each model's mean and, with several models, each model against the first:
  the paired mean difference over the users both define, its paired bootstrap percentile
  interval and the paired t-test's p-value, exactly the numbers of
  ``receval.compare(..., baseline=<first model>, test="t", n_resamples=1000, seed=seed)``
  before its correction (the same random stream, keyed by the pair of models and the metric).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from receval.beyond.names import direction, parse_beyond
from receval.exceptions import ReceValError
from receval.result import Result
from receval.stats.pairing import align, pair_values

#: resamples of the section's intervals (the report's tests take as many)
RESAMPLES = 1_000


def fairness_names(names: Sequence[str]) -> list[str]:
    """The fairness and calibration metrics among ``names``: those whose entry declares
    :attr:`~receval.beyond.names.BeyondEntry.fairness`.

    Example:
        >>> fairness_names(["nDCG@10", "AWRF@10", "coverage@10", "calibration@5"])
        ['AWRF@10', 'calibration@5']
    """
    out = []
    for name in names:
        spec = parse_beyond(name)
        if spec is not None and spec.entry.fairness:
            out.append(name)
    return out


def fairness_section(models: Mapping[str, Result], metrics: Sequence[str] | None = None, *,
                     seed: int = 0, n_resamples: int = RESAMPLES) -> dict[str, Any] | None:
    """The section's tables from the models' Results (``metrics``: those asked, default the
    first Result's), or ``None`` when no fairness or calibration metric is among them.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": ["a", "b"]}
        >>> preds = {"user": [1, 1, 2, 2], "item": ["a", "b", "b", "c"],
        ...          "score": [2.0, 1.0, 2.0, 1.0]}
        >>> r = receval.evaluate(truth, preds, ["group_exposure@2", "AWRF@2"],
        ...                      item_groups={"a": "x", "b": "y", "c": "y"})
        >>> s = fairness_section({"m": r})
        >>> s["exposure"][0]["rows"][0]
        {'group': 'x', 'target': '0.5000', 'cells': ['0.2500 (-0.2500)'], 'diffs': []}
        >>> s["per_user"]["rows"][0]["cells"]
        ['0.8921']
        >>> fairness_section({"m": receval.evaluate(truth, preds, ["P@1"])}) is None
        True
    """
    if not models:
        return None
    names = list(models)
    first = models[names[0]]
    asked = fairness_names(list(metrics) if metrics else list(first.metrics or first.summary))
    if not asked:
        return None
    # a catalogue-level one has no per-user values: its per-group table, where it writes one
    exposure = [_exposure(name, models) for name in asked
                if parse_beyond(name).entry.reduction == "catalogue"]  # type: ignore[union-attr]
    per_user = [n for n in asked if n in first.per_user.columns]
    return {"models": names, "exposure": [e for e in exposure if e is not None],
            "per_user": _per_user(per_user, models, seed, n_resamples) if per_user else None,
            "resamples": n_resamples}


def _exposure(metric: str, models: Mapping[str, Result]) -> dict[str, Any] | None:
    """One ``group_exposure@k``: per group the target, each model's share (its gap to the
    target) and, with several models, each model's share minus the first's."""
    tables: dict[str, Any] = {}
    for m, r in models.items():
        table = (r.counts.get("group_exposure") or {}).get(metric)
        if table is not None:
            tables[m] = table
    if not tables:
        return None
    names = list(tables)
    shares = {m: dict(zip(t["group"], t["exposure"], strict=True)) for m, t in tables.items()}
    targets = {m: dict(zip(t["group"], t["target"], strict=True)) for m, t in tables.items()}
    groups = sorted({g for t in tables.values() for g in t["group"]}, key=str)
    base = names[0]
    rows = []
    for group in groups:
        cells = []
        for m in names:
            share, target = shares[m].get(group, 0.0), targets[m].get(group, math.nan)
            cells.append(f"{_fmt(share)} ({_signed(share - target)})")
        diffs = [_signed(shares[m].get(group, 0.0) - shares[base].get(group, 0.0))
                 for m in names[1:]]
        rows.append({"group": str(group), "target": _fmt(targets[base].get(group, math.nan)),
                     "cells": cells, "diffs": diffs})
    same_target = all(targets[m] == targets[base] for m in names)
    return {"metric": metric, "models": names, "rows": rows, "same_target": same_target,
            "distance": [_fmt(float(models[m].summary.get(metric, math.nan))) for m in names],
            "baseline": base}


def _per_user(metrics: list[str], models: Mapping[str, Result], seed: int,
              n_resamples: int) -> dict[str, Any]:
    """Each per-user metric's mean per model and each model's paired difference to the
    first (compare's numbers: paired t, bootstrap interval, the same stream)."""
    names = list(models)
    base = names[0]
    rows = []
    for metric in metrics:
        cells = [_fmt(float(models[m].summary.get(metric, math.nan))) for m in names]
        diffs = []
        for other in names[1:]:
            a, b = _aligned(base, models[base], other, models[other], metric)
            row = pair_values(a, b, baseline=base, model=other, metric=metric, test="t",
                              alpha=0.05, n_resamples=n_resamples, seed=seed,
                              better=direction(metric))
            diffs.append({"model": other, "delta": _signed(row["delta"]),
                          "interval": f"[{_signed(row['ci_low'])}, {_signed(row['ci_high'])}]",
                          "p": _fmt(row["p_value"]), "n": f"{row['n']:,}"})
        rows.append({"metric": metric, "cells": cells, "diffs": diffs})
    return {"models": names, "baseline": base, "rows": rows}


def _aligned(base_name: str, base: Result, other_name: str, other: Result,
             metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Both models' values of ``metric`` paired by user as compare pairs them
    (:func:`receval.stats.pairing.align`); models evaluated on different users: the base
    model's users (NaN where the other has no value: the pair is then left out)."""
    try:
        frames = align({base_name: base.per_user[["user", metric]],
                        other_name: other.per_user[["user", metric]]})
        return (frames[base_name][metric].to_numpy(dtype=float),
                frames[other_name][metric].to_numpy(dtype=float))
    except ReceValError:
        pass
    left = base.per_user[["user", metric]]
    right = other.per_user[["user", metric]].rename(columns={metric: "other"})
    both = left.merge(right, on="user", how="left", sort=False)
    return both[metric].to_numpy(dtype=float), both["other"].to_numpy(dtype=float)


def _fmt(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.4f}"


def _signed(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:+.4f}"
