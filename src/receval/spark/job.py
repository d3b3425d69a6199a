"""The Spark engine's one job: each user's rows packed and shuffled to the user's partition,
:class:`receval.spark.task._Task` run on each in ``mapInArrow``, the partitions' metas
collected and their per-user values persisted; the settings the job runs under (shuffle
partitions, users per Arrow batch) and the shuffles its plan holds."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from receval.spark.schema import _is_frame
from receval.spark.session import session_conf
from receval.spark.task import _Task


def _run(
    spark: Any,
    union: Any,
    task: _Task,
    out_schema: Any,
    metric_names: list[str],
    sopts: Mapping[str, Any],
    mode: str,
) -> tuple[list[Any], Any, Any, int]:
    """The one Spark job: the rows to the partitions by user (``mode``), the local plan on
    each; the partitions' metas, the per-user frame (persisted) when asked, and the shuffles
    in the job's plan (:func:`count_shuffles`)."""
    from pyspark.sql import functions as F

    parts = sopts["partitions"]
    names = [c for c in union.columns if c != "u"]
    if mode == "struct":
        # one row per user before the shuffle (Spark's partial aggregation packs a user's
        # rows where they are together): far fewer rows through the exchange
        shuffled = union.groupBy("u").agg(F.collect_list(F.struct(*names)).alias("r"))
    else:
        # one list per side and column: ``l0_i`` the truth's items, ``l1_i`` the predictions',
        # ``l2_i`` the training rows' (a side flag list would cost a list element per row
        # through the aggregation and the Arrow transfer); collect_list skips nulls (``when``
        # is null on the other sides): the ids are collected as they are (``g`` counts the
        # nulls that would shift them: then the struct plan is run), the rating (maybe null on
        # truth rows) wrapped in one-item arrays
        side = F.col("s")
        shifting = F.col("i").isNull()
        flags = (0, 1, 2) if task.history else (0, 1)
        aggs = [F.collect_list(F.when(side == f, F.col("i"))).alias(f"l{f}_i") for f in flags]
        if "tv" in names:
            aggs.append(F.collect_list(F.when(side == 0, F.array("tv"))).alias("a_tv"))
        if "pv" in names:
            aggs.append(F.collect_list("pv").alias("l_pv"))
            shifting = shifting | ((side == 1) & F.col("pv").isNull())
        if "o" in names:
            aggs += [F.collect_list(F.when(side == f, F.col("o"))).alias(f"l{f}_o") for f in flags]
            shifting = shifting | F.col("o").isNull()
        if not task.null_free:  # the footers do not say that no packed column has a null
            aggs.append(F.count_if(shifting).alias("g"))
        shuffled = union.groupBy("u").agg(*aggs)
    mapped = shuffled.mapInArrow(task, out_schema)
    cached = None
    with _shuffle_partitions(spark, parts), _arrow_batches(spark, ARROW_BATCH_USERS):
        shuffles = count_shuffles(mapped)
        if sopts["per_user"]:
            from pyspark import StorageLevel

            cached = mapped.persist(StorageLevel.MEMORY_AND_DISK)
            metas = cached.filter(F.col("k") == 1).select("meta").collect()
            per_user = cached.filter(F.col("k") == 0).select(
                F.col("u").alias("user"),
                *[F.col(f"m{j}").alias(name) for j, name in enumerate(metric_names)],
            )
        else:
            metas = mapped.select("meta").collect()
            per_user = None
    return metas, per_user, cached, shuffles


def count_shuffles(frame: Any) -> int:
    """The ``Exchange`` nodes (shuffles) of ``frame``'s physical plan (as planned, before it
    runs). Rows grouped by user need one, unless Spark knows that each input is partitioned
    by the user already (both sides bucketed by it into as many buckets).

    Example:
        >>> count_shuffles(None)  # not a Spark frame: no plan
        0
    """
    if not _is_frame(frame):
        return 0
    plan = frame._jdf.queryExecution().executedPlan().toString()
    # "Exchange hashpartitioning(...)", "Exchange SinglePartition", ...; not a reused one
    return sum(1 for line in plan.splitlines() if line.lstrip(" :+-").startswith("Exchange "))


@contextlib.contextmanager
def _shuffle_partitions(spark: Any, parts: int | None) -> Iterator[None]:
    """``parts`` shuffle partitions, not coalesced, while the query is planned and run (the
    ``partitions`` option; the session's settings are restored after)."""
    if parts is None:
        yield
        return
    with session_conf(
        spark,
        {
            "spark.sql.shuffle.partitions": str(parts),
            "spark.sql.adaptive.coalescePartitions.enabled": "false",
        },
    ):
        yield


#: users (rows of packed lists) per Arrow batch sent to the partitions' Python workers
#: (``spark.sql.execution.arrow.maxRecordsPerBatch`` while the evaluation job runs): at 1M
#: users x 120 rows, 2,000 a batch took 5 to 8 CPU seconds less than 200,000 a batch (the
#: JVM writes each batch's lists into buffers that stay in cache; issue 24)
ARROW_BATCH_USERS = 2_000


@contextlib.contextmanager
def _arrow_batches(spark: Any, users: int) -> Iterator[None]:
    """``users`` rows per Arrow batch while the query runs (the session's setting restored
    after)."""
    with session_conf(spark, {"spark.sql.execution.arrow.maxRecordsPerBatch": str(users)}):
        yield
