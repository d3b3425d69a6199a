"""F-beta = (1 + b^2) P R / (b^2 P + R); 0 when P = R = 0; undefined when P or R is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from receval.measures._arrays import zero_where
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family
from receval.measures.precision import precision
from receval.measures.recall import recall

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def combine(p: Any, r: Any, beta: float, xp: Any) -> Any:
    """F-beta of precision and recall arrays (NaN in, NaN out).

    Example:
        >>> combine(np.array([0.5, 0.0, np.nan]), np.array([1.0, 0.0, 1.0]), 1.0, np).tolist()
        [0.6666666666666666, 0.0, nan]
    """
    b2 = beta * beta
    with np.errstate(invalid="ignore", divide="ignore"):
        return zero_where(p + r == 0.0, (1.0 + b2) * p * r / (b2 * p + r), xp)


def fbeta(p: float, r: float, beta: float) -> float:
    """F-beta of one precision and one recall (micro F from micro P and R).

    Example:
        >>> round(fbeta(0.5, 1.0, 1.0), 4)
        0.6667
    """
    return float(combine(np.asarray(p, dtype=np.float64), np.asarray(r, dtype=np.float64),
                         beta, np))


def f_measure(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (F-beta@k, hits@k, precision's denominator, recall's denominator).

    Example:
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([2]))
        >>> pic.hits[:, 0] = 1.0; pic.n_relevant[:] = 1; pic.n_list[:] = 2
        >>> f_measure(pic, 0, parse_metric("F1@2"), Options(), np)
        Parts(value=array([0.66666667]), num=array([1.]), den=array([2.]), den2=array([1.]))
    """
    p = precision(pic, c, spec, options, xp)
    r = recall(pic, c, spec, options, xp)
    return Parts(combine(p.value, r.value, spec.beta, xp), p.num, p.den, r.den)


ENTRY = Entry(
    family=Family.FBETA,
    name="F",
    aliases=(),  # F1, F0.5, Fbeta2: parsed with their beta by receval.measures.spec
    cutoff="required",
    reads=("hits", "n_list"),
    options=("precision_denominator", "recall_denominator"),
    reduction="mean",
    undefined="no relevant item, or nothing recommended",
    compute=f_measure,
    bounds=(0.0, 1.0),
)
