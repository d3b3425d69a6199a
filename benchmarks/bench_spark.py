"""receval on Spark vs Spark ML ``RankingEvaluator`` vs receval's local engine.

Long tables in Parquet, read by Spark: U users x ``--preds`` predictions (distinct items,
random scores) and ``--relevant`` truth items per user (half of them among the predictions).

* receval on Spark (``engine="spark"``): every metric family at 6 cutoffs (P, R, F1, AP,
  nDCG, RR, Hit, hits, DCG at 1, 5, 10, 20, 50, 100: 54 metrics) and the audit counts, from
  the Parquet files to the summary (``per_user`` off: only the summary is asked, as for
  RankingEvaluator), on each ``--masters`` (one process each: one SparkContext per process).
* Spark ML ``RankingEvaluator`` (P@10, R@10, MAP, nDCG@10) on the first master: the arrays it
  needs built from the same long tables (groupBy + collect_list of the items sorted by score:
  "convert"), then one ``evaluate`` per metric ("compute").
* Spark's own bare shuffle by user of the same columns (the floor receval's Spark plan is
  measured against, issue 24: within 1.5x): both sides' columns unioned and grouped by user
  with one ``collect_list`` per side and column exactly as the engine's ``columns`` plan does,
  written to Spark's ``noop`` sink (every row computed, nothing stored), on every master;
  again packed as before `22d997e` (a list of side flags): the ratios take the cheaper of the two.
* receval's local engine on the same Parquet files (read by receval, numba on every core).

    python benchmarks/bench_spark.py --users 200000 1000000 --masters 'local[2]' 'local[1]'

How the cost per user scales with workers (``local-cluster[workers, cores, MB]``: one
executor process per worker, its heap the worker's MB, ``spark.executor.memory`` set from the
master; ``local-cluster`` needs no cluster, only the pip-installed pyspark). At 1M users within
a 24 GB machine: 1 and 2 executors of 1 core and 3 GB, 4 of 1.5 GB (plus a Python worker of
about 0.5 GB each and the 2 GB driver, which runs no task here):

    python benchmarks/bench_spark.py --users 1000000 --no-mllib --memory 2g --masters \
        'local-cluster[1,1,3072]' 'local-cluster[2,1,3072]' 'local-cluster[4,1,1536]'

(On a 2-core machine 4 executors of 1 core are oversubscribed: that run measures the cost of
more tasks than cores, not scaling.)

Prints one JSON object per measure and a summary table; ``--out`` saves them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

KS = (1, 5, 10, 20, 50, 100)
FAMILIES = ("P", "R", "F1", "AP", "nDCG", "RR", "Hit", "hits", "DCG")
METRICS = [f"{f}@{k}" for f in FAMILIES for k in KS]


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system, with reaped children) of ``root`` and its descendants (the
    JVM and its Python workers; Linux /proc: 0 elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    todo, total = [root], 0.0
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15]) / tick
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(x) for x in f.read().split()]
        except OSError:  # a process that ended meanwhile
            continue
    return total


def write_data(folder: Path, users: int, preds: int, relevant: int, seed: int = 0,
               chunk: int = 50_000) -> tuple[Path, Path]:
    """Parquet truth and predictions, written in chunks of users (bounded memory)."""
    rng = np.random.default_rng(seed)
    n_items = max(10 * preds, 10_000)
    t_path, p_path = folder / f"truth_{users}.parquet", folder / f"preds_{users}.parquet"
    if t_path.exists() and p_path.exists():
        return t_path, p_path
    t_writer = p_writer = None
    for start in range(0, users, chunk):
        n = min(chunk, users - start)
        ids = np.arange(start, start + n, dtype=np.int64)
        # distinct items per user: a random offset and stride through the catalog
        offset = rng.integers(0, n_items, n)[:, None]
        items = (offset + np.arange(preds)[None, :] * 7) % n_items
        scores = rng.random((n, preds))
        hit = items[:, : relevant // 2]
        miss = (offset + (np.arange(relevant - relevant // 2) + preds)[None, :] * 7) % n_items
        p = pa.table({"user": np.repeat(ids, preds), "item": items.ravel().astype(np.int64),
                      "score": scores.ravel()})
        t = pa.table({"user": np.repeat(ids, relevant),
                      "item": np.concatenate([hit, miss], axis=1).ravel().astype(np.int64)})
        if p_writer is None:
            p_writer = pq.ParquetWriter(p_path, p.schema)
            t_writer = pq.ParquetWriter(t_path, t.schema)
        p_writer.write_table(p)
        assert t_writer is not None
        t_writer.write_table(t)
    assert p_writer is not None and t_writer is not None
    p_writer.close()
    t_writer.close()
    return t_path, p_path


def run_spark(master: str, t_path: str, p_path: str, mllib: bool, memory: str,
              buckets: int = 0, rounds: int = 1) -> list[dict]:
    """In this process: one SparkSession on ``master``; receval (twice: the first run pays
    for the Python workers and the kernels), then RankingEvaluator."""
    warnings.simplefilter("ignore")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import receval

    builder = SparkSession.builder
    warehouse = tempfile.mkdtemp(prefix="bench_spark_wh_")  # removed at the end
    cluster = re.fullmatch(r"local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*(\d+)\s*\]", master)
    if cluster:  # each executor's heap: its worker's memory (Spark's default is 1 GB)
        builder = builder.config("spark.executor.memory", f"{cluster.group(1)}m")
    spark = (builder.master(master).appName("bench-spark")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.memory", memory)
             .config("spark.sql.warehouse.dir", warehouse)
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "200000")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    out: list[dict] = []
    users = pq.ParquetFile(t_path).metadata.num_rows

    def timed_receval(run: str) -> None:
        start, cpu = time.perf_counter(), tree_cpu(os.getpid())
        r = receval.evaluate(t_path, p_path, METRICS, engine="spark",
                             spark_options={"per_user": False}, silence=["ties"])
        seconds, cpu = time.perf_counter() - start, tree_cpu(os.getpid()) - cpu
        first = [t["seconds"] for t in r.tasks if t["first_in_process"]]
        later = [t["seconds"] for t in r.tasks if not t["first_in_process"]]
        out.append({"tool": "receval-spark", "master": master, "run": run,
                    "seconds": seconds, "users": r.counts["users"]["evaluated"],
                    "partitions": len(r.tasks), "first_task_s": max(first, default=None),
                    "later_task_s_median": float(np.median(later)) if later else None,
                    "nDCG@10": r.summary["nDCG@10"], "truth_rows": users,
                    "shuffles": getattr(r, "shuffles", None), "cpu_s": cpu})
        print(json.dumps(out[-1]), flush=True)

    def timed_bare() -> None:
        for options in ({}, {"to_python": True}, {"flags": True}):
            # flags: the rows packed the pre-stop-21 way (a side-flag list); the floor is
            # the cheaper packing
            out.append(bare_shuffle(spark, t_path, p_path, master, **options))
            print(json.dumps(out[-1]), flush=True)

    timed_receval("first")
    # rounds of receval and the bare shuffles, alternating, and which goes first alternating
    # too: each round's JVM is as warm for one as for the other (a single pass timed receval
    # on a colder JVM than the shuffles that followed it); the summary takes the medians
    for n in range(rounds):
        if n % 2:
            timed_bare()
            timed_receval("warm")
        else:
            timed_receval("warm")
            timed_bare()
    if buckets:
        out.append(bucketed(spark, t_path, p_path, master, buckets))
        print(json.dumps(out[-1]), flush=True)
    if mllib:
        from pyspark.ml.evaluation import RankingEvaluator

        start, cpu = time.perf_counter(), tree_cpu(os.getpid())
        truth = spark.read.parquet(t_path)
        preds = spark.read.parquet(p_path)
        ranked = preds.groupBy("user").agg(F.sort_array(F.collect_list(F.struct(
            (-F.col("score")).alias("s"), F.col("item").cast("double").alias("i")))).alias("r"))
        labels = truth.groupBy("user").agg(F.collect_list(F.col("item").cast("double"))
                                           .alias("label"))
        data = ranked.select("user", F.col("r.i").alias("prediction")).join(labels, "user")
        data = data.cache()
        data.count()
        convert = time.perf_counter() - start
        values = {}
        start = time.perf_counter()
        for name, k in (("precisionAtK", 10), ("recallAtK", 10), ("meanAveragePrecision", 10),
                        ("ndcgAtK", 10)):
            ev = RankingEvaluator(metricName=name, k=k, predictionCol="prediction",
                                  labelCol="label")
            values[name] = ev.evaluate(data)
        compute = time.perf_counter() - start
        out.append({"tool": "spark-ml-RankingEvaluator", "master": master, "run": "once",
                    "seconds": convert + compute, "convert_s": convert, "compute_s": compute,
                    "ndcgAtK": values["ndcgAtK"], "cpu_s": tree_cpu(os.getpid()) - cpu})
        print(json.dumps(out[-1]), flush=True)
        data.unpersist()
    spark.stop()
    shutil.rmtree(warehouse, ignore_errors=True)
    return out


def grouped_by_user(truth: Any, preds: Any, flags: bool = False) -> Any:
    """Both sides' rows grouped by user as the engine groups them (one ``collect_list`` per
    side and column: the truth's items, the predictions' items and scores): the bare shuffle
    every Spark evaluator pays. ``flags``: as the engine grouped them before `22d997e` (one
    list of side flags, one of items, one of scores)."""
    from pyspark.sql import functions as F

    union = truth.select(F.lit(0).cast("byte").alias("s"), F.col("user").alias("u"),
                         F.col("item").alias("i"), F.lit(None).cast("double").alias("pv")
                         ).unionByName(preds.select(F.lit(1).cast("byte").alias("s"),
                                                    F.col("user").alias("u"),
                                                    F.col("item").alias("i"),
                                                    F.col("score").alias("pv")))
    if flags:
        return union.groupBy("u").agg(F.collect_list("s").alias("l_s"),
                                         F.collect_list("i").alias("l_i"),
                                         F.collect_list("pv").alias("l_pv"))
    side = F.col("s")
    return union.groupBy("u").agg(F.collect_list(F.when(side == 0, F.col("i"))).alias("l0_i"),
                                     F.collect_list(F.when(side == 1, F.col("i"))).alias("l1_i"),
                                     F.collect_list("pv").alias("l_pv"))


def bare_shuffle(spark: Any, t_path: str, p_path: str, master: str,
                 to_python: bool = False, flags: bool = False) -> dict:
    """The floor: the engine's shuffle by user of the same columns (user, item, score; one
    ``collect_list`` per side and column, as ``receval.spark.job._run`` packs them) with
    no evaluation, written to the ``noop`` sink, under the partitions receval picked.
    ``to_python``: the grouped rows sent to Python workers that only count them (a
    ``mapInArrow`` doing nothing, in the engine's Arrow batches): the floor of any evaluation
    in Python. ``flags``: packed with a list of side flags (:func:`grouped_by_user`)."""
    import pyarrow as pa

    try:  # the engine split by job (receval.spark.job, .settings)
        from receval.spark.job import ARROW_BATCH_USERS, _arrow_batches, _shuffle_partitions
        from receval.spark.settings import auto_partitions
    except ImportError:  # older receval: one module
        from receval.spark.engine import _shuffle_partitions, auto_partitions

        try:  # receval at or after `22d997e`: the engine's Arrow batches
            from receval.spark.engine import ARROW_BATCH_USERS, _arrow_batches
        except ImportError:
            ARROW_BATCH_USERS, _arrow_batches = 0, None

    def count(batches: Any) -> Any:
        yield pa.RecordBatch.from_arrays([pa.array([sum(b.num_rows for b in batches)])], ["n"])

    truth, preds = spark.read.parquet(t_path), spark.read.parquet(p_path)
    parts = auto_partitions(pq.ParquetFile(t_path).metadata.num_rows
                            + pq.ParquetFile(p_path).metadata.num_rows,
                            spark.sparkContext.defaultParallelism)  # not timed: no job
    start, cpu = time.perf_counter(), tree_cpu(os.getpid())
    grouped = grouped_by_user(truth, preds, flags)
    with _shuffle_partitions(spark, parts):
        if not to_python:
            grouped.write.format("noop").mode("overwrite").save()
        elif _arrow_batches is None:
            grouped.mapInArrow(count, "n long").collect()
        else:
            with _arrow_batches(spark, ARROW_BATCH_USERS):
                grouped.mapInArrow(count, "n long").collect()
    seconds, cpu = time.perf_counter() - start, tree_cpu(os.getpid()) - cpu
    try:  # the Exchange nodes of its plan (receval at or after `d52aea1`)
        try:
            from receval.spark.job import count_shuffles
        except ImportError:  # before the engine was split by job
            from receval.spark.engine import count_shuffles

        with _shuffle_partitions(spark, parts):
            shuffles: int | None = count_shuffles(grouped)
    except ImportError:
        shuffles = None
    tool = ("spark-bare-to-python" if to_python
            else "spark-bare-shuffle-flags" if flags else "spark-bare-shuffle")
    return {"tool": tool,
            "master": master, "run": "once",
            "seconds": seconds, "partitions": parts, "shuffles": shuffles, "cpu_s": cpu}


def bucketed(spark: Any, t_path: str, p_path: str, master: str, buckets: int) -> dict:
    """receval on both sides written bucketed by user into ``buckets`` buckets (tables in a
    temporary folder; the write is not timed): no shuffle in the evaluation job."""
    import receval

    folder = tempfile.mkdtemp(prefix="bench_spark_buckets_")
    for name, path in (("truth_b", t_path), ("preds_b", p_path)):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        (spark.read.parquet(path).write.option("path", f"{folder}/{name}")
         .bucketBy(buckets, "user").saveAsTable(name))
    truth, preds = spark.table("truth_b"), spark.table("preds_b")
    receval.evaluate(truth, preds, METRICS, engine="spark", spark_options={"per_user": False},
                     silence=["ties"])  # the bucketed scans' first run
    start = time.perf_counter()
    r = receval.evaluate(truth, preds, METRICS, engine="spark",
                         spark_options={"per_user": False}, silence=["ties"])
    seconds = time.perf_counter() - start
    for name in ("truth_b", "preds_b"):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    shutil.rmtree(folder, ignore_errors=True)  # the bucketed copies of the inputs
    return {"tool": "receval-spark-bucketed", "master": master, "run": "warm",
            "seconds": seconds, "partitions": len(r.tasks),
            "shuffles": getattr(r, "shuffles", None), "nDCG@10": r.summary["nDCG@10"]}


def run_local(t_path: Path, p_path: Path) -> dict:
    import receval

    start = time.perf_counter()
    r = receval.evaluate(t_path, p_path, METRICS, silence=["ties"])
    return {"tool": "receval-local", "master": "-", "run": "once",
            "seconds": time.perf_counter() - start, "users": r.counts["users"]["evaluated"],
            "nDCG@10": r.summary["nDCG@10"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, nargs="+", default=[100_000])
    ap.add_argument("--preds", type=int, default=100)
    ap.add_argument("--relevant", type=int, default=20)
    ap.add_argument("--masters", nargs="+", default=["local[2]", "local[1]"])
    ap.add_argument("--memory", default="6g", help="spark.driver.memory (local mode)")
    ap.add_argument("--no-mllib", action="store_true")
    ap.add_argument("--buckets", type=int, default=0,
                    help="also receval on both sides bucketed by user into this many buckets")
    ap.add_argument("--data", default=None, help="folder for the Parquet files (kept)")
    ap.add_argument("--out", default=None, help="write every measure to this JSON file")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds of receval (warm) and the bare shuffles, alternating; "
                         "the summary takes the medians")
    ap.add_argument("--child", nargs=4, metavar=("MASTER", "TRUTH", "PREDS", "MLLIB"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        master, t_path, p_path, mllib = args.child
        run_spark(master, t_path, p_path, mllib == "1", args.memory, args.buckets, args.rounds)
        return
    folder = Path(args.data or tempfile.mkdtemp(prefix="bench_spark_"))
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for users in args.users:
        t_path, p_path = write_data(folder, users, args.preds, args.relevant)
        for i, master in enumerate(args.masters):
            child = subprocess.run(
                [sys.executable, __file__, "--memory", args.memory, "--buckets",
                 str(args.buckets), "--rounds", str(args.rounds), "--child", master,
                 str(t_path), str(p_path), "0" if args.no_mllib or i else "1"],
                capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
            found = [json.loads(line) for line in child.stdout.splitlines()
                     if line.startswith("{")]
            if child.returncode:
                print(child.stderr[-3000:], file=sys.stderr)
            for row in found:
                row["size"] = users
            rows += found
            for row in found:
                print(json.dumps(row), flush=True)
        local = run_local(t_path, p_path)
        local["size"] = users
        rows.append(local)
        print(json.dumps(local), flush=True)
    summary(rows)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


def summary(rows: list[dict[str, Any]]) -> None:
    print(f"\n{'users':>9} {'tool':<28} {'master':<24} {'run':<6} {'seconds':>8} "
          f"{'us/user':>8}")
    for r in rows:
        print(f"{r['size']:>9} {r['tool']:<28} {r['master']:<24} {r['run']:<6} "
              f"{r['seconds']:>8.1f} {1e6 * r['seconds'] / r['size']:>8.1f}")
    # the targets: RankingEvaluator / receval >= 2; receval / bare shuffle <= 1.5
    print(f"\n{'users':>9} {'master':<24} {'RankingEvaluator/receval':>25} "
          f"{'receval/bare shuffle':>21} {'RE/bare':>8} {'RE/bare+to-python':>18}")
    def seconds(size: int, master: str, tool: str, run: str) -> float | None:
        found = [r["seconds"] for r in rows if r["size"] == size and r["master"] == master
                 and r["tool"] == tool and r["run"] == run]
        return float(np.median(found)) if found else None  # rounds: the median

    for size in sorted({r["size"] for r in rows}):
        for master in dict.fromkeys(r["master"] for r in rows if r["master"] != "-"):
            warm = seconds(size, master, "receval-spark", "warm")
            mllib = seconds(size, master, "spark-ml-RankingEvaluator", "once")
            packed = [seconds(size, master, tool, "once")
                      for tool in ("spark-bare-shuffle", "spark-bare-shuffle-flags")]
            bare = min((b for b in packed if b is not None), default=None)  # the cheaper
            sent = seconds(size, master, "spark-bare-to-python", "once")
            if warm is None:
                continue

            def ratio(a: float | None, b: float | None, width: int) -> str:
                return f"{'-' if a is None or b is None else f'{a / b:.2f}x':>{width}}"

            print(f"{size:>9} {master:<24} {ratio(mllib, warm, 25)} {ratio(warm, bare, 21)} "
                  f"{ratio(mllib, bare, 8)} {ratio(mllib, sent, 18)}")


if __name__ == "__main__":
    main()
