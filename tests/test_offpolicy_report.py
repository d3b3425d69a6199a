"""The off-policy section in the monitor page (per window) and in the main report: the numbers
shown are those of ``receval.offpolicy.estimate`` on ``log_from_monitor``'s log, formatted by
receval.numbers; the section is absent when no estimate is given."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval import numbers
from receval.offpolicy import estimate, log_from_monitor, monitor_estimates
from receval.report.html import render_report

T0 = pd.Timestamp("2024-01-01", tz="UTC")  # a Monday: weekly windows start here


def _served(n_lists: int = 240, seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Lists of 2 over four weeks, a logger's propensity per shown item, clicks within 2 days."""
    rng = np.random.default_rng(seed)
    users = np.arange(n_lists)  # one list per user: (user, served_at) is the request
    served = T0 + pd.to_timedelta(rng.integers(0, 28 * 24, n_lists), unit="h")
    items = np.stack([rng.choice(8, 2, replace=False) for _ in range(n_lists)])
    imp = pd.DataFrame({"user": np.repeat(users, 2), "item": items.ravel(),
                        "rank": np.tile([1, 2], n_lists),
                        "served_at": np.repeat(served, 2).tz_localize(None),
                        "propensity": rng.uniform(0.2, 0.8, 2 * n_lists),
                        "variant": np.repeat(rng.choice(["A", "B"], n_lists), 2)})
    click = rng.uniform(size=len(imp)) < 0.3
    fb = pd.DataFrame({"user": imp["user"][click], "item": imp["item"][click], "value": 1.0,
                       "at": imp["served_at"][click] + pd.to_timedelta(1, unit="h")})
    return imp, fb


def _target(imp: pd.DataFrame) -> pd.DataFrame:
    """A deterministic target: item 0 at position 1 of every list (where the log shows it,
    a weight of 1/propensity; elsewhere support is missing)."""
    lists = imp[["user", "served_at"]].drop_duplicates()
    return lists.assign(item=imp["item"].iloc[0], position=1, probability=1.0)


def _expected(imp: pd.DataFrame, fb: pd.DataFrame, target: pd.DataFrame,
              **monitor: object) -> pd.DataFrame:
    """The estimate by hand from the public pieces: log_from_monitor + estimate(by=window)."""
    variant = monitor.get("variant_col")
    log = log_from_monitor(imp, fb, attribution="2D", window="W", variant_col=variant)
    return estimate(log, {"new": target}, estimators=["ips", "snips"], seed=0,
                    n_resamples=50, by=["window", "variant"] if variant else "window",
                    alpha=float(monitor.get("alpha", 0.05))).table


def _row_text(row: pd.Series, groups: list[str]) -> str:
    """The start of a row of the section's table as the fragment writes it."""
    cells = "".join(f'<td class="left">{g}</td>' for g in groups)
    return (f'{cells}<td class="left">{row["estimator"]}</td>'
            f'<td>{numbers.value(row["value"])}</td>'
            f'<td>{numbers.interval(row["ci_low"], row["ci_high"])}</td>'
            f'<td>{numbers.interval(row["normal_low"], row["normal_high"])}</td>')


def test_monitor_page_shows_the_estimates_of_each_window() -> None:
    imp, fb = _served()
    target = _target(imp)
    m = receval.monitor(imp, fb, "P@2", window="W", attribution="2D", n_resamples=50)
    assert 'id="offpolicy"' not in m.to_html()  # not asked: no section
    page = m.to_html(offpolicy=monitor_estimates(m, imp, fb, {"new": target}))
    assert page.count('<section id="offpolicy">') == 1
    expected = _expected(imp, fb, target)
    assert expected["window"].nunique() >= 3  # several weeks, each closed
    section = page.split('<section id="offpolicy">')[1]
    for _, row in expected.iterrows():
        assert _row_text(row, [str(row["window"].date())]) in section
    assert len(re.findall(r'<td class="left">(ips|snips)</td>', section)) == len(expected)


def test_monitor_page_per_window_and_variant() -> None:
    imp, fb = _served()
    target = _target(imp)
    m = receval.monitor(imp, fb, "P@2", window="W", attribution="2D", n_resamples=50,
                        variant_col="variant", confidence=0.9)
    page = m.to_html(offpolicy=monitor_estimates(m, imp, fb, {"new": target}))
    assert "90% bootstrap percentile over requests (50 resamples)" in page
    expected = _expected(imp, fb, target, variant_col="variant", alpha=0.1)
    assert set(expected["variant"]) == {"A", "B"}
    section = page.split('<section id="offpolicy">')[1]
    for _, row in expected.iterrows():
        assert _row_text(row, [str(row["window"].date()), row["variant"]]) in section


def test_rolling_windows_refused() -> None:
    imp, fb = _served(60)
    m = receval.monitor(imp, fb, "P@2", window="2D", step="D", n_resamples=0)
    with pytest.raises(receval.ReceValError, match="rolling windows"):
        monitor_estimates(m, imp, fb, {"new": _target(imp)})


def test_report_shows_the_estimate_section() -> None:
    imp, fb = _served()
    target = _target(imp)
    r = receval.evaluate({"user": [1], "item": [1]},
                         {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
    assert 'id="offpolicy"' not in render_report(r)
    log = log_from_monitor(imp, fb, attribution="2D")
    est = estimate(log, {"new": target, "<b>": target}, estimators=["ips", "snips"],
                   n_resamples=40, seed=7)
    page = render_report(r, offpolicy=est)
    section = page.split('<section id="offpolicy">')[1].split("</section>")[0]
    assert "<h3>new</h3>" in section and "<h3>&lt;b&gt;</h3>" in section
    assert "(40 resamples)" in section
    for _, row in est.table.iterrows():
        assert _row_text(row, []) in section
        assert f'<td>{numbers.count(row["ess"])}</td>' in section


def test_cli_monitor_targets_put_estimates_in_the_report(tmp_path: Path) -> None:
    imp, fb = _served()
    target = _target(imp)
    imp.to_csv(tmp_path / "served.csv", index=False)
    fb.to_csv(tmp_path / "clicks.csv", index=False)
    target.to_csv(tmp_path / "new.csv", index=False)
    run = [sys.executable, "-m", "receval.cli", "monitor", "-i", str(tmp_path / "served.csv"),
           "--feedback", str(tmp_path / "clicks.csv"), "-m", "P@2", "--window", "W",
           "--attribution", "2D", "--resamples", "50", "--target",
           f"new={tmp_path / 'new.csv'}"]
    out = subprocess.run([*run, "--report", str(tmp_path / "page.html")],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    section = (tmp_path / "page.html").read_text().split('<section id="offpolicy">')[1]
    target["served_at"] = pd.to_datetime(target["served_at"])
    for _, row in _expected(imp, fb, target).iterrows():
        assert _row_text(row, [str(row["window"].date())]) in section
    no_report = subprocess.run(run, capture_output=True, text=True, check=False)
    assert no_report.returncode == 2 and "give --report" in no_report.stderr
    with_state = subprocess.run([*run, "--report", str(tmp_path / "p2.html"), "--state",
                                 str(tmp_path / "s.sqlite")], capture_output=True, text=True,
                                check=False)
    assert with_state.returncode == 2 and "without --state" in with_state.stderr
    assert not (tmp_path / "p2.html").exists() and not (tmp_path / "s.sqlite").exists()
