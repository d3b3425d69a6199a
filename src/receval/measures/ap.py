"""Average precision@k = sum_{j<=k} P@j * h_j / N, N chosen by ``ap_normalizer``.

``min_k_relevant`` (default): N = min(k, L), the TensorFlow / Kaggle ``apk`` / Spark rule.
``relevant``: N = L (trec_eval ``map_cut``). ``hits``: N = hits@k (torchmetrics; 0 when no
hit). ``k``: N = k (the list length without a cutoff). ``min_returned_relevant``: N = min(L,
min(k, n)), n the list's length (LensKit's ``AveragePrecision``). Undefined when L = 0. MAP@k
is the mean of AP@k over users.

Under ``ties="average"`` with N = hits@k the value is ``E[ap_sum / hits]``, which is not the
ratio of the expectations where the cut falls inside a tie group: the picture's
``ap_over_hits`` holds it there (NaN elsewhere, where the plain ratio is exact).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import as_float, full, undefined_where, zero_where
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def average_precision(pic: Picture, c: int, spec: MetricSpec, options: Options,
                      xp: Any) -> Parts:
    """Per user: (AP@k, the AP numerator, N); (NaN, 0, 0) for a user with L = 0; 0 when N = 0.

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([6]))
        >>> pic.ap_sum[:, 0] = [0.5 + 2 / 6, 0.0]; pic.hits[:, 0] = [2.0, 0.0]
        >>> pic.n_relevant[:] = [3, 0]
        >>> average_precision(pic, 0, parse_metric("AP@6"), Options(), np).value.round(4)
        array([0.2778,    nan])
    """
    n_rel = pic.n_relevant
    none = n_rel == 0
    num = pic.ap_sum[:, c]  # 0 for a user with nothing relevant
    norm = options.ap_normalizer
    k = spec.k
    if norm == "min_k_relevant":
        den = as_float(n_rel if k is None else xp.minimum(n_rel, k), xp)
    elif norm == "relevant":
        den = as_float(n_rel, xp)
    elif norm == "min_returned_relevant":  # LensKit: min(|test|, len(recs[:k]))
        returned = pic.n_list if k is None else xp.minimum(pic.n_list, k)
        den = as_float(xp.minimum(n_rel, returned), xp)
    elif norm == "k":
        den = as_float(pic.n_list, xp) if k is None else full(num, float(k), xp)
        den = zero_where(none, den, xp)
    else:
        den = pic.hits[:, c]
    value = zero_where(den == 0.0, num / den, xp)
    if norm == "hits" and pic.ap_over_hits is not None:
        inside = pic.ap_over_hits[:, c]
        value = xp.where(xp.isnan(inside), value, inside)
    return Parts(undefined_where(none, value, xp), num, den)


def _extra(options: Options) -> frozenset[str]:
    if options.ties == "average" and options.ap_normalizer == "hits":
        return frozenset({"ap_over_hits"})
    return frozenset()


ENTRY = Entry(
    family=Family.AP,
    name="AP",
    aliases=("ap", "map"),
    cutoff="optional",
    reads=("ap_sum", "hits", "n_list"),
    options=("ap_normalizer",),
    reduction="mean",
    undefined="no relevant item",
    compute=average_precision,
    extra=_extra,
    bounds=(0.0, 1.0),
    grows_with_k=lambda o: o.ap_normalizer == "relevant",  # the other divisors grow with k
)

#: AP averaged geometrically over users (trec_eval's ``gm_map``): ``exp(mean(log(max(AP,
#: 1e-5))))``; per user it is AP itself. The floor keeps a user with AP = 0 from making the
#: mean 0 (trec_eval's ``MIN_GEO_MEAN``), so gm_map rewards improving the worst users.
GM_ENTRY = Entry(
    family=Family.GM_AP,
    name="gm_AP",
    aliases=("gm_ap", "gm_map", "gmap"),
    cutoff="optional",
    reads=("ap_sum", "hits", "n_list"),
    options=("ap_normalizer",),
    reduction="geometric",
    undefined="no relevant item",
    compute=average_precision,
    extra=_extra,
    bounds=(0.0, 1.0),
    grows_with_k=lambda o: o.ap_normalizer == "relevant",  # the other divisors grow with k
)
