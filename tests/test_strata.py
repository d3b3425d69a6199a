"""Strata: per-group results reconcile exactly with the whole; per-group comparisons."""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import pytest

import receval
from receval.strata import NONE, as_mapping

METRICS = ["P@5", "R@5", "nDCG@5", "MRR"]


def _data(users: int = 60, seed: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    truth = pd.DataFrame({"user": np.repeat(np.arange(users), 3),
                          "item": rng.integers(0, 12, 3 * users)}).drop_duplicates()
    truth = truth[truth.user != 5]  # user 5: predictions only (no relevant item)
    preds = pd.DataFrame({"user": np.repeat(np.arange(users), 6),
                          "item": rng.integers(0, 12, 6 * users),
                          "score": rng.random(6 * users)}).drop_duplicates(["user", "item"])
    return truth, preds


def _groups(users: int = 60) -> pd.DataFrame:
    # users 0..49 in three groups; 50..59 left out of the mapping; 99 not evaluated
    frame = pd.DataFrame({"user": [*list(range(50)), 99],
                          "activity": [("low", "mid", "high")[u % 3] for u in range(50)] + ["x"]})
    return frame


def _metric_fields(acc: receval.accumulate.Accumulator) -> list[tuple]:
    return [(m.name, m.kind, m.total, m.n_defined, m.n_undefined, m.num, m.den, m.den2)
            for m in acc.metrics]


@pytest.mark.parametrize("options", [{}, {"empty": "skip", "users": "both"},
                                     {"average": "micro"}, {"empty": "one"}])
def test_groups_merge_to_the_whole_exactly(options: dict) -> None:
    truth, preds = _data()
    r = receval.evaluate(truth, preds, METRICS, strata=_groups(), **options)
    table = r.strata
    assert table["group"].tolist() == ["high", "low", "mid", NONE]
    assert table["users"].sum() == r.counts["users"]["evaluated"]
    sums = r.strata_sums
    assert not table.attrs  # the sums are typed on the Result, not carried by the frame
    merged = functools.reduce(lambda a, b: a.merge(b), (sums[g] for g in table["group"]))
    assert _metric_fields(merged) == _metric_fields(r.sums)
    assert merged.finalize(receval.options.Options(**{k: v for k, v in options.items()
                                                      if k != "users"})) == r.summary


@pytest.mark.parametrize("options", [{}, {"average": "micro"}, {"empty": "skip"}])
def test_each_group_equals_an_evaluation_of_its_users_alone(options: dict) -> None:
    truth, preds = _data()
    groups = _groups()
    r = receval.evaluate(truth, preds, METRICS, strata=groups, **options)
    named = dict(zip(groups.user, groups.activity, strict=True))
    for row in r.strata.itertuples(index=False):
        members = [u for u in truth.user.unique() if named.get(u, NONE) == row.group]
        alone = receval.evaluate(truth[truth.user.isin(members)],
                                 preds[preds.user.isin(members)], METRICS, **options)
        assert row.users == alone.counts["users"]["evaluated"] == len(members)
        for metric in METRICS:
            got, want = r.strata.loc[r.strata.group == row.group, metric].item(), \
                alone.summary[metric]
            assert got == want or (math.isnan(got) and math.isnan(want)), (row.group, metric)


def test_users_outside_the_mapping_are_counted_in_none() -> None:
    truth, preds = _data()
    r = receval.evaluate(truth, preds, ["P@5"], strata={0: "a", 1: "a", 2: "b"})
    table = r.strata.set_index("group")
    assert table.loc["a", "users"] == 2 and table.loc["b", "users"] == 1
    assert table.loc[NONE, "users"] == r.counts["users"]["evaluated"] - 3
    assert receval.evaluate(truth, preds, ["P@5"]).strata is None


def test_mapping_forms_and_bad_mappings() -> None:
    series = pd.Series({1: "a", 2: "b"})
    assert as_mapping(series).to_dict() == as_mapping({1: "a", 2: "b"}).to_dict()
    frame = pd.DataFrame({"user": [1, 2], "group": ["a", "b"], "extra": [0, 0]})
    assert as_mapping(frame).to_dict() == {1: "a", 2: "b"}
    with pytest.raises(receval.ReceValError, match=r"user 2 is mapped more than once \(row 2; "
                                                   r"1 repeated rows\)"):
        as_mapping(pd.DataFrame({"user": [1, 2, 2], "g": ["a", "b", "c"]}))
    with pytest.raises(receval.ReceValError, match=r"group is missing for user 2 \(row 1; "
                                                   r"1 rows without a group\)"):
        as_mapping(pd.DataFrame({"user": [1, 2], "g": ["a", None]}))
    with pytest.raises(receval.ReceValError, match="needs a 'group' column or exactly one"):
        as_mapping(pd.DataFrame({"user": [1], "a": [1], "b": [2]}))
    with pytest.raises(receval.ReceValError, match="has no 'user' column"):
        as_mapping(pd.DataFrame({"uid": [1], "g": ["a"]}))
    truth, preds = _data()
    with pytest.raises(receval.ReceValError, match="no evaluated user is in the mapping"):
        receval.evaluate(truth, preds, ["P@5"], strata={"1": "a"})  # str ids, int users
    with pytest.raises(receval.ReceValError, match="reserved"):
        receval.evaluate(truth, preds, ["P@5"], strata={1: NONE})


def test_compare_per_group_rows() -> None:
    truth, preds = _data()
    other = preds.assign(score=-preds.score)
    c = receval.compare(truth, {"a": preds, "b": other}, ["P@5", "MRR"], baseline="a",
                        strata=_groups(), n_resamples=200, seed=3)
    t = c.table
    assert t.columns[0] == "group"
    assert t["group"].unique().tolist() == ["(all)", "high", "low", "mid", NONE]
    whole = receval.compare(truth, {"a": preds, "b": other}, ["P@5", "MRR"], baseline="a",
                            n_resamples=200, seed=3).table
    cols = ["delta", "ci_low", "ci_high", "p_value", "n", "wins"]
    pd.testing.assert_frame_equal(t[t.group == "(all)"][cols].reset_index(drop=True),
                                  whole[cols], check_exact=True)
    for metric in ("P@5", "MRR"):
        rows = t[(t.metric == metric) & (t.group != "(all)")]
        assert rows["n"].sum() == whole.loc[whole.metric == metric, "n"].item()
        assert rows["wins"].sum() == whole.loc[whole.metric == metric, "wins"].item()
        # the group means weighted by their users give the whole's mean
        weighted = (rows["delta"] * rows["n"]).sum() / rows["n"].sum()
        assert weighted == pytest.approx(whole.loc[whole.metric == metric, "delta"].item(),
                                         abs=1e-12)
    # one group's row is the comparison of that group's users alone
    members = [u for u in range(50) if u % 3 == 0]  # "low"
    alone = receval.compare(truth[truth.user.isin(members)],
                            {"a": preds[preds.user.isin(members)],
                             "b": other[other.user.isin(members)]}, ["P@5"], baseline="a",
                            n_resamples=200, seed=3).table
    low = t[(t.group == "low") & (t.metric == "P@5")].iloc[0]
    assert (low["delta"], low["n"], low["wins"]) == (alone["delta"][0], alone["n"][0],
                                                     alone["wins"][0])
    assert low["p_value"] == pytest.approx(alone["p_value"][0], rel=1e-12)
    # the correction runs across every row of every group
    assert len(t) == 5 * 2
    assert c.to_csv().splitlines()[0].startswith("group,model,baseline,metric,")
    assert c.to_markdown().splitlines()[0].startswith("| group | model |")


def test_a_profile_with_per_metric_options_keeps_every_metric_per_group() -> None:
    truth, preds = _data()
    r = receval.evaluate(truth, preds, METRICS, profile="torchmetrics", strata=_groups(),
                         silence=["ties", "undefined"])
    assert r.strata.columns.tolist() == ["group", "users", *METRICS]
    sums = r.strata_sums
    assert not r.strata.attrs
    merged = functools.reduce(lambda a, b: a.merge(b), (sums[g] for g in r.strata["group"]))
    assert _metric_fields(merged) == _metric_fields(r.sums)


def test_compare_takes_a_stratum_name_with_train() -> None:
    truth, preds = _data()
    train = pd.DataFrame({"user": np.repeat(np.arange(60), np.arange(60) % 7 + 1)})
    train["item"] = np.arange(len(train)) % 12 + 100
    other = preds.assign(score=-preds.score)
    c = receval.compare(truth, {"a": preds, "b": other}, ["P@5"], baseline="a",
                        strata="cold", train=train, n_resamples=50, silence="train-items")
    cold = {u for u in range(60) if u % 7 + 1 < 5}
    rows = c.table.set_index("group")
    evaluated = set(truth.user)
    assert rows.loc["cold (<5)", "n"] == len(cold & evaluated)
    assert rows.loc["warm", "n"] == len(evaluated - cold)


def test_cli_compare_strata_file_and_name(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from receval.cli import main

    truth, preds = _data()
    truth.to_csv(tmp_path / "truth.csv", index=False)
    preds.to_csv(tmp_path / "a.csv", index=False)
    preds.assign(score=-preds.score).to_csv(tmp_path / "b.csv", index=False)
    _groups().to_csv(tmp_path / "groups.csv", index=False)
    base = ["compare", "-t", str(tmp_path / "truth.csv"), "-p", str(tmp_path / "a.csv"), "-p",
            str(tmp_path / "b.csv"), "-m", "P@5", "--baseline", "a", "--resamples", "100"]
    out = CliRunner().invoke(main, [*base, "--strata", str(tmp_path / "groups.csv"), "-f",
                                    "json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)["rows"]
    want = receval.compare(truth, {"a": preds, "b": preds.assign(score=-preds.score)}, ["P@5"],
                           baseline="a", strata=_groups(), n_resamples=100)
    assert rows == want.to_dicts()
    table = CliRunner().invoke(main, [*base, "--strata", str(tmp_path / "groups.csv")])
    assert table.exit_code == 0 and "group" in table.stdout and "(none)" in table.stdout
    train = pd.DataFrame({"user": np.repeat(np.arange(60), np.arange(60) % 7 + 1)})
    train["item"] = np.arange(len(train)) % 12 + 100
    train.to_csv(tmp_path / "train.csv", index=False)
    named = CliRunner().invoke(main, [*base, "--strata", "cold", "--train",
                                      str(tmp_path / "train.csv"), "-f", "csv",
                                      "--silence", "train-items"])
    assert named.exit_code == 0, named.output
    groups = {line.split(",")[0] for line in named.stdout.splitlines()[1:]}
    assert groups == {"(all)", "cold (<5)", "warm"}
