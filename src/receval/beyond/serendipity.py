"""Serendipity, three definitions (``BeyondOptions.serendipity``):

- ``"auralist"`` (Zhang et al., Auralist, WSDM 2012, as Microsoft Recommenders
  ``user_serendipity``): mean over i in S_u,k of (1 - mean_{j in train_u} sim(i, j)) · rel(i).
  Undefined for a user without training items or an empty list.
- ``"rectools"`` (RecTools ``Serendipity``, after Kaminskas & Bridge, TiiS 2016): mean over
  the listed items (position r = 1..m) of max(p(r) - pu(i), 0) · rel(i), with
  p(r) = (n + 1 - r) / n, pu(i) = (n + 1 - poprank(i)) / n (0 for an item without training
  rows), n = |I|, poprank the dense rank of the training interaction counts, most popular 1.
  RecTools divides by the list's length (its formula says k; they agree on full lists).
- ``"evidently"``: 1 - Σ_{j in train_u, i in S_u,k ∩ R_u} sim(i, j) / |train_u|; normalised by
  |train_u| only, so it can be negative. Undefined without training items or without a
  relevant listed item (Evidently leaves those users out).

rel(i) = 1 when i is in the user's truth (or for every item, ``serendipity_relevance="all"``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from receval.beyond.similarity import FEATURES, SimArrays, cooc_sim, feat_dot
from receval.parallel import block_bounds, run_blocks

AURALIST = 0
RECTOOLS = 1
EVIDENTLY = 2


@numba.njit(cache=True, nogil=True)
def _sim(i: int, j: int, mode: int, feats: np.ndarray, ptr: np.ndarray, idx: np.ndarray,
         val: np.ndarray, diag: np.ndarray) -> float:
    if mode == FEATURES:
        return feat_dot(i, j, feats)
    return cooc_sim(i, j, ptr, idx, val, diag)


@numba.njit(cache=True, nogil=True)
def _serendipity_block(block: int, lo: int, hi: int, top: np.ndarray, kind: int,
                       all_relevant: bool, r_ptr: np.ndarray, r_items: np.ndarray,
                       t_ptr: np.ndarray, t_items: np.ndarray, mode: int, feats: np.ndarray,
                       ptr: np.ndarray, idx: np.ndarray, val: np.ndarray, diag: np.ndarray,
                       pop_rank: np.ndarray, n_cat: float, mark: np.ndarray,
                       out: np.ndarray) -> None:
    for r in range(lo, hi):
        tag = r + 1
        for p in range(r_ptr[r], r_ptr[r + 1]):
            mark[r_items[p]] = tag
        n_train = t_ptr[r + 1] - t_ptr[r]
        m = 0
        hits = 0
        total = 0.0
        for pos in range(top.shape[1]):
            i = top[r, pos]
            if i < 0:
                continue
            m += 1
            rel = 1.0 if (all_relevant or mark[i] == tag) else 0.0
            if kind == RECTOOLS:
                p_user = (n_cat + 1.0 - (pos + 1)) / n_cat
                p_any = (n_cat + 1.0 - pop_rank[i]) / n_cat if pop_rank[i] > 0 else 0.0
                total += max(p_user - p_any, 0.0) * rel
                continue
            if rel == 0.0 or n_train == 0:
                continue
            hits += 1
            s = 0.0
            for p in range(t_ptr[r], t_ptr[r + 1]):
                s += _sim(i, t_items[p], mode, feats, ptr, idx, val, diag)
            if kind == AURALIST:
                total += (1.0 - s / n_train) * rel
            else:
                total += s
        if kind == RECTOOLS:
            out[r] = total / m if m > 0 else math.nan
        elif n_train == 0 or (kind == AURALIST and m == 0) or (kind == EVIDENTLY
                                                               and hits == 0):
            out[r] = math.nan
        elif kind == AURALIST:
            out[r] = total / m
        else:
            out[r] = 1.0 - total / n_train


def popularity_rank(interactions: np.ndarray) -> np.ndarray:
    """Dense rank of the training interaction counts, most popular 1; 0 for items without
    training rows (RecTools ``_get_item_popularity_ranks``).

    Example:
        >>> popularity_rank(np.array([5, 0, 2, 5])).tolist()
        [1, 0, 2, 1]
    """
    counts = np.asarray(interactions, dtype=np.int64)
    distinct = np.unique(counts[counts > 0])[::-1]
    rank = np.zeros(len(counts), dtype=np.int64)
    has = counts > 0
    rank[has] = len(distinct) - np.searchsorted(distinct[::-1], counts[has])
    return rank


def serendipity(top: np.ndarray, *, kind: str, relevant: tuple[np.ndarray, np.ndarray],
                train: tuple[np.ndarray, np.ndarray] | None, sim: SimArrays | None,
                interactions: np.ndarray, n_catalogue: int, all_relevant: bool = False
                ) -> np.ndarray:
    """Per user serendipity of the lists ``top`` under definition ``kind``.

    ``relevant`` and ``train`` are per-row CSRs ``(indptr, items)``; ``sim`` is needed by
    ``"auralist"`` and ``"evidently"``; ``interactions`` and ``n_catalogue`` by
    ``"rectools"``.

    Example:
        >>> top = np.array([[0, 1]])
        >>> rel = (np.array([0, 1]), np.array([1]))
        >>> serendipity(top, kind="rectools", relevant=rel, train=None, sim=None,
        ...             interactions=np.array([3, 1]), n_catalogue=2).tolist()
        [0.0]
    """
    n = top.shape[0]
    n_items = len(interactions)
    code = {"auralist": AURALIST, "rectools": RECTOOLS, "evidently": EVIDENTLY}[kind]
    if train is None:
        train = (np.zeros(n + 1, np.int64), np.zeros(0, np.int64))
    if sim is None:
        feats, ptr = np.zeros((0, 0)), np.zeros(1, np.int64)
        idx, val, diag, mode = np.zeros(0, np.int64), np.zeros(0), np.zeros(0), FEATURES
    else:
        feats, ptr, idx, val, diag, mode = (sim.feats, sim.ptr, sim.idx, sim.val, sim.diag,
                                            sim.mode)
    ranks = popularity_rank(interactions).astype(np.float64)
    out = np.empty(n, dtype=np.float64)
    bounds = block_bounds(n, 4_096)
    marks = [np.zeros(n_items, dtype=np.int64) for _ in bounds]

    def one(block: int, lo: int, hi: int) -> None:
        _serendipity_block(block, lo, hi, top, code, all_relevant, relevant[0], relevant[1],
                           train[0], train[1], mode, feats, ptr, idx, val, diag, ranks,
                           float(n_catalogue), marks[block], out)

    run_blocks(one, bounds)
    return out
