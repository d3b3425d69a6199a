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


#: devices whose own ``cumsum``, ``cumprod`` and ``scatter_add_`` add in index order
IN_ORDER_DEVICES = frozenset({"cpu"})


def adds_in_order(x: Any) -> bool:
    """Whether torch's own scans and scatter-adds of ``x`` add in index order (on the CPU).

    Example:
        >>> import torch
        >>> adds_in_order(torch.zeros(2))
        True
    """
    return x.device.type in IN_ORDER_DEVICES


#: the widest rows a device adds column by column (one launch per column); wider rows are
#: added on the host (a CUDA scan would add them in a tree order)
DEVICE_SEQUENTIAL_MAX = 2048


def ordered_scan(x: Any, op: str = "sum") -> Any:
    """Running ``"sum"`` or ``"prod"`` of a torch tensor along its last axis, each entry
    combined left to right, as numpy's ``cumsum`` and torch's own on the CPU combine them.

    Why: a float sum depends on its order. CUDA's ``cumsum``/``cumprod`` are tree scans,
    which can change the last bit (seen on an H100: see benchmarks/README.md, "The torch
    engine on a GPU"); on such a device the columns are combined one at a time (every row in
    parallel), or on the host past :data:`DEVICE_SEQUENTIAL_MAX` columns. On the CPU, and for
    whole numbers (booleans, integers), torch's own scan already gives these bits.

    Example:
        >>> import torch
        >>> ordered_scan(torch.tensor([[0.1, 0.2, 0.3]], dtype=torch.float64)).tolist()
        [[0.1, 0.30000000000000004, 0.6000000000000001]]
    """
    import torch

    native = torch.cumsum if op == "sum" else torch.cumprod
    width = x.shape[-1]
    if adds_in_order(x) or not x.is_floating_point() or width <= 2:
        return native(x, dim=-1)
    if width > DEVICE_SEQUENTIAL_MAX:
        return native(x.cpu(), dim=-1).to(x.device)  # the CPU adds in order
    cols = x.movedim(-1, 0).contiguous()
    out = torch.empty_like(cols)
    out[0] = cols[0]
    combine = torch.add if op == "sum" else torch.mul
    for j in range(1, width):
        combine(out[j - 1], cols[j], out=out[j])
    return out.movedim(0, -1)


def cumulative(x: Any, op: str) -> Any:
    """Running ``"sum"``, ``"prod"`` or ``"max"`` along the last axis of a 2-d array (numpy or
    torch: the array API has no running product or maximum); sums and products combine left
    to right on every device (:func:`ordered_scan`).

    Example:
        >>> import numpy as np
        >>> cumulative(np.array([[1.0, 3.0, 2.0]]), "max").tolist()
        [[1.0, 3.0, 3.0]]
    """
    if _is_torch(x):
        import torch

        if op == "max":  # a maximum is exact in any order
            return torch.cummax(x, dim=-1).values
        return ordered_scan(x, op)
    import numpy as np

    if op == "max":
        return np.maximum.accumulate(x, axis=-1)
    return np.cumsum(x, axis=-1) if op == "sum" else np.cumprod(x, axis=-1)


def row_sum(x: Any, xp: Any) -> Any:
    """The sum of each row of a 2-d float array, added left to right (in rank order) on every
    engine and device, so that every door gives the same bits (``numpy.sum`` adds pairwise,
    torch in blocks, CUDA in a tree).

    Example:
        >>> import numpy as np
        >>> row_sum(np.array([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]]), np).tolist()
        [0.6000000000000001, 6.0]
    """
    if x.shape[-1] == 0:
        return xp.sum(x, axis=-1)
    return cumulative(x, "sum")[..., -1]


def power(base: Any, exponent: Any, xp: Any) -> Any:
    """``base ** exponent`` elementwise, by numpy's (libm's) ``pow`` on every engine and
    device, placed like ``exponent``.

    Why: torch's vectorised ``pow`` on the CPU and CUDA's both differ from libm's in the last
    bit for some inputs (``0.8 ** 37``: seen on the CPU), and RBP's weights and ERR's
    stopping probabilities are powers; one function keeps every door on the same bits.

    Example:
        >>> import numpy as np
        >>> power(np.full(2, 0.8), np.array([0.0, 2.0]), np).tolist()
        [1.0, 0.64]
    """
    if not _is_torch(exponent):
        return xp.pow(base, exponent)
    import numpy as np
    import torch

    host = np.power(base.cpu().numpy() if _is_torch(base) else base,
                    exponent.cpu().numpy())
    return torch.from_numpy(np.asarray(host, dtype=np.float64)).to(exponent.device)


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
