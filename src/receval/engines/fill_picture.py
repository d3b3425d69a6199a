"""The engines' kernel that fills the per-user picture every metric is derived from
(:class:`receval.picture.Picture`; docs/design.md, "the one idea").

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
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np

_F = TypeVar("_F", bound=Callable[..., Any])

#: numba's ``njit`` for a function that only other jitted functions call: cached, no GIL,
#: and no CPython wrapper (the wrapper unboxes and boxes every argument: code compiled on a
#: first run for calls that never come from Python)
inner_jit: Callable[[_F], _F] = cast(Any, numba.njit)(cache=True, nogil=True,
                                                       no_cpython_wrapper=True)

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


@inner_jit
def build_picture(
    scores: np.ndarray,
    rel: np.ndarray,
    gain: np.ndarray,
    n_ranks: int,
    log2_rank: np.ndarray,
    hits: np.ndarray,
    ap_sum: np.ndarray,
    dcg: np.ndarray,
    first: np.ndarray,
    rr_sum: np.ndarray,
) -> None:
    """Fill the prefix sums for the first ``n_ranks`` ranks of a list sorted by score, every
    tie policy but ``average`` (:func:`build_picture_average`: the kernel compiles only the
    one its request needs).

    ``scores``, ``rel`` (0/1) and ``gain`` are in rank order and cover the whole list; the
    output arrays have length ``>= n_ranks + 1``. ``log2_rank[j]`` is ``log2(j + 2)``, the
    discount of rank ``j + 1`` (see :func:`log2_ranks`: a table, because a ``log2`` per rank
    costs more than the rest).
    """
    hits[0] = ap_sum[0] = dcg[0] = first[0] = rr_sum[0] = 0.0
    # the sums only move at relevant ranks (a gain is 0 unless its item is relevant):
    # elsewhere they are carried over, which is what adding the zero terms would give.
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


@inner_jit
def build_picture_average(
    scores: np.ndarray,
    rel: np.ndarray,
    gain: np.ndarray,
    n_ranks: int,
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
    """:func:`build_picture` under ``average`` ties: each sum the expectation over the orders
    of tied items, and the ``group_*`` arrays per rank (tie groups may extend past
    ``n_ranks``: ``scores``, ``rel`` and ``gain`` cover the whole list).
    """
    n_list = len(scores)
    hits[0] = ap_sum[0] = dcg[0] = first[0] = rr_sum[0] = 0.0
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


@inner_jit
def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1.0) - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0)
