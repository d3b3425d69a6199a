"""F-beta = (1 + b^2) P R / (b^2 P + R); 0 when P = R = 0; undefined when P or R is."""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def fbeta(p: float, r: float, beta: float) -> float:
    """F-beta from a precision and a recall (NaN in, NaN out).

    Example:
        >>> round(fbeta(0.5, 1.0, 1.0), 4)
        0.6667
    """
    if math.isnan(p) or math.isnan(r):
        return np.nan
    if p + r == 0.0:
        return 0.0
    b2 = beta * beta
    return (1.0 + b2) * p * r / (b2 * p + r)
