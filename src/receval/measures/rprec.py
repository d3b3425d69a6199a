"""R-precision = hits@L / L: precision at a per-user cut equal to the number of relevant."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import as_float, undefined_where
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def r_precision(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (R-precision, hits@L, L); (NaN, 0, 0) for a user with L = 0.

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([], dtype=np.int64))
        >>> pic.hits_at_r[:] = [1.0, 0.0]; pic.n_relevant[:] = [2, 0]
        >>> r_precision(pic, -1, parse_metric("Rprec"), Options(), np).value.tolist()
        [0.5, nan]
    """
    den = as_float(pic.n_relevant, xp)
    num = pic.hits_at_r  # 0 for a user with nothing relevant
    return Parts(undefined_where(pic.n_relevant == 0, num / den, xp), num, den)


ENTRY = Entry(
    family=Family.RPREC,
    name="Rprec",
    aliases=("rprec", "r-precision", "r_precision", "rprecision"),
    cutoff="none",
    reads=("hits_at_r",),
    options=(),
    reduction="mean",
    undefined="no relevant item",
    compute=r_precision,
    bounds=(0.0, 1.0),
)
