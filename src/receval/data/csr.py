"""Group rows by user: compressed sparse rows (CSR) built by a parallel, stable counting sort.

Rows keep their input order within a user (the ``stable`` tie policy relies on it). Input that is
already sorted by user is detected and used without copying.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np


@dataclass
class CSR:
    """Rows grouped by user code: user ``u`` owns ``items[indptr[u]:indptr[u+1]]``.

    Example:
        >>> m = group_by_user(np.array([1, 0, 1]), 2, np.array([7, 8, 9]), np.array([.1, .2, .3]))
        >>> m.indptr.tolist(), m.items.tolist(), m.values.tolist()
        ([0, 1, 3], [8, 7, 9], [0.2, 0.1, 0.3])
    """

    indptr: np.ndarray
    items: np.ndarray
    values: np.ndarray

    @property
    def n_users(self) -> int:
        """Number of user rows (some may be empty)."""
        return len(self.indptr) - 1

    def lengths(self) -> np.ndarray:
        """Rows per user."""
        return np.diff(self.indptr)


def group_by_user(codes: np.ndarray, n_users: int, items: np.ndarray, values: np.ndarray) -> CSR:
    """Stable counting sort of ``(items, values)`` by user ``codes`` into a :class:`CSR`."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    items = np.ascontiguousarray(items, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    if _is_sorted(codes):
        counts = np.bincount(codes, minlength=n_users)
        indptr = np.zeros(n_users + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return CSR(indptr, items, values)
    n_chunks = max(1, min(numba.get_num_threads(), len(codes) // 1_000_000 + 1))
    indptr, out_items, out_values = _counting_sort(codes, n_users, items, values, n_chunks)
    return CSR(indptr, out_items, out_values)


@numba.njit(cache=True, nogil=True)
def _is_sorted(codes: np.ndarray) -> bool:
    for i in range(1, len(codes)):
        if codes[i] < codes[i - 1]:
            return False
    return True


@numba.njit(cache=True, parallel=True)
def _counting_sort(
    codes: np.ndarray, n_users: int, items: np.ndarray, values: np.ndarray, n_chunks: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(codes)
    step = (n + n_chunks - 1) // n_chunks
    counts = np.zeros((n_chunks, n_users), dtype=np.int64)
    for c in numba.prange(n_chunks):
        for i in range(c * step, min(n, (c + 1) * step)):
            counts[c, codes[i]] += 1
    indptr = np.zeros(n_users + 1, dtype=np.int64)
    # chunk c of user u starts after the user's earlier rows and the earlier chunks' rows
    for u in range(n_users):
        start = indptr[u]
        for c in range(n_chunks):
            cnt = counts[c, u]
            counts[c, u] = start
            start += cnt
        indptr[u + 1] = start
    out_items = np.empty(n, dtype=np.int64)
    out_values = np.empty(n, dtype=np.float64)
    for c in numba.prange(n_chunks):
        for i in range(c * step, min(n, (c + 1) * step)):
            pos = counts[c, codes[i]]
            counts[c, codes[i]] = pos + 1
            out_items[pos] = items[i]
            out_values[pos] = values[i]
    return indptr, out_items, out_values


def drop_duplicates(csr: CSR, keep: str) -> tuple[CSR, int]:
    """Keep one row per (user, item): the ``"first"`` in input order or the ``"max"`` value.

    Returns the new CSR and the number of rows dropped.

    Example:
        >>> m = CSR(np.array([0, 3]), np.array([5, 6, 5]), np.array([1.0, 2.0, 3.0]))
        >>> out, dropped = drop_duplicates(m, "max")
        >>> out.items.tolist(), out.values.tolist(), dropped
        ([6, 5], [2.0, 3.0], 1)
    """
    mask = _keep_mask(csr.indptr, csr.items, csr.values, keep == "max")
    kept_before = np.zeros(len(mask) + 1, dtype=np.int64)
    np.cumsum(mask, out=kept_before[1:])
    indptr = kept_before[csr.indptr]
    return CSR(indptr, csr.items[mask], csr.values[mask]), int(len(mask) - mask.sum())


@numba.njit(cache=True)
def _keep_mask(indptr: np.ndarray, items: np.ndarray, values: np.ndarray, by_max: bool) -> np.ndarray:
    mask = np.zeros(len(items), dtype=np.bool_)
    for u in range(len(indptr) - 1):
        a, b = indptr[u], indptr[u + 1]
        order = np.argsort(items[a:b], kind="mergesort")
        i = 0
        while i < len(order):
            best = order[i]
            j = i + 1
            while j < len(order) and items[a + order[j]] == items[a + best]:
                if by_max and values[a + order[j]] > values[a + best]:
                    best = order[j]
                j += 1
            mask[a + best] = True
            i = j
    return mask
