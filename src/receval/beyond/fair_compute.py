"""The group metrics' part of :func:`receval.beyond.compute.compute`: exposure fairness
(:mod:`receval.beyond.fairness`) and calibration (:mod:`receval.beyond.calibration`) from the
lists, the item groups of the :class:`~receval.beyond.context.Context` and the switches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from receval.beyond import calibration as cal
from receval.beyond import fairness as fair
from receval.beyond.context import Context
from receval.beyond.expected_exposure import COLUMNS as EE_COLUMNS
from receval.beyond.expected_exposure import (
    GROUP_COLUMNS,
    expected_exposure,
    group_expected_exposure,
)
from receval.beyond.names import BeyondSpec
from receval.beyond.settings import BeyondOptions
from receval.exceptions import ReceValError

FAIRNESS = ("group_exposure", "AWRF", "nDCG_AWRF", "rND", "rKL", "rRD")
CALIBRATION = ("calibration", "calibration_js")
EXPOSURE = tuple(f"EE_{x}{n}" for x in "LDR" for n in ("", "_norm", "_group"))


def protected_index(ctx: Context, given: Any) -> int:
    """The protected group's column: ``given`` by name, else the group with the fewest
    catalogue items (ties: the first in name order).

    Example:
        >>> from receval.beyond.context import context
        >>> ctx = context(None, None, 3, catalogue=np.ones(3, bool))
        >>> ctx.groups, ctx.group_names = np.array([[1., 0], [0, 1], [1, 0]]), ("a", "b")
        >>> protected_index(ctx, None), protected_index(ctx, "a")
        (1, 0)
    """
    assert ctx.groups is not None
    if given is not None:
        if given not in ctx.group_names:
            raise ReceValError(f"protected_group={given!r} is no item's group (groups: "
                               f"{', '.join(map(repr, ctx.group_names[:10]))})")
        return ctx.group_names.index(given)
    counts = (ctx.groups[ctx.catalogue] > 0).sum(axis=0)
    if not counts.any():
        counts = (ctx.groups > 0).sum(axis=0)
    return int(np.argmin(np.where(counts > 0, counts, np.iinfo(np.int64).max)))


def group_metric(spec: BeyondSpec, lists: np.ndarray, ctx: Context, o: BeyondOptions,
                 per_user: dict[str, np.ndarray], summary: dict[str, float],
                 tables: dict[str, Any] | None) -> None:
    """Compute one group metric into ``per_user`` / ``summary`` (and ``tables``)."""
    m, name = spec.metric, spec.name
    if m in GROUP_COLUMNS:
        if ctx.truth_indptr is None or ctx.truth_items is None:
            raise ReceValError(f"metric {name!r} needs each user's relevant items")
        if ctx.groups is None:
            raise ReceValError(f"metric {name!r} needs item groups: pass item_groups= (item "
                               f"-> group) or item_features= (categories)")
        ee = group_expected_exposure(lists, (ctx.truth_indptr, ctx.truth_items), ctx.groups,
                                     model=o.ee_model, patience=o.ee_patience,
                                     utility=o.ee_utility)
        per_user[name] = np.ascontiguousarray(ee[:, GROUP_COLUMNS.index(m)])
        return
    if m in EXPOSURE:
        if ctx.truth_indptr is None or ctx.truth_items is None:
            raise ReceValError(f"metric {name!r} needs each user's relevant items")
        ee = expected_exposure(lists, (ctx.truth_indptr, ctx.truth_items), ctx.n_items,
                               model=o.ee_model, patience=o.ee_patience, utility=o.ee_utility)
        column = EE_COLUMNS.index(m)
        per_user[name] = np.ascontiguousarray(ee[:, column])
        return
    if ctx.groups is None:
        raise ReceValError(f"metric {name!r} needs item groups: pass item_groups= (item -> "
                           f"group) or item_features= (categories)")
    groups = ctx.groups
    if m in ("group_exposure", "AWRF", "nDCG_AWRF"):
        disc = fair.discounts(o.exposure_discount, spec.k, o.rbp_patience)
        target = fair.target_shares(o.fairness_target, groups, ctx.catalogue, ctx.group_names)
        if m == "group_exposure":
            shares = fair.group_exposure(lists, groups, disc)
            summary[name] = fair.exposure_gap(shares, target)
            if tables is not None:
                tables[name] = {"group": list(ctx.group_names), "exposure": shares.tolist(),
                                "target": target.tolist()}
            return
        value = fair.awrf(lists, groups, disc, target)
        if m == "nDCG_AWRF":
            if ctx.truth_indptr is None or ctx.truth_items is None:
                raise ReceValError(f"metric {name!r} needs each user's relevant items")
            value = fair.trec_ndcg(lists, (ctx.truth_indptr, ctx.truth_items),
                                   ctx.n_items) * value
        per_user[name] = value
    elif m in ("rND", "rKL", "rRD"):
        pg = protected_index(ctx, o.protected_group)
        flag = groups[:, pg] > 0
        share = None
        if o.fairness_population == "catalogue":
            share = float(flag[ctx.catalogue].mean()) if ctx.catalogue.any() else float("nan")
        per_user[name] = fair.ranked_fairness(m, lists, flag, step=o.fairness_step,
                                              share=share)
    else:
        if ctx.train_indptr is None or ctx.train_items is None:
            raise ReceValError(f"metric {name!r} needs each user's training items: pass "
                               f"train=")
        history = (ctx.train_indptr, ctx.train_items)
        counts = ctx.train_counts if o.calibration_history == "rows" else None
        if o.calibration_style == "snippet":
            if m == "calibration_js":
                raise ReceValError(f"metric {name!r}: calibration_style='snippet' has KL only")
            per_user[name] = cal.calibration_snippet(lists, history, groups,
                                                     alpha=o.calibration_alpha,
                                                     history_counts=counts)
            return
        kl, js = cal.calibration(lists, history, groups, alpha=o.calibration_alpha,
                                 smooth=o.calibration_smooth,
                                 discount=o.calibration_discount, base=o.calibration_base,
                                 history_weights=None if counts is None
                                 else counts.astype(np.float64))
        if m == "calibration":
            per_user[name] = kl
        else:
            per_user[name] = np.sqrt(np.abs(js)) if o.calibration_js == "distance" else js
