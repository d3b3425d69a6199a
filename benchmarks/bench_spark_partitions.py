"""How many shuffle partitions the Spark engine should use on a small input (issue 19).

A table of about 61,000 rows (``--users`` users x 100 predictions, 10 truth rows each, in
Parquet), evaluated with ``engine="spark"`` on ``--master`` under several ``partitions``
settings: ``spark`` (the session's: 200 shuffle partitions, coalesced by AQE), ``auto`` (the
default: :func:`receval.spark.settings.auto_partitions`) and fixed numbers. Each setting runs
``--repeat`` times after one warm-up run of the same setting (the cache cleared after each
run: the per-user frame is persisted, and a rerun of the same plan would only read it); the
best and median seconds are printed as one JSON line per setting.

    python benchmarks/bench_spark_partitions.py --users 555 --master 'local[2]'
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import receval

METRICS = ["P@10", "R@10", "nDCG@10", "MAP@100", "MRR"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=555)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--settings", nargs="+", default=["auto", "spark", "1", "2", "8",
                                                          "32"])
    parser.add_argument("--no-per-user", action="store_true",
                        help="spark_options per_user=False (only the summary)")
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(args.master).appName("bench-partitions")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(args.users), 100)
    preds = pd.DataFrame({"user": users, "item": rng.integers(0, 5000, len(users)),
                          "score": rng.random(len(users))}).drop_duplicates(["user", "item"])
    truth = pd.DataFrame({"user": np.repeat(np.arange(args.users), 10),
                          "item": rng.integers(0, 5000, 10 * args.users),
                          "rating": 5.0}).drop_duplicates(["user", "item"])
    with tempfile.TemporaryDirectory() as tmp:
        t_path, p_path = Path(tmp) / "t.parquet", Path(tmp) / "p.parquet"
        truth.to_parquet(t_path)
        preds.to_parquet(p_path)
        rows = len(truth) + len(preds)
        receval.evaluate(str(t_path), str(p_path), METRICS, engine="spark",
                         silence=["ties", "undefined"])  # JVM and Python workers warm
        for setting in args.settings:
            parts = int(setting) if setting.isdigit() else setting
            times = []
            for _ in range(args.repeat + 1):
                start = time.perf_counter()
                result = receval.evaluate(str(t_path), str(p_path), METRICS, engine="spark",
                                          spark_options={"partitions": parts,
                                                         "per_user": not args.no_per_user},
                                          silence=["ties", "undefined"])
                times.append(time.perf_counter() - start)
                # the per-user frame is persisted: a rerun of the same plan would read it
                # from Spark's cache instead of evaluating again
                spark.catalog.clearCache()
            print(json.dumps({"rows": rows, "master": args.master, "partitions": setting,
                              "per_user": not args.no_per_user,
                              "tasks": len(result.tasks), "best_s": round(min(times[1:]), 3),
                              "median_s": round(statistics.median(times[1:]), 3),
                              "first_s": round(times[0], 3),
                              "P@10": result.summary["P@10"]}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
