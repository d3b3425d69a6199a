"""Every requested beyond-accuracy metric from the lists and a :class:`Context`: per-user
arrays for the ``"user"`` metrics, one number for the ``"catalogue"`` ones.

:func:`compute` calls each metric's declared function
(:attr:`BeyondEntry.compute <receval.beyond.names.BeyondEntry.compute>`) with a :class:`Job`;
the functions of the popularity, novelty, diversity, serendipity and catalogue metrics are
here, those of the group metrics in :mod:`receval.beyond.fair_compute`.

Example:
    >>> from receval.beyond.context import context
    >>> from receval.beyond.names import parse_beyond
    >>> ctx = context(np.array([0, 0, 1]), np.array([0, 1, 1]), 3)
    >>> per_user, summary = compute([parse_beyond("coverage@2"), parse_beyond("novelty@2")],
    ...                             np.array([[1, 2], [1, 0]]), ctx)
    >>> summary["coverage@2"], per_user["novelty@2"].tolist()
    (1.0, [0.29248125036057815, 1.0849625007211563])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from receval import checks
from receval.beyond import catalogue as cat
from receval.beyond import diversity as div
from receval.beyond import novelty as nov
from receval.beyond import popularity as pop
from receval.beyond import serendipity as ser
from receval.beyond._lists import cut
from receval.beyond.context import Context
from receval.beyond.settings import BeyondOptions
from receval.beyond.similarity import SimArrays
from receval.checks import HeadTiesWarning
from receval.exceptions import ReceValError

if TYPE_CHECKING:
    from receval.beyond.names import BeyondSpec


@dataclass
class Job:
    """What a metric's function reads: the request, the lists cut at its ``k``, the context
    and the switches, plus what one :func:`compute` call shares between its metrics.

    Attributes:
        spec: the metric as requested.
        lists: ``(U, k)`` item codes of ``ctx`` (``-1`` past a list's end).
        ctx: the :class:`Context` (training data, truth, features, groups, catalogue).
        options: the switches in force.
        shared: values computed once per call and reused by the next metric (the item
            similarity, the short head).
        tables: where a metric puts a per-group table (``group_exposure``), or ``None``.
        summary: where a per-user metric puts a pooled number that replaces its users' mean
            (novelty under ``novelty_average="slots"``).

    Example:
        >>> from receval.beyond.context import context
        >>> from receval.beyond.names import parse_beyond
        >>> job = Job(parse_beyond("coverage@1"), np.array([[0]]),
        ...           context(None, None, 2, catalogue=np.ones(2, bool)), BeyondOptions())
        >>> job.name, coverage(job)
        ('coverage@1', 0.5)
    """

    spec: BeyondSpec
    lists: np.ndarray
    ctx: Context
    options: BeyondOptions
    shared: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, Any] | None = None
    summary: dict[str, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The metric's name as requested (``novelty@10``)."""
        return self.spec.name


def _need_train(ctx: Context, name: str) -> None:
    if not ctx.has_train:
        raise ReceValError(f"metric {name!r} needs the training data: pass train= (a frame of "
                           f"user, item rows)")


def rows(job: Job, which: str) -> tuple[np.ndarray, np.ndarray]:
    """Each user's ``"train"`` or ``"truth"`` items as ``(indptr, items)``, or a one-line
    error naming what to pass.

    Example:
        >>> from receval.beyond.context import context
        >>> from receval.beyond.names import parse_beyond
        >>> job = Job(parse_beyond("PopREO@1"), np.array([[0]]),
        ...           context(np.array([0]), np.array([0]), 1), BeyondOptions())
        >>> rows(job, "truth")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: metric 'PopREO@1' needs each user's truth items: pass the truth
    """  # noqa: E501
    ctx = job.ctx
    indptr = ctx.train_indptr if which == "train" else ctx.truth_indptr
    items = ctx.train_items if which == "train" else ctx.truth_items
    if indptr is None or items is None:
        option = "train=" if which == "train" else "the truth"
        raise ReceValError(f"metric {job.name!r} needs each user's {which} items: pass {option}")
    return indptr, items


def compute(specs: Sequence[BeyondSpec], top: np.ndarray, ctx: Context,
            options: BeyondOptions | None = None, *, tables: dict[str, Any] | None = None
            ) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """``(per_user, summary)``: per-user values (NaN: undefined) of the ``"user"`` metrics,
    and the catalogue metrics' numbers (plus the slot-pooled novelty under
    ``novelty_average="slots"``), keyed by the names as requested.

    ``top`` is ``(U, K)`` item codes of ``ctx`` (``-1`` past a list's end), K at least the
    largest k requested. ``tables`` (a dict) receives each ``group_exposure`` metric's
    per-group table: ``{"group": [...], "exposure": [...], "target": [...]}``. Each metric
    is its entry's function (:attr:`~receval.beyond.names.BeyondEntry.compute`): a new entry
    is computed here with no edit.
    """
    o = options or BeyondOptions()
    per_user: dict[str, np.ndarray] = {}
    summary: dict[str, float] = {}
    shared: dict[str, Any] = {}
    for spec in specs:
        entry = spec.entry
        if "train" in entry.needs:
            _need_train(ctx, spec.name)
        job = Job(spec, cut(top, spec.k, ctx.n_items), ctx, o, shared, tables, summary)
        value = entry.compute(job)
        if entry.reduction == "user":
            per_user[spec.name] = np.ascontiguousarray(value, dtype=np.float64)
        else:
            summary[spec.name] = float(value)
    return per_user, summary


# --- the catalogue metrics -------------------------------------------------------------------


def coverage(job: Job) -> float:
    """Catalogue coverage (:func:`receval.beyond.catalogue.coverage`)."""
    o = job.options
    return cat.coverage(job.lists, job.ctx.catalogue, count=o.coverage == "count",
                        outside=o.coverage_outside, pad=o.catalogue_pad)


def distributional_coverage(job: Job) -> float:
    """The entropy of the exposure (:func:`receval.beyond.catalogue.distributional_coverage`)."""
    o = job.options
    return cat.distributional_coverage(job.lists, job.ctx.n_items, base=o.entropy_base,
                                       normalize=o.entropy_normalize)


def gini(job: Job) -> float:
    """The Gini index of the exposure (:func:`receval.beyond.catalogue.gini`)."""
    o = job.options
    return cat.gini(job.lists, job.ctx.catalogue, scope=o.gini_scope, form=o.gini_form,
                    denominator=o.gini_denominator, pad=o.catalogue_pad)


def personalization(job: Job) -> float:
    """One minus the lists' mean overlap (:func:`receval.beyond.diversity.personalization`)."""
    return div.personalization(job.lists, job.ctx.n_items, job.spec.k)


# --- novelty, diversity, serendipity ---------------------------------------------------------


def novelty(job: Job) -> np.ndarray:
    """Each list's mean self-information (:func:`receval.beyond.novelty.novelty`); under
    ``novelty_average="slots"`` the slots' pooled mean goes to ``job.summary``."""
    o, ctx = job.options, job.ctx
    by_users = o.novelty_popularity == "users"
    values = nov.item_novelty(ctx.users if by_users else ctx.interactions,
                              ctx.n_train_users if by_users else ctx.n_interactions,
                              base=o.novelty_base, cold=o.novelty_cold)
    if o.novelty_average == "slots":
        job.summary[job.name] = nov.novelty_slots(job.lists, values)
    return nov.novelty(job.lists, values)


def _similarity(job: Job) -> SimArrays:
    """The item similarity of ``job.options.similarity``, built once per call."""
    sim = job.shared.get("similarity")
    if sim is None:
        if job.options.similarity == "cooccurrence":
            _need_train(job.ctx, job.name)
        sim = job.shared["similarity"] = SimArrays(job.ctx, job.options.similarity)
    return sim


def diversity(job: Job) -> np.ndarray:
    """Intra-list diversity (:func:`receval.beyond.diversity.diversity`)."""
    value = div.diversity(job.lists, _similarity(job), short=job.options.diversity_short)
    if job.options.diversity_divisor == "items":  # the pair sum over the list's length
        value = div.per_item(value, job.lists)
    return value


def serendipity(job: Job) -> np.ndarray:
    """Serendipity in the form ``job.options.serendipity``
    (:func:`receval.beyond.serendipity.serendipity`)."""
    o, ctx = job.options, job.ctx
    sim = None
    if o.serendipity != "rectools":
        sim = _similarity(job)
        if o.similarity == "hamming":
            raise ReceValError(f"metric {job.name!r}: similarity='hamming' is a distance for "
                               f"diversity only; choose 'features' or 'cooccurrence'")
    relevant = rows(job, "truth")
    train = None if o.serendipity == "rectools" else rows(job, "train")
    return ser.serendipity(job.lists, kind=o.serendipity, relevant=relevant, train=train,
                           sim=sim, interactions=ctx.interactions,
                           n_catalogue=int(ctx.catalogue.sum()),
                           all_relevant=o.serendipity_relevance == "all")


# --- popularity bias -------------------------------------------------------------------------


def _popularity(job: Job) -> np.ndarray:
    return job.ctx.users if job.options.popularity == "users" else job.ctx.interactions


def _head(job: Job) -> np.ndarray:
    """The short head (:func:`receval.beyond.popularity.short_head`), found once per call."""
    head = job.shared.get("head")
    if head is None:
        popularity = _popularity(job)
        head = job.shared["head"] = pop.short_head(popularity, job.options.head_share)
        _warn_tied_cut(popularity, head, ~head, f"head_share={job.options.head_share}")
    return head


def _warn_tied_cut(popularity: np.ndarray, side: np.ndarray, rest: np.ndarray,
                   option: str) -> None:
    """Warn (``head-ties``) where the cut between popular and long-tail items goes through
    items of equal popularity (their side then follows their first appearance)."""
    tied = pop.tie_across(popularity, side, rest)
    if tied is not None:
        checks.warn(HeadTiesWarning,
                    f"the split of the items into popular and long tail ({option}) cuts "
                    f"through items of equal training popularity ({tied}): which of them count "
                    f"as popular follows the order in which they first appear, so the "
                    f"popularity-bias metrics may change with the order of the rows")


def arp(job: Job) -> np.ndarray:
    """Average recommendation popularity (:func:`receval.beyond.popularity.arp`)."""
    o, popularity = job.options, _popularity(job)
    norm = {"interactions": job.ctx.n_interactions,
            "max": int(popularity.max(initial=0))}.get(o.arp_normalize)
    return pop.arp(job.lists, popularity, normalize_by=norm, cold=o.arp_cold)


def mean_pop_rank(job: Job) -> np.ndarray:
    """The mean popularity quantile of the listed items."""
    return pop.arp(job.lists, pop.popularity_quantile(_popularity(job)))


def _tail(job: Job) -> np.ndarray:
    o = job.options
    if o.tail_ratio is None:
        return ~_head(job)
    popularity = _popularity(job)
    tail = job.shared.get("tail")
    if tail is None:
        tail = job.shared["tail"] = pop.tail_by_ratio(popularity, o.tail_ratio)
        if o.tail_ratio <= 1:  # a count of items, not a threshold of popularity
            _warn_tied_cut(popularity, tail, ~tail & (popularity > 0),
                           f"tail_ratio={o.tail_ratio}")
    return tail


def aplt(job: Job) -> np.ndarray:
    """The share of long-tail items in each list (:func:`receval.beyond.popularity.aplt`)."""
    return pop.aplt(job.lists, _tail(job))


def aclt(job: Job) -> np.ndarray:
    """The count of long-tail items in each list (:func:`receval.beyond.popularity.aclt`)."""
    return pop.aclt(job.lists, _tail(job))


def pop_rsp(job: Job) -> float:
    """Popularity-based statistical parity (:func:`receval.beyond.popularity.pop_rsp`)."""
    return pop.pop_rsp(job.lists, _head(job), job.ctx.catalogue, rows(job, "train"))


def pop_reo(job: Job) -> float:
    """Popularity-based equal opportunity (:func:`receval.beyond.popularity.pop_reo`)."""
    return pop.pop_reo(job.lists, _head(job), rows(job, "truth"), rows(job, "train"))
