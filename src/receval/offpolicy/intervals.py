"""Intervals of an off-policy estimate: a seeded bootstrap over requests and the normal
(delta-method) interval.

The bootstrap draws n requests with replacement and recomputes every estimator of a target
from the resampled sums of its per-request terms (:class:`~receval.offpolicy.estimators.Terms`),
ratios included. Resample b of target t draws from the counter-based stream of
(key(seed, t), b) (:func:`receval.stats.paired.stream` gives the key, the SplitMix64 stream of
:mod:`receval.stats.resample` the draws), so a row's interval depends on neither the order of
the targets nor the other estimators asked for, and is the same on any number of threads
(each resample is summed in one fixed order by one thread). All estimators of a target share
its resamples, so their intervals are paired.
"""

from __future__ import annotations

import numba
import numpy as np
from scipy import stats as sps

from receval.offpolicy.estimators import Terms
from receval.stats.intervals import percentile_interval
from receval.stats.paired import stream
from receval.stats.resample import _run, _uniform


@numba.njit(cache=True, nogil=True)
def _resample_block(lo: int, hi: int, table: np.ndarray, key: np.uint64,
                    out: np.ndarray) -> None:
    """Column sums of resamples lo..hi-1 of the rows of ``table`` (n x m): resample b draws n
    row indices from the stream of (key, b), then adds count_i * row_i in row order."""
    n, m = table.shape
    counts = np.zeros(n, dtype=np.int32)
    for b in range(lo, hi):
        state = key ^ (np.uint64(b) * np.uint64(0xD1B54A32D192ED03))
        counts[:] = 0
        for _ in range(n):
            state, u = _uniform(state)
            counts[min(int(u * n), n - 1)] += 1
        for j in range(m):
            out[b, j] = 0.0
        for i in range(n):
            c = counts[i]
            if c:
                for j in range(m):
                    out[b, j] += c * table[i, j]


def _columns(terms: list[Terms]
             ) -> tuple[np.ndarray, list[tuple[int, list[tuple[int, int, int]]]]]:
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
    return np.ascontiguousarray(np.stack(cols, axis=1)), layout


def bootstrap(terms: list[Terms], n_resamples: int, seed: int, target: str,
              alpha: float) -> list[tuple[float, float]]:
    """The percentile interval of each term's estimate over ``n_resamples`` resamples of the
    requests, from the stream of (seed, target).

    Example:
        >>> import numpy as np
        >>> t = Terms(np.arange(10.0))
        >>> bootstrap([t], 200, 0, "x", 0.05) == bootstrap([t], 200, 0, "x", 0.05)
        True
    """
    if n_resamples <= 0 or not terms:
        return [(float("nan"), float("nan"))] * len(terms)
    table, layout = _columns(terms)
    n = table.shape[0]
    sums = np.empty((n_resamples, table.shape[1]))
    key = np.uint64(stream(seed, "offpolicy", target).integers(0, 2**63, dtype=np.int64))
    _run(_resample_block, 0, n_resamples, n_resamples * n * (1 + table.shape[1]), table, key,
         sums)
    means = sums / n
    out = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for c, ratios in layout:
            v = means[:, c].copy()
            for a, b, m in ratios:
                v += means[:, a] * means[:, m] / means[:, b]
            out.append(percentile_interval(v[np.isfinite(v)], alpha))
    return out


def normal(term: Terms, alpha: float) -> tuple[float, float, float]:
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
    value = term.value()
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
