"""DCG@k = sum_{j<=k} gain_j / log2(j + 1), unnormalised (ranx ``dcg`` with ``gain="linear"``).

Gains follow ``gain`` (binary, linear: the rating, exponential: 2^rating - 1) and the
discount ``discount`` (``log2(max(j, 2))``: LensKit's ``DCG``), as nDCG's. A
user without a relevant item has DCG 0. The picture holds DCG scaled by ``2^-gain_shift``
(huge graded gains); the value is scaled back (``inf`` only if it does not fit in a float).
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


def dcg(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (DCG@k, DCG@k, 1).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([3]))
        >>> pic.dcg[:, 0] = [1.5, 0.0]; pic.gain_shift[:] = [1, 0]
        >>> dcg(pic, 0, parse_metric("DCG@3"), Options(), np).value.tolist()
        [3.0, 0.0]
    """
    scaled = pic.dcg[:, c]
    shift = pic.gain_shift
    if bool(xp.any(shift != 0)):
        scaled = scaled * xp.pow(full(scaled, 2.0, xp), xp.astype(shift, xp.float64))
    return Parts(scaled, scaled, full(scaled, 1.0, xp))


ENTRY = Entry(
    family=Family.DCG,
    name="DCG",
    aliases=("dcg",),
    cutoff="optional",
    reads=("dcg", "gain_shift"),
    options=("gain", "discount", "persistence"),
    reduction="mean",
    undefined="",
    compute=dcg,
    bounds=(0.0, float("inf")), grows_with_k=True,  # gains are never negative (shaping)
)
