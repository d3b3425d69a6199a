"""Expected reciprocal rank (Chapelle, Metzler, Zhang & Grinspan, CIKM 2009).

``ERR@k = sum_{r<=k} (1/r) R_r prod_{i<r} (1 - R_i)``, the stopping probability of rank ``r``
``R = (2^g - 1) / 2^g_max`` with ``g`` the truth rating of a relevant item (0 for the others
and for a negative rating) and ``g_max`` the ``err_max_grade`` option: ``"user"`` (default),
the user's highest relevant rating (so a list of items all rated 1 gives ``R = 1/2``), or a
fixed top grade (``4``: gdeval's and ir_measures' ``ERR@k``, as Chapelle et al. define it on
a 0..4 scale; a rating above it counts as ``g_max``). Undefined when the user has no relevant
item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import cumulative, full, power, row_sum, undefined_where
from receval.measures._judged import JUDGED_READS, relevant_ranks
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def err(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (ERR@k, ERR@k, 1); NaN without a relevant item.

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([2]))
        >>> pic.judged_ranks = np.array([[1, 2]]); pic.judged_rel = np.array([[1.0, 1.0]])
        >>> pic.judged_rating = np.array([[1.0, 2.0]]); pic.max_rel_rating = np.array([2.0])
        >>> pic.n_relevant[:] = 2
        >>> err(pic, 0, parse_metric("ERR@2"), Options(), np).value.tolist()  # 1/4 + 3/4*3/8
        [0.53125]
        >>> err(pic, 0, parse_metric("ERR@2"), Options(err_max_grade=4), np).value.tolist()
        [0.150390625]
    """
    ranks, hit = relevant_ranks(pic, xp)
    if spec.k is not None:
        hit = hit & (ranks <= spec.k)
    g = xp.where(hit, xp.maximum(pic.judged_rating, 0.0), 0.0)
    if options.err_max_grade == "user":
        top = xp.reshape(pic.max_rel_rating, (-1, 1))
    else:  # a fixed scale: a grade above its top is the top
        top = full(g, float(options.err_max_grade), xp)
        g = xp.minimum(g, top)
    two = full(g, 2.0, xp)
    if options.err_max_grade != "user" and float(options.err_max_grade) <= 1000.0:
        # (2^g - 1) 2^-g_max with g <= g_max: no overflow, and 2^-g_max one float for every
        # engine (a fractional g_max - g would leave the power to each library's rounding)
        scale = 2.0 ** -float(options.err_max_grade)
        stop = xp.where(hit, (power(two, g, xp) - 1.0) * scale, 0.0)
    else:  # 2^(g - g_max) - 2^-g_max: no overflow for large ratings
        stop = xp.where(hit, power(two, g - top, xp) - power(two, -top, xp), 0.0)
    survive = cumulative(1.0 - stop, "prod") / (1.0 - stop)  # prod over the ranks before
    survive = xp.where(stop < 1.0, survive, 1.0)  # (R = 1 cannot happen: 2^-g_max > 0)
    value = row_sum(xp.where(hit, stop * survive / xp.where(hit, ranks, 1.0), 0.0), xp)
    return Parts(undefined_where(pic.n_relevant == 0, value, xp), value,
                 full(value, 1.0, xp))


ENTRY = Entry(
    family=Family.ERR,
    name="ERR",
    aliases=("err", "expected_reciprocal_rank"),
    cutoff="optional",
    reads=JUDGED_READS,
    options=("protocol", "err_max_grade"),
    reduction="mean",
    undefined="no relevant item",
    compute=err,
    ties_average=False,
    bounds=(0.0, 1.0),
    grows_with_k=True,
)
