"""One paired comparison of two vectors of per-user values: the numbers of one row.

Shared by :func:`receval.compare` and the report (:mod:`receval.report`), so a difference, its
interval and its p-value are the same wherever they are shown: the random stream of a row is
keyed by its names (:func:`stream`), the resampling is :mod:`receval.stats.resample`'s.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from receval.randomness import stream  # noqa: F401  (re-exported from its first home)
from receval.stats.intervals import bootstrap_means, percentile_interval
from receval.stats.tests import bootstrap_test, randomization_test, t_test, wilcoxon_test


def paired(a: np.ndarray, b: np.ndarray, *, test: str, alpha: float, n_resamples: int,
           rng: np.random.Generator, better: str = "higher") -> dict[str, Any]:
    """b against a, paired by position (a pair with a NaN on either side is left out): both
    means, the mean difference, its bootstrap percentile interval, the p-value, Cohen's d_z,
    P(better), wins/ties/losses and n. ``n_resamples=0`` leaves the interval out (NaN): the
    t and Wilcoxon tests need no resampling. ``better``: the metric's direction (``"lower"``:
    a win is a smaller value of b, for RMSE, MAE and the other lower-is-better metrics).
    :func:`receval.stats.pairing.pair_values` calls it with the keyed stream of the pair.

    Example:
        >>> import numpy as np
        >>> r = paired(np.array([0.0, 0.5, 0.5]), np.array([1.0, 0.5, 1.0]), test="t",
        ...            alpha=0.05, n_resamples=100, rng=np.random.default_rng(0))
        >>> r["delta"], r["wins"], r["ties"], r["n"]
        (0.5, 2, 1, 3)
        >>> paired(np.array([0.0, 0.5, 0.5]), np.array([1.0, 0.5, 1.0]), test="t", alpha=0.05,
        ...        n_resamples=0, rng=np.random.default_rng(0), better="lower")["wins"]
        0
    """
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    d = b - a
    n = int(d.size)
    # n_resamples=0: no interval (t and Wilcoxon need no resampling)
    means = bootstrap_means(d, n_resamples, rng) if n and n_resamples else np.empty(0)
    low, high = percentile_interval(means, alpha)
    if test == "t":
        p = t_test(a, b)
    elif test == "wilcoxon":
        p = wilcoxon_test(a, b)
    elif test == "randomization":
        p = randomization_test(d, n_resamples, rng)
    else:
        p = bootstrap_test(d, means)
    wins = int((d < 0).sum()) if better == "lower" else int((d > 0).sum())
    ties = int((d == 0).sum())
    nan = float("nan")
    return {
        "mean": float(b.mean()) if n else nan, "baseline_mean": float(a.mean()) if n else nan,
        "delta": float(d.mean()) if n else nan, "ci_low": low, "ci_high": high,
        "p_value": p, "p_adjusted": nan, "effect_size": effect_size(d),
        "share_better": (wins + ties / 2) / n if n else nan,
        "wins": wins, "ties": ties, "losses": n - wins - ties, "n": n,
    }


def effect_size(d: np.ndarray) -> float:
    """Cohen's d_z: mean / sd (ddof 1); 0 when every difference is 0, NaN below two users,
    +-inf for a constant nonzero difference.

    Example:
        >>> import numpy as np
        >>> effect_size(np.array([1.0, 3.0])), effect_size(np.zeros(3))
        (1.414213562373095, 0.0)
    """
    if d.size < 2:
        return float("nan")
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0:
        return 0.0 if mean == 0 else math.copysign(math.inf, mean)
    return mean / sd
