"""The paired bootstrap over users: resampled means of the paired differences, and the
percentile interval they give.

Resamples come from :mod:`receval.stats.resample`: multinomial counts of the distinct values
(exact in distribution), no Python loop per resample, the same numbers on any thread count.
"""

from __future__ import annotations

import numpy as np

from receval.stats.resample import bootstrap_sums

#: the interval's method, as it is named in the output
CI_METHOD = "paired bootstrap percentile"


def bootstrap_means(d: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The means of ``n_resamples`` resamples of ``d`` with replacement (users drawn
    uniformly, n per resample), drawn from compressed counts of the distinct values: exact in
    distribution, O(distinct values) per resample (:func:`receval.stats.resample.bootstrap_sums`).

    Example:
        >>> import numpy as np
        >>> from receval.stats.intervals import bootstrap_means
        >>> bootstrap_means(np.zeros(5), 3, np.random.default_rng(0)).tolist()
        [0.0, 0.0, 0.0]
    """
    d = np.asarray(d, dtype=float)
    return bootstrap_sums(d, n_resamples, rng) / max(d.size, 1)


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
