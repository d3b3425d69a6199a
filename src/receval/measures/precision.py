"""Precision@k = hits@k / D, with D = k (default) or min(k, list length) ("returned")."""

from __future__ import annotations

import numba
import numpy as np

from receval.measures._cut import cut


@numba.njit(cache=True, nogil=True)
def precision(
    hits: np.ndarray, n_ranks: int, n_list: int, k: int, returned: bool
) -> tuple[float, float, float]:
    """(value, numerator, denominator); undefined (NaN) only when D = 0."""
    num = hits[cut(k, n_ranks)]
    den = float(min(k, n_list)) if returned else float(k)
    if den == 0.0:
        return np.nan, num, 0.0
    return num / den, num, den
