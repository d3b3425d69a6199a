"""The HTML report: self-contained and offline, every id escaped, rendered by a real browser.

The browser test runs Debian's chromium headless (installed by .ci/run from .ci/apt.txt) and
asserts on the DOM it builds and on a screenshot.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.cli import main
from receval.report.html import render_report, write_report

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

EVIL_USER = "<script>alert(1)</script>"
EVIL_ITEM = "<img src=x onerror=\"document.title='pwned'\">"
EVIL_MODEL = "<b>model"  # a file name may hold < and >
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def _evil_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Users u0..u19 find their item; the evil user finds its item last (so first in the
    reversed model: the two models differ for it); everyone gets EVIL_ITEM."""
    rng = np.random.default_rng(4)
    users = [f"u{i}" for i in range(20)] + [EVIL_USER]
    truth = pd.DataFrame({"user": users, "item": [f"i{i}" for i in range(21)]})
    rows = []
    for n, user in enumerate(users):
        own, score = (f"i{n}", 2.0) if user != EVIL_USER else (f"i{n}", 0.1)
        for item, value in ((own, score), (EVIL_ITEM, 1.0), (f"x{rng.integers(50)}", 0.5)):
            rows.append((user, item, value))
    return truth, pd.DataFrame(rows, columns=["user", "item", "score"])


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report made by the CLI from files holding hostile ids and a hostile model name."""
    folder = tmp_path_factory.mktemp("report")
    truth, preds = _evil_frames()
    truth.to_csv(folder / "truth.csv", index=False)
    preds.to_csv(folder / f"{EVIL_MODEL}.csv", index=False)
    preds.assign(score=-preds["score"]).to_csv(folder / "reverse.csv", index=False)
    out = folder / "report.html"
    result = CliRunner().invoke(main, [
        "evaluate", "-t", str(folder / "truth.csv"), "-p", str(folder / f"{EVIL_MODEL}.csv"),
        "-p", str(folder / "reverse.csv"), "-m", "P@1,2", "-m", "nDCG@3", "-m", "MRR",
        "--report", str(out), "-f", "json",
    ])
    assert result.exit_code == 0, result.output
    return out


def test_report_is_self_contained_and_offline(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in page  # CSP: no script, no remote load
    outside_data = re.sub(r'src="data:[^"]*"', "", page)
    assert not re.search(r"https?://|//cdn|<script|<link|@import|url\(", outside_data)
    images = re.findall(r'<img src="data:image/svg\+xml;base64,[A-Za-z0-9+/=]+"', page)
    assert len(images) >= 4 + 3  # 4 plots, a histogram per ranking metric


def test_every_id_is_escaped(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&#34;document.title=&#39;pwned&#39;&#34;&gt;" in page
    assert "&lt;b&gt;model" in page
    for raw in (EVIL_USER, EVIL_ITEM, EVIL_MODEL):
        assert raw not in page


def test_report_shows_summary_options_counts(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    for section in ("summary", "plots", "distribution", "users", "items", "counts", "options"):
        assert f'<section id="{section}">' in page
    assert "users evaluated 21" in page
    assert ">only in truth<" in page and ">truth dropped duplicates<" in page


def test_python_api_and_notebook_view(tmp_path: Path) -> None:
    truth, preds = _evil_frames()
    result = receval.evaluate(truth, preds, ["P@1", "R@1"])
    reverse = receval.evaluate(truth, preds.assign(score=-preds["score"]), ["P@1", "R@1"])
    page = render_report({"m": result, "reverse": reverse})  # users listed where they differ
    assert "&lt;script&gt;" in page and EVIL_USER not in page
    assert write_report(tmp_path / "sub" / "r.html", result).exists()
    html = result._repr_html_()  # the notebook view lists the first users: the evil one too
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert EVIL_USER not in html and "<table" in html and "P@1" in html


# --- in a real browser -----------------------------------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("chromium is not installed: apt-get install -y chromium (listed in .ci/apt.txt)")


def _browser(*args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as profile:
        command = [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
        env = dict(os.environ, HOME=profile)
        # timeout: a guard against a hung browser, not an assertion on speed
        return subprocess.run(command, capture_output=True, text=True, timeout=180,
                              check=False, env=env)


def test_chromium_renders_the_dom(report: Path) -> None:
    done = _browser("--dump-dom", report.resolve().as_uri())
    dom = done.stdout
    assert done.returncode == 0 and dom.strip(), done.stderr[-2000:]
    assert "<title>receval report</title>" in dom  # the onerror payload never ran
    assert "pwned" not in re.sub(r"&lt;.*?&gt;", "", dom)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom  # the id shows as text
    assert "<script" not in dom.lower()
    assert dom.count('<img src="data:image/svg+xml;base64,') >= 7
    summary = dom[dom.index('<section id="summary">'):dom.index("</section>")]
    assert "&lt;b&gt;model" in summary and "reverse" in summary and "nDCG@3" in summary


def test_chromium_screenshot(report: Path, tmp_path: Path) -> None:
    import matplotlib.image as mpimg

    shot = tmp_path / "report.png"
    done = _browser(f"--screenshot={shot}", "--window-size=1200,1600",
                    report.resolve().as_uri())
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 30_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1200, 1600)
    pixels = mpimg.imread(shot)
    # text and plots, not a blank page: many distinct colours, mostly light background
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1])[::7], axis=0)) > 50
    assert pixels[..., :3].mean() > 0.7


# --- curves, users, reproducibility ----------------------------------------------------------


def _ranked(ranks: dict[str, int | None], length: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each user has one relevant item at the given rank of a list of ``length`` (``None``:
    not in the list)."""
    truth = pd.DataFrame({"user": list(ranks), "item": [f"rel-{u}" for u in ranks]})
    rows = [(user, f"rel-{user}" if j == rank else f"filler-{j}", float(length - j))
            for user, rank in ranks.items() for j in range(1, length + 1)]
    return truth, pd.DataFrame(rows, columns=["user", "item", "score"])


def _cli_report(folder: Path, models: dict[str, dict[str, int | None]], length: int,
                *args: str) -> str:
    truth = None
    command = ["evaluate", "-m", "P@10", "-m", "MRR", "-f", "json"]
    for name, ranks in models.items():
        truth, preds = _ranked(ranks, length)
        preds.to_csv(folder / f"{name}.csv", index=False)
        command += ["-p", str(folder / f"{name}.csv")]
    assert truth is not None
    truth.to_csv(folder / "truth.csv", index=False)
    out = folder / "report.html"
    result = CliRunner().invoke(main, [*command, "-t", str(folder / "truth.csv"),
                                       "--report", str(out), *args])
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8")


def _section(page: str, name: str) -> str:
    start = page.index(f'<section id="{name}">')
    return page[start:page.index("</section>", start)]


def _cells(html: str, table_class: str) -> list[list[str]]:
    body = html[html.index(f'<table class="{table_class}">'):]
    body = body[:body.index("</table>")]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)
            if "<td" in row]


# first hits: a at 1, b at 4, c at 15, d none; lists of 40; the cutoff of P@10 is 10
BASE = {"a": 1, "b": 4, "c": 15, "d": None}
# the second model: a at 2 (P@10 same), b at 30 (worse), c at 7 (better), d at 1 (better)
OTHER = {"a": 2, "b": 30, "c": 7, "d": 1}


def test_curves_span_every_rank_the_lists_hold(tmp_path: Path) -> None:
    page = _cli_report(tmp_path, {"base": BASE}, 40)
    assert "Precision and recall at each cutoff (k = 1 to 40)" in page
    assert "Precision-recall curve traced by k (k = 1 to 40)" in page
    page = _cli_report(tmp_path, {"base": BASE}, 40, "--max-k", "12")
    assert "Precision and recall at each cutoff (k = 1 to 12)" in page


def test_users_without_a_hit_and_first_hit_ranks(tmp_path: Path) -> None:
    users = _section(_cli_report(tmp_path, {"base": BASE, "other": OTHER}, 40), "users")
    # base: c and d have no hit in the top 10; c has one deeper (rank 15), d none by rank 40
    # other: b only (its hit is at rank 30)
    assert _cells(users, "missing") == [
        ["base", "4", "50.0% (2)", "50.0% (1)", "50.0% (1)"],
        ["other", "4", "25.0% (1)", "100.0% (1)", "0.0% (0)"],
    ]
    assert _cells(users, "first-hit") == [
        ["rank 1", "25.0% (1)", "25.0% (1)"],          # base a; other d
        ["ranks 2\u20133", "0.0% (0)", "25.0% (1)"],   # other a
        ["ranks 4\u20135", "25.0% (1)", "0.0% (0)"],   # base b
        ["ranks 6\u201310", "0.0% (0)", "25.0% (1)"],  # other c
        ["ranks 11\u201320", "25.0% (1)", "0.0% (0)"],  # base c
        ["ranks 21\u201340", "0.0% (0)", "25.0% (1)"],  # other b
        ["none in the top 40", "25.0% (1)", "0.0% (0)"],  # base d
    ]


def test_where_the_models_differ(tmp_path: Path) -> None:
    users = _section(_cli_report(tmp_path, {"base": BASE, "other": OTHER}, 40), "users")
    # P@10 per user: base a .1 b .1 c 0 d 0; other a .1 b 0 c .1 d .1
    row = _cells(users, "differences")[0]
    assert row[:6] == ["other", "4", "50.0% (2)", "25.0% (1)", "25.0% (1)", "+0.0250"]
    gains, losses = (_cells(users[i:], "differing") for i in
                     [m.start() for m in re.finditer('<table class="differing">', users)])
    assert gains == [["c", "0.0000", "0.1000", "+0.1000"], ["d", "0.0000", "0.1000", "+0.1000"]]
    assert losses == [["b", "0.1000", "0.0000", "-0.1000"]]


def test_report_is_byte_reproducible(tmp_path: Path) -> None:
    pages = [(_cli_report(tmp_path, {"base": BASE, "other": OTHER}, 40)) for _ in range(2)]
    assert pages[0] == pages[1]
    assert not re.search(r"\d{4}-\d{2}-\d{2}", pages[0])  # no date unless asked
    truth, preds = _evil_frames()
    result = receval.evaluate(truth, preds, ["P@1", "R@1"])
    assert re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", render_report(result, timestamp=True))


def test_tex_in_a_model_name(tmp_path: Path) -> None:
    truth, preds = _ranked(BASE, 20)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    command = ["evaluate", "-t", str(tmp_path / "truth.csv"), "-m", "P@10", "-f", "json",
               "--report", str(tmp_path / "r.html")]
    for name in ("rev$$", "$x^2$"):
        preds.to_csv(tmp_path / f"{name}.csv", index=False)
        command += ["-p", str(tmp_path / f"{name}.csv")]
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 0, result.output
    summary = _section((tmp_path / "r.html").read_text(encoding="utf-8"), "summary")
    assert "<th>rev$$ (a)</th>" in summary and "<th>$x^2$ (b)</th>" in summary


def test_progress_names_each_step() -> None:
    truth, preds = _evil_frames()
    result = receval.evaluate(truth, preds, ["P@1,2", "R@1,2"])
    steps: list[str] = []
    render_report({"a": result, "b": result}, progress=steps.append)
    assert steps == ["paired tests between the models", "curves and comparison plots",
                     "per-user distributions",
                     "users without a hit, and where models differ", "writing the page"]


def test_cli_report_progress_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib
    import io

    from rich.console import Console

    from receval import cli

    monkeypatch.setattr(cli.common, "err_console", Console(file=io.StringIO()))
    with contextlib.ExitStack() as stack:
        assert cli.common._report_progress(stack) is None  # not a terminal: nothing drawn
    terminal = io.StringIO()
    monkeypatch.setattr(cli.common, "err_console", Console(file=terminal, force_terminal=True))
    with contextlib.ExitStack() as stack:
        step = cli.common._report_progress(stack)
        assert step is not None
        step("per-user distributions")
    assert "report: per-user distributions" in terminal.getvalue()


# --- significance marks and the paired-difference plot (issue 12) -----------------------------


def _three_models() -> dict[str, receval.Result]:
    """a and c rank at random; b puts three relevant items first for every user."""
    rng = np.random.default_rng(3)
    truth_rows, runs = [], {"a": [], "b": [], "c": []}
    for u in range(80):
        items = rng.choice(40, 6, replace=False)
        truth_rows += [(u, int(i)) for i in items]
        good = np.concatenate([items[:3], rng.choice(40, 7, replace=False)])
        for name, pool in (("a", rng.choice(40, 10, replace=False)), ("b", good),
                           ("c", rng.choice(40, 10, replace=False))):
            runs[name] += [(u, int(i), float(s)) for i, s in
                           zip(pool, rng.random(len(pool)), strict=True)]
    truth = pd.DataFrame(truth_rows, columns=["user", "item"])
    return {k: receval.evaluate(truth, pd.DataFrame(v, columns=["user", "item", "score"])
                                .drop_duplicates(["user", "item"]), ["P@5", "MRR"])
            for k, v in runs.items()}


def _expected_marks(models: dict[str, receval.Result], metrics: list[str]) -> dict:
    """scipy's paired t on every pair, Holm by hand (oracle of the marks)."""
    import scipy.stats

    names = list(models)
    tests = [(m, names[i], names[j]) for m in metrics for i in range(len(names))
             for j in range(i + 1, len(names))]
    p = np.array([scipy.stats.ttest_rel(models[y].per_user[m], models[x].per_user[m]).pvalue
                  for m, x, y in tests])
    holm, running = np.empty(len(p)), 0.0
    for rank, i in enumerate(np.argsort(p)):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        holm[i] = running
    marks = {(n, m): "" for n in names for m in metrics}
    letters = dict(zip(names, "abc", strict=False))
    for (m, x, y), q in zip(tests, holm, strict=True):
        if q < 0.05:
            better, worse = (y, x) if models[y][m] > models[x][m] else (x, y)
            marks[(better, m)] += letters[worse]
    return marks


def test_summary_marks_only_significant_differences() -> None:
    from receval.report import tables

    models = _three_models()
    expected = _expected_marks(models, ["P@5", "MRR"])
    assert expected[("b", "P@5")] == "ac" and expected[("a", "P@5")] == ""
    page = render_report(models, metrics=["P@5", "MRR"])
    summary = _section(page, "summary")
    for metric in ("P@5", "MRR"):
        row = re.search(rf"<tr><td>{re.escape(metric)}</td>(.*?)</tr>", summary).group(1)
        cells = re.findall(r'<td class="num">(.*?)</td>', row)
        for name, cell in zip(models, cells, strict=True):
            mark = re.search(r'<span class="sig"[^>]*>&gt; (.*?)</span>', cell)
            want = ", ".join(expected[(name, metric)])
            assert (mark.group(1) if mark else "") == want, (name, metric, cell)
    assert "best" not in summary
    note = re.search(r'<p class="note" id="significance">(.*?)</p>', summary, re.S).group(1)
    for words in ("paired t-test", "Holm correction across 6 comparisons",
                  "1,000 resamples", "seed 0"):
        assert words in note
    markdown = tables.to_markdown(models)
    assert "**" not in markdown and "0.3675ᵃᶜ" in markdown.splitlines()[2]
    assert markdown.splitlines()[-1].startswith("ᵃ, ᵇ, ᶜ: significantly better than model")


def test_report_draws_paired_differences_not_bars() -> None:
    models = _three_models()
    page = render_report(models, metrics=["P@5", "MRR"])
    plots_section = _section(page, "plots")
    assert "Paired differences from a with their intervals" in plots_section
    assert "Model comparison with bootstrap" not in plots_section
    one = render_report({"a": models["a"]}, metrics=["P@5", "MRR"])
    assert "Model comparison with bootstrap" in _section(one, "plots")
