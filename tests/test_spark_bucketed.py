"""No shuffle for inputs that Spark knows are partitioned by user: both sides written bucketed
by the user column into as many buckets (``bucketBy(n, "user").saveAsTable``) are grouped by
user where they are read (the evaluation job's plan has no ``Exchange``), and the numbers are
the local engine's, bit for bit, as on the shuffled path.

The run's shared local[2] SparkSession (tests/conftest.py); small random inputs with users on
one side only and no tied scores (a bucketed scan reads the rows in another order than
``toPandas``, and tied scores are ordered by the rows' order under ``ties="stable"``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval

pytest.importorskip("pyspark", reason="the Spark engine needs pyspark (receval[spark])")
pytestmark = pytest.mark.slow

METRICS = ["P@3", "R@3", "nDCG@3", "MRR", "AP@3"]


TABLES = ("truth_b4", "preds_b4", "truth_b3", "preds_b5")


@pytest.fixture(scope="module")
def spark(spark: Any) -> Iterator[Any]:
    """The run's Spark session (its warehouse in a pytest temporary folder, not
    ./spark-warehouse); the module's tables dropped after it (their files in tmp_path)."""
    yield spark
    for name in TABLES:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _frames(seed: int = 7, n_users: int = 40) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    t = pd.DataFrame({"user": rng.integers(0, n_users, 4 * n_users),
                      "item": rng.integers(0, 20, 4 * n_users)}).drop_duplicates()
    p = pd.DataFrame({"user": rng.integers(3, n_users + 4, 8 * n_users),
                      "item": rng.integers(0, 24, 8 * n_users)}).drop_duplicates()
    p["score"] = rng.random(len(p))
    return t.reset_index(drop=True), p.reset_index(drop=True)


def _bucketed(spark: Any, frame: pd.DataFrame, name: str, buckets: int, folder: Path) -> Any:
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    (spark.createDataFrame(frame).write.option("path", str(folder / name))
     .bucketBy(buckets, "user").saveAsTable(name))
    return spark.table(name)


def _same(ref: Any, got: Any) -> None:
    assert got.summary == ref.summary  # bit for bit
    assert got.counts == ref.counts
    pd.testing.assert_frame_equal(got.per_user_pandas(), ref.per_user, check_exact=True)


def test_bucketed_inputs_are_not_shuffled(spark: Any, tmp_path: Path) -> None:
    t, p = _frames()
    st = _bucketed(spark, t, "truth_b4", 4, tmp_path)
    sp = _bucketed(spark, p, "preds_b4", 4, tmp_path)
    # the local engine on the rows in the order Spark reads them (the "stable" tie order)
    ref = receval.evaluate(st.toPandas(), sp.toPandas(), METRICS)
    got = receval.evaluate(st, sp, METRICS, engine="spark")
    assert got.shuffles == 0
    _same(ref, got)
    # the same rows not bucketed: one shuffle by user, the same numbers
    plain = receval.evaluate(spark.createDataFrame(st.toPandas()),
                             spark.createDataFrame(sp.toPandas()), METRICS, engine="spark")
    assert plain.shuffles == 1
    _same(ref, plain)
    got.unpersist()
    plain.unpersist()


def test_buckets_that_differ_are_shuffled(spark: Any, tmp_path: Path) -> None:
    t, p = _frames(seed=8)
    st = _bucketed(spark, t, "truth_b3", 3, tmp_path)
    sp = _bucketed(spark, p, "preds_b5", 5, tmp_path)
    ref = receval.evaluate(st.toPandas(), sp.toPandas(), METRICS)
    got = receval.evaluate(st, sp, METRICS, engine="spark", spark_options={"per_user": False})
    assert got.shuffles >= 1
    assert got.summary == ref.summary
    assert got.counts == ref.counts
