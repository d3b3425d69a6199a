"""Paired two-sided tests on per-user differences ``d = b - a``.

- ``"t"``: the paired t-test, :func:`scipy.stats.ttest_rel`.
- ``"wilcoxon"``: the Wilcoxon signed-rank test, :func:`scipy.stats.wilcoxon` with
  ``zero_method="wilcox"`` (users with d = 0 are left out). Warning: at recommender scale the
  signed-rank test inflates the type-I error (Ihemelandu & Ekstrand, SIGIR 2023), and Smucker,
  Allan & Carterette (CIKM 2007) advise against it; prefer t, randomization or bootstrap.
- ``"randomization"``: the paired sign-flip (Fisher) randomization test, written here because
  scipy's :func:`scipy.stats.permutation_test` loops in Python per batch and has no (b+1)/(B+1)
  p-value: each d_u's sign is flipped with probability 1/2; p = (b + 1) / (B + 1), where b counts
  the B resamples whose |mean| reaches the observed |mean| (Phipson & Smyth 2010), never 0.
  The flips are drawn compressed (one binomial per distinct |d_u|, exact in distribution:
  :mod:`receval.stats.resample`).
- ``"bootstrap"``: the paired bootstrap test (shift method, Efron & Tibshirani 1993, 16.4):
  users resampled with replacement; b counts the resamples with |mean* - mean| >= |mean|;
  p = (b + 1) / (B + 1).

Every test gives p = 1 when every difference is 0 (no evidence of any difference; scipy would
give NaN or raise), and NaN with fewer than two users.
"""

from __future__ import annotations

import numpy as np

from receval.exceptions import ReceValError
from receval.stats.resample import sign_flip_sums

#: the tests by name, the default first
TESTS = ("t", "wilcoxon", "randomization", "bootstrap")

#: relative slack when a resampled statistic is compared with the observed one, so a resample
#: equal to the observed value up to summation order counts as reaching it
_SLACK = 1e-9


def _trivial(d: np.ndarray) -> float | None:
    if d.size < 2:
        return float("nan")
    if not d.any():
        return 1.0
    return None


def t_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided paired t-test p-value (:func:`scipy.stats.ttest_rel`).

    Example:
        >>> from receval.stats.tests import t_test
        >>> round(t_test([0.1, 0.2, 0.3, 0.4], [0.2, 0.2, 0.5, 0.6]), 4)
        0.0796
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    trivial = _trivial(b - a)
    if trivial is not None:
        return trivial
    import scipy.stats  # loaded on first use: import receval stays light

    return float(scipy.stats.ttest_rel(b, a).pvalue)


def wilcoxon_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value (:func:`scipy.stats.wilcoxon`,
    ``zero_method="wilcox"``); see the module's warning on its type-I error.

    Example:
        >>> from receval.stats.tests import wilcoxon_test
        >>> wilcoxon_test([0.0, 0.0, 0.0, 0.0, 0.0], [0.1, 0.2, 0.3, 0.4, 0.5])
        0.0625
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    trivial = _trivial(b - a)
    if trivial is not None:
        return trivial
    import scipy.stats

    return float(scipy.stats.wilcoxon(b, a, zero_method="wilcox").pvalue)


def _reaches(stats: np.ndarray, observed: float) -> int:
    return int(np.count_nonzero(stats >= observed * (1 - _SLACK)))


def randomization_test(d: np.ndarray, n_resamples: int, rng: np.random.Generator) -> float:
    """Paired sign-flip randomization p-value, (b + 1) / (B + 1), from compressed flips.

    Example:
        >>> import numpy as np
        >>> from receval.stats.tests import randomization_test
        >>> randomization_test(np.zeros(4), 99, np.random.default_rng(0))
        1.0
        >>> p = randomization_test(np.full(12, 0.1), 999, np.random.default_rng(0))
        >>> 0 < p < 0.01
        True
    """
    d = np.asarray(d, dtype=float)
    trivial = _trivial(d)
    if trivial is not None:
        return trivial
    observed = abs(float(d.sum()))
    b = _reaches(np.abs(sign_flip_sums(d, n_resamples, rng)), observed)
    return (b + 1) / (n_resamples + 1)


def bootstrap_test(d: np.ndarray, means: np.ndarray) -> float:
    """Paired bootstrap p-value (shift method) from the bootstrap means of ``d``
    (:func:`receval.stats.intervals.bootstrap_means`): (b + 1) / (B + 1).

    Example:
        >>> import numpy as np
        >>> from receval.stats.tests import bootstrap_test
        >>> bootstrap_test(np.array([1.0, -1.0, 2.0]), np.array([0.5, 0.9, 3.0]))
        0.5
    """
    d = np.asarray(d, dtype=float)
    trivial = _trivial(d)
    if trivial is not None:
        return trivial
    mean = float(d.mean())
    b = _reaches(np.abs(means - mean), abs(mean))
    return (b + 1) / (means.size + 1)


def check_test(name: str) -> None:
    """Raise :class:`~receval.exceptions.ReceValError` for an unknown test name.

    Example:
        >>> from receval.stats.tests import check_test
        >>> check_test("t")
    """
    if name not in TESTS:
        raise ReceValError(f"unknown test {name!r}; known: {', '.join(TESTS)}")
