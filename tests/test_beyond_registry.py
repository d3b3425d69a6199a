"""A beyond-accuracy metric is one declaration (issue 32, item 1): an entry added to
:data:`receval.beyond.names.ENTRIES` (name, aliases, reduction, bounds, direction, undefined,
options, its compute function) is parsed, computed and checked by every door with no other
edit: each local engine of ``evaluate``, ``compare``, ``strata``, the CLI (the doors of the
generated suite, tests/test_no_quiet_number.py, which picks its metrics from the registry),
the monitor's windows and the Spark engine (its partitions get the driver's entries with the
plan; what it computes where, or refuses, follows what each entry declares it reads:
``BeyondEntry.reads``), and the inputs asked (``check_inputs``) and the report's fairness
section read the entries too.

The planted metrics are written here from their definitions and their values checked against
an oracle computed from the input frames: ``filled@k``, the share of a list's k slots that
hold an item (per user; undefined for a user without a list), and ``distinct@k``, the number
of distinct listed items over the number of listed slots (one number over the catalogue).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
import test_no_quiet_number as suite

import receval
from receval.beyond import names
from receval.beyond.compute import Job

K = suite.K


def _filled(job: Job) -> np.ndarray:
    listed = (job.lists >= 0).sum(axis=1).astype(np.float64)
    return np.where(listed > 0, listed / job.spec.k, np.nan)


def _distinct(job: Job) -> float:
    items = job.lists[job.lists >= 0]
    return float(len(np.unique(items)) / len(items)) if len(items) else math.nan


FILLED = names.BeyondEntry(
    "filled",
    ("filled", "slots_filled"),
    "user",
    (),
    bounds=(0.0, 1.0),
    undefined="no list",
    compute=_filled,
    per_list=True,
)
DISTINCT = names.BeyondEntry(
    "distinct",
    ("distinct",),
    "catalogue",
    (),
    bounds=(0.0, 1.0),
    undefined="no list holds an item",
    compute=_distinct,
    reads=("exposure",),  # a function of how many lists hold each item: Spark adds the counts
)


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> Any:
    for entry in (FILLED, DISTINCT):
        monkeypatch.setitem(names.ENTRIES, entry.name, entry)
        monkeypatch.setitem(suite.METRICS, f"{entry.name}@{K}", ("beyond", entry))
    suite.run.cache_clear()
    yield
    suite.run.cache_clear()


def _oracle(case: str) -> tuple[dict[Any, float], float]:
    """filled@K per user of the truth (NaN: no list), and distinct@K, from the case's
    predictions (the lists of the users in the truth: the others are not evaluated)."""
    c = suite.CASES[case]()
    top = c.predictions[c.predictions["user"].isin(c.truth["user"])]
    top = top.sort_values(["user", "score", "item"], ascending=[True, False, True])
    top = top.groupby("user").head(K)
    sizes = (top.groupby("user").size() / K).to_dict()
    filled = {u: sizes.get(u, math.nan) for u in c.truth["user"].unique()}
    return filled, top["item"].nunique() / len(top)


def test_the_planted_entries_are_parsed_and_declared(planted: Any) -> None:
    assert names.parse_beyond("slots_filled@3").metric == "filled"
    assert names.direction("filled@3") == "higher" and names.catalogue_level("distinct@3")
    assert names.split_metrics(["P@3", "filled@2,3"])[2] == ["P@3", "filled@2", "filled@3"]


def _cells() -> list[Any]:
    """Every (case, door); a cell of a defect the generated suite still lists for the per-user
    beyond metrics (its ``DEFECTS``, e.g. strata) is a strict xfail, as there."""
    out = []
    for case in ("plain", "short_lists"):
        for door in suite.DOORS:
            if door == "renamed":  # the items renamed: accuracy metrics only, by design
                continue
            reason = suite._defect(case, door, f"AWRF@{K}")
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(case, door, marks=marks, id=f"{case}-{door}"))
    return out


@pytest.mark.parametrize(("case", "door"), _cells())
def test_a_planted_entry_is_computed_by_every_door(planted: Any, case: str, door: str) -> None:
    filled, distinct = _oracle(case)
    for metric in (f"filled@{K}", f"distinct@{K}"):
        suite.check_door(case, door, metric)  # bounds, counted and warned, equal to numba
    out, refused = suite.run(case, door)
    assert out is not None and f"filled@{K}" not in refused
    if door == "compare":  # a catalogue metric has no per-user values to pair: one line
        assert "catalogue level" in refused[f"distinct@{K}"]
    else:
        assert out.summary[f"distinct@{K}"] == pytest.approx(distinct, abs=1e-12)
    mean = float(np.mean(list(filled.values())))  # empty="nan": an undefined user makes NaN
    got = out.summary[f"filled@{K}"]
    assert (math.isnan(got) and math.isnan(mean)) or got == pytest.approx(mean, abs=1e-12)
    if out.per_user is not None:
        values = out.per_user.set_index("user")[f"filled@{K}"]
        for user, value in values.items():
            want = filled.get(user, math.nan)
            assert (math.isnan(value) and math.isnan(want)) or value == pytest.approx(want)


def test_a_planted_per_list_entry_is_computed_in_the_monitor_windows(planted: Any) -> None:
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    lengths = {0: 1, 1: 2, 2: 3, 3: 3}  # served list lengths, one week
    imp = pd.DataFrame(
        [
            (u, f"i{r}", r, t0 + pd.Timedelta(hours=u))
            for u, n in lengths.items()
            for r in range(1, n + 1)
        ],
        columns=["user", "item", "rank", "served_at"],
    )
    fb = pd.DataFrame(
        {"user": list(lengths), "item": "i1", "value": 1.0, "at": t0 + pd.Timedelta(hours=5)}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = receval.monitor(
            imp, fb, [f"filled@{K}", "P@1"], window="W", relevance_threshold=1, n_resamples=0
        )
    assert m.windows[f"filled@{K}"].tolist() == pytest.approx(
        [np.mean([n / K for n in lengths.values()])], abs=1e-12
    )
    assert m.drift()["direction"].tolist() == ["higher", "higher"]


@pytest.fixture
def by_value() -> Any:
    """This module's functions (the planted entries' ``compute``) pickled by value for the
    Spark workers, which cannot import a test module (an entry defined in an installed module
    travels by reference)."""
    cloudpickle = pytest.importorskip("pyspark.cloudpickle")
    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    yield
    cloudpickle.unregister_pickle_by_value(module)


def _frames(spark: Any, case: str) -> tuple[Any, Any, dict[str, Any]]:
    c = suite.CASES[case]()
    kw = suite._kwargs(c, [f"novelty@{K}"])  # a beyond metric: train= and item_features=
    kw["train"] = spark.createDataFrame(kw["train"])
    return spark.createDataFrame(c.truth), spark.createDataFrame(c.predictions), kw


@pytest.mark.slow
@pytest.mark.parametrize("case", ["plain", "short_lists"])
def test_a_planted_entry_is_computed_by_the_spark_door(
    planted: Any, by_value: Any, spark: Any, case: str
) -> None:
    """The partitions compute ``filled`` (per user: its declared reads are the list alone)
    and count the exposures of ``distinct`` (declared ``reads=("exposure",)``), the driver
    finishes it: both the oracle's, and the local engine's bits."""
    pytest.importorskip("pyspark", reason="the Spark engine needs pyspark (receval[spark])")
    filled, distinct = _oracle(case)
    truth, preds, kw = _frames(spark, case)
    metrics = [f"P@{K}", f"filled@{K}", f"distinct@{K}"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = receval.evaluate(
            truth, preds, metrics, engine="spark", spark_options={"partitions": 3}, **kw
        )
        local = receval.evaluate(
            truth.toPandas(), preds.toPandas(), metrics, **{**kw, "train": kw["train"].toPandas()}
        )
    assert got.summary[f"distinct@{K}"] == pytest.approx(distinct, abs=1e-12)
    mean = float(np.mean(list(filled.values())))
    value = got.summary[f"filled@{K}"]
    assert (math.isnan(value) and math.isnan(mean)) or value == pytest.approx(mean, abs=1e-12)
    for metric in metrics:
        a, b = got.summary[metric], local.summary[metric]
        assert (math.isnan(a) and math.isnan(b)) or a == b, metric
    assert got.counts["undefined"]["users"][f"filled@{K}"] == sum(
        math.isnan(v) for v in filled.values()
    )
    per_user = got.per_user_pandas().set_index("user")[f"filled@{K}"]
    for user, want in filled.items():
        v = per_user.get(user, math.nan)
        assert (math.isnan(v) and math.isnan(want)) or v == pytest.approx(want), user


def _spec(entry: names.BeyondEntry) -> names.BeyondSpec:
    return names.BeyondSpec(f"{entry.name}@{K}", entry.name, K)


@pytest.mark.parametrize(
    ("declared", "why"),
    [
        ({"reduction": "catalogue", "reads": None}, "declares no reads="),
        ({"reduction": "catalogue", "reads": ("exposure", "truth")}, "declares no reads="),
        ({"reads": ("pooled_history",)}, "pools each user's training items"),
        ({"reads": ("slots",)}, "pools the slots of every list"),
        ({"reads": ("catalogue",)}, "catalogue='recommended'"),
    ],
)
def test_the_spark_door_refuses_what_an_entry_declares_it_cannot_serve(
    declared: Any, why: str
) -> None:
    """No Spark session needed: the refusal is decided before any job, from the entry."""
    from receval.beyond.settings import BeyondOptions
    from receval.exceptions import ReceValError
    from receval.spark import beyond as spark_beyond

    entry = dataclasses.replace(FILLED, **declared)
    options = BeyondOptions(catalogue="recommended")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(names.ENTRIES, entry.name, entry)
        with pytest.raises(
            ReceValError,
            match=rf"^metric 'filled@{K}' is not available with "
            rf"engine='spark': .*{why}",
        ) as err:
            spark_beyond.check([_spec(entry)], options)
    assert "\n" not in str(err.value)


def test_the_spark_door_serves_what_the_entries_declare(planted: Any) -> None:
    """What the driver collects and sends follows the declarations: a planted entry that
    declares the training popularity, the user's history or the catalogue is sent them."""
    from receval.beyond.settings import BeyondOptions
    from receval.spark import beyond as spark_beyond

    o = BeyondOptions()
    for reads, sent in [
        ((), set()),
        (("popularity",), {"popularity"}),
        (("history", "groups"), {"history"}),
        (("catalogue",), {"catalogue"}),
    ]:
        entry = dataclasses.replace(FILLED, reads=reads)
        names.ENTRIES[entry.name] = entry
        spec = _spec(entry)
        assert spark_beyond.why_not(spec, o) is None
        got = {
            w for w in ("popularity", "history", "catalogue") if spark_beyond.reads([spec], o, w)
        }
        assert got == sent, reads
        assert spark_beyond.needs_catalogue([spec], o) == ("catalogue" in sent)


def test_the_inputs_asked_and_the_fairness_section_read_the_entries(planted: Any) -> None:
    """``check_inputs`` asks for what an entry reads under the switches (``reads_if``); the
    report's fairness section shows an entry that declares ``fairness``."""
    from receval.beyond.attach import check_inputs
    from receval.beyond.settings import BeyondOptions
    from receval.exceptions import ReceValError
    from receval.report.fairness import fairness_names

    def reads_if(o: BeyondOptions) -> tuple[str, ...]:
        return ("pairs",) if o.similarity == "cooccurrence" else ("groups",)

    entry = dataclasses.replace(FILLED, reads=(), reads_if=reads_if, fairness=True)
    names.ENTRIES[entry.name] = entry
    spec = _spec(entry)
    check_inputs([spec], BeyondOptions(), has_train=False, has_features=True)
    with pytest.raises(ReceValError, match="needs item groups"):
        check_inputs([spec], BeyondOptions(), has_train=True, has_features=False)
    with pytest.raises(ReceValError, match="needs the training data"):
        check_inputs(
            [spec], BeyondOptions(similarity="cooccurrence"), has_train=False, has_features=True
        )
    assert fairness_names([f"P@{K}", f"filled@{K}", f"distinct@{K}"]) == [f"filled@{K}"]


def test_every_entry_reads_what_the_door_knows_and_asks_for_what_it_needs() -> None:
    """Each built-in entry's reads are names of ``READS``, and under the default switches
    imply at least the inputs it declares in ``needs``."""
    from receval.beyond.attach import TRAIN_READS
    from receval.beyond.settings import BeyondOptions

    for entry in names.ENTRIES.values():
        read = entry.reading(BeyondOptions())
        assert read <= set(names.READS), entry.name
        implied = {"train" for _ in read & TRAIN_READS} | (read & {"truth", "groups", "features"})
        assert set(entry.needs) <= implied, entry.name


@pytest.mark.slow
def test_rectools_serendipity_reads_no_pairs_and_is_computed_by_the_spark_door(
    spark: Any,
) -> None:
    """``serendipity="rectools"`` declares no similarity: under
    ``similarity="cooccurrence"`` the Spark door computes it (the local engine's bits)
    instead of refusing it for reading every training pair."""
    pytest.importorskip("pyspark", reason="the Spark engine needs pyspark (receval[spark])")
    truth, preds, kw = _frames(spark, "plain")
    kw["beyond"] = {"serendipity": "rectools", "similarity": "cooccurrence"}
    metrics = [f"serendipity@{K}"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = receval.evaluate(truth, preds, metrics, engine="spark", **kw)
        local = receval.evaluate(
            truth.toPandas(), preds.toPandas(), metrics, **{**kw, "train": kw["train"].toPandas()}
        )
    assert got.summary == local.summary and not math.isnan(got.summary[metrics[0]])


def test_the_fairness_section_shows_the_fairness_calibration_and_exposure_entries() -> None:
    """The entries that declare ``fairness`` are the ones the section showed by name."""
    from receval.beyond.fair_compute import CALIBRATION, EXPOSURE, FAIRNESS

    declared = {n for n, e in names.ENTRIES.items() if e.fairness}
    assert declared == {*FAIRNESS, *CALIBRATION, *EXPOSURE}
