"""The Spark engine: ``receval.evaluate(..., engine="spark")`` on pyspark DataFrames.

Both sides go through one shuffle by user (none where Spark knows both are partitioned by
user alike: tables bucketed by it into as many buckets; ``SparkResult.shuffles``): the columns
read (user, item, rating or score, and an order column) are unioned and grouped by the user
id (one ``collect_list`` per side and column: Spark's partial aggregation packs each user's
rows before the exchange; local Parquet inputs are first read from their footers,
:mod:`receval.spark.footers`), and
each partition runs the ordinary local plan (:func:`receval.evaluation.evaluate_partition`,
numba kernels included) in ``mapInArrow``. A partition emits its per-user rows, its exact
sums (:class:`receval.accumulate.Accumulator`, JSON) and its integer counts; the driver merges
the sums exactly and adds the counts (every count counts users or rows, and the partitions
hold disjoint users, so each count is additive), then finalizes and runs the common-mistake
warnings once. Summaries, per-user values and counts are the local engine's, bit for bit.

Row order: Spark does not keep it through a shuffle, so the rows' order is taken *before*
the shuffle (``monotonically_increasing_id``, the order ``DataFrame.toPandas()`` returns) or
from the column ``spark_options={"order_by": NAME}``, and each partition sorts its rows by it:
``ties="stable"`` and ``duplicates="first"`` follow that order.

This module imports pyspark only when it runs; :mod:`receval.evaluation` routes to
:func:`evaluate_spark` and hands it the per-partition function (this layer is below it).
"""

from __future__ import annotations

from receval.spark.driver import evaluate_spark
from receval.spark.result import SparkResult
from receval.spark.session import check_java, get_session
from receval.spark.settings import SPARK_OPTIONS

__all__ = ["SPARK_OPTIONS", "SparkResult", "check_java", "evaluate_spark", "get_session"]
