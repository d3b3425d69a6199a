"""Judging truth rows on the host, vectorized: relevance (``relevance_threshold``, the user's
mean rating) and nDCG gains, for the torch engine (:mod:`receval.engines.torch_engine`) and
score matrices (:mod:`receval.scores`). The numba engine judges inside its loop, the same
comparisons on the same sums; the engine-conformance tests hold the three equal.
"""

from __future__ import annotations

import numpy as np

from receval.options import Gain


def relevant_rows(owner: np.ndarray, item_key: np.ndarray, ratings: np.ndarray,
                  threshold: float | str | None, n_users: int) -> np.ndarray:
    """Per truth row: whether it is relevant. ``threshold`` ``None``: every row; a number: a
    rating at least that; ``"user_mean"``: a rating at least the user's mean rating, summed in
    item order (``item_key``) one rating after the other, as the numba engine sums it, so the
    comparison is the same bit for bit. ``owner``: each row's user (``0..n_users - 1``).

    Example:
        >>> owner = np.array([0, 0, 0, 1])
        >>> ratings = np.array([1.0, 3.0, 5.0, 2.0])
        >>> relevant_rows(owner, np.array([2, 1, 0, 0]), ratings, "user_mean", 2).tolist()
        [False, True, True, True]
        >>> relevant_rows(owner, owner, ratings, 3, 2).tolist()
        [False, True, True, False]
    """
    if threshold is None:
        return np.ones(len(ratings), bool)
    if threshold != "user_mean":
        return ratings >= np.float64(threshold)  # a float64 compare, as the engine's
    order = np.lexsort((item_key, owner))
    totals = np.zeros(n_users)
    for i in order.tolist():
        totals[owner[i]] += ratings[i]
    counts = np.maximum(np.bincount(owner, minlength=n_users), 1)
    return ratings >= (totals / counts)[owner]


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
