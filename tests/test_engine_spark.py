"""The Spark engine (``receval.evaluate(..., engine="spark")``) against the local numba engine.

The run's shared local[2] SparkSession (tests/conftest.py; Java 17); small random inputs with
heavy ties, users on one side only and string or integer ids. Summaries, per-user values and
counts are compared bit for bit with the local engine run on the same rows (``toPandas()``: the
frame's order is the ``stable`` order). One test runs on a multi-process cluster
(``local-cluster[2,1,1024]``) in a subprocess, so partitions travel to executor processes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.exceptions import ReceValError, TiesWarning, UndefinedMetricError

pytest.importorskip("pyspark", reason="the Spark engine needs pyspark (receval[spark])")
pytestmark = pytest.mark.slow

METRICS = ["P@1", "P@3", "R@3", "R", "F1@3", "AP@3", "MAP", "nDCG@3", "nDCG", "RR@2", "MRR",
           "Hit@3", "Rprec", "hits@3", "DCG@3", "RMSE", "MAE"]
QUIET = ["ties", "undefined", "no-threshold", "no-match", "id-mismatch"]


def _random(seed: int, n_users: int = 40, strings: bool = False) -> tuple[pd.DataFrame,
                                                                            pd.DataFrame]:
    """Truth (graded ratings, a few missing) and predictions (heavy ties, users on one side
    only), distinct (user, item) pairs."""
    rng = np.random.default_rng(seed)
    t = pd.DataFrame({"user": rng.integers(0, n_users, 6 * n_users),
                      "item": rng.integers(0, 25, 6 * n_users),
                      "rating": rng.integers(0, 6, 6 * n_users).astype(float)})
    t = t.drop_duplicates(["user", "item"]).reset_index(drop=True)
    t.loc[rng.random(len(t)) < 0.05, "rating"] = np.nan
    p = pd.DataFrame({"user": rng.integers(4, n_users + 6, 12 * n_users),
                      "item": rng.integers(0, 25, 12 * n_users),
                      "score": rng.integers(0, 5, 12 * n_users) / 2 - 0.5})
    p = p.drop_duplicates(["user", "item"]).reset_index(drop=True)
    if strings:
        t["user"], p["user"] = "u" + t["user"].astype(str), "u" + p["user"].astype(str)
        t["item"], p["item"] = "i" + t["item"].astype(str), "i" + p["item"].astype(str)
    return t, p


def _same(ref: receval.Result, got: Any) -> None:
    """Summary, per-user values and counts identical, bit for bit."""
    assert list(got.summary) == list(ref.summary)
    np.testing.assert_array_equal(np.array(list(got.summary.values())),
                                  np.array(list(ref.summary.values())))
    left = ref.per_user.sort_values("user", kind="stable").reset_index(drop=True)
    right = got.per_user_pandas()
    assert left["user"].tolist() == right["user"].tolist()
    for name in ref.metrics:
        np.testing.assert_array_equal(right[name].to_numpy(), left[name].to_numpy(),
                                      err_msg=name)
    assert got.counts == ref.counts
    assert got.options == {**ref.options, "engine": "spark"}


def _both(spark: Any, truth: pd.DataFrame, preds: pd.DataFrame, metrics: list[str],
          partitions: int | str | None = 5, **options: Any) -> tuple[receval.Result, Any]:
    st, sp = spark.createDataFrame(truth), spark.createDataFrame(preds)
    options.setdefault("silence", QUIET)
    ref = receval.evaluate(st.toPandas(), sp.toPandas(), metrics, **options)
    got = receval.evaluate(st, sp, metrics, engine="spark",
                           spark_options={"partitions": partitions}, **options)
    return ref, got


@pytest.mark.parametrize(("seed", "strings", "options"), [
    (0, False, {"relevance_threshold": 3}),
    (1, True, {"relevance_threshold": 3, "gain": "exponential", "ties": "average"}),
    (2, False, {"relevance_threshold": "user_mean", "users": "union", "empty": "skip"}),
    (3, True, {"average": "micro", "users": "both", "precision_denominator": "returned"}),
    (4, False, {"profile": "recommenders"}),  # per-family users: the option groups merge
    (5, False, {"truth_scope": "predicted", "users": "predictions", "empty": "nan"}),
])
def test_identical_to_numba(spark: Any, seed: int, strings: bool, options: dict) -> None:
    truth, preds = _random(seed, strings=strings)
    _same(*_both(spark, truth, preds, METRICS, **options))


def test_partitioning_changes_nothing(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """One partition, many partitions (most holding one side only), Spark's own choice, and
    the rows packed as one list of structs per user instead of one list per column."""
    from receval.spark import driver

    truth, preds = _random(6, n_users=12)
    ref, _ = _both(spark, truth, preds, METRICS, relevance_threshold=2)
    for parts in (1, 9, "spark", "auto"):
        got = _both(spark, truth, preds, METRICS, partitions=parts, relevance_threshold=2)[1]
        _same(ref, got)
        assert not isinstance(parts, int) or len(got.tasks) <= parts  # empty ones emit nothing
        assert parts != 9 or len(got.tasks) > 2
        # auto (the default): a few hundred rows are one partition, not the session's
        assert parts != "auto" or len(got.tasks) == 1
    monkeypatch.setattr(driver, "_MODE", "struct")  # one list of structs per user
    _same(ref, _both(spark, truth, preds, METRICS, partitions=4, relevance_threshold=2)[1])


def test_tied_scores_bring_the_order_column(spark: Any,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``ties="stable"`` (the default) shuffles no order column until a partition finds a
    user's tied scores: then the run with it gives the frame's order, as the local engine."""
    from receval.spark import driver

    truth, preds = _random(13, n_users=30)  # heavy ties
    st, sp = spark.createDataFrame(truth), spark.createDataFrame(preds).repartition(3)
    ref = receval.evaluate(st.toPandas(), sp.toPandas(), METRICS, silence=QUIET)
    ordered: list[bool] = []
    real = driver._run

    def spy(*args: Any) -> Any:
        ordered.append(args[2].ordered)
        return real(*args)

    monkeypatch.setattr(driver, "_run", spy)
    _same(ref, receval.evaluate(st, sp, METRICS, engine="spark", silence=QUIET))
    assert ordered == [False, True]
    ordered.clear()
    distinct = spark.createDataFrame(preds.assign(score=np.arange(len(preds), dtype=float)))
    receval.evaluate(st, distinct, ["P@1"], engine="spark", silence=QUIET)
    assert ordered == [False]


@pytest.mark.parametrize("column", ["item", "score"])
def test_null_ids_and_scores_give_the_local_error(spark: Any, column: str) -> None:
    """A null that collect_list would skip (shifting the packed lists) sends the rows again
    as structs: the local engine's own error, not misaligned rows."""
    truth, preds = _random(12, n_users=10)
    preds[column] = preds[column].astype("float64")
    preds.loc[7, column] = np.nan
    with pytest.raises(ReceValError) as local:
        receval.evaluate(truth, preds, ["P@1"], silence=QUIET)
    message = str(local.value).split(" at row ")[0]
    with pytest.raises(ReceValError, match="^" + re.escape(message)):
        receval.evaluate(spark.createDataFrame(truth), spark.createDataFrame(preds), ["P@1"],
                         engine="spark", silence=QUIET)


def test_parquet_paths(spark: Any, tmp_path: Path) -> None:
    """Paths are read by Spark (as ``receval evaluate --engine spark`` does)."""
    truth, preds = _random(7)
    truth.to_parquet(tmp_path / "t.parquet")
    preds.to_parquet(tmp_path / "p.parquet")
    kw = {"relevance_threshold": 3, "silence": QUIET}
    ref = receval.evaluate(tmp_path / "t.parquet", tmp_path / "p.parquet", METRICS, **kw)
    got = receval.evaluate(tmp_path / "t.parquet", tmp_path / "p.parquet", METRICS,
                           engine="spark", **kw)
    _same(ref, got)
    with pytest.raises(ReceValError, match="reads truth from Parquet"):
        truth.to_csv(tmp_path / "t.csv")
        receval.evaluate(tmp_path / "t.csv", tmp_path / "p.parquet", ["P@1"], engine="spark")


def test_row_order_rule(spark: Any) -> None:
    """``ties="stable"`` and ``duplicates="first"`` follow the frame's order before the
    shuffle, or the ``order_by`` column: the local engine on the rows sorted by it."""
    truth, preds = _random(8, n_users=15)
    preds = pd.concat([preds, preds.iloc[[0, 4, 9]].assign(score=9.0)], ignore_index=True)
    preds["pos"] = np.random.default_rng(8).permutation(len(preds))
    truth["pos"] = np.arange(len(truth))
    kw = {"duplicates": "first", "relevance_threshold": 3, "silence": QUIET}
    ref = receval.evaluate(truth, preds.sort_values("pos"), METRICS, **kw)
    # the Spark frame's own order is not ``pos``: only order_by gives the local answer
    sp = spark.createDataFrame(preds).repartition(3)
    got = receval.evaluate(spark.createDataFrame(truth), sp, METRICS, engine="spark",
                           spark_options={"order_by": "pos", "partitions": 4}, **kw)
    _same(ref, got)
    assert ref.counts["rows"]["predictions_dropped_duplicates"] == 3
    with pytest.raises(ReceValError, match="order_by='nope': truth has no such column"):
        receval.evaluate(spark.createDataFrame(truth), sp, ["P@1"], engine="spark",
                         spark_options={"order_by": "nope"}, **kw)


def test_errors_are_one_line(spark: Any) -> None:
    truth, preds = _random(9, n_users=10)
    st, sp = spark.createDataFrame(truth), spark.createDataFrame(preds)
    dup = spark.createDataFrame(pd.concat([preds, preds.iloc[[3]]], ignore_index=True))
    with pytest.raises(ReceValError, match=r"^duplicate \(user, item\) rows in predictions"):
        receval.evaluate(st, dup, ["P@1"], engine="spark", silence=QUIET)
    with pytest.raises(UndefinedMetricError, match=r"^R@3 is undefined for user"):
        receval.evaluate(st, sp, ["R@3"], engine="spark", empty="error",
                         relevance_threshold=5, silence=QUIET)
    with pytest.raises(ReceValError, match=r"^predictions has no column 'pred'; its columns "
                       r"are: 'user', 'item', 'score' \("):
        receval.evaluate(st, sp, ["P@1"], engine="spark", score_col="pred")
    with pytest.raises(ReceValError, match="share no user id"):
        far = spark.createDataFrame(preds.assign(user=preds["user"] + 1000))
        receval.evaluate(st, far, ["P@1"], engine="spark", users="both", silence=QUIET)
    with pytest.raises(ReceValError, match=r"^truth is empty \(no rows\)$"):
        receval.evaluate(st.limit(0), sp, ["P@1"], engine="spark", silence=QUIET)
    with pytest.raises(ReceValError, match="unknown spark_options key 'nope'"):
        receval.evaluate(st, sp, ["P@1"], engine="spark", spark_options={"nope": 1})
    with pytest.raises(ReceValError, match="user ids of mismatched types"):
        receval.evaluate(st, spark.createDataFrame(preds.assign(user=preds["user"].astype(str))),
                         ["P@1"], engine="spark")


def test_warnings_once_on_the_driver(spark: Any) -> None:
    truth, preds = _random(10, n_users=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        receval.evaluate(spark.createDataFrame(truth), spark.createDataFrame(preds), ["P@1"],
                         engine="spark", spark_options={"partitions": 6})
    codes = [getattr(w.category, "code", w.category.__name__) for w in caught
             if issubclass(w.category, receval.exceptions.ReceValWarning)]
    assert codes == ["ties", "no-threshold"]
    assert issubclass(caught[[w.category for w in caught].index(TiesWarning)].category,
                      TiesWarning)


def test_result_exposes_per_user_as_a_spark_frame(spark: Any) -> None:
    truth, preds = _random(11, n_users=8)
    st, sp = spark.createDataFrame(truth), spark.createDataFrame(preds)
    got = receval.evaluate(st, sp, ["P@1", "R@3"], engine="spark", silence=QUIET)
    assert got.per_user.columns == ["user", "P@1", "R@3"]
    assert got.per_user.count() == got.counts["users"]["evaluated"]
    got.unpersist()
    lean = receval.evaluate(st, sp, ["P@1", "R@3"], engine="spark", silence=QUIET,
                            spark_options={"per_user": False})
    assert lean.per_user is None and lean.summary == got.summary
    with pytest.raises(ReceValError, match="per_user"):
        lean.per_user_pandas()


def test_spark_profile_matches_mllib_on_the_spark_engine(spark: Any) -> None:
    """``profile="spark"`` with ``engine="spark"`` gives MLlib ``RankingMetrics``' numbers on
    the same frames (the ``users="both"`` join of the usual MLlib pipeline)."""
    from pyspark.mllib.evaluation import RankingMetrics

    truth, preds = _random(12, n_users=30)
    truth = truth.drop(columns="rating")
    preds = preds.assign(score=np.random.default_rng(12).permutation(len(preds)) / 7.0)
    both = sorted(set(truth["user"]) & set(preds["user"]))
    ranked = preds.sort_values(["user", "score"], ascending=[True, False])
    rows = [([float(i) for i in ranked.loc[ranked["user"] == u, "item"]],
             [float(i) for i in truth.loc[truth["user"] == u, "item"]]) for u in both]
    mllib = RankingMetrics(spark.sparkContext.parallelize(rows, 2))
    got = receval.evaluate(spark.createDataFrame(truth), spark.createDataFrame(preds),
                           ["P@5", "R@5", "MAP", "nDCG@5"], profile="spark", users="both",
                           engine="spark", spark_options={"partitions": 3}, silence=QUIET)
    expected = {"P@5": mllib.precisionAt(5), "R@5": mllib.recallAt(5),
                "MAP": mllib.meanAveragePrecision, "nDCG@5": mllib.ndcgAt(5)}
    for name, value in expected.items():
        assert got.summary[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


def test_pyspark_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from receval import dispatch

    real = importlib.util.find_spec
    monkeypatch.setattr(dispatch.importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyspark" else real(name, *a))
    with pytest.raises(ReceValError, match=r"pip install 'receval\[spark\]'"):
        receval.evaluate({"user": [1], "item": [1]}, {"user": [1], "item": [1], "score": [1.0]},
                         ["P@1"], engine="spark")


def test_missing_java_is_one_line(tmp_path: Path) -> None:
    """No Java: one line naming what to install (pyspark's own error is a long trace). In a
    fresh process: this module's session would otherwise be reused."""
    pd.DataFrame({"user": [1], "item": [1]}).to_parquet(tmp_path / "t.parquet")
    pd.DataFrame({"user": [1], "item": [1], "score": [1.0]}).to_parquet(tmp_path / "p.parquet")
    code = ("import receval\n"
            "try:\n"
            f"    receval.evaluate({str(tmp_path / 't.parquet')!r}, "
            f"{str(tmp_path / 'p.parquet')!r}, ['P@1'], engine='spark')\n"
            "except receval.ReceValError as e:\n"
            "    print('ERROR', e)\n")
    for env in ({"JAVA_HOME": str(tmp_path / "nojava")}, {"PATH": str(tmp_path)}):
        full = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
        full.update(env)
        out = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                             text=True, timeout=120)
        lines = out.stdout.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ERROR engine='spark' needs Java"), (
            out.stdout + out.stderr)
        assert "openjdk-17-jre-headless" in lines[0]


CLUSTER_SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np, pandas as pd
    from pyspark.sql import SparkSession
    import receval
    warnings.simplefilter("ignore")
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.executorEnv.PYTHONPATH", sys.argv[1]).getOrCreate())
    rng = np.random.default_rng(13)
    truth = pd.DataFrame({"user": rng.integers(0, 30, 150), "item": rng.integers(0, 20, 150)})
    truth = truth.drop_duplicates(ignore_index=True)
    preds = pd.DataFrame({"user": rng.integers(0, 33, 300), "item": rng.integers(0, 20, 300),
                          "score": rng.integers(0, 4, 300) / 2.0}).drop_duplicates(
                              ["user", "item"], ignore_index=True)
    st, sp = spark.createDataFrame(truth), spark.createDataFrame(preds)
    metrics = ["P@3", "R@3", "nDCG@3", "MAP", "MRR"]
    ref = receval.evaluate(st.toPandas(), sp.toPandas(), metrics, silence=["ties"])
    got = receval.evaluate(st, sp, metrics, engine="spark", silence=["ties"],
                           spark_options={"partitions": 4})
    left = ref.per_user.reset_index(drop=True)
    right = got.per_user_pandas()
    pids = sorted({t["pid"] for t in got.tasks})
    print(json.dumps({"same": ref.summary == got.summary and ref.counts == got.counts
                      and left.equals(right), "pids": pids}))
    spark.stop()
""")


def test_multi_process_cluster(tmp_path: Path) -> None:
    """``local-cluster[2,1,1024]``: two executor JVMs, each with its own Python workers, so the
    task and its settings are pickled to other processes (in a subprocess: one SparkContext
    per process)."""
    script = tmp_path / "cluster.py"
    script.write_text(CLUSTER_SCRIPT)
    src = str(Path(receval.__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, str(script), src], capture_output=True, text=True,
                         timeout=300)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert lines, out.stdout[-2000:] + out.stderr[-4000:]
    found = json.loads(lines[-1])
    assert found["same"]
    assert len(found["pids"]) >= 2  # the partitions ran in more than one Python process


def test_auto_partitions_from_the_number_of_rows() -> None:
    """One partition per core while each gets 25,000 rows or more; one per 4 million rows above
    (issue 19: 61,000 rows under Spark's 200 shuffle partitions took far longer; issue 24: a
    Python task per million rows cost a fifth of the CPU at 24M rows)."""
    from receval.spark.settings import auto_partitions

    assert [auto_partitions(rows, 2) for rows in (0, 49_999, 61_000, 2_000_000, 8_000_001,
                                                  24_000_000)] == [1, 1, 2, 2, 3, 6]
    assert [auto_partitions(rows, 16) for rows in (49_999, 50_000, 400_000, 16_000_001,
                                                   64_000_001)] == [1, 2, 16, 16, 17]
    with pytest.raises(ReceValError, match="'auto'"):
        receval.evaluate({"user": [1], "item": [1]}, {"user": [1], "item": [1]}, "P@1",
                         engine="spark", spark_options={"partitions": "many"})


def test_cli_engine_spark(spark: Any, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``receval evaluate --engine spark``: Spark reads the Parquet files; the same numbers and
    per-user file as the local engine."""
    from click.testing import CliRunner

    from receval.cli import main

    truth, preds = _random(14, n_users=12)
    truth.drop(columns="rating").to_parquet(tmp_path / "t.parquet")
    preds.to_parquet(tmp_path / "p.parquet")
    outs = {}
    for engine in ("numba", "spark"):
        args = ["evaluate", "-t", str(tmp_path / "t.parquet"), "-p", str(tmp_path / "p.parquet"),
                "-m", "P@3", "-m", "nDCG@3", "-f", "json", "--silence", "ties",
                "--per-user", str(tmp_path / f"{engine}.csv")]
        if engine == "spark":
            args += ["--engine", "spark", "--spark-master", "local[2]"]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        outs[engine] = json.loads(result.stdout)
    assert outs["spark"]["summary"] == outs["numba"]["summary"]
    assert outs["spark"]["counts"] == outs["numba"]["counts"]
    assert (tmp_path / "spark.csv").read_text() == (tmp_path / "numba.csv").read_text()
    # --train reaches Spark (the audit by joins): the local engine's counts
    trained = {}
    for engine in ("numba", "spark"):
        args = ["evaluate", "-t", str(tmp_path / "t.parquet"), "-p", str(tmp_path / "p.parquet"),
                "-m", "P@3", "-f", "json", "--silence", "ties", "--silence", "train-overlap",
                "--train", str(tmp_path / "t.parquet"), "--exclude-train"]
        result = CliRunner().invoke(main, [*args, *(["--engine", "spark"] * (engine == "spark"))])
        assert result.exit_code == 0, result.output
        trained[engine] = json.loads(result.stdout)
    assert trained["spark"]["counts"] == trained["numba"]["counts"]
    assert trained["spark"]["counts"]["train"]["truth_in_train"] > 0
    # --spark-partitions N reaches the shuffle; the default picks from the rows (here 1)
    from receval.spark import job as spark_job

    used: list[Any] = []
    original = spark_job._shuffle_partitions

    def spy(session: Any, parts: Any) -> Any:
        used.append(parts)
        return original(session, parts)

    monkeypatch.setattr(spark_job, "_shuffle_partitions", spy)
    base = ["evaluate", "-t", str(tmp_path / "t.parquet"), "-p", str(tmp_path / "p.parquet"),
            "-m", "P@3", "--engine", "spark", "--silence", "ties", "-f", "json"]
    for extra, want in (([], 1), (["--spark-partitions", "3"], 3),
                        (["--spark-partitions", "spark"], None)):
        result = CliRunner().invoke(main, [*base, *extra])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["summary"]["P@3"] == outs["numba"]["summary"]["P@3"]
        assert used[-1] == want
    wrong = CliRunner().invoke(main, [*base, "--spark-partitions", "0"])
    assert wrong.exit_code == 2 and "'auto' or 'spark'" in wrong.output


def test_a_killed_worker_is_one_line_naming_the_stage(spark: Any) -> None:
    """Issue 20: a Python worker that dies mid-job was a Py4J trace; now one ReceValError
    naming the step and the remedy, the Py4J error chained (for --debug), and Spark's log
    level restored after the call."""
    from receval.spark.driver import evaluate_spark
    from receval.spark.failures import _level_now

    def killed(*_: Any) -> Any:
        os._exit(9)  # as a worker killed by the OOM killer

    truth, preds = _random(15, n_users=6)
    spark.sparkContext.setLogLevel("WARN")
    try:
        before = _level_now(spark)
        with pytest.raises(ReceValError, match=r"^Spark failed during the evaluation job \(rows "
                           r"shuffled by user, each partition evaluated\): .*a Python worker "
                           r"died \(killed, or out of memory\)") as caught:
            evaluate_spark(spark.createDataFrame(truth), spark.createDataFrame(preds), ["P@1"],
                           killed, profile=None, explicit={}, silence=QUIET, spark_options={},
                           columns={})
        assert "\n" not in str(caught.value)
        assert type(caught.value.__cause__).__module__.startswith(("py4j", "pyspark"))
        assert _level_now(spark) == before == "WARN"
    finally:  # the shared session's level, whatever happened
        spark.sparkContext.setLogLevel("ERROR")


def test_cli_spark_failure_is_one_line_without_warn_lines_or_bars(tmp_path: Path) -> None:
    """Issue 20: an unreadable Parquet file under --engine spark: one error line naming the
    step and the remedy, exit 2, no Spark WARN/ERROR lines or stage progress bars on stderr
    (a fresh process: receval starts the session); --debug shows the trace."""
    pd.DataFrame({"user": [1, 2], "item": [1, 2]}).to_parquet(tmp_path / "t.parquet")
    (tmp_path / "p.parquet").write_bytes(b"PAR1" + b"x" * 64 + b"PAR1")
    args = [sys.executable, "-m", "receval.cli", "evaluate", "-t", str(tmp_path / "t.parquet"),
            "-p", str(tmp_path / "p.parquet"), "-m", "P@1", "--engine", "spark",
            "--spark-master", "local[1]"]
    src = str(Path(receval.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 2, out.stderr[-3000:]
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and re.match(
        r"error: Spark failed during reading the truth and predictions: .*; check that the "
        r"path is a readable Parquet file or a folder of them$", errors[0]), out.stderr
    assert not re.search(r" (WARN|ERROR) |\[Stage \d|Traceback|Py4J", out.stderr), out.stderr
