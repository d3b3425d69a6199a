"""Group exposure and calibration on MovieLens (genres as item groups) for a popularity model
and a truncated-SVD model: the numbers of issue 23's closing note.

    python benchmarks/movielens_fairness.py --data /work/shared/data/ml-latest-small

Split: per user a seeded random 20% of the ratings to test (receval.split.random_holdout);
relevant: test ratings >= 4; both models rank every item the user has not rated in training.
Popularity: training interaction counts. SVD: rank-``--factors`` truncated SVD of the
mean-centred training rating matrix (scipy.sparse.linalg.svds).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.linalg import svds

import receval
from receval.split import random_holdout

METRICS = ["nDCG@10", "group_exposure@10", "AWRF@10", "calibration@10", "calibration_js@10",
           "rND@10", "EE_L_norm@10"]


def top_n(scores: np.ndarray, seen: sp.csr_matrix, n: int) -> np.ndarray:
    """The ``n`` best unseen item codes per user row."""
    scores = scores.copy()
    scores[seen.nonzero()] = -np.inf
    part = np.argpartition(-scores, n, axis=1)[:, :n]
    order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default="/work/shared/data/ml-latest-small")
    ap.add_argument("--factors", type=int, default=32)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    ratings = pd.read_csv(Path(args.data) / "ratings.csv").rename(
        columns={"userId": "user", "movieId": "item"})
    movies = pd.read_csv(Path(args.data) / "movies.csv")
    genres = pd.DataFrame({"item": movies.movieId,
                           "genre": movies.genres.str.split("|").map(
                               lambda g: [x for x in g if x != "(no genres listed)"])})
    split = random_holdout(ratings, test_fraction=0.2, seed=23)
    train, test = split.train, split.test
    users = np.sort(train.user.unique())
    items = np.sort(train.item.unique())
    u = pd.Index(users).get_indexer(train.user)
    i = pd.Index(items).get_indexer(train.item)
    seen = sp.csr_matrix((np.ones(len(u)), (u, i)), shape=(len(users), len(items)))
    pop = np.bincount(i, minlength=len(items)).astype(float)
    rated = sp.csr_matrix((train.rating.to_numpy(float), (u, i)), shape=seen.shape)
    means = np.asarray(rated.sum(axis=1)).ravel() / np.maximum(seen.getnnz(axis=1), 1)
    centred = rated - sp.csr_matrix((means[u] * 1.0, (u, i)), shape=seen.shape)
    left, sigma, right = svds(centred.astype(float), k=args.factors, random_state=0)
    models = {"popularity": np.broadcast_to(pop, seen.shape),
              "svd": (left * sigma) @ right}
    out: dict[str, Any] = {}
    for name, scores in models.items():
        best = top_n(np.asarray(scores, dtype=float), seen, 10)
        preds = pd.DataFrame({"user": np.repeat(users, 10), "item": items[best.ravel()],
                              "score": np.tile(np.arange(10, 0, -1.0), len(users))})
        r = receval.evaluate(test, preds, METRICS, relevance_threshold=4.0,
                             train=train[["user", "item"]], item_features=genres,
                             item_groups="genre",
                             beyond={"fairness_step": 1, "protected_group": "Documentary",
                                     "fairness_population": "catalogue"},
                             silence=["undefined"])
        table = r.counts["group_exposure"]["group_exposure@10"]
        out[name] = {"summary": {k: round(v, 4) for k, v in r.summary.items()},
                     "exposure": {g: round(e, 4) for g, e in zip(table["group"],
                                                                  table["exposure"],
                                                                  strict=True)}}
    out["target_uniform"] = round(1 / len(table["group"]), 4)
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
