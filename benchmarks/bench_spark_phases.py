"""Where receval-on-Spark's time goes, in CPU seconds (the JVM and its Python workers, read
from /proc: on a loaded machine wall times vary 2x between repeats, CPU seconds far less).

On the Parquet files of ``bench_spark.py`` (``--data``), in one ``local[2]`` session, each
measure repeated (``--repeat``) after a warm-up:

* ``bare``: the engine's grouping by user (user, item, score; one ``collect_list`` per side and
  column) to Spark's ``noop`` sink;
* ``to-python``: the same grouped rows fed to a ``mapInArrow`` that only counts them (the
  JVM -> Arrow -> Python transfer);
* ``receval p=N``: ``receval.evaluate(..., engine="spark")`` (54 metrics, ``per_user`` off) with
  N shuffle partitions (``--partitions``).

    python benchmarks/bench_spark_phases.py --users 200000 --partitions 24 12 6 2 --data /tmp/bspark

Linux only (/proc).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_spark import METRICS, grouped_by_user, tree_cpu, write_data


def measure(name: str, fn: Callable[[], Any]) -> None:
    cpu, wall = tree_cpu(os.getpid()), time.perf_counter()
    fn()
    wall, cpu = time.perf_counter() - wall, tree_cpu(os.getpid()) - cpu
    print(f"{name:<16} wall {wall:7.2f} s   cpu {cpu:7.2f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=50_000)
    ap.add_argument("--partitions", type=int, nargs="+", default=[24, 6])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--data", default="/tmp/bspark")
    ap.add_argument("--batch", type=int, default=None,
                    help="users per Arrow batch of the no-op consumers (default: the engine's)")
    ap.add_argument("--memory", default="8g", help="spark.driver.memory")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import pyarrow as pa
    from pyspark.sql import SparkSession

    import receval
    from receval.spark.job import ARROW_BATCH_USERS, _arrow_batches, _shuffle_partitions
    from receval.spark.packing import _columns_sides

    folder = Path(args.data)
    folder.mkdir(parents=True, exist_ok=True)
    t_path, p_path = (str(p) for p in write_data(folder, args.users, 100, 20))
    spark = (SparkSession.builder.master("local[2]").appName("bench-spark-phases")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", args.memory)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    truth, preds = spark.read.parquet(t_path), spark.read.parquet(p_path)
    grouped = grouped_by_user(truth, preds)

    def count(batches: Iterator[Any]) -> Iterator[Any]:
        yield pa.RecordBatch.from_arrays([pa.array([sum(b.num_rows for b in batches)])], ["n"])

    def unpack(batches: Iterator[Any]) -> Iterator[Any]:
        table = pa.Table.from_batches([b for b in batches if b.num_rows])
        n = _columns_sides(table)[1] if table.num_rows else 0
        yield pa.RecordBatch.from_arrays([pa.array([n])], ["n"])

    def evaluate(parts: int) -> Any:
        r = receval.evaluate(t_path, p_path, METRICS, engine="spark", silence=["ties"],
                             spark_options={"per_user": False, "partitions": parts})
        # the partitions' own Python work: unpacking the lists, then the local plan
        print(f"{'':<16} {len(r.tasks)} partitions: unpack "
              f"{sum(t.get('unpack_seconds', 0) for t in r.tasks):6.2f} s, local plan "
              f"{sum(t['seconds'] for t in r.tasks):6.2f} s (summed over the partitions)")
        return r

    evaluate(args.partitions[0])  # warm-up: Python workers, kernels, the JVM's JIT
    for _ in range(args.repeat):
        with _shuffle_partitions(spark, args.partitions[0]):
            measure("bare", lambda: grouped.write.format("noop").mode("overwrite").save())
            with _arrow_batches(spark, args.batch or ARROW_BATCH_USERS):
                measure("to-python", lambda: grouped.mapInArrow(count, "n long").collect())
                measure("+ unpack", lambda: grouped.mapInArrow(unpack, "n long").collect())
        for parts in args.partitions:
            measure(f"receval p={parts}", lambda parts=parts: evaluate(parts))
    spark.stop()


if __name__ == "__main__":
    main()
