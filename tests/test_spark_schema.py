"""The schema of a local Parquet input, from its footers (issue 24): handed to Spark's reader
only where Spark's own inference gives the same schema (the oracle here is Spark reading the
same files), and left to Spark for every other type, mixed files and partitioned folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import receval
from receval.spark.footers import Footers, read_footers, spark_schema

pytest.importorskip("pyspark", reason="the Spark engine needs pyspark (receval[spark])")

PLAIN = pa.table({"i8": pa.array([1, None], pa.int8()), "i16": pa.array([2, 3], pa.int16()),
                  "i32": pa.array([4, 5], pa.int32()), "i64": pa.array([6, None], pa.int64()),
                  "f32": pa.array([0.5, 1.5], pa.float32()), "f64": [0.25, None],
                  "text": ["a", None], "flag": [True, False]})


def test_plain_columns_get_the_schema_spark_infers(spark: Any, tmp_path: Path) -> None:
    pq.write_table(PLAIN, tmp_path / "plain.parquet")
    stated = spark_schema(read_footers(tmp_path / "plain.parquet"))
    assert stated is not None
    assert stated == spark.read.parquet(str(tmp_path / "plain.parquet")).schema


def test_files_spark_wrote_get_the_schema_spark_infers(spark: Any, tmp_path: Path) -> None:
    frame = spark.createDataFrame(pd.DataFrame({"user": [1, 2, 3], "item": ["a", "b", "c"],
                                                "score": [0.5, None, 0.25]}))
    frame.repartition(2).write.parquet(str(tmp_path / "written"))  # part files + _SUCCESS
    stated = spark_schema(read_footers(tmp_path / "written"))
    assert stated is not None
    assert stated == spark.read.parquet(str(tmp_path / "written")).schema


@pytest.mark.parametrize("column", [
    pa.array([1], pa.uint8()), pa.array([1], pa.timestamp("us")), pa.array([b"x"]),
    pa.array([1], pa.decimal128(5, 2)), pa.array([[1]]), pa.array(["a"]).dictionary_encode(),
    pa.array([1], pa.date32())])
def test_other_types_are_left_to_spark(tmp_path: Path, column: pa.Array) -> None:
    pq.write_table(pa.table({"user": [1], "x": column}), tmp_path / "other.parquet")
    found = read_footers(tmp_path / "other.parquet")
    assert found is not None and found.schema is not None  # stated, but not plain
    assert spark_schema(found) is None


def test_mixed_files_and_partitioned_folders_are_left_to_spark(tmp_path: Path) -> None:
    (tmp_path / "mixed").mkdir()
    pq.write_table(pa.table({"user": [1], "item": [2]}), tmp_path / "mixed" / "a.parquet")
    pq.write_table(pa.table({"user": [1], "item": ["2"]}), tmp_path / "mixed" / "b.parquet")
    assert read_footers(tmp_path / "mixed").schema is None
    (tmp_path / "parted" / "day=1").mkdir(parents=True)
    pq.write_table(pa.table({"user": [1], "item": [2]}),
                   tmp_path / "parted" / "day=1" / "a.parquet")
    assert read_footers(tmp_path / "parted").schema is None  # Spark adds the column ``day``
    (tmp_path / "same").mkdir()
    for name in ("a", "b"):
        pq.write_table(pa.table({"user": [1], "item": [2]}), tmp_path / "same" / f"{name}.parquet")
    assert spark_schema(read_footers(tmp_path / "same")) is not None


def test_names_equal_but_for_case_are_left_to_spark(tmp_path: Path) -> None:
    pq.write_table(pa.table({"user": [1], "User": [2]}), tmp_path / "case.parquet")
    assert spark_schema(read_footers(tmp_path / "case.parquet")) is None


def test_the_reader_takes_the_stated_schema(spark: Any, tmp_path: Path) -> None:
    """``_as_frame`` hands the footers' schema to Spark: a schema the file does not have (a
    column renamed) shows that it is not inferred (Spark reads the missing column as nulls)."""
    from receval.spark.schema import _as_frame

    pq.write_table(pa.table({"user": [1, 2], "item": [3, 4]}), tmp_path / "t.parquet")
    found = read_footers(tmp_path / "t.parquet")
    assert found is not None and found.schema is not None
    renamed = Footers(found.rows, found.no_nulls,
                      pa.schema([("user", pa.int64()), ("other", pa.int64())]))
    frame = _as_frame(str(tmp_path / "t.parquet"), spark, "truth", renamed)
    assert frame.columns == ["user", "other"]
    assert frame.collect()[0]["other"] is None
    assert _as_frame(str(tmp_path / "t.parquet"), spark, "truth", found).columns == [
        "user", "item"]


def test_the_numbers_are_the_local_engines(spark: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    users = 60
    preds = pa.table({"user": pa.array(np.repeat(np.arange(users), 5), pa.int32()),
                      "item": pa.array(rng.integers(0, 40, 5 * users), pa.int16()),
                      "score": pa.array(rng.random(5 * users), pa.float32())})
    preds = pa.Table.from_pandas(preds.to_pandas().drop_duplicates(["user", "item"]),
                                 preserve_index=False)
    truth = pa.table({"user": pa.array(np.repeat(np.arange(users), 3), pa.int32()),
                      "item": pa.array(rng.integers(0, 40, 3 * users), pa.int16())})
    truth = pa.Table.from_pandas(truth.to_pandas().drop_duplicates(), preserve_index=False)
    pq.write_table(truth, tmp_path / "truth.parquet")
    pq.write_table(preds, tmp_path / "preds.parquet")
    metrics = ["P@3", "nDCG@5", "AP@5", "MRR"]
    local = receval.evaluate(truth, preds, metrics)
    on_spark = receval.evaluate(str(tmp_path / "truth.parquet"), str(tmp_path / "preds.parquet"),
                                metrics, engine="spark", spark_options={"per_user": False})
    assert on_spark.summary == local.summary
