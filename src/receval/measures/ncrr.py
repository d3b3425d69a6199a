"""Normalised cumulative reciprocal rank, Cornac's ``NCRR@k``.

``NCRR@k = CRR@k / ICRR@k``: ``CRR@k`` sums ``1 / rank`` over the relevant items in the top k
(the reciprocal ranks of *every* hit, where RR keeps the first), ``ICRR@k = sum_{i <= m} 1 / i``
with ``m = min(L, k)``, the best any list can do (``m = L`` without a cutoff). Undefined when
``L = 0``. It is nDCG with the discount ``1 / r`` and binary gains.

Source: PreferredAI/cornac 3.0.1, ``cornac/metrics/ranking.py`` (class ``NCRR``); Cornac's
ideal takes ``min(L, len(pd_rank[:k]))``, which is ``min(L, k)`` since Cornac ranks every
candidate item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from array_api_compat import device

from receval.measures._arrays import as_float, full, row_sum, undefined_where, zero_where
from receval.measures._judged import JUDGED_READS, relevant_ranks
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def harmonic(m: Any, xp: Any) -> Any:
    """``H(m) = sum_{i=1}^{m} 1 / i`` for each entry of the integer array ``m`` (summed in
    rank order, as a list's reciprocal ranks are).

    Example:
        >>> harmonic(np.array([0, 1, 3]), np).tolist()
        [0.0, 1.0, 1.8333333333333333]
    """
    top = int(xp.max(m)) if m.shape[0] else 0
    table = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, top + 1, dtype=np.float64))])
    table_x = xp.asarray(table, device=device(m))
    return xp.take(table_x, xp.astype(m, xp.int64), axis=0)


def ncrr(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (NCRR@k, CRR@k, ICRR@k); (NaN, 0, 0) for a user with L = 0.

    Example:
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([3]))
        >>> pic.judged_ranks = np.array([[1, 3, 0]]); pic.judged_rel = np.array([[1.0, 1.0, 0]])
        >>> pic.n_relevant[:] = 3; pic.n_list[:] = 3
        >>> ncrr(pic, 0, parse_metric("NCRR@3"), Options(), np).value.tolist()  # (1 + 1/3) / H(3)
        [0.7272727272727273]
    """
    ranks, hit = relevant_ranks(pic, xp)
    if spec.k is not None:
        hit = hit & (ranks <= spec.k)
    crr = row_sum(xp.where(hit, 1.0 / xp.where(hit, ranks, 1.0), 0.0), xp)
    m = pic.n_relevant if spec.k is None else xp.minimum(pic.n_relevant,
                                                          full(pic.n_relevant, spec.k, xp))
    ideal = harmonic(m, xp)
    none = pic.n_relevant == 0
    value = undefined_where(none, crr / xp.where(none, 1.0, ideal), xp)
    return Parts(value, as_float(crr, xp), zero_where(none, ideal, xp))


ENTRY = Entry(
    family=Family.NCRR,
    name="NCRR",
    aliases=("ncrr",),
    cutoff="optional",
    reads=JUDGED_READS,
    options=(),
    reduction="mean",
    undefined="no relevant item",
    compute=ncrr,
    ties_average=False,
    bounds=(0.0, 1.0),
)
