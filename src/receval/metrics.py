"""scikit-learn-style metric functions on arrays: ``precision_at_k(y_true, y_score, k)``.

``y_true`` holds relevance labels (0 = not relevant; a positive number is relevant and is its
graded gain), ``y_score`` the predicted scores, both the same shape. A 1-D pair is one user; a
2-D pair has one row per user and returns the mean over rows, or the per-row values with
``average=None``. Every keyword option of :class:`~receval.options.Options` is accepted, and
the numbers come from the same engine and definitions as :func:`receval.evaluate`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from receval.data.csr import CSR
from receval.data.encode import Dictionary
from receval.evaluation import evaluate_prepared
from receval.exceptions import ReceValError, UndefinedMetricWarning
from receval.measures.spec import parse_metric
from receval.options import Options
from receval.shaping import Prepared

__all__ = [
    "average_precision_at_k",
    "f1_at_k",
    "fbeta_at_k",
    "hit_rate_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "r_precision",
    "recall_at_k",
    "reciprocal_rank_at_k",
]


def precision_at_k(y_true: Any, y_score: Any, k: int, *, average: str | None = "macro",
                   **options: Any) -> float | np.ndarray:
    """Precision@k: relevant items among the top k, over k (see ``precision_denominator``).

    Example:
        >>> precision_at_k([1, 0, 0, 1, 0, 0], [0.3, 0.9, 0.8, 0.2, 0.1, 0.0], k=5)
        0.4
        >>> precision_at_k([[1, 0], [0, 1]], [[0.9, 0.1], [0.9, 0.1]], k=1, average=None)
        array([1., 0.])
    """
    return _metric(f"P@{_k(k)}", y_true, y_score, average, options)


def recall_at_k(y_true: Any, y_score: Any, k: int, *, average: str | None = "macro",
                **options: Any) -> float | np.ndarray:
    """Recall@k: relevant items among the top k, over the number relevant.

    Example:
        >>> recall_at_k([1, 0, 0, 1, 0, 0], [0.3, 0.9, 0.8, 0.2, 0.1, 0.0], k=3)
        0.5
    """
    return _metric(f"R@{_k(k)}", y_true, y_score, average, options)


def fbeta_at_k(y_true: Any, y_score: Any, k: int, *, beta: float = 1.0,
               average: str | None = "macro", **options: Any) -> float | np.ndarray:
    """F-beta@k of precision@k and recall@k.

    Example:
        >>> round(fbeta_at_k([1, 0, 1], [0.9, 0.8, 0.1], k=2, beta=2.0), 4)
        0.5
    """
    if not (isinstance(beta, int | float) and beta > 0):
        raise ReceValError(f"beta must be a positive number; got {beta!r}")
    return _metric(f"F{float(beta):g}@{_k(k)}", y_true, y_score, average, options)


def f1_at_k(y_true: Any, y_score: Any, k: int, *, average: str | None = "macro",
            **options: Any) -> float | np.ndarray:
    """F1@k, the harmonic mean of precision@k and recall@k.

    Example:
        >>> f1_at_k([1, 0, 1], [0.9, 0.8, 0.1], k=2)
        0.5
    """
    return _metric(f"F1@{_k(k)}", y_true, y_score, average, options)


def average_precision_at_k(y_true: Any, y_score: Any, k: int | None = None, *,
                           average: str | None = "macro", **options: Any) -> float | np.ndarray:
    """AP@k (``ap_normalizer`` picks the divisor; default min(k, L)); MAP@k over rows.

    Example:
        >>> round(average_precision_at_k([1, 0, 1, 1, 0], [0.9, 0.8, 0.7, 0.6, 0.5], k=4), 4)
        0.8056
    """
    return _metric("AP" if k is None else f"AP@{_k(k)}", y_true, y_score, average, options)


def r_precision(y_true: Any, y_score: Any, *, average: str | None = "macro",
                **options: Any) -> float | np.ndarray:
    """R-precision: precision at a cut equal to the number of relevant items.

    Example:
        >>> r_precision([1, 1, 1, 1, 0, 0], [0.9, 0.8, 0.1, 0.7, 0.6, 0.0])
        0.75
    """
    return _metric("Rprec", y_true, y_score, average, options)


def ndcg_at_k(y_true: Any, y_score: Any, k: int | None = None, *,
              average: str | None = "macro", **options: Any) -> float | np.ndarray:
    """nDCG@k; pass ``gain="linear"`` or ``"exponential"`` to use graded labels.

    Example:
        >>> round(ndcg_at_k([1, 0, 1, 0, 0, 1], [0.6, 0.5, 0.4, 0.3, 0.2, 0.0], k=10), 4)
        0.8711
    """
    return _metric("nDCG" if k is None else f"nDCG@{_k(k)}", y_true, y_score, average, options)


def reciprocal_rank_at_k(y_true: Any, y_score: Any, k: int | None = None, *,
                         average: str | None = "macro", **options: Any) -> float | np.ndarray:
    """Reciprocal rank of the first relevant item within the top k; MRR over rows.

    Example:
        >>> reciprocal_rank_at_k([0, 0, 1], [0.9, 0.8, 0.7])
        0.3333333333333333
    """
    return _metric("RR" if k is None else f"RR@{_k(k)}", y_true, y_score, average, options)


def hit_rate_at_k(y_true: Any, y_score: Any, k: int, *, average: str | None = "macro",
                  **options: Any) -> float | np.ndarray:
    """Hit rate@k: 1 when a relevant item is in the top k.

    Example:
        >>> hit_rate_at_k([[0, 1], [1, 0]], [[0.9, 0.1], [0.9, 0.1]], k=1)
        0.5
    """
    return _metric(f"Hit@{_k(k)}", y_true, y_score, average, options)


# --- the shared path ---------------------------------------------------------------------------


def _k(k: Any) -> Any:
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise ReceValError(f"k must be a positive integer; got {k!r}")
    if k <= 0:
        raise ReceValError(f"k must be a positive integer; got {k}")
    return int(k)


def _metric(name: str, y_true: Any, y_score: Any, average: str | None,
            options: dict[str, Any]) -> float | np.ndarray:
    if average not in ("macro", "micro", None):
        raise ReceValError(f"average={average!r} must be 'macro', 'micro' or None")
    opts = Options(average=average or "macro", **options)  # type: ignore[arg-type]
    truth = np.asarray(y_true, dtype=np.float64)
    score = np.asarray(y_score, dtype=np.float64)
    if truth.shape != score.shape:
        raise ReceValError(f"y_true has shape {truth.shape} but y_score has shape {score.shape}")
    if truth.ndim not in (1, 2) or truth.size == 0:
        raise ReceValError(f"y_true and y_score must be non-empty 1-D or 2-D; got {truth.shape}")
    one_user = truth.ndim == 1
    truth, score = np.atleast_2d(truth), np.atleast_2d(score)
    for what, arr in (("y_true", truth), ("y_score", score)):
        bad = ~np.isfinite(arr)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise ReceValError(f"{what} holds {arr[row, col]} at row {row}, column {col}")
    prepared = _prepare_dense(truth, score)
    with warnings.catch_warnings():
        if average is None:
            warnings.simplefilter("ignore", UndefinedMetricWarning)
        result = evaluate_prepared(prepared, [parse_metric(name)], opts)
    if average is None and not one_user:
        return result.per_user[name].to_numpy()
    return float(result.summary[name])


def _prepare_dense(truth: np.ndarray, score: np.ndarray) -> Prepared:
    n_users, n_items = truth.shape
    rows, cols = np.nonzero(truth > 0)
    t_indptr = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_users), out=t_indptr[1:])
    truth_csr = CSR(t_indptr, cols.astype(np.int64), truth[rows, cols])
    p_indptr = np.arange(0, (n_users + 1) * n_items, n_items, dtype=np.int64)
    items = np.tile(np.arange(n_items, dtype=np.int64), n_users)
    pred_csr = CSR(p_indptr, items, score.ravel().copy())
    everyone = np.ones(n_users, dtype=bool)
    return Prepared(
        truth=truth_csr,
        predictions=pred_csr,
        users=Dictionary(np.arange(n_users)),
        items=Dictionary(None),
        in_truth=everyone,
        in_predictions=everyone,
        rows={"truth": len(cols), "predictions": truth.size, "truth_dropped_missing_rating": 0},
    )
