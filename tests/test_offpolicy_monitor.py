"""The off-policy log built from monitor's impressions and feedback (monitor's attribution
rule), estimates per time window and per variant, and their exact sums: windows, days and
variants merge to the estimate of the whole log bit for bit."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.exceptions import ReceValError
from receval.offpolicy import EstimateSums, Policy, estimate, log_from_monitor, merge_sums

ROOT = Path(__file__).resolve().parents[1]
T0 = pd.Timestamp("2024-01-01", tz="UTC")
ESTIMATORS = ["ips", "snips", "dm", "dr", "sndr", "switch_dr", "pi"]


def _served(n_lists: int = 400, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    length = 3
    users = rng.integers(0, 60, n_lists)
    served = T0 + pd.to_timedelta(rng.integers(0, 35 * 24, n_lists), unit="h")
    items = np.stack([rng.choice(25, length, replace=False) for _ in range(n_lists)])
    imp = pd.DataFrame({"user": np.repeat(users, length), "item": items.ravel(),
                        "rank": np.tile(np.arange(1, length + 1), n_lists),
                        "served_at": np.repeat(served, length),
                        "propensity": rng.uniform(0.1, 0.9, n_lists * length),
                        "variant": np.repeat(rng.choice(["A", "B", "C"], n_lists), length)})
    imp = imp.drop_duplicates(["user", "served_at", "rank"], ignore_index=True)
    click = rng.uniform(size=len(imp)) < 0.25
    fb = pd.DataFrame({"user": imp["user"][click], "item": imp["item"][click],
                       "value": rng.integers(1, 4, int(click.sum())).astype(float),
                       "at": imp["served_at"][click] + pd.to_timedelta(
                           rng.integers(0, 48, int(click.sum())), unit="h")})
    return imp, fb


def _targets(log: pd.DataFrame, seed: int = 1) -> dict[str, Policy]:
    rng = np.random.default_rng(seed)
    lists = log[["user", "served_at"]].drop_duplicates()
    cand = lists.merge(pd.DataFrame({"item": np.arange(25)}), how="cross")
    cand["score"] = rng.normal(size=len(cand))
    return {"greedy": Policy(cand, "epsilon_greedy", epsilon=0.3),
            "soft": Policy(cand, "softmax", temperature=0.7)}


MODEL = pd.DataFrame({"item": np.arange(25), "prediction": np.linspace(0.1, 1.5, 25)})


# --- the log builder -----------------------------------------------------------------------

def test_rewards_follow_monitors_attribution_rule_by_hand() -> None:
    served = pd.to_datetime(["2024-01-01 10:00"] * 3 + ["2024-01-03 10:00"] * 2, utc=True)
    imp = pd.DataFrame({"user": [1, 1, 1, 2, 2], "item": [10, 11, 12, 10, 13],
                        "score": [0.2, 0.9, 0.5, 0.1, 0.3], "served_at": served,
                        "propensity": [0.5, 0.4, 0.3, 0.6, 0.2]})
    fb = pd.DataFrame({
        "user": [1, 1, 1, 1, 2, 2, 3],
        "item": [10, 10, 11, 12, 13, 10, 10],
        "value": [2.0, 5.0, 1.0, 4.0, 3.0, 1.0, 9.0],
        # 10: two within the period (the largest counts); 11: at the period's end (counts);
        # 12: before serving (not); user 2's 13 counts, its 10 is a day late; user 3 never served
        "at": pd.to_datetime(["2024-01-01 11:00", "2024-01-02 09:00", "2024-01-02 10:00",
                              "2024-01-01 09:00", "2024-01-03 12:00", "2024-01-04 10:00:01",
                              "2024-01-01 11:00"], utc=True, format="ISO8601")})
    log = log_from_monitor(imp, fb, attribution="1D", relevance_threshold=None)
    got = log[["request", "user", "item", "position", "reward", "propensity"]]
    assert got.values.tolist() == [[0, 1, 11, 1, 1.0, 0.4], [0, 1, 12, 2, 0.0, 0.3],
                                   [0, 1, 10, 3, 5.0, 0.5], [1, 2, 13, 1, 3.0, 0.2],
                                   [1, 2, 10, 2, 0.0, 0.6]]
    assert log["window"].tolist() == [T0] * 5  # monitor's weeks start on Monday 2024-01-01
    assert log.attrs["counts"] == {"impressions_read": 5, "feedback_read": 7, "lists": 2,
                                   "lists_open_dropped": 0, "impressions_rewarded": 3,
                                   "feedback_unattributed": 3}
    binary = log_from_monitor(imp, fb, attribution="1D", relevance_threshold=4)
    assert binary["reward"].tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]


def test_the_rewards_are_monitors_judged_values() -> None:
    """monitor's P@3 with relevance_threshold=2 over the closed lists of each week equals the
    share of rewards >= 2 in the built log's lists of that week."""
    imp, fb = _served(300)
    log = log_from_monitor(imp.drop(columns="variant"), fb, attribution="2D", window="W")
    m = receval.monitor(imp.drop(columns=["propensity", "variant"]), fb, "P@3", window="W",
                        attribution="2D", relevance_threshold=2, n_resamples=0,
        silence="weights")
    closed = m.windows[m.windows["closed"]]
    hits = (log["reward"] >= 2).groupby(log["window"]).sum()
    lists = log.groupby("window")["request"].nunique()
    for _, row in closed.iterrows():
        start = row["window_start"]
        assert row["users_evaluated"] == lists[start]
        assert row["P@3"] == pytest.approx(hits[start] / (3 * lists[start]), abs=1e-12)


def test_open_lists_are_left_out_and_counted_or_kept() -> None:
    imp, fb = _served(200)
    dropped = log_from_monitor(imp, fb, attribution="3D")
    kept = log_from_monitor(imp, fb, attribution="3D", open_lists="keep")
    last = max(imp["served_at"].max(), fb["at"].max())
    n_open = imp[imp["served_at"] >= last - pd.Timedelta("3D")][["user", "served_at"]] \
        .drop_duplicates().shape[0]
    assert n_open > 0
    assert dropped.attrs["counts"]["lists_open_dropped"] == n_open
    assert kept.attrs["counts"]["lists_open_kept"] == n_open
    assert kept["request"].nunique() - dropped["request"].nunique() == n_open
    assert (dropped["served_at"] < last - pd.Timedelta("3D")).all()


@pytest.mark.parametrize(("change", "kwargs", "message"), [
    (lambda f: f.drop(columns="propensity"), {}, "no column 'propensity'"),
    (lambda f: f.assign(variant=np.arange(len(f)) % 2), {"variant_col": "variant"},
     "differs within one served list"),
    (lambda f: f.assign(rank=f["rank"] + 0.5), {}, "not a whole number >= 1 at row 0"),
    (lambda f: f, {"open_lists": "maybe"}, "open_lists must be"),
])
def test_bad_impressions_get_one_line(change, kwargs: dict, message: str) -> None:
    imp, fb = _served(50)
    with pytest.raises(ReceValError) as err:
        log_from_monitor(change(imp), fb, **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_targets_may_name_lists_by_user_and_served_at() -> None:
    imp, fb = _served(150)
    log = log_from_monitor(imp, fb)
    targets = _targets(log)
    keyed = {name: Policy(p.scores.merge(log[["user", "served_at", "request"]]
                                         .drop_duplicates()).drop(columns=["user", "served_at"]),
                          p.rule, p.epsilon, p.temperature) for name, p in targets.items()}
    model = targets["greedy"].scores[["user", "served_at", "item"]].assign(
        prediction=np.linspace(0, 1, len(targets["greedy"].scores)))
    a = estimate(log, targets, estimators=["ips", "dr"], reward_model=model, n_resamples=20,
        silence="weights")
    b = estimate(log, keyed, estimators=["ips", "dr"],
                 reward_model=model.merge(log[["user", "served_at", "request"]]
                                          .drop_duplicates())
                 .drop(columns=["user", "served_at"]), n_resamples=20,
        silence="weights")
    pd.testing.assert_frame_equal(a.table, b.table)
    # served_at written as text still names the list
    text = {n: Policy(p.scores.assign(served_at=p.scores["served_at"].astype(str)), p.rule,
                      p.epsilon, p.temperature) for n, p in targets.items()}
    c = estimate(log, text, estimators=["ips", "dr"], reward_model=model, n_resamples=20,
        silence="weights")
    pd.testing.assert_frame_equal(a.table, c.table)


# --- groups and exact sums -------------------------------------------------------------------

@pytest.mark.parametrize("by", ["window", "variant", ["window", "variant"]])
def test_groups_merge_to_the_whole_bit_for_bit(by: str | list[str]) -> None:
    imp, fb = _served(500)
    log = log_from_monitor(imp, fb, variant_col="variant", attribution="2D")
    targets = _targets(log)
    whole = estimate(log, targets, estimators=ESTIMATORS, reward_model=MODEL, n_resamples=0,
        silence="weights")
    parts = estimate(log, targets, estimators=ESTIMATORS, reward_model=MODEL, n_resamples=0,
                     by=by,
        silence="weights")
    assert len(parts.table) > len(whole.table)
    merged = parts.merged()
    for column in ("value", "ess", "max_weight", "max_weight_share", "mean_weight",
                   "support_missing", "n_requests", "n_rows"):
        np.testing.assert_array_equal(merged[column].to_numpy(), whole.table[column].to_numpy(),
                                      err_msg=column)
    # the exact form of the value is not a float mean: the whole's value is its rounding
    assert whole.table["value"].notna().all()


def test_days_estimated_apart_merge_to_the_whole_through_json() -> None:
    imp, fb = _served(400)
    log = log_from_monitor(imp, fb, attribution="2D")
    targets = _targets(log)
    whole = estimate(log, targets, estimators=ESTIMATORS, reward_model=MODEL, n_resamples=0,
        silence="weights")
    day = log["served_at"].dt.floor("D")
    saved = {}
    for d, part in log.groupby(day):
        r = estimate(part, targets, estimators=ESTIMATORS, reward_model=MODEL, n_resamples=0,
                     silence="weights")
        for (target, name), s in zip(zip(r.table["target"], r.table["estimator"],
                                         strict=True), r.sums.values(), strict=True):
            saved[(str(d.date()), target, name)] = json.dumps(s.to_json())
    keys = list(saved)[::-1]  # merged in another order than they were made
    back = {k: EstimateSums.from_json(json.loads(saved[k])) for k in keys}
    merged = merge_sums(back).set_index(["target", "estimator"]) \
        .loc[list(zip(whole.table["target"], whole.table["estimator"], strict=True))]
    assert merged["value"].tolist() == whole.table["value"].tolist()
    np.testing.assert_array_equal(merged["ess"].to_numpy(), whole.table["ess"].to_numpy())


def test_a_groups_estimate_and_interval_do_not_depend_on_the_other_groups() -> None:
    imp, fb = _served(400)
    log = log_from_monitor(imp, fb, variant_col="variant")
    targets = _targets(log)
    full = estimate(log, targets, estimators=["ips", "snips"], by="variant", n_resamples=200,
        silence="weights")
    only_b = estimate(log[log["variant"] == "B"], targets, estimators=["ips", "snips"],
                      by="variant", n_resamples=200,
        silence="weights")
    got = full.table[full.table["variant"] == "B"].reset_index(drop=True)
    # all but the count of the targets' rows for requests this log does not hold
    pd.testing.assert_frame_equal(got.drop(columns="target_rows_dropped"),
                                  only_b.table.drop(columns="target_rows_dropped"))
    # and each group draws its own stream: the same data under another name differs
    a = full.table[full.table["variant"] == "A"]
    assert not np.array_equal(a["ci_low"].to_numpy(), got["ci_low"].to_numpy())


def test_by_window_from_served_at_uses_monitors_calendar_windows() -> None:
    imp, fb = _served(300)
    log = log_from_monitor(imp, fb).drop(columns="window")
    targets = _targets(log)
    r = estimate(log, targets, estimators=["ips"], by="window", window="W", n_resamples=0,
        silence="weights")
    starts = sorted(set(r.table["window"]))
    assert all(s.day_name() == "Monday" and s == s.normalize() for s in starts)
    daily = estimate(log, targets, estimators=["ips"], by="window", window="D", n_resamples=0,
        silence="weights")
    assert len(set(daily.table["window"])) > len(starts)
    with pytest.raises(ReceValError, match="by='window' needs"):
        estimate(log.drop(columns="served_at"), targets, by="window", n_resamples=0,
        silence="weights")


def test_by_a_column_that_differs_within_a_request_is_refused() -> None:
    log = pd.DataFrame({"request": [1, 1], "item": ["a", "b"], "position": [1, 2],
                        "reward": 0.0, "propensity": 0.5, "day": [1, 2]})
    t = pd.DataFrame({"request": [1], "item": ["a"], "position": [1], "probability": 1.0})
    with pytest.raises(ReceValError, match=r"1 row\(s\) whose 'day' differs"):
        estimate(log, {"t": t}, by="day", n_resamples=0,
        silence="weights")


# --- the command line ------------------------------------------------------------------------

def test_cli_from_impressions_and_feedback_per_window_with_html(tmp_path: Path) -> None:
    imp, fb = _served(200)
    imp.to_csv(tmp_path / "imp.csv", index=False)
    fb.to_csv(tmp_path / "fb.csv", index=False)
    log = log_from_monitor(imp, fb)
    scores = _targets(log)["greedy"].scores
    scores.assign(served_at=scores["served_at"].astype(str)).to_csv(tmp_path / "t.csv",
                                                                    index=False)
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    args = [sys.executable, "-m", "receval.cli", "offpolicy", "-i", "imp.csv", "--feedback",
            "fb.csv", "--target", "g=t.csv", "--rule", "epsilon_greedy", "--epsilon", "0.3",
            "--by", "window", "--resamples", "50", "--html", "out.html", "--format", "csv"]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    python = estimate(log, {"g": _targets(log)["greedy"]}, n_resamples=50, by="window",
                      silence="weights")
    printed = pd.read_csv(io.StringIO(done.stdout))
    assert printed["value"].tolist() == python.table["value"].tolist()
    html = (tmp_path / "out.html").read_text()
    assert "Content-Security-Policy" in html and "<script" not in html
    assert html.count("<tr") == 1 + len(python.table)  # one header row, one row an estimate
    bad = subprocess.run([*args[:4], "--log", "x.csv", "-i", "imp.csv", "--target", "g=t.csv"],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2 and "either --log, or --impressions" in bad.stderr


def test_exact_sums_of_many_columns_equal_pythons_exact_sums() -> None:
    from receval.accumulate import ExactSum
    from receval.offpolicy.sums import exact_sums

    rng = np.random.default_rng(0)
    columns = [rng.normal(size=40_000) * 10.0 ** int(rng.integers(-300, 300)) for _ in range(20)]
    columns += [np.array([np.nan, 1.0, np.inf]), np.zeros(0), np.array([5e-324, -1e308])]
    assert exact_sums(columns) == [ExactSum.of(x.tolist()) for x in columns]


def test_the_html_page_lists_each_target_and_shades_weights_that_blow_up() -> None:
    from receval.report.offpolicy import page

    n = 200
    log = pd.DataFrame({"request": np.arange(n), "item": "a", "position": 1,
                        "reward": np.ones(n),
                        "propensity": np.r_[0.001, np.full(n - 1, 0.9)]})
    new = pd.DataFrame({"request": np.arange(n), "item": "a", "position": 1,
                        "probability": 1.0})
    r = estimate(log, {"<new>": new, "same": log.assign(probability=log["propensity"])[
        ["request", "item", "position", "probability"]]}, estimators=["ips", "snips"],
        n_resamples=50, silence="weights")
    assert r.table["weights_blow_up"].tolist() == [True, False, False, False]
    html = page(r.table, resamples=50)
    assert "&lt;new&gt;" in html and "<new>" not in html
    assert html.count('<tr class="flag">') == 1
    assert html.count("<h3>") == 2 and "50 resamples" in html


def test_numeric_served_at_needs_its_unit_for_windows() -> None:
    day = 86_400
    log = pd.DataFrame({"request": [1, 2], "item": "a", "position": 1, "reward": [1.0, 0.0],
                        "propensity": 0.5, "served_at": [0, 8 * day]})  # 1970-01-01, -09
    t = pd.DataFrame({"request": [1, 2], "item": "a", "position": 1, "probability": 1.0})
    with pytest.raises(ReceValError, match="time_unit="):
        estimate(log, {"t": t}, by="window", n_resamples=0)
    r = estimate(log, {"t": t}, estimators=["ips"], by="window", window="W", time_unit="s",
                 n_resamples=0)
    # ISO weeks from Monday 1969-12-29 and 1970-01-05
    assert [str(w.date()) for w in r.table["window"]] == ["1969-12-29", "1970-01-05"]
    assert r.table["value"].tolist() == [2.0, 0.0]
