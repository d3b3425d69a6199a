"""RMSE and MAE on the (user, item) pairs that have both a truth rating and a prediction.

Per user the value is that user's RMSE / MAE; the summary pools all pairs of the selected
users (sum of errors over number of pairs), as every rating-prediction tool does.

Sums arrive as ``scale * sum`` (``scale^2 * sum`` for squares): 1 for ordinary data, and
the largest error when the plain sums overflowed (errors near 1e154 and up; see
``numba_engine._scaled_errors``), so a user's value is right for any finite data. The
pooled summary (:func:`pooled`) rescales the same way when the plain pooled sums overflow.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def rmse(ssq: float, scale: float, n_pairs: int) -> tuple[float, float, float]:
    """(value, sum of squared errors, number of pairs); the sum is ``scale^2 * ssq``.

    Example:
        >>> rmse(8.0, 1.0, 2), rmse(2.0, 1e200, 2)[0]
        ((2.0, 8.0, 2.0), 1e+200)
    """
    if n_pairs == 0:
        return np.nan, 0.0, 0.0
    return scale * math.sqrt(ssq / n_pairs), ssq * scale * scale, float(n_pairs)


@numba.njit(cache=True, nogil=True)
def mae(asum: float, scale: float, n_pairs: int) -> tuple[float, float, float]:
    """(value, sum of absolute errors, number of pairs); the sum is ``scale * asum``.

    Example:
        >>> mae(3.0, 1.0, 2), mae(2.0, 1e308, 2)[0]
        ((1.5, 3.0, 2.0), 1e+308)
    """
    if n_pairs == 0:
        return np.nan, 0.0, 0.0
    return scale * (asum / n_pairs), asum * scale, float(n_pairs)


def pooled(squared: bool, num: np.ndarray, den: np.ndarray, value: np.ndarray) -> float:
    """The pooled RMSE (``squared``) or MAE over users: every pair's error counts once.

    ``num``/``den`` are the users' sums of (squared) errors and pair counts, ``value`` their
    RMSE/MAE. The plain ``sqrt(sum(num) / sum(den))`` is used when the sums fit in a float;
    otherwise the values are pooled relative to the largest (as BLAS ``nrm2``), so the
    result is right whenever it fits in a float itself (else ``inf``).

    Example:
        >>> pooled(True, np.array([8.0, 0.0]), np.array([2.0, 1.0]), np.array([2.0, 0.0]))
        1.632993161855452
        >>> big = np.array([1e200, 3e200])
        >>> pooled(True, np.full(2, np.inf), np.ones(2), big)  # sqrt((1 + 9) / 2) * 1e200
        2.2360679774997897e+200
        >>> pooled(False, np.array([4.0, 0.0]), np.array([2.0, 0.0]), np.array([2.0, np.nan]))
        2.0
    """
    total = float(den.sum())
    if total == 0:
        return math.nan
    with np.errstate(over="ignore"):  # an overflow is handled below
        num_total = float(num.sum())
    if num_total < math.inf:
        mean = num_total / total
        return math.sqrt(mean) if squared else mean
    has = den > 0
    vals, weights = value[has], den[has]
    top = float(vals.max())
    if not top < math.inf:
        return math.inf
    rel = vals / top
    if squared:
        return top * math.sqrt(float(np.sum(weights * rel * rel)) / total)
    return top * (float(np.sum(weights * rel)) / total)
