"""What the beyond-accuracy metrics read besides the lists: training popularity, each user's
training and relevant items, the catalogue and item features, all indexed by item code.

:func:`context` builds it from integer codes (the array layer); :mod:`receval.beyond.frames`
builds it from ids (DataFrames), as :func:`receval.evaluate` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from receval.beyond._lists import csr_rows
from receval.exceptions import ReceValError


@dataclass
class Context:
    """Per-item and per-user data, by item code ``0 .. n_items - 1``.

    Attributes:
        n_items: the size of the code space.
        interactions: ``(n_items,)`` int64, training rows per item.
        users: ``(n_items,)`` int64, distinct training users per item.
        n_interactions: training rows.
        n_train_users: distinct training users.
        catalogue: ``(n_items,)`` bool, the items of ``I`` (``BeyondOptions.catalogue``).
        train_indptr, train_items: each list row's training items (a CSR aligned with the
            rows of the lists), or ``None``.
        train_counts: the training rows of each entry of ``train_items`` (a user's repeated
            interactions with one item), or ``None``.
        truth_indptr, truth_items: each list row's relevant items, or ``None``.
        features: ``(n_items, F)`` float64 unit rows (zero rows: no features), or ``None``.
        raw_features: the features as given (Hamming distance), or ``None``.
        train_pairs: all training (user code, item code) pairs without duplicates, for the
            co-occurrence similarity, or ``None``.
        has_train: whether training data was given (the popularity metrics need it).
        groups: ``(n_items, G)`` float64 group alignment of each item (a row sums to 1 over
            the item's groups, equal shares; a zero row: no group known), or ``None``
            (:mod:`receval.beyond.groups`).
        group_names: the ``G`` group names, in column order.
    """

    n_items: int
    interactions: np.ndarray
    users: np.ndarray
    n_interactions: int
    n_train_users: int
    catalogue: np.ndarray
    train_indptr: np.ndarray | None = None
    train_items: np.ndarray | None = None
    train_counts: np.ndarray | None = None
    truth_indptr: np.ndarray | None = None
    truth_items: np.ndarray | None = None
    features: np.ndarray | None = None
    raw_features: np.ndarray | None = None
    train_pairs: tuple[np.ndarray, np.ndarray] | None = None
    has_train: bool = True
    groups: np.ndarray | None = None
    group_names: tuple[Any, ...] = ()
    _cooc: Any = field(default=None, repr=False)

    def cooccurrence(self) -> sp.csr_matrix:
        """Item x item counts of training users who hold both (the diagonal: each item's
        users), sorted indices, built once.

        Example:
            >>> ctx = context(np.array([0, 0, 1]), np.array([0, 1, 1]), 2)
            >>> ctx.cooccurrence().toarray().tolist()
            [[1, 1], [1, 2]]
        """
        if self._cooc is None:
            if self.train_pairs is None:
                raise ReceValError("similarity='cooccurrence' needs the training data: pass "
                                   "train=")
            u, i = self.train_pairs
            n_u = int(u.max()) + 1 if len(u) else 0
            b = sp.csr_matrix((np.ones(len(u), dtype=np.int64), (u, i)),
                              shape=(n_u, self.n_items))
            c = (b.T @ b).tocsr()
            c.sort_indices()
            self._cooc = c
        return self._cooc


def _unique_pairs(users: np.ndarray, items: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # the distinct (user, item) pairs, sorted, and how many rows each had
    order = np.lexsort((items, users))
    u, i = users[order], items[order]
    keep = np.ones(len(u), dtype=bool)
    keep[1:] = (u[1:] != u[:-1]) | (i[1:] != i[:-1])
    starts = np.flatnonzero(keep)
    counts = np.diff(np.append(starts, len(u))).astype(np.int64)
    return u[keep], i[keep], counts


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero): cosine similarity is then a dot
    product.

    Example:
        >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
        [[0.6, 0.8], [0.0, 0.0]]
    """
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2:
        raise ReceValError(f"item features must be a 2-d array (items, features); got {m.ndim}")
    if not np.isfinite(m).all():
        bad = np.argwhere(~np.isfinite(m))
        raise ReceValError(f"item features: non-finite value at item code {int(bad[0, 0])} "
                           f"({len(bad)} bad values)")
    norm = np.sqrt((m * m).sum(axis=1))
    return np.ascontiguousarray(m / np.where(norm > 0, norm, 1.0)[:, None])


def context(
    train_users: np.ndarray | None,
    train_items: np.ndarray | None,
    n_items: int,
    *,
    row_users: np.ndarray | None = None,
    truth: tuple[np.ndarray, np.ndarray] | None = None,
    features: np.ndarray | None = None,
    catalogue: np.ndarray | None = None,
) -> Context:
    """A :class:`Context` from training (user code, item code) rows (``None``: no training
    data; every item then has popularity 0).

    ``row_users`` gives, per list row, its user's training user code (``-1``: none), so each
    row gets its training items. ``truth`` is a per-row CSR ``(indptr, items)`` of relevant
    items. ``features`` is ``(n_items, F)`` (rows scaled to unit length here).
    ``catalogue`` is a bool mask; by default the items in training or the truth.

    Example:
        >>> ctx = context(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1]), 3,
        ...               row_users=np.array([1, -1]))
        >>> ctx.interactions.tolist(), ctx.users.tolist(), ctx.n_train_users
        ([1, 3, 0], [1, 2, 0], 2)
        >>> ctx.train_indptr.tolist(), ctx.train_items.tolist()
        ([0, 1, 1], [1])
    """
    has_train = train_users is not None and train_items is not None
    tu = np.asarray(train_users if has_train else [], dtype=np.int64)
    ti = np.asarray(train_items if has_train else [], dtype=np.int64)
    if tu.shape != ti.shape or tu.ndim != 1:
        raise ReceValError("training users and items must be 1-d arrays of one length")
    if len(ti) and (ti.min() < 0 or ti.max() >= n_items):
        bad = np.flatnonzero((ti < 0) | (ti >= n_items))
        raise ReceValError(f"train: item code {int(ti[bad[0]])} outside 0..{n_items - 1} at "
                           f"row {int(bad[0])} ({len(bad)} bad rows)")
    if len(tu) and tu.min() < 0:
        bad = np.flatnonzero(tu < 0)
        raise ReceValError(f"train: negative user code at row {int(bad[0])} ({len(bad)} bad "
                           f"rows)")
    interactions = np.bincount(ti, minlength=n_items).astype(np.int64)
    pu, pi, pc = _unique_pairs(tu, ti)
    users = np.bincount(pi, minlength=n_items).astype(np.int64)
    n_train_users = len(np.unique(pu))
    ctx = Context(n_items=n_items, interactions=interactions, users=users,
                  n_interactions=len(ti), n_train_users=n_train_users,
                  catalogue=np.zeros(n_items, dtype=bool), train_pairs=(pu, pi),
                  has_train=has_train)
    if row_users is not None:
        rows = np.asarray(row_users, dtype=np.int64)
        # at least one user: a row of no training user (-1, an empty training frame) reads
        # starts[1] below, masked out
        n_u = max(int(pu.max()) + 1 if len(pu) else 0, int(rows.max()) + 1 if len(rows) else 0,
                  1)
        starts = np.searchsorted(pu, np.arange(n_u + 1))
        valid = rows >= 0
        first = np.where(valid, starts[np.where(valid, rows, 0)], 0)
        counts = np.where(valid, starts[np.where(valid, rows, 0) + 1] - first, 0)
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        # row r's items are pi[first[r] : first[r] + counts[r]]
        take = np.repeat(first - indptr[:-1], counts) + np.arange(indptr[-1])
        ctx.train_indptr, ctx.train_items = indptr, pi[take]
        ctx.train_counts = pc[take]
    if truth is not None:
        n_rows = len(truth[0]) - 1
        ctx.truth_indptr, ctx.truth_items = csr_rows(truth[0], truth[1], n_rows)
    if features is not None:
        f = unit_rows(features)
        if f.shape[0] != n_items:
            raise ReceValError(f"item features have {f.shape[0]} rows; expected one per item "
                               f"code ({n_items})")
        ctx.features = f
        ctx.raw_features = np.ascontiguousarray(features, dtype=np.float64)
    if catalogue is None:
        mask = interactions > 0
        if ctx.truth_items is not None and len(ctx.truth_items):
            mask[ctx.truth_items] = True
        ctx.catalogue = mask
    else:
        mask = np.asarray(catalogue, dtype=bool)
        if mask.shape != (n_items,):
            raise ReceValError(f"catalogue mask must have one entry per item code ({n_items})")
        ctx.catalogue = mask
    return ctx
