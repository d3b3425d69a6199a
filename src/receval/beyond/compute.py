"""Every requested beyond-accuracy metric from the lists and a :class:`Context`: per-user
arrays for the ``"user"`` metrics, one number for the ``"catalogue"`` ones.

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
from typing import Any

import numpy as np

from receval.beyond import catalogue as cat
from receval.beyond import diversity as div
from receval.beyond import novelty as nov
from receval.beyond import popularity as pop
from receval.beyond import serendipity as ser
from receval.beyond._lists import cut
from receval.beyond.context import Context
from receval.beyond.fair_compute import CALIBRATION, EXPOSURE, FAIRNESS
from receval.beyond.fair_compute import group_metric as _group_metric
from receval.beyond.names import BeyondSpec
from receval.beyond.settings import BeyondOptions
from receval.beyond.similarity import SimArrays
from receval.exceptions import ReceValError


def _need_train(ctx: Context, name: str) -> None:
    if not ctx.has_train:
        raise ReceValError(f"metric {name!r} needs the training data: pass train= (a frame of "
                           f"user, item rows)")


def _rows(ctx: Context, which: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    indptr = ctx.train_indptr if which == "train" else ctx.truth_indptr
    items = ctx.train_items if which == "train" else ctx.truth_items
    if indptr is None or items is None:
        option = "train=" if which == "train" else "the truth"
        raise ReceValError(f"metric {name!r} needs each user's {which} items: pass {option}")
    return indptr, items


def compute(specs: Sequence[BeyondSpec], top: np.ndarray, ctx: Context,
            options: BeyondOptions | None = None, *, tables: dict[str, Any] | None = None
            ) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """``(per_user, summary)``: per-user values (NaN: undefined) of the ``"user"`` metrics,
    and the catalogue metrics' numbers (plus the slot-pooled novelty under
    ``novelty_average="slots"``), keyed by the names as requested.

    ``top`` is ``(U, K)`` item codes of ``ctx`` (``-1`` past a list's end), K at least the
    largest k requested. ``tables`` (a dict) receives each ``group_exposure`` metric's
    per-group table: ``{"group": [...], "exposure": [...], "target": [...]}``.
    """
    o = options or BeyondOptions()
    per_user: dict[str, np.ndarray] = {}
    summary: dict[str, float] = {}
    sim: SimArrays | None = None
    head: np.ndarray | None = None
    for spec in specs:
        lists = cut(top, spec.k, ctx.n_items)
        m, name = spec.metric, spec.name
        if "train" in spec.entry.needs:
            _need_train(ctx, name)
        if m == "coverage":
            summary[name] = cat.coverage(lists, ctx.catalogue, count=o.coverage == "count",
                                         outside=o.coverage_outside, pad=o.catalogue_pad)
        elif m == "distributional_coverage":
            summary[name] = cat.distributional_coverage(
                lists, ctx.n_items, base=o.entropy_base, normalize=o.entropy_normalize)
        elif m == "gini":
            summary[name] = cat.gini(lists, ctx.catalogue, scope=o.gini_scope,
                                     form=o.gini_form, denominator=o.gini_denominator,
                                     pad=o.catalogue_pad)
        elif m == "personalization":
            summary[name] = div.personalization(lists, ctx.n_items, spec.k)
        elif m == "novelty":
            by_users = o.novelty_popularity == "users"
            values = nov.item_novelty(ctx.users if by_users else ctx.interactions,
                                      ctx.n_train_users if by_users else ctx.n_interactions,
                                      base=o.novelty_base, cold=o.novelty_cold)
            per_user[name] = nov.novelty(lists, values)
            if o.novelty_average == "slots":
                summary[name] = nov.novelty_slots(lists, values)
        elif m in FAIRNESS or m in CALIBRATION or m in EXPOSURE:
            _group_metric(spec, lists, ctx, o, per_user, summary, tables)
        elif m in ("diversity", "serendipity"):
            if sim is None and (m == "diversity" or o.serendipity != "rectools"):
                if o.similarity == "cooccurrence":
                    _need_train(ctx, name)
                sim = SimArrays(ctx, o.similarity)
            if m == "serendipity" and o.similarity == "hamming" and o.serendipity != "rectools":
                raise ReceValError(f"metric {name!r}: similarity='hamming' is a distance for "
                                   f"diversity only; choose 'features' or 'cooccurrence'")
            if m == "diversity":
                assert sim is not None
                per_user[name] = div.diversity(lists, sim, short=o.diversity_short)
                if o.diversity_divisor == "items":  # the pair sum over the list's length
                    per_user[name] = div.per_item(per_user[name], lists)
            else:
                relevant = _rows(ctx, "truth", name)
                train = None if o.serendipity == "rectools" else _rows(ctx, "train", name)
                per_user[name] = ser.serendipity(
                    lists, kind=o.serendipity, relevant=relevant, train=train, sim=sim,
                    interactions=ctx.interactions, n_catalogue=int(ctx.catalogue.sum()),
                    all_relevant=o.serendipity_relevance == "all")
        else:
            popularity = ctx.users if o.popularity == "users" else ctx.interactions
            if head is None:
                head = pop.short_head(popularity, o.head_share)
            if m == "ARP":
                norm = {"interactions": ctx.n_interactions,
                        "max": int(popularity.max(initial=0))}.get(o.arp_normalize)
                per_user[name] = pop.arp(lists, popularity, normalize_by=norm, cold=o.arp_cold)
            elif m == "MeanPopRank":
                per_user[name] = pop.arp(lists, pop.popularity_quantile(popularity))
            elif m in ("APLT", "ACLT"):
                tail = (~head if o.tail_ratio is None
                        else pop.tail_by_ratio(popularity, o.tail_ratio))
                per_user[name] = (pop.aplt if m == "APLT" else pop.aclt)(lists, tail)
            elif m == "PopRSP":
                summary[name] = pop.pop_rsp(lists, head, ctx.catalogue,
                                            _rows(ctx, "train", name))
            elif m == "PopREO":
                summary[name] = pop.pop_reo(lists, head, _rows(ctx, "truth", name),
                                            _rows(ctx, "train", name))
            else:  # pragma: no cover - the names table and this dispatch list the same
                raise AssertionError(m)
    return per_user, summary
