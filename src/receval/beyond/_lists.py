"""Top-k lists as arrays: validation, the cut at k, and the numba row kernels the per-user
metrics share.

A list array is ``(U, K)`` integer item codes, one row per user, best first, ``-1`` past the
end of a shorter list (the engines' :attr:`~receval.picture.Picture.top_items`). Codes index
the per-item arrays (popularity, features) of a :class:`~receval.beyond.context.Context`.
Every kernel handles one row at a time, so a row's value never depends on how the rows are
split into blocks or threads: the same call gives the same numbers bit for bit.
"""

from __future__ import annotations

import numba
import numpy as np

from receval.exceptions import ReceValError
from receval.parallel import block_bounds, run_blocks

#: rows per block: small blocks would cost more to hand out than to compute
_MIN_BLOCK_ROWS = 8_192


def cut(top: np.ndarray, k: int, n_items: int | None = None) -> np.ndarray:
    """The first ``k`` columns of a list array as contiguous int64, after checking it.

    Example:
        >>> cut(np.array([[3, 1, -1], [2, -1, -1]]), 2).tolist()
        [[3, 1], [2, -1]]
    """
    arr = np.asarray(top)
    if arr.ndim != 2:
        raise ReceValError(f"top-k lists must be a 2-d array (users, k); got {arr.ndim} dims")
    if arr.size and arr.dtype.kind not in "iu":
        raise ReceValError(f"top-k lists must hold integer item codes; got dtype {arr.dtype}")
    if k <= 0:
        raise ReceValError(f"cutoff k must be positive; got {k}")
    out = np.ascontiguousarray(arr[:, :k], dtype=np.int64)
    if out.size:
        low, high = int(out.min()), int(out.max())
        if low < -1:
            bad = np.argwhere(out < -1)
            raise ReceValError(f"top-k lists: item code {low} < -1 at row {int(bad[0, 0])} "
                               f"({len(bad)} bad entries)")
        if n_items is not None and high >= n_items:
            bad = np.argwhere(out >= n_items)
            raise ReceValError(f"top-k lists: item code {high} outside the {n_items} items at "
                               f"row {int(bad[0, 0])} ({len(bad)} bad entries)")
    return out


def lengths(top: np.ndarray) -> np.ndarray:
    """Items in each list (codes ``>= 0``).

    Example:
        >>> lengths(np.array([[3, 1], [2, -1], [-1, -1]])).tolist()
        [2, 1, 0]
    """
    return (top >= 0).sum(axis=1).astype(np.int64)


def exposure(top: np.ndarray, n_items: int) -> np.ndarray:
    """How many lists hold each item (``(n_items,)`` int64): the exposure counts.

    Example:
        >>> exposure(np.array([[0, 2], [2, -1]]), 4).tolist()
        [1, 0, 2, 0]
    """
    codes = top[top >= 0]
    return np.bincount(codes, minlength=n_items).astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _row_sums_block(block: int, lo: int, hi: int, top: np.ndarray, values: np.ndarray,
                    out_sum: np.ndarray, out_count: np.ndarray) -> None:
    # NaN item values are skipped: they count in neither the sum nor the count
    for r in range(lo, hi):
        s = 0.0
        c = 0
        for j in range(top.shape[1]):
            code = top[r, j]
            if code < 0:
                continue
            v = values[code]
            if v != v:
                continue
            s += v
            c += 1
        out_sum[r] = s
        out_count[r] = c


def row_sums(top: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the sum of ``values[code]`` over its items (in list order) and how many were
    summed; NaN values are skipped.

    Example:
        >>> s, c = row_sums(np.array([[0, 1], [1, -1]]), np.array([0.5, 2.0]))
        >>> s.tolist(), c.tolist()
        ([2.5, 2.0], [2, 1])
    """
    n = top.shape[0]
    out_sum = np.zeros(n, dtype=np.float64)
    out_count = np.zeros(n, dtype=np.int64)
    vals = np.ascontiguousarray(values, dtype=np.float64)
    run_blocks(_row_sums_block, block_bounds(n, _MIN_BLOCK_ROWS), top, vals, out_sum, out_count)
    return out_sum, out_count


def row_means(top: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row, the mean of ``values[code]`` over its items (NaN values skipped); NaN for a
    row with nothing to average.

    Example:
        >>> row_means(np.array([[0, 1], [-1, -1]]), np.array([0.5, 2.0])).tolist()
        [1.25, nan]
    """
    s, c = row_sums(top, values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.maximum(c, 1), np.nan)


def csr_rows(indptr: np.ndarray, items: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Check a per-row item CSR (``indptr`` ``(U + 1,)``, ``items``) and return it as int64.

    Example:
        >>> p, i = csr_rows(np.array([0, 2, 2]), np.array([5, 1]), 2)
        >>> p.tolist(), i.tolist()
        ([0, 2, 2], [5, 1])
    """
    p = np.ascontiguousarray(indptr, dtype=np.int64)
    i = np.ascontiguousarray(items, dtype=np.int64)
    if p.shape != (n_rows + 1,) or p[0] != 0 or p[-1] != len(i) or (np.diff(p) < 0).any():
        raise ReceValError(f"a per-user item list must be a CSR of {n_rows} rows "
                           f"(indptr of {n_rows + 1} ascending offsets)")
    return p, i
