"""Plain-Python oracles of the unpaired two-group comparison (receval.stats.unpaired), typed in
from the textbook formulas, without receval or numpy.

- Welch (1947): t = (mean_y - mean_x) / se, se^2 = s_x^2/n_x + s_y^2/n_y (s^2 with n - 1),
  df = se^4 / ((s_x^2/n_x)^2/(n_x - 1) + (s_y^2/n_y)^2/(n_y - 1)), p = 2 P(T_df > |t|),
  interval gap +- t_(1 - alpha/2, df) se. Only the t distribution's tail and quantile come
  from scipy.stats.t (a distribution function, not the test).
- The exact permutation p-value: the share of every split of the pooled values into groups of
  the observed sizes whose abs(gap) reaches the observed one (itertools.combinations).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence


def _mean(v: Sequence[float]) -> float:
    return math.fsum(v) / len(v)


def _var(v: Sequence[float]) -> float:
    m = _mean(v)
    return math.fsum((x - m) ** 2 for x in v) / (len(v) - 1)


def welch(x: Sequence[float], y: Sequence[float], alpha: float = 0.05) -> tuple[float, float,
                                                                                  float]:
    """(p, low, high) of mean(y) - mean(x)."""
    from scipy.stats import t as student

    vx, vy = _var(x) / len(x), _var(y) / len(y)
    se = math.sqrt(vx + vy)
    gap = _mean(y) - _mean(x)
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    p = 2 * float(student.sf(abs(gap / se), df))
    half = float(student.ppf(1 - alpha / 2, df)) * se
    return p, gap - half, gap + half


def exact_permutation_p(x: Sequence[float], y: Sequence[float]) -> float:
    """The share of the splits of x + y into |x| and |y| values whose abs(gap) reaches the
    observed one (with the same 1e-9 relative slack as receval)."""
    pooled = list(x) + list(y)
    observed = abs(_mean(y) - _mean(x))
    total = math.fsum(pooled)
    reached = splits = 0
    for chosen in itertools.combinations(range(len(pooled)), len(x)):
        sx = math.fsum(pooled[i] for i in chosen)
        gap = abs((total - sx) / len(y) - sx / len(x))
        reached += gap >= observed * (1 - 1e-9)
        splits += 1
    return reached / splits
