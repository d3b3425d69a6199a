"""Recall@k = hits@k / L (default) or hits@k / min(k, L) ("capped"); undefined when L = 0."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import as_float, undefined_where
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def recall(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (R@k, hits@k, its denominator); (NaN, 0, 0) for a user with L = 0.

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(3, np.array([2]))
        >>> pic.hits[:, 0] = [1.0, 2.0, 0.0]; pic.n_relevant[:] = [4, 2, 0]
        >>> recall(pic, 0, parse_metric("R@2"), Options(), np).value.tolist()
        [0.25, 1.0, nan]
        >>> recall(pic, 0, parse_metric("R@2"), Options(recall_denominator="capped"), np).den
        array([2., 2., 0.])
    """
    n_rel = as_float(pic.n_relevant, xp)
    none = pic.n_relevant == 0
    if options.recall_denominator == "capped" and spec.k is not None:
        den = xp.minimum(n_rel, float(spec.k))
    else:
        den = n_rel
    num = pic.hits[:, c]  # 0 for a user with nothing relevant
    return Parts(undefined_where(none, num / den, xp), num, den)


ENTRY = Entry(
    family=Family.RECALL,
    name="R",
    aliases=("r", "recall"),
    cutoff="optional",
    reads=("hits",),
    options=("recall_denominator",),
    reduction="mean",
    undefined="no relevant item",
    compute=recall,
    bounds=(0.0, 1.0),
    grows_with_k=lambda o: o.recall_denominator == "relevant",  # over min(k, L) it can fall
)
