"""nDCG@k = DCG@k / IDCG@k, DCG = sum gain_j / log2(j + 1); undefined when IDCG <= 0.

The picture's DCG and IDCG come scaled by ``2^-gain_shift`` per user (huge graded gains,
:func:`receval.measures.gains.gain_shift`): the ratio is the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import undefined_where, zero_where
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def ndcg(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (nDCG@k, DCG@k, IDCG@k); (NaN, 0, 0) for a user with L = 0, and NaN (IDCG
    reported as 0) when every relevant gain is 0 or below.

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([2]))
        >>> pic.dcg[:, 0] = [0.5, 0.0]; pic.idcg[:, 0] = [1.0, 0.0]; pic.n_relevant[:] = [1, 0]
        >>> ndcg(pic, 0, parse_metric("nDCG@2"), Options(), np).value.tolist()
        [0.5, nan]
    """
    none = pic.n_relevant == 0
    num = pic.dcg[:, c]  # 0 for a user with nothing relevant
    den = pic.idcg[:, c]
    bad = den <= 0.0
    value = undefined_where(bad | none, num / den, xp)
    return Parts(value, num, zero_where(bad | none, den, xp))


ENTRY = Entry(
    family=Family.NDCG,
    name="nDCG",
    aliases=("ndcg",),
    cutoff="optional",
    reads=("dcg", "idcg"),
    options=("gain",),
    reduction="mean",
    undefined="no relevant item, or the ideal DCG is 0 (every relevant gain 0)",
    compute=ndcg,
    bounds=(0.0, 1.0),
)
