"""``receval demo``: the whole offline workflow on seeded synthetic data, nothing downloaded.

1. :func:`make_ratings`: an interaction log (user, item, 1-5 star rating, timestamp) with a
   power-law item popularity and users who each like a few of the catalogue's genres;
2. a per-user temporal split (:func:`receval.split.temporal_user`) and its leakage audit;
3. two recommenders trained on the training rows: the popularity floor
   (:func:`receval.baselines.most_popular`) and :func:`item_item`, an item-item co-occurrence
   model in numpy whose lists still hold each user's training items (as a model's raw output
   does);
4. both evaluated with ``train=`` and ``exclude_train=True`` (the training items leave the
   lists before ranking: the full-ranking protocol), and the model once more without the
   exclusion, to show what it costs;
5. :func:`receval.compare`: the model against the popularity floor, paired per user, p-values
   corrected across the metrics.

Everything is seeded: the same seed gives the same numbers, bit for bit.

Example:
    >>> run = run_demo(n_users=300, n_items=200)
    >>> sorted(run.results)
    ['item-item', 'item-item, training items kept', 'popular']
    >>> run.split.audit["rows"]["lost"], run.split.audit["rows"]["duplicated"]
    (0, 0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from receval.baselines import most_popular
from receval.compare import Comparison, compare
from receval.evaluation import evaluate
from receval.randomness import keyed
from receval.result import Result
from receval.split import Split, temporal_user

#: the cutoffs and metric families of the demo's table
CUTOFFS = (5, 10)
FAMILIES = ("P", "R", "nDCG", "MAP", "MRR", "Hit")
#: the metrics of the paired comparison
COMPARED = ("P@10", "R@10", "nDCG@10")
#: a star rating at or above this is relevant
RELEVANCE_THRESHOLD = 4
#: the share of each user's rows (the latest) held out as test
TEST_FRACTION = 0.2
#: the model's popularity damping: score(u, j) = co-occurrences(u, j) / n_j ** ALPHA
ALPHA = 0.8
#: the demo's evaluation options, the same for every model; ``item_ascending`` orders tied
#: scores as both models' lists do (lower item id first), so the lists are scored as shown
OPTIONS: dict[str, Any] = {"relevance_threshold": RELEVANCE_THRESHOLD, "ties": "item_ascending",
                           "silence": ["undefined"]}
#: 2020-01-01 00:00 UTC: the log's first second (Unix time)
EPOCH = 1_577_836_800
DAY = 86_400


def make_ratings(n_users: int = 2000, n_items: int = 1000, n_genres: int = 12,
                 seed: int = 7) -> pd.DataFrame:
    """A seeded synthetic interaction log: ``user``, ``item``, ``rating`` (1-5 stars) and
    ``timestamp`` (Unix seconds over about three years), rows sorted by user then time.

    Item ``j`` (ids from 0, most popular first) has popularity ``1 / (j + 1) ** 0.9`` and one of
    ``n_genres`` genres; each user likes a few genres (Dirichlet(0.15) weights) and picks
    15-119 distinct items with probability proportional to popularity x (0.02 + liking of the
    item's genre), so a model that learns tastes can beat popularity. Ratings grow with the
    user's liking of the genre, plus user and item biases and noise. Each user is active over
    one window of 30-365 days.

    Example:
        >>> df = make_ratings(50, 40, seed=1)
        >>> list(df.columns), bool(df["rating"].between(1, 5).all())
        (['user', 'item', 'rating', 'timestamp'], True)
        >>> df.equals(make_ratings(50, 40, seed=1))
        True
    """
    rng = keyed(seed)  # the synthetic data's one stream (default_rng(seed), bit for bit)
    popularity = 1.0 / np.arange(1, n_items + 1) ** 0.9
    genre = rng.integers(0, n_genres, n_items)
    liking = rng.dirichlet(np.full(n_genres, 0.15), n_users)
    counts = np.minimum(rng.integers(15, 120, n_users), n_items)
    # Gumbel top-k: each user's n_u largest of log p + Gumbel noise are a draw without
    # replacement with probabilities p (one vectorised sort instead of a loop over users)
    keys = (np.log(popularity)[None, :] + np.log(0.02 + liking[:, genre])
            + rng.gumbel(size=(n_users, n_items)))
    order = np.argsort(-keys, axis=1, kind="stable")
    chosen = np.arange(n_items)[None, :] < counts[:, None]
    user = np.repeat(np.arange(n_users), counts)
    item = order[chosen]
    affinity = np.log1p(n_genres * liking[user, genre[item]])
    raw = (3.0 + rng.normal(0.0, 0.5, n_users)[user] + rng.normal(0.0, 0.4, n_items)[item]
           + 0.8 * affinity + rng.normal(0.0, 0.7, len(user)))
    start = rng.integers(0, 2 * 365 * DAY, n_users)
    span = rng.integers(30 * DAY, 365 * DAY, n_users)
    when = EPOCH + start[user] + (rng.random(len(user)) * span[user]).astype(np.int64)
    frame = pd.DataFrame({"user": user, "item": item, "rating": np.clip(np.rint(raw), 1, 5),
                          "timestamp": when})
    return frame.sort_values(["user", "timestamp"], kind="stable").reset_index(drop=True)


def item_item(train: pd.DataFrame, users: Any, k: int, alpha: float = ALPHA) -> pd.DataFrame:
    """An item-item co-occurrence recommender: ``score(u, j) = sum over u's training items i
    of c(i, j) / n_j ** alpha``, ``c(i, j)`` the users with both ``i`` and ``j`` in training
    (``c(j, j) = 0``), ``n_j`` the item's training users (``alpha`` damps popularity).

    Each user gets their ``k + |training items|`` best items, tied scores by item id
    ascending: the training items are *not* removed (a model's raw output); pass
    ``exclude_train=True`` to :func:`receval.evaluate` and at least ``k`` remain. The sums are
    of whole numbers in float64 (exact whatever the BLAS and its threads do), so the lists are
    the same bit for bit on any machine with the same ``numpy.power``. A user without
    training rows gets nothing. Dense users x items matrices: a demo, for thousands of each.

    Example:
        >>> train = pd.DataFrame({"user": [1, 1, 2, 2, 3], "item": [10, 11, 10, 12, 11]})
        >>> item_item(train, [3], k=1).round(3).values.tolist()  # 10: c(11, 10) / 2 ** 0.8
        [[3.0, 10.0, 0.574], [3.0, 11.0, 0.0]]
    """
    items, item_code = np.unique(train["item"].to_numpy(), return_inverse=True)
    user_ids, user_code = np.unique(train["user"].to_numpy(), return_inverse=True)
    seen = np.zeros((len(user_ids), len(items)))
    seen[user_code, item_code] = 1.0
    together = seen.T @ seen
    np.fill_diagonal(together, 0.0)
    wanted = pd.unique(pd.Series(list(users)))
    row = np.searchsorted(user_ids, wanted)
    known = (row < len(user_ids)) & (user_ids[np.minimum(row, len(user_ids) - 1)] == wanted)
    wanted, row = wanted[known], row[known]
    scores = (seen[row] @ together) / seen.sum(axis=0) ** alpha
    best = np.argsort(-scores, axis=1, kind="stable")  # ties: item id ascending
    take = np.minimum(k + seen[row].sum(axis=1).astype(np.int64), len(items))
    keep = np.arange(len(items))[None, :] < take[:, None]
    return pd.DataFrame({"user": np.repeat(wanted, take), "item": items[best[keep]],
                         "score": np.take_along_axis(scores, best, axis=1)[keep]})


def metric_names() -> list[str]:
    """The demo's metrics: every family of :data:`FAMILIES` at each of :data:`CUTOFFS`.

    Example:
        >>> metric_names()[:3]
        ['P@5', 'P@10', 'R@5']
    """
    return [f"{f}@{k}" for f in FAMILIES for k in CUTOFFS]


@dataclass
class DemoRun:
    """Everything the demo made: the log, the split, each model's predictions, the results
    (``"popular"`` and ``"item-item"`` with ``exclude_train=True``, and ``"item-item, training
    items kept"`` without) and the paired comparison of the model with the popularity floor."""

    ratings: pd.DataFrame
    split: Split
    predictions: dict[str, pd.DataFrame]
    results: dict[str, Result]
    comparison: Comparison
    seed: int


def _compile_id_kinds() -> None:
    """Tiny evaluations with integer ids (dense, with gaps) and with text ids, so that the demo (the
    documented step after installing) leaves numba's cache holding the grouping code of both
    kinds of id, not only the kind of the demo's own tables (benchmarks/bench_first_run.py:
    nothing left to compile after it)."""
    import warnings

    # integer ids dense (read as id - min) and with gaps (through a table), and text ids
    kinds = (([1, 1, 2], [1, 2, 3]), ([1, 1, 3], [1, 2, 5]), (["a", "a", "b"], ["x", "y", "z"]))
    for user, item in kinds:
        truth = pd.DataFrame({"user": user[:2], "item": item[:2]})
        preds = pd.DataFrame({"user": user, "item": item, "score": [0.9, 0.8, 0.7]})
        with warnings.catch_warnings():  # nothing of it is shown
            warnings.simplefilter("ignore")
            evaluate(truth, preds, ["P@1"])


def run_demo(seed: int = 7, *, n_users: int = 2000, n_items: int = 1000) -> DemoRun:
    """The whole workflow: generate, split (per user, by time), train the popularity floor and
    the item-item model, evaluate both against the test rows with the training rows in the
    picture, and compare them (paired t-test per user, Holm-corrected).

    Example:
        >>> run = run_demo(n_users=300, n_items=200)
        >>> run.comparison.table["metric"].tolist()
        ['P@10', 'R@10', 'nDCG@10']
        >>> run.results["item-item"].counts["rows"]["predictions_excluded_train"] > 0
        True
    """
    ratings = make_ratings(n_users, n_items, seed=seed)
    split = temporal_user(ratings, test_fraction=TEST_FRACTION, seed=seed)
    train, test = split.train, split.test
    users = np.sort(test["user"].unique())
    k = max(CUTOFFS)
    predictions = {"popular": most_popular(train, users, k),
                   "item-item": item_item(train, users, k)}
    metrics = metric_names()
    results = {name: evaluate(test, preds, metrics, train=train, exclude_train=True, **OPTIONS)
               for name, preds in predictions.items()}
    # the same lists scored with the training items left in: the protocol error it shows is
    # warned about (train-items); here it is the point, so that warning is silenced too
    kept = {**OPTIONS, "silence": [*OPTIONS["silence"], "train-items"]}
    results["item-item, training items kept"] = evaluate(test, predictions["item-item"], metrics,
                                                         train=train, **kept)
    comparison = compare(None, {"popular": results["popular"],
                                "item-item": results["item-item"]},
                         list(COMPARED), baseline="popular", seed=seed)
    _compile_id_kinds()
    return DemoRun(ratings=ratings, split=split, predictions=predictions, results=results,
                   comparison=comparison, seed=seed)
