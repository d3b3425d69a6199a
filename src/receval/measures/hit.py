"""Hit@k (hit rate, success@k) = 1 if any of the top k is relevant, else 0; undefined when
L = 0. Under ``ties="average"`` it is the probability of a hit (the picture's ``first``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import full, undefined_where, zero_where
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def hit(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (Hit@k, Hit@k, 1); (NaN, 0, 0) for a user with L = 0.

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(3, np.array([3]))
        >>> pic.first[:, 0] = [1.0, 0.0, 0.0]; pic.n_relevant[:] = [1, 2, 0]
        >>> hit(pic, 0, parse_metric("Hit@3"), Options(), np).value.tolist()
        [1.0, 0.0, nan]
    """
    none = pic.n_relevant == 0
    num = xp.minimum(pic.first[:, c], 1.0)
    return Parts(undefined_where(none, num, xp), num, zero_where(none, full(num, 1.0, xp), xp))


ENTRY = Entry(
    family=Family.HIT,
    name="Hit",
    aliases=("hit", "hitrate", "hit_rate", "success"),
    cutoff="optional",
    reads=("first",),
    options=(),
    reduction="mean",
    undefined="no relevant item",
    compute=hit,
    bounds=(0.0, 1.0),
    grows_with_k=True,
)
