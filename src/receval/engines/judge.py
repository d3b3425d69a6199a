"""Judging truth rows on the host, vectorized: relevance (``relevance_threshold``, the user's
mean rating) and nDCG gains, for the torch engine (:mod:`receval.engines.torch_engine`), score
matrices (:mod:`receval.scores`), the graded-gain check (:mod:`receval.shaping`) and the
beyond-accuracy and debiased metrics (:func:`relevant_items`, each user's relevant items). The
numba engine judges inside its loop, the same comparisons on the same exact sums
(:mod:`receval.engines.exact_sum`); the engine-conformance tests hold them equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from receval.options import Gain


def relevant_rows(owner: np.ndarray, ratings: np.ndarray, threshold: float | str | None,
                  n_users: int) -> np.ndarray:
    """Per truth row: whether it is relevant. ``threshold`` ``None``: every row; a number: a
    rating at least that; ``"user_mean"``: a rating at least the user's mean rating, the
    exact sum of the user's ratings correctly rounded (:func:`user_means`) over their count,
    so that no judgement depends on the order of the rows or the names of the items.
    ``owner``: each row's user (``0..n_users - 1``). Every door judges here (the numba
    engine's loop computes the same mean with the same function, bit for bit).

    Example:
        >>> owner = np.array([0, 0, 0, 1])
        >>> ratings = np.array([1.0, 3.0, 5.0, 2.0])
        >>> relevant_rows(owner, ratings, "user_mean", 2).tolist()
        [False, True, True, True]
        >>> relevant_rows(owner, ratings, 3, 2).tolist()
        [False, True, True, False]
    """
    if threshold is None:
        return np.ones(len(ratings), bool)
    if threshold != "user_mean":
        return ratings >= np.float64(threshold)  # a float64 compare, as the engine's
    return ratings >= user_means(owner, ratings, n_users)[owner]


def user_means(owner: np.ndarray, ratings: np.ndarray, n_users: int) -> np.ndarray:
    """Per user ``0..n_users - 1``: the mean of its ratings, the exactly summed ratings
    (:func:`receval.engines.exact_sum.exact_sum`, as :func:`math.fsum`) over their count
    (``nan`` for a user without a rating). The row order does not matter: ``0.1, 0.2, 0.3``
    in any order has the mean ``fsum / 3``, not ``(0.1 + 0.2 + 0.3) / 3 =
    0.20000000000000004``.

    Example:
        >>> owner = np.array([0, 0, 0])
        >>> user_means(owner, np.array([0.1, 0.2, 0.3]), 1).tolist()
        [0.19999999999999998]
        >>> user_means(owner, np.array([0.3, 0.1, 0.2]), 2).tolist()
        [0.19999999999999998, nan]
    """
    from receval.engines.exact_sum import user_sums  # numba: only for this threshold

    owner = np.asarray(owner, dtype=np.int64)
    counts = np.bincount(owner, minlength=n_users)
    totals = user_sums(owner, np.asarray(ratings, dtype=np.float64), n_users)
    with np.errstate(invalid="ignore", divide="ignore"):
        return totals / counts


def relevant_items(indptr: np.ndarray, items: np.ndarray, values: np.ndarray | None,
                   rows: np.ndarray, threshold: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per selected user (``rows``: user codes of a per-user CSR), their relevant truth items:
    every item without a ``threshold``, else those rated at least it (``"user_mean"``: the
    user's mean rating), judged by :func:`relevant_rows`, as every accuracy metric is: the
    truth of the beyond-accuracy metrics (:mod:`receval.beyond.attach`) and of the debiased
    ones (:mod:`receval.debias`).

    Example:
        >>> p, i = relevant_items(np.array([0, 2, 3]), np.array([5, 6, 7]),
        ...                       np.array([1.0, 4.0, 5.0]), np.array([1, 0]), 3.0)
        >>> p.tolist(), i.tolist()
        ([0, 1, 2], [7, 6])
    """
    starts, stops = indptr[rows], indptr[rows + 1]
    lens = stops - starts
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    take = np.repeat(starts - ptr[:-1], lens) + np.arange(ptr[-1])
    got = np.asarray(items, dtype=np.int64)[take]
    if threshold is None or values is None:
        return ptr, got
    owner = np.repeat(np.arange(len(rows)), lens)
    # the one judge (the engines' own): the same relevance as the accuracy metrics'
    keep = relevant_rows(owner, np.asarray(values, dtype=np.float64)[take], threshold, len(rows))
    new_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner[keep], minlength=len(rows)), out=new_ptr[1:])
    return new_ptr, got[keep]


def row_gains(ratings: np.ndarray, relevant: np.ndarray, gain: Gain) -> np.ndarray:
    """Per truth row: its nDCG gain, 0 unless relevant; then 1 (``binary``), the rating
    (``linear``) or ``2^rating - 1`` (``exponential``; ``inf`` where that overflows: the
    callers refuse or rescale those).

    Example:
        >>> row_gains(np.array([3.0, 1.0]), np.array([True, False]), "exponential").tolist()
        [7.0, 0.0]
    """
    if gain == "binary":
        return relevant.astype(np.float64)
    with np.errstate(over="ignore"):
        gains = ratings if gain == "linear" else np.power(2.0, ratings) - 1.0
    return np.where(relevant, gains, 0.0)
