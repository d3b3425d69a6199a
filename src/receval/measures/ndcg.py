"""nDCG@k = DCG@k / IDCG@k, DCG = sum gain_j / log2(j + 1); undefined when IDCG = 0."""

from __future__ import annotations

import numba
import numpy as np

from receval.measures._cut import NO_CUTOFF, cut

GAIN_BINARY = 0
GAIN_LINEAR = 1
GAIN_EXPONENTIAL = 2
GAIN_CODES = {"binary": GAIN_BINARY, "linear": GAIN_LINEAR, "exponential": GAIN_EXPONENTIAL}


@numba.njit(cache=True, nogil=True)
def gain_of(rating: float, relevant: bool, scheme: int) -> float:
    """The nDCG gain of an item: 0 unless relevant; then 1, the rating, or 2^rating - 1."""
    if not relevant:
        return 0.0
    if scheme == GAIN_BINARY:
        return 1.0
    if scheme == GAIN_LINEAR:
        return rating
    return 2.0**rating - 1.0


@numba.njit(cache=True, nogil=True)
def ndcg(
    dcg: np.ndarray, idcg: np.ndarray, n_ranks: int, n_rel: int, k: int
) -> tuple[float, float, float]:
    """(value, DCG, IDCG); ``idcg`` holds the ideal prefix sums over the L relevant items."""
    if n_rel == 0:
        return np.nan, 0.0, 0.0
    den = idcg[n_rel if k == NO_CUTOFF else min(k, n_rel)]
    num = dcg[cut(k, n_ranks)]
    if den <= 0.0:
        return np.nan, num, 0.0
    return num / den, num, den
