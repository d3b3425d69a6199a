"""Judged@k: the share of the top k that is judged, i.e. has a truth row whatever its rating
(ir_measures ``Judged@k``, OpenNIR's judgement rate): ``#judged in the top k / min(k, n)``, n
the list's length. Undefined for an empty list (nothing recommended)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import as_float, undefined_where
from receval.measures._judged import JUDGED_READS
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def judged(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (Judged@k, judged items in the top k, min(k, n)).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([2]))
        >>> pic.judged_ranks = np.array([[1, 3], [0, 0]]); pic.n_list[:] = [3, 0]
        >>> judged(pic, 0, parse_metric("Judged@2"), Options(), np).value.tolist()
        [0.5, nan]
    """
    n = pic.n_list if spec.k is None else xp.minimum(pic.n_list, spec.k)
    inside = (pic.judged_ranks > 0) & (pic.judged_ranks <= xp.reshape(n, (-1, 1)))
    num = xp.sum(as_float(inside, xp), axis=1)
    den = as_float(n, xp)
    return Parts(undefined_where(den == 0.0, num / den, xp), num, den)


ENTRY = Entry(
    family=Family.JUDGED,
    name="Judged",
    aliases=("judged", "judged_rate"),
    cutoff="optional",
    reads=JUDGED_READS,
    options=("protocol",),
    reduction="mean",
    undefined="nothing recommended",
    compute=judged,
    ties_average=False,
    bounds=(0.0, 1.0),
)
