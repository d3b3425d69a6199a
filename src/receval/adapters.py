"""From the shapes predictions already have to the long tables :func:`receval.evaluate` reads.

Every adapter returns ``(truth, predictions)`` as pyarrow Tables: truth ``user, item, rating``,
predictions ``user, item, score`` (or ``rank``, 1 = best, for top-k index arrays). Row ``i`` of a
matrix is user ``users[i]`` (default ``i``) and column ``j`` is item ``items[j]`` (default ``j``).
Arrays may be numpy, or anything with ``.numpy()`` (TensorFlow) or ``.detach()`` (PyTorch).

Example:
    >>> import numpy as np, scipy.sparse as sp, receval
    >>> truth = sp.csr_matrix(np.array([[1, 0, 0], [0, 0, 1]]))
    >>> scores = np.array([[0.9, 0.5, 0.1], [0.2, 0.8, 0.3]])
    >>> receval.evaluate(*from_matrices(truth, scores), ["P@1", "MRR"]).summary
    {'P@1': 0.5, 'MRR': 0.75}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from receval.exceptions import ReceValError

Tables = tuple[pa.Table, pa.Table]


def from_surprise(predictions: Iterable[Any]) -> Tables:
    """A list of Surprise ``Prediction(uid, iid, r_ui, est, details)`` (what ``algo.test``
    returns) as truth (``r_ui``) and predictions (``est``). A missing ``r_ui`` is a truth row
    with no rating: receval drops and counts it.

    Example:
        >>> from collections import namedtuple
        >>> Prediction = namedtuple("Prediction", "uid iid r_ui est details")
        >>> preds = [Prediction("u1", "i1", 4.0, 3.5, {}), Prediction("u1", "i2", 2.0, 3.9, {})]
        >>> truth, scored = from_surprise(preds)
        >>> truth.to_pylist()[0], scored.column("score").to_pylist()
        ({'user': 'u1', 'item': 'i1', 'rating': 4.0}, [3.5, 3.9])
    """
    rows = list(predictions)
    if not rows:
        raise ReceValError("from_surprise: no prediction")
    try:
        uid, iid, r_ui, est = (list(col) for col in zip(*(tuple(p)[:4] for p in rows),
                                                          strict=True))
    except (TypeError, ValueError):
        raise ReceValError(
            "from_surprise: expected (uid, iid, r_ui, est, details) tuples, as algo.test returns"
        ) from None
    users, items = _ids(uid), _ids(iid)
    rating = pa.array([np.nan if r is None else float(r) for r in r_ui], pa.float64())
    score = pa.array([float(e) for e in est], pa.float64())
    return (pa.table({"user": users, "item": items, "rating": rating}),
            pa.table({"user": users, "item": items, "score": score}))


def from_label_lists(
    labels: Sequence[Sequence[int]] | Any,
    scores: Any,
    *,
    top_k: int | None = None,
    users: Sequence[Any] | None = None,
    items: Sequence[Any] | None = None,
) -> Tables:
    """TensorFlow-style inputs: per row, the list of relevant label indices (a 2-D int array
    padded with ``-1`` works; labels outside ``[0, n_labels)`` are ignored, as TensorFlow does)
    and a ``(n_rows, n_labels)`` score matrix. ``top_k`` keeps only each row's best ``k``
    scores (ties broken by lower label first, as the default stable order).

    Example:
        >>> import numpy as np, receval
        >>> scores = np.array([[0.1, 0.9, 0.8, 0.2, 0.3, 0.05]])
        >>> truth, preds = from_label_lists([[0, 3]], scores)
        >>> receval.evaluate(truth, preds, ["R@3", "R@4", "P@5"]).summary
        {'R@3': 0.0, 'R@4': 0.5, 'P@5': 0.4}
    """
    matrix = _matrix(scores, "scores")
    n_rows, n_labels = matrix.shape
    rows, cols = _label_pairs(labels, n_rows, n_labels)
    truth = _long(rows, cols, np.ones(len(rows)), "rating", users, items)
    return truth, _scores_table(matrix, top_k, None, users, items)


def from_matrices(
    truth: Any,
    scores: Any,
    *,
    top_k: int | None = None,
    exclude: Any = None,
    users: Sequence[Any] | None = None,
    items: Sequence[Any] | None = None,
) -> Tables:
    """A dense ``(n_users, n_items)`` score matrix and a truth matrix (scipy.sparse or dense)
    whose nonzero entries are the truth rows, valued by their entry (a rating or 1).

    ``exclude`` (same shape, e.g. the training interactions) removes those pairs from the
    predictions before ranking; ``top_k`` keeps only each user's best ``k`` scores.

    Example:
        >>> import numpy as np, scipy.sparse as sp
        >>> truth = sp.csr_matrix(np.array([[0, 5.0, 0]]))
        >>> seen = sp.csr_matrix(np.array([[1, 0, 0]]))
        >>> t, p = from_matrices(truth, np.array([[0.9, 0.5, 0.1]]), exclude=seen, top_k=1)
        >>> t.to_pylist(), p.to_pylist()
        ([{'user': 0, 'item': 1, 'rating': 5.0}], [{'user': 0, 'item': 1, 'score': 0.5}])
    """
    matrix = _matrix(scores, "scores")
    rows, cols, values = _nonzero(truth, matrix.shape, "truth")
    mask = None
    if exclude is not None:
        e_rows, e_cols, _ = _nonzero(exclude, matrix.shape, "exclude")
        mask = np.zeros(matrix.shape, dtype=bool)
        mask[e_rows, e_cols] = True
    return (_long(rows, cols, values, "rating", users, items),
            _scores_table(matrix, top_k, mask, users, items))


def from_top_k(
    indices: Any,
    truth: Any = None,
    *,
    labels: Sequence[Sequence[int]] | Any = None,
    n_items: int | None = None,
    users: Sequence[Any] | None = None,
    items: Sequence[Any] | None = None,
) -> Tables:
    """Top-k index arrays: row ``u`` holds user ``u``'s item indices, best first (``-1`` pads a
    short list), with the truth as a matrix (``truth``, sparse or dense) or as label lists
    (``labels``). Predictions get a ``rank`` column (1 = best).

    Example:
        >>> import numpy as np, receval
        >>> truth, preds = from_top_k(np.array([[2, 0, -1]]), labels=[[0]], n_items=3)
        >>> preds.to_pylist()
        [{'user': 0, 'item': 2, 'rank': 1}, {'user': 0, 'item': 0, 'rank': 2}]
        >>> receval.evaluate(truth, preds, ["P@2", "MRR"]).summary
        {'P@2': 0.5, 'MRR': 0.5}
    """
    top = _matrix(indices, "indices")
    if not np.issubdtype(top.dtype, np.integer):
        raise ReceValError(f"from_top_k: indices must be integers; got {top.dtype}")
    if (truth is None) == (labels is None):
        raise ReceValError("from_top_k: pass the truth as a matrix (truth=) or labels=, not both")
    if truth is not None:
        shape = getattr(truth, "shape", None) or np.asarray(truth).shape
        rows, cols, values = _nonzero(truth, (top.shape[0], shape[1]), "truth")
    else:
        width = n_items if n_items is not None else int(max(top.max(), _max_label(labels))) + 1
        rows, cols = _label_pairs(labels, top.shape[0], width)
        values = np.ones(len(rows))
    keep = top >= 0
    p_rows = np.repeat(np.arange(top.shape[0]), top.shape[1])[keep.ravel()]
    p_cols = top[keep]
    ranks = np.tile(np.arange(1, top.shape[1] + 1), top.shape[0])[keep.ravel()]
    return (_long(rows, cols, values, "rating", users, items),
            _long(p_rows, p_cols, ranks.astype(np.int64), "rank", users, items))


# --- helpers ---------------------------------------------------------------------------------


def _matrix(x: Any, name: str) -> np.ndarray:
    """A 2-D numpy array from numpy, PyTorch (``.detach()``) or TensorFlow (``.numpy()``)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    elif hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        x = x.numpy()
    if hasattr(x, "toarray"):
        x = x.toarray()
    arr = np.asarray(x)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ReceValError(f"{name} must be a 2-D array (rows = users); got shape {arr.shape}")
    return arr


def _nonzero(x: Any, shape: tuple[int, int], name: str) -> tuple[np.ndarray, ...]:
    """(rows, cols, values) of the nonzero entries of a sparse or dense matrix."""
    if hasattr(x, "tocoo"):
        coo = x.tocoo()
        keep = coo.data != 0
        rows, cols, values = coo.row[keep], coo.col[keep], coo.data[keep]
        found = coo.shape
    else:
        dense = _matrix(x, name)
        rows, cols = np.nonzero(dense)
        values, found = dense[rows, cols], dense.shape
    if tuple(found) != tuple(shape):
        raise ReceValError(f"{name} has shape {tuple(found)}; expected {tuple(shape)}")
    order = np.lexsort((cols, rows))
    return (rows[order].astype(np.int64), cols[order].astype(np.int64),
            np.asarray(values, dtype=np.float64)[order])


def _label_pairs(labels: Any, n_rows: int, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, label) pairs of label lists; labels outside [0, n_labels) are left out."""
    if hasattr(labels, "detach") or hasattr(labels, "numpy"):
        labels = _matrix(labels, "labels")
    rows_list = [np.atleast_1d(np.asarray(row, dtype=np.int64)) for row in labels]
    if len(rows_list) != n_rows:
        raise ReceValError(f"labels has {len(rows_list)} rows; the scores have {n_rows}")
    empty = np.zeros(0, dtype=np.int64)
    rows = np.concatenate([np.full(len(r), i) for i, r in enumerate(rows_list)] or [empty])
    cols = np.concatenate(rows_list or [empty]).astype(np.int64)
    keep = (cols >= 0) & (cols < n_labels)
    return rows[keep].astype(np.int64), cols[keep]


def _max_label(labels: Any) -> int:
    flat = [int(v) for row in labels for v in np.atleast_1d(np.asarray(row))]
    return max(flat, default=0)


def _scores_table(matrix: np.ndarray, top_k: int | None, exclude: np.ndarray | None,
                  users: Sequence[Any] | None, items: Sequence[Any] | None) -> pa.Table:
    scores = matrix.astype(np.float64, copy=exclude is not None)
    n_rows, n_cols = scores.shape
    if exclude is not None:
        scores[exclude] = -np.inf
    if top_k is None:
        rows = np.repeat(np.arange(n_rows), n_cols)
        cols = np.tile(np.arange(n_cols), n_rows)
        values = scores.ravel()
    else:
        if top_k <= 0:
            raise ReceValError(f"top_k must be a positive integer; got {top_k}")
        # stable sort of -score: among ties the lower column comes first (the stable order)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :top_k]
        rows = np.repeat(np.arange(n_rows), order.shape[1])
        cols = order.ravel()
        values = np.take_along_axis(scores, order, axis=1).ravel()
    keep = values != -np.inf if exclude is not None else slice(None)
    return _long(rows[keep], cols[keep], values[keep], "score", users, items)


def _long(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, value_name: str,
          users: Sequence[Any] | None, items: Sequence[Any] | None) -> pa.Table:
    return pa.table({
        "user": _lookup(users, rows, "users"),
        "item": _lookup(items, cols, "items"),
        value_name: values,
    })


def _lookup(ids: Sequence[Any] | None, codes: np.ndarray, name: str) -> pa.Array:
    codes = codes.astype(np.int64)
    if ids is None:
        return pa.array(codes)
    table = np.asarray(ids)
    if len(codes) and codes.max() >= len(table):
        raise ReceValError(f"{name} has {len(table)} ids; index {int(codes.max())} is out of range")
    return _ids(table[codes].tolist())


def _ids(values: list[Any]) -> pa.Array:
    """Ids as one Arrow type: integers stay integers, anything else becomes strings."""
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pa.array(values, pa.int64())
    return pa.array([str(v) for v in values], pa.string())
