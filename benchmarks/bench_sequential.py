"""receval.sequential.evaluate against receval.evaluate on the same rows (issue 36).

Synthetic, seeded: ``--queries / 5`` users with 10 training and 5 test events each over
``--items`` items; protocol ``"next"`` (one query per test event); ``--k`` scored predictions
per query (tie-free random scores). Times (median of ``--repeat``, the two evaluations
alternating): making the queries,
``receval.evaluate(q.truth, predictions, user_col="query")`` (the floor: the same rows, no
history, no parts), ``receval.sequential.evaluate`` with ``history="keep"`` and with
``"exclude"``. Prints one JSON object; the ratio ``keep / flat`` is the issue's target
(within 1.3x).

    python benchmarks/bench_sequential.py --queries 1000000 --k 100 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import receval

METRICS = ["P@10", "R@10", "nDCG@10", "MRR"]


def events(n_queries: int, n_items: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Training (10 per user) and test (5 per user) events; items drawn with a popularity
    skew so that about a tenth of the targets are repeats."""
    rng = np.random.default_rng(seed)
    n_users = max(1, n_queries // 5)
    weights = 1.0 / np.arange(1, n_items + 1) ** 0.8
    weights /= weights.sum()

    def table(per_user: int, t0: int) -> pd.DataFrame:
        users = np.repeat(np.arange(n_users, dtype=np.int64), per_user)
        items = rng.choice(n_items, size=len(users), p=weights).astype(np.int64)
        ts = t0 + np.tile(np.arange(per_user, dtype=np.int64), n_users)
        return pd.DataFrame({"user": users, "item": items, "timestamp": ts})

    return table(10, 0), table(5, 100)


def predictions(n_queries: int, k: int, n_items: int, seed: int) -> pd.DataFrame:
    """``k`` distinct items per query with distinct scores, rows shuffled."""
    rng = np.random.default_rng(seed + 1)
    query = np.repeat(np.arange(n_queries, dtype=np.int64), k)
    offset = rng.integers(0, n_items, size=n_queries)
    stride = rng.integers(1, 50, size=n_queries)
    items = np.repeat(offset, k) + np.tile(np.arange(k), n_queries) * np.repeat(stride, k)
    items %= n_items
    score = rng.permutation(len(query)).astype(np.float64)
    order = rng.permutation(len(query))
    return pd.DataFrame({"query": query[order], "item": items[order], "score": score[order]})


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median seconds of ``repeat`` runs and the last result."""
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark and print its JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    train, test = events(args.queries, args.items, args.seed)
    t_queries, q = timed(lambda: receval.sequential.queries(train, test, "next"), 1)
    preds = predictions(len(q.queries), args.k, args.items, args.seed)
    truth = q.truth[["query", "item"]]
    # compile the kernels on a tiny input first, as every receval benchmark does
    receval.evaluate(
        {"query": [0], "item": [1]},
        {"query": [0], "item": [1], "score": [1.0]},
        METRICS,
        user_col="query",
    )
    # the two alternate, so that a change of load on a shared machine hits both alike
    flat_times, keep_times = [], []
    for _ in range(args.repeat):
        t, flat = timed(lambda: receval.evaluate(truth, preds, METRICS, user_col="query"), 1)
        flat_times.append(t)
        t, keep = timed(lambda: receval.sequential.evaluate(q, preds, METRICS), 1)
        keep_times.append(t)
    t_flat, t_keep = statistics.median(flat_times), statistics.median(keep_times)
    t_excl, _ = timed(lambda: receval.sequential.evaluate(q, preds, METRICS, history="exclude"), 1)
    assert keep.summary == flat.summary, (keep.summary, flat.summary)
    out = {
        "queries": len(q.queries),
        "prediction_rows": len(preds),
        "repeat_targets": keep.counts["targets"]["repeat"],
        "seconds": {
            "queries": round(t_queries, 3),
            "evaluate": round(t_flat, 3),
            "sequential_keep": round(t_keep, 3),
            "sequential_exclude": round(t_excl, 3),
        },
        "ratio_keep_over_evaluate": round(t_keep / t_flat, 3),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
