"""User-side disparity (receval.disparity, receval.stats.unpaired): the gap in a metric between
groups of users, against the formula oracles of tests/reference/unpaired.py and against the
per-group summaries evaluate(strata=) computes through its own exact sums."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import receval
from receval.disparity import disparity
from receval.exceptions import ReceValError
from receval.stats import unpaired as up

try:
    from tests.reference import unpaired as oracle
except ImportError:  # pytest run from elsewhere: tests/ itself is on sys.path
    from reference import unpaired as oracle  # type: ignore[no-redef]


def _data(seed: int = 3, n_users: int = 80):
    rng = np.random.default_rng(seed)
    users = np.arange(n_users)
    truth = pd.DataFrame({"user": np.repeat(users, 2),
                          "item": [i for _ in users for i in rng.choice(25, 2, replace=False)]})
    rows = [(u, i, 10.0 - r) for u in users
            for r, i in enumerate(rng.choice(25, 8, replace=False))]
    preds = pd.DataFrame(rows, columns=["user", "item", "score"])
    train = pd.DataFrame({"user": np.repeat(users, users % 9 + 1)})
    train["item"] = np.arange(len(train)) % 25
    genres = {i: ["drama", "comedy", "horror", ["drama", "comedy"]][i % 4] for i in range(25)}
    groups = {int(u): ("light" if u % 3 == 0 else "heavy" if u % 3 == 1 else "new")
              for u in users if u < 70}
    return truth, preds, train, genres, groups


@pytest.mark.parametrize("seed", range(6))
def test_welch_matches_the_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.random(int(rng.integers(2, 30))) * rng.integers(1, 4)
    y = rng.random(int(rng.integers(2, 30))) + rng.random()
    got = up.welch(x, y, 0.1)
    want = oracle.welch(x.tolist(), y.tolist(), 0.1)
    assert got == pytest.approx(want, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_permutation_p_close_to_the_exact_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, 5) / 4  # ties, as a metric at a cutoff has them
    y = rng.integers(1, 5, 6) / 4
    exact = oracle.exact_permutation_p(x.tolist(), y.tolist())
    b = 40_000
    got = up.permutation_p(x, y, b, np.random.default_rng(100 + seed))
    assert abs(got - exact) <= 4 * math.sqrt(exact * (1 - exact) / b) + 2 / b


def test_bootstrap_interval_close_to_a_plain_bootstrap() -> None:
    rng = np.random.default_rng(7)
    x, y = rng.random(40), rng.random(30) + 0.2
    low, high = up.bootstrap_interval(x, y, 40_000, np.random.default_rng(1), 0.05)
    plain = np.random.default_rng(2)
    gaps = np.array([plain.choice(y, y.size).mean() - plain.choice(x, x.size).mean()
                     for _ in range(20_000)])
    want_low, want_high = np.quantile(gaps, [0.025, 0.975])
    assert abs(low - want_low) < 0.01 and abs(high - want_high) < 0.01


def test_degenerate_groups() -> None:
    rng = np.random.default_rng(0)
    assert all(math.isnan(v) for v in up.welch(np.array([1.0]), np.array([1.0, 2.0])))
    assert up.welch(np.zeros(3), np.zeros(4)) == (1.0, 0.0, 0.0)
    assert up.welch(np.zeros(3), np.ones(4)) == (0.0, 1.0, 1.0)
    assert up.permutation_p(np.ones(3), np.ones(5), 10, rng) == 1.0
    with pytest.raises(ReceValError, match="unknown unpaired test 'wilcoxon'"):
        up.check_unpaired_test("wilcoxon")


def test_gaps_are_the_strata_summaries_differences() -> None:
    truth, preds, _train, _genres, groups = _data()
    r = receval.evaluate(truth, preds, ["P@5", "nDCG@8", "MRR@8"], strata=groups)
    table = disparity(r, groups)
    per_group = r.strata.set_index("group")
    assert len(table) == 3 * 6  # three metrics, every pair of heavy, light, new, (none)
    for row in table.itertuples():
        assert row.mean == pytest.approx(per_group.loc[row.group, row.metric], abs=1e-12)
        assert row.reference_mean == pytest.approx(per_group.loc[row.reference, row.metric],
                                                   abs=1e-12)
        assert row.n == per_group.loc[row.group, "users"]


def test_every_pair_with_the_unnamed_users_and_welch_values() -> None:
    truth, preds, train, genres, groups = _data()
    r = receval.evaluate(truth, preds, ["nDCG@8", "AWRF@8", "calibration@8"], train=train,
                         item_groups=genres, silence=["train-items", "train-overlap"])
    table = disparity(r, groups, ["AWRF@8", "calibration@8"], alpha=0.1)
    assert sorted(set(zip(table.group, table.reference, strict=True))) == sorted(
        [("light", "heavy"), ("new", "heavy"), ("new", "light"), ("(none)", "heavy"),
         ("(none)", "light"), ("(none)", "new")])
    label = {u: groups.get(u, "(none)") for u in r.per_user.user}
    per = r.per_user.assign(group=r.per_user.user.map(label))
    for row in table.itertuples():
        x = per.loc[per.group == row.reference, row.metric].dropna().tolist()
        y = per.loc[per.group == row.group, row.metric].dropna().tolist()
        p, low, high = oracle.welch(x, y, 0.1)
        assert row.gap == pytest.approx(sum(y) / len(y) - sum(x) / len(x), abs=1e-12)
        assert (row.p_value, row.ci_low, row.ci_high) == pytest.approx((p, low, high),
                                                                       rel=1e-9, abs=1e-12)
    holm = np.sort(table.p_adjusted.to_numpy())
    assert (holm >= np.sort(table.p_value.to_numpy()) - 1e-15).all()


def test_reference_group_and_built_in_strata() -> None:
    truth, preds, train, _genres, groups = _data()
    r = receval.evaluate(truth, preds, ["P@5"], train=train, strata="activity:2",
                         silence=["train-items", "train-overlap"])
    table = disparity(r, "activity:2", reference=r.strata.group[0], train=train)
    assert table.reference.tolist() == [r.strata.group[0]]
    assert table.gap[0] == pytest.approx(r.strata["P@5"][1] - r.strata["P@5"][0], abs=1e-12)
    with pytest.raises(ReceValError, match="reference group 'nobody' has no evaluated user"):
        disparity(r, groups, reference="nobody")
    with pytest.raises(ReceValError, match="groups users by their training data: pass train="):
        disparity(r, "activity")


def test_permutation_rows_keyed_by_names() -> None:
    truth, preds, _train, _genres, groups = _data()
    a = receval.evaluate(truth, preds, ["P@5", "nDCG@8"])
    b = receval.evaluate(truth, preds.assign(score=-preds.score), ["P@5", "nDCG@8"])
    one = disparity({"a": a, "b": b}, groups, test="permutation", n_resamples=500, seed=4)
    # other models, the metrics in another order, the mapping's rows shuffled: same rows
    shuffled = dict(reversed(list(groups.items())))
    two = disparity({"b": b}, shuffled, ["nDCG@8", "P@5"], test="permutation",
                    n_resamples=500, seed=4)
    cols = ["mean", "reference_mean", "gap", "ci_low", "ci_high", "p_value"]
    for row in two.itertuples():
        same = one[(one.model == "b") & (one.metric == row.metric) & (one.group == row.group)
                   & (one.reference == row.reference)]
        assert same[cols].to_numpy().tolist() == [[getattr(row, c) for c in cols]]
    other = disparity({"a": a, "b": b}, groups, test="permutation", n_resamples=500, seed=5)
    assert not np.array_equal(other.p_value.to_numpy(), one.p_value.to_numpy())


def test_catalogue_metric_refused_in_one_line() -> None:
    truth, preds, _train, genres, groups = _data()
    r = receval.evaluate(truth, preds, ["P@5", "group_exposure@5"], item_groups=genres)
    with pytest.raises(ReceValError, match=r"'group_exposure@5' is one number over all lists"):
        disparity(r, groups, ["group_exposure@5"])
    assert disparity(r, groups).metric.unique().tolist() == ["P@5"]


def test_cli_disparity(tmp_path) -> None:
    from click.testing import CliRunner

    from receval.cli import main

    truth, preds, _train, _genres, groups = _data()
    truth.to_csv(tmp_path / "truth.csv", index=False)
    preds.to_csv(tmp_path / "run.csv", index=False)
    pd.DataFrame({"user": list(groups), "group": list(groups.values())}).to_csv(
        tmp_path / "groups.csv", index=False)
    base = ["evaluate", "-t", str(tmp_path / "truth.csv"), "-p", str(tmp_path / "run.csv"),
            "-m", "P@5"]
    out = CliRunner().invoke(main, [*base, "--strata", str(tmp_path / "groups.csv"),
                                    "--disparity", "welch"], terminal_width=250)
    assert out.exit_code == 0, out.output
    want = disparity(receval.evaluate(truth, preds, ["P@5"]), groups)
    row = want[(want.group == "light") & (want.reference == "heavy")].iloc[0]
    line = next(x for x in out.stdout.splitlines() if "light" in x and "heavy" in x)
    # p-values with 3 significant digits (receval.numbers), as every other table writes them
    assert f"{row.gap:+.4f}" in line and f" {row.p_value:.3g} " in line
    assert "unpaired test: welch" in out.stdout
    alone = CliRunner().invoke(main, [*base, "--disparity", "welch"])
    assert alone.exit_code == 2
    assert alone.output.strip().splitlines()[-1] == (
        "error: --disparity compares groups of users: pass --strata (a user -> group file, or "
        "activity, cold...)")
    as_json = CliRunner().invoke(main, [*base, "--strata", str(tmp_path / "groups.csv"),
                                        "--disparity", "welch", "-f", "json"])
    assert as_json.exit_code == 2 and "--disparity prints a table" in as_json.output


@pytest.mark.parametrize("seed", range(3))
def test_permutation_p_by_shuffling_close_to_the_exact_enumeration(seed: int) -> None:
    """Continuous values (every value distinct): the partial-shuffle path."""
    rng = np.random.default_rng(seed)
    x, y = rng.random(6), rng.random(5) + 0.3 * seed
    exact = oracle.exact_permutation_p(x.tolist(), y.tolist())
    b = 40_000
    got = up.permutation_p(x, y, b, np.random.default_rng(200 + seed))
    assert abs(got - exact) <= 4 * math.sqrt(exact * (1 - exact) / b) + 2 / b


def test_permutation_p_same_on_any_thread_count() -> None:
    import numba

    rng = np.random.default_rng(1)
    x, y = rng.random(3000), rng.random(2500) + 0.01
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = up.permutation_p(x, y, 2000, np.random.default_rng(5))
        numba.set_num_threads(before)
        many = up.permutation_p(x, y, 2000, np.random.default_rng(5))
    finally:
        numba.set_num_threads(before)
    assert one == many
