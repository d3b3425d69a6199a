"""Strata from the training data: users grouped by activity (:func:`activity_groups`) or as
cold / warm (:func:`cold_start_groups`) for ``evaluate(strata=...)``, the built-in names
(``strata="activity"``, :func:`resolve_strata`), and items as head / tail
(:func:`popularity_groups`, :func:`truth_by_items`).

Example:
    >>> cold_start_groups({"user": [1, 1, 2], "item": [1, 2, 3]}, [1, 2], n=2).values.tolist()
    [[1, 'warm'], [2, 'cold (<2)']]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from receval.data.columns import Columns
from receval.exceptions import ReceValError
from receval.training.reading import index_of, plain_ids, read_train


def activity_groups(train: Any, quantiles: int = 4, *, users: Iterable[Any] | None = None,
                    user_col: str = "user", item_col: str = "item") -> pd.DataFrame:
    """Users grouped by their number of training rows, in ``quantiles`` groups.

    Group ``Qj`` holds the users whose count is at most the ``j/quantiles`` quantile of the
    counts (the smallest count that at least that share of users does not exceed) and above
    the previous group's; users with equal counts are always in one group, so a group can be
    empty (it is then absent and the numbering keeps the quantile's place). Labels name the
    counts found: ``"Q1 (1-5 rows)"``. With ``users``, exactly those users (the evaluated
    ones): the quantiles are over those with training rows, and users without any are
    ``"none (0 rows)"``.

    Example:
        >>> train = {"user": [1, 2, 2, 3, 3, 3, 4, 4, 4, 4], "item": range(10)}
        >>> activity_groups(train, 2).values.tolist()
        [[1, 'Q1 (1-2 rows)'], [2, 'Q1 (1-2 rows)'], [3, 'Q2 (3-4 rows)'], [4, 'Q2 (3-4 rows)']]
    """
    if not isinstance(quantiles, int | np.integer) or quantiles < 1:
        raise ReceValError(f"quantiles must be a positive integer; got {quantiles!r}")
    counts = _counts_for(train, users, user_col, item_col)
    active = counts[counts > 0]
    groups = pd.Series("none (0 rows)", index=counts.index, dtype=object)
    if len(active):
        values = np.sort(active.to_numpy())
        # inverted-CDF quantiles: edge j is a count that some user has
        edges = [values[max(int(np.ceil(j * len(values) / quantiles)) - 1, 0)]
                 for j in range(1, quantiles + 1)]
        which = np.searchsorted(np.asarray(edges), active.to_numpy(), side="left")
        for j in np.unique(which):
            members = active.index[which == j]
            low, high = int(active[members].min()), int(active[members].max())
            span = f"{low}" if low == high else f"{low}-{high}"
            groups[members] = f"Q{j + 1} ({span} row{'s' if high != 1 else ''})"
    return _frame("user", groups)


def cold_start_groups(train: Any, users: Iterable[Any], n: int = 5, *,
                      user_col: str = "user", item_col: str = "item") -> pd.DataFrame:
    """``users`` as ``"cold (<n)"`` (fewer than ``n`` training rows, none included) or
    ``"warm"``.

    Example:
        >>> cold_start_groups({"user": [1, 1, 2], "item": [1, 2, 3]}, [1, 2, 3], n=2)
        ...     # doctest: +NORMALIZE_WHITESPACE
           user      group
        0     1       warm
        1     2  cold (<2)
        2     3  cold (<2)
    """
    if not isinstance(n, int | np.integer) or n < 1:
        raise ReceValError(f"n must be a positive integer; got {n!r}")
    counts = _counts_for(train, users, user_col, item_col)
    groups = pd.Series(np.where(counts.to_numpy() < n, f"cold (<{n})", "warm"),
                       index=counts.index, dtype=object)
    return _frame("user", groups)


def popularity_groups(train: Any, head_share: float = 0.2, *, user_col: str = "user",
                      item_col: str = "item") -> pd.DataFrame:
    """Items as ``"head"`` or ``"tail"`` by their share of the training interactions.

    Items sorted by training rows, most first: the head is the shortest run of them that
    together make at least ``head_share`` of all training rows, plus every item with as many
    rows as the last one (ties are never split); the rest is the tail (Abdollahpouri et al.'s
    short head). Per item, not per user: evaluate the truth restricted to head or tail items
    (:func:`truth_by_items`) to see how a model does on each.

    Example:
        >>> train = {"user": range(10), "item": [1, 1, 1, 1, 1, 2, 2, 2, 3, 4]}
        >>> popularity_groups(train, 0.5).values.tolist()
        [[1, 'head'], [2, 'tail'], [3, 'tail'], [4, 'tail']]
        >>> popularity_groups(train, 0.6).values.tolist()
        [[1, 'head'], [2, 'head'], [3, 'tail'], [4, 'tail']]
    """
    if not 0 < float(head_share) <= 1:
        raise ReceValError(f"head_share must be in (0, 1]; got {head_share!r}")
    counts = read_train(train, user_col=user_col, item_col=item_col).item_counts()
    ordered = counts.sort_values(ascending=False, kind="stable").to_numpy()
    reach = int(np.searchsorted(np.cumsum(ordered), head_share * ordered.sum(), side="left"))
    last = ordered[min(reach, len(ordered) - 1)]
    groups = pd.Series(np.where(counts.to_numpy() >= last, "head", "tail"), index=counts.index,
                       dtype=object)
    return _frame("item", groups)


def truth_by_items(truth: pd.DataFrame, groups: pd.DataFrame, *,
                   item_col: str = "item") -> dict[str, pd.DataFrame]:
    """The truth rows of each item group (``groups``: columns ``item`` and ``group``, such as
    :func:`popularity_groups`); items in no group are left out.

    Evaluating the predictions against ``truth_by_items(...)["tail"]`` scores how a model finds
    the tail items a user holds out (the head items in its lists then count as misses).

    Example:
        >>> truth = pd.DataFrame({"user": [1, 1, 2], "item": [1, 3, 3]})
        >>> groups = pd.DataFrame({"item": [1, 3], "group": ["head", "tail"]})
        >>> {g: t["item"].tolist() for g, t in truth_by_items(truth, groups).items()}
        {'head': [1], 'tail': [3, 3]}
    """
    label = pd.Series(groups["group"].to_numpy(), index=groups["item"].to_numpy())
    which = truth[item_col].map(label)
    return {str(g): truth[which == g] for g in pd.unique(label) if (which == g).any()}


def _counts_for(train: Any, users: Iterable[Any] | None, user_col: str,
                item_col: str) -> pd.Series:
    counts = read_train(train, user_col=user_col, item_col=item_col).user_counts()
    if users is None:
        return counts
    wanted = np.asarray(pd.unique(pd.Series(list(users), dtype=object)))
    if len(wanted) and all(isinstance(u, int | np.integer) for u in wanted):
        wanted = wanted.astype(np.int64)
    at = index_of(wanted, counts.index.to_numpy())
    return pd.Series(np.where(at >= 0, counts.to_numpy()[np.maximum(at, 0)], 0), index=wanted)


def _frame(key: str, groups: pd.Series) -> pd.DataFrame:
    return pd.DataFrame({key: groups.index.to_numpy(), "group": groups.to_numpy()})


#: the built-in strata by name (``evaluate(strata="activity")``): user -> group from ``train``
STRATA = ("activity", "cold")


def resolve_strata(strata: Any, train: Any, users: Iterable[Any]) -> Any:
    """A built-in stratum name as its user -> group Series; anything else as it is.

    ``"activity"``: :func:`activity_groups` (quartiles of training rows per user;
    ``"activity:10"``: deciles); ``"cold"``: :func:`cold_start_groups` (fewer than 5 training
    rows; ``"cold:3"``: fewer than 3). Both cover ``users`` (the users of the evaluation's
    inputs) and need the training data.

    Example:
        >>> resolve_strata("cold", {"user": [1] * 5 + [2], "item": range(6)}, [1, 2]).to_dict()
        {1: 'warm', 2: 'cold (<5)'}
        >>> resolve_strata("cold", None, [1])
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: strata='cold' groups users by their training data: \
pass train=
    """
    if not isinstance(strata, str):
        return strata
    name, _, arg = strata.partition(":")
    if name not in STRATA or (arg and not arg.isdigit()):
        raise ReceValError(f"strata={strata!r} is not a built-in stratum (activity, "
                           "activity:N, cold, cold:N); pass a user -> group mapping (a dict, a "
                           "Series or a frame with user and group columns)")
    if train is None:
        raise ReceValError(f"strata={strata!r} groups users by their training data: pass train=")
    if name == "activity":
        frame = activity_groups(train, int(arg or 4), users=users)
    else:
        frame = cold_start_groups(train, users, int(arg or 5))
    # a Series (index: user) whatever the evaluation's user column is called
    return pd.Series(frame["group"].to_numpy(), index=frame["user"].to_numpy(), name="group")


def users_of(*sides: Columns) -> np.ndarray:
    """The distinct users of the sides, in order of appearance (the users a stratum covers).

    Example:
        >>> from receval.data.columns import read_sides
        >>> t, p = read_sides({"user": [2, 1], "item": [1, 1]},
        ...                   {"user": [3, 2], "item": [1, 1], "score": [1.0, 1.0]})
        >>> users_of(t, p).tolist()
        [2, 1, 3]
    """
    ids = [plain_ids(side.users) for side in sides]
    return np.asarray(pd.unique(np.concatenate(ids) if ids else np.zeros(0, np.int64)))


