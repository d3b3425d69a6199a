"""The registry of metric families: what each is, reads and needs, and :func:`compute`.

Every engine ends the same way: it builds a :class:`~receval.picture.Picture` of its users at
:func:`cutoffs_needed` (with the optional fields of :func:`needs`) and calls :func:`compute`,
which runs each metric's array function (one module per family, declared by its ``ENTRY``)
in the picture's own array namespace: numpy for the numba engine, torch for the torch engine.

Adding a family is one module with an array function and an
:class:`~receval.measures.entry.Entry`, listed in :data:`ENTRIES` (and a code in
:class:`~receval.measures.family.Family`); names, parsing, the picture's cutoffs and fields
and the reduction all follow from the entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from array_api_compat import array_namespace, device

from receval.exceptions import ReceValError
from receval.measures import (
    ap,
    bpref,
    counts,
    dcg,
    err,
    fbeta,
    hit,
    hits,
    iprec,
    judged,
    ncrr,
    ndcg,
    precision,
    rating,
    rbp,
    recall,
    rprec,
    rprec_mult,
    rr,
)
from receval.measures.entry import Entry
from receval.measures.family import Family
from receval.picture import NO_CUTOFF

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture

#: one entry per family, in :class:`Family` order
ENTRIES: dict[Family, Entry] = {
    e.family: e
    for e in sorted(
        (precision.ENTRY, recall.ENTRY, fbeta.ENTRY, ap.ENTRY, rprec.ENTRY, ndcg.ENTRY,
         rr.ENTRY, hit.ENTRY, rating.RMSE_ENTRY, rating.MAE_ENTRY, hits.ENTRY, dcg.ENTRY,
         bpref.ENTRY, rbp.ENTRY, rbp.RESID_ENTRY, err.ENTRY, judged.ENTRY, iprec.ENTRY,
         iprec.ELEVEN_ENTRY, rprec_mult.ENTRY, counts.NUM_REL_ENTRY, counts.NUM_RET_ENTRY,
         ap.GM_ENTRY, counts.NUM_REL_RET_ENTRY, ncrr.ENTRY),
        key=lambda e: int(e.family),
    )
}


class MetricArrays(NamedTuple):
    """Per user (rows) and metric (columns): ``value`` (NaN: undefined), ``num``, ``den``
    (what micro averaging and pooling sum) and ``den2`` (F-beta: recall's denominator, 0 in
    the other columns). ``num``, ``den`` and ``den2`` have no rows unless asked for."""

    value: Any
    num: Any
    den: Any
    den2: Any


def entry(spec: MetricSpec) -> Entry:
    """The registry entry of a metric.

    Example:
        >>> from receval.measures.spec import parse_metric
        >>> entry(parse_metric("MAP@10")).reads
        ('ap_sum', 'hits', 'n_list')
    """
    return ENTRIES[spec.family]


def cutoffs_needed(specs: Sequence[MetricSpec], options: Options) -> list[int]:
    """The cutoffs a picture must hold for ``specs``, ascending (``0``: the whole list).

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> from receval.options import Options
        >>> cutoffs_needed(parse_metrics(["P@10", "nDCG@5", "MRR", "Rprec"]), Options())
        [0, 5, 10]
    """
    ks: set[int] = set()
    for spec in specs:
        if ENTRIES[spec.family].cutoff != "none":
            ks.add(NO_CUTOFF if spec.k is None else spec.k)
    return sorted(ks)


def needs(specs: Sequence[MetricSpec], options: Options) -> set[str]:
    """The picture fields ``specs`` read, the optional ones included (``ap_over_hits``).

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> from receval.options import Options
        >>> sorted(needs(parse_metrics(["AP@5"]), Options(ties="average", ap_normalizer="hits")))
        ['ap_over_hits', 'ap_sum', 'hits', 'n_list']
    """
    fields: set[str] = set()
    for spec in specs:
        e = ENTRIES[spec.family]
        fields.update(e.reads)
        fields.update(e.extra(options))
    return fields


def top_k_needed(specs: Sequence[MetricSpec], options: Options) -> int:
    """The length ``K`` of the engines' ``top_items`` lists (:attr:`Picture.top_items
    <receval.picture.Picture.top_items>`): the largest cutoff asked of a family that reads
    ``top_items``, 0 when none does (the whole list, ``k=None``, counts as 0: such a family
    must take a cutoff).

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> from receval.options import Options
        >>> top_k_needed(parse_metrics(["P@10", "nDCG@5"]), Options())
        0
    """
    return max((spec.k or 0 for spec in specs if "top_items" in ENTRIES[spec.family].reads
                or "top_items" in ENTRIES[spec.family].extra(options)), default=0)


def wants_parts(specs: Sequence[MetricSpec], options: Options) -> bool:
    """Whether the users' numerators and denominators are needed: micro averages, and the
    pooled families (RMSE, MAE).

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> from receval.options import Options
        >>> wants_parts(parse_metrics(["P@5"]), Options())
        False
        >>> wants_parts(parse_metrics(["MAE"]), Options())
        True
    """
    return options.average == "micro" or any(
        ENTRIES[s.family].reduction == "pooled" for s in specs)


def compute(picture: Picture, specs: Sequence[MetricSpec], options: Options, *,
            parts: bool | None = None) -> MetricArrays:
    """Every metric of ``specs`` for every user of ``picture``, in its array namespace.

    ``parts`` (default: :func:`wants_parts`) keeps the numerators and denominators; without
    them ``num``, ``den`` and ``den2`` have no rows (a gigabyte less at a million users).

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([0, 2]))
        >>> pic.hits[:, 1] = [1.0, 2.0]; pic.rr_sum[:, 0] = [0.5, 1.0]; pic.n_relevant[:] = 2
        >>> out = compute(pic, parse_metrics(["P@2", "MRR"]), Options())
        >>> out.value.tolist(), out.num.shape
        ([[0.5, 0.5], [1.0, 1.0]], (0, 2))
    """
    xp = array_namespace(picture.n_relevant)
    if parts is None:
        parts = wants_parts(specs, options)
    n_users, n_metrics = picture.n_users, len(specs)
    where = device(picture.n_relevant)
    value = xp.empty((n_users, n_metrics), dtype=xp.float64, device=where)
    rows = n_users if parts else 0
    num = xp.empty((rows, n_metrics), dtype=xp.float64, device=where)
    den = xp.empty((rows, n_metrics), dtype=xp.float64, device=where)
    den2 = xp.zeros((rows, n_metrics), dtype=xp.float64, device=where)
    column = {int(k): c for c, k in enumerate(picture.cutoffs.tolist())}
    _check_supported(picture, specs, options)
    with np.errstate(all="ignore"):  # 0/0 and the like are masked as each family says
        for m, spec in enumerate(specs):
            e = ENTRIES[spec.family]
            c = -1 if e.cutoff == "none" else column[NO_CUTOFF if spec.k is None else spec.k]
            out = e.compute(picture, c, spec, options, xp)
            value[:, m] = out.value
            if parts:
                num[:, m] = out.num
                den[:, m] = out.den
                if out.den2 is not None:
                    den2[:, m] = out.den2
    return MetricArrays(value, num, den, den2)


def _check_supported(picture: Picture, specs: Sequence[MetricSpec], options: Options) -> None:
    """A one-line error where a metric cannot be computed from this picture: a field its
    engine does not build (the judged items' ranks: not ``evaluate_scores``), ``max_list``
    on an engine that does not apply it, a family undefined under ``ties="average"``."""
    if options.max_list is not None and picture.n_judged is None:
        raise ReceValError("option max_list (trec_eval -M) is not applied by this engine; "
                           "use receval.evaluate (engine='numba' or 'torch')")
    for spec in specs:
        e = ENTRIES[spec.family]
        if options.ties == "average" and not e.ties_average:
            raise ReceValError(
                f"metric {spec.name!r} reads the ranks of the judged items, which "
                "ties='average' does not fix; choose another tie policy")
        missing = [f for f in e.reads if getattr(picture, f) is None]
        if missing:
            raise ReceValError(
                f"metric {spec.name!r} cannot be computed by this engine (it does not build "
                f"{', '.join(missing)}); use receval.evaluate (engine='numba' or 'torch')")
