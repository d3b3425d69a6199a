"""Intervals of an off-policy estimate: a seeded bootstrap over requests and the normal
(delta-method) interval.

The bootstrap draws n requests with replacement and recomputes every estimator from the
resampled sums of its per-request terms (:class:`~receval.offpolicy.estimators.Terms`), ratios
included. Resample b draws from the counter-based stream of (key, b), the key from
``stream(seed, "offpolicy", "requests")`` (:func:`receval.randomness.stream`; the SplitMix64
draws of :mod:`receval.stats.resample`): every (target, estimator) row sees the same resampled
requests (common random numbers: rows are paired), so a row's interval depends on neither the
order of the targets nor the other estimators asked for, and it is the same on any number of
threads (each resample is summed in one fixed order by one thread). The per-request terms are
held sparse (most are 0: no click, no weight) and constant columns are not summed.
"""

from __future__ import annotations

import numba
import numpy as np
from scipy import stats as sps

from receval.offpolicy.estimators import Terms
from receval.randomness import stream
from receval.stats.intervals import percentile_interval
from receval.stats.resample import _run, _uniform

#: resamples summed together in one pass over the rows (each row read once for all of them)
BLOCK = 16


@numba.njit(cache=True, nogil=True)
def _resample_block(lo: int, hi: int, dense: np.ndarray, indptr: np.ndarray, col: np.ndarray,
                    val: np.ndarray, key: np.uint64, out: np.ndarray) -> None:
    """Column sums of resamples lo..hi-1 of n rows, held as a dense block (n x d, its columns
    first in ``out``) and CSR (indptr, col, val) for the sparse columns: resample b draws n
    row indices from the stream of (key, b), then adds count_i * row_i in row order.

    BLOCK resamples at a time: their counts side by side (n x BLOCK), then one pass over the
    rows adds each row to each of them, so a row is read once per block instead of once per
    resample; every resample still adds its rows in row order (the same sums, bit for bit)."""
    n, d = dense.shape
    m = out.shape[1]
    counts = np.zeros(n, dtype=np.int32)
    side = np.zeros((n, BLOCK), dtype=np.int32)
    acc = np.zeros((BLOCK, m))
    for b0 in range(lo, hi, BLOCK):
        nb = min(BLOCK, hi - b0)
        for r in range(nb):
            state = key ^ (np.uint64(b0 + r) * np.uint64(0xD1B54A32D192ED03))
            for _ in range(n):
                state, u = _uniform(state)
                counts[min(int(u * n), n - 1)] += 1
            for i in range(n):
                side[i, r] = counts[i]
                counts[i] = 0
        acc[:, :] = 0.0
        for i in range(n):
            row = dense[i]
            for r in range(nb):
                c = side[i, r]
                if c:
                    a = acc[r]
                    for j in range(d):  # contiguous: vectorised, each column in row order
                        a[j] += c * row[j]
                    for j in range(indptr[i], indptr[i + 1]):
                        a[col[j]] += c * val[j]
        for r in range(nb):
            out[b0 + r, :] = acc[r]


@numba.njit(cache=True, nogil=True)
def _by_row(n: int, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR from (row, col, value) triples listed column by column (a counting sort by row:
    within a row the columns stay in order)."""
    indptr = np.zeros(n + 1, dtype=np.int64)
    for r in rows:
        indptr[r + 1] += 1
    for i in range(n):
        indptr[i + 1] += indptr[i]
    fill = indptr[:-1].copy()
    col = np.empty(rows.size, dtype=np.int32)
    val = np.empty(rows.size)
    for t in range(rows.size):
        at = fill[rows[t]]
        col[at] = cols[t]
        val[at] = vals[t]
        fill[rows[t]] += 1
    return indptr, col, val


def _columns(terms: list[Terms]
             ) -> tuple[list[np.ndarray], list[tuple[int, list[tuple[int, int, int]]]]]:
    """The distinct per-request columns of all terms (shared arrays once) and, per term, the
    index of its ``c`` and of each (a, b, m)."""
    index: dict[int, int] = {}
    cols: list[np.ndarray] = []

    def at(x: np.ndarray) -> int:
        if id(x) not in index:
            index[id(x)] = len(cols)
            cols.append(x)
        return index[id(x)]

    layout = [(at(t.c), [(at(a), at(b), at(m)) for a, b, m in t.ratios]) for t in terms]
    return cols, layout


#: a column with at least this share of non-zero requests is summed densely
DENSE_SHARE = 0.25
#: the name of the random stream of the resamples (with the seed, its only key)
STREAM = ("offpolicy", "requests")


def bootstrap(terms: list[Terms], n_resamples: int, seed: int, alpha: float,
              names: tuple[str, ...] = ()) -> list[tuple[float, float]]:
    """The percentile interval of each term's estimate over ``n_resamples`` resamples of the
    requests. Resample b draws the same requests for every term (the stream of the seed
    alone), so estimates are paired across estimators and targets and a row's interval
    depends on nothing else in the call. ``names`` key the stream of a group of requests
    (a time window, a variant): each group draws from its own.

    Example:
        >>> import numpy as np
        >>> t = Terms(np.arange(10.0))
        >>> bootstrap([t], 200, 0, 0.05) == bootstrap([Terms(np.ones(10)), t], 200, 0, 0.05)[1:]
        True
    """
    if n_resamples <= 0 or not terms:
        return [(float("nan"), float("nan"))] * len(terms)
    cols, layout = _columns(terms)
    n = cols[0].size
    # a constant column resamples to itself: only the others are summed
    const = [bool(x.size and np.all(x == x[0])) for x in cols]
    varying = [j for j, c in enumerate(const) if not c]
    # columns mostly non-zero go to a dense block, the others to CSR
    nonzero = {j: np.flatnonzero(cols[j]) for j in varying}
    dense_cols = [j for j in varying if nonzero[j].size >= DENSE_SHARE * n]
    sparse_cols = [j for j in varying if nonzero[j].size < DENSE_SHARE * n]
    slot = {j: s for s, j in enumerate(dense_cols + sparse_cols)}
    rows = [nonzero[j] for j in sparse_cols]
    cidx = [np.full(nonzero[j].size, slot[j], dtype=np.int32) for j in sparse_cols]
    vals = [cols[j][nonzero[j]] for j in sparse_cols]
    sums = np.zeros((n_resamples, max(len(varying), 1)))
    if varying:
        block = (np.ascontiguousarray(np.stack([cols[j] for j in dense_cols], axis=1))
                 if dense_cols else np.zeros((n, 0)))
        indptr, col, val = _by_row(n, np.concatenate(rows or [np.zeros(0, np.int64)]),
                                   np.concatenate(cidx or [np.zeros(0, np.int32)]),
                                   np.concatenate(vals or [np.zeros(0)]))
        key = np.uint64(stream(seed, *STREAM, *names).integers(0, 2**63, dtype=np.int64))
        _run(_resample_block, 0, n_resamples, n_resamples * (n + block.size + val.size), block,
             indptr, col, val, key, sums)

    def mean(j: int) -> np.ndarray | np.float64:
        return np.float64(cols[j][0]) if const[j] else sums[:, slot[j]] / n

    out = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for c, ratios in layout:
            v = np.zeros(n_resamples) + mean(c)
            for a, b, m in ratios:
                v = v + mean(a) * mean(m) / mean(b)
            out.append(percentile_interval(v[np.isfinite(v)], alpha))
    return out


def normal(term: Terms, alpha: float, value: float | None = None
           ) -> tuple[float, float, float]:
    """The standard error and the normal interval of an estimate: the sample standard
    deviation of its influence terms (the delta method for the ratios) over sqrt(n).

    Example:
        >>> import numpy as np
        >>> se, lo, hi = normal(Terms(np.array([0.0, 1.0, 0.0, 1.0])), 0.05)
        >>> round(se, 6), round((lo + hi) / 2, 6)
        (0.288675, 0.5)
    """
    n = term.c.size
    psi = term.c - term.c.mean()
    value = term.value() if value is None else value
    for a, b, m in term.ratios:
        ab, bb, mb = a.mean(), b.mean(), m.mean()
        if bb == 0:
            return float("nan"), float("nan"), float("nan")
        psi = psi + (a - ab) * mb / bb + ab * (m - mb) / bb - ab * mb * (b - bb) / bb ** 2
    if n < 2:
        return float("nan"), float("nan"), float("nan")
    se = float(np.std(psi, ddof=1) / np.sqrt(n))
    z = float(sps.norm.ppf(1 - alpha / 2))
    return se, value - z * se, value + z * se
