"""Debiased (IPS / SNIPS) offline metrics: ``evaluate(..., propensity=, debias=)`` (issue 22,
part 2): the oracle of tests/reference/debias_oracle.py, uniform propensities giving today's
numbers bit for bit, a popularity-driven world where the naive metric ranks two models the
wrong way round, the options recorded, the refusals, compare and the command line."""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from torch_device import TORCH_DEVICE

import receval
from receval.cli import main
from receval.debias import estimate_gamma
from receval.exceptions import ReceValError
from tests.reference import debias_oracle as oracle

pytestmark = pytest.mark.torch_device

METRICS = ["P@5", "R@5", "nDCG@5", "AP@5", "RBP@0.8", "hit@5", "R@3", "nDCG@20"]
ORACLE = [("P", 5, 0.0), ("R", 5, 0.0), ("nDCG", 5, 0.0), ("AP", 5, 0.0), ("RBP", None, 0.8),
          ("HR", 5, 0.0), ("R", 3, 0.0), ("nDCG", 20, 0.0)]


def _inputs(seed: int, n_users: int = 25, n_items: int = 40) -> tuple[pd.DataFrame, ...]:
    rng = np.random.default_rng(seed)
    truth = pd.DataFrame({"user": rng.integers(0, n_users, 120),
                          "item": rng.integers(0, n_items, 120)}).drop_duplicates(
                              ["user", "item"], ignore_index=True)
    truth["p"] = rng.uniform(0.02, 1.0, len(truth))
    preds = pd.DataFrame({"user": np.repeat(np.arange(n_users), 12),
                          "item": rng.integers(0, n_items, 12 * n_users)}).drop_duplicates(
                              ["user", "item"], ignore_index=True)
    preds["score"] = rng.permutation(len(preds)).astype(float)  # distinct: one ranking
    train = pd.DataFrame({"user": 1000 + rng.integers(0, 80, 500),
                          "item": rng.integers(0, n_items + 5, 500)})
    return truth, preds, train


def _rows(frame: pd.DataFrame, cols: list[str]) -> list[tuple]:
    return list(frame[cols].itertuples(index=False, name=None))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("debias", ["ips", "snips"])
@pytest.mark.parametrize("clip", [None, 4.0])
def test_column_propensity_matches_the_oracle(seed: int, debias: str, clip: float | None) -> None:
    truth, preds, _ = _inputs(seed)
    got = receval.evaluate(truth, preds, METRICS, debias=debias, propensity="p",
                           propensity_clip=clip)
    want = oracle.evaluate(_rows(truth, ["user", "item", "p"]),
                           _rows(preds, ["user", "item", "score"]), ORACLE,
                           snips=debias == "snips", clip=clip)
    for name, spec in zip(METRICS, ORACLE, strict=True):
        assert got.summary[name] == pytest.approx(want[spec], rel=1e-12, abs=1e-15), name


@pytest.mark.parametrize("gamma", [1.5, 0.0])
@pytest.mark.parametrize("engine", ["numba", "torch"])
def test_popularity_propensity_matches_the_oracle_on_both_engines(gamma: float,
                                                                   engine: str) -> None:
    if engine == "torch":
        pytest.importorskip("torch")
    truth, preds, train = _inputs(5)
    prop = oracle.popularity_propensity(train["item"].tolist(), gamma)
    top = max(train["item"].value_counts())
    # an item never trained on counts as one training row
    truth["pop"] = [prop.get(i, (1 / top) ** ((gamma + 1) / 2)) for i in truth["item"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = receval.evaluate(truth, preds, METRICS, debias="snips", engine=engine,
                               propensity=("popularity", gamma), train=train)
    want = oracle.evaluate(_rows(truth, ["user", "item", "pop"]),
                           _rows(preds, ["user", "item", "score"]), ORACLE, snips=True)
    for name, spec in zip(METRICS, ORACLE, strict=True):
        assert got.summary[name] == pytest.approx(want[spec], rel=1e-12, abs=1e-15), name
    assert got.options["propensity"] == {"model": "popularity", "gamma": gamma}


@pytest.mark.parametrize("debias", ["ips", "snips"])
def test_uniform_propensity_is_todays_numbers_bit_for_bit(debias: str) -> None:
    truth, preds, _ = _inputs(3)
    for options in ({}, {"users": "both", "empty": "skip"}, {"profile": "trec_eval"}):
        plain = receval.evaluate(truth, preds, METRICS, **options)
        got = receval.evaluate(truth, preds, METRICS, debias=debias, propensity="uniform",
                               **options)
        assert got.summary == plain.summary
        pd.testing.assert_frame_equal(got.per_user, plain.per_user, check_exact=True)
        assert got.options["propensity"] == "uniform" and got.options["debias"] == debias


@pytest.mark.filterwarnings("ignore::receval.exceptions.ReceValWarning")
@pytest.mark.parametrize("options", [
    {}, {"score_threshold": 150.0}, {"protocol": "known"}, {"max_list": 4},
    {"truth_scope": "predicted"}, {"recall_denominator": "capped"},
    {"ap_normalizer": "relevant"}, {"ap_normalizer": "hits"}, {"ap_normalizer": "k"},
    {"ap_normalizer": "min_returned_relevant"},
    {"precision_denominator": "returned"}, {"relevance_threshold": 3.0},
    {"users": "union", "empty": "skip"}, {"users": "relevant"}, {"ties": "item"},
    {"empty": "one"},
])
def test_unit_weights_reduce_to_todays_metrics(options: dict) -> None:
    truth, preds, _ = _inputs(4)
    truth["one"] = 1.0
    truth["rating"] = np.arange(len(truth)) % 5 + 1.0
    preds["score"] = np.floor(preds["score"] / 3)  # ties, for ties="item"
    plain = receval.evaluate(truth, preds, METRICS, **options)
    for debias in ("ips", "snips"):
        got = receval.evaluate(truth, preds, METRICS, debias=debias, propensity="one",
                               **options)
        for name in METRICS:
            assert got.summary[name] == pytest.approx(plain.summary[name], rel=1e-13,
                                                      nan_ok=True), name
        np.testing.assert_allclose(got.per_user[METRICS].to_numpy(),
                                   plain.per_user[METRICS].to_numpy(), rtol=1e-13)


def _world(seed: int = 7, n_items: int = 400, n_users: int = 400, n_rel: int = 40
           ) -> tuple[pd.DataFrame, ...]:
    """Every user likes ``n_rel`` items drawn uniformly; a liked item is observed with
    probability ``n_i / max n`` (Yang et al.'s model with gamma = 1), ``n_i`` its training
    rows. Model ``a`` ranks the user's 3 most popular liked items first, model ``b`` its 6
    least popular: b is twice as good, but its hits are rarely observed."""
    rng = np.random.default_rng(seed)
    pop = np.ceil(1000.0 / np.sqrt(np.arange(n_items) + 1)).astype(int)
    p = pop / pop.max()
    train = pd.DataFrame({"user": -1 - np.arange(pop.sum()),
                          "item": np.repeat(np.arange(n_items), pop)})
    full, observed, a, b = [], [], [], []
    for u in range(n_users):
        liked = np.sort(rng.choice(n_items, n_rel, replace=False))  # item 0 most popular
        full += [(u, i) for i in liked]
        observed += [(u, i) for i in liked[rng.random(n_rel) < p[liked]]]
        fill = rng.choice(np.setdiff1d(np.arange(n_items), liked), 10, replace=False)
        for ranked, run in ((list(liked[:3]) + list(fill[:7]), a),
                            (list(liked[-6:]) + list(fill[:4]), b)):
            run += [(u, i, 10.0 - r) for r, i in enumerate(ranked)]
    cols = ["user", "item"]
    obs = pd.DataFrame(observed, columns=cols)
    obs["p"] = p[obs["item"].to_numpy()]
    return (pd.DataFrame(full, columns=cols), obs, train,
            pd.DataFrame(a, columns=[*cols, "score"]), pd.DataFrame(b, columns=[*cols, "score"]))


#: docs/debiased-metrics.md, "A world where the truth is known": metric -> (a full, a naive,
#: a SNIPS, a IPS, b full, b naive, b SNIPS, b IPS), rounded to 3 places
WORLD_TABLE = {
    "P@10": (0.300, 0.094, 0.039, 0.322, 0.600, 0.032, 0.049, 0.601),
    "R@10": (0.075, 0.245, 0.114, 0.853, 0.150, 0.081, 0.120, 1.538),
    "nDCG@10": (0.469, 0.291, 0.107, 0.928, 0.727, 0.070, 0.094, 1.321),
    "AP@10": (0.300, 0.203, 0.040, 0.853, 0.600, 0.037, 0.061, 1.325),
    "RBP@0.8": (0.488, 0.162, 0.057, 0.528, 0.738, 0.040, 0.055, 0.753),
}


@pytest.mark.parametrize("propensity", ["p", ("popularity", 1.0)])
def test_debiased_metrics_in_a_world_where_the_truth_is_known(propensity: object) -> None:
    """IPS (absolute propensities) ranks the models as full information does on every metric,
    and its P and RBP (no relevant count in the denominator) are nearer the full value than
    the naive metric; SNIPS recall (a ratio of weights) ranks them right and is nearer too.
    The scale-free SNIPS forms of nDCG and RBP are not estimates of the full-information
    value: here they rank a first (the docs' table says so)."""
    full, obs, train, a, b = _world()
    metrics = list(WORLD_TABLE)
    values = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, run in (("a", a), ("b", b)):
            values[name, "full"] = receval.evaluate(full, run, metrics).summary
            values[name, "naive"] = receval.evaluate(obs, run, metrics,
                                                     users="predictions").summary
            for debias in ("snips", "ips"):
                values[name, debias] = receval.evaluate(
                    obs, run, metrics, users="predictions", debias=debias,
                    propensity=propensity, train=train).summary
    for m in metrics:
        shown = tuple(round(values[x, k][m], 3) for x in "ab"
                      for k in ("full", "naive", "snips", "ips"))
        assert shown == WORLD_TABLE[m], m
        assert values["b", "full"][m] > values["a", "full"][m], m
        assert values["b", "naive"][m] < values["a", "naive"][m], m  # the naive metric: wrong
        assert values["b", "ips"][m] > values["a", "ips"][m], m  # IPS: right
    for m in ("P@10", "RBP@0.8"):
        for model in ("a", "b"):
            truth_value = values[model, "full"][m]
            assert abs(values[model, "ips"][m] - truth_value) \
                < abs(values[model, "naive"][m] - truth_value), (model, m)
    assert values["b", "snips"]["R@10"] > values["a", "snips"]["R@10"]
    for model in ("a", "b"):
        truth_value = values[model, "full"]["R@10"]
        assert abs(values[model, "snips"]["R@10"] - truth_value) \
            < abs(values[model, "naive"]["R@10"] - truth_value)


def test_estimated_gamma_is_recorded_and_recovers_a_known_exponent() -> None:
    counts = {1: 1, 2: 2, 3: 4, 4: 8, 5: 16, 6: 32}  # item -> training rows
    train = np.repeat(list(counts), list(counts.values()))
    shown = np.repeat(list(counts), [n ** 2 for n in counts.values()])  # f(n) = n^2
    # the 0.5% most popular items are left out, as Yang et al. fit it: item 6 here
    assert estimate_gamma(train, shown) == pytest.approx(2.0, rel=1e-12)
    truth, preds, tr = _inputs(6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = receval.evaluate(truth, preds, ["R@5"], debias="ips", train=tr,
                               propensity=("popularity", "estimate"), propensity_clip=10)
    gamma = got.options["propensity"]["gamma"]
    assert got.options["propensity"]["gamma_estimated"] is True and np.isfinite(gamma)
    assert got.options["propensity_clip"] == 10.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = receval.evaluate(truth, preds, ["R@5"], debias="ips", train=tr,
                                 propensity=("popularity", gamma), propensity_clip=10)
    assert again.summary == got.summary


@pytest.mark.parametrize("propensity", ["uniform", "p", ("popularity", "estimate")])
def test_the_request_is_recorded_with_the_plan_never_after(
        monkeypatch: pytest.MonkeyPatch, propensity: object) -> None:
    """record_profile writes the options once, the fitted gamma included: a read-only view
    put in place right after it stays (debias used to update the options afterwards)."""
    import types

    from receval import evaluation, finalize

    def once(result: Any, *args: Any, **kwargs: Any) -> None:
        finalize.record_profile(result, *args, **kwargs)
        result.options = types.MappingProxyType(result.options)

    truth, preds, tr = _inputs(6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = receval.evaluate(truth, preds, ["R@5", "nDCG@5"], debias="snips", train=tr,
                                 propensity=propensity, propensity_clip=10)
        monkeypatch.setattr(evaluation, "record_profile", once)
        got = receval.evaluate(truth, preds, ["R@5", "nDCG@5"], debias="snips", train=tr,
                               propensity=propensity, propensity_clip=10)
    assert isinstance(got.options, types.MappingProxyType)
    assert dict(got.options) == plain.options and got.summary == plain.summary
    assert got.options["debias"] == "snips" and got.options["propensity_clip"] == 10.0
    if propensity == "p":
        assert got.options["propensity"] == {"model": "column", "column": "p"}
    elif propensity != "uniform":
        assert got.options["propensity"]["gamma_estimated"] is True
        assert np.isfinite(got.options["propensity"]["gamma"])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"debias": "ips", "propensity": "p", "metrics": ["MRR"]},
     "metric 'MRR' has no IPS form (1 such metric(s)); debias= takes the families P, R, "
     "nDCG, AP, RBP, hit (hit rate)"),
    ({"debias": "ips", "propensity": "nosuch"}, "propensity='nosuch' names no usable truth"),
    ({"debias": "ips", "propensity": "zero"}, "propensity 'zero': 1 relevant truth row(s) have "
                                              "a propensity outside (0, 1] or none"),
    ({"debias": "ips"}, "debias='ips' needs propensity="),
    ({"debias": "dr", "propensity": "p"}, "debias='dr' is not one of 'ips', 'snips'"),
    ({"debias": "ips", "propensity": ("popularity", 1.0)}, "needs the training data"),
    ({"debias": "ips", "propensity": ("popularity", -3)}, "gamma must be a number >= -1"),
    ({"debias": "ips", "propensity": "p", "propensity_clip": 0.5},
     "propensity_clip=0.5 must be a number >= 1"),
    ({"propensity": "p"}, "pass debias='ips' or debias='snips' too"),
    ({"debias": "ips", "propensity": "p", "ties": "average"}, "ties='average' is not"),
    ({"debias": "ips", "propensity": "p", "engine": "spark"}, "not available on Spark"),
    ({"debias": "ips", "propensity": "p", "discount": "log2_max2"},
     "debias= with discount='log2_max2' is not available"),
    ({"debias": "ips", "propensity": "p", "ideal": "k"},
     "debias= with ideal='k' is not available"),
])
def test_refusals_are_one_line(kwargs: dict, message: str) -> None:
    truth, preds, _ = _inputs(0)
    truth["zero"] = truth["p"]
    truth.loc[3, "zero"] = 0.0
    metrics = kwargs.pop("metrics", ["R@5"])
    if kwargs.get("engine") == "spark":  # without pyspark, its install hint comes first
        pytest.importorskip("pyspark", reason="the Spark engine needs pyspark")
    with pytest.raises(ReceValError) as info:
        receval.evaluate(truth, preds, metrics, **kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)
    if kwargs.get("propensity") == "zero":  # the offending row is named
        user, item = truth.loc[3, "user"], truth.loc[3, "item"]
        assert f"(first: 0.0 for user {int(user)}, item {int(item)})" in str(info.value)


def test_compare_passes_the_debiasing_through() -> None:
    _full, obs, train, a, b = _world(n_users=150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = receval.compare(obs, {"a": a, "b": b}, ["P@10"], baseline="a", users="predictions",
                            debias="ips", propensity=("popularity", 1.0), train=train)
        alone = receval.evaluate(obs, b, ["P@10"], users="predictions", debias="ips",
                                 propensity=("popularity", 1.0), train=train)
    assert c.table.iloc[0]["mean"] == pytest.approx(alone.summary["P@10"], rel=1e-12)
    assert c.table.iloc[0]["delta"] > 0


def test_compare_refuses_a_gamma_fitted_per_model(tmp_path) -> None:
    truth, preds, train = _inputs(1)
    with pytest.raises(ReceValError, match="weigh each model by a gamma fitted"):
        receval.compare(truth, {"a": preds, "b": preds}, ["R@5"], debias="ips", train=train,
                        propensity=("popularity", "estimate"))
    for name, frame in (("truth", truth), ("a", preds), ("b", preds), ("train", train)):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    out = CliRunner().invoke(main, [
        "compare", "-t", str(tmp_path / "truth.csv"), "-p", str(tmp_path / "a.csv"), "-p",
        str(tmp_path / "b.csv"), "-m", "R@5", "--train", str(tmp_path / "train.csv"),
        "--debias", "ips", "--propensity", "popularity:estimate"])
    assert out.exit_code == 2 and "popularity:G" in out.output


def test_command_line_flags(tmp_path) -> None:
    truth, preds, train = _inputs(2)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    preds.to_csv(tmp_path / "a.csv", index=False)
    train.to_csv(tmp_path / "train.csv", index=False)
    runner = CliRunner()
    base = ["evaluate", "-t", str(tmp_path / "truth.csv"), "-p", str(tmp_path / "a.csv"),
            "-m", "R@5", "-m", "nDCG@5", "--format", "json"]
    out = runner.invoke(main, [*base, "--debias", "snips", "--propensity", "p",
                               "--propensity-clip", "8"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    want = receval.evaluate(truth, preds, ["R@5", "nDCG@5"], debias="snips", propensity="p",
                            propensity_clip=8)
    assert got["summary"] == pytest.approx(want.summary, rel=1e-12)
    assert got["options"]["propensity"] == {"model": "column", "column": "p"}
    out = runner.invoke(main, [*base, "--debias", "ips", "--propensity", "popularity:1.5",
                               "--train", str(tmp_path / "train.csv"), "--silence",
                               "train-overlap", "--silence", "train-items"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["options"]["propensity"]["gamma"] == 1.5
    out = runner.invoke(main, [*base[:-2], "--debias", "ips", "--propensity", "p",
                               "--propensity-clip", "8"])
    assert "debias=ips, propensity=p, propensity_clip=8" in out.output  # beside the table
    out = runner.invoke(main, [*base, "--debias", "ips", "--propensity", "nosuch"])
    assert out.exit_code == 2 and "no column 'nosuch'" in out.output
    out = runner.invoke(main, [*base, "--debias", "ips", "--propensity", "popularity:x"])
    assert out.exit_code == 2 and "popularity:GAMMA" in out.output
    preds.assign(score=-preds["score"]).to_csv(tmp_path / "b.csv", index=False)
    out = runner.invoke(main, ["compare", "-t", str(tmp_path / "truth.csv"), "-p",
                               str(tmp_path / "a.csv"), "-p", str(tmp_path / "b.csv"),
                               "-m", "R@5", "--debias", "snips", "--propensity", "p",
                               "--format", "json"])
    assert out.exit_code == 0, out.output
    assert f"{want.summary['R@5']:.4f}"[:5] in out.output or "R@5" in out.output
    # several models, one fitted gamma each: refused (issue 32); one model: the gamma shown
    two = ["evaluate", "-t", str(tmp_path / "truth.csv"), "-p", str(tmp_path / "a.csv"),
           "-p", str(tmp_path / "b.csv"), "-m", "R@5", "--train", str(tmp_path / "train.csv"),
           "--debias", "snips", "--propensity", "popularity:estimate"]
    out = runner.invoke(main, two)
    assert out.exit_code == 2 and out.output.count("\n") == 1
    assert "popularity:estimate with 2 --predictions files" in out.output
    out = runner.invoke(main, [*base[:-2], "--debias", "snips", "--propensity", "p",
                               "--propensity-clip", "8"])
    assert out.exit_code == 0, out.output
    d = want.counts["debias"]
    assert (f"debias=snips weights: {d['rows']:,} relevant truth rows, effective sample size "
            f"{d['ess']:,.1f}") in " ".join(out.stdout.split())


def test_the_doc_example_runs() -> None:
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "debiased-metrics.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert len(blocks) == 4  # the debiased metrics, the diagnostics; two stratified evaluations
    for block in blocks:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            exec(compile(block, "docs/debiased-metrics.md", "exec"), {})


def test_torch_and_numba_agree_bit_for_bit() -> None:
    pytest.importorskip("torch")
    truth, preds, _ = _inputs(8)
    got = {engine: receval.evaluate(truth, preds, METRICS, debias="snips", propensity="p",
                                    engine=engine) for engine in ("numba", "torch")}
    pd.testing.assert_frame_equal(got["numba"].per_user, got["torch"].per_user,
                                  check_exact=True)
    assert got["numba"].summary == got["torch"].summary


def test_string_ids_and_rows_of_other_users_in_the_column() -> None:
    truth, preds, _ = _inputs(9)
    want = receval.evaluate(truth, preds, METRICS, debias="ips", propensity="p")
    for frame in (truth, preds):
        frame["user"] = "u" + frame["user"].astype(str)
        frame["item"] = "i" + frame["item"].astype(str)
    got = receval.evaluate(truth, preds, METRICS, debias="ips", propensity="p")
    assert got.summary == pytest.approx(want.summary, rel=1e-12)  # users in another order
    # a truth row that is not relevant (below the threshold) brings its propensity along
    truth["rating"] = 1.0
    truth.loc[0, "rating"], truth.loc[0, "p"] = 0.0, 0.0  # not relevant: its 0 is not read
    got = receval.evaluate(truth, preds, METRICS, debias="ips", propensity="p",
                           relevance_threshold=1)
    assert all(np.isfinite(v) for v in got.summary.values())


def _matrix(seed: int) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame, pd.DataFrame]:
    """A score matrix (distinct scores: one ranking), its long table, a truth with a
    propensity column (an item outside the matrix's columns and a user without a row
    included) and training rows."""
    rng = np.random.default_rng(seed)
    scores = rng.permutation(18 * 25).reshape(18, 25).astype(np.float64)
    long = pd.DataFrame({"user": np.repeat(np.arange(18), 25), "item": np.tile(np.arange(25), 18),
                         "score": scores.ravel()})
    truth = pd.DataFrame({"user": rng.integers(0, 20, 90),
                          "item": rng.integers(0, 27, 90)}).drop_duplicates(
                              ["user", "item"], ignore_index=True)
    truth["p"] = rng.uniform(0.05, 1.0, len(truth))
    train = pd.DataFrame({"user": 1000 + rng.integers(0, 50, 300),
                          "item": rng.integers(0, 27, 300) ** 2 % 29})
    return truth, scores, long, train


@pytest.mark.parametrize("debias", ["ips", "snips"])
@pytest.mark.parametrize("propensity", ["p", ("popularity", 1.5), ("popularity", "estimate")])
def test_evaluate_scores_gives_evaluates_numbers_on_the_long_table(
        debias: str, propensity: object) -> None:
    pytest.importorskip("torch")
    truth, scores, long, train = _matrix(11)
    kwargs = {"debias": debias, "propensity": propensity, "propensity_clip": 12.0,
              "train": train, "silence": ["id-mismatch", "train-items", "train-overlap"]}
    want = receval.evaluate(truth, long, METRICS, **kwargs)
    got = receval.evaluate_scores(truth, scores, METRICS, device=TORCH_DEVICE, **kwargs)
    plain = receval.evaluate(truth, long, METRICS, silence=["id-mismatch"])
    assert got.summary != plain.summary  # weighed
    for name in METRICS:
        assert got.summary[name] == pytest.approx(want.summary[name], rel=1e-12, abs=1e-15)
    pd.testing.assert_frame_equal(  # evaluate_scores lists the users in the truth's order
        got.per_user.sort_values("user", ignore_index=True), want.per_user,
        check_exact=False, rtol=1e-12)
    for key in ("debias", "propensity", "propensity_clip"):
        assert got.options[key] == want.options[key], key
    g, w = got.counts["debias"], want.counts["debias"]  # the weights' diagnostics, both doors
    assert {k: g[k] for k in ("estimator", "rows", "at_clip", "above_range")} == \
        {k: w[k] for k in ("estimator", "rows", "at_clip", "above_range")}
    for key in ("ess", "max_weight", "max_weight_share", "mean_weight"):
        assert g[key] == pytest.approx(w[key], rel=1e-12), key


def test_evaluate_scores_refuses_in_one_line_as_evaluate_does() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
                            ({"debias": "ips"}, "needs propensity="),
                            ({"debias": "ips", "propensity": ("popularity", 1.0)},
                             "needs the training data"),
                            ({"debias": "ips", "propensity": "p", "metrics": ["MRR"]},
                             "has no IPS form"),
                            ({"debias": "ips", "propensity": "nosuch"},
                             "propensity='nosuch' names no usable truth column"),
                            ({"debias": "ips", "propensity": "p", "ties": "average"},
                             "ties='average' is not available")]
    for kwargs, message in cases:
        metrics = kwargs.pop("metrics", ["P@1"])
        with pytest.raises(ReceValError, match=message.replace("(", r"\(")) as info:
            receval.evaluate_scores({"user": [0], "item": [1], "p": [0.5]},
                                    np.array([[0.1, 0.9]]), metrics, device=TORCH_DEVICE, **kwargs)
        assert "\n" not in str(info.value)


def test_evaluate_scores_uniform_is_todays_numbers_bit_for_bit() -> None:
    pytest.importorskip("torch")
    truth, scores, _, _ = _matrix(12)
    plain = receval.evaluate_scores(truth, scores, METRICS, device=TORCH_DEVICE,
                                    silence=["id-mismatch"])
    got = receval.evaluate_scores(truth, scores, METRICS, device=TORCH_DEVICE, debias="snips",
                                  propensity="uniform", silence=["id-mismatch"])
    assert got.summary == plain.summary
    assert got.options["debias"] == "snips" and got.options["propensity"] == "uniform"
    assert "debias" not in plain.options


@pytest.mark.parametrize("options", [{"exclude_train": True}, {"max_list": 7},
                                     {"users": "union"}, {"recall_denominator": "capped"}])
def test_evaluate_scores_matches_evaluate_under_the_options(options: dict) -> None:
    pytest.importorskip("torch")
    truth, scores, long, _ = _matrix(3)
    rng = np.random.default_rng(1)
    train = pd.DataFrame({"user": rng.integers(0, 18, 60),
                          "item": rng.integers(0, 25, 60)}).drop_duplicates()
    kwargs = {"debias": "snips", "propensity": "p", "train": train, **options}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = receval.evaluate(truth, long, METRICS, **kwargs)
        got = receval.evaluate_scores(truth, scores, METRICS, device=TORCH_DEVICE, **kwargs)
    for name in METRICS:
        assert got.summary[name] == pytest.approx(want.summary[name], rel=1e-12, abs=1e-15)


# ---- issue 32: SNIPS forms that are estimators (scale-free, inside the range) ----------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PROPERTY_METRICS = ["P@3", "R@3", "nDCG@3", "AP@3", "RBP@0.5", "hit@3", "nDCG@10"]


@st.composite
def _small_runs(draw: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A few users, items 0..7; truth rows with a propensity ``p`` in (0, 1]; ranked lists
    with distinct scores (users without a list included)."""
    n_users = draw(st.integers(1, 4))
    truth_rows, pred_rows = [], []
    for u in range(n_users):
        items = draw(st.lists(st.integers(0, 7), min_size=1, max_size=6, unique=True))
        props = draw(st.lists(st.floats(1e-6, 1.0), min_size=len(items), max_size=len(items)))
        truth_rows += [(u, i, p) for i, p in zip(items, props, strict=True)]
        listed = draw(st.permutations(range(8)))[:draw(st.integers(0, 8))]
        pred_rows += [(u, i, float(len(listed) - r)) for r, i in enumerate(listed)]
    if not pred_rows:
        pred_rows = [(0, 0, 1.0)]
    return (pd.DataFrame(truth_rows, columns=["user", "item", "p"]),
            pd.DataFrame(pred_rows, columns=["user", "item", "score"]))


def _quiet(*args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(*args, **kwargs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=_small_runs(), c=st.sampled_from([1e-6, 0.25, 1.0]))
def test_snips_under_a_constant_propensity_is_the_plain_metric_exactly(runs: Any,
                                                                       c: float) -> None:
    truth, preds = runs
    truth = truth.assign(p=c)
    plain = _quiet(truth, preds, PROPERTY_METRICS)
    got = _quiet(truth, preds, PROPERTY_METRICS, debias="snips", propensity="p")
    assert got.summary == plain.summary
    pd.testing.assert_frame_equal(got.per_user, plain.per_user, check_exact=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=_small_runs(), clip=st.sampled_from([None, 3.0]))
def test_snips_stays_inside_the_plain_range_and_matches_the_oracle(runs: Any,
                                                                   clip: float | None) -> None:
    truth, preds = runs
    got = _quiet(truth, preds, PROPERTY_METRICS, debias="snips", propensity="p",
                 propensity_clip=clip)
    values = got.per_user[PROPERTY_METRICS].to_numpy()
    assert ((values >= 0) & (values <= 1)).all()
    assert got.counts["debias"]["above_range"] == {}
    specs = [("P", 3, 0.0), ("R", 3, 0.0), ("nDCG", 3, 0.0), ("AP", 3, 0.0),
             ("RBP", None, 0.5), ("HR", 3, 0.0), ("nDCG", 10, 0.0)]
    want = oracle.evaluate(_rows(truth, ["user", "item", "p"]),
                           _rows(preds, ["user", "item", "score"]), specs, snips=True,
                           clip=clip)
    for name, spec in zip(PROPERTY_METRICS, specs, strict=True):
        assert got.summary[name] == pytest.approx(want[spec], rel=1e-9, abs=1e-12), name


def test_the_issues_weights_50_and_1() -> None:
    """Two relevant items weighing 50 (p = 0.02) and 1 (p = 1): normalising by the mean weight
    gives nDCG 1.2 and hit rate 1.96; the weighted ideal keeps both inside [0, 1]."""
    truth = pd.DataFrame({"user": [1, 1], "item": ["heavy", "light"], "p": [0.02, 1.0]})
    heavy_first = pd.DataFrame({"user": [1, 1], "item": ["heavy", "light"],
                                "score": [2.0, 1.0]})
    light_first = heavy_first.assign(item=["light", "heavy"])
    only_light = pd.DataFrame({"user": [1], "item": ["light"], "score": [1.0]})
    metrics = ["nDCG@2", "hit@2", "P@2", "R@2", "AP@2", "nDCG@1", "P@1"]
    best = _quiet(truth, heavy_first, metrics, debias="snips", propensity="p").summary
    assert best == {m: 1.0 for m in metrics}  # the ideal list: every form at its maximum
    swapped = _quiet(truth, light_first, metrics, debias="snips", propensity="p").summary
    d1, d2 = 1.0, 1 / np.log2(3)
    assert swapped["nDCG@2"] == pytest.approx((1 * d1 + 50 * d2) / (50 * d1 + 1 * d2))
    assert swapped["nDCG@1"] == pytest.approx(1 / 50)
    assert swapped["P@1"] == pytest.approx(1 / 50)  # the light item where the heavy could be
    assert swapped["AP@2"] == pytest.approx((1 * 1 / 1 + 50 * 51 / 2) / (50 * 50 + 1 * 51 / 2))
    assert (swapped["hit@2"], swapped["P@2"], swapped["R@2"]) == (1 / 50, 1.0, 1.0)
    light = _quiet(truth, only_light, metrics, debias="snips", propensity="p").summary
    assert light["hit@2"] == pytest.approx(1 / 50) and light["R@2"] == pytest.approx(1 / 51)
    assert light["P@2"] == pytest.approx(1 / 51 * 2 / 2)
    ips = _quiet(truth, light_first, metrics, debias="ips", propensity="p")
    assert ips.summary["hit@2"] == 1.0 and ips.summary["P@2"] == pytest.approx(25.5)
    assert ips.counts["debias"]["above_range"]["P@2"] == 1


def test_weight_diagnostics_and_the_clip_warning() -> None:
    truth = pd.DataFrame({"user": np.repeat(np.arange(100), 2),
                          "item": np.tile([0, 1], 100), "p": 1.0})
    truth.loc[0, "p"] = 1e-4  # one weight of 10,000 among 199 of 1
    preds = pd.DataFrame({"user": np.arange(100), "item": 0, "score": 1.0})
    with pytest.warns(receval.checks.DebiasWarning, match=r"propensity_clip="):
        got = receval.evaluate(truth, preds, ["P@1"], debias="snips", propensity="p")
    d = got.counts["debias"]
    w = np.r_[1e4, np.ones(199)]
    assert d["rows"] == 200 and d["max_weight"] == 1e4 and d["at_clip"] == 0
    assert d["ess"] == pytest.approx(w.sum() ** 2 / (w ** 2).sum())
    assert d["max_weight_share"] == pytest.approx(1e4 / w.sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # clipped at 2: nothing to say
        clipped = receval.evaluate(truth, preds, ["P@1"], debias="snips", propensity="p",
                                   propensity_clip=2.0)
    assert clipped.counts["debias"]["max_weight"] == 2.0
    assert clipped.counts["debias"]["at_clip"] == 1
    uniform = receval.evaluate(truth, preds, ["P@1"], debias="snips", propensity="uniform")
    assert uniform.counts["debias"]["ess"] == 200.0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=_small_runs(), options=st.sampled_from([
    {"recall_denominator": "capped"}, {"precision_denominator": "returned"},
    {"ap_normalizer": "relevant"}, {"ap_normalizer": "hits"}, {"ap_normalizer": "k"},
    {"ap_normalizer": "min_returned_relevant"}, {"max_list": 2}, {"users": "both"}]))
def test_snips_stays_inside_the_range_under_the_options(runs: Any, options: dict) -> None:
    truth, preds = runs
    got = _quiet(truth, preds, PROPERTY_METRICS, debias="snips", propensity="p", **options)
    values = got.per_user[PROPERTY_METRICS].to_numpy()
    values = values[~np.isnan(values)]
    assert ((values >= 0) & (values <= 1)).all()
    constant = _quiet(truth.assign(p=0.25), preds, PROPERTY_METRICS, debias="snips",
                      propensity="p", **options)
    assert constant.summary == _quiet(truth, preds, PROPERTY_METRICS, **options).summary
