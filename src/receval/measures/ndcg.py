"""nDCG@k = DCG@k / IDCG@k, DCG = sum gain_j / log2(j + 1); undefined when IDCG <= 0.

The discount is the ``discount`` option's (``log2(max(j, 2))``: LensKit's). IDCG is the
user's relevant items in their best order (``ideal="achievable"``), or ``ideal="k"``: every
one of the k ranks relevant with gain 1 (RecTools' default), the same sums of discounts for
every user. The picture's DCG and IDCG come scaled by ``2^-gain_shift`` per user (huge graded
gains, :func:`receval.engines.gains.gain_shift`): the ratio is the same.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from receval.measures._arrays import full, undefined_where, zero_where
from receval.measures.discounts import DISCOUNT_CODES, ideal_dcg, log2_ranks
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
    if options.ideal == "k" and spec.k is not None:  # binary gains (Options checks it)
        den = full(den, ideal_of_k(spec.k, options.discount, options.persistence), xp)
    bad = den <= 0.0
    value = undefined_where(bad | none, num / den, xp)
    return Parts(value, num, zero_where(bad | none, den, xp))


@lru_cache(maxsize=64)
def ideal_of_k(k: int, discount: str, persistence: float = 0.9) -> float:
    """The DCG of k relevant items of gain 1: ``sum_{j<=k} 1 / discount(j)``, summed in rank
    order as the engines sum an ideal DCG (the same bits).

    Example:
        >>> ideal_of_k(2, "log2"), ideal_of_k(2, "log2_max2")
        (1.6309297535714575, 2.0)
    """
    out = np.empty(k + 1)
    ideal_dcg(np.ones(k), log2_ranks(max(k, 1), DISCOUNT_CODES[discount], persistence), out)
    return float(out[k])


ENTRY = Entry(
    family=Family.NDCG,
    name="nDCG",
    aliases=("ndcg",),
    cutoff="optional",
    reads=("dcg", "idcg"),
    options=("gain", "discount", "ideal", "persistence"),
    reduction="mean",
    undefined="no relevant item, or the ideal DCG is 0 (every relevant gain 0)",
    compute=ndcg,
    bounds=(0.0, 1.0),
)
