"""Intra-list diversity and personalization.

- diversity@k (u) = 1 - mean over unordered pairs {i, j}, i != j, of S_u,k of sim(i, j)
  (Ziegler et al., "Improving recommendation lists through topic diversification", WWW 2005;
  Microsoft Recommenders ``user_diversity``). Lists of fewer than two items: NaN (then the
  ``empty`` policy; LensKit) or 0 (RecTools), ``BeyondOptions.diversity_short``.
  ``similarity="hamming"``: the mean Hamming distance of the raw feature values instead
  (RecTools ``IntraListDiversity`` with ``PairwiseHammingDistanceCalculator``), O(k²·F).
  Cost: with feature cosine, the sum over the m(m-1)/2 pairs is (|Σ x_i|² - Σ |x_i|²) / 2 of
  the unit rows x_i: O(k·F) a user, not O(k²·F). With co-occurrence it is O(k² log d) a user
  (d: the items a row of the co-occurrence matrix holds); 1M users at k=100 is 5·10⁹ lookups,
  so the docs give the measured time and suggest features or a smaller k.
- personalization@k = 1 - mean over unordered pairs of users {u, v} of |S_u,k ∩ S_v,k| / k
  (Evidently ``PersonalizationMetric``): the sum of the overlaps over all pairs equals
  Σ_i c_i (c_i - 1) / 2, c_i the lists holding item i, so it is exact in O(U·k), with no
  sampling of pairs. Users with an empty list are left out; NaN for fewer than two users.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from receval.beyond._lists import exposure
from receval.beyond.similarity import FEATURES, HAMMING, SimArrays, cooc_sim, hamming
from receval.parallel import block_bounds, run_blocks


@numba.njit(cache=True, nogil=True)
def _diversity_block(block: int, lo: int, hi: int, top: np.ndarray, mode: int,
                     feats: np.ndarray, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray,
                     diag: np.ndarray, short: float, out: np.ndarray) -> None:
    n_f = feats.shape[1]
    acc = np.zeros(max(n_f, 1), dtype=np.float64)
    for r in range(lo, hi):
        m = 0
        for j in range(top.shape[1]):
            if top[r, j] >= 0:
                m += 1
        if m < 2:
            out[r] = short
            continue
        if mode == FEATURES:
            acc[:] = 0.0
            sq = 0.0
            for j in range(top.shape[1]):
                c = top[r, j]
                if c < 0:
                    continue
                for f in range(n_f):
                    x = feats[c, f]
                    acc[f] += x
                    sq += x * x
            tot = 0.0
            for f in range(n_f):
                tot += acc[f] * acc[f]
            pair_sum = (tot - sq) / 2.0
        else:
            pair_sum = 0.0
            for a in range(top.shape[1]):
                ca = top[r, a]
                if ca < 0:
                    continue
                for b in range(a + 1, top.shape[1]):
                    cb = top[r, b]
                    if cb < 0:
                        continue
                    if mode == HAMMING:
                        pair_sum += hamming(ca, cb, feats)
                    else:
                        pair_sum += cooc_sim(ca, cb, ptr, idx, val, diag)
        if mode == HAMMING:  # a distance: its mean is the diversity
            out[r] = pair_sum / (m * (m - 1) / 2.0)
        else:
            out[r] = 1.0 - pair_sum / (m * (m - 1) / 2.0)


def per_item(values: np.ndarray, top: np.ndarray) -> np.ndarray:
    """Diversity with the pairs' sum divided by the list's length m instead of the number of
    pairs (Evidently's ``DiversityMetric``): the mean over pairs times (m - 1) / 2; 0 for a
    list of one item (no pair).

    Example:
        >>> per_item(np.array([1.0, 1.0, np.nan]), np.array([[0, 1, -1], [0, 1, 2], [0, -1, -1]]))
        array([0.5, 1. , 0. ])
    """
    m = (np.asarray(top) >= 0).sum(axis=1)
    return np.where(m >= 2, np.asarray(values, dtype=np.float64) * (m - 1) / 2.0, 0.0)


def diversity(top: np.ndarray, sim: SimArrays, *, short: str = "undefined") -> np.ndarray:
    """Per user, 1 - the mean similarity of the pairs of listed items.

    Example:
        >>> from receval.beyond.context import context
        >>> feats = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        >>> ctx = context(np.zeros(0, int), np.zeros(0, int), 3, features=feats)
        >>> diversity(np.array([[0, 1, 2], [0, -1, -1]]), SimArrays(ctx, "features")).tolist()
        [0.6666666666666667, nan]
    """
    n = top.shape[0]
    out = np.empty(n, dtype=np.float64)
    fill = math.nan if short == "undefined" else 0.0
    run_blocks(_diversity_block, block_bounds(n, 4_096), top, sim.mode, sim.feats, sim.ptr,
               sim.idx, sim.val, sim.diag, fill, out)
    return out


def personalization(top: np.ndarray, n_items: int, k: int) -> float:
    """1 - the mean overlap |S_u ∩ S_v| / k over pairs of users with a non-empty list.

    Example:
        >>> personalization(np.array([[0, 1], [0, 2], [3, 4]]), 5, 2)
        0.8333333333333334
    """
    users = int((top >= 0).any(axis=1).sum())
    if users < 2:
        return math.nan
    c = exposure(top, n_items)
    shared = int((c * (c - 1)).sum())  # twice the overlaps summed over unordered pairs
    return 1.0 - shared / (users * (users - 1) * k)
