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
    counts = np.bincount(owner, minlength=n_users)
    totals = _sums_in_item_order(owner, item_key, ratings, counts)
    return ratings >= (totals / np.maximum(counts, 1))[owner]


def _sums_in_item_order(owner: np.ndarray, item_key: np.ndarray, ratings: np.ndarray,
                        counts: np.ndarray) -> np.ndarray:
    """Each user's ratings summed in item order, one after the other (the kernel's order,
    so the same bits as a loop): step ``j`` adds every user's ``j``-th rating at once, a
    step per rank of the longest truth rather than a Python step per row.

    Example:
        >>> owner = np.array([0, 1, 0, 0])
        >>> _sums_in_item_order(owner, np.array([3, 0, 1, 2]), np.array([0.3, 5.0, 0.1, 0.2]),
        ...                     np.bincount(owner)).tolist()
        [0.6000000000000001, 5.0]
    """
    values = ratings[np.lexsort((item_key, owner))]  # grouped by user, in item order
    starts = np.cumsum(counts) - counts
    # users by their number of ratings, most first: those still adding at step j are a prefix
    by_count = np.argsort(-counts, kind="stable")
    descending = -counts[by_count]
    totals = np.zeros(len(counts))
    for j in range(int(counts.max(initial=0))):
        adding = by_count[: np.searchsorted(descending, -j, side="left")]
        totals[adding] += values[starts[adding] + j]
    return totals


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
