"""Debiased metrics on MovieLens: the inputs of issue 32's debiased-metrics measurements.

    python benchmarks/debias_movielens.py --data /work/shared/data/ml-latest-small --out /tmp/dm

Writes train.csv, test.csv (with a constant propensity column ``p`` = 0.25), popular.csv and
svd.csv under ``--out``. Split: per user a seeded random 20% of the ratings to test
(receval.split.random_holdout, seed 23); every test rating is relevant (implicit feedback).
Popularity: receval.baselines.most_popular, 100 items per user. PureSVD: the rank-50
truncated SVD of the training rating matrix (missing = 0; scipy.sparse.linalg.svds,
random_state 0), the 100 best items each user has not rated in training.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.linalg import svds

from receval.baselines import most_popular
from receval.split import random_holdout

DEPTH = 100


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default="/work/shared/data/ml-latest-small")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ratings = pd.read_csv(Path(args.data) / "ratings.csv").rename(
        columns={"userId": "user", "movieId": "item"})[["user", "item", "rating"]]
    split = random_holdout(ratings, test_fraction=0.2, seed=23)
    train, test = split.train, split.test
    train.to_csv(out / "train.csv", index=False)
    test.assign(p=0.25).to_csv(out / "test.csv", index=False)
    users = np.sort(test.user.unique())
    most_popular(train, users, DEPTH).to_csv(out / "popular.csv", index=False)
    t_users = np.sort(train.user.unique())
    items = np.sort(train.item.unique())
    u = pd.Index(t_users).get_indexer(train.user)
    i = pd.Index(items).get_indexer(train.item)
    rated = sp.csr_matrix((train.rating.to_numpy(float), (u, i)),
                          shape=(len(t_users), len(items)))
    left, sigma, right = svds(rated, k=50, random_state=0)
    scores = (left * sigma) @ right
    scores[rated.nonzero()] = -np.inf
    part = np.argpartition(-scores, DEPTH, axis=1)[:, :DEPTH]
    order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1, kind="stable")
    best = np.take_along_axis(part, order, axis=1)
    svd = pd.DataFrame({"user": np.repeat(t_users, DEPTH), "item": items[best.ravel()],
                        "score": np.take_along_axis(scores, best, axis=1).ravel()})
    svd[svd.user.isin(users)].to_csv(out / "svd.csv", index=False)


if __name__ == "__main__":
    main()
