"""Reciprocal rank@k = 1 / rank of the first hit (0 if none); undefined when L = 0.

It reads the picture's first-hit probabilities, so ``ties="average"`` gives its exact
expectation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import full, undefined_where, zero_where
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def reciprocal_rank(pic: Picture, c: int, spec: MetricSpec, options: Options,
                    xp: Any) -> Parts:
    """Per user: (RR@k, RR@k, 1); (NaN, 0, 0) for a user with L = 0.

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([0]))
        >>> pic.rr_sum[:, 0] = [0.5, 0.0]; pic.n_relevant[:] = [1, 0]
        >>> reciprocal_rank(pic, 0, parse_metric("MRR"), Options(), np).value.tolist()
        [0.5, nan]
    """
    none = pic.n_relevant == 0
    num = pic.rr_sum[:, c]
    return Parts(undefined_where(none, num, xp), num, zero_where(none, full(num, 1.0, xp), xp))


ENTRY = Entry(
    family=Family.RR,
    name="RR",
    aliases=("rr", "mrr", "recip_rank"),
    cutoff="optional",
    reads=("rr_sum",),
    options=(),
    reduction="mean",
    undefined="no relevant item",
    compute=reciprocal_rank,
    bounds=(0.0, 1.0),
    grows_with_k=True,
)
