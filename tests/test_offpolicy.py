"""receval.offpolicy: bad input, reproducibility of the intervals, diagnostics and warnings,
the simulated world where the truth is known, and the ``receval offpolicy`` command."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numba
import numpy as np
import pandas as pd
import pytest

from receval.checks import OffPolicyWeightsWarning
from receval.exceptions import ReceValError
from receval.offpolicy import Policy, estimate

sys.path.insert(0, str(Path(__file__).parent / "reference"))
import offpolicy_world

ROOT = Path(__file__).resolve().parents[1]


def _small(n: int = 200, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    log = pd.DataFrame({"request": np.repeat(np.arange(n), 2),
                        "item": rng.integers(0, 5, 2 * n), "position": np.tile([1, 2], n),
                        "reward": rng.integers(0, 2, 2 * n).astype(float),
                        "propensity": rng.uniform(0.2, 0.6, 2 * n)})
    log = log.drop_duplicates(["request", "item"])
    scores = pd.DataFrame({"request": np.repeat(np.arange(n), 5), "item": np.tile(range(5), n),
                           "score": rng.normal(size=5 * n)})
    return log, scores


# --- bad input: one line, naming the row -------------------------------------------------

@pytest.mark.parametrize(("change", "message"), [
    (lambda f: f.drop(columns="reward"), "log has no column 'reward'"),
    (lambda f: f.assign(propensity=0.0), "outside (0, 1]"),
    (lambda f: f.assign(position=0), "'position' that is not an integer >= 1"),
    (lambda f: f.assign(reward=np.nan), "'reward' that is not a finite number"),
    (lambda f: pd.concat([f, f.head(1)]), "repeating a (request, position)"),
    (lambda f: f.drop(columns="request"), "no column 'request'"),
])
def test_bad_logs_get_one_line_naming_the_row(change, message: str) -> None:
    log, scores = _small()
    with pytest.raises(ReceValError, match=None) as err:
        estimate(change(log), {"t": Policy(scores)}, n_resamples=0)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_options_and_missing_inputs_are_named() -> None:
    log, scores = _small()
    t = {"t": Policy(scores)}
    with pytest.raises(ReceValError, match="unknown estimator 'ipw'"):
        estimate(log, t, estimators=["ipw"])
    with pytest.raises(ReceValError, match="unknown option 'clipping'"):
        estimate(log, t, clipping=3)
    with pytest.raises(ReceValError, match="needs reward_model="):
        estimate(log, t, estimators=["dr"], n_resamples=0)
    with pytest.raises(ReceValError, match="needs the log's 'propensity_slate'"):
        estimate(log, t, estimators=["sips"], n_resamples=0)
    with pytest.raises(ReceValError, match="no closed form"):
        estimate(log, {"t": Policy(scores, "plackett_luce", temperature=1.0)},
                 estimators=["ips"], n_resamples=0)
    with pytest.raises(ReceValError, match="needs epsilon="):
        Policy(scores, "epsilon_greedy")
    model = pd.DataFrame({"request": [0], "item": [0], "position": [1], "prediction": [0.5]})
    with pytest.raises(ReceValError, match=r"no prediction for \d+ .*first: request 0, item 3"):
        estimate(log, t, estimators=["dr"], reward_model=model, n_resamples=0)


def test_repeated_rows_of_a_target_are_named() -> None:
    log, scores = _small()
    twice = pd.concat([scores, scores.head(1).assign(score=-5.0)], ignore_index=True)
    with pytest.raises(ReceValError, match=r"repeating a \(request, item\); first: row 1000"):
        estimate(log, {"t": Policy(twice)}, n_resamples=0)
    table = log[["request", "item", "position"]].assign(probability=0.5)
    with pytest.raises(ReceValError, match=r"repeating a \(request, item, position\)"):
        estimate(log, {"t": pd.concat([table, table.tail(1)])}, n_resamples=0)


def test_ties_in_scores_go_to_the_smaller_item_whatever_the_row_order() -> None:
    log = pd.DataFrame({"request": [1, 1], "item": ["b", "a"], "position": [1, 2],
                        "reward": [1.0, 0.0], "propensity": [0.5, 0.5]})
    scores = pd.DataFrame({"request": [1, 1, 1], "item": ["c", "b", "a"],
                           "score": [0.5, 0.5, 0.5]})
    for frame in (scores, scores.iloc[::-1]):
        row = estimate(log, {"t": Policy(frame)}, estimators=["ips"], n_resamples=0).table
        assert row["value"].iloc[0] == 0.0  # the target shows (a, b): neither row agrees
    scores.loc[scores["item"] == "b", "score"] = 0.9
    row = estimate(log, {"t": Policy(scores)}, estimators=["ips"], n_resamples=0).table
    assert row["value"].iloc[0] == 2.0  # (b, a): both agree, the click at 1 weighs 2


def test_a_log_without_request_ids_takes_user_and_served_at() -> None:
    log, scores = _small()
    log = log.assign(user=log["request"] % 7, served_at=log["request"] // 7)
    scores = scores.assign(request=list(zip(scores["request"] % 7, scores["request"] // 7,
                                            strict=True)))
    with_ids = estimate(log, {"t": Policy(_small()[1])}, estimators=["ips", "snips"],
                        n_resamples=50).table
    without = estimate(log.drop(columns="request"), {"t": Policy(scores)},
                       estimators=["ips", "snips"], n_resamples=50).table
    assert without["value"].tolist() == pytest.approx(with_ids["value"].tolist(), rel=1e-12)


@pytest.mark.parametrize("n", [3, 40])  # an insertion sort below 33 candidates, a merge sort above
def test_ties_order_the_same_in_small_and_large_candidate_sets(n: int) -> None:
    log = pd.DataFrame({"request": [1, 1], "item": ["i01", "i00"], "position": [1, 2],
                        "reward": [1.0, 1.0], "propensity": [0.5, 0.25]})
    items = [f"i{j:02d}" for j in range(n)]
    scores = pd.DataFrame({"request": 1, "item": items[::-1], "score": 0.5})
    scores.loc[scores["item"] == "i02", "score"] = 0.0  # below the ties
    row = estimate(log, {"t": Policy(scores)}, estimators=["ips"], n_resamples=0).table
    assert row["value"].iloc[0] == 0.0  # (i00, i01): neither logged row agrees
    scores.loc[scores["item"] == "i01", "score"] = 1.0
    row = estimate(log, {"t": Policy(scores)}, estimators=["ips"], n_resamples=0).table
    assert row["value"].iloc[0] == 2.0 + 4.0  # (i01, i00): both agree


def test_default_estimators_leave_dr_out_without_a_reward_model_and_say_so() -> None:
    log, scores = _small()
    r = estimate(log, {"t": Policy(scores)}, n_resamples=0)
    assert r.table["estimator"].tolist() == ["ips", "snips"]
    assert r.options["left_out"] == ["dr (no reward_model)"]


# --- reproducible intervals ----------------------------------------------------------------

def test_intervals_are_bit_reproducible_and_keyed_by_target_name() -> None:
    log, scores = _small()
    a = Policy(scores, "softmax", temperature=0.5)
    b = Policy(scores, "epsilon_greedy", epsilon=0.2)
    one = estimate(log, {"a": a, "b": b}, estimators=["ips", "snips"], n_resamples=300).table
    again = estimate(log, {"b": b, "a": a}, estimators=["snips", "ips"], n_resamples=300).table
    alone = estimate(log.sample(frac=1, random_state=3), {"a": a}, estimators=["snips"],
                     n_resamples=300).table
    key = ["target", "estimator"]
    merged = one.merge(again, on=key, suffixes=("", "_2"))
    for col in ("value", "ci_low", "ci_high"):
        assert (merged[col] == merged[f"{col}_2"]).all(), col
    row = one[(one.target == "a") & (one.estimator == "snips")].iloc[0]
    assert (row["ci_low"], row["ci_high"]) == (alone["ci_low"].iloc[0], alone["ci_high"].iloc[0])
    other = estimate(log, {"a": a}, estimators=["snips"], n_resamples=300, seed=1).table
    assert other["ci_low"].iloc[0] != row["ci_low"]
    assert row["ci_low"] <= row["value"] <= row["ci_high"]


def test_intervals_do_not_depend_on_the_thread_count() -> None:
    log, scores = _small(n=3000)
    t = {"a": Policy(scores, "softmax", temperature=0.5)}
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = estimate(log, t, estimators=["snips", "ips"], n_resamples=200).table
        numba.set_num_threads(max(2, before))
        many = estimate(log, t, estimators=["snips", "ips"], n_resamples=200).table
    finally:
        numba.set_num_threads(before)
    assert one[["ci_low", "ci_high"]].equals(many[["ci_low", "ci_high"]])


def test_bootstrap_interval_of_ips_is_close_to_the_normal_one() -> None:
    log, scores = _small(n=4000)
    row = estimate(log, {"a": Policy(scores, "softmax", temperature=1.0)}, estimators=["ips"],
                   n_resamples=2000).table.iloc[0]
    width = row["normal_high"] - row["normal_low"]
    assert abs(row["ci_low"] - row["normal_low"]) < 0.1 * width
    assert abs(row["ci_high"] - row["normal_high"]) < 0.1 * width


# --- diagnostics ---------------------------------------------------------------------------

def test_diagnostics_on_a_hand_computed_log() -> None:
    log = pd.DataFrame({"request": [1, 2, 3, 4], "item": ["a", "b", "a", "b"], "position": 1,
                        "reward": [1.0, 0.0, 0.0, 1.0], "propensity": [0.5, 0.5, 0.25, 0.5]})
    target = pd.DataFrame({"request": [1, 2, 3, 4, 4], "item": ["a", "a", "a", "b", "z"],
                           "position": 1, "probability": [1.0, 1.0, 1.0, 0.5, 0.5]})
    extra = pd.DataFrame({"request": [99], "item": ["a"], "position": [1], "probability": [1.0]})
    row = estimate(log, {"t": pd.concat([target, extra])}, estimators=["ips"],
                   n_resamples=0).table.iloc[0]
    assert row["target_rows_dropped"] == 1  # request 99 is not in the log
    w = np.array([2.0, 0.0, 4.0, 1.0])  # pi / mu on the logged rows
    assert row["value"] == pytest.approx((2.0 * 1 + 1.0 * 1) / 4)
    assert row["ess"] == pytest.approx(w.sum() ** 2 / (w ** 2).sum())
    assert row["max_weight"] == 4.0 and row["max_weight_share"] == pytest.approx(4 / 7)
    assert row["mean_weight"] == pytest.approx(7 / 4)
    assert row["support_missing"] == 1  # request 4 puts mass on 'z', never shown


def test_support_counts_requests_whose_target_mass_falls_on_items_never_shown() -> None:
    log = pd.DataFrame({"request": [1, 1, 2, 2], "item": ["a", "b", "a", "b"],
                        "position": [1, 2, 1, 2], "reward": 0.0, "propensity": 0.5})
    scores = pd.DataFrame({"request": [1, 1, 1, 2, 2, 2], "item": ["a", "b", "new"] * 2,
                           "score": [3.0, 2.0, 1.0, 3.0, 1.0, 2.0]})
    table = estimate(log, {"topk": Policy(scores),
                           "greedy": Policy(scores, "epsilon_greedy", epsilon=0.1)},
                     estimators=["ips"], n_resamples=0).table.set_index("target")
    assert table.loc["topk", "support_missing"] == 1  # only request 2 shows 'new' in its top 2
    assert table.loc["greedy", "support_missing"] == 2  # exploration reaches 'new' everywhere


def test_weights_that_blow_up_warn_naming_the_estimator_to_prefer() -> None:
    n = 2000
    log = pd.DataFrame({"request": np.arange(n), "item": np.arange(n) % 2, "position": 1,
                        "reward": 1.0, "propensity": np.where(np.arange(n) == 0, 1e-4, 0.5)})
    target = log[["request", "item", "position"]].assign(probability=1.0)
    with pytest.warns(OffPolicyWeightsWarning, match="prefer snips or sndr"):
        estimate(log, {"t": target}, estimators=["ips"], n_resamples=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        estimate(log, {"t": target}, estimators=["ips"], n_resamples=0, silence=["weights"])
        estimate(log, {"t": target}, estimators=["snips"], n_resamples=0)


# --- the simulated world: the truth is known ------------------------------------------------

@pytest.fixture(scope="module")
def sim() -> tuple:
    log, targets, truth = offpolicy_world.world()
    result = estimate(log, targets, estimators=["ips", "snips", "dm", "dr", "sndr"],
                      reward_model=offpolicy_world.reward_model(log), n_resamples=500,
                      rule="topk").table.set_index(["target", "estimator"])
    naive = {t: offpolicy_world.naive_precision(log, s) for t, s in targets.items()}
    return result, truth, naive


def test_naive_offline_metric_ranks_the_two_policies_the_wrong_way(sim: tuple) -> None:
    _, truth, naive = sim
    assert truth["personal"] > truth["popular"]
    assert naive["popular"] > naive["personal"]


@pytest.mark.parametrize("estimator", ["ips", "snips", "dr", "sndr"])
def test_off_policy_estimates_recover_the_true_value_within_their_intervals(
        sim: tuple, estimator: str) -> None:
    result, truth, _ = sim
    for target, value in truth.items():
        row = result.loc[(target, estimator)]
        assert row["ci_low"] <= value <= row["ci_high"], (target, row.to_dict(), value)
        assert row["normal_low"] <= value <= row["normal_high"], (target, value)
    assert result.loc[("personal", estimator), "value"] > result.loc[("popular", estimator),
                                                                     "value"]


def test_the_user_blind_direct_method_misses_the_personal_policy(sim: tuple) -> None:
    result, truth, _ = sim
    row = result.loc[("personal", "dm")]
    assert not row["ci_low"] <= truth["personal"] <= row["ci_high"]


# --- the command line --------------------------------------------------------------------------

def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "receval.cli", "offpolicy", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)


def test_cli_prints_the_estimates_as_csv_and_json_equal_to_python(tmp_path: Path) -> None:
    log, scores = _small()
    log.to_csv(tmp_path / "log.csv", index=False)
    scores.to_parquet(tmp_path / "new.parquet")
    done = _cli("--log", "log.csv", "--target", "new=new.parquet", "--rule", "softmax",
                "--temperature", "0.5", "-e", "ips,snips", "--resamples", "100", "-f", "json",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = pd.DataFrame(json.loads(done.stdout)["estimates"])
    want = estimate(log, {"new": Policy(scores, "softmax", temperature=0.5)},
                    estimators=["ips", "snips"], n_resamples=100).table
    assert got["value"].tolist() == want["value"].tolist()
    assert got["ci_low"].tolist() == want["ci_low"].tolist()
    done = _cli("--log", "log.csv", "--target", "new=new.parquet", "-f", "csv",
                "--resamples", "0", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.splitlines()[0].startswith("target,estimator")
    done = _cli("--log", "log.csv", "--target", "new=new.parquet", cwd=tmp_path)
    assert done.returncode == 0 and "snips" in done.stdout


@pytest.mark.parametrize(("args", "message"), [
    (("--log", "missing.csv", "--target", "t=log.csv"), "log file not found"),
    (("--log", "log.csv", "--target", "t"), "--target takes NAME=FILE"),
    (("--log", "log.csv", "--target", "t=log.csv", "-e", "nope"), "unknown estimator 'nope'"),
    (("--log", "log.csv", "--target", "t=log.csv"), "neither 'probability' nor 'score'"),
])
def test_cli_bad_input_exits_2_with_one_line(tmp_path: Path, args: tuple, message: str) -> None:
    log, _ = _small()
    log.to_csv(tmp_path / "log.csv", index=False)
    done = _cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_benchmark_runs_on_tiny_data(tmp_path: Path) -> None:
    """benchmarks/bench_offpolicy.py end to end (its numbers are in benchmarks/README.md)."""
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_offpolicy.py"),
                           "--lists", "300", "--items", "500", "--resamples", "20",
                           "--obp-rounds", "5", "--obp-items", "50", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["impressions"] == 3000 and results["receval_s"] > 0
    assert "obp" in results


def test_reward_model_rows_beyond_the_lists_and_unknown_items_are_ignored() -> None:
    log = pd.DataFrame({"request": [1, 1], "item": ["a", "b"], "position": [1, 2],
                        "reward": [1.0, 0.0], "propensity": [0.5, 0.5]})
    model = pd.DataFrame({"item": ["a", "b", "a", "b", "a", "zz"], "position": [1, 2, 2, 1, 3, 1],
                          "prediction": [0.25, 0.5, 0.125, 1.0, 9.0, 9.0]})
    target = pd.DataFrame({"request": 1, "item": ["a", "b", "new"], "position": [1, 2, 1],
                           "probability": [0.5, 1.0, 0.5]})
    with pytest.raises(ReceValError, match=r"no prediction for 1 .* item 'new', position 1"):
        estimate(log, {"t": target}, estimators=["dm"], reward_model=model, n_resamples=0)
    target = target[target["item"] != "new"]
    result = estimate(log, {"t": target}, estimators=["dm", "dr"], reward_model=model,
                      n_resamples=0)
    assert result.options["reward_model_rows_dropped"] == 1  # position 3: no list reaches it
    row = result.table
    dm = 0.5 * 0.25 + 1.0 * 0.5
    assert row["value"].tolist() == [dm, dm + (0.5 / 0.5) * (1 - 0.25) + (1.0 / 0.5) * (0 - 0.5)]
