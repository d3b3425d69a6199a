"""Plots: every kind is drawn from the result's own numbers and saved as a non-empty PNG/SVG."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.cli import main
from receval.exceptions import ReceValError
from receval.report import plots
from receval.report.bootstrap import bootstrap_ci, metric_cis

pytest.importorskip("matplotlib")

KS = list(range(1, 11))
CURVES = [f"P@{k}" for k in KS] + [f"R@{k}" for k in KS]


def _frames(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    truth = pd.DataFrame({"user": np.repeat(np.arange(50), 4),
                          "item": rng.integers(0, 30, 200)}).drop_duplicates()
    preds = pd.DataFrame({"user": np.repeat(np.arange(50), 15),
                          "item": np.tile(np.arange(15), 50),
                          "score": rng.random(750)})
    return truth, preds


@pytest.fixture(scope="module")
def models() -> dict[str, receval.Result]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: receval.evaluate(*_frames(seed), [*CURVES, "nDCG@10", "MRR"])
                for name, seed in (("alpha", 1), ("beta", 2))}


def _check_png(path: Path) -> None:
    import matplotlib.image as mpimg

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
    pixels = mpimg.imread(path)
    assert pixels.shape[0] > 200 and pixels.shape[1] > 200
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 10  # not blank


@pytest.mark.parametrize("kind", plots.KINDS)
def test_every_kind_saves_png_and_svg(models: dict[str, receval.Result], tmp_path: Path,
                                      kind: str) -> None:
    plots.plot(models, kind, tmp_path / f"{kind}.png")
    _check_png(tmp_path / f"{kind}.png")
    plots.plot(models, kind.replace("-", "_"), tmp_path / f"{kind}.svg")
    svg = (tmp_path / f"{kind}.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and len(svg) > 5_000


def test_result_plot_delegates(models: dict[str, receval.Result], tmp_path: Path) -> None:
    result = models["alpha"]
    fig = result.plot("distribution", tmp_path / "d.png", metric="MRR")
    _check_png(tmp_path / "d.png")
    assert fig.axes[0].get_xlabel() == "MRR per user"


def test_at_k_lines_are_the_summary_values(models: dict[str, receval.Result]) -> None:
    fig = plots.plot_at_k(models)
    precision_ax, recall_ax = fig.axes
    for line, (name, result) in zip(precision_ax.get_lines(), models.items(), strict=True):
        assert line.get_label() == name
        assert list(line.get_xdata()) == KS
        assert list(line.get_ydata()) == pytest.approx([result[f"P@{k}"] for k in KS])
    alpha_recall = recall_ax.get_lines()[0].get_ydata()
    assert list(alpha_recall) == pytest.approx([models["alpha"][f"R@{k}"] for k in KS])


def test_pr_curve_is_traced_by_k(models: dict[str, receval.Result]) -> None:
    line = plots.plot_pr_curve(models["beta"]).axes[0].get_lines()[0]
    result = models["beta"]
    assert list(line.get_xdata()) == pytest.approx([result[f"R@{k}"] for k in KS])
    assert list(line.get_ydata()) == pytest.approx([result[f"P@{k}"] for k in KS])


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_iso_curves_have_constant_f(models: dict[str, receval.Result], beta: float) -> None:
    fig = plots.plot_fbeta(models, betas=(beta,))
    grey = [line for line in fig.axes[0].get_lines() if line.get_color() == "0.75"]
    assert len(grey) == 9
    for line, level in zip(grey, [0.1 * i for i in range(1, 10)], strict=True):
        r, p = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        f = (1 + beta**2) * p * r / (beta**2 * p + r)
        assert f == pytest.approx(np.full_like(f, level), rel=1e-6)


def test_comparison_bars_and_intervals(models: dict[str, receval.Result]) -> None:
    fig = plots.plot_comparison(models, ["nDCG@10", "MRR"], n_resamples=200, seed=5)
    heights = [patch.get_height() for patch in fig.axes[0].patches]
    expected = [models[m][k] for m in models for k in ("nDCG@10", "MRR")]
    assert heights == pytest.approx(expected)
    assert "bootstrap" in fig.axes[0].get_title()


def test_distribution_marks_each_mean(models: dict[str, receval.Result]) -> None:
    fig = plots.plot_distribution(models, "nDCG@10", bins=10)
    ax = fig.axes[0]
    means = [line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert means == pytest.approx([r["nDCG@10"] for r in models.values()])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [f"{n} (mean {r['nDCG@10']:.4f})" for n, r in models.items()]


def test_curves_need_p_and_r_at_some_k() -> None:
    result = receval.evaluate({"user": [1], "item": [1]},
                              {"user": [1], "item": [1], "score": [1.0]}, ["nDCG@5"])
    with pytest.raises(ReceValError, match="no cutoff k with both P@k and R@k"):
        result.plot("pr-curve")
    with pytest.raises(ReceValError, match="plot kind 'pie'"):
        result.plot("pie")
    with pytest.raises(ReceValError, match=r"\.png or \.svg"):
        result.plot("distribution", "x.pdf")


def test_bootstrap_is_seeded_and_covers_the_mean() -> None:
    values = np.random.default_rng(0).random(500)
    a = bootstrap_ci(values, seed=3, n_resamples=500)
    assert a == bootstrap_ci(values, seed=3, n_resamples=500)
    assert a != bootstrap_ci(values, seed=4, n_resamples=500)
    assert a[0] < values.mean() < a[1]
    # about mean +- 1.96 standard errors
    se = values.std(ddof=1) / math.sqrt(len(values))
    assert a[1] - a[0] == pytest.approx(2 * 1.96 * se, rel=0.2)
    assert bootstrap_ci(np.array([np.nan, 1.0, 1.0]), seed=1) == (1.0, 1.0)


def test_interval_is_left_out_where_the_mean_is_not_per_user() -> None:
    truth = {"user": [1, 2, 2, 2], "item": [1, 1, 2, 3]}
    preds = {"user": [1, 2], "item": [1, 1], "score": [1.0, 1.0]}
    micro = receval.evaluate(truth, preds, ["R@1"], average="micro")
    macro = receval.evaluate(truth, preds, ["R@1"])
    cis = metric_cis({"micro": micro, "macro": macro}, ["R@1"], n_resamples=50)
    assert cis[("micro", "R@1")] is None and cis[("macro", "R@1")] is not None


def test_cli_plot_every_kind(tmp_path: Path) -> None:
    truth, preds = _frames(3)
    truth.to_csv(tmp_path / "t.csv", index=False)
    preds.to_csv(tmp_path / "a.csv", index=False)
    preds.assign(score=preds["score"][::-1].to_numpy()).to_csv(tmp_path / "b.csv", index=False)
    for kind in plots.KINDS:
        out = tmp_path / f"{kind}.png"
        result = CliRunner().invoke(main, ["plot", "-t", str(tmp_path / "t.csv"), "-p",
                                           str(tmp_path / "a.csv"), "-p", str(tmp_path / "b.csv"),
                                           "--kind", kind, "-o", str(out), "-m", "nDCG@10",
                                           "--max-k", "8"])
        assert result.exit_code == 0, result.output
        _check_png(out)
