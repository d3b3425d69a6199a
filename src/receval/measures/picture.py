"""The per-user picture every metric is derived from (docs/design.md, "the one idea").

For one user's ranked list, cut at ``K`` ranks, the picture is a handful of prefix sums over
ranks ``j = 1..K`` (index 0 holds 0, index ``j`` the sum over the first ``j`` ranks):

- ``hits``: relevant items (the *expected* number under ``average`` ties);
- ``ap_sum``: ``sum h_j * hits@j / j`` (the numerator of average precision);
- ``dcg``: ``sum gain_j / log2(j + 1)``;
- ``first``: probability that the first relevant item sits at or before rank ``j``;
- ``rr_sum``: ``sum P(first relevant at j) / j``.

Every metric at every cutoff is then a lookup in these sums (see the family modules). Under
the ``average`` tie policy each sum holds the exact expectation over all orderings of tied
items (McSherry & Najork, ECIR 2008): linear terms use the tie group's mean relevance; the AP
term uses ``E[h_j * hits@j] = (r/n) * (hits_before + 1 + t (r-1)/(n-1))`` for the ``t``-th
position of a group of ``n`` tied items holding ``r`` relevant ones; the first-hit
probability follows the hypergeometric law inside the first group holding a relevant item.
Under ``average`` ties the ``group_*`` arrays record, per rank, its tie group (start, size,
relevant count, relevant items before it) for the one quantity that is not a prefix sum: AP
divided by its own hits (other tie policies leave them untouched: every group is one item).
"""

from __future__ import annotations

import math

import numba
import numpy as np

TIES_STABLE = 0
TIES_ITEM = 1
TIES_PESSIMISTIC = 2
TIES_OPTIMISTIC = 3
TIES_AVERAGE = 4

TIE_CODES = {
    "stable": TIES_STABLE,
    "item": TIES_ITEM,
    "pessimistic": TIES_PESSIMISTIC,
    "optimistic": TIES_OPTIMISTIC,
    "average": TIES_AVERAGE,
}


@numba.njit(cache=True, nogil=True)
def build_picture(
    scores: np.ndarray,
    rel: np.ndarray,
    gain: np.ndarray,
    n_ranks: int,
    average_ties: bool,
    log2_rank: np.ndarray,
    hits: np.ndarray,
    ap_sum: np.ndarray,
    dcg: np.ndarray,
    first: np.ndarray,
    rr_sum: np.ndarray,
    group_start: np.ndarray,
    group_size: np.ndarray,
    group_rel: np.ndarray,
    group_before: np.ndarray,
) -> None:
    """Fill the prefix sums for the first ``n_ranks`` ranks of a list sorted by score.

    ``scores``, ``rel`` (0/1) and ``gain`` are in rank order and cover the whole list (tie
    groups may extend past ``n_ranks``); the output arrays have length ``>= n_ranks + 1``.
    ``log2_rank[j]`` is ``log2(j + 2)``, the discount of rank ``j + 1`` (see
    :func:`log2_ranks`: a table, because a ``log2`` per rank costs more than the rest).
    """
    n_list = len(scores)
    hits[0] = ap_sum[0] = dcg[0] = first[0] = rr_sum[0] = 0.0
    if not average_ties:
        # the sums only move at relevant ranks (a gain is 0 unless its item is relevant):
        # elsewhere they are carried over, which is what adding the zero terms would give.
        # The group arrays are only read under ``average`` ties.
        h = ap = d = f = rr = 0.0
        for j in range(n_ranks):
            h_j = rel[j]
            if h_j != 0.0:
                h += h_j
                rank = j + 1.0
                ap += h_j * h / rank
                d += gain[j] / log2_rank[j]
                if h == 1.0:
                    f += 1.0
                    rr += 1.0 / rank
            hits[j + 1] = h
            ap_sum[j + 1] = ap
            dcg[j + 1] = d
            first[j + 1] = f
            rr_sum[j + 1] = rr
        return
    j = 0
    before = 0  # relevant items in the tie groups before this one (a fixed number)
    while j < n_ranks:
        s = j
        e = j + 1
        while e < n_list and scores[e] == scores[s]:
            e += 1
        n = e - s
        r = 0
        g = 0.0
        for i in range(s, e):
            r += int(rel[i])
            g += gain[i]
        p_rel = r / n
        mean_gain = g / n
        survive = 1.0  # P(the first t items of this group are all non-relevant)
        for pos in range(s, min(e, n_ranks)):
            t = pos - s
            rank = pos + 1.0
            hits[pos + 1] = hits[pos] + p_rel
            term = 0.0
            if r > 0:
                inner = t * (r - 1) / (n - 1) if n > 1 else 0.0
                term = p_rel * (before + 1.0 + inner)
            ap_sum[pos + 1] = ap_sum[pos] + term / rank
            dcg[pos + 1] = dcg[pos] + mean_gain / log2_rank[pos]
            p_first = 0.0
            if before == 0 and r > 0:
                p_first = survive * r / (n - t)
                survive *= (n - r - t) / (n - t)
            first[pos + 1] = first[pos] + p_first
            rr_sum[pos + 1] = rr_sum[pos] + p_first / rank
            group_start[pos] = s
            group_size[pos] = n
            group_rel[pos] = r
            group_before[pos] = before
        before += r
        j = e


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


@numba.njit(cache=True, nogil=True)
def expected_ap_over_hits(
    ap_sum: np.ndarray, c: int, s: int, n: int, r: int, before: int
) -> float:
    """E[AP numerator / hits@c] when the cut at ``c`` falls inside a tie group (the
    picture's ``ap_over_hits``, for ``ap_normalizer="hits"`` under ``average`` ties).

    The group starts at rank index ``s``, has ``n`` items, ``r`` relevant, ``m = c - s`` of
    them inside the cut. Y, the relevant items among those m, is hypergeometric; given Y = y
    each in-cut position is relevant with probability y/m, and earlier groups are independent.
    """
    m = c - s
    total = 0.0
    log_norm = _log_comb(n, m)
    for y in range(max(0, m - (n - r)), min(r, m) + 1):
        if before + y == 0:
            continue
        p_y = math.exp(_log_comb(r, y) + _log_comb(n - r, m - y) - log_norm)
        inside = 0.0
        if y > 0:
            for t in range(m):
                inner = t * (y - 1) / (m - 1) if m > 1 else 0.0
                inside += (y / m) * (before + 1.0 + inner) / (s + t + 1.0)
        total += p_y * (ap_sum[s] + inside) / (before + y)
    return total


@numba.njit(cache=True, nogil=True)
def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1.0) - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0)
