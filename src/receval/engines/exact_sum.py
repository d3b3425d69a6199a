"""Exact sums of ratings, for the ``relevance_threshold="user_mean"`` judgement: each user's
sum is the correctly rounded value of the exact sum of the user's ratings (what
:func:`math.fsum` returns), so the mean, and every judgement made against it, depends neither on
the order of the truth rows nor on the names of the items (a running sum does: ``0.1 + 0.2 +
0.3`` is ``0.6000000000000001`` and ``0.3 + 0.2 + 0.1`` is ``0.6``).

One jitted function, :func:`exact_sum`, is called both by the numba engine's loop (inside
the kernel) and, through :func:`user_sums`, by the host judge
(:func:`receval.engines.judge.relevant_rows`), so the two agree bit for bit.

The algorithm is Shewchuk's non-overlapping partials with the final round-half-even
correction, as CPython's ``math.fsum`` (``Modules/mathmodule.c``), for finite inputs (the
readers drop missing ratings and refuse infinite ones).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def exact_sum(values: np.ndarray, partials: np.ndarray) -> float:
    """The correctly rounded sum of ``values`` (finite floats), as :func:`math.fsum`;
    ``partials``: scratch of at least ``len(values)`` floats (overwritten).

    Example:
        >>> import math
        >>> v = np.array([0.1, 0.2, 0.3])
        >>> exact_sum(v, np.empty(3)), exact_sum(v[::-1].copy(), np.empty(3)), math.fsum(v)
        (0.6, 0.6, 0.6)
    """
    n = 0
    for k in range(len(values)):
        x = values[k]
        i = 0
        for j in range(n):
            y = partials[j]
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                partials[i] = lo
                i += 1
            x = hi
        n = i
        if x != 0.0:
            partials[n] = x
            n += 1
    hi = 0.0
    if n > 0:
        n -= 1
        hi = partials[n]
        lo = 0.0
        while n > 0:
            x = hi
            n -= 1
            y = partials[n]
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                break
        # round half to even: the partials below may push a tie to the other side
        if n > 0 and ((lo < 0.0 and partials[n - 1] < 0.0) or (lo > 0.0 and partials[n - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            if y == x - hi:
                hi = x
    return hi


@numba.njit(cache=True, nogil=True)
def _csr_sums(indptr: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per CSR row: :func:`exact_sum` of its values."""
    n_rows = len(indptr) - 1
    out = np.zeros(n_rows)
    longest = 0
    for r in range(n_rows):
        longest = max(longest, indptr[r + 1] - indptr[r])
    partials = np.empty(max(longest, 1))
    for r in range(n_rows):
        out[r] = exact_sum(values[indptr[r] : indptr[r + 1]], partials)
    return out


def user_sums(owner: np.ndarray, values: np.ndarray, n_users: int) -> np.ndarray:
    """Per user ``0..n_users - 1``: the exact sum (:func:`exact_sum`) of the ``values`` of
    the rows it owns, whatever their order (``0.0`` for a user with no row).

    Example:
        >>> owner = np.array([1, 0, 1, 1])
        >>> user_sums(owner, np.array([0.1, 5.0, 0.2, 0.3]), 3).tolist()
        [5.0, 0.6, 0.0]
    """
    order = np.argsort(owner, kind="stable")
    indptr = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n_users), out=indptr[1:])
    return _csr_sums(indptr, np.ascontiguousarray(values[order], dtype=np.float64))
