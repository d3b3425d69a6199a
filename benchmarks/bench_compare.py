"""Speed of ``receval.compare`` (paired tests, bootstrap intervals, corrections) against ranx.

The workload: ``--users`` users, each with 1 to ``--relevant`` relevant items; ``--models``
models, each ranking ``--items-per-user`` items drawn (distinct, by a per-user stride) from the
first ``pool`` item ids of that model (pools 100, 80, 60, 60, ...: the last two models are
alike), an item relevant when its id is below the user's number of relevant items. Each model
is evaluated once with ``receval.evaluate`` on ``--metrics``; what is timed is the comparison
of those per-user values:

- ``receval``: ``receval.compare(None, results, metrics, baseline=<first>, test=...,
  n_resamples=--resamples)`` for ``--tests`` (every row: both means, the paired bootstrap
  interval, the test, Holm across every row, effect sizes, W/T/L);
- ``ranx``: ``ranx.statistical_tests.compute_statistical_significance`` on the *same* per-user
  values (numpy arrays keyed by model and metric; ranx's ``compare`` computes them itself and
  then calls this), for the baseline's pairs, with ``fisher`` (its randomization test) at
  ``--ranx-permutations`` permutations over ``--ranx-users`` users and ``student``; the fisher
  time is scaled linearly to ``--resamples`` permutations and ``--users`` users (its cost is
  one permutation of every user's pair per permutation), and the ratio is reported against that
  scaled time. ``--ranx-compare-users`` also times ``ranx.compare`` end to end (Qrels and Runs
  from DataFrames with object-dtype string ids, as ranx wants them) at that size.

Example:
    python benchmarks/bench_compare.py --users 1000000 --resamples 10000
    python benchmarks/bench_compare.py --users 20000 --resamples 1000 --ranx-users 5000  # quick
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any

import numba
import numpy as np
import pandas as pd

METRICS = ["P@5", "P@10", "R@10", "R@20", "nDCG@10", "nDCG@20", "AP@10", "RR@10", "Hit@10",
           "F1@10"]
POOLS = (100, 80, 60, 60, 50, 40, 30, 20)


def make_data(users: int, models: int, items_per_user: int, relevant: int,
              seed: int) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Truth and ``models`` prediction frames (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    n_rel = rng.integers(1, relevant + 1, users)
    truth_user = np.repeat(np.arange(users), n_rel)
    starts = np.cumsum(n_rel) - n_rel
    truth_item = np.arange(truth_user.size) - np.repeat(starts, n_rel)
    truth = pd.DataFrame({"user": truth_user, "item": truth_item})
    preds = {}
    rank = np.arange(items_per_user)
    for m in range(models):
        pool = POOLS[m % len(POOLS)]
        offset = rng.integers(0, pool, users)
        step = 7 if pool % 7 else 11  # coprime with the pool: the items are distinct
        item = (offset[:, None] + step * rank[None, :]) % pool
        preds[f"m{m}"] = pd.DataFrame({
            "user": np.repeat(np.arange(users), items_per_user),
            "item": item.ravel(),
            "score": np.tile((items_per_user - rank).astype(float), users)})
    return truth, preds


def _time(fn: Any, repeat: int = 1) -> tuple[float, Any, float]:
    """The best wall time of ``repeat`` calls, the last result, and that call's CPU time
    (every thread of the process: what the work costs on a machine of its own)."""
    best, out, cpu = float("inf"), None, 0.0
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = fn()
        if time.perf_counter() - start < best:
            best, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    return best, out, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--metrics", nargs="+", default=METRICS)
    parser.add_argument("--items-per-user", type=int, default=20)
    parser.add_argument("--relevant", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--tests", nargs="+", default=["t", "randomization"])
    parser.add_argument("--ranx-users", type=int, default=100_000)
    parser.add_argument("--ranx-permutations", type=int, default=100)
    parser.add_argument("--ranx-compare-users", type=int, default=0,
                        help="also time ranx.compare end to end at this many users (0: no)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", default=None, help="write the numbers as JSON here")
    args = parser.parse_args()

    import receval

    report: dict[str, Any] = {"args": vars(args), "python": sys.version.split()[0],
                              "machine": platform.machine(), "cpus": os.cpu_count(),
                              "receval": receval.__version__}
    truth, preds = make_data(args.users, args.models, args.items_per_user, args.relevant,
                             args.seed)
    start = time.perf_counter()
    results = {name: receval.evaluate(truth, p, args.metrics, silence="ties")
               for name, p in preds.items()}
    report["evaluate_s"] = time.perf_counter() - start
    names = list(results)
    base = names[0]
    distinct = {}
    for m in args.metrics:
        a = results[base].per_user[m].to_numpy()
        distinct[m] = [int(np.unique(results[o].per_user[m].to_numpy() - a).size)
                       for o in names[1:]]
    report["distinct_differences"] = distinct
    print(f"{args.users:,} users x {args.models} models x {len(args.metrics)} metrics, "
          f"{args.resamples:,} resamples; evaluation {report['evaluate_s']:.1f} s")
    print("distinct per-user differences vs the baseline:", distinct)
    for test in args.tests:  # compile and import (scipy) once, outside the timings
        receval.compare(None, {k: results[k] for k in names[:2]}, args.metrics[:1],
                        n_resamples=50, test=test)
    for test in args.tests:
        seconds, comparison, cpu = _time(lambda t=test: receval.compare(
            None, results, args.metrics, baseline=base, test=t, n_resamples=args.resamples,
            seed=args.seed), args.repeat)
        report[f"receval_{test}_s"] = seconds
        report[f"receval_{test}_cpu_s"] = cpu
        print(f"receval compare, test={test}: {seconds:.2f} s wall, {cpu:.1f} s CPU on "
              f"{numba.get_num_threads()} threads, for {len(comparison.table)} rows")

    try:
        from ranx.statistical_tests import compute_statistical_significance
    except ImportError:
        print("ranx is not installed: no peer numbers")
    else:
        users = min(args.ranx_users, args.users)
        scores = {name: {m: np.ascontiguousarray(r.per_user[m].to_numpy(dtype=float)[:users])
                         for m in args.metrics} for name, r in results.items()}
        pairs = [[base, other] for other in names[1:]]

        def ranx_run(test: str, permutations: int) -> None:
            for pair in pairs:  # the baseline's pairs, as receval computes them
                compute_statistical_significance(pair, {k: scores[k] for k in pair},
                                                 stat_test=test, n_permutations=permutations)

        ranx_run("fisher", 2)  # compile once
        fisher_s, _, fisher_cpu = _time(lambda: ranx_run("fisher", args.ranx_permutations))
        student_s, _, _ = _time(lambda: ranx_run("student", 1))
        scale = (args.resamples / args.ranx_permutations) * (args.users / users)
        report.update(ranx_users=users, ranx_fisher_measured_s=fisher_s,
                      ranx_fisher_cpu_s=fisher_cpu,
                      ranx_fisher_scaled_s=fisher_s * scale, ranx_student_s=student_s)
        print(f"ranx fisher: {fisher_s:.2f} s at {users:,} users x {args.ranx_permutations} "
              f"permutations -> {fisher_s * scale:.0f} s scaled to {args.users:,} users x "
              f"{args.resamples:,}; ranx student: {student_s:.2f} s at {users:,} users")
        if "randomization" in args.tests:
            ratio = fisher_s * scale / report["receval_randomization_s"]
            report["ratio_ranx_fisher_over_receval_randomization"] = ratio
            print(f"ratio ranx fisher (scaled) / receval randomization: {ratio:,.0f}x")
        if args.ranx_compare_users:
            report.update(_ranx_compare(truth, preds, args))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)


def _ranx_compare(truth: pd.DataFrame, preds: dict[str, pd.DataFrame],
                  args: argparse.Namespace) -> dict[str, float]:
    """ranx.compare end to end (its own evaluation included) on the first users."""
    from ranx import Qrels, Run, compare

    users = args.ranx_compare_users
    metric_names = {"P@10": "precision@10", "R@10": "recall@10", "nDCG@10": "ndcg@10",
                    "RR@10": "mrr@10", "Hit@10": "hit_rate@10", "AP@10": "map@10"}
    q = truth[truth.user < users].astype({"user": str, "item": str}).astype(object)
    q["rel"] = 1
    qrels = Qrels.from_df(q, q_id_col="user", doc_id_col="item", score_col="rel")
    runs = []
    for name, p in preds.items():
        r = p[p.user < users].astype({"user": str, "item": str}).astype({"user": object,
                                                                          "item": object})
        run = Run.from_df(r, q_id_col="user", doc_id_col="item", score_col="score")
        run.name = name
        runs.append(run)
    seconds, _, _ = _time(lambda: compare(qrels, runs, list(metric_names.values()),
                                       stat_test="fisher",
                                       n_permutations=args.ranx_permutations))
    print(f"ranx.compare end to end (fisher, {args.ranx_permutations} permutations, "
          f"{len(metric_names)} metrics, every pair): {seconds:.2f} s at {users:,} users")
    return {"ranx_compare_users": users, "ranx_compare_s": seconds}


if __name__ == "__main__":
    main()
