"""The paired bootstrap over users: resampled means of the paired differences, and the
percentile interval they give.

Resamples are drawn in chunks (a fixed function of n, so the stream and the result depend only
on the generator and n), each chunk one vectorised numpy draw: no Python loop per resample.
"""

from __future__ import annotations

import numpy as np

#: the interval's method, as it is named in the output
CI_METHOD = "paired bootstrap percentile"

#: at most this many drawn indices per chunk (memory: 8 bytes each)
CHUNK_ELEMENTS = 1 << 22


def chunk_rows(n: int) -> int:
    """Resamples per chunk for vectors of length ``n`` (depends on ``n`` only).

    Example:
        >>> from receval.stats.intervals import chunk_rows
        >>> chunk_rows(1 << 20), chunk_rows(10)
        (4, 419430)
    """
    return max(1, CHUNK_ELEMENTS // max(n, 1))


def bootstrap_means(d: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The means of ``n_resamples`` resamples of ``d`` with replacement (users drawn
    uniformly, n per resample).

    Example:
        >>> import numpy as np
        >>> from receval.stats.intervals import bootstrap_means
        >>> bootstrap_means(np.zeros(5), 3, np.random.default_rng(0)).tolist()
        [0.0, 0.0, 0.0]
    """
    d = np.asarray(d, dtype=float)
    n = d.size
    out = np.empty(n_resamples)
    step = chunk_rows(n)
    for start in range(0, n_resamples, step):
        rows = min(step, n_resamples - start)
        idx = rng.integers(0, n, size=(rows, n))
        out[start:start + rows] = d[idx].mean(axis=1)
    return out


def percentile_interval(means: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """The ``1 - alpha`` percentile interval of bootstrap means (linear interpolation).

    Example:
        >>> import numpy as np
        >>> from receval.stats.intervals import percentile_interval
        >>> percentile_interval(np.arange(101.0), 0.1)
        (5.0, 95.0)
    """
    if means.size == 0:
        return (float("nan"), float("nan"))
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return (float(low), float(high))
