"""The bootstrap of a window's mean: receval's one bootstrap of a mean
(:func:`receval.stats.intervals.bootstrap_means`: multinomial counts of the distinct values,
exact in distribution, O(distinct values) per resample, the same bits on any thread count),
under the name :mod:`receval.monitor.core` calls.
"""

from __future__ import annotations

import numpy as np

from receval.stats.intervals import bootstrap_means


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
    return bootstrap_means(values, n_resamples, rng)
