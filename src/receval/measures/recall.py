"""Recall@k = hits@k / L (default) or hits@k / min(k, L) ("capped"); undefined when L = 0."""

from __future__ import annotations

import numba
import numpy as np

from receval.measures._cut import NO_CUTOFF, cut


@numba.njit(cache=True, nogil=True)
def recall(
    hits: np.ndarray, n_ranks: int, n_rel: int, k: int, capped: bool
) -> tuple[float, float, float]:
    """(value, numerator, denominator)."""
    if n_rel == 0:
        return np.nan, 0.0, 0.0
    num = hits[cut(k, n_ranks)]
    den = float(min(k, n_rel)) if (capped and k != NO_CUTOFF) else float(n_rel)
    return num / den, num, den
