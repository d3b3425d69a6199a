"""Correction families with strata (issue 19, point 2): a breakdown by group never changes the
overall rows' adjusted p-values; the groups' rows are a family of their own; one family across
every row stays an option. Holm is recomputed here by hand from its definition."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.cli import main

METRICS = ["P@5", "nDCG@5", "MRR"]


def _holm(p: list[float]) -> list[float]:
    """Holm's step-down adjustment written from its definition (the oracle)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def _data() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict[int, str]]:
    rng = np.random.default_rng(11)
    truth, a, b = [], [], []
    for u in range(120):
        items = rng.choice(50, 6, replace=False)
        truth += [(u, int(i)) for i in items]
        a += [(u, int(i), float(s)) for i, s in
              zip(rng.choice(50, 10, replace=False), rng.random(10), strict=True)]
        good = np.concatenate([items[:2], rng.choice(50, 8, replace=False)])
        b += [(u, int(i), float(s)) for i, s in zip(good, rng.random(10), strict=True)]
    frames = [pd.DataFrame(rows, columns=cols) for rows, cols in
              ((truth, ["user", "item"]), (a, ["user", "item", "score"]),
               (b, ["user", "item", "score"]))]
    truth_f, a_f, b_f = frames[0], *(f.drop_duplicates(["user", "item"]) for f in frames[1:])
    groups = {u: ("light", "medium", "heavy")[u % 3] for u in range(120)}
    return truth_f, a_f, b_f, groups


def test_overall_adjusted_p_is_the_same_with_and_without_strata() -> None:
    truth, a, b, groups = _data()
    runs = {"a": a, "b": b}
    plain = receval.compare(truth, runs, METRICS, baseline="a", n_resamples=100)
    split = receval.compare(truth, runs, METRICS, baseline="a", n_resamples=100, strata=groups)
    overall = split.table[split.table["group"] == "(all)"]
    assert overall["p_adjusted"].tolist() == plain.table["p_adjusted"].tolist()
    assert overall["p_value"].tolist() == plain.table["p_value"].tolist()
    # the groups' rows: Holm across them alone
    rest = split.table[split.table["group"] != "(all)"]
    assert len(rest) == 9
    assert rest["p_adjusted"].tolist() == pytest.approx(_holm(rest["p_value"].tolist()),
                                                        rel=1e-12)
    assert split.options["correction_family"] == "separate"


def test_one_family_across_all_rows_is_an_option() -> None:
    truth, a, b, groups = _data()
    c = receval.compare(truth, {"a": a, "b": b}, METRICS, baseline="a", n_resamples=100,
                        strata=groups, correction_family="all")
    assert c.table["p_adjusted"].tolist() == pytest.approx(_holm(c.table["p_value"].tolist()),
                                                           rel=1e-12)
    plain = receval.compare(truth, {"a": a, "b": b}, METRICS, baseline="a", n_resamples=100)
    # stricter on the overall rows than without strata (12 rows in the family instead of 3)
    overall = c.table[c.table["group"] == "(all)"]["p_adjusted"].to_numpy()
    assert (overall > plain.table["p_adjusted"].to_numpy()).any()
    with pytest.raises(receval.ReceValError, match="correction_family"):
        receval.compare(truth, {"a": a, "b": b}, METRICS, strata=groups,
                        correction_family="everything")


def test_cli_flag_and_footnote_name_the_family(tmp_path) -> None:
    truth, a, b, groups = _data()
    truth.to_csv(tmp_path / "truth.csv", index=False)
    a.to_csv(tmp_path / "a.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    pd.DataFrame({"user": list(groups), "group": list(groups.values())}).to_csv(
        tmp_path / "groups.csv", index=False)
    base = ["compare", "-t", str(tmp_path / "truth.csv"), "-p", str(tmp_path / "a.csv"), "-p",
            str(tmp_path / "b.csv"), *(x for m in METRICS for x in ("-m", m)),
            "--baseline", "a", "--resamples", "100"]
    plain = CliRunner().invoke(main, [*base, "-f", "json"])
    split = CliRunner().invoke(main, [*base, "--strata", str(tmp_path / "groups.csv"),
                                      "-f", "json"])
    assert plain.exit_code == 0 and split.exit_code == 0, split.output
    want = [r["p_adjusted"] for r in json.loads(plain.stdout)["rows"]]
    got = [r["p_adjusted"] for r in json.loads(split.stdout)["rows"] if r["group"] == "(all)"]
    assert got == want
    one = CliRunner().invoke(main, [*base, "--strata", str(tmp_path / "groups.csv"),
                                    "--correction-family", "all", "-f", "json"])
    rows = json.loads(one.stdout)["rows"]
    assert [r["p_adjusted"] for r in rows] == pytest.approx(_holm([r["p_value"] for r in rows]))
    md = CliRunner().invoke(main, [*base, "--strata", str(tmp_path / "groups.csv"),
                                   "-f", "markdown"])
    assert ("Holm across the 3 overall rows (as without strata), separately across the 9 "
            "group rows") in md.stdout
    md_all = CliRunner().invoke(main, [*base, "--strata", str(tmp_path / "groups.csv"),
                                       "--correction-family", "all", "-f", "markdown"])
    assert "Holm across all 12 rows (3 overall and 9 group rows in one family)" in md_all.stdout
