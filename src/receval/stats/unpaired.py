"""Unpaired two-sided tests: two independent samples (a monitor's variants serve different users,
so their per-list values pair nothing).

- :func:`welch_p_value`: Welch's unequal-variance t-test, :func:`scipy.stats.ttest_ind` with
  ``equal_var=False``; p = 1 when both samples have the same mean and no spread (scipy gives
  NaN), NaN with fewer than two values on a side.
"""

from __future__ import annotations

import math
import warnings

import numpy as np


def welch_p_value(b: np.ndarray, a: np.ndarray) -> float:
    """The two-sided p-value of Welch's t-test of ``mean(b) != mean(a)`` (below: t = -1.22 on
    4 degrees of freedom).

    Example:
        >>> round(welch_p_value(np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0])), 4)
        0.2879
        >>> welch_p_value(np.array([1.0, 1.0]), np.array([1.0, 1.0]))
        1.0
        >>> welch_p_value(np.array([1.0]), np.array([1.0, 2.0]))
        nan
    """
    from scipy import stats

    if a.size < 2 or b.size < 2:
        return math.nan
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = float(stats.ttest_ind(b, a, equal_var=False).pvalue)
    if math.isnan(p) and float(a.mean()) == float(b.mean()):
        p = 1.0
    return p
