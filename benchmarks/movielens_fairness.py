"""Group exposure and calibration on MovieLens (genres as item groups) for a popularity model
and a truncated-SVD model: the numbers of issue 23's closing note.

    python benchmarks/movielens_fairness.py --data /work/shared/data/ml-latest-small \
        --report /tmp/ml_fairness.html

Printed: the JSON of both models (summaries, exposure per genre), then markdown tables:
group exposure per genre against the uniform target with svd - popularity, the per-user
fairness and calibration means with the paired difference (receval.report.fairness: compare's
paired t and bootstrap interval), and the user-side gap between light and heavy users
(training-activity halves, receval.disparity, Welch). ``--report``: the HTML report of both
models, with its Fairness section.

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
    ap.add_argument("--report", default=None)
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
    results: dict[str, receval.Result] = {}
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
        results[name] = r
        table = r.counts["group_exposure"]["group_exposure@10"]
        out[name] = {"summary": {k: round(v, 4) for k, v in r.summary.items()},
                     "exposure": {g: round(e, 4) for g, e in zip(table["group"],
                                                                  table["exposure"],
                                                                  strict=True)}}
    out["target_uniform"] = round(1 / len(table["group"]), 4)
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))
    print(markdown(results, train))
    if args.report:
        from receval.report.html import write_report

        write_report(args.report, results, metrics=METRICS, seed=23)


def markdown(results: dict[str, receval.Result], train: pd.DataFrame) -> str:
    """The closing note's tables: exposure per genre, per-user means with the paired
    difference, and the gap between light and heavy users."""
    from receval.disparity import disparity
    from receval.report.fairness import fairness_section

    section = fairness_section(results, METRICS, seed=23)
    assert section is not None
    lines = []
    exposure = section["exposure"][0]
    names = exposure["models"]
    lines.append("| genre | target | " + " | ".join(f"{m} share (gap)" for m in names)
                 + f" | {names[1]} - {names[0]} |")
    lines.append("|---" * (3 + len(names)) + "|")
    for row in exposure["rows"]:
        lines.append(f"| {row['group']} | {row['target']} | " + " | ".join(row["cells"])
                     + " | " + " | ".join(row["diffs"]) + " |")
    lines.append("| group_exposure@10 (TV distance) | | " + " | ".join(exposure["distance"])
                 + " | |")
    lines.append("")
    per = section["per_user"]
    lines.append("| metric | " + " | ".join(names) + f" | {names[1]} - {names[0]} | 95% "
                 "interval | p (paired t) |")
    lines.append("|---" * (4 + len(names)) + "|")
    for row in per["rows"]:
        d = row["diffs"][0]
        lines.append(f"| {row['metric']} | " + " | ".join(row["cells"])
                     + f" | {d['delta']} | {d['interval']} | {d['p']} |")
    lines.append("")
    gaps = disparity(results, "activity:2", ["nDCG@10", "AWRF@10", "calibration@10"],
                     train=train[["user", "item"]])
    lines.append("| model | metric | group | reference | mean | reference mean | gap | 95% "
                 "interval (Welch) | p (Holm) |")
    lines.append("|---" * 9 + "|")
    for g in gaps.itertuples(index=False):
        lines.append(f"| {g.model} | {g.metric} | {g.group} | {g.reference} | {g.mean:.4f} | "
                     f"{g.reference_mean:.4f} | {g.gap:+.4f} | [{g.ci_low:+.4f}, "
                     f"{g.ci_high:+.4f}] | {g.p_adjusted:.4f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
