"""Several models side by side: name -> :class:`~receval.result.Result`, and the extra cutoffs the
curves need (computed in the same pass, then hidden from the tables)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

from receval.measures.spec import RATING, Family, parse_metric, parse_metrics
from receval.result import Result

#: the precision/recall curves go up to this cutoff at most (log-spaced beyond CURVE_DENSE)
CURVE_MAX_K = 200
CURVE_DENSE = 30


def as_models(results: Result | Mapping[str, Result], name: str = "model") -> dict[str, Result]:
    """A dict name -> Result from one Result or a mapping of them.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> list(as_models(r))
        ['model']
    """
    if isinstance(results, Result):
        return {name: results}
    models = dict(results)
    if not models or not all(isinstance(r, Result) for r in models.values()):
        raise TypeError("expected a Result or a non-empty mapping of name -> Result")
    return models


def curve_ks(metrics: list[str], default_max: int = 10) -> list[int]:
    """The cutoffs of the P@k / R@k curves: 1..K (log-spaced past 30), K = the largest k asked.

    Example:
        >>> curve_ks(["P@5", "nDCG@3"])
        [1, 2, 3, 4, 5]
        >>> curve_ks(["MRR"])[-1], len(curve_ks(["P@1000"]))
        (10, 49)
    """
    ks = [s.k for s in parse_metrics(metrics) if s.k]
    top = min(max(ks, default=default_max), CURVE_MAX_K)
    if top <= CURVE_DENSE:
        return list(range(1, top + 1))
    tail = np.geomspace(CURVE_DENSE, top, 20).round().astype(int)
    return sorted(set(range(1, CURVE_DENSE + 1)) | set(tail.tolist()))


def with_curves(metrics: list[str], ks: list[int]) -> list[str]:
    """``metrics`` plus ``P@k`` and ``R@k`` for every k of ``ks`` not asked already.

    Example:
        >>> with_curves(["P@2", "MRR"], [1, 2])
        ['P@2', 'MRR', 'P@1', 'R@1', 'R@2']
        >>> with_curves([], [1])
        ['P@1', 'R@1']
    """
    specs = parse_metrics(metrics) if metrics else []
    asked = {s.canonical for s in specs}
    extra = [f"{f}@{k}" for k in ks for f in ("P", "R") if f"{f}@{k}" not in asked]
    return [s.name for s in specs] + extra


def restrict(result: Result, metrics: list[str]) -> Result:
    """A copy of ``result`` that shows only ``metrics`` (names as in the result).

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1", "R@1"])
        >>> restrict(r, ["R@1"]).summary
        {'R@1': 1.0}
    """
    keep = [m for m in result.metrics or list(result.summary) if m in metrics]
    ks = {parse_metric(m).k for m in keep}
    counts: dict[str, Any] = copy.deepcopy(result.counts)
    counts["undefined"]["users"] = {m: counts["undefined"]["users"][m] for m in keep}
    counts["averaged"] = {m: counts["averaged"][m] for m in keep}
    counts["ties_at_cutoff"] = {k: v for k, v in counts["ties_at_cutoff"].items() if k in ks}
    options = dict(result.options)
    if isinstance(options.get("metrics"), dict):
        options["metrics"] = {m: options["metrics"][m] for m in keep}
    return Result(
        summary={m: result.summary[m] for m in keep},
        per_user=result.per_user[["user", *keep]].copy(),
        counts=counts,
        options=options,
        metrics=keep,
    )


def curve_points(result: Result) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cutoffs k with both P@k and R@k in ``result``, and their mean values.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1, 1], "item": [2, 1], "score": [2.0, 1.0]}, ["P@1,2", "R@1,2"])
        >>> [a.tolist() for a in curve_points(r)]
        [[1, 2], [0.0, 0.5], [0.0, 1.0]]
    """
    precision: dict[int, float] = {}
    recall: dict[int, float] = {}
    for name, value in result.summary.items():
        spec = parse_metric(name)
        if spec.k and spec.family is Family.PRECISION:
            precision[spec.k] = value
        elif spec.k and spec.family is Family.RECALL:
            recall[spec.k] = value
    ks = sorted(set(precision) & set(recall))
    return (np.array(ks, dtype=int), np.array([precision[k] for k in ks], dtype=float),
            np.array([recall[k] for k in ks], dtype=float))


def ranking_metrics(result: Result) -> list[str]:
    """The metrics of ``result`` that are ranking metrics (not RMSE/MAE, whose scale differs).

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1], "rating": [4.0]},
        ...     {"user": [1], "item": [1], "score": [3.0]}, ["P@1", "RMSE"])
        >>> ranking_metrics(r)
        ['P@1']
    """
    return [m for m in result.metrics or list(result.summary)
            if parse_metric(m).family not in RATING]
