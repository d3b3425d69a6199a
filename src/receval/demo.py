"""``receval demo``: a seeded synthetic ratings set, a baseline, and the metric table.

Nothing is downloaded: the data are generated (power-law item popularity, user rating
biases, 1-5 stars), split per user into train and test, and scored by a baseline
(global mean + user bias + item bias, learned on train).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from receval.evaluation import evaluate
from receval.result import Result

CUTOFFS = (3, 10, 15)
FAMILIES = ("P", "R", "F1", "MAP", "nDCG", "MRR", "Hit")


@dataclass
class DemoData:
    """Train and test ratings, the baseline's scores for the test pairs and its top-N lists."""

    train: pd.DataFrame
    test: pd.DataFrame
    test_scores: pd.DataFrame
    top_n: pd.DataFrame


def make_ratings(n_users: int = 2000, n_items: int = 1000, seed: int = 7) -> pd.DataFrame:
    """A seeded synthetic ratings table (user, item, rating) with 1-5 stars.

    Item popularity follows a power law; users and items have rating biases.

    Example:
        >>> df = make_ratings(50, 40, seed=1)
        >>> sorted(df.columns), df["rating"].between(1, 5).all()
        (['item', 'rating', 'user'], np.True_)
    """
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, n_items + 1) ** 0.9
    popularity /= popularity.sum()
    item_bias = rng.normal(0.0, 0.5, n_items)
    user_bias = rng.normal(0.0, 0.6, n_users)
    quality = rng.normal(0.0, 1.0, (n_items, 8))
    taste = rng.normal(0.0, 1.0, (n_users, 8))
    users, items = [], []
    for u, n in enumerate(rng.integers(15, 120, n_users)):
        chosen = rng.choice(n_items, size=min(n, n_items), replace=False, p=popularity)
        users.append(np.full(len(chosen), u))
        items.append(chosen)
    user = np.concatenate(users)
    item = np.concatenate(items)
    affinity = (taste[user] * quality[item]).sum(axis=1) / np.sqrt(8.0)
    raw = 3.4 + user_bias[user] + item_bias[item] + 0.6 * affinity + rng.normal(0, 0.6, len(user))
    rating = np.clip(np.rint(raw), 1, 5)
    return pd.DataFrame({"user": user, "item": item, "rating": rating})


def split_per_user(ratings: pd.DataFrame, test_fraction: float = 0.2,
                   seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hold out ``test_fraction`` of each user's ratings (at least one) as the test set.

    Example:
        >>> train, test = split_per_user(make_ratings(20, 30, seed=2))
        >>> set(test["user"]) <= set(train["user"])
        True
    """
    rng = np.random.default_rng(seed)
    shuffled = ratings.sample(frac=1.0, random_state=int(rng.integers(2**31)))
    position = shuffled.groupby("user").cumcount()
    size = shuffled.groupby("user")["item"].transform("size")
    is_test = position < np.maximum(1, (size * test_fraction).round().astype(int))
    return shuffled[~is_test].reset_index(drop=True), shuffled[is_test].reset_index(drop=True)


def baseline_scores(train: pd.DataFrame, pairs: pd.DataFrame, damping: float = 5.0) -> np.ndarray:
    """Predicted ratings: global mean + damped user bias + damped item bias.

    Example:
        >>> tr = pd.DataFrame({"user": [0, 0, 1], "item": [0, 1, 0], "rating": [5.0, 3.0, 4.0]})
        >>> baseline_scores(tr, pd.DataFrame({"user": [1], "item": [1]})).round(3).tolist()
        [3.81]
    """
    mu = train["rating"].mean()
    resid = train["rating"] - mu
    g = resid.groupby(train["item"])
    item_bias = g.sum() / (g.count() + damping)
    resid_u = resid - train["item"].map(item_bias)
    gu = resid_u.groupby(train["user"])
    user_bias = gu.sum() / (gu.count() + damping)
    return (
        mu
        + pairs["user"].map(user_bias).fillna(0.0).to_numpy()
        + pairs["item"].map(item_bias).fillna(0.0).to_numpy()
    )


def make_demo_data(seed: int = 7, top_n: int = 15) -> DemoData:
    """Generate, split and score the demo data set.

    Example:
        >>> data = make_demo_data()
        >>> len(data.test_scores) == len(data.test)
        True
    """
    ratings = make_ratings(seed=seed)
    train, test = split_per_user(ratings, seed=seed)
    test_scores = test[["user", "item"]].assign(score=baseline_scores(train, test))
    # full ranking: every item the user has not rated in train, top N by popularity
    n_items = int(ratings["item"].max()) + 1
    users = np.sort(test["user"].unique())
    grid = pd.DataFrame({"user": np.repeat(users, n_items), "item": np.tile(np.arange(n_items),
                                                                          len(users))})
    grid = grid.merge(train[["user", "item"]].assign(seen=True), how="left", on=["user", "item"])
    grid = grid[grid["seen"].isna()].drop(columns="seen")
    # popularity (number of train ratings) is the classic full-ranking baseline
    grid["score"] = grid["item"].map(train["item"].value_counts()).fillna(0.0).to_numpy()
    ranked = grid.sort_values(["user", "score"], ascending=[True, False], kind="stable")
    top = ranked.groupby("user").head(top_n).reset_index(drop=True)
    return DemoData(train=train, test=test, test_scores=test_scores, top_n=top)


def metric_names() -> list[str]:
    """The demo's metrics: every family at k = 3, 10, 15, then RMSE and MAE."""
    return [f"{f}@{k}" for f in FAMILIES for k in CUTOFFS]


def run_demo(seed: int = 7) -> dict[str, Result]:
    """Evaluate the baseline three ways: rating semantics, top-k semantics, full ranking.

    Example:
        >>> results = run_demo()
        >>> sorted(results)
        ['full ranking', 'rating semantics', 'top-k semantics']
    """
    data = make_demo_data(seed=seed)
    metrics = metric_names()
    return {
        "rating semantics": evaluate(
            data.test, data.test_scores, [*metrics, "RMSE", "MAE"],
            relevance_threshold=3.5, score_threshold=3.5,
        ),
        "top-k semantics": evaluate(data.test, data.test_scores, metrics,
                                    relevance_threshold=3.5),
        "full ranking": evaluate(data.test, data.top_n, metrics,
                                                          relevance_threshold=3.5),
    }
