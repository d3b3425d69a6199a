"""receval.monitor's variant comparisons with the user as the unit (issue 34).

The oracles are written from the formulas, not from receval.monitor.ab: per-user sums by a
pandas groupby of the served lists, the delta-method variance of a ratio (Deng, Knoblich and
Lu, KDD 2018), Welch-Satterthwaite degrees of freedom with scipy's t, and the two-sided
normal-mixture martingale of Howard et al. (2021) integrated numerically from its definition.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

import receval
from receval.exceptions import ReceValError
from receval.stats import sequential

DAY = pd.Timedelta("1D")
T0 = pd.Timestamp("2024-01-01", tz="UTC")  # a Monday


def _ab_logs(
    seed: int = 0, users: int = 60, days: int = 6, lift: float = 0.0, lists_per_day: int = 2
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Users split in A and B, several lists of 3 items a day each, each user with their own
    click propensity (B's raised by ``lift``); a click is feedback one hour after serving.
    A last feedback row 20 days on closes every list."""
    rng = np.random.default_rng(seed)
    variant = np.where(rng.random(users) < 0.5, "A", "B")
    prop = rng.beta(0.5, 2, users)
    imp, fb = [], []
    for day in range(days):
        for u in range(users):
            for j in range(int(rng.integers(0, lists_per_day + 1))):
                s = T0 + day * DAY + pd.Timedelta(hours=2 + 5 * j, minutes=u % 60)
                p = min(1.0, prop[u] + (lift if variant[u] == "B" else 0.0))
                for r in range(3):
                    item = day * 100 + j * 10 + r
                    imp.append((u, item, r + 1, s, variant[u]))
                    if rng.random() < p:
                        fb.append((u, item, 1.0, s + pd.Timedelta("1h")))
    fb.append((-1, -1, 1.0, T0 + 20 * DAY))  # judges nothing; every list closes before it
    return (
        pd.DataFrame(imp, columns=["user", "item", "rank", "served_at", "variant"]),
        pd.DataFrame(fb, columns=["user", "item", "value", "at"]),
    )


def _per_list(imp: pd.DataFrame, fb: pd.DataFrame, k: int = 3) -> pd.DataFrame:
    """Each served list's P@k by hand: clicks among its items / k."""
    clicked = set(zip(fb["user"], fb["item"], strict=True))
    hit = [(u, i) in clicked for u, i in zip(imp["user"], imp["item"], strict=True)]
    lists = imp.assign(hit=hit).groupby(["user", "served_at", "variant"], as_index=False)["hit"]
    return lists.sum().assign(value=lambda d: d["hit"] / k)


def _oracle(lists: pd.DataFrame) -> dict[str, float]:
    """B against A on users: the ratio's delta-method variance written from the formula."""
    out = {}
    for v in ("A", "B"):
        per = lists[lists["variant"] == v].groupby("user")["value"].agg(["sum", "count"])
        s, n = per["sum"].to_numpy(), per["count"].to_numpy(float)
        r = s.sum() / n.sum()
        m = len(per)
        var = ((s - r * n) ** 2).sum() / ((m - 1) * m * (n.mean()) ** 2)
        out[v] = r
        out[f"var{v}"], out[f"m{v}"], out[f"lists{v}"] = var, m, n.sum()
    se2 = out["varA"] + out["varB"]
    df = se2**2 / (out["varA"] ** 2 / (out["mA"] - 1) + out["varB"] ** 2 / (out["mB"] - 1))
    out["delta"] = out["B"] - out["A"]
    out["se"] = math.sqrt(se2)
    out["df"] = df
    out["p"] = 2 * stats.t.sf(abs(out["delta"]) / out["se"], df)
    return out


def _monitor(imp, fb, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.monitor(imp, fb, ["P@3"], attribution="1D", variant_col="variant", **kwargs)


def test_window_comparison_is_on_users_with_the_delta_method():
    imp, fb = _ab_logs(seed=3)
    m = _monitor(imp, fb, window="W", n_resamples=0)
    row = m.comparisons.iloc[0]
    o = _oracle(_per_list(imp, fb))
    assert (row["n"], row["baseline_n"]) == (o["mB"], o["mA"])
    assert (row["lists"], row["baseline_lists"]) == (o["listsB"], o["listsA"])
    assert row["delta"] == pytest.approx(o["delta"], abs=1e-12)
    assert row["p_value"] == pytest.approx(o["p"], rel=1e-9)
    # the window's own numbers stay means over lists
    assert m.windows.set_index("variant")["P@3"]["B"] == pytest.approx(o["B"], abs=1e-12)


def test_unit_list_is_welch_over_lists():
    imp, fb = _ab_logs(seed=4)
    m = _monitor(imp, fb, window="W", n_resamples=0, unit="list")
    lists = _per_list(imp, fb)
    row = m.comparisons.iloc[0]
    a = lists.loc[lists["variant"] == "A", "value"]
    b = lists.loc[lists["variant"] == "B", "value"]
    assert (row["n"], row["lists"]) == (len(b), len(b))
    assert row["p_value"] == pytest.approx(stats.ttest_ind(b, a, equal_var=False).pvalue, rel=1e-9)


def test_the_interval_is_the_welch_t_interval_of_the_delta_method():
    imp, fb = _ab_logs(seed=5)
    row = _monitor(imp, fb, window="W", n_resamples=400, seed=7).comparisons.iloc[0]
    o = _oracle(_per_list(imp, fb))
    half = stats.t.ppf(0.975, o["df"]) * o["se"]
    assert row["ci_low"] == pytest.approx(o["delta"] - half, abs=1e-12)
    assert row["ci_high"] == pytest.approx(o["delta"] + half, abs=1e-12)
    # the interval excludes 0 exactly when p < 0.05
    assert (row["ci_low"] > 0 or row["ci_high"] < 0) == (row["p_value"] < 0.05)


def test_bad_unit_and_planned_users_are_one_line_errors():
    imp, fb = _ab_logs(seed=1, users=6, days=1)
    with pytest.raises(ReceValError, match="unit must be 'user' or 'list'"):
        _monitor(imp, fb, unit="session")
    with pytest.raises(ReceValError, match="planned_users must be a positive whole number"):
        _monitor(imp, fb, planned_users=0)


# --- the confidence sequence -----------------------------------------------------------------


def _mixture(s: float, v: float, rho: float) -> float:
    """The two-sided normal mixture by its definition: the integral over lambda ~ N(0, 1/rho)
    of exp(lambda s - lambda^2 v / 2) (Howard et al. 2021, section 3)."""
    sd = 1 / math.sqrt(rho)

    def f(lam: float) -> float:
        return math.exp(lam * s - lam * lam * v / 2) * stats.norm.pdf(lam, scale=sd)

    return integrate.quad(f, -40 * sd, 40 * sd, limit=200)[0]


@pytest.mark.parametrize(
    ("v", "planned", "alpha"), [(100.0, 1000, 0.05), (5000.0, 1000, 0.05), (1000.0, 1000, 0.1)]
)
def test_boundary_is_where_the_mixture_reaches_one_over_alpha(v, planned, alpha):
    rho = sequential.mixing(planned, alpha)
    b = sequential.boundary(v, rho, alpha)
    assert _mixture(b, v, rho) == pytest.approx(1 / alpha, rel=1e-6)
    # confseq's best_rho (uniform_boundaries.h, TwoSidedNormalMixture::best_rho), by hand
    k = 2 * math.log(1 / alpha)
    assert rho == pytest.approx(planned / (k + math.log(1 + k)), rel=1e-15)
    # and the p-value is 1 / M at a point inside
    assert sequential.p_value(b / 2 / math.sqrt(v), 1.0, v, rho) == pytest.approx(
        min(1, 1 / _mixture(b / 2, v, rho)), rel=1e-6
    )


def test_boundary_worked_by_hand():
    # v = 10000, alpha = 0.05, tuned at 10000: 2 ln 20 = 5.991465, ln(1 + 5.991465) = 1.944690,
    # rho = 10000 / 7.936155 = 1260.0561; ln(1 + 10000 / 1260.0561) = 2.190105;
    # bound = sqrt(11260.0561 (2.190105 + 5.991465)) = sqrt(92124.94) = 303.5209
    assert sequential.boundary(10_000, sequential.mixing(10_000, 0.05), 0.05) == pytest.approx(
        303.5209, abs=1e-3
    )


def _daily(**kwargs):
    imp, fb = _ab_logs(seed=11, users=80, days=8, **kwargs)
    return imp, fb


def test_decisions_are_the_sequence_over_closed_windows_by_hand():
    imp, fb = _daily(lift=0.0)
    m = _monitor(imp, fb, window="D", n_resamples=0, planned_users=100)
    d = m.decisions
    assert list(d.columns[:9]) == [
        "variant",
        "baseline",
        "metric",
        "delta",
        "cs_low",
        "cs_high",
        "p_always_valid",
        "users",
        "baseline_users",
    ]
    lists = _per_list(imp, fb)
    closed_ends = (m.windows.loc[m.windows["closed"], "window_end"]).drop_duplicates()
    rho = sequential.mixing(100, 0.05)
    ps, lows, highs = [], [], []
    for end in sorted(closed_ends):
        o = _oracle(lists[lists["served_at"] < end])
        t = o["mA"] + o["mB"]
        s = math.sqrt(t) * o["delta"] / o["se"]
        log_m = 0.5 * math.log(rho / (t + rho)) + s * s / (2 * (t + rho))
        ps.append(min(1.0, math.exp(-log_m)))
        w = (
            o["se"]
            / math.sqrt(t)
            * math.sqrt((t + rho) * (math.log(1 + t / rho) + 2 * math.log(20)))
        )
        lows.append(o["delta"] - w)
        highs.append(o["delta"] + w)
    row = d.iloc[0]
    assert row["looks"] == len(ps) >= 5
    assert row["p_always_valid"] == pytest.approx(min(ps), rel=1e-9)
    assert row["cs_low"] == pytest.approx(max(lows), abs=1e-12)
    assert row["cs_high"] == pytest.approx(min(highs), abs=1e-12)
    assert row["delta"] == pytest.approx(o["delta"], abs=1e-12)
    assert (row["users"], row["baseline_users"]) == (o["mB"], o["mA"])
    assert row["decision"] == ("stop" if min(ps) <= 0.05 else "continue")


def test_incremental_runs_give_the_bits_of_one_run(tmp_path):
    imp, fb = _daily()
    whole = _monitor(imp, fb, window="D", n_resamples=0)
    state = tmp_path / "s.sqlite"
    cuts = [T0 + 2 * DAY, T0 + 5 * DAY, T0 + 30 * DAY]
    lo = T0 - DAY
    for cut in cuts:
        part_i = imp[(imp["served_at"] >= lo) & (imp["served_at"] < cut)]
        part_f = fb[(fb["at"] >= lo) & (fb["at"] < cut)]
        last = _monitor(part_i, part_f, window="D", n_resamples=0, state=state)
        lo = cut
    pd.testing.assert_frame_equal(last.decisions, whole.decisions, check_exact=True)
    assert last.to_json() == whole.to_json()


def test_a_lift_is_found_and_reads_stop():
    imp, fb = _ab_logs(seed=2, users=300, days=8, lift=0.25)
    d = _monitor(imp, fb, window="D", n_resamples=0, planned_users=300).decisions.iloc[0]
    assert d["decision"] == "stop" and d["cs_low"] > 0 and d["p_always_valid"] <= 0.05


# --- CUPED -----------------------------------------------------------------------------------


def test_cuped_by_hand():
    imp, fb = _daily()
    lists = _per_list(imp, fb)
    rng = np.random.default_rng(0)
    users = np.arange(80)
    # a pre-period value that correlates with each user's click rate
    rate = lists.groupby("user")["value"].mean().reindex(users).fillna(0).to_numpy()
    cov = pd.DataFrame({"user": users, "P@3": rate + rng.normal(0, 0.05, users.size)})
    m = _monitor(imp, fb, window="D", n_resamples=0, covariate=cov)
    plain = _monitor(imp, fb, window="D", n_resamples=0)
    d, p = m.decisions.iloc[0], plain.decisions.iloc[0]
    assert d["delta_unadjusted"] == p["delta"]
    # by hand at the last look: linearised values y, pooled theta, adjusted variance
    end = d["last_look"]
    y, x, arm = [], [], []
    for v in ("A", "B"):
        per = (
            lists[(lists["variant"] == v) & (lists["served_at"] < end)]
            .groupby("user")["value"]
            .agg(["sum", "count"])
        )
        r = per["sum"].sum() / per["count"].sum()
        y.append((per["sum"] - r * per["count"]) / per["count"].mean())
        x.append(cov.set_index("user")["P@3"].reindex(per.index))
        arm.append(v)
    yy, xx = pd.concat(y).to_numpy(), pd.concat(x).to_numpy()
    theta = np.cov(yy, xx)[0, 1] / np.var(xx, ddof=1)
    adj_var = sum(
        np.var(yi.to_numpy() - theta * (xi.to_numpy() - xi.mean()), ddof=1) / len(yi)
        for yi, xi in zip(y, x, strict=True)
    )
    plain_var = sum(np.var(yi.to_numpy(), ddof=1) / len(yi) for yi in y)
    assert d["delta"] == pytest.approx(p["delta"] - theta * (x[1].mean() - x[0].mean()), abs=1e-12)
    assert d["variance_reduction"] == pytest.approx(1 - adj_var / plain_var, rel=1e-9)
    assert d["variance_reduction"] > 0.3


def test_covariate_errors_are_one_line():
    imp, fb = _ab_logs(seed=1, users=6, days=1)
    with pytest.raises(ReceValError, match="no column named like a metric"):
        _monitor(imp, fb, covariate={"user": [1], "x": [1.0]})
    with pytest.raises(ReceValError, match="has several rows"):
        _monitor(imp, fb, covariate={"user": [1, 1], "covariate": [1.0, 2.0]})


# --- the simulation (benchmarks/simulate_ab.py) ----------------------------------------------


def _simulation():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "simulate_ab.py"
    spec = importlib.util.spec_from_file_location("simulate_ab", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_simulation_sequence_is_the_monitors():
    sim = _simulation()
    sums = sim.simulate(1, 40, 6, seed=3)
    imp, fb = sim.logs(sums, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = receval.monitor(
            imp,
            fb,
            "P@5",
            window="D",
            attribution="1D",
            variant_col="variant",
            n_resamples=0,
            planned_users=40,
        )
    d = m.decisions.iloc[0]
    seq = sim.sequence(sums, 40, 0.05)
    assert d["looks"] == 6
    assert d["delta"] == pytest.approx(seq["delta"][0, -1], abs=1e-12)
    assert d["p_always_valid"] == pytest.approx(seq["p_always_valid"][0, -1], rel=1e-9)
    assert d["cs_low"] == pytest.approx(seq["cs_low"][0, -1], abs=1e-12)
    assert d["cs_high"] == pytest.approx(seq["cs_high"][0, -1], abs=1e-12)
    # and the per-window user-unit test on the last day is the simulation's fixed test
    last = sim.sequence(
        sim.Sums(sums.n[..., -1:], sums.s[..., -1:], sums.q[..., -1:], sums.arm, sums.pre), 40, 0.05
    )
    assert m.comparisons["p_value"].iloc[-1] == pytest.approx(last["p_fixed"][0, 0], rel=1e-9)


def test_a_small_aa_simulation_keeps_the_promises():
    """300 A/A experiments, 150 users, 30 daily looks (fixed seed: the same numbers every
    run). The per-window list test and the daily-looked fixed test exceed alpha; the user
    test looked at once and the anytime-valid sequence looked at daily stay within alpha plus
    two standard errors."""
    sim = _simulation()
    out = sim.run(300, 150, 30, 0.0, 0.05, seed=0)
    r, bound = out["rates"], 0.05 + 2 * math.sqrt(0.05 * 0.95 / 300)
    assert r["b"] <= bound and r["d"] <= bound and r["d_cuped"] <= bound
    assert r["a_window"] > 0.08 and r["a_any"] > 0.5 and r["c"] > r["b"]
    assert out["cuped_variance_reduction"] > 0.5


# --- receval check over the decisions --------------------------------------------------------


def test_receval_check_gates_on_the_decisions(tmp_path):
    from click.testing import CliRunner

    from receval.cli import main

    imp, fb = _ab_logs(seed=2, users=300, days=8, lift=0.25)
    imp.to_csv(tmp_path / "imp.csv", index=False)
    fb.to_csv(tmp_path / "fb.csv", index=False)
    runner = CliRunner()
    done = runner.invoke(
        main,
        [
            "monitor",
            "-i",
            str(tmp_path / "imp.csv"),
            "--feedback",
            str(tmp_path / "fb.csv"),
            "-m",
            "P@3",
            "--window",
            "D",
            "--attribution",
            "1D",
            "--variant-col",
            "variant",
            "--resamples",
            "0",
            "--planned-users",
            "300",
            "-f",
            "json",
        ],
    )
    assert done.exit_code == 0, done.output
    (tmp_path / "monitor.json").write_text(done.stdout)
    table = runner.invoke(
        main,
        [
            "monitor",
            "-i",
            str(tmp_path / "imp.csv"),
            "--feedback",
            str(tmp_path / "fb.csv"),
            "-m",
            "P@3",
            "--window",
            "D",
            "--attribution",
            "1D",
            "--variant-col",
            "variant",
            "--resamples",
            "0",
            "--planned-users",
            "300",
        ],
    )
    assert "tuned for 300 users (planned_users=)" in table.stdout and "stop: higher" in table.stdout
    page = _monitor(imp, fb, window="D", n_resamples=0, planned_users=300).to_html()
    assert '<h2 id="decisions">Decisions</h2>' in page and "<strong>stop: higher</strong>" in page
    assert "tuned for 300 users" in page
    d = _monitor(imp, fb, window="D", n_resamples=0, planned_users=300).decisions.iloc[0]
    gate = tmp_path / "gate.toml"
    gate.write_text(
        'monitor = "monitor.json"\nchecks = ["P@3[B] >= baseline", '
        f'"P@3 <= baseline + {d["cs_high"] - 0.001:.6f}"]\n'
    )
    out = runner.invoke(main, ["check", str(gate)])
    assert out.exit_code == 3, out.output  # the second check's high end is above its bound
    assert "pass" in out.stdout and "FAIL P@3[B] <= baseline" in out.stdout
    gate.write_text('monitor = "monitor.json"\nchecks = ["P@3 >= baseline"]\n')
    assert runner.invoke(main, ["check", str(gate)]).exit_code == 0
    gate.write_text('monitor = "monitor.json"\nchecks = ["P@3 >= 0.1"]\n')
    bad = runner.invoke(main, ["check", str(gate)])
    assert bad.exit_code == 2 and "against the baseline" in bad.output


def test_covariate_from_a_pre_period_log_is_each_users_mean_there():
    pre_imp, pre_fb = _ab_logs(seed=21, users=80, days=5)
    imp, fb = _daily()
    pre_lists = _per_list(pre_imp, pre_fb)
    by_hand = pre_lists.groupby("user")["value"].mean().rename("P@3").reset_index()
    given = _monitor(imp, fb, window="D", n_resamples=0, covariate=by_hand)
    logs = _monitor(
        imp, fb, window="D", n_resamples=0, covariate=(pre_imp.drop(columns="variant"), pre_fb)
    )
    a, b = given.decisions.iloc[0], logs.decisions.iloc[0]
    assert b["variance_reduction"] == pytest.approx(a["variance_reduction"], rel=1e-9)
    assert b["delta"] == pytest.approx(a["delta"], abs=1e-12)


def test_incremental_runs_with_text_user_ids_give_the_bits_of_one_run(tmp_path):
    imp, fb = _daily()
    imp["user"] = "u" + imp["user"].astype(str)
    fb["user"] = "u" + fb["user"].astype(str)
    whole = _monitor(imp, fb, window="D", n_resamples=0)
    state = tmp_path / "s.sqlite"
    lo = T0 - DAY
    for cut in (T0 + 3 * DAY, T0 + 30 * DAY):
        last = _monitor(
            imp[(imp["served_at"] >= lo) & (imp["served_at"] < cut)],
            fb[(fb["at"] >= lo) & (fb["at"] < cut)],
            window="D",
            n_resamples=0,
            state=state,
        )
        lo = cut
    pd.testing.assert_frame_equal(last.decisions, whole.decisions, check_exact=True)
    assert whole.decisions["looks"].iloc[0] >= 5
