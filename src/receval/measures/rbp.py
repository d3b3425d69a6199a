"""Rank-biased precision (Moffat & Zobel, TOIS 2008; trec_eval ``m_rbp.c``, ``m_rbp_resid.c``).

``RBP@p = (1 - p) sum_i rel_i p^(i-1)`` over the ranked list (binary relevance), with
persistence ``p`` (default 0.9). Its residual, the most unjudged items could add (each
unjudged item of the list relevant, and relevant items forever past its end):
``RBP_resid@p = (1 - p) sum_{i unjudged} p^(i-1) + p^n = 1 - (1 - p) sum_{i judged} p^(i-1)``.
trec_eval's ``rbp`` takes graded gains scaled to [0, 1] and its ``rbp_resid`` is 0 for a list
with no unjudged item; receval's are the paper's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import as_float, full, power, row_sum
from receval.measures._judged import JUDGED_READS, relevant_ranks
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture

#: (name, default, low, high, low open, high open): p in (0, 1), 0.9 by default
PARAMETER = ("p", 0.9, 0.0, 1.0, True, True)


def _weights(pic: Picture, p: float, xp: Any) -> Any:
    ranks = as_float(pic.judged_ranks, xp)
    return xp.where(pic.judged_ranks > 0, power(full(ranks, p, xp), ranks - 1.0, xp), 0.0)


def rbp(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (RBP, RBP, 1); never undefined (an empty list scores 0).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([], dtype=np.int64))
        >>> pic.judged_ranks = np.array([[1, 2]]); pic.judged_rel = np.array([[1.0, 0.0]])
        >>> rbp(pic, -1, parse_metric("RBP@0.5"), Options(), np).value.tolist()
        [0.5]
    """
    p = spec.param if spec.param is not None else PARAMETER[1]
    _, hit = relevant_ranks(pic, xp)
    value = (1.0 - p) * row_sum(xp.where(hit, _weights(pic, p, xp), 0.0), xp)
    return Parts(value, value, full(value, 1.0, xp))


def rbp_residual(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (the residual, itself, 1).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([], dtype=np.int64))
        >>> pic.judged_ranks = np.array([[1, 0]]); pic.judged_rel = np.array([[1.0, 0.0]])
        >>> rbp_residual(pic, -1, parse_metric("RBP_resid@0.5"), Options(), np).value.tolist()
        [0.5]
    """
    p = spec.param if spec.param is not None else PARAMETER[1]
    value = 1.0 - (1.0 - p) * row_sum(_weights(pic, p, xp), xp)
    return Parts(value, value, full(value, 1.0, xp))


ENTRY = Entry(
    family=Family.RBP,
    name="RBP",
    aliases=("rbp", "rank_biased_precision"),
    cutoff="none",
    reads=JUDGED_READS,
    options=("protocol",),
    reduction="mean",
    undefined="",
    compute=rbp,
    parameter=PARAMETER,
    ties_average=False,
    bounds=(0.0, 1.0),
)

RESID_ENTRY = Entry(
    family=Family.RBP_RESID,
    name="RBP_resid",
    aliases=("rbp_resid", "rbp_residual"),
    cutoff="none",
    reads=JUDGED_READS,
    options=("protocol",),
    reduction="mean",
    undefined="",
    compute=rbp_residual,
    parameter=PARAMETER,
    ties_average=False,
    bounds=(0.0, 1.0),
)
