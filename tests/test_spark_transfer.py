"""How the packed rows reach the partitions' Python workers (issue 24): one list per side and
column, in Arrow batches of :data:`receval.spark.job.ARROW_BATCH_USERS` users (the
session's own setting restored after the call), each partition's local plan on the task's
cores; the numbers the local engine's, bit for bit, with and without training rows and the
order column.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import receval
from receval.spark.session import session_conf

pytest.importorskip("pyspark", reason="the Spark engine needs pyspark (receval[spark])")

METRICS = ["P@2", "nDCG@3", "AP@3", "MRR", "R@5"]
KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"


def test_columns_sides_unpacks_each_side_in_row_order() -> None:
    from receval.spark.packing import _columns_sides

    packed = pa.table({"u": [5, 2, 9],
                       "l0_i": [[10, 11], [], [12]], "l1_i": [[20], [21, 22], []],
                       "l2_i": [[], [30], []],
                       "l0_o": [[0, 3], [], [7]], "l1_o": [[1], [4, 5], []],
                       "l2_o": [[], [6], []],
                       "a_tv": [[[1.0], [None]], [], [[2.0]]],
                       "l_pv": [[0.5], [0.25, 0.75], []]})
    sides, n = _columns_sides(packed)
    assert n == 7
    assert sides[0].to_pydict() == {"u": [5, 5, 9], "i": [10, 11, 12], "o": [0, 3, 7],
                                    "tv": [1.0, None, 2.0]}
    assert sides[1].to_pydict() == {"u": [5, 2, 2], "i": [20, 21, 22], "o": [1, 4, 5],
                                    "pv": [0.5, 0.25, 0.75]}
    assert sides[2].to_pydict() == {"u": [2], "i": [30], "o": [6]}


def _frames(users: int, seed: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    preds = pd.DataFrame({"user": np.repeat(np.arange(users), 3),
                          "item": rng.integers(0, 50, 3 * users),
                          "score": rng.random(3 * users)})
    preds = preds.drop_duplicates(["user", "item"]).reset_index(drop=True)
    truth = pd.DataFrame({"user": rng.integers(0, users + 5, 2 * users),
                          "item": rng.integers(0, 50, 2 * users)})
    return truth.drop_duplicates().reset_index(drop=True), preds


@pytest.mark.slow
def test_batches_of_the_engine_size_and_the_session_setting_restored(spark: Any) -> None:
    from receval.spark.job import ARROW_BATCH_USERS
    from receval.spark.result import SparkResult

    truth, preds = _frames(2 * ARROW_BATCH_USERS + 500)
    # one batch per partition, were it in force (the shared session's own value put back after)
    with session_conf(spark, {KEY: "100000"}):
        got = receval.evaluate(spark.createDataFrame(truth), spark.createDataFrame(preds),
                               METRICS, engine="spark",
                               spark_options={"partitions": 1, "per_user": False})
        assert spark.conf.get(KEY) == "100000"
    assert isinstance(got, SparkResult)
    users = truth["user"].nunique() + len(set(preds["user"]) - set(truth["user"]))
    assert [t["batches"] for t in got.tasks] == [-(-users // ARROW_BATCH_USERS)]
    assert [t["threads"] for t in got.tasks] == [1]  # spark.task.cpus
    ref = receval.evaluate(truth, preds, METRICS)
    assert got.summary == ref.summary
    assert got.counts == ref.counts


@pytest.mark.slow
def test_order_column_and_training_rows_per_side(spark: Any) -> None:
    """``duplicates="first"`` ships the order column (``l0_o``, ``l1_o``, ``l2_o``); training
    rows excluded and used by calibration travel as their own side's lists."""
    from receval.spark.result import SparkResult

    truth, preds = _frames(300, seed=9)
    preds = pd.concat([preds, preds.iloc[::7]], ignore_index=True)  # repeated (user, item)
    train = pd.DataFrame({"user": np.repeat(np.arange(0, 300, 3), 2),
                          "item": np.tile([1, 2], 100)})
    kwargs: dict[str, Any] = {
        "duplicates": "first", "train": train, "exclude_train": True,
        "item_features": {i: ["a", "b", "c"][i % 3] for i in range(50)},
        "silence": ["ties", "undefined", "train-items", "train-overlap"]}
    metrics = [*METRICS, "calibration@3"]  # reads each user's training items
    ref = receval.evaluate(truth, preds, metrics, **kwargs)
    got = receval.evaluate(spark.createDataFrame(truth), spark.createDataFrame(preds), metrics,
                           engine="spark", spark_options={"partitions": 3},
                           **{**kwargs, "train": spark.createDataFrame(train)})
    assert isinstance(got, SparkResult)
    assert got.summary == ref.summary
    assert got.counts == ref.counts
    left = ref.per_user.sort_values("user", kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(got.per_user_pandas(), left, check_exact=True)
    got.unpersist()


def test_footers_rows_and_columns_without_nulls(tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    from receval.spark.footers import read_footers

    folder = tmp_path / "preds"
    folder.mkdir()
    pq.write_table(pa.table({"user": [1, 2], "item": [3, 4], "score": [0.5, 0.25]}),
                   folder / "part-0.parquet", row_group_size=1)
    pq.write_table(pa.table({"user": [5], "item": [None], "score": [0.5]},
                            schema=pa.schema([("user", pa.int64()), ("item", pa.int64()),
                                              ("score", pa.float64())])),
                   folder / "part-1.snappy.parquet")
    (folder / "_SUCCESS").write_text("")  # left out, as Spark leaves it out
    found = read_footers(folder)
    assert found is not None
    assert found.rows == 3
    assert found.no_nulls == {"user", "score"}  # one file's null item
    # no statistics written: unknown, so the shuffle checks
    pq.write_table(pa.table({"user": [1], "item": [2]}), tmp_path / "bare.parquet",
                   write_statistics=False)
    bare = read_footers(tmp_path / "bare.parquet")
    assert bare is not None and bare.rows == 1 and bare.no_nulls == frozenset()
    # a file Spark would read that is no Parquet: unknown
    (folder / "notes.txt").write_text("x")
    assert read_footers(folder) is None
    assert read_footers(tmp_path / "missing.parquet") is None


@pytest.mark.slow
def test_parquet_paths_without_nulls_skip_the_check_and_with_nulls_keep_it(
        spark: Any, tmp_path: Any) -> None:
    """Footers that state no null: the shuffle counts none (``null_check`` False), the numbers
    the local engine's; a null item in the truth file: checked, and the local engine's error
    (on the partition's rows)."""
    from receval.exceptions import ReceValError
    from receval.spark.result import SparkResult

    truth, preds = _frames(400, seed=2)
    t_path, p_path = tmp_path / "truth.parquet", tmp_path / "preds.parquet"
    truth.to_parquet(t_path)
    preds.to_parquet(p_path)
    got = receval.evaluate(str(t_path), str(p_path), METRICS, engine="spark",
                           spark_options={"partitions": 2, "per_user": False})
    assert isinstance(got, SparkResult)
    assert [t["null_check"] for t in got.tasks] == [False, False]
    ref = receval.evaluate(truth, preds, METRICS)
    assert got.summary == ref.summary
    assert got.counts == ref.counts
    holed = truth.astype({"item": "Int64"})
    holed.loc[7, "item"] = None
    holed.to_parquet(t_path)
    with pytest.raises(ReceValError) as local:
        receval.evaluate(str(t_path), str(p_path), METRICS)
    with pytest.raises(ReceValError) as remote:
        receval.evaluate(str(t_path), str(p_path), METRICS, engine="spark",
                         spark_options={"partitions": 2, "per_user": False})
    # the same error (the row it names is the partition's, as before the footers were read)
    head = str(local.value).split(" at row ")[0]
    assert "missing id" in head and str(remote.value).startswith(head)
