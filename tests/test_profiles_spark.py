"""The ``spark`` profile against pyspark's MLlib ``RankingMetrics`` (a real local Spark).

The run's shared local SparkSession (tests/conftest.py; Java 17). Each user of either input
becomes one RDD row ``(predicted ids sorted by score, highest first, ties in input order; truth
ids)``, with an empty array for a side it lacks: Spark averages every row, the profile's
``users="union"``. The usual inner join of recommendations and truth is the ``users="both"``
variant, and an RDD of the truth's users ``users="truth"`` (peer-semantics E4).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from test_profiles_peers import (
    ADVERSARIAL,
    KS,
    TOL,
    Rows,
    assert_close,
    datasets,
    receval_run,
    users_of,
)

pytest.importorskip("pyspark")
pytestmark = pytest.mark.slow

SPARK_METRICS = ("P", "R", "AP", "nDCG")


def spark_eval(spark: Any, truth: Rows, preds: Rows, users: str = "union") -> dict[str, float]:
    from pyspark.mllib.evaluation import RankingMetrics

    labels: dict[Any, list[str]] = defaultdict(list)
    for u, i, _ in truth:
        labels[u].append(str(i))
    ranked: dict[Any, list[tuple[float, str]]] = defaultdict(list)
    for u, i, s in preds:
        ranked[u].append((s, str(i)))
    chosen = {"both": [u for u in users_of(truth) if u in ranked], "truth": users_of(truth),
              "union": users_of(truth) + [u for u in users_of(preds) if u not in labels]}[users]
    rows = [([i for _, i in sorted(ranked.get(u, []), key=lambda x: -x[0])], labels.get(u, []))
            for u in chosen]
    # the first row types the schema: both arrays non-empty (a common user exists)
    rows.sort(key=lambda r: (len(r[0]) == 0 or len(r[1]) == 0))
    metrics = RankingMetrics(spark.sparkContext.parallelize(rows, 1))
    out = {"AP": metrics.meanAveragePrecision}
    for k in KS:
        out[f"P@{k}"] = metrics.precisionAt(k)
        out[f"R@{k}"] = metrics.recallAt(k)
        out[f"AP@{k}"] = metrics.meanAveragePrecisionAt(k)
        out[f"nDCG@{k}"] = metrics.ndcgAt(k)
    return out


def check_spark(spark: Any, truth: Rows, preds: Rows, users: str = "union") -> None:
    common = set(users_of(truth)) & set(users_of(preds))
    if not common:
        return  # no row Spark can type its schema from (or an empty RDD under "both")
    want = spark_eval(spark, truth, preds, users)
    names = [f"{f}@{k}" for k in KS for f in SPARK_METRICS] + ["AP"]
    opts = {} if users == "union" else {"users": users}
    got = receval_run(truth, preds, names, "spark", **opts).summary
    for m in names:
        assert_close(got[m], want[m], TOL, f"spark {m} (users={users})")


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=datasets(graded=False))
def test_spark_random(spark: Any, data: tuple[Rows, Rows]) -> None:
    check_spark(spark, *data)
    check_spark(spark, *data, users="both")


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_spark_adversarial(spark: Any, case: str) -> None:
    truth, preds = ADVERSARIAL[case]
    truth = [(u, i, 1.0) for u, i, _ in truth]  # binary labels: every truth row relevant
    check_spark(spark, truth, preds)


def test_spark_rdd_with_users_without_predictions(spark: Any) -> None:
    truth = [("u1", "a", 1.0), ("u1", "c", 1.0), ("u1", "f", 1.0), ("u2", "g", 1.0)]
    preds = [("u1", x, s) for x, s in zip("abcde", (5.0, 4.0, 3.0, 2.0, 1.0), strict=True)]
    check_spark(spark, truth, preds, users="truth")
    check_spark(spark, truth, preds, users="both")
    check_spark(spark, truth, preds)
    preds.append(("u3", "p", 1.0))  # a row with no label: 0, averaged in
    check_spark(spark, truth, preds)
