"""Floors to put beside a model: the most popular items and random items.

Both read the training interactions (as :func:`receval.training.read_train` does: a frame, an
Arrow table, a dict of arrays or a path) and return a long prediction table, one row per
(user, recommended item), that :func:`receval.evaluate` and :func:`receval.compare` take as
predictions. The catalogue is the items of the training data; each user's own training items
are never recommended (the full-ranking protocol), so a baseline needs no ``exclude_train``.
A user absent from the training data (cold) gets the catalogue as is.

Example:
    >>> import receval
    >>> train = {"user": [1, 1, 2, 3], "item": [10, 11, 10, 12]}
    >>> most_popular(train, [1, 2], k=2).values.tolist()
    [[1.0, 12.0, 1.25], [2.0, 11.0, 1.5], [2.0, 12.0, 1.25]]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.randomness import user_seed
from receval.training import index_of, member, plain_ids, read_train


def most_popular(train: Any, users: Iterable[Any], k: int, *, user_col: str = "user",
                 item_col: str = "item") -> pd.DataFrame:
    """The ``k`` items with the most training rows, for each of ``users``, leaving out the
    user's own training items.

    ``score`` is the item's number of training rows (interactions) plus a tie-break below 1:
    ``(n - j) / 2**b``, ``j`` the item's place among the ``n`` training items in id order and
    ``2**b`` the first power of two above ``n`` (exact in a float). Items with as many rows are
    so ranked by item id (ascending), the lists are the same for any row order of ``train``,
    and no two items share a score: :func:`receval.evaluate` ranks them the same under any
    ``ties`` policy, without a ties warning. ``int(score)`` is the count.
    Columns: ``user_col``, ``item_col``, ``score``; users in the order given (each once), each
    user's items best first. A user gets fewer than ``k`` items only when the catalogue has
    fewer left.

    Example:
        >>> train = {"user": ["a", "a", "b", "c", "c"], "item": ["x", "y", "x", "z", "y"]}
        >>> most_popular(train, ["a", "b", "new"], k=2)
          user item  score
        0    a    z   1.25
        1    b    y   2.50
        2    b    z   1.25
        3  new    x   2.75
        4  new    y   2.50
    """
    k = _check_k(k)
    t_users, t_items, wanted, row_of = _inputs(train, users, user_col, item_col)
    items, item_codes = np.unique(t_items, return_inverse=True)  # codes in id order
    counts = np.bincount(item_codes, minlength=len(items))
    ranked = np.lexsort((np.arange(len(items)), -counts))  # most rows first, ties by id
    seen = _seen_pairs(t_users, item_codes, len(items))
    n_seen = _seen_per_user(seen, row_of, len(items))
    take = np.minimum(k + n_seen, len(items))
    owner = np.repeat(np.arange(len(wanted)), take)
    place = np.arange(int(take.sum())) - np.repeat(np.cumsum(take) - take, take)
    cand = ranked[place]
    user_code = row_of[owner]
    keep = ~((user_code >= 0) & member(user_code * len(items) + cand, seen))
    # the first k kept candidates of each user
    kept_before: np.ndarray = np.cumsum(keep) - keep
    start = np.repeat(np.cumsum(take) - take, take)
    first_kept = (kept_before - kept_before[start]) < k
    rows = keep & first_kept
    # count + (n - j) / 2**b: distinct per item, exact while counts stay below 2**(52 - b)
    scale = 2.0 ** len(items).bit_length()
    score = counts + (len(items) - np.arange(len(items))) / scale
    return pd.DataFrame({user_col: wanted[owner[rows]], item_col: items[cand[rows]],
                         "score": score[cand[rows]]})


def baseline_depth(depths: Iterable[int | None], cutoffs: Iterable[int | None],
                   default: int = 100) -> int:
    """How deep a built-in baseline's lists are, beside models whose longest lists hold
    ``depths`` items (``None``: not recorded): as deep as the deepest model list, so that a
    metric without a cutoff (MRR, MAP, R-precision: the whole list) reads lists as long as the
    models' (a shorter baseline lowers its MRR and inflates every gain); where no depth is
    known, the largest of ``cutoffs`` (``None`` or 0: no cutoff), else ``default``.

    Example:
        >>> baseline_depth([100, 40], [10]), baseline_depth([None], [5, 10, None])
        (100, 10)
        >>> baseline_depth([], [None], default=100)
        100
    """
    known = [int(d) for d in depths if d]
    if known:
        return max(known)
    return max((int(k) for k in cutoffs if k), default=default)


def popular_baseline(train: Any, users: Iterable[Any], *, depths: Iterable[int | None],
                     cutoffs: Iterable[int | None], default: int = 100,
                     user_col: str = "user", item_col: str = "item") -> pd.DataFrame:
    """The built-in popular baseline of a comparison (``compare(baseline="popular")`` and
    ``receval compare --baseline popular`` both build it here): :func:`most_popular` for
    ``users``, as deep as :func:`baseline_depth` says.

    Example:
        >>> train = {"user": [1, 1, 2, 3], "item": [10, 11, 10, 12]}
        >>> popular_baseline(train, [1, 2], depths=[1], cutoffs=[5])["item"].tolist()
        [12, 11]
    """
    return most_popular(train, users, baseline_depth(depths, cutoffs, default),
                        user_col=user_col, item_col=item_col)


def random(train: Any, users: Iterable[Any], k: int, seed: int = 0, *, user_col: str = "user",
           item_col: str = "item") -> pd.DataFrame:
    """``k`` items drawn uniformly, without replacement, from the training items that are not
    the user's own, for each of ``users``.

    Each user's draw comes from a generator seeded by ``seed`` and the user id
    (:func:`receval.randomness.user_seed`): the same call gives the same lists, and a user's list
    does not depend on which other users are asked for or on the row order of ``train``.
    ``score`` is ``k - j`` for the ``j``-th item drawn (0-based), so the draw order is the
    ranking. Columns: ``user_col``, ``item_col``, ``score``.

    Example:
        >>> train = {"user": [1, 1, 2, 3], "item": [10, 11, 12, 13]}
        >>> r = random(train, [1, 2], k=2, seed=7)
        >>> r.groupby("user")["item"].apply(set).to_dict()[1] <= {12, 13}, len(r)
        (True, 4)
        >>> r.equals(random(train, [1, 2], k=2, seed=7))
        True
    """
    k = _check_k(k)
    t_users, t_items, wanted, row_of = _inputs(train, users, user_col, item_col)
    items, item_codes = np.unique(t_items, return_inverse=True)
    n_items = len(items)
    seen = _seen_pairs(t_users, item_codes, n_items)
    seen_user, seen_item = seen // n_items, seen % n_items
    bounds = np.searchsorted(seen_user, np.arange(int(row_of.max(initial=-1)) + 2))
    out_user, out_item, out_score = [], [], []
    for i, user in enumerate(wanted):
        code = row_of[i]
        own = seen_item[bounds[code]:bounds[code + 1]] if code >= 0 else seen_item[:0]
        rng = user_seed(seed, user)
        draw = rng.choice(n_items, size=min(k + len(own), n_items), replace=False)
        draw = draw[~np.isin(draw, own)][:k]
        out_user.append(np.full(len(draw), i))
        out_item.append(draw)
        out_score.append(k - np.arange(len(draw), dtype=np.float64))
    owner = np.concatenate(out_user) if out_user else np.zeros(0, dtype=np.int64)
    drawn = np.concatenate(out_item) if out_item else np.zeros(0, dtype=np.int64)
    return pd.DataFrame({user_col: wanted[owner], item_col: items[drawn],
                         "score": np.concatenate(out_score) if out_score else np.zeros(0)})


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ReceValError(f"k must be a positive integer; got {k!r}")
    return int(k)


def _inputs(train: Any, users: Iterable[Any], user_col: str,
            item_col: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training users and items as numpy ids, the users asked for (each once, in order) and
    each one's code among the sorted training users (-1: not in the training data)."""
    trained = read_train(train, user_col=user_col, item_col=item_col)
    t_users, t_items = plain_ids(trained.users), plain_ids(trained.items)
    wanted = np.asarray(pd.unique(pd.Series(list(users), dtype=object)))
    if len(wanted) == 0:
        raise ReceValError("users is empty: pass the users to recommend for (the test users)")
    if all(isinstance(u, int | np.integer) for u in wanted):
        wanted = wanted.astype(np.int64)
    user_ids = np.unique(t_users)
    return t_users, t_items, wanted, index_of(wanted, user_ids)


def _seen_pairs(t_users: np.ndarray, item_codes: np.ndarray, n_items: int) -> np.ndarray:
    """Sorted distinct keys ``user code * n_items + item code`` of the training pairs (user
    codes among the sorted training users)."""
    user_codes = np.unique(t_users, return_inverse=True)[1].astype(np.int64)
    return np.unique(user_codes * n_items + item_codes)


def _seen_per_user(seen: np.ndarray, row_of: np.ndarray, n_items: int) -> np.ndarray:
    """Distinct training items of each user asked for (0: not in the training data)."""
    per_user = np.bincount(seen // n_items, minlength=int(row_of.max(initial=-1)) + 1)
    return np.where(row_of >= 0, per_user[np.maximum(row_of, 0)], 0)
