"""Unpaired two-sample comparisons of per-user values: the gap between two groups of users.

Two groups of users (say, light and heavy users) hold different users, so nothing pairs them;
the gap ``mean(y) - mean(x)`` is tested with:

- ``"welch"``: Welch's unequal-variance t-test (:func:`scipy.stats.ttest_ind` with
  ``equal_var=False``) and its interval, ``gap +- t(1 - alpha/2, df) se`` with
  ``se = sqrt(s_x^2/n_x + s_y^2/n_y)`` and the Welch-Satterthwaite ``df``;
- ``"permutation"``: the two-sided permutation test of the group labels, p = (b + 1) / (B + 1)
  where b counts the B relabellings whose ``abs(gap)`` reaches the observed one (Phipson & Smyth
  2010; never 0), and the percentile interval of the gap from bootstrapping each group within
  itself. A relabelling draws the smaller group's values from the pooled values without
  replacement, exact in distribution either way: with few distinct values (a metric at a
  cutoff), the counts of each distinct value from their multivariate hypergeometric law
  (:meth:`numpy.random.Generator.multivariate_hypergeometric`, O(distinct values) per
  resample); with many (a continuous metric), a partial Fisher-Yates shuffle of the pooled
  values (O(smaller group) per resample, numba, on numba's threads, each resample from its
  own counter-based stream so the p-value is the same on any thread count). The bootstrap is
  :mod:`receval.stats.resample`'s.

:func:`welch_p_value` is Welch's p alone, for the monitor's variants.

Both give p = 1 when every value of both groups is the same number, and NaN (interval too)
when a group has fewer than two users. With no spread in either group but different means,
Welch's p is 0 and its interval the gap itself (a t statistic of infinity).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from receval.exceptions import ReceValError
from receval.stats import UNPAIRED_TESTS  # the names, where the CLI reads them without numba
from receval.stats.intervals import percentile_interval
from receval.stats.resample import _key, _run, _uniform, bootstrap_sums, distinct

#: the interval each test reports, as the output names it
INTERVALS = {"welch": "Welch t interval",
             "permutation": "bootstrap percentile interval (each group resampled within itself)"}

#: relative slack when a relabelled gap is compared with the observed one (summation order)
_SLACK = 1e-9

#: how many hypergeometric counts one block of relabellings holds at most (memory)
_BLOCK = 2_000_000


def check_unpaired_test(name: str) -> None:
    """Raise :class:`~receval.exceptions.ReceValError` for an unknown unpaired test.

    Example:
        >>> check_unpaired_test("welch")
        >>> check_unpaired_test("t")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: unknown unpaired test 't'; known: welch, permutation
    """
    if name not in UNPAIRED_TESTS:
        raise ReceValError(f"unknown unpaired test {name!r}; known: {', '.join(UNPAIRED_TESTS)}")


def welch(x: np.ndarray, y: np.ndarray, alpha: float = 0.05) -> tuple[float, float, float]:
    """Welch's two-sided p-value for ``mean(y) - mean(x)`` and its ``1 - alpha`` interval:
    ``(p, low, high)``.

    Example:
        >>> p, low, high = welch(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.5, 0.7, 0.6]))
        >>> round(p, 4), round(low, 4), round(high, 4)
        (0.0101, 0.1268, 0.5732)
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    nan = float("nan")
    if x.size < 2 or y.size < 2:
        return nan, nan, nan
    gap = float(y.mean() - x.mean())
    vx, vy = float(x.var(ddof=1)) / x.size, float(y.var(ddof=1)) / y.size
    if vx + vy == 0:  # no spread on either side: the gap is known exactly
        return (1.0 if gap == 0 else 0.0), gap, gap
    import scipy.stats  # loaded on first use: import receval stays light

    test = scipy.stats.ttest_ind(y, x, equal_var=False)
    low, high = test.confidence_interval(1 - alpha)
    return float(test.pvalue), float(low), float(high)


def permutation_p(x: np.ndarray, y: np.ndarray, n_resamples: int,
                  rng: np.random.Generator) -> float:
    """Two-sided permutation p-value of ``mean(y) - mean(x)``: (b + 1) / (B + 1) over
    ``n_resamples`` relabellings of the pooled values (see the module).

    Example:
        >>> permutation_p(np.zeros(3), np.zeros(4), 99, np.random.default_rng(0))
        1.0
        >>> p = permutation_p(np.zeros(8), np.ones(8), 999, np.random.default_rng(0))
        >>> 0 < p < 0.01
        True
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 2 or y.size < 2:
        return float("nan")
    pooled = np.concatenate([x, y])
    if (pooled == pooled[0]).all():
        return 1.0
    values, counts = distinct(pooled)
    total = float(pooled.sum())
    nx, ny = x.size, y.size
    observed = abs(float(y.mean() - x.mean()))
    sums_x = (_hypergeometric_sums(values, counts, nx, n_resamples, rng)
              if values.size * 4 < min(nx, ny) else _shuffled_sums(pooled, nx, n_resamples, rng))
    gaps = np.abs((total - sums_x) / ny - sums_x / nx)
    reached = int(np.count_nonzero(gaps >= observed * (1 - _SLACK)))
    return (reached + 1) / (n_resamples + 1)


def _hypergeometric_sums(values: np.ndarray, counts: np.ndarray, nx: int, n_resamples: int,
                         rng: np.random.Generator) -> np.ndarray:
    """Group x's sum in each relabelling, from multivariate hypergeometric counts."""
    out = np.empty(n_resamples)
    block = max(1, _BLOCK // max(values.size, 1))
    for lo in range(0, n_resamples, block):
        hi = min(lo + block, n_resamples)
        drawn = rng.multivariate_hypergeometric(counts, nx, size=hi - lo, method="marginals")
        out[lo:hi] = drawn @ values
    return out


@numba.njit(cache=True, nogil=True)
def _shuffle_block(lo: int, hi: int, pooled: np.ndarray, m: int, key: np.uint64,
                   out: np.ndarray) -> None:
    """Sums of ``m`` values drawn without replacement, resamples lo..hi-1: a partial
    Fisher-Yates shuffle of a private copy, undone after each resample."""
    local = pooled.copy()
    n = local.size
    swaps = np.empty(m, dtype=np.int64)
    for b in range(lo, hi):
        state = key ^ (np.uint64(b) * np.uint64(0xD1B54A32D192ED03))
        s = 0.0
        for i in range(m):
            state, u = _uniform(state)
            j = i + min(int(u * (n - i)), n - i - 1)
            swaps[i] = j
            local[i], local[j] = local[j], local[i]
            s += local[i]
        for i in range(m - 1, -1, -1):
            j = swaps[i]
            local[i], local[j] = local[j], local[i]
        out[b] = s


def _shuffled_sums(pooled: np.ndarray, nx: int, n_resamples: int,
                   rng: np.random.Generator) -> np.ndarray:
    """Group x's sum in each relabelling, from the smaller group drawn by shuffling."""
    n = pooled.size
    m = min(nx, n - nx)
    out = np.empty(n_resamples)
    _run(_shuffle_block, 0, n_resamples, n_resamples * m, np.ascontiguousarray(pooled), m,
         _key(rng), out)
    return out if m == nx else float(pooled.sum()) - out


def bootstrap_interval(x: np.ndarray, y: np.ndarray, n_resamples: int,
                       rng: np.random.Generator, alpha: float = 0.05) -> tuple[float, float]:
    """The percentile interval of ``mean(y) - mean(x)`` with each group resampled within itself
    (two streams spawned from ``rng``, one per group).

    Example:
        >>> bootstrap_interval(np.zeros(3), np.ones(4), 50, np.random.default_rng(0))
        (1.0, 1.0)
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 2 or y.size < 2 or n_resamples < 1:
        return float("nan"), float("nan")
    rx, ry = rng.spawn(2)
    gaps = (bootstrap_sums(y, n_resamples, ry) / y.size
            - bootstrap_sums(x, n_resamples, rx) / x.size)
    return percentile_interval(gaps, alpha)


def unpaired(x: np.ndarray, y: np.ndarray, *, test: str, alpha: float, n_resamples: int,
             rng: np.random.Generator) -> dict[str, Any]:
    """y against x, unpaired (NaN values left out): both means and sizes, the gap
    ``mean(y) - mean(x)``, its interval and the p-value of ``test`` (see the module).

    Example:
        >>> r = unpaired(np.array([0.0, 0.5, 0.5]), np.array([1.0, 0.5, 1.0, 1.0]),
        ...              test="welch", alpha=0.05, n_resamples=0, rng=np.random.default_rng(0))
        >>> round(r["gap"], 4), r["n"], r["baseline_n"], round(r["p_value"], 4)
        (0.5417, 4, 3, 0.0596)
    """
    check_unpaired_test(test)
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    nan = float("nan")
    mean_x = float(x.mean()) if x.size else nan
    mean_y = float(y.mean()) if y.size else nan
    if test == "welch":
        p, low, high = welch(x, y, alpha)
    else:
        stream_p, stream_ci = rng.spawn(2)
        p = permutation_p(x, y, n_resamples, stream_p)
        low, high = bootstrap_interval(x, y, n_resamples, stream_ci, alpha)
    return {"mean": mean_y, "baseline_mean": mean_x, "gap": mean_y - mean_x,
            "ci_low": low, "ci_high": high, "p_value": p, "p_adjusted": nan,
            "n": int(y.size), "baseline_n": int(x.size)}



def welch_p_value(b: np.ndarray, a: np.ndarray) -> float:
    """The two-sided p-value of Welch's t-test of ``mean(b) != mean(a)`` (the monitor's
    variants): :func:`welch`'s p.

    Example:
        >>> round(welch_p_value(np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0])), 4)
        0.2879
        >>> welch_p_value(np.array([1.0, 1.0]), np.array([1.0, 1.0]))
        1.0
        >>> welch_p_value(np.array([1.0]), np.array([1.0, 2.0]))
        nan
    """
    return welch(a, b)[0]
