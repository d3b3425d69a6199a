"""RMSE and MAE on the (user, item) pairs that have both a truth rating and a prediction.

Per user the value is that user's RMSE / MAE; the summary pools all pairs of the selected
users (sum of errors over number of pairs), as every rating-prediction tool does.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def rmse(sq_err: float, n_pairs: int) -> tuple[float, float, float]:
    """(value, sum of squared errors, number of pairs)."""
    if n_pairs == 0:
        return np.nan, 0.0, 0.0
    return math.sqrt(sq_err / n_pairs), sq_err, float(n_pairs)


@numba.njit(cache=True, nogil=True)
def mae(abs_err: float, n_pairs: int) -> tuple[float, float, float]:
    """(value, sum of absolute errors, number of pairs)."""
    if n_pairs == 0:
        return np.nan, 0.0, 0.0
    return abs_err / n_pairs, abs_err, float(n_pairs)
