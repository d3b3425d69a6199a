"""The fairness and calibration metrics in :func:`receval.monitor`'s windows.

A window's lists are evaluated as :func:`receval.evaluate` evaluates them, each served list one
"user"; a per-list fairness or calibration metric is then one more per-list value, summed
exactly into the window like any mean (and merged across runs through the state):

- ``AWRF@k``, ``nDCG_AWRF@k``, ``rND@k``, ``rKL@k``, ``rRD@k`` and the expected exposure
  ``EE_*@k`` read the list, the item groups (``item_groups=`` or ``item_features=``; the
  plain ``EE_L``, ``EE_D``, ``EE_R`` none) and the list's judged impressions: the entries
  that declare ``per_list`` (:class:`~receval.beyond.names.BeyondEntry`);
- ``calibration@k`` and ``calibration_js@k`` also read the history of the list's user: the
  rows of ``train=`` (user, item) of that user.

What would change with the window's population is refused in one line: a catalogue-level
metric (``group_exposure@k``, ``coverage@k``...: one number over every list, no per-list
sums to merge across runs), the other beyond-accuracy metrics (their popularity or
similarity would be the training data's, not the window's), a target or population read
from the catalogue (``fairness_target="catalogue"``, ``fairness_population="catalogue"``:
each window's catalogue differs) and rND/rKL/rRD without ``protected_group`` (by default the
group with the fewest catalogue items, which could change from one window to the next).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from receval.beyond.names import ENTRIES, BeyondSpec, split_metrics
from receval.beyond.settings import resolve
from receval.exceptions import ReceValError
from receval.scalars import plain
from receval.training import Training

#: the beyond-accuracy metrics a monitor window computes (registry names), as their entries
#: declare (:attr:`~receval.beyond.names.BeyondEntry.per_list`) when this module is loaded
PER_LIST = tuple(e.name for e in ENTRIES.values() if e.per_list)

#: the keyword arguments of :func:`receval.monitor` that feed them (to :func:`receval.evaluate`)
INPUTS = ("item_groups", "item_features", "item_features_columns", "train", "beyond")


def fairness_specs(names: Sequence[str], options: dict[str, Any], *,
                   switches: bool = True) -> list[BeyondSpec]:
    """The fairness and calibration metrics among ``names``, or a one-line error for a
    beyond-accuracy metric, a missing input or (``switches``) a switch a window cannot
    compute (see the module).

    Example:
        >>> fairness_specs(["P@5", "AWRF@5"], {"item_groups": {1: "a"}})[0].name
        'AWRF@5'
        >>> fairness_specs(["coverage@5"], {})
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: 'coverage@5' is one number over every list of a \
window (catalogue level): its sums do not merge across lists, runs and windows; receval \
monitor computes the per-list fairness and calibration metrics (AWRF@k, nDCG_AWRF@k, rND@k, \
rKL@k, rRD@k, calibration@k, calibration_js@k, EE_L@k, ...)
    """
    specs = split_metrics(list(names))[1]
    offered = ", ".join(f"{m}@k" for m in PER_LIST[:7]) + ", EE_L@k, ..."
    for spec in specs:
        if spec.entry.reduction == "catalogue":
            raise ReceValError(f"{spec.name!r} is one number over every list of a window "
                               "(catalogue level): its sums do not merge across lists, runs and "
                               f"windows; receval monitor computes the per-list fairness and "
                               f"calibration metrics ({offered})")
        if not spec.entry.per_list:
            raise ReceValError(f"{spec.name!r} is a beyond-accuracy metric, which receval "
                               "monitor does not compute: it reads the training data's "
                               "popularity or similarity, not the window's (receval.evaluate "
                               f"with train= does); monitor computes {offered}")
    if not specs:
        return specs
    grouped = [s.name for s in specs if "groups" in s.entry.needs]
    if grouped and options.get("item_groups") is None and options.get("item_features") is None:
        raise ReceValError(f"metric {grouped[0]!r} needs item groups: pass item_groups= "
                           "(item -> group) or item_features= (--item-features FILE)")
    needs_train = [s.name for s in specs if "train" in s.entry.needs]
    if needs_train and options.get("train") is None:
        raise ReceValError(f"metric {needs_train[0]!r} needs each user's history: pass train= "
                           "(--train FILE: user, item rows)")
    if not switches:
        return specs
    given = resolve(options.get("profile"), options.get("beyond"))
    if given.fairness_target == "catalogue" or given.fairness_population == "catalogue":
        raise ReceValError("monitor: fairness_target='catalogue' and fairness_population="
                           "'catalogue' read each window's catalogue, which differs from one "
                           "window to the next; give the target as a dict group -> weight")
    ranked = [s.name for s in specs if "protected_group" in s.entry.options]
    if ranked and given.protected_group is None:
        raise ReceValError(f"monitor: {ranked[0]!r} needs protected_group= in beyond= (by "
                           "default it is the group with the fewest catalogue items, which "
                           "can change from one window to the next)")
    return specs


def window_options(options: dict[str, Any], lists: pd.DataFrame) -> dict[str, Any]:
    """``options`` for one window's :func:`receval.evaluate`: ``train=`` as the history of
    each list (its user's training rows, keyed by the list's id, the index of ``lists``),
    the training audit's warnings silenced (the lists are served, not held out).

    Example:
        >>> lists = pd.DataFrame({"user": ["u", "v", "u"]}, index=[7, 8, 9])
        >>> out = window_options({"train": {"user": ["u", "u"], "item": [1, 2]}}, lists)
        >>> out["train"].values.tolist(), out["silence"]
        ([[7, 1], [7, 2], [9, 1], [9, 2]], ['train-items', 'train-overlap'])
    """
    if options.get("train") is None:
        return options
    frame = history_frame(options["train"])
    keys = pd.DataFrame({"user": lists["user"].to_numpy(), "list": lists.index.to_numpy()})
    if len(frame) and len(keys) and (keys["user"].dtype == object) != (
            frame["user"].dtype == object):
        raise ReceValError(
            f"monitor: the training users look like {plain(frame['user'].iloc[0])!r}, the "
            f"served lists' users like {plain(keys['user'].iloc[0])!r}: do the id types match?")
    history = keys.merge(frame[["user", "item"]], on="user", how="inner", sort=False)
    history = history.sort_values("list", kind="stable")
    silence = sorted({*options.get("silence", ()), "train-items", "train-overlap"})
    return {**options, "silence": silence,
            "train": pd.DataFrame({"user": history["list"].to_numpy(),
                                   "item": history["item"].to_numpy()})}


def history_frame(train: Any) -> pd.DataFrame:
    """``train=`` (a frame, a dict of arrays, or :class:`receval.training.Training`) as a frame
    of ``user`` and ``item`` columns.

    Example:
        >>> history_frame({"user": [1], "item": ["a"], "rating": [5]}).columns.tolist()
        ['user', 'item']
    """
    if isinstance(train, Training):
        return pd.DataFrame({"user": np.asarray(train.users, dtype=object),
                             "item": np.asarray(train.items, dtype=object)}).infer_objects()
    frame = train if isinstance(train, pd.DataFrame) else pd.DataFrame(train)
    if "user" not in frame.columns or "item" not in frame.columns:
        raise ReceValError("monitor: train= needs 'user' and 'item' columns (got "
                           f"{', '.join(map(str, frame.columns))})")
    return frame[["user", "item"]]
