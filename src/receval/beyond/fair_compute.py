"""The group metrics' functions for :func:`receval.beyond.compute.compute` (each declared as
its entry's :attr:`~receval.beyond.names.BeyondEntry.compute`): exposure fairness
(:mod:`receval.beyond.fairness`), expected exposure and calibration
(:mod:`receval.beyond.calibration`) from the lists, the item groups of the
:class:`~receval.beyond.context.Context` and the switches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from receval.beyond import calibration as cal
from receval.beyond import fairness as fair
from receval.beyond.compute import Job
from receval.beyond.context import Context
from receval.beyond.expected_exposure import COLUMNS as EE_COLUMNS
from receval.beyond.expected_exposure import (
    GROUP_COLUMNS,
    expected_exposure,
    group_expected_exposure,
)
from receval.beyond.settings import BeyondOptions
from receval.exceptions import ReceValError

if TYPE_CHECKING:
    from receval.beyond.names import BeyondSpec

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


def _truth(job: Job) -> tuple[np.ndarray, np.ndarray]:
    ctx = job.ctx
    if ctx.truth_indptr is None or ctx.truth_items is None:
        raise ReceValError(f"metric {job.name!r} needs each user's relevant items")
    return ctx.truth_indptr, ctx.truth_items


def _groups(job: Job) -> np.ndarray:
    if job.ctx.groups is None:
        raise ReceValError(f"metric {job.name!r} needs item groups: pass item_groups= (item "
                           f"-> group) or item_features= (categories)")
    return job.ctx.groups


def expected_exposure_metric(job: Job) -> np.ndarray:
    """``EE_L``, ``EE_D``, ``EE_R`` (and their ``_norm`` forms) per user
    (:func:`receval.beyond.expected_exposure.expected_exposure`)."""
    o = job.options
    ee = expected_exposure(job.lists, _truth(job), job.ctx.n_items, model=o.ee_model,
                           patience=o.ee_patience, utility=o.ee_utility)
    return np.ascontiguousarray(ee[:, EE_COLUMNS.index(job.spec.metric)])


def group_expected_exposure_metric(job: Job) -> np.ndarray:
    """``EE_*_group``: the exposures and targets summed per item group
    (:func:`receval.beyond.expected_exposure.group_expected_exposure`)."""
    o = job.options
    truth = _truth(job)
    ee = group_expected_exposure(job.lists, truth, _groups(job), model=o.ee_model,
                                 patience=o.ee_patience, utility=o.ee_utility)
    return np.ascontiguousarray(ee[:, GROUP_COLUMNS.index(job.spec.metric)])


def _shares(job: Job) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The item groups, the rank discounts and the target shares."""
    o, ctx = job.options, job.ctx
    groups = _groups(job)
    disc = fair.discounts(o.exposure_discount, job.spec.k, o.rbp_patience)
    target = fair.target_shares(o.fairness_target, groups, ctx.catalogue, ctx.group_names)
    return groups, disc, target


def group_exposure_metric(job: Job) -> float:
    """The gap between the groups' exposure and their target shares
    (:func:`receval.beyond.fairness.exposure_gap`); the per-group table to ``job.tables``."""
    groups, disc, target = _shares(job)
    shares = fair.group_exposure(job.lists, groups, disc)
    if job.tables is not None:
        job.tables[job.name] = {"group": list(job.ctx.group_names),
                                "exposure": shares.tolist(), "target": target.tolist()}
    return fair.exposure_gap(shares, target)


def awrf_metric(job: Job) -> np.ndarray:
    """Attention-weighted rank fairness per list (:func:`receval.beyond.fairness.awrf`)."""
    groups, disc, target = _shares(job)
    return fair.awrf(job.lists, groups, disc, target)


def ndcg_awrf_metric(job: Job) -> np.ndarray:
    """TREC Fair's nDCG x AWRF per list."""
    value = awrf_metric(job)
    return fair.trec_ndcg(job.lists, _truth(job), job.ctx.n_items) * value


def ranked_metric(job: Job) -> np.ndarray:
    """rND, rKL or rRD against the protected group
    (:func:`receval.beyond.fairness.ranked_fairness`)."""
    o, ctx = job.options, job.ctx
    groups = _groups(job)
    flag = groups[:, protected_index(ctx, o.protected_group)] > 0
    share = None
    if o.fairness_population == "catalogue":
        share = float(flag[ctx.catalogue].mean()) if ctx.catalogue.any() else float("nan")
    return fair.ranked_fairness(job.spec.metric, job.lists, flag, step=o.fairness_step,
                                share=share)


def calibration_metric(job: Job) -> np.ndarray:
    """Miscalibration against each user's history: KL (``calibration``) or Jensen-Shannon
    (``calibration_js``) (:mod:`receval.beyond.calibration`)."""
    o, ctx, name = job.options, job.ctx, job.name
    groups = _groups(job)
    if ctx.train_indptr is None or ctx.train_items is None:
        raise ReceValError(f"metric {name!r} needs each user's training items: pass train=")
    history = (ctx.train_indptr, ctx.train_items)
    counts = ctx.train_counts if o.calibration_history == "rows" else None
    js_wanted = job.spec.metric == "calibration_js"
    if o.calibration_style == "snippet":
        if js_wanted:
            raise ReceValError(f"metric {name!r}: calibration_style='snippet' has KL only")
        return cal.calibration_snippet(job.lists, history, groups, alpha=o.calibration_alpha,
                                       history_counts=counts)
    kl, js = cal.calibration(job.lists, history, groups, alpha=o.calibration_alpha,
                             smooth=o.calibration_smooth, discount=o.calibration_discount,
                             base=o.calibration_base,
                             history_weights=None if counts is None
                             else counts.astype(np.float64))
    if not js_wanted:
        return kl
    return np.sqrt(np.abs(js)) if o.calibration_js == "distance" else js


def protected_name(ctx: Context, o: BeyondOptions) -> Any:
    """The protected group rND/rKL/rRD use: ``o.protected_group``, else the default
    (:func:`protected_index`), as a plain value for ``Result.options["beyond"]``.

    Example:
        >>> from receval.beyond.context import context
        >>> ctx = context(None, None, 3, catalogue=np.ones(3, bool))
        >>> ctx.groups, ctx.group_names = np.array([[1., 0], [0, 1], [1, 0]]), ("a", "b")
        >>> protected_name(ctx, BeyondOptions())
        'b'
    """
    name = ctx.group_names[protected_index(ctx, o.protected_group)]
    return name.item() if isinstance(name, np.generic) else name


def undefined_reasons(spec: BeyondSpec, lists: np.ndarray, ctx: Context, o: BeyondOptions,
                      undefined: np.ndarray) -> dict[str, int]:
    """Why the ``undefined`` rows of ``spec`` (a per-user metric, ``lists`` in context codes,
    cut at its k) have no value, as ``reason -> users``: ``"empty list"``, else what the
    entry's :attr:`~receval.beyond.names.BeyondEntry.reasons` tells (for rND/rKL/rRD a list
    without, or with only, items of the protected group, or a normaliser of 0 otherwise; for
    calibration no training history or no listed item with a group; for diversity fewer than
    two listed items; for serendipity no training history), ``"undefined"`` otherwise.

    Example:
        >>> from receval.beyond.context import context
        >>> from receval.beyond.names import parse_beyond
        >>> ctx = context(None, None, 3, catalogue=np.ones(3, bool))
        >>> ctx.groups, ctx.group_names = np.array([[1., 0], [1, 0], [0, 1]]), ("a", "b")
        >>> lists = np.array([[0, 1], [-1, -1], [0, 2]])
        >>> undefined_reasons(parse_beyond("rND@2"), lists, ctx, BeyondOptions(),
        ...                   np.array([True, True, False]))
        {'empty list': 1, "no item of the protected group 'b' in the list": 1}
    """
    rows = np.flatnonzero(undefined)
    if not len(rows):
        return {}
    n = (lists[rows] >= 0).sum(axis=1)
    tell = spec.entry.reasons
    why = (np.full(len(rows), "undefined", dtype=object) if tell is None
           else np.asarray(tell(Job(spec, lists, ctx, o), rows), dtype=object))
    why[n == 0] = "empty list"
    reasons, counts = np.unique(why.astype(str), return_counts=True)
    return {str(r): int(c) for r, c in zip(reasons, counts, strict=True)}


def _reasons(rows: np.ndarray) -> np.ndarray:
    return np.full(len(rows), "undefined", dtype=object)


def ranked_reasons(job: Job, rows: np.ndarray) -> np.ndarray:
    """rND/rKL/rRD: why each of ``rows`` is undefined (see :func:`undefined_reasons`)."""
    ctx, o = job.ctx, job.options
    why = _reasons(rows)
    if ctx.groups is None:
        return why
    sub = job.lists[rows]
    listed = sub >= 0
    n = listed.sum(axis=1)
    name = protected_name(ctx, o)
    flag = ctx.groups[:, protected_index(ctx, o.protected_group)] > 0
    p = (flag[np.where(listed, sub, 0)] & listed).sum(axis=1)
    why[:] = (f"every arrangement of the list scores 0 (cut points at multiples of "
              f"fairness_step={o.fairness_step})")
    why[p == n] = f"every listed item is of the protected group {name!r}"
    why[p == 0] = f"no item of the protected group {name!r} in the list"
    return why


def calibration_reasons(job: Job, rows: np.ndarray) -> np.ndarray:
    """calibration, calibration_js: no training history, or no listed item with a group."""
    why = _reasons(rows)
    why[:] = "no listed item with a group"
    if job.ctx.train_indptr is not None:
        why[np.diff(job.ctx.train_indptr)[rows] == 0] = "no training history (train=)"
    return why


def diversity_reasons(job: Job, rows: np.ndarray) -> np.ndarray:
    """diversity: fewer than two listed items."""
    why = _reasons(rows)
    why[(job.lists[rows] >= 0).sum(axis=1) < 2] = "fewer than two listed items"
    return why


def serendipity_reasons(job: Job, rows: np.ndarray) -> np.ndarray:
    """serendipity: no training history."""
    why = _reasons(rows)
    if job.ctx.train_indptr is not None:
        why[np.diff(job.ctx.train_indptr)[rows] == 0] = "no training history (train=)"
    return why
