"""bpref (Buckley & Voorhees, SIGIR 2004; trec_eval ``m_bpref.c``).

``bpref = (1/R) sum over the retrieved relevant items r of (1 - min(n_r, R) / min(N, R))``,
``n_r`` the judged non-relevant items ranked above ``r`` (a term is 1 when ``n_r = 0``), ``R``
the user's relevant items, ``N`` their judged non-relevant items (truth rows below the
relevance threshold). Unjudged items (no truth row) are skipped. Undefined when ``R = 0``
(trec_eval: 0, the ``empty="zero"`` default).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import as_float, cumulative, row_sum, undefined_where
from receval.measures._judged import JUDGED_READS, relevant_ranks
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def bpref(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (bpref, its sum of terms, R).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([], dtype=np.int64))
        >>> # ranks 1 (non-relevant), 2 (relevant); R = 2, N = 1
        >>> pic.judged_ranks = np.array([[1, 2]]); pic.judged_rel = np.array([[0.0, 1.0]])
        >>> pic.n_relevant[:] = 2; pic.n_judged = np.array([3])
        >>> bpref(pic, -1, parse_metric("bpref"), Options(), np).value.tolist()
        [0.0]
    """
    _, hit = relevant_ranks(pic, xp)
    judged = pic.judged_ranks > 0
    r = as_float(pic.n_relevant, xp)
    n = as_float(pic.n_judged - pic.n_relevant, xp)
    rel = as_float(hit, xp)
    place = cumulative(as_float(judged, xp), "sum") - 1.0  # 0-based place among judged
    nonrel_above = place - (cumulative(rel, "sum") - rel)
    denom = xp.reshape(xp.minimum(n, r), (-1, 1))
    capped = xp.minimum(nonrel_above, xp.reshape(r, (-1, 1)))
    term = xp.where(nonrel_above > 0, 1.0 - capped / xp.where(denom > 0, denom, 1.0), 1.0)
    num = row_sum(xp.where(hit, term, 0.0), xp)
    return Parts(undefined_where(pic.n_relevant == 0, num / r, xp), num, r)


ENTRY = Entry(
    family=Family.BPREF,
    name="bpref",
    aliases=("bpref",),
    cutoff="none",
    reads=JUDGED_READS,
    options=("protocol",),
    reduction="mean",
    undefined="no relevant item",
    compute=bpref,
    ties_average=False,
    bounds=(0.0, 1.0),
)
