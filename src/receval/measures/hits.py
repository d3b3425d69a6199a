"""Hits@k = hits@k, the number of relevant items in the top k (ranx ``hits``).

A count, defined for every user (0 without a relevant item); under ``ties="average"`` the
expected count. Its mean over users is the mean number of hits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import full
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def hits(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (hits@k, hits@k, 1).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([5]))
        >>> pic.hits[:, 0] = [2.0, 0.0]
        >>> hits(pic, 0, parse_metric("hits@5"), Options(), np).value.tolist()
        [2.0, 0.0]
    """
    num = pic.hits[:, c]
    return Parts(num, num, full(num, 1.0, xp))


ENTRY = Entry(
    family=Family.HITS,
    name="hits",
    aliases=("hits",),
    cutoff="optional",
    reads=("hits",),
    options=(),
    reduction="mean",
    undefined="",
    compute=hits,
    bounds=(0.0, float("inf")),
    grows_with_k=True,
)
