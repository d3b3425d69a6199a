"""The Spark door against the local one (``engine="numba"``) on the same rows: one finish
(summary, counts, ``summary_null``, warnings, "no user" errors), ``strata=``, ``train=`` /
``exclude_train`` and the beyond-accuracy metrics, bit for bit.

The run's shared local[2] SparkSession (tests/conftest.py); small random inputs with ties,
graded ratings and users on one side only. The local reference reads the Spark frames'
``toPandas()`` (the frame's row order is the ``stable`` order of both).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.exceptions import ReceValError

pytest.importorskip("pyspark", reason="the Spark engine needs pyspark (receval[spark])")
pytestmark = pytest.mark.slow

METRICS = ["P@3", "R@3", "nDCG@3", "MRR", "AP@3", "RMSE"]


def _random(seed: int, n_users: int = 30) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Truth (graded), predictions (ties; users on one side only) and training rows (some
    users and items without any; some pairs also predicted)."""
    rng = np.random.default_rng(seed)
    t = pd.DataFrame({"user": rng.integers(0, n_users, 5 * n_users),
                      "item": rng.integers(0, 20, 5 * n_users),
                      "rating": rng.integers(0, 6, 5 * n_users).astype(float)})
    t = t.drop_duplicates(["user", "item"]).reset_index(drop=True)
    p = pd.DataFrame({"user": rng.integers(3, n_users + 4, 10 * n_users),
                      "item": rng.integers(0, 24, 10 * n_users),
                      "score": rng.integers(0, 6, 10 * n_users) / 2.0})
    p = p.drop_duplicates(["user", "item"]).reset_index(drop=True)
    tr = pd.DataFrame({"user": rng.integers(1, n_users + 8, 6 * n_users),
                       "item": rng.integers(2, 26, 6 * n_users)})
    return t, p, tr


def _run(fn: Any) -> tuple[Any, list[tuple[str, str]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [(w.category.__name__, str(w.message)) for w in caught
                 if issubclass(w.category, receval.exceptions.ReceValWarning | UserWarning)
                 and w.category.__module__.startswith("receval")]


def _both(spark: Any, truth: pd.DataFrame, preds: pd.DataFrame, metrics: list[str],
          partitions: int = 5, **options: Any) -> tuple[Any, Any, list[Any], list[Any]]:
    st, sp = spark.createDataFrame(truth), spark.createDataFrame(preds)
    ref, ref_w = _run(lambda: receval.evaluate(st.toPandas(), sp.toPandas(), metrics,
                                               **options))
    got, got_w = _run(lambda: receval.evaluate(st, sp, metrics, engine="spark",
                                               spark_options={"partitions": partitions},
                                               **options))
    return ref, got, ref_w, got_w


def _same_summary(ref: Any, got: Any) -> None:
    assert list(got.summary) == list(ref.summary)
    np.testing.assert_array_equal(np.array(list(got.summary.values())),
                                  np.array(list(ref.summary.values())))


@pytest.mark.parametrize("options", [
    {},  # graded ratings without a threshold, ties at the cutoff: two warnings
    {"relevance_threshold": 4, "empty": "nan"},  # summary_null: undefined users
    {"relevance_threshold": 3, "empty": "skip", "users": "union"},
    {"profile": "recommenders"},  # option groups: summary_null and warnings per group
])
def test_one_finish_same_summary_counts_and_warnings(spark: Any, options: dict) -> None:
    truth, preds, _ = _random(1)
    ref, got, ref_w, got_w = _both(spark, truth, preds, METRICS, **options)
    _same_summary(ref, got)
    assert got.counts == ref.counts
    assert got.counts["summary_null"] == ref.counts["summary_null"]
    assert got_w == ref_w and ref_w  # the same warnings, once, in the same order


def test_one_finish_same_no_user_errors(spark: Any) -> None:
    truth, preds, _ = _random(2)
    st, sp = spark.createDataFrame(truth), spark.createDataFrame(preds)
    for options in ({"users": "relevant", "relevance_threshold": 9},
                    {"users": "relevant", "relevance_threshold": 9, "profile": "recommenders"}):
        with pytest.raises(ReceValError) as local:
            receval.evaluate(truth, preds, ["P@3"], silence="no-match", **options)
        with pytest.raises(ReceValError) as remote:
            receval.evaluate(st, sp, ["P@3"], engine="spark", silence="no-match", **options)
        assert str(remote.value) == str(local.value)
        assert str(local.value).startswith("no user to evaluate with users='relevant'")


def _same_strata(ref: Any, got: Any) -> None:
    assert got.strata is not None and ref.strata is not None
    assert got.strata["group"].tolist() == ref.strata["group"].tolist()
    assert got.strata["users"].tolist() == ref.strata["users"].tolist()
    assert got.strata.columns.tolist() == ref.strata.columns.tolist()
    for name in ref.strata.columns[2:]:  # the accuracy metrics
        np.testing.assert_array_equal(got.strata[name].to_numpy(),
                                      ref.strata[name].to_numpy(), err_msg=name)
    for label, acc in (ref.strata_sums or {}).items():
        assert (got.strata_sums or {})[label] == acc


@pytest.mark.parametrize("options", [
    {"relevance_threshold": 3, "silence": ["ties", "undefined"]},
    {"relevance_threshold": 3, "average": "micro", "empty": "skip",
     "silence": ["ties", "undefined"]},
    {"profile": "recommenders", "silence": ["ties", "no-threshold"]},
])
def test_strata_merged_on_the_driver(spark: Any, options: dict) -> None:
    truth, preds, _ = _random(3)
    mapping = {u: ("low" if u % 3 else "high") for u in range(0, 24)}  # others: (none)
    ref, got, _, _ = _both(spark, truth, preds, METRICS, partitions=6, strata=mapping,
                           **options)
    _same_summary(ref, got)
    _same_strata(ref, got)
    # a Spark frame as the mapping: the same groups
    frame = spark.createDataFrame(pd.DataFrame({"user": list(mapping),
                                                "group": list(mapping.values())}))
    again = receval.evaluate(spark.createDataFrame(truth), spark.createDataFrame(preds), METRICS,
                             engine="spark", strata=frame, **options)
    _same_strata(ref, again)


def test_strata_ids_that_do_not_match_are_the_local_error(spark: Any) -> None:
    truth, preds, _ = _random(4)
    mapping = {f"u{u}": "a" for u in range(30)}
    with pytest.raises(ReceValError) as local:
        receval.evaluate(truth, preds, ["P@3"], strata=mapping, silence=["ties", "no-threshold"])
    with pytest.raises(ReceValError) as remote:
        receval.evaluate(spark.createDataFrame(truth), spark.createDataFrame(preds), ["P@3"],
                         engine="spark", strata=mapping, silence=["ties", "no-threshold"])
    assert str(remote.value) == str(local.value)
    assert "no evaluated user is in the mapping" in str(local.value)


@pytest.mark.parametrize(("exclude", "stamps"), [(False, False), (True, False), (True, True)])
def test_train_audit_and_exclusion_as_local(spark: Any, exclude: bool, stamps: bool) -> None:
    """``counts["train"]`` (items counted over every partition, not summed), the excluded rows,
    the numbers after the exclusion (ties ordered as the local rows) and the warnings."""
    truth, preds, train = _random(5)
    if stamps:  # train_after_test: training rows dated after the user's first test row
        rng = np.random.default_rng(7)
        truth["timestamp"] = rng.integers(50, 100, len(truth))
        train["timestamp"] = rng.integers(0, 80, len(train))
    st, sp, str_ = (spark.createDataFrame(f) for f in (truth, preds, train))
    kw: dict[str, Any] = {"relevance_threshold": 3, "train": None, "exclude_train": exclude}
    ref, ref_w = _run(lambda: receval.evaluate(st.toPandas(), sp.toPandas(), METRICS,
                                               **{**kw, "train": str_.toPandas()}))
    got, got_w = _run(lambda: receval.evaluate(st, sp, METRICS, engine="spark",
                                               spark_options={"partitions": 5},
                                               **{**kw, "train": str_}))
    _same_summary(ref, got)
    assert got.counts["train"] == ref.counts["train"]
    assert ("train_after_test" in ref.counts["train"]) == stamps
    assert got.counts == ref.counts
    assert got.options == {**ref.options, "engine": "spark"}
    assert got_w == ref_w
    left = ref.per_user.sort_values("user", kind="stable").reset_index(drop=True)
    right = got.per_user_pandas()
    for name in ref.metrics:
        np.testing.assert_array_equal(right[name].to_numpy(), left[name].to_numpy(),
                                      err_msg=name)
    lean = receval.evaluate(st, sp, METRICS, engine="spark", spark_options={"per_user": False},
                            silence=["ties", "undefined", "train-items", "train-overlap",
                                     "train-future"], **{**kw, "train": str_})
    assert lean.per_user is None and lean.counts["train"] == ref.counts["train"]


BEYOND = ["P@3", "coverage@3", "distributional_coverage@3", "gini@5", "personalization@3",
          "coverage@5", "EE_L@3", "EE_D@3", "diversity@3", "AWRF@3", "nDCG_AWRF@3", "rKL@5",
          "group_exposure@3", "group_exposure@5"]
FEATURES = {i: ["a", "b", "c"][i % 3] + ("|d" if i % 4 == 0 else "") for i in range(26)}
GROUPS = {i: f"g{i % 3}" for i in range(26)}


@pytest.mark.parametrize(("with_train", "options"), [
    (True, {"relevance_threshold": 3}),
    (False, {"relevance_threshold": 3, "empty": "skip",
             "beyond": {"protected_group": "g1", "catalogue": "recommended"}}),
])
def test_beyond_accuracy_metrics_as_local(spark: Any, with_train: bool, options: dict) -> None:
    """Per-user metrics computed in the partitions (exact sums merged), catalogue metrics
    from the exposure counts merged on the driver: the local numbers, bit for bit."""
    truth, preds, train = _random(6)
    options = {"beyond": {"protected_group": "g1"}, **options,
               "item_features": FEATURES, "item_groups": GROUPS,
               "silence": ["ties", "undefined", "train-items", "train-overlap"]}
    st, sp, str_ = (spark.createDataFrame(f) for f in (truth, preds, train))
    # calibration reads each user's training items: they travel with the user's rows
    metrics = BEYOND + (["calibration@3", "calibration_js@5"] if with_train else [])
    ref = receval.evaluate(st.toPandas(), sp.toPandas(), metrics,
                           train=str_.toPandas() if with_train else None, **options)
    got = receval.evaluate(st, sp, metrics, engine="spark", spark_options={"partitions": 6},
                           train=str_ if with_train else None, **options)
    _same_summary(ref, got)
    assert got.metrics == ref.metrics == metrics
    assert got.counts == ref.counts
    assert got.options == {**ref.options, "engine": "spark"}
    assert got.sums == ref.sums
    left = ref.per_user.sort_values("user", kind="stable").reset_index(drop=True)
    right = got.per_user_pandas()
    assert right.columns.tolist() == left.columns.tolist()
    for name in left.columns[1:]:
        np.testing.assert_array_equal(right[name].to_numpy(), left[name].to_numpy(),
                                      err_msg=name)
    # catalogue metrics alone: no accuracy metric, no per-user column
    only = ["coverage@3", "gini@5"]
    alone = receval.evaluate(st, sp, only, engine="spark",
                             train=str_ if with_train else None, **options)
    assert alone.summary == {n: ref.summary[n] for n in only}


POPULAR = ["P@3", "novelty@3", "novelty@5", "ARP@3", "ARP@5", "APLT@5", "ACLT@3",
           "MeanPopRank@5", "calibration@3"]


def _distinct_popularity(seed: int) -> pd.DataFrame:
    """Training rows in which item j (2 to 25) has j - 1 rows (no two items equally popular:
    the short head's cut is one order everywhere), some of them repeated pairs."""
    rng = np.random.default_rng(seed)
    items = np.repeat(np.arange(2, 26), np.arange(1, 25))
    return pd.DataFrame({"user": rng.integers(1, 38, len(items)), "item": items})


@pytest.mark.parametrize("beyond", [
    {},
    {"novelty_popularity": "users", "popularity": "users", "arp_normalize": "interactions",
     "novelty_base": 10, "head_share": 0.5},
    {"arp_normalize": "max", "arp_cold": "skip", "tail_ratio": 3},
])
def test_popularity_metrics_read_the_whole_training_popularity(spark: Any,
                                                                beyond: dict) -> None:
    """novelty, ARP, APLT, ACLT and MeanPopRank read the popularity of the whole training
    data (counted by Spark, sent to every partition): the local numbers, bit for bit, on
    partitions that each hold a few users' training rows."""
    truth, preds, _ = _random(11)
    st, sp, str_ = (spark.createDataFrame(f) for f in (truth, preds, _distinct_popularity(3)))
    kw: dict[str, Any] = {"beyond": beyond, "item_groups": GROUPS,
                          "silence": ["ties", "undefined", "train-items", "train-overlap",
                                      "no-threshold"]}
    ref = receval.evaluate(st.toPandas(), sp.toPandas(), POPULAR, train=str_.toPandas(), **kw)
    got = receval.evaluate(st, sp, POPULAR, engine="spark", spark_options={"partitions": 6},
                           train=str_, **kw)
    _same_summary(ref, got)
    assert got.sums == ref.sums
    assert got.options == {**ref.options, "engine": "spark"}
    left = ref.per_user.sort_values("user", kind="stable").reset_index(drop=True)
    right = got.per_user_pandas()
    for name in left.columns[1:]:
        np.testing.assert_array_equal(right[name].to_numpy(), left[name].to_numpy(),
                                      err_msg=name)


CATALOGUE = ["P@3", "AWRF@3", "nDCG_AWRF@5", "group_exposure@3", "rND@3", "rKL@5", "rRD@5",
             "serendipity@3", "serendipity@5"]


@pytest.mark.parametrize("beyond", [  # fairness_step=1: rND/rKL/rRD cut every prefix
    {"fairness_target": "catalogue", "fairness_step": 1},
    {"fairness_target": "catalogue", "fairness_population": "catalogue", "catalogue": "train",
     "serendipity": "rectools", "fairness_step": 1},
    {"fairness_target": "catalogue", "fairness_population": "catalogue", "fairness_step": 1,
     "catalogue": "features", "serendipity": "evidently", "protected_group": "g2"},
])
def test_catalogue_readers_get_the_catalogue(spark: Any, beyond: dict) -> None:
    """A catalogue fairness target or population, rND's default protected group and
    serendipity read the catalogue (collected by Spark, sent to every partition): the local
    numbers, bit for bit."""
    truth, preds, train = _random(13)
    st, sp, str_ = (spark.createDataFrame(f) for f in (truth, preds, train))
    kw: dict[str, Any] = {"beyond": beyond, "item_groups": GROUPS, "item_features": FEATURES,
                          "relevance_threshold": 3,
                          "silence": ["ties", "undefined", "train-items", "train-overlap"]}
    ref = receval.evaluate(st.toPandas(), sp.toPandas(), CATALOGUE, train=str_.toPandas(),
                           **kw)
    got = receval.evaluate(st, sp, CATALOGUE, engine="spark", spark_options={"partitions": 6},
                           train=str_, **kw)
    _same_summary(ref, got)
    assert got.sums == ref.sums
    assert got.counts == ref.counts
    left = ref.per_user.sort_values("user", kind="stable").reset_index(drop=True)
    right = got.per_user_pandas()
    for name in left.columns[1:]:
        np.testing.assert_array_equal(right[name].to_numpy(), left[name].to_numpy(),
                                      err_msg=name)


def test_a_short_head_cut_through_a_tie_is_one_line(spark: Any) -> None:
    """Two items of equal popularity on both sides of the short head's cut: the local plan
    orders them by its own item codes, which no partition shares: refused."""
    truth, preds, _ = _random(12)
    # popularity 6, 2, 2: the head (0.8 of 10 rows) holds item 4 and one of items 2 and 3
    train = pd.DataFrame({"user": [1, 2, 3, 4] + [5] * 6, "item": [2, 2, 3, 3] + [4] * 6})
    with pytest.raises(ReceValError, match=r"^metric 'APLT@3' is not available with "
                       r"engine='spark' on this training data: its short head .*equal "
                       r"popularity \(2\)") as err:
        receval.evaluate(spark.createDataFrame(truth), spark.createDataFrame(preds),
                         ["APLT@3"], engine="spark", train=spark.createDataFrame(train),
                         silence=["no-threshold"])
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("metric", "beyond", "why"), [
    ("PopRSP@5", None, "pools each user's training items"),
    ("novelty@5", {"novelty_average": "slots"}, "novelty_average='slots'"),
    ("PopREO@5", None, "pools each user's training items"),
    ("AWRF@5", {"fairness_target": "catalogue", "catalogue": "recommended"},
     "catalogue='recommended' is known only once"),
    ("serendipity@5", {"similarity": "cooccurrence"}, "similarity='cooccurrence'"),
])
def test_beyond_metrics_spark_cannot_compute_are_one_line(spark: Any, metric: str,
                                                          beyond: Any, why: str) -> None:
    truth, preds, train = _random(7)
    with pytest.raises(ReceValError, match=rf"^metric '{metric}' is not available with "
                       rf"engine='spark': .*{why}") as err:
        receval.evaluate(spark.createDataFrame(truth), spark.createDataFrame(preds), [metric],
                         engine="spark", train=spark.createDataFrame(train),
                         item_features=FEATURES, beyond=beyond)
    assert "\n" not in str(err.value)


def test_cli_strata_and_beyond_with_engine_spark(tmp_path: Any) -> None:
    """``receval evaluate --engine spark --strata FILE -m coverage@2``: the groups and the
    catalogue metric of the local engine (was: '--strata is not available with --engine
    spark')."""
    import json

    from click.testing import CliRunner

    from receval.cli import main

    truth, preds, train = _random(8, n_users=12)
    truth.drop(columns="rating").to_parquet(tmp_path / "t.parquet")
    preds.to_parquet(tmp_path / "p.parquet")
    train.to_parquet(tmp_path / "train.parquet")
    pd.DataFrame({"user": range(0, 10), "group": ["a", "b"] * 5}).to_csv(tmp_path / "g.csv",
                                                                        index=False)
    outs = {}
    for engine in ("numba", "spark"):
        args = ["evaluate", "-t", str(tmp_path / "t.parquet"), "-p", str(tmp_path / "p.parquet"),
                "-m", "P@3", "-m", "coverage@2", "-f", "json", "--silence", "ties",
                "--strata", str(tmp_path / "g.csv"), "--train", str(tmp_path / "train.parquet")]
        if engine == "spark":
            args += ["--engine", "spark", "--spark-master", "local[2]"]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        outs[engine] = json.loads(result.stdout)
    assert outs["spark"]["summary"] == outs["numba"]["summary"]
    assert outs["spark"]["strata"] == outs["numba"]["strata"]
    assert outs["spark"]["counts"] == outs["numba"]["counts"]
    assert [g["group"] for g in outs["spark"]["strata"]] == ["a", "b", "(none)"]


def test_everything_at_once_with_a_profile(spark: Any) -> None:
    """strata=, train= with exclude_train, beyond-accuracy metrics (catalogue, per-user,
    calibration) and a profile whose metric groups differ in their options, per_user off."""
    truth, preds, train = _random(9)
    st, sp, str_ = (spark.createDataFrame(f) for f in (truth, preds, train))
    metrics = ["P@3", "nDCG@3", "MRR", "coverage@3", "gini@3", "EE_L@3", "calibration@3"]
    mapping = {u: "odd" if u % 2 else "even" for u in range(0, 40, 3)}
    kw: dict[str, Any] = {"profile": "recommenders", "exclude_train": True, "strata": mapping,
                          "item_groups": GROUPS,
                          "silence": ["ties", "undefined", "no-threshold", "train-items",
                                      "train-overlap"]}
    ref = receval.evaluate(st.toPandas(), sp.toPandas(), metrics, train=str_.toPandas(), **kw)
    got = receval.evaluate(st, sp, metrics, engine="spark", train=str_,
                           spark_options={"partitions": 4, "per_user": False}, **kw)
    _same_summary(ref, got)
    _same_strata(ref, got)
    assert got.per_user is None
    assert got.counts == ref.counts
    assert got.options == {**ref.options, "engine": "spark"}
    assert got.sums == ref.sums
