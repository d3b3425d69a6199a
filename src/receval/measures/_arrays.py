"""Small array helpers the families share (any array namespace: numpy, torch)."""

from __future__ import annotations

import math
from typing import Any

from array_api_compat import device


def as_float(x: Any, xp: Any) -> Any:
    """``x`` as float64 (a copy only when it is not already).

    Example:
        >>> import numpy as np
        >>> as_float(np.array([1, 2]), np).dtype
        dtype('float64')
    """
    return x if x.dtype == xp.float64 else xp.astype(x, xp.float64)


def full(like: Any, value: float, xp: Any) -> Any:
    """A float64 array shaped (and placed) like ``like``, every entry ``value``.

    Example:
        >>> import numpy as np
        >>> full(np.zeros(2), 3.0, np).tolist()
        [3.0, 3.0]
    """
    return xp.full(like.shape, value, dtype=xp.float64, device=device(like))


def undefined_where(cond: Any, value: Any, xp: Any) -> Any:
    """``value`` with NaN where ``cond`` holds.

    Example:
        >>> import numpy as np
        >>> undefined_where(np.array([True, False]), np.array([1.0, 2.0]), np).tolist()
        [nan, 2.0]
    """
    return xp.where(cond, full(value, math.nan, xp), value)


def zero_where(cond: Any, value: Any, xp: Any) -> Any:
    """``value`` with 0.0 where ``cond`` holds.

    Example:
        >>> import numpy as np
        >>> zero_where(np.array([True, False]), np.array([1.0, 2.0]), np).tolist()
        [0.0, 2.0]
    """
    return xp.where(cond, full(value, 0.0, xp), value)

