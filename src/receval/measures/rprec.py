"""R-precision = hits@L / L: precision at a per-user cut equal to the number of relevant."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def r_precision(hits: np.ndarray, n_ranks: int, n_rel: int) -> tuple[float, float, float]:
    """(value, numerator, denominator); undefined when L = 0."""
    if n_rel == 0:
        return np.nan, 0.0, 0.0
    num = hits[min(n_rel, n_ranks)]
    return num / n_rel, num, float(n_rel)
