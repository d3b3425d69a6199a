"""The bootstrap of a window's mean, fast when the per-list values take few distinct values.

Resampling n lists with replacement only matters through how many times each distinct value is
drawn: those multiplicities follow a multinomial law (n draws over the distinct values, each
with its share of the lists). Drawing them directly (``numpy.random.Generator.multinomial``)
gives resampled means with exactly the distribution of :func:`receval.stats.intervals.
bootstrap_means` in O(distinct values) per resample instead of O(n): P@10 and MRR take at most
11 values, so a window of 300,000 lists costs microseconds per resample. With many distinct
values (more than :data:`MAX_SHARE` of the lists) the index bootstrap of receval.stats runs.
"""

from __future__ import annotations

import numpy as np

from receval.stats.intervals import bootstrap_means

#: above this share of distinct values among the lists, resample indices (receval.stats)
MAX_SHARE = 0.05
#: resamples drawn per multinomial call
BATCH = 256


def resampled_means(values: np.ndarray, n_resamples: int,
                    rng: np.random.Generator) -> np.ndarray:
    """``n_resamples`` bootstrap means of ``values`` (no NaN), seeded by ``rng``.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> means = resampled_means(np.array([0.0, 1.0] * 500), 2000, rng)
        >>> bool(0.45 < means.mean() < 0.55), bool(0.01 < means.std() < 0.02)
        (True, True)
        >>> resampled_means(np.array([3.0, 3.0]), 3, rng).tolist()
        [3.0, 3.0, 3.0]
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    distinct, counts = np.unique(x, return_counts=True)
    if distinct.size > max(16, MAX_SHARE * n):
        return bootstrap_means(x, n_resamples, rng)
    shares = counts / n
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, BATCH):
        rows = min(BATCH, n_resamples - start)
        drawn = rng.multinomial(n, shares, size=rows)
        out[start:start + rows] = drawn @ distinct / n
    return out
