"""Precision@k = hits@k / D, with D = k (default) or min(k, list length) ("returned")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import as_float, full, undefined_where
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def precision(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (P@k, hits@k, D); undefined (NaN) only when D = 0 (nothing returned).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([4]))
        >>> pic.hits[:, 0] = [1.0, 3.0]; pic.n_list[:] = [2, 4]
        >>> spec = parse_metric("P@4")
        >>> precision(pic, 0, spec, Options(), np).value.tolist()
        [0.25, 0.75]
        >>> opts = Options(precision_denominator="returned")
        >>> precision(pic, 0, spec, opts, np).value.tolist()
        [0.5, 0.75]
    """
    k = spec.k or 0
    num = pic.hits[:, c]
    if options.effective_precision_denominator == "returned":
        den = as_float(xp.minimum(pic.n_list, k), xp)
    else:
        den = full(num, float(k), xp)
    return Parts(undefined_where(den == 0.0, num / den, xp), num, den)


ENTRY = Entry(
    family=Family.PRECISION,
    name="P",
    aliases=("p", "precision"),
    cutoff="required",
    reads=("hits", "n_list"),
    options=("precision_denominator",),
    reduction="mean",
    undefined="nothing recommended",
    compute=precision,
    bounds=(0.0, 1.0),
)
