"""Tables for the report's beyond-accuracy section (the report draws them; this module only
computes): coverage and novelty per model, long-tail exposure (the share of recommendation
slots by item popularity rank) and the most recommended items with their titles.

Each takes ``models``: a mapping model name -> its predictions (a frame of user, item, score;
or rank) and reads each user's top ``k`` as :func:`~receval.beyond.frames.beyond_metrics`
does (score descending, input order on ties).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from receval.beyond.frames import beyond_metrics
from receval.exceptions import ReceValError


def _top_k(lists: pd.DataFrame, k: int, user_col: str, item_col: str,
           score_col: str) -> pd.DataFrame:
    frame = lists.reset_index(drop=True)
    if score_col in frame.columns:
        key = -frame[score_col].to_numpy(np.float64)
    elif "rank" in frame.columns:
        key = frame["rank"].to_numpy(np.float64)
    else:
        raise ReceValError(f"predictions need a {score_col!r} or a 'rank' column")
    frame = frame.iloc[np.lexsort((np.arange(len(frame)), key))]
    pos = frame.groupby(user_col, sort=False).cumcount()
    return frame[pos.to_numpy() < k]


def coverage_novelty(models: Mapping[str, pd.DataFrame], train: pd.DataFrame, *, k: int = 10,
                     metrics: Sequence[str] = ("coverage", "novelty", "gini", "APLT"),
                     beyond: Mapping[str, Any] | None = None, user_col: str = "user",
                     item_col: str = "item", score_col: str = "score") -> pd.DataFrame:
    """One row per model, one column per beyond-accuracy metric at ``k``.

    Example:
        >>> train = pd.DataFrame({"user": [1, 2, 3], "item": ["a", "a", "b"]})
        >>> pop = pd.DataFrame({"user": [1, 2], "item": ["a", "a"], "score": [1.0, 1.0]})
        >>> svd = pd.DataFrame({"user": [1, 2], "item": ["a", "b"], "score": [1.0, 1.0]})
        >>> coverage_novelty({"pop": pop, "svd": svd}, train, k=1,
        ...                  metrics=["coverage"])["coverage@1"].to_dict()
        {'pop': 0.5, 'svd': 1.0}
    """
    rows = []
    for name, preds in models.items():
        summary, _ = beyond_metrics(preds, [f"{m}@{k}" for m in metrics], train=train,
                                    beyond=beyond, user_col=user_col, item_col=item_col,
                                    score_col=score_col)
        rows.append({"model": name, **summary})
    return pd.DataFrame(rows).set_index("model")


def long_tail_exposure(models: Mapping[str, pd.DataFrame], train: pd.DataFrame, *,
                       k: int = 10, bins: int = 10, user_col: str = "user",
                       item_col: str = "item", score_col: str = "score") -> pd.DataFrame:
    """The share of each model's top-``k`` recommendation slots by item popularity rank.

    Items are ranked by training interactions (rank 1 the most popular; ties by id order of
    first appearance), the ranks cut into ``bins`` equal groups of items; items absent from
    training form a last group ``"unseen"``. Columns: ``model``, ``bin`` (1 = the head),
    ``rank_from``, ``rank_to``, ``share`` (of the model's slots) and ``cumulative``.

    Example:
        >>> train = pd.DataFrame({"user": [1, 2, 3, 3], "item": ["a", "a", "b", "c"]})
        >>> pop = pd.DataFrame({"user": [1, 2], "item": ["a", "a"], "score": [1.0, 1.0]})
        >>> t = long_tail_exposure({"pop": pop}, train, k=1, bins=3)
        >>> t[["bin", "share"]].values.tolist()
        [[1, 1.0], [2, 0.0], [3, 0.0], ['unseen', 0.0]]
    """
    # descending; equal counts in order of first appearance in train (a stable sort)
    counts = train[item_col].value_counts(sort=False).sort_values(ascending=False,
                                                                  kind="stable")
    n = len(counts)
    if n == 0:
        raise ReceValError("long_tail_exposure needs training rows: train is empty")
    bins = max(1, min(bins, n))
    rank = pd.Series(np.arange(1, n + 1), index=counts.index)
    edges = np.linspace(0, n, bins + 1).round().astype(int)
    bin_of_rank = np.searchsorted(edges[1:], np.arange(1, n + 1), side="left") + 1
    out = []
    for name, preds in models.items():
        top = _top_k(preds, k, user_col, item_col, score_col)
        r = top[item_col].map(rank)
        total = len(top)
        b = pd.Series(bin_of_rank[r.dropna().astype(int).to_numpy() - 1])
        shares = b.value_counts().reindex(range(1, bins + 1), fill_value=0) / max(total, 1)
        cum = 0.0
        for i in range(1, bins + 1):
            cum += float(shares[i])
            out.append({"model": name, "bin": i, "rank_from": int(edges[i - 1]) + 1,
                        "rank_to": int(edges[i]), "share": float(shares[i]),
                        "cumulative": cum})
        unseen = float(r.isna().sum()) / max(total, 1)
        out.append({"model": name, "bin": "unseen", "rank_from": n + 1, "rank_to": n + 1,
                    "share": unseen, "cumulative": cum + unseen})
    return pd.DataFrame(out)


def most_recommended(models: Mapping[str, pd.DataFrame], *, k: int = 10, n: int = 10,
                     titles: Mapping[Any, str] | pd.Series | None = None,
                     user_col: str = "user", item_col: str = "item",
                     score_col: str = "score") -> pd.DataFrame:
    """Each model's ``n`` items most often in a top ``k``, with their share of the users and
    their title when ``titles`` (item -> title) is given.

    Example:
        >>> pop = pd.DataFrame({"user": [1, 1, 2], "item": [7, 8, 7], "score": [2.0, 1.0, 1.0]})
        >>> most_recommended({"pop": pop}, k=1, titles={7: "Heat"}).values.tolist()
        [['pop', 7, 'Heat', 2, 1.0]]
    """
    out = []
    for name, preds in models.items():
        top = _top_k(preds, k, user_col, item_col, score_col)
        users = top[user_col].nunique()
        counts = top[item_col].value_counts().head(n)
        for item, c in counts.items():
            title = None if titles is None else (titles.get(item) if isinstance(
                titles, Mapping) else titles.get(item, None))
            out.append({"model": name, "item": item, "title": title, "lists": int(c),
                        "share_of_users": c / users if users else float("nan")})
    return pd.DataFrame(out, columns=["model", "item", "title", "lists", "share_of_users"])
