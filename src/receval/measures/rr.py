"""Reciprocal rank@k = 1 / rank of the first hit (0 if none); Hit@k = 1 if any hit.

Both read the first-hit probabilities of the picture, so the ``average`` tie policy gives
their exact expectations. Both are undefined for a user with nothing relevant.
"""

from __future__ import annotations

import numba
import numpy as np

from receval.measures._cut import cut


@numba.njit(cache=True, nogil=True)
def reciprocal_rank(
    rr_sum: np.ndarray, n_ranks: int, n_rel: int, k: int
) -> tuple[float, float, float]:
    """(value, numerator, 1)."""
    if n_rel == 0:
        return np.nan, 0.0, 0.0
    value = rr_sum[cut(k, n_ranks)]
    return value, value, 1.0


@numba.njit(cache=True, nogil=True)
def hit(first: np.ndarray, n_ranks: int, n_rel: int, k: int) -> tuple[float, float, float]:
    """(value, numerator, 1)."""
    if n_rel == 0:
        return np.nan, 0.0, 0.0
    value = min(1.0, first[cut(k, n_ranks)])
    return value, value, 1.0
