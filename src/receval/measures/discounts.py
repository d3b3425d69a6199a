"""The DCG discount and the ideal DCG: the definitions nDCG reads
(:func:`receval.measures.ndcg.ideal_of_k`) and the engines fill the picture with
(:mod:`receval.engines.fill_picture`), compiled once so both sum the same bits."""

from __future__ import annotations

import numba
import numpy as np

#: the ``discount`` option's codes (:func:`log2_ranks`)
DISCOUNT_LOG2 = 0
DISCOUNT_LOG2_MAX2 = 1
DISCOUNT_GEOMETRIC = 2
DISCOUNT_CODES = {"log2": DISCOUNT_LOG2, "log2_max2": DISCOUNT_LOG2_MAX2,
                  "geometric": DISCOUNT_GEOMETRIC}


@numba.njit(cache=True, nogil=True)
def log2_ranks(n: int, discount: int = DISCOUNT_LOG2, persistence: float = 0.9) -> np.ndarray:
    """The DCG discounts' denominators for ranks ``r = j + 1 = 1..n``: ``log2(r + 1)``
    (``discount`` :data:`DISCOUNT_LOG2`), ``log2(max(r, 2))`` (:data:`DISCOUNT_LOG2_MAX2`,
    LensKit's: ranks 1 and 2 both divide by 1) or ``p^-(r - 1)`` (:data:`DISCOUNT_GEOMETRIC`,
    RBP's browsing model with persistence ``p``: the gain at rank r weighs ``p^(r - 1)``).

    Example:
        >>> log2_ranks(3).tolist()
        [1.0, 1.584962500721156, 2.0]
        >>> log2_ranks(3, DISCOUNT_LOG2_MAX2).tolist()
        [1.0, 1.0, 1.584962500721156]
        >>> log2_ranks(3, DISCOUNT_GEOMETRIC, 0.5).tolist()
        [1.0, 2.0, 4.0]
    """
    out = np.empty(n)
    for j in range(n):
        r = j + 1.0
        if discount == DISCOUNT_GEOMETRIC:
            out[j] = persistence ** -j
        elif discount == DISCOUNT_LOG2_MAX2:
            out[j] = np.log2(max(r, 2.0))
        else:
            out[j] = np.log2(r + 1.0)
    return out


@numba.njit(cache=True, nogil=True)
def ideal_dcg(gains_of_relevant: np.ndarray, log2_rank: np.ndarray, out: np.ndarray) -> None:
    """Prefix sums of the DCG of the ideal ordering (gains sorted, highest first).

    ``log2_rank`` is :func:`log2_ranks` of at least ``len(gains_of_relevant)`` ranks.
    """
    order = stable_argsort(gains_of_relevant)
    n = len(order)
    out[0] = 0.0
    for j in range(n):
        out[j + 1] = out[j] + gains_of_relevant[order[n - 1 - j]] / log2_rank[j]


_RUN = 16  # runs sorted by insertion before merging


@numba.njit(cache=True, nogil=True)
def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """The permutation that sorts ``keys`` ascending, equal keys in their order (a merge sort).

    numba's own ``np.argsort``/``np.sort`` compile a generic quicksort per array type, seconds
    each on a first run; this small loop compiles in a fraction of that.

    Example:
        >>> stable_argsort(np.array([3.0, 1.0, 3.0, 0.5])).tolist()
        [3, 1, 0, 2]
    """
    n = len(keys)
    idx = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for i in range(n):
        idx[i] = i
    for lo in range(0, n, _RUN):
        hi = min(lo + _RUN, n)
        for i in range(lo + 1, hi):
            x = idx[i]
            j = i
            while j > lo and keys[x] < keys[idx[j - 1]]:
                idx[j] = idx[j - 1]
                j -= 1
            idx[j] = x
    src = idx
    dst = tmp
    width = _RUN
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            o = lo
            while i < mid and j < hi:
                if keys[src[j]] < keys[src[i]]:
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < hi:
                dst[o] = src[j]
                j += 1
                o += 1
        src, dst = dst, src
        width *= 2
    return src
