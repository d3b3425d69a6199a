"""Strata carry every per-user beyond-accuracy and fairness metric asked for, with the whole's
accounting: each group's value is the exact mean of its users' per-user values (a pandas
groupby oracle written here, means by exact fractions), undefined users counted per group,
values inside their declared bounds; catalogue-level metrics named "not per group"."""

from __future__ import annotations

import functools
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import receval
from receval.beyond.names import ENTRIES
from receval.strata import NONE, NOT_PER_GROUP

K = 3
PER_USER = [f"{m}@{K}" for m in ("novelty", "diversity", "ARP", "APLT", "AWRF", "nDCG_AWRF",
                                 "rND", "rKL", "calibration", "calibration_js", "EE_L")]
CATALOGUE = [f"coverage@{K}", f"gini@{K}"]
#: the metrics whose undefined users are left out of the mean under empty="zero" (a 0 reads
#: as perfect): docs/fairness.md
ZERO_IS_BEST = ("rND", "rKL", "rRD", "calibration", "calibration_js")


def _data() -> dict:
    rng = np.random.default_rng(11)
    users = list(range(24))
    items = [f"i{j}" for j in range(10)]
    preds = pd.DataFrame([(u, it, float(s)) for u in users
                          for it, s in zip(rng.permutation(items)[:4], range(4, 0, -1),
                                           strict=False)], columns=["user", "item", "score"])
    truth = pd.DataFrame([(u, it, float(rng.integers(1, 6))) for u in users
                          for it in rng.choice(items, 3, replace=False)],
                         columns=["user", "item", "rating"])
    train = pd.DataFrame([(u, it) for u in users[:20]  # users 20..23: no training history
                          for it in rng.choice(items, 3, replace=False)],
                         columns=["user", "item"])
    features = {it: ["a" if j < 3 else "b"] for j, it in enumerate(items)}
    return {"truth": truth, "predictions": preds, "train": train, "item_features": features}


#: users 0..19 in three groups by u % 3; 20..23 not in the mapping (group NONE)
STRATA = {u: ("new", "mid", "old")[u % 3] for u in range(20)}


def _evaluate(empty: str) -> receval.Result:
    d = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(d["truth"], d["predictions"], ["P@3", *PER_USER, *CATALOGUE],
                                train=d["train"], item_features=d["item_features"],
                                relevance_threshold=3, empty=empty,
                                beyond={"protected_group": "a", "fairness_step": 1}, strata=STRATA)


def _exact_mean(values: pd.Series) -> float:
    """The correctly rounded mean (an exact sum over exact fractions, rounded once)."""
    if len(values) == 0:
        return math.nan
    return float(sum(map(Fraction, values)) / len(values))


def _oracle(per_user: pd.DataFrame, metric: str, empty: str) -> pd.Series:
    """Each group's value from the per-user values alone, by the documented policy."""
    frame = per_user[["user", metric]].assign(
        group=per_user["user"].map(lambda u: STRATA.get(u, NONE)))
    left_out = empty == "skip" or (empty == "zero" and metric.startswith(ZERO_IS_BEST))

    def one(values: pd.Series) -> float:
        if left_out:
            return _exact_mean(values.dropna())
        if empty == "nan" and values.isna().any():
            return math.nan
        return _exact_mean(values.fillna({"zero": 0.0, "one": 1.0}.get(empty, math.nan)))

    return frame.groupby("group")[metric].agg(one)


@pytest.mark.parametrize("empty", ["zero", "skip", "nan"])
def test_each_group_is_the_mean_of_its_users_values(empty: str) -> None:
    r = _evaluate(empty)
    table = r.strata.set_index("group")
    assert list(table.index) == ["mid", "new", "old", NONE]
    for metric in PER_USER:
        assert metric in table.columns, f"{metric}: a per-user metric missing per group"
        want = _oracle(r.per_user, metric, empty)
        for group in table.index:
            got, expected = table.loc[group, metric], want[group]
            assert (math.isnan(got) and math.isnan(expected)) or got == expected, \
                (metric, group, got, expected)


def test_the_cases_are_not_trivial() -> None:
    """The data holds what the policies act on: undefined users in several groups."""
    r = _evaluate("zero")
    undefined = r.per_user.set_index("user")[f"calibration@{K}"].isna()
    assert set(undefined[undefined].index) == {20, 21, 22, 23}  # no training history
    assert r.per_user[f"rND@{K}"].isna().any() and r.per_user[f"rND@{K}"].notna().any()


@pytest.mark.parametrize("empty", ["nan", "zero"])
def test_undefined_counted_per_group_and_warned(empty: str) -> None:
    d = _data()

    def run(policy: str) -> tuple[receval.Result, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = receval.evaluate(d["truth"], d["predictions"], PER_USER, train=d["train"],
                                 item_features=d["item_features"], relevance_threshold=3,
                                 empty=policy, strata=STRATA,
                                 beyond={"protected_group": "a", "fairness_step": 1})
        return r, [str(w.message) for w in caught]

    r, warned = run(empty)
    undefined = run("nan")[0].per_user  # NaN where undefined (empty="zero" fills the values)
    groups = undefined["user"].map(lambda u: STRATA.get(u, NONE))
    counted = r.counts["strata"]["undefined"]
    for metric in PER_USER:
        want = undefined[metric].isna().groupby(groups).sum()
        for group, n in want.items():
            assert counted[group][metric] == n, (metric, group)
        assert sum(counted[g][metric] for g in counted) == \
            r.counts["undefined"]["users"][metric]
    assert any(f"calibration@{K} undefined" in w for w in warned)


@pytest.mark.parametrize("empty", ["zero", "nan"])
def test_group_values_inside_their_bounds(empty: str) -> None:
    r = _evaluate(empty)
    for metric in PER_USER:
        low, high = ENTRIES[metric.partition("@")[0]].bounds
        values = r.strata[metric].dropna()
        assert ((values >= low) & (values <= high)).all(), (metric, values.tolist())


def test_groups_merge_to_the_whole_exactly() -> None:
    r = _evaluate("zero")
    merged = functools.reduce(lambda a, b: a.merge(b), r.strata_sums.values())

    def fields(acc):  # the first undefined user is the group's, not the whole's
        return [(m.name, m.total, m.n_defined, m.n_undefined) for m in acc.metrics]

    whole = {m.name: m for m in r.sums.metrics}
    assert fields(merged) == [(m.name, whole[m.name].total, whole[m.name].n_defined,
                               whole[m.name].n_undefined) for m in merged.metrics]
    assert [m.name for m in merged.metrics] == ["P@3", *PER_USER]


def test_catalogue_metrics_are_named_not_per_group() -> None:
    r = _evaluate("zero")
    assert r.counts["strata"]["not_per_group"] == {m: NOT_PER_GROUP for m in CATALOGUE}
    assert not set(CATALOGUE) & set(r.strata.columns)
    assert r.strata.columns.tolist() == ["group", "users", "P@3", *PER_USER]


def test_novelty_pooled_over_slots_is_not_per_group() -> None:
    d = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = receval.evaluate(d["truth"], d["predictions"], [f"novelty@{K}"], train=d["train"],
                             beyond={"novelty_average": "slots"}, strata=STRATA)
    assert f"novelty@{K}" not in r.strata.columns
    assert "slots" in r.counts["strata"]["not_per_group"][f"novelty@{K}"]


def test_beyond_metrics_only() -> None:
    d = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = receval.evaluate(d["truth"], d["predictions"], [f"novelty@{K}"], train=d["train"],
                             strata=STRATA)
    want = _oracle(r.per_user, f"novelty@{K}", "zero")
    assert r.strata.set_index("group")[f"novelty@{K}"].to_dict() == want.to_dict()
    assert r.strata["users"].sum() == len(r.per_user)


@pytest.mark.slow
def test_spark_strata_carry_the_per_user_beyond_metrics(spark) -> None:
    """The Spark driver finishes the groups' merged sums with the local rule: the same
    table, sums and counts as the local plan, bit for bit."""
    pytest.importorskip("pyspark", reason="the Spark engine needs pyspark (receval[spark])")
    d = _data()
    metrics = ["P@3", f"novelty@{K}", f"AWRF@{K}", f"rND@{K}", f"calibration@{K}",
               f"coverage@{K}"]
    kw = {"train": d["train"], "item_features": d["item_features"], "relevance_threshold": 3,
          "beyond": {"protected_group": "a", "fairness_step": 1}, "strata": STRATA,
          "ties": "optimistic"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local = receval.evaluate(d["truth"], d["predictions"], metrics, **kw)
        got = receval.evaluate(spark.createDataFrame(d["truth"]),
                               spark.createDataFrame(d["predictions"]), metrics,
                               spark_options={"partitions": 3}, **kw)
    pd.testing.assert_frame_equal(got.strata.reset_index(drop=True),
                                  local.strata.reset_index(drop=True))
    assert got.counts["strata"] == local.counts["strata"]
    for label, acc in local.strata_sums.items():
        assert [(m.name, m.total, m.n_defined, m.n_undefined) for m in acc.metrics] == \
            [(m.name, m.total, m.n_defined, m.n_undefined) for m in got.strata_sums[label].metrics]


@pytest.fixture()
def cli_files(tmp_path):
    """u1, u2 (group new) and u3 (old) with two-item lists; training rows make item i1 seen
    by 2 users of 3, i2 by 1, i3 by none (novelty -log2 of the share; an unseen item: cold)."""
    (tmp_path / "t.csv").write_text("user,item\nu1,i1\nu2,i2\nu3,i3\n")
    (tmp_path / "p.csv").write_text("user,item,score\nu1,i1,0.9\nu1,i2,0.8\nu2,i1,0.9\n"
                                    "u2,i2,0.8\nu3,i2,0.9\nu3,i1,0.8\n")
    (tmp_path / "train.csv").write_text("user,item\nx1,i1\nx2,i1\nx3,i2\n")
    (tmp_path / "g.csv").write_text("user,group\nu1,new\nu2,new\nu3,old\n")
    return tmp_path


def _cli(files, *args: str):
    from click.testing import CliRunner

    from receval.cli import main

    return CliRunner().invoke(main, [
        "evaluate", "-t", str(files / "t.csv"), "-p", str(files / "p.csv"), "-m", "P@1",
        "-m", "novelty@2", "-m", "coverage@2", "--train", str(files / "train.csv"),
        "--strata", str(files / "g.csv"), *args])


def test_cli_groups_carry_the_per_user_beyond_metrics(cli_files) -> None:
    import json

    out = _cli(cli_files, "-f", "json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout[out.stdout.index("{"):])
    groups = {g["group"]: g for g in data["strata"]}
    # every list holds i1 and i2: novelty = mean(-log2 2/3, -log2 1/3) for every user
    want = (-math.log2(2 / 3) - math.log2(1 / 3)) / 2
    assert groups["new"]["novelty@2"] == pytest.approx(want, rel=1e-15)
    assert groups["old"]["novelty@2"] == pytest.approx(want, rel=1e-15)
    assert groups["new"]["P@1"] == 0.5 and groups["old"]["P@1"] == 0.0
    assert "coverage@2" not in groups["new"]
    assert data["counts"]["strata"]["not_per_group"] == {"coverage@2": NOT_PER_GROUP}


def test_terminal_and_report_name_what_is_not_per_group(cli_files) -> None:
    out = _cli(cli_files, "--report", str(cli_files / "r.html"))
    assert out.exit_code == 0, out.output
    text = " ".join(out.stdout.split())
    assert "novelty@2" in text and f"coverage@2: {NOT_PER_GROUP}" in text
    page = (cli_files / "r.html").read_text()
    section = page[page.index('<section id="strata">'):]
    section = section[:section.index("</section>")]
    assert "<th>novelty@2</th>" in section
    assert f"coverage@2: {NOT_PER_GROUP}" in " ".join(section.split())
