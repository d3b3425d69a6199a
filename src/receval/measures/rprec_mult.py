"""Precision at multiples of R (trec_eval ``m_Rprec_mult.c``): ``Rprec_mult@x = hits@c / c``
with ``c = floor(x R + 0.9)`` (``R`` the user's relevant items; past the list's end the hits are
the list's). ``Rprec_mult@1`` is R-precision. Undefined when ``c = 0`` (no relevant item;
trec_eval: 0)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import as_float, undefined_where
from receval.measures._judged import JUDGED_READS, hits_within
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture

#: the multiple x of R, positive
PARAMETER = ("multiple", 1.0, 0.0, float("inf"), True, True)


def rprec_mult(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (precision at x R, hits there, the cut).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([], dtype=np.int64))
        >>> pic.judged_ranks = np.array([[1, 4]]); pic.judged_rel = np.array([[1.0, 1.0]])
        >>> pic.n_relevant[:] = 2
        >>> rprec_mult(pic, -1, parse_metric("Rprec_mult@2"), Options(), np).value.tolist()
        [0.5]
    """
    x = spec.param if spec.param is not None else PARAMETER[1]
    cut = xp.floor(x * as_float(pic.n_relevant, xp) + 0.9)
    num = hits_within(pic, cut, xp)
    return Parts(undefined_where(cut == 0.0, num / xp.where(cut > 0, cut, 1.0), xp), num, cut)


ENTRY = Entry(
    family=Family.RPREC_MULT,
    name="Rprec_mult",
    aliases=("rprec_mult",),
    cutoff="none",
    reads=JUDGED_READS,
    options=("protocol",),
    reduction="mean",
    undefined="no relevant item",
    compute=rprec_mult,
    parameter=PARAMETER,
    ties_average=False,
    bounds=(0.0, 1.0),
)
