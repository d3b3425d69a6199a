"""The beyond-accuracy metrics on Spark (docs/spark.md, "Beyond-accuracy metrics").

Per-user metrics whose value reads only the user's own list, truth and training items (the
training rows are shuffled with each user's rows) plus item-level inputs sent whole to every
partition (``item_features``, ``item_groups``) are computed in the partitions by the local
plan, their exact sums merged like the accuracy metrics'. The
catalogue metrics whose number is a function of the exposure counts (coverage, distributional
coverage, Gini, personalization) are not computed in the partitions: each partition counts how
many lists hold each item (:func:`exposure_counts`), the driver adds the counts and finishes
them with the local code (:func:`receval.beyond.compute.compute`) on lists rebuilt from the
merged counts; ``group_exposure`` likewise from counts per item and rank
(:func:`group_number`). What no partition's rows tell, the whole training data's item
popularity (:func:`popularity`) and the catalogue (:func:`catalogue_items`,
:func:`needs_catalogue`), the driver collects once and sends to every partition. The rest
is refused in one line (:func:`check`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd

from receval.accumulate import Accumulator
from receval.beyond import fairness as fair
from receval.beyond.compute import compute
from receval.beyond.context import context
from receval.beyond.frames import Popularity, _one_space, plain_ids, read_features
from receval.beyond.names import BeyondEntry, BeyondSpec
from receval.beyond.popularity import short_head, tail_by_ratio, tie_across
from receval.beyond.settings import BeyondOptions
from receval.exceptions import ReceValError
from receval.options import Options
from receval.result import Result

#: the key of the exposure counts over the lists' whole width
WHOLE = "*"
#: what a partition is sent or holds for a per-user metric (names of
#: :data:`receval.beyond.names.READS`): each user's own rows (truth, training history), the
#: item-level inputs sent whole, and what the driver collects once and sends to every
#: partition (the training popularity, the catalogue)
PARTITION_READS = frozenset({"truth", "history", "popularity", "features", "groups",
                             "catalogue"})
#: what the driver finishes a catalogue metric from: the partitions' exposure counts (per
#: item, or per item and rank), the item groups and the catalogue collected by Spark
DRIVER_READS = frozenset({"exposure", "ranked_exposure", "groups", "catalogue"})
#: why what a metric reads cannot be served, for what neither serves
_WHY = {
    "pairs": "it reads every training pair{switches}",
    "slots": "it pools the slots of every list{switches}, which no partition holds",
    "pooled_history": "it pools each user's training items over every list, which no "
                      "partition holds",
}
_RECOMMENDED = ("it reads the catalogue, and catalogue='recommended' is known only once every "
                "list is ranked (pass catalogue='train+truth', 'train' or 'features')")


def reads(specs: Sequence[BeyondSpec], options: BeyondOptions, what: str,
          reduction: str = "user") -> bool:
    """Whether a metric of ``specs`` of the ``reduction`` declares that it reads ``what``
    under ``options`` (:meth:`~receval.beyond.names.BeyondEntry.reading`): the driver then
    collects it, or sends the training rows with each user's rows.

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> reads([parse_beyond("ARP@5")], BeyondOptions(), "popularity")
        True
        >>> reads([parse_beyond("calibration@5")], BeyondOptions(), "popularity")
        False
    """
    return any(s.entry.reduction == reduction and what in s.entry.reading(options)
               for s in specs)


def needs_catalogue(specs: Sequence[BeyondSpec], options: BeyondOptions) -> bool:
    """Whether a per-user metric of ``specs`` reads the catalogue (its entry declares it under
    ``options``: a ``catalogue`` fairness target or population, rND's default protected
    group, serendipity's catalogue size): the driver then collects it and sends it to every
    partition (a catalogue metric's is read on the driver).

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> needs_catalogue([parse_beyond("rND@5")], BeyondOptions())
        True
        >>> needs_catalogue([parse_beyond("rND@5")], BeyondOptions(protected_group="a"))
        False
    """
    return reads(specs, options, "catalogue")


def _switches(spec: BeyondSpec, options: BeyondOptions) -> str:
    """The switches of ``spec``'s entry set away from their defaults, as `` under a='b'``."""
    default = BeyondOptions()
    set_ = [f"{o}={getattr(options, o)!r}" for o in spec.entry.options
            if hasattr(default, o) and getattr(options, o) != getattr(default, o)]
    return f" under {', '.join(set_)}" if set_ else ""


def why_not(spec: BeyondSpec, options: BeyondOptions) -> str | None:
    """Why ``spec`` cannot be computed on Spark under ``options`` (``None``: it can), from
    what its entry declares it reads (:meth:`~receval.beyond.names.BeyondEntry.reading`):
    a per-user metric in the partitions when it reads only what a partition holds or is sent
    (:data:`PARTITION_READS`; the catalogue not under ``catalogue="recommended"``, known
    only once every list is ranked), a catalogue metric on the driver when it reads only the
    exposure counts (:data:`DRIVER_READS`).

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> why_not(parse_beyond("coverage@10"), BeyondOptions()) is None
        True
        >>> why_not(parse_beyond("novelty@10"), BeyondOptions()) is None
        True
        >>> why_not(parse_beyond("PopRSP@10"), BeyondOptions())[:32]
        "it pools each user's training it"
        >>> why_not(parse_beyond("ILD@10"), BeyondOptions(similarity="cooccurrence"))
        "it reads every training pair under similarity='cooccurrence'"
    """
    entry = spec.entry
    read = entry.reading(options)
    for what, why in _WHY.items():
        if what in read:
            return why.format(switches=_switches(spec, options))
    if entry.reduction == "catalogue":
        if read <= DRIVER_READS and read & {"exposure", "ranked_exposure"}:
            return None
        return ("its entry declares no reads= the driver can finish from the partitions' "
                "exposure counts ('exposure' or 'ranked_exposure')")
    if "catalogue" in read and options.catalogue == "recommended":
        return _RECOMMENDED
    if read <= PARTITION_READS:
        return None
    return (f"it reads {', '.join(sorted(read - PARTITION_READS))}, which no partition "
            f"holds")


@contextlib.contextmanager
def registered(entries: Sequence[BeyondEntry]) -> Iterator[None]:
    """The driver's ``entries`` (those of the metrics asked, sent with the plan) in this
    process's table while the partition is evaluated, the table put back after: an entry
    added to :data:`receval.beyond.names.ENTRIES` at run time (a plug-in, a test's planted
    entry) is parsed and computed by the partitions as by the driver.

    Example:
        >>> import dataclasses
        >>> from receval.beyond.names import ENTRIES, find
        >>> mine = dataclasses.replace(ENTRIES["coverage"], name="mine", aliases=("mine",))
        >>> with registered([mine]):
        ...     find("mine")
        'mine'
        >>> find("mine") is None
        True
    """
    from receval.beyond import names

    before = {e.name: names.ENTRIES.get(e.name) for e in entries}
    names.ENTRIES.update({e.name: e for e in entries})
    try:
        yield
    finally:
        for name, entry in before.items():
            if entry is None:
                names.ENTRIES.pop(name, None)
            else:
                names.ENTRIES[name] = entry


def check(specs: Sequence[BeyondSpec], options: BeyondOptions) -> None:
    """One line naming the first metric of ``specs`` Spark cannot compute, and why.

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> check([parse_beyond("PopREO@5")], BeyondOptions())
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: metric 'PopREO@5' is not available with engine='spark': it pools each user's training items over every list, which no partition holds
    """  # noqa: E501
    for spec in specs:
        reason = why_not(spec, options)
        if reason is not None:
            raise ReceValError(f"metric {spec.name!r} is not available with engine='spark': "
                               f"{reason}")


def popularity(items: Sequence[Any], interactions: Sequence[int], users: Sequence[int],
               n_train_users: int, specs: Sequence[BeyondSpec],
               options: BeyondOptions) -> Popularity:
    """The whole training data's popularity (per item id: training rows, distinct training
    users; collected on the driver) that every partition reads in place of its own users'
    counts (:class:`receval.beyond.frames.Popularity`). A cut of ``APLT``/``ACLT`` (the short
    head, or RecBole's tail) through items of equal popularity is refused in one line: the
    local plan breaks that tie by its item order, which no partition shares.

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> p = popularity(["x", "y", "z"], [3, 1, 1], [2, 1, 1], 3, [parse_beyond("ARP@2")],
        ...                BeyondOptions())
        >>> p.n_interactions, p.n_train_users
        (5, 3)
        >>> popularity(["x", "y", "z"], [6, 2, 2], [1, 1, 1], 1, [parse_beyond("APLT@2")],
        ...            BeyondOptions())
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: metric 'APLT@2' is not available with engine='spark' on this training data: its short head (head_share=0.8) cuts through items of equal popularity (2), an order no partition shares
    """  # noqa: E501
    out = Popularity(items=list(items), interactions=[int(n) for n in interactions],
                     users=[int(n) for n in users],
                     n_interactions=int(sum(int(n) for n in interactions)),
                     n_train_users=int(n_train_users))
    # the metrics that cut the items at the short head (or RecBole's tail) by popularity
    cut = [s for s in specs if {"head_share", "tail_ratio"} & set(s.entry.options)]
    if cut:
        pop = np.asarray(out.users if options.popularity == "users" else out.interactions,
                         dtype=np.int64)
        by_ratio = options.tail_ratio is not None
        if by_ratio and options.tail_ratio > 1:  # type: ignore[operator]  # a threshold
            return out
        side = (tail_by_ratio(pop, options.tail_ratio) if by_ratio  # type: ignore[arg-type]
                else short_head(pop, options.head_share))
        tied = tie_across(pop, side, ~side & ((pop > 0) if by_ratio else True))
        if tied is not None:
            what = (f"RecBole's tail (tail_ratio={options.tail_ratio})" if by_ratio else
                    f"its short head (head_share={options.head_share})")
            raise ReceValError(
                f"metric {cut[0].name!r} is not available with engine='spark' on this training "
                f"data: {what} cuts through items of equal popularity "
                f"({tied}), an order no partition shares")
    return out


def exposure_counts(specs: Sequence[BeyondSpec], top: np.ndarray | None, n_list: np.ndarray,
                    decode: Callable[[np.ndarray], Any]) -> dict[str, list[Any]]:
    """Per catalogue metric of ``specs``: the item ids its lists hold, how many lists hold
    each, and how many lists are not empty (one partition's part: counts add up); under
    :data:`WHOLE` the same over the lists' whole width (the largest k requested: the
    catalogue ``"recommended"``); for ``group_exposure``, per item the lists holding it at
    each rank.

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> ids = np.array(["x", "y", "z"], dtype=object)
        >>> exposure_counts([parse_beyond("coverage@1")], np.array([[0, 2], [0, -1]]),
        ...                 np.array([2, 1]), lambda c: ids[c])
        {'coverage@1': [['x'], [2], 2], '*': [['x', 'z'], [2, 1], 2]}
    """
    if top is None:  # pragma: no cover - the engine was asked for the lists
        raise ReceValError("the engine returned no top-k lists")
    out: dict[str, list[Any]] = {}
    if not specs:
        return out
    by_rank = {s.name for s in specs if "ranked_exposure" in s.entry.reading()}
    for name, k in [*((s.name, s.k) for s in specs), (WHOLE, top.shape[1])]:
        width = min(k, top.shape[1])
        lengths = np.minimum(np.asarray(n_list), width)
        valid = np.arange(width)[None, :] < lengths[:, None]
        codes, where, counts = np.unique(np.asarray(top)[:, :width][valid],
                                         return_inverse=True, return_counts=True)
        ids = plain_ids(decode(codes)) if len(codes) else np.zeros(0, np.int64)
        if name in by_rank:  # per item, the lists holding it at each rank (group_exposure)
            slots = where * width + np.nonzero(valid)[1]
            counts = np.bincount(slots, minlength=len(codes) * width).reshape(len(codes),
                                                                              width)
        out[name] = [ids.tolist(), counts.tolist(), int((lengths > 0).sum())]
    return out


def merge_exposure(parts: Sequence[Mapping[str, list[Any]]]) -> dict[str, tuple[dict[Any, Any],
                                                                                  int]]:
    """The partitions' exposure counts added per metric and item.

    Example:
        >>> merge_exposure([{"c@1": [["x"], [2], 2]}, {"c@1": [["x", "y"], [1, 1], 2]}])
        {'c@1': ({'x': 3, 'y': 1}, 4)}
        >>> merge_exposure([{"g@2": [["x"], [[1, 0]], 1]}, {"g@2": [["x"], [[0, 2]], 2]}])
        {'g@2': ({'x': [1, 2]}, 3)}
    """
    out: dict[str, tuple[dict[Any, Any], int]] = {}
    for part in parts:
        for name, (ids, counts, lists) in part.items():
            total, n = out.get(name, ({}, 0))
            for item, c in zip(ids, counts, strict=True):
                if isinstance(c, list):  # per rank (group_exposure)
                    have = total.get(item, [0] * len(c))
                    total[item] = [int(a) + int(b) for a, b in zip(have, c, strict=True)]
                else:
                    total[item] = total.get(item, 0) + int(c)
            out[name] = (total, n + int(lists))
    return out


def catalogue_number(spec: BeyondSpec, counts: Mapping[Any, int], lists: int,
                     catalogue: Sequence[Any], options: BeyondOptions) -> float:
    """``spec``'s number from the merged exposure ``counts`` (item -> lists holding it) of
    ``lists`` non-empty lists, by the local code (:func:`receval.beyond.compute.compute`) on
    lists rebuilt from the counts: column by column, so every list is non-empty and no
    list is longer than k (what those metrics read of the lists is exactly that).
    ``catalogue``: the items of the catalogue (:func:`catalogue_items`).

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> catalogue_number(parse_beyond("coverage@2"), {"x": 2, "y": 1}, 2, ["x", "y", "z"],
        ...                  BeyondOptions())
        0.6666666666666666
    """
    exposed = list(counts)
    space = pd.Index(pd.unique(pd.Series(exposed + list(catalogue), dtype=object)))
    n_items = len(space)
    mask = np.zeros(n_items, dtype=bool)
    mask[space.get_indexer(list(catalogue))] = True
    slots = np.repeat(space.get_indexer(exposed).astype(np.int64),
                      np.array([counts[i] for i in exposed], dtype=np.int64))
    rows = max(lists, 1)
    width = max(-(-len(slots) // rows), 1)
    top = np.full(rows * width, -1, dtype=np.int64)
    top[:len(slots)] = slots
    top = np.ascontiguousarray(top.reshape(width, rows).T)  # slot j: row j % rows
    if lists == 0:
        top[:] = -1
    ctx = context(None, None, n_items, catalogue=mask)
    _, summary = compute([spec], top, ctx, options)
    return summary[spec.name]


def _group_rows(items: list[Any], ids: np.ndarray, align: np.ndarray) -> np.ndarray:
    """The alignment rows of ``items`` (zero rows: no group)."""
    mine, theirs = _one_space([plain_ids(np.asarray(items, dtype=object)), plain_ids(ids)])
    at = pd.Index(pd.Series(theirs, dtype=object)).get_indexer(pd.Series(mine, dtype=object))
    rows = np.zeros((len(items), align.shape[1]))
    rows[at >= 0] = align[at[at >= 0]]
    return rows


def group_number(spec: BeyondSpec, counts: Mapping[Any, list[int]],
                 groups: tuple[np.ndarray, np.ndarray, tuple[Any, ...]],
                 options: BeyondOptions, catalogue: Sequence[Any] | None = None
                 ) -> tuple[float, dict[str, list[Any]]]:
    """``group_exposure``'s number and per-group table from the merged ``counts`` (item id ->
    lists holding it at each rank) and the item ``groups`` (ids, alignment, names, as
    :func:`receval.beyond.groups.read_groups` reads them), by the local plan's functions
    (:func:`receval.beyond.fairness.group_exposure_from_counts`: the same bits); the
    ``catalogue``'s item ids for ``fairness_target="catalogue"``.

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> groups = (np.array(["x", "y"], dtype=object), np.array([[1.0, 0.0], [0.5, 0.5]]),
        ...           ("a", "b"))
        >>> value, table = group_number(parse_beyond("group_exposure@2"),
        ...                             {"x": [1, 0], "y": [1, 1]}, groups, BeyondOptions())
        >>> round(value, 12), table["exposure"]
        (0.166666666667, [0.6666666666666666, 0.3333333333333333])
    """
    ids, align, names = groups
    exposed = list(counts)
    rows = _group_rows(exposed, ids, align)
    matrix = np.array([counts[i] for i in exposed], dtype=np.int64).reshape(len(exposed), -1)
    disc = fair.discounts(options.exposure_discount, spec.k, options.rbp_patience)
    items = list(pd.unique(pd.Series(list(catalogue or []), dtype=object)))
    target = fair.target_shares(options.fairness_target, _group_rows(items, ids, align),
                                np.ones(len(items), bool), names)
    shares = fair.group_exposure_from_counts(matrix, rows, disc)
    return fair.exposure_gap(shares, target), {"group": list(names),
                                               "exposure": shares.tolist(),
                                               "target": target.tolist()}


def catalogue_items(options: BeyondOptions, *, truth: Callable[[], list[Any]],
                    train: Callable[[], list[Any]] | None, item_features: Any,
                    features_columns: Mapping[str, str] | None, item_col: str,
                    listed: Mapping[Any, int]) -> list[Any]:
    """The catalogue's item ids as the local plan builds it (``options.catalogue``):
    ``train`` and ``truth`` collect the distinct items of the training data and of every
    truth row (not moved by the relevance threshold); ``listed``: the items of the lists at
    their whole width (``"recommended"``).

    Example:
        >>> catalogue_items(BeyondOptions(), truth=lambda: [1, 2], train=lambda: [2, 3],
        ...                 item_features=None, features_columns=None, item_col="item",
        ...                 listed={})
        [2, 3, 1, 2]
    """
    kind = options.catalogue
    if kind == "recommended":
        return list(listed)
    if kind == "features":
        return plain_ids(read_features(item_features, item_col,
                                       columns=features_columns)[0]).tolist()
    items = train() if train is not None else []
    return items + truth() if kind == "train+truth" else items


def finish(result: Result, specs: Sequence[BeyondSpec], requested: Sequence[str],
           sums: Accumulator, exposures: Mapping[str, tuple[dict[Any, Any], int]],
           catalogue: list[Any], options: Options, beyond: BeyondOptions,
           groups: tuple[np.ndarray, np.ndarray, tuple[Any, ...]] | None = None) -> None:
    """The beyond metrics into ``result`` as :func:`receval.beyond.attach.attach` writes them:
    the per-user ones finalized from their merged exact ``sums`` under the beyond ``empty``
    policy, the catalogue ones from the merged ``exposures``; the summary and metrics in the
    ``requested`` order (``options["beyond"]``, the switches, was recorded with the plan);
    ``groups``: the item groups (``group_exposure``: :func:`group_number`)."""
    empty = options.empty if beyond.empty == "inherit" else beyond.empty
    summary = dict(result.summary)
    from receval.beyond.attach import beyond_summary, report_undefined

    per_user = beyond_summary(sums, specs, empty)  # the local plan's rule (rND: skip)
    summary.update(per_user)
    # the partitions counted the undefined users and why: summary_null and the warning
    report_undefined(result, specs, per_user, empty)
    tables: dict[str, Any] = {}
    for spec in specs:
        if spec.entry.reduction == "catalogue":
            counts, lists = exposures.get(spec.name, ({}, 0))
            if "ranked_exposure" in spec.entry.reading():
                assert groups is not None
                summary[spec.name], tables[spec.name] = group_number(spec, counts, groups,
                                                                     beyond, catalogue)
            else:
                summary[spec.name] = catalogue_number(spec, counts, lists, catalogue, beyond)
    if tables:
        result.counts = cast(Any, {**result.counts, "group_exposure": tables})
    result.summary = {n: float(summary[n]) for n in requested}
    result.metrics = list(requested)
    if result.sums is not None:
        result.sums = Accumulator(tuple(result.sums.metrics) + tuple(sums.metrics))
