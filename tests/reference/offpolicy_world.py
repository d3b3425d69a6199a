"""A small simulated world where the true online value of a policy is known exactly.

200 users, 20 items (item 0 the most popular), lists of 3. A user examines position k with
probability theta_k and clicks an examined item with probability alpha(user, item): a little
more for popular items, much more for the user's 3 favourites (drawn among the 12 least
popular). The logger serves the 3 most popular items with probability 1 - eps, else a uniformly
random list (so its item-position propensities are (1 - eps) [top] + eps / 20). Two targets,
given as scores with the top-k rule: ``popular`` (the logger's favourites) and ``personal``
(each user's best items by alpha). Their true value, the expected clicks per list when served,
is sum_k theta_k alpha(user, item at k), averaged over the requests' users.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

THETA = np.array([1.0, 0.7, 0.5])


def world(seed: int = 0, n_requests: int = 20_000, n_items: int = 20, eps: float = 0.3
          ) -> tuple[pd.DataFrame, dict[str, pd.DataFrame], dict[str, float]]:
    """(log, targets as score tables, true value of each target)."""
    rng = np.random.default_rng(seed)
    length = THETA.size
    pop = np.linspace(1.0, 0.0, n_items)
    n_users = 200
    logit = np.tile(-2.2 + 1.2 * pop, (n_users, 1))
    for u in range(n_users):
        logit[u, rng.choice(np.arange(8, n_items), 3, replace=False)] += 2.5
    alpha = 1 / (1 + np.exp(-logit))
    users = rng.integers(0, n_users, n_requests)
    top = np.argsort(-pop, kind="stable")[:length]
    explore = rng.uniform(size=n_requests) < eps
    random_lists = np.argsort(rng.uniform(size=(n_requests, n_items)), axis=1)[:, :length]
    shown = np.where(explore[:, None], random_lists, top[None, :])
    k = np.tile(np.arange(1, length + 1), n_requests)
    item = shown.ravel()
    user = np.repeat(users, length)
    clicked = rng.uniform(size=item.size) < THETA[k - 1] * alpha[user, item]
    log = pd.DataFrame({"request": np.repeat(np.arange(n_requests), length), "user": user,
                        "item": item, "position": k, "reward": clicked.astype(float),
                        "propensity": (1 - eps) * (item == top[k - 1]) + eps / n_items})
    req = np.repeat(np.arange(n_requests), n_items)
    it = np.tile(np.arange(n_items), n_requests)
    targets = {"popular": pd.DataFrame({"request": req, "item": it, "score": pop[it]}),
               "personal": pd.DataFrame({"request": req, "item": it,
                                         "score": alpha[users[req], it]})}
    best = -np.sort(-alpha, axis=1)[:, :length]
    truth = {"popular": float(np.mean((alpha[:, top] * THETA).sum(axis=1)[users])),
             "personal": float(np.mean((best * THETA).sum(axis=1)[users]))}
    return log, targets, truth


def naive_precision(log: pd.DataFrame, scores: pd.DataFrame, k: int = 3) -> float:
    """The usual offline metric: P@k of the target's top k against the clicks in the log."""
    ranked = scores.sort_values(["request", "score", "item"], ascending=[True, False, True])
    top = ranked.groupby("request").head(k)[["request", "item"]]
    clicks = log.loc[log["reward"] > 0, ["request", "item"]]
    hits = top.merge(clicks, on=["request", "item"]).shape[0]
    return hits / (k * scores["request"].nunique())


def reward_model(log: pd.DataFrame, n_items: int = 20) -> pd.DataFrame:
    """A user-blind model: the smoothed click rate of each (item, position) in the log."""
    by = log.groupby(["item", "position"])["reward"].agg(["sum", "count"])
    prior = log.groupby("position")["reward"].mean()
    grid = pd.MultiIndex.from_product([range(n_items), prior.index], names=["item", "position"])
    by = by.reindex(grid, fill_value=0)
    p = prior.reindex(by.index.get_level_values("position")).to_numpy()
    rate = (by["sum"].to_numpy() + 10 * p) / (by["count"].to_numpy() + 10)
    return pd.DataFrame({"item": grid.get_level_values(0), "position": grid.get_level_values(1),
                         "prediction": rate})
