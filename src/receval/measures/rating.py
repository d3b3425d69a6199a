"""RMSE and MAE on the (user, item) pairs that have both a truth rating and a prediction.

Per user the value is that user's RMSE / MAE; the summary pools all pairs of the selected
users (sum of errors over number of pairs), as every rating-prediction tool does.

Sums arrive as ``scale * sum`` (``scale^2 * sum`` for squares): 1 for ordinary data, and
the largest error when the plain sums overflowed (errors near 1e154 and up; see
``numba_engine._scaled_errors``), so a user's value is right for any finite data. The
pooled summary (:func:`pooled`) rescales the same way when the plain pooled sums overflow.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from receval.measures._arrays import as_float, undefined_where, zero_where
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def rmse(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (RMSE, sum of squared errors, pairs); (NaN, 0, 0) for a user without pairs.
    The picture's sum is ``sq_scale^2 * sq_err``.

    Example:
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(3, np.array([], dtype=np.int64))
        >>> pic.sq_err[:] = [8.0, 2.0, 0.0]; pic.sq_scale[:] = [1.0, 1e200, 1.0]
        >>> pic.n_pairs[:] = [2, 2, 0]
        >>> rmse(pic, -1, parse_metric("RMSE"), Options(), np).value.tolist()
        [2.0, 1e+200, nan]
    """
    none = pic.n_pairs == 0
    pairs = as_float(pic.n_pairs, xp)
    scale = pic.sq_scale
    value = undefined_where(none, scale * xp.sqrt(pic.sq_err / pairs), xp)
    return Parts(value, zero_where(none, pic.sq_err * scale * scale, xp), pairs)


def mae(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (MAE, sum of absolute errors, pairs); (NaN, 0, 0) for a user without pairs.
    The picture's sum is ``abs_scale * abs_err``.

    Example:
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([], dtype=np.int64))
        >>> pic.abs_err[:] = [3.0, 2.0]; pic.abs_scale[:] = [1.0, 1e308]; pic.n_pairs[:] = 2
        >>> mae(pic, -1, parse_metric("MAE"), Options(), np).value.tolist()
        [1.5, 1e+308]
    """
    none = pic.n_pairs == 0
    pairs = as_float(pic.n_pairs, xp)
    scale = pic.abs_scale
    value = undefined_where(none, scale * (pic.abs_err / pairs), xp)
    return Parts(value, zero_where(none, pic.abs_err * scale, xp), pairs)


RMSE_ENTRY = Entry(
    family=Family.RMSE,
    name="RMSE",
    aliases=("rmse",),
    cutoff="none",
    reads=("sq_err", "sq_scale", "n_pairs"),
    options=(),
    reduction="pooled",
    undefined="no (user, item) pair with both a rating and a prediction",
    compute=rmse,
    bounds=(0.0, float("inf")),
    better="lower",
)

MAE_ENTRY = Entry(
    family=Family.MAE,
    name="MAE",
    aliases=("mae",),
    cutoff="none",
    reads=("abs_err", "abs_scale", "n_pairs"),
    options=(),
    reduction="pooled",
    undefined="no (user, item) pair with both a rating and a prediction",
    compute=mae,
    bounds=(0.0, float("inf")),
    better="lower",
)


def pooled(squared: bool, num: np.ndarray, den: np.ndarray, value: np.ndarray) -> float:
    """The pooled RMSE (``squared``) or MAE over users: every pair's error counts once.

    ``num``/``den`` are the users' sums of (squared) errors and pair counts, ``value`` their
    RMSE/MAE. The plain ``sqrt(sum(num) / sum(den))`` is used when the sums fit in a float;
    otherwise the values are pooled relative to the largest (as BLAS ``nrm2``), so the
    result is right whenever it fits in a float itself (else ``inf``).

    Example:
        >>> pooled(True, np.array([8.0, 0.0]), np.array([2.0, 1.0]), np.array([2.0, 0.0]))
        1.632993161855452
        >>> big = np.array([1e200, 3e200])
        >>> pooled(True, np.full(2, np.inf), np.ones(2), big)  # sqrt((1 + 9) / 2) * 1e200
        2.2360679774997897e+200
        >>> pooled(False, np.array([4.0, 0.0]), np.array([2.0, 0.0]), np.array([2.0, np.nan]))
        2.0
    """
    total = float(den.sum())
    if total == 0:
        return math.nan
    with np.errstate(over="ignore"):  # an overflow is handled below
        num_total = float(num.sum())
    if num_total < math.inf:
        mean = num_total / total
        return math.sqrt(mean) if squared else mean
    has = den > 0
    vals, weights = value[has], den[has]
    top = float(vals.max())
    if not top < math.inf:
        return math.inf
    rel = vals / top
    if squared:
        return top * math.sqrt(float(np.sum(weights * rel * rel)) / total)
    return top * (float(np.sum(weights * rel)) / total)
