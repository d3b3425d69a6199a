"""Average precision@k = sum_{j<=k} P@j * h_j / N, N chosen by ``ap_normalizer``.

``min_k_relevant`` (default): N = min(k, L), the TensorFlow / Kaggle ``apk`` / Spark rule.
``relevant``: N = L (trec_eval ``map_cut``). ``hits``: N = hits@k (torchmetrics; 0 when no
hit). ``k``: N = k. Undefined when L = 0. MAP@k is the mean of AP@k over users.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from receval.measures._cut import NO_CUTOFF, cut

AP_MIN_K_RELEVANT = 0
AP_RELEVANT = 1
AP_HITS = 2
AP_K = 3
AP_CODES = {
    "min_k_relevant": AP_MIN_K_RELEVANT,
    "relevant": AP_RELEVANT,
    "hits": AP_HITS,
    "k": AP_K,
}


@numba.njit(cache=True, nogil=True)
def average_precision(
    ap_sum: np.ndarray,
    hits: np.ndarray,
    n_ranks: int,
    n_list: int,
    n_rel: int,
    k: int,
    normalizer: int,
    average_ties: bool,
    group_start: np.ndarray,
    group_size: np.ndarray,
    group_rel: np.ndarray,
    group_before: np.ndarray,
) -> tuple[float, float, float]:
    """(value, numerator, denominator)."""
    if n_rel == 0:
        return np.nan, 0.0, 0.0
    c = cut(k, n_ranks)
    num = ap_sum[c]
    if normalizer == AP_MIN_K_RELEVANT:
        den = float(n_rel if k == NO_CUTOFF else min(k, n_rel))
    elif normalizer == AP_RELEVANT:
        den = float(n_rel)
    elif normalizer == AP_K:
        den = float(n_list if k == NO_CUTOFF else k)
    else:
        den = hits[c]
        if average_ties and c > 0 and group_start[c - 1] + group_size[c - 1] > c:
            value = _expected_ap_over_hits(ap_sum, c, group_start[c - 1], group_size[c - 1],
                                           group_rel[c - 1], group_before[c - 1])
            return value, num, den
    if den == 0.0:
        return 0.0, num, 0.0
    return num / den, num, den


@numba.njit(cache=True, nogil=True)
def _expected_ap_over_hits(
    ap_sum: np.ndarray, c: int, s: int, n: int, r: int, before: int
) -> float:
    """E[AP numerator / hits@c] when the cut at ``c`` falls inside a tie group.

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
