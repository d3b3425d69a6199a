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



def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def cumulative(x: Any, op: str) -> Any:
    """Running ``"sum"``, ``"prod"`` or ``"max"`` along the last axis of a 2-d array (numpy or
    torch: the array API has no running product or maximum).

    Example:
        >>> import numpy as np
        >>> cumulative(np.array([[1.0, 3.0, 2.0]]), "max").tolist()
        [[1.0, 3.0, 3.0]]
    """
    if _is_torch(x):
        import torch

        if op == "max":
            return torch.cummax(x, dim=-1).values
        return torch.cumsum(x, dim=-1) if op == "sum" else torch.cumprod(x, dim=-1)
    import numpy as np

    if op == "max":
        return np.maximum.accumulate(x, axis=-1)
    return np.cumsum(x, axis=-1) if op == "sum" else np.cumprod(x, axis=-1)


def flip_last(x: Any) -> Any:
    """``x`` reversed along its last axis (numpy or torch).

    Example:
        >>> import numpy as np
        >>> flip_last(np.array([[1, 2, 3]])).tolist()
        [[3, 2, 1]]
    """
    if _is_torch(x):
        import torch

        return torch.flip(x, dims=(-1,))
    return x[..., ::-1]
