"""receval.compare: paired tests against scipy and exact enumeration, corrections against hand
computed cases, reproducibility (model order, seeds), identical models, and the CLI."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from click.testing import CliRunner

import receval
from receval.cli import main
from receval.compare import COLUMNS
from receval.stats.corrections import adjust
from receval.stats.tests import bootstrap_test, randomization_test, t_test, wilcoxon_test

METRICS = ["P@5", "nDCG@5", "MRR"]


def _data(seed: int = 3, users: int = 80) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    rng = np.random.default_rng(seed)
    truth_rows, runs = [], {"a": [], "b": [], "c": []}
    for u in range(users):
        items = rng.choice(40, 6, replace=False)
        truth_rows += [(u, int(i)) for i in items]
        good = np.concatenate([items[:3], rng.choice(40, 7, replace=False)])
        for name, pool in (("a", rng.choice(40, 10, replace=False)), ("b", good),
                           ("c", rng.choice(40, 10, replace=False))):
            runs[name] += [(u, int(i), float(s)) for i, s in
                           zip(pool, rng.random(len(pool)), strict=True)]
    truth = pd.DataFrame(truth_rows, columns=["user", "item"])
    preds = {k: pd.DataFrame(v, columns=["user", "item", "score"]).drop_duplicates(
        ["user", "item"]) for k, v in runs.items()}
    return truth, preds


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    return _data()


def _per_user(c: receval.Comparison, model: str, metric: str) -> np.ndarray:
    return c.results[model].per_user[metric].to_numpy(dtype=float)


# --- the tests against scipy and exact enumeration ---------------------------------------


def test_t_and_wilcoxon_equal_scipy_to_1e12(data) -> None:
    truth, preds = data
    for test, reference in (("t", lambda b, a: scipy.stats.ttest_rel(b, a).pvalue),
                            ("wilcoxon", lambda b, a: scipy.stats.wilcoxon(
                                b, a, zero_method="wilcox").pvalue)):
        c = receval.compare(truth, preds, METRICS, baseline="a", test=test, n_resamples=50)
        assert len(c.table) == 2 * len(METRICS)
        for row in c.table.itertuples():
            a, b = _per_user(c, "a", row.metric), _per_user(c, row.model, row.metric)
            assert abs(row.p_value - float(reference(b, a))) <= 1e-12
            assert 0 < row.p_value < 1


def test_t_test_vectors_equal_scipy() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.random(200), rng.random(200) + 0.05
    assert abs(t_test(a, b) - scipy.stats.ttest_rel(b, a).pvalue) <= 1e-12
    assert abs(wilcoxon_test(a, b) - scipy.stats.wilcoxon(b, a).pvalue) <= 1e-12


def _exact_sign_flip_p(d: np.ndarray) -> float:
    observed = abs(d.sum())
    hits = sum(abs(np.dot(signs, d)) >= observed - 1e-12
               for signs in itertools.product((1.0, -1.0), repeat=d.size))
    return hits / 2 ** d.size


@pytest.mark.parametrize("shift", [0.0, 0.15, 0.4])
def test_randomization_matches_exact_enumeration(shift: float) -> None:
    rng = np.random.default_rng(int(shift * 100))
    d = rng.normal(shift, 0.5, 10)
    exact = _exact_sign_flip_p(d)
    resamples = 20_000
    p = randomization_test(d, resamples, np.random.default_rng(1))
    tolerance = 4 * math.sqrt(max(exact * (1 - exact), 1e-4) / resamples) + 2 / resamples
    assert abs(p - exact) <= tolerance
    assert p > 0


def test_randomization_is_never_zero() -> None:
    d = np.full(30, 0.2)  # exact p = 2 / 2**30: no resample reaches it
    assert randomization_test(d, 999, np.random.default_rng(0)) == 1 / 1000


def test_bootstrap_test_extremes() -> None:
    strong = np.full(50, 0.3) + np.linspace(0, 0.01, 50)
    means = np.random.default_rng(0).choice(strong, (999, 50)).mean(axis=1)
    assert bootstrap_test(strong, means) == 1 / 1000
    assert bootstrap_test(np.zeros(50), np.zeros(999)) == 1.0


# --- corrections -------------------------------------------------------------------------


def test_holm_hand_computed() -> None:
    # sorted .005 .01 .03 .04 -> 4x, 3x, 2x, 1x = .02 .03 .06 .04 -> running max .02 .03 .06 .06
    np.testing.assert_allclose(adjust([0.01, 0.04, 0.03, 0.005], "holm"),
                               [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
    np.testing.assert_allclose(adjust([0.5, 0.6], "holm"), [1.0, 1.0])


def test_bh_hand_computed() -> None:
    # sorted .005 .01 .03 .04 -> p m / i = .02 .02 .04 .04 -> running min from the top
    np.testing.assert_allclose(adjust([0.01, 0.04, 0.03, 0.005], "bh"),
                               [0.02, 0.04, 0.04, 0.02], rtol=1e-12)
    np.testing.assert_allclose(adjust([0.01, 0.02, 0.03, 0.04, 0.05], "bh"), [0.05] * 5,
                               rtol=1e-12)


def test_bonferroni_none_and_nan() -> None:
    np.testing.assert_allclose(adjust([0.04, np.nan, 0.01, 0.3], "bonferroni"),
                               [0.12, np.nan, 0.03, 0.9], rtol=1e-12)
    np.testing.assert_allclose(adjust([0.04, np.nan, 0.01], "holm"), [0.04, np.nan, 0.02],
                               rtol=1e-12)
    np.testing.assert_array_equal(adjust([0.04, 0.01], "none"), [0.04, 0.01])
    with pytest.raises(receval.ReceValError, match="unknown correction 'sidak'"):
        adjust([0.1], "sidak")


def test_table_corrected_across_every_row(data) -> None:
    truth, preds = data
    c = receval.compare(truth, preds, METRICS, test="t", n_resamples=50)
    assert len(c.table) == 3 * len(METRICS)  # every pair: (a, b), (a, c), (b, c)
    p = c.table["p_value"].to_numpy()
    m = len(p)
    holm = np.empty(m)
    running = 0.0
    for rank, i in enumerate(np.argsort(p)):
        running = max(running, min(1.0, (m - rank) * p[i]))
        holm[i] = running
    np.testing.assert_allclose(c.table["p_adjusted"], holm, rtol=1e-12)
    bonf = receval.compare(truth, preds, METRICS, correction="bonferroni", n_resamples=50)
    np.testing.assert_allclose(bonf.table["p_adjusted"], np.minimum(1, m * p), rtol=1e-12)


# --- the table ---------------------------------------------------------------------------


def test_columns_and_row_values(data) -> None:
    truth, preds = data
    c = receval.compare(truth, preds, METRICS, baseline="a", n_resamples=200, seed=5)
    assert tuple(c.table.columns) == COLUMNS
    assert c.options["test"] == "t" and c.options["correction"] == "holm"
    assert c.options["resamples"] == 200 and c.options["seed"] == 5
    assert c.options["ci_method"] == "paired bootstrap percentile"
    row = c.table[(c.table.model == "b") & (c.table.metric == "P@5")].iloc[0]
    a, b = _per_user(c, "a", "P@5"), _per_user(c, "b", "P@5")
    d = b - a
    assert row["n"] == 80 and row["baseline"] == "a"
    assert row["mean"] == pytest.approx(b.mean()) and row["delta"] == pytest.approx(d.mean())
    assert row["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1))
    assert (row["wins"], row["ties"], row["losses"]) == ((d > 0).sum(), (d == 0).sum(),
                                                         (d < 0).sum())
    assert row["share_better"] == pytest.approx(((d > 0).sum() + (d == 0).sum() / 2) / 80)
    assert row["ci_low"] < d.mean() < row["ci_high"]


def test_identical_models_give_p_1_and_zero_interval(data) -> None:
    truth, preds = data
    for test in ("t", "wilcoxon", "randomization", "bootstrap"):
        c = receval.compare(truth, {"a": preds["a"], "same": preds["a"]}, METRICS,
                            baseline="a", test=test, n_resamples=300)
        assert (c.table["p_value"] == 1.0).all(), test
        assert (c.table["p_adjusted"] == 1.0).all()
        assert (c.table["ci_low"] == 0.0).all() and (c.table["ci_high"] == 0.0).all()
        assert (c.table["delta"] == 0.0).all() and (c.table["ties"] == 80).all()
        assert (c.table["effect_size"] == 0.0).all()


@pytest.mark.parametrize("test", ["t", "randomization", "bootstrap"])
def test_model_order_does_not_change_anything(data, test: str) -> None:
    truth, preds = data
    forward = receval.compare(truth, preds, METRICS, test=test, n_resamples=500, seed=9)
    backward = receval.compare(truth, dict(reversed(preds.items())), METRICS, test=test,
                               n_resamples=500, seed=9)
    pd.testing.assert_frame_equal(forward.table, backward.table, check_exact=True)
    with_base = receval.compare(truth, preds, METRICS, baseline="a", test=test,
                                n_resamples=500, seed=9)
    # the same (pair, metric) gives the same numbers whatever else is in the call
    ab = forward.table[(forward.table.model == "b")].reset_index(drop=True)
    ab2 = with_base.table[(with_base.table.model == "b")].reset_index(drop=True)
    cols = ["delta", "ci_low", "ci_high", "p_value"]
    pd.testing.assert_frame_equal(ab[cols], ab2[cols], check_exact=True)


def test_seed_changes_the_streams_and_repeats_bit_for_bit(data) -> None:
    truth, preds = data
    one = receval.compare(truth, preds, ["P@5"], test="randomization", n_resamples=400, seed=1)
    again = receval.compare(truth, preds, ["P@5"], test="randomization", n_resamples=400,
                            seed=1)
    other = receval.compare(truth, preds, ["P@5"], test="randomization", n_resamples=400,
                            seed=2)
    pd.testing.assert_frame_equal(one.table, again.table, check_exact=True)
    assert not one.table["ci_low"].equals(other.table["ci_low"])


def test_results_already_computed(data) -> None:
    truth, preds = data
    results = {k: receval.evaluate(truth, v, METRICS) for k, v in preds.items()}
    from_results = receval.compare(None, results, METRICS, baseline="a", n_resamples=100)
    from_preds = receval.compare(truth, preds, METRICS, baseline="a", n_resamples=100)
    pd.testing.assert_frame_equal(from_results.table, from_preds.table, check_exact=True)


def test_bad_calls(data) -> None:
    truth, preds = data
    with pytest.raises(receval.ReceValError, match="unknown test 'z'"):
        receval.compare(truth, preds, METRICS, test="z")
    with pytest.raises(receval.ReceValError, match="baseline 'x' is not one of the models"):
        receval.compare(truth, preds, METRICS, baseline="x")
    with pytest.raises(receval.ReceValError, match="at least two models"):
        receval.compare(truth, {"a": preds["a"]}, METRICS)
    with pytest.raises(receval.ReceValError, match="needs the truth"):
        receval.compare(None, preds, METRICS)
    short = preds["b"][preds["b"]["user"] != 7]
    with pytest.raises(receval.ReceValError, match="evaluated on different users: user 7 is "
                                                   r"in 'a' only \(1 users differ in all\)"):
        receval.compare(truth, {"a": preds["a"], "b": short}, METRICS, users="both")


def test_json_has_null_for_nan() -> None:
    truth = {"user": [1], "item": [1]}
    a = {"user": [1], "item": [1], "score": [1.0]}
    b = {"user": [1], "item": [2], "score": [1.0]}
    c = receval.compare(truth, {"a": a, "b": b}, ["P@1"], baseline="a", n_resamples=10,
                        silence="no-match")
    row = json.loads(c.to_json())["rows"][0]
    assert row["n"] == 1 and row["delta"] == -1.0
    assert row["p_value"] is None and row["effect_size"] is None


# --- the command line ----------------------------------------------------------------------


def test_cli_compare(data, tmp_path: Path) -> None:
    truth, preds = data
    truth.to_csv(tmp_path / "truth.csv", index=False)
    paths = []
    for name, frame in preds.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        paths += ["-p", str(tmp_path / f"{name}.csv")]
    base = ["compare", "-t", str(tmp_path / "truth.csv"), *paths, "-m", "P@5", "-m", "MRR",
            "--baseline", "a", "--resamples", "300", "--seed", "4", "--test", "randomization"]
    runner = CliRunner()
    out = runner.invoke(main, [*base, "-f", "json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)["rows"]
    expected = receval.compare(truth, preds, ["P@5", "MRR"], baseline="a", n_resamples=300,
                               seed=4, test="randomization")
    assert rows == expected.to_dicts()
    table = runner.invoke(main, base)
    assert table.exit_code == 0 and "paired comparison" in table.stdout
    assert "paired randomization" in table.stdout and "300 resamples" in table.stdout
    md = runner.invoke(main, [*base, "-f", "markdown"])
    assert md.stdout.startswith("| model | baseline | metric |")
    csv_out = runner.invoke(main, [*base, "-f", "csv"])
    assert csv_out.stdout.splitlines()[0] == ",".join(COLUMNS)
    assert len(csv_out.stdout.splitlines()) == 1 + 2 * 2
    bad = runner.invoke(main, ["compare", "-t", str(tmp_path / "truth.csv"), "-p",
                               str(tmp_path / "a.csv"), "-m", "P@5"])
    assert bad.exit_code == 2 and "at least two --predictions" in bad.stderr
    unknown = runner.invoke(main, [*base[:-8], "--baseline", "zz"])
    assert unknown.exit_code == 2 and "baseline 'zz'" in unknown.stderr


def test_results_in_another_user_order_and_metric_spelling(data) -> None:
    truth, preds = data
    results = {k: receval.evaluate(truth, v, ["p@5"]) for k, v in preds.items()}
    shuffled = results["b"].per_user.sample(frac=1.0, random_state=0).reset_index(drop=True)
    results["b"] = receval.Result(summary=results["b"].summary, per_user=shuffled,
                                  counts=results["b"].counts, options=results["b"].options)
    got = receval.compare(None, results, ["P@5"], baseline="a", n_resamples=100)
    want = receval.compare(truth, preds, ["P@5"], baseline="a", n_resamples=100)
    pd.testing.assert_frame_equal(got.table, want.table, check_exact=True)
    with pytest.raises(receval.ReceValError, match="model 'a': its Result has no per-user "
                                                   "values of 'MRR'"):
        receval.compare(None, results, ["MRR"], baseline="a")


def test_text_outputs_mark_significance_and_neutralise_formulas(data) -> None:
    truth, preds = data
    c = receval.compare(truth, {"=cmd": preds["a"], "b": preds["b"], "c": preds["c"]},
                        ["P@5"], baseline="=cmd", n_resamples=100)
    lines = c.to_csv().splitlines()
    assert lines[1].startswith("b,'=cmd,P@5,") and lines[2].startswith("c,'=cmd,P@5,")
    assert c.to_csv(raw=True).splitlines()[1].startswith("b,=cmd,P@5,")
    md = c.to_markdown().splitlines()
    # b beats the baseline clearly (p adjusted < 0.05: starred); c does not
    adjusted = dict(zip(c.table["model"], c.table["p_adjusted"], strict=True))
    assert adjusted["b"] < 0.05 < adjusted["c"]
    assert md[2].split(" | ")[8].endswith("*") and not md[3].split(" | ")[8].endswith("*")
    assert md[-1].startswith("* adjusted p < 0.05; test: paired t")


# --- the compressed resampling (receval.stats.resample) ------------------------------------


def _exact_bootstrap_sums(x: list[float]) -> dict[int, float]:
    """The bootstrap sum's exact distribution (every sequence of n draws, equally likely), on
    a grid of 1e-9 so that float noise does not split an atom."""
    n = len(x)
    out: dict[int, float] = {}
    for draw in itertools.product(x, repeat=n):
        key = round(sum(draw) * 1e9)
        out[key] = out.get(key, 0.0) + 1 / n ** n
    return out


@pytest.mark.parametrize("heavy_min", [1, 2, 10**9])  # all binomials, mixed, all single draws
def test_bootstrap_sums_match_exact_enumeration(monkeypatch, heavy_min: int) -> None:
    from receval.stats import resample

    monkeypatch.setattr(resample, "HEAVY_MIN", heavy_min)
    x = [0.0, 0.1, 0.1, 0.5, 1.0, 1.0]
    exact = _exact_bootstrap_sums(x)
    draws = 40_000
    sums = resample.bootstrap_sums(np.array(x), draws, np.random.default_rng(7))
    keys, counts = np.unique(np.round(sums * 1e9).astype(np.int64), return_counts=True)
    seen = dict(zip(keys.tolist(), (counts / draws).tolist(), strict=True))
    assert set(seen) <= set(exact)
    for key, p in exact.items():
        assert abs(seen.get(key, 0.0) - p) <= 4.5 * math.sqrt(p * (1 - p) / draws) + 1e-4


def test_sign_flips_of_repeated_values_match_exact_binomials() -> None:
    # 70 users at |d| = 0.1 (more than one 64-bit word of flips), 3 at 0.3, 5 ties
    d = np.array([0.1] * 40 + [-0.1] * 30 + [0.3] * 2 + [-0.3] + [0.0] * 5)
    observed = 13  # 10 * sum(d)
    k1, k2 = np.arange(71), np.arange(4)
    stat = np.abs((2 * k1[:, None] - 70) + 3 * (2 * k2[None, :] - 3))
    prob = scipy.stats.binom.pmf(k1, 70, 0.5)[:, None] * scipy.stats.binom.pmf(k2, 3, 0.5)
    exact = float(prob[stat >= observed].sum())
    resamples = 20_000
    p = randomization_test(d, resamples, np.random.default_rng(3))
    assert abs(p - exact) <= 4.5 * math.sqrt(exact * (1 - exact) / resamples) + 2 / resamples


def test_bootstrap_interval_covers_the_true_mean() -> None:
    from receval.stats.intervals import bootstrap_means, percentile_interval

    rng = np.random.default_rng(11)
    trials, covered = 300, 0
    for i in range(trials):
        x = np.round(rng.exponential(1.0, 120), 2)  # true mean 1 (up to the rounding)
        low, high = percentile_interval(
            bootstrap_means(x, 999, np.random.default_rng(i)), 0.05)
        covered += low <= 1.0 <= high
    assert 0.88 <= covered / trials <= 0.99


def test_one_and_two_threads_give_the_same_bits(data) -> None:
    import numba

    from receval.stats.resample import bootstrap_sums, sign_flip_sums

    truth, preds = data
    before = numba.get_num_threads()
    x = np.round(np.random.default_rng(0).normal(0, 1, 20_000), 3)  # heavy values and a tail
    tables, sums = [], []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            tables.append([receval.compare(truth, preds, METRICS, test=t, n_resamples=5000,
                                           seed=2).table for t in ("randomization",
                                                                   "bootstrap")])
            sums.append((bootstrap_sums(x, 300, np.random.default_rng(1)),
                         sign_flip_sums(x, 300, np.random.default_rng(1))))
    finally:
        numba.set_num_threads(before)
    for one, two in zip(tables[0], tables[1], strict=True):
        pd.testing.assert_frame_equal(one, two, check_exact=True)
    np.testing.assert_array_equal(sums[0][0], sums[1][0])
    np.testing.assert_array_equal(sums[0][1], sums[1][1])


def test_cli_latex_and_strata_free_table(data, tmp_path: Path) -> None:
    truth, preds = data
    truth.to_csv(tmp_path / "truth.csv", index=False)
    paths = []
    for name in ("a", "b_x"):
        preds["a" if name == "a" else "b"].to_csv(tmp_path / f"{name}.csv", index=False)
        paths += ["-p", str(tmp_path / f"{name}.csv")]
    out = CliRunner().invoke(main, ["compare", "-t", str(tmp_path / "truth.csv"), *paths,
                                    "-m", "P@5", "--baseline", "a", "--resamples", "200",
                                    "-f", "latex"])
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert lines[0] == r"\begin{tabular}{lllrrrrrrrrrr}" and lines[-1] == r"\end{tabular}"
    c = receval.compare(truth, {"a": preds["a"], "b_x": preds["b"]}, ["P@5"], baseline="a",
                        n_resamples=200)
    row = c.table.iloc[0]
    assert lines[4].startswith(rf"b\_x & a & P@5 & {row['mean']:.4f} & ")
    assert "200 resamples; seed 0" in lines[-2]


def test_several_runs_per_model(data) -> None:
    truth, preds = data
    seeds = [preds["b"].assign(score=np.random.default_rng(i).random(len(preds["b"])))
             for i in range(3)]
    c = receval.compare(truth, {"a": preds["a"], "b": seeds}, ["P@5", "MRR"], baseline="a",
                        n_resamples=200)
    assert tuple(c.table.columns[-4:]) == ("runs", "run_sd", "baseline_runs",
                                           "baseline_run_sd")
    each = [receval.evaluate(truth, s, ["P@5", "MRR"]) for s in seeds]
    a = receval.evaluate(truth, preds["a"], ["P@5", "MRR"])
    for row in c.table.itertuples():
        summaries = [r.summary[row.metric] for r in each]
        assert row.runs == 3 and row.baseline_runs == 1 and math.isnan(row.baseline_run_sd)
        assert row.mean == pytest.approx(np.mean(summaries), abs=1e-12)
        assert row.run_sd == pytest.approx(np.std(summaries, ddof=1), abs=1e-12)
        per_user = np.mean([r.per_user[row.metric] for r in each], axis=0)
        want = scipy.stats.ttest_rel(per_user, a.per_user[row.metric]).pvalue
        assert abs(row.p_value - want) <= 1e-12
    assert "mean over its runs" in c.options["pairing"]
    assert len(c.runs["b"]) == 3 and "a" not in c.runs
    short = seeds[1][seeds[1]["user"] != 3]
    with pytest.raises(receval.ReceValError, match="'b run 1' and 'b run 2' were evaluated on "
                                                   "different users"):
        receval.compare(truth, {"a": preds["a"], "b": [seeds[0], short]}, ["P@5"],
                        users="both")


def _popular_oracle(train: pd.DataFrame, users: list, k: int) -> pd.DataFrame:
    """Most popular by hand: items by training rows (most first, ties by id), each user's own
    training items left out, the first k."""
    counts = train.groupby("item").size()
    order = sorted(counts.index, key=lambda i: (-counts[i], i))
    seen = train.groupby("user")["item"].apply(set).to_dict()
    rows = []
    for u in users:
        mine = [i for i in order if i not in seen.get(u, set())][:k]
        rows += [(u, i, float(counts[i])) for i in mine]
    return pd.DataFrame(rows, columns=["user", "item", "score"])


def test_popular_baseline_from_train(data, tmp_path: Path) -> None:
    truth, preds = data
    rng = np.random.default_rng(5)
    train = pd.DataFrame({"user": rng.integers(0, 80, 900),
                          "item": rng.zipf(1.6, 900) % 40}).drop_duplicates()
    c = receval.compare(truth, {"b": preds["b"]}, ["P@5", "MRR"], baseline="popular",
                        train=train, n_resamples=100,
                        silence=["train-items", "train-overlap"])
    assert c.table["baseline"].unique().tolist() == ["popular"]
    # as deep as the model's deepest list (MRR reads the whole list), not the cutoff 5
    depth = int(preds["b"].groupby("user").size().max())
    assert depth > 5
    lists = _popular_oracle(train, list(range(80)), depth)
    want = receval.evaluate(truth, lists, ["P@5", "MRR"])
    for row in c.table.itertuples():
        assert row.baseline_mean == pytest.approx(want.summary[row.metric], abs=1e-12)
    # the command line: --baseline popular --train FILE
    truth.to_csv(tmp_path / "truth.csv", index=False)
    train.to_csv(tmp_path / "train.csv", index=False)
    preds["b"].to_csv(tmp_path / "b.csv", index=False)
    out = CliRunner().invoke(main, ["compare", "-t", str(tmp_path / "truth.csv"), "-p",
                                    str(tmp_path / "b.csv"), "-m", "P@5", "-m", "MRR",
                                    "--baseline", "popular", "--train",
                                    str(tmp_path / "train.csv"), "--resamples", "100",
                                    "-f", "json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)["rows"]
    assert [(r["model"], r["baseline"]) for r in rows] == [("b", "popular")] * 2
    assert [r["baseline_mean"] for r in rows] == pytest.approx(
        [want.summary["P@5"], want.summary["MRR"]], abs=1e-12)
    no_train = CliRunner().invoke(main, ["compare", "-t", str(tmp_path / "truth.csv"), "-p",
                                         str(tmp_path / "b.csv"), "--baseline", "popular"])
    assert no_train.exit_code == 2 and "--baseline popular needs" in no_train.stderr


@pytest.mark.parametrize(("n", "p"), [(20, 0.2), (60, 0.3), (1_000_000, 1e-4), (1000, 0.7),
                                      (10**6, 0.5), (30, 0.9)])
def test_binomial_draws_follow_scipy_pmf(n: int, p: float) -> None:
    # inversion (n p < 10), BTRD (n p >= 10) and p > 1/2 (drawn as n - Binomial(n, 1 - p))
    from receval.stats.resample import _binomial

    state, draws = np.uint64(2024), []
    for _ in range(40_000):
        state, k = _binomial(np.uint64(state), n, p)  # the stream is unsigned 64-bit
        draws.append(k)
    x = np.array(draws)
    lo, hi = scipy.stats.binom.ppf([1e-4, 1 - 1e-4], n, p)
    edges = np.arange(lo, hi + 2) - 0.5
    observed, _ = np.histogram(x, bins=edges)
    expected = np.diff(scipy.stats.binom.cdf(edges, n, p)) * len(x)
    keep = expected > 5
    chi = (((observed - expected) ** 2 / expected)[keep]).sum()
    assert scipy.stats.chi2.sf(chi, keep.sum() - 1) > 1e-3
    assert ((x >= 0) & (x <= n)).all()
