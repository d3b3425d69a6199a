"""The partitions' tie check under ``ties="stable"`` (no order column is shuffled unless a user
has tied scores): from the packed score lists when every user's list has one length (top-N
lists), else from the sorted rows; either way a tie asks for the job again with the order
column, and the numbers are the local engine's, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import receval

pytest.importorskip("pyspark", reason="the Spark engine needs pyspark (receval[spark])")

METRICS = ["P@2", "nDCG@3", "AP@3", "MRR"]


def test_list_ties_on_lists_of_one_length() -> None:
    from receval.spark.packing import _list_ties

    assert _list_ties(pa.array([[3.0, 1.0, 2.0], [5.0, 4.0, 6.0]])) is False
    # the tie in the last list, not next to each other
    assert _list_ties(pa.array([[3.0, 1.0, 2.0], [5.0, 4.0, 5.0]])) is True
    # integer ranks; empty lists (users with truth rows only) are left out
    assert _list_ties(pa.array([[2, 1], [], [7, 7]], pa.list_(pa.int64()))) is True
    # lists of several lengths: the rows are sorted instead
    assert _list_ties(pa.array([[1.0, 2.0], [1.0, 2.0, 3.0]])) is None
    assert _list_ties(pa.array([[], []], pa.list_(pa.float64()))) is None


@pytest.mark.slow
@pytest.mark.parametrize("tied", [False, True])
def test_top_n_lists_with_and_without_ties(spark: Any, tied: bool) -> None:
    """Every user has 6 predictions (one length: the packed-list check); with ``tied`` one
    user's scores repeat, and the order column decides, as the rows' order does locally."""
    rng = np.random.default_rng(3)
    users = np.repeat(np.arange(40), 6)
    preds = pd.DataFrame({"user": users, "item": rng.permutation(240) % 30,
                          "score": rng.random(240)})
    preds = preds.drop_duplicates(["user", "item"]).groupby("user").head(6)
    full = preds.groupby("user")["item"].transform("size") == 6
    preds = preds[full].reset_index(drop=True)
    if tied:
        preds.loc[preds["user"] == preds["user"].iloc[0], "score"] = 0.5
    truth = pd.DataFrame({"user": rng.integers(0, 42, 100), "item": rng.integers(0, 30, 100)})
    truth = truth.drop_duplicates().reset_index(drop=True)
    st, sp = spark.createDataFrame(truth), spark.createDataFrame(preds)
    ref = receval.evaluate(st.toPandas(), sp.toPandas(), METRICS, silence=["ties"])
    got = receval.evaluate(st, sp, METRICS, engine="spark", silence=["ties"],
                           spark_options={"partitions": 2})
    assert got.summary == ref.summary
    assert got.counts == ref.counts
    pd.testing.assert_frame_equal(got.per_user_pandas(), ref.per_user, check_exact=True)
    got.unpersist()
