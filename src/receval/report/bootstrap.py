"""Bootstrap confidence intervals of a mean over users, reproducible from one seed.

Users are resampled with replacement (percentile interval), drawn compressed by
:func:`receval.stats.intervals.bootstrap_means`: multinomial counts of the distinct per-user
values, exact in distribution and O(distinct values) per resample instead of O(users), the same
numbers on any thread count. Each (model, metric) pair draws from its own stream keyed by
its names (:func:`receval.randomness.stream`, as :func:`receval.compare` keys its rows), so
an interval does not change when models are reordered, added or removed, nor between runs.
"""

from __future__ import annotations

import math

import numpy as np

from receval.randomness import stream
from receval.result import Result
from receval.stats.intervals import bootstrap_means, percentile_interval


def bootstrap_ci(
    values: np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int | np.random.SeedSequence | np.random.Generator = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (NaNs left out); ``seed``: a
    seed, or the stream to draw from (:func:`receval.randomness.stream`).

    Example:
        >>> lo, hi = bootstrap_ci(np.array([0.0, 1.0] * 50), seed=1)
        >>> lo < 0.5 < hi
        True
        >>> bootstrap_ci(np.array([0.0, 1.0] * 50), seed=1) == (lo, hi)
        True
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1); got {confidence}")
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return (math.nan, math.nan)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return percentile_interval(bootstrap_means(x, n_resamples, rng), 1 - confidence)


def metric_cis(
    models: dict[str, Result],
    metrics: list[str],
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[tuple[str, str], tuple[float, float] | None]:
    """(model, metric) -> interval, or ``None`` where the summary is not the mean of the
    per-user values (micro averaging, pooled RMSE/MAE): there a per-user bootstrap of the mean
    would not describe the number shown.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 2], "item": [1, 1]},
        ...     {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1"])
        >>> metric_cis({"a": r}, ["P@1"], seed=3)[("a", "P@1")]
        (0.0, 1.0)
    """
    out: dict[tuple[str, str], tuple[float, float] | None] = {}
    for name, metric in ((name, m) for name in models for m in metrics):
        result = models[name]
        values = result.per_user[metric].to_numpy(dtype=np.float64)
        mean = float(np.nanmean(values)) if (~np.isnan(values)).any() else math.nan
        if not math.isclose(mean, result.summary[metric], rel_tol=1e-9, abs_tol=1e-12):
            out[(name, metric)] = None
            continue
        out[(name, metric)] = bootstrap_ci(values, confidence=confidence,
                                           n_resamples=n_resamples,
                                           seed=stream(seed, "interval", name, metric))
    return out
