"""Interpolated precision at recall levels and the 11-point average (trec_eval
``m_iprec_at_recall.c``, ``m_11pt_avg.c``, as in trec_eval 9.0.8 / pytrec_eval).

``iprec@x``: the highest precision at any rank at or below the rank where the list holds
``c = floor(x R + 0.9)`` relevant items (``R`` the user's relevant items;
``iprec_rounding="nearest"``: ``x R`` rounded half away from zero, trec_eval 10.0's
``lround``), including the precision at the list's end; 0 when the list never holds ``c``
relevant items. ``11pt_avg``: the mean of ``iprec@x`` at ``x = 0, 0.1, ..., 1``.

Undefined only where trec_eval divides 0 by 0: ``protocol="known"`` (``-J``) leaves no returned
item (none is judged) and ``c = 0``, so the value is the precision of an empty list; trec_eval
gives NaN there (``empty="nan"``, the trec_eval profiles'), receval's default ``empty="zero"``
0. A user with nothing returned under ``protocol="full"`` gets 0 at every level, as trec_eval
``-c`` gives a topic without a run (it ranks one unjudged placeholder document, ``bogus_ranking``
of ``trec_eval.c``), and so does ``R = 0`` with a list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import as_float, cumulative, flip_last, full, undefined_where
from receval.measures._judged import JUDGED_READS, relevant_ranks
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture

#: recall level x in [0, 1]
PARAMETER = ("recall", 0.0, 0.0, 1.0, False, False)
ELEVEN = tuple(i / 10 for i in range(11))


def relevant_count(level: float, r: Any, rounding: str, xp: Any) -> Any:
    """The count of relevant items the recall ``level`` asks for, per user (``r``: float
    relevant counts): ``floor(x R + 0.9)`` or, ``"nearest"``, ``x R`` rounded half away from
    zero (C's ``lround``; exact where ``floor(x R + 0.5)`` would round 0.49999999999999994 up).

    Example:
        >>> import numpy as np
        >>> r = np.array([1.0, 3.0, 5.0])
        >>> relevant_count(0.1, r, "plus_0.9", np).tolist()
        [1.0, 1.0, 1.0]
        >>> relevant_count(0.1, r, "nearest", np).tolist()  # 0.1 x 5 = 0.5: rounded up
        [0.0, 0.0, 1.0]
    """
    if rounding == "nearest":
        x = level * r
        down = xp.floor(x)
        return xp.where(x - down >= 0.5, down + 1.0, down)
    return xp.floor(level * r + 0.9)


def _interpolated(pic: Picture, level: float, rounding: str, xp: Any) -> Any:
    ranks, hit = relevant_ranks(pic, xp)
    r = as_float(pic.n_relevant, xp)
    n_list = as_float(pic.n_list, xp)
    nth = cumulative(as_float(hit, xp), "sum")  # the n-th relevant item at a hit
    precision = xp.where(hit, nth / xp.where(hit, ranks, 1.0), 0.0)
    n_hits = nth[:, -1] if nth.shape[1] else xp.zeros_like(r)
    at_end = xp.where(n_list > 0, n_hits / xp.where(n_list > 0, n_list, 1.0), 0.0)
    best_after = flip_last(cumulative(flip_last(precision), "max"))  # max over ranks >= here
    cut = relevant_count(level, r, rounding, xp)
    at_cut = hit & (nth >= xp.reshape(cut, (-1, 1)))
    best = xp.max(xp.where(at_cut, best_after, 0.0), axis=1) if nth.shape[1] else at_end * 0
    value = xp.where(cut <= n_hits, xp.maximum(best, at_end), 0.0)
    return value, (n_list == 0) & (cut == 0)


def iprec(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (interpolated precision at the recall level, itself, 1).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([], dtype=np.int64))
        >>> pic.judged_ranks = np.array([[2, 3]]); pic.judged_rel = np.array([[1.0, 1.0]])
        >>> pic.n_relevant[:] = 4; pic.n_list[:] = 5
        >>> iprec(pic, -1, parse_metric("iprec@0.5"), Options(), np).value.tolist()  # 2/3
        [0.6666666666666666]
    """
    level = spec.param if spec.param is not None else PARAMETER[1]
    value, none = _interpolated(pic, level, options.iprec_rounding, xp)
    none = none & (options.protocol == "known")
    return Parts(undefined_where(none, value, xp), value, full(value, 1.0, xp))


def eleven_point(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (the 11-point interpolated average precision, itself, 1).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([], dtype=np.int64))
        >>> pic.judged_ranks = np.array([[1]]); pic.judged_rel = np.array([[1.0]])
        >>> pic.n_relevant[:] = 1; pic.n_list[:] = 1
        >>> eleven_point(pic, -1, parse_metric("11pt_avg"), Options(), np).value.tolist()
        [1.0]
    """
    total, none = _interpolated(pic, ELEVEN[0], options.iprec_rounding, xp)  # c = 0 at x = 0
    for level in ELEVEN[1:]:
        total = total + _interpolated(pic, level, options.iprec_rounding, xp)[0]
    value = total / 11.0
    none = none & (options.protocol == "known")
    return Parts(undefined_where(none, value, xp), value, full(value, 1.0, xp))


ENTRY = Entry(
    family=Family.IPREC,
    name="iprec",
    aliases=("iprec", "iprec_at_recall", "interpolated_precision"),
    cutoff="none",
    reads=JUDGED_READS,
    options=("protocol", "iprec_rounding"),
    reduction="mean",
    undefined="protocol='known' leaves nothing returned and the level asks for no relevant "
              "item (0/0)",
    compute=iprec,
    parameter=PARAMETER,
    ties_average=False,
    bounds=(0.0, 1.0),
)

ELEVEN_ENTRY = Entry(
    family=Family.IPREC_11PT,
    name="11pt_avg",
    aliases=("11pt_avg", "11pt", "11-pt_avg", "ipr11"),
    cutoff="none",
    reads=JUDGED_READS,
    options=("protocol", "iprec_rounding"),
    reduction="mean",
    undefined="protocol='known' leaves nothing returned (level 0: 0/0)",
    compute=eleven_point,
    ties_average=False,
    bounds=(0.0, 1.0),
)
