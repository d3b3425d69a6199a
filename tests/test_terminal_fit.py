"""Terminal tables fit 80, 100 and 120 columns (issue 19, point 1): no cell cut (no ``…``), the
``*`` of every significant row and every significance letter kept, the footnotes across the full
width (not wrapped into the table's width); a note names the columns left out."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from rich.console import Console

import receval
import receval.cli.common as common
from receval.cli import main

METRICS = ["P@10", "nDCG@10", "MAP@10", "MRR", "R@100"]


def _files(tmp_path) -> list[str]:
    """Two models over 300 users whose training activity varies (the activity strata)."""
    rng = np.random.default_rng(5)
    truth, a, b, train = [], [], [], []
    for u in range(300):
        train += [(u, 1000 + int(i)) for i in rng.choice(500, int(rng.integers(16, 2000) // 8))]
        items = rng.choice(200, 8, replace=False)
        truth += [(u, int(i)) for i in items]
        a += [(u, int(i), float(s)) for i, s in
              zip(rng.choice(200, 100, replace=False), rng.random(100), strict=True)]
        good = np.concatenate([items[:3], rng.choice(np.setdiff1d(np.arange(200), items[:3]),
                                                     97, replace=False)])
        b += [(u, int(i), float(s)) for i, s in zip(good, rng.random(100), strict=True)]
    paths = []
    for name, rows, cols in (("truth", truth, ["user", "item"]),
                             ("a", a, ["user", "item", "score"]),
                             ("b", b, ["user", "item", "score"]),
                             ("train", train, ["user", "item"])):
        path = tmp_path / f"{name}.csv"
        pd.DataFrame(rows, columns=cols).drop_duplicates(["user", "item"]).to_csv(path,
                                                                                   index=False)
        paths.append(str(path))
    return paths


def _run(monkeypatch, width: int, args: list[str]) -> str:
    """The CLI's stdout as a terminal of ``width`` columns shows it (no colours)."""
    buffer = io.StringIO()
    terminal = Console(file=buffer, width=width, force_terminal=True, color_system=None)
    monkeypatch.setattr(common, "console", terminal)
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    return buffer.getvalue()


@pytest.mark.parametrize("width", [80, 100, 120])
def test_compare_with_strata_fits_the_terminal(tmp_path, monkeypatch, width: int) -> None:
    truth, a, b, train = _files(tmp_path)
    args = ["compare", "-t", truth, "-p", a, "-p", b, "--train", train, "--baseline", "a",
            "--strata", "activity", "--resamples", "200", "--silence", "ties",
            *(x for m in METRICS for x in ("-m", m))]
    text = _run(monkeypatch, width, args)
    assert "…" not in text
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, text
    # every significant row keeps its star: as many stars in the table as in the JSON
    rows = receval.compare(*(pd.read_csv(p) for p in (truth,)), {
        "a": pd.read_csv(a), "b": pd.read_csv(b)}, METRICS, baseline="a", strata="activity",
        train=pd.read_csv(train), n_resamples=200, silence="ties").table
    significant = int((rows["p_adjusted"] < 0.05).sum())
    assert significant > 0
    table_lines = [line for line in lines if line.startswith("│")]
    assert len(table_lines) == len(rows)
    assert sum(line.count("*") for line in table_lines) == significant
    assert "paired comparison: b against a" in text
    if width < 150:
        assert "columns left out to fit" in text and "-f markdown" in text
    # the footnote runs across the width, not in a narrow column
    assert "* adjusted p < 0.05; test: paired t" in text
    footnote = text[text.index("* adjusted p"):].splitlines()
    assert len(footnote[0]) > width - 20


def test_compare_on_a_wide_terminal_keeps_every_column(tmp_path, monkeypatch) -> None:
    truth, a, b, train = _files(tmp_path)
    args = ["compare", "-t", truth, "-p", a, "-p", b, "--train", train, "--baseline", "a",
            "--strata", "activity", "--resamples", "200", "--silence", "ties", "-m", "P@10"]
    text = _run(monkeypatch, 220, args)
    assert "columns left out" not in text
    for header in ("W/T/L", "P(better)", "d_z", "baseline", "model"):
        assert header in text


@pytest.mark.parametrize("width", [80, 100])
def test_evaluate_tables_fit_and_footnote_is_not_squeezed(tmp_path, monkeypatch,
                                                          width: int) -> None:
    truth, a, b, train = _files(tmp_path)
    models = []
    for i in range(6):  # six models: wider than 80 columns in one table
        path = tmp_path / f"model_number_{i}.csv"
        pd.read_csv(b if i % 2 else a).to_csv(path, index=False)
        models += ["-p", str(path)]
    text = _run(monkeypatch, width, ["evaluate", "-t", truth, *models, "--silence", "ties",
                                     "--train", train, "--strata", "activity", "-m", "P@10",
                                     "-m", "nDCG@10", "-m", "MRR", "-m", "R@100"])
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width, text
    for i in range(6):
        assert f"model_number_{i}" in text
    # the letters' footnote starts on one line as wide as the terminal allows
    start = text.rindex("\n", 0, text.index("significantly better than model")) + 1
    assert len(text[start:].splitlines()[0]) > min(width, 90) - 25


def test_two_model_footnote_is_not_wrapped_to_the_table(tmp_path, monkeypatch) -> None:
    truth, a, b, _ = _files(tmp_path)
    text = _run(monkeypatch, 120, ["evaluate", "-t", truth, "-p", a, "-p", b, "-m", "P@10",
                                   "--silence", "ties"])
    table_width = max(len(line) for line in text.splitlines() if line.startswith("│"))
    start = text.rindex("\n", 0, text.index("significantly better than model")) + 1
    assert len(text[start:].splitlines()[0]) > table_width


# --- every command's tables: disparity, monitor, off-policy (issue 33, item 4) ----------------


def _fits(text: str, width: int) -> None:
    assert "…" not in text, text
    assert max(len(line) for line in text.splitlines()) <= width, text


@pytest.mark.parametrize("width", [80, 100, 120])
def test_disparity_tables_fit(tmp_path, monkeypatch, width: int) -> None:
    truth, a, b, train = _files(tmp_path)
    text = _run(monkeypatch, width, ["evaluate", "-t", truth, "-p", a, "-p", b, "--train", train,
                                     "--strata", "activity", "--disparity", "welch",
                                     "--silence", "ties", "-m", "nDCG@10", "-m", "MRR"])
    _fits(text, width)
    assert "gap between groups of users" in text
    for header in ("ref.", "adj.", "interval", "users"):  # headers wrap at their spaces
        assert header in text  # no column left out
    # every row of the gaps shown in full: its interval's two ends
    assert text.count("[") >= 2 * 3  # 2 models x 2 metrics x at least the group pairs' rows


def _served(tmp_path) -> tuple[str, str]:
    """Served lists over three weeks at times of day (full timestamps as window starts)."""
    rng = np.random.default_rng(3)
    imp, fb = [], []
    start = pd.Timestamp("2024-01-01 06:30")
    for u in range(120):
        at = start + pd.Timedelta(hours=int(rng.integers(0, 21 * 24)))
        items = rng.choice(50, 5, replace=False)
        imp += [(u, int(i), r + 1, at) for r, i in enumerate(items)]
        fb += [(u, int(i), 1.0, at + pd.Timedelta(hours=2)) for i in items[:2]
               if rng.random() < 0.5]
    pd.DataFrame(imp, columns=["user", "item", "rank", "served_at"]).to_csv(
        tmp_path / "imp.csv", index=False)
    pd.DataFrame(fb, columns=["user", "item", "value", "at"]).to_csv(tmp_path / "fb.csv",
                                                                     index=False)
    return str(tmp_path / "imp.csv"), str(tmp_path / "fb.csv")


@pytest.mark.parametrize("width", [80, 100, 120])
def test_monitor_tables_fit(tmp_path, monkeypatch, width: int) -> None:
    imp, fb = _served(tmp_path)
    text = _run(monkeypatch, width, ["monitor", "-i", imp, "--feedback", fb, "-m", "P@5",
                                     "-m", "nDCG@5", "-m", "MRR", "-m", "R@5", "--window", "7D",
                                     "--origin", "2024-01-01 06:30", "--resamples", "50",
                                     "--silence", "empty-reference"])
    _fits(text, width)
    assert "2024-01-01 06:30:00" in text  # a window's start in full
    for header in ("nDCG@5", "R@5", "evaluated", "drift"):
        assert header in text


@pytest.mark.parametrize("width", [80, 100, 120])
def test_offpolicy_tables_fit(tmp_path, monkeypatch, width: int) -> None:
    rng = np.random.default_rng(0)
    n = 200
    log = pd.DataFrame({"request": np.repeat(np.arange(n), 2),
                        "item": rng.integers(0, 5, 2 * n), "position": np.tile([1, 2], n),
                        "reward": rng.integers(0, 2, 2 * n).astype(float),
                        "propensity": rng.uniform(0.2, 0.6, 2 * n)})
    log.drop_duplicates(["request", "item"]).to_csv(tmp_path / "log.csv", index=False)
    pd.DataFrame({"request": np.repeat(np.arange(n), 5), "item": np.tile(range(5), n),
                  "score": rng.normal(size=5 * n)}).to_csv(tmp_path / "t.csv", index=False)
    text = _run(monkeypatch, width, ["offpolicy", "--log", str(tmp_path / "log.csv"),
                                     "--target", f"a_long_target_name={tmp_path / 't.csv'}",
                                     "--resamples", "50", "--silence", "weights"])
    _fits(text, width)
    assert text.count("a_long_target_name") >= 2  # the row's name in each part that needs it
