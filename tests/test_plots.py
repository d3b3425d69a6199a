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
from receval.report.models import curve_ks, curve_limit, list_depth

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


def _ranked(ranks: dict[str, int | None], length: int = 20) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each user has one relevant item, placed at the given rank of a list of ``length``
    (``None``: not in the list)."""
    truth = pd.DataFrame({"user": list(ranks), "item": [f"rel-{u}" for u in ranks]})
    rows = []
    for user, rank in ranks.items():
        for j in range(1, length + 1):
            item = f"rel-{user}" if j == rank else f"filler-{j}"
            rows.append((user, item, float(length - j)))
    return truth, pd.DataFrame(rows, columns=["user", "item", "score"])


@pytest.fixture(scope="module")
def weak() -> receval.Result:
    """A realistic model: 20 of 100 users find their item, one at each rank 1..20; so
    P@k = k / (100 k) = 0.01 and R@k = k / 100."""
    ranks = {f"u{i}": (i // 5 + 1 if i % 5 == 0 else None) for i in range(100)}
    truth, preds = _ranked(ranks)
    ks = ",".join(map(str, range(1, 21)))
    return receval.evaluate(truth, preds, [f"P@{ks}", f"R@{ks}"])


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_iso_panels_are_zoomed_to_the_points(weak: receval.Result, beta: float) -> None:
    fig = plots.plot_fbeta({"weak": weak}, betas=(beta,))
    ax = fig.axes[0]
    top_r = max(weak[f"R@{k}"] for k in range(1, 21))  # 0.2
    top_p = max(weak[f"P@{k}"] for k in range(1, 21))
    assert top_r == pytest.approx(0.2) and top_p == pytest.approx(0.01)
    # the window holds every point with a margin, and not much more
    assert top_r < ax.get_xlim()[1] <= 1.2 * top_r and ax.get_xlim()[0] == 0
    assert top_p < ax.get_ylim()[1] <= 1.2 * top_p and ax.get_ylim()[0] == 0
    grey = [line for line in ax.get_lines() if line.get_color() == "0.75"]
    assert len(grey) >= 3
    levels = []
    for line in grey:
        r, p = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        assert r.max() <= ax.get_xlim()[1] * (1 + 1e-9) and p.max() <= ax.get_ylim()[1] * 1.000001
        f = (1 + beta**2) * p * r / (beta**2 * p + r)
        assert f == pytest.approx(np.full_like(f, f[0]), rel=1e-6)  # an iso-curve
        levels.append(f[0])
    # evenly spaced levels: step, 2 step, 3 step, ...
    assert np.array(levels) / levels[0] == pytest.approx(np.arange(1, len(levels) + 1))


def test_iso_levels_on_the_unit_square() -> None:
    assert plots.iso_levels(1.0, 1.0, 1.0) == pytest.approx([0.1 * i for i in range(1, 10)])


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_iso_curves_have_constant_f(models: dict[str, receval.Result], beta: float) -> None:
    fig = plots.plot_fbeta(models, betas=(beta,))
    grey = [line for line in fig.axes[0].get_lines() if line.get_color() == "0.75"]
    assert grey
    for line in grey:
        r, p = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        f = (1 + beta**2) * p * r / (beta**2 * p + r)
        assert f == pytest.approx(np.full_like(f, f[0]), rel=1e-6)


def test_max_k_cuts_the_curves(models: dict[str, receval.Result]) -> None:
    for kind in ("at-k", "pr-curve", "f-beta"):
        fig = plots.plot(models, kind, max_k=4)
        coloured = [line for line in fig.axes[0].get_lines() if line.get_color() != "0.75"]
        assert [len(line.get_xdata()) for line in coloured] == [4, 4]
    line = plots.plot_at_k(models, max_k=4).axes[0].get_lines()[0]
    assert list(line.get_xdata()) == [1, 2, 3, 4]


def test_log_axis_labels_are_plain_numbers(weak: receval.Result) -> None:
    wide = receval.evaluate({"user": [1], "item": [1]},  # a list 100 items deep
                            {"user": [1] * 100, "item": list(range(1, 101)),
                             "score": [1.0 - i / 1000 for i in range(100)]},
                            [f"{f}@{k}" for f in "PR" for k in (1, 10, 60, 100)])
    fig = plots.plot_at_k(wide)
    fig.canvas.draw()
    for ax in fig.axes:
        assert ax.get_xscale() == "log"
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert "1" in labels and "10" in labels and "100" in labels, labels
        assert not any("$" in x or "mathdefault" in x for x in labels)


def test_same_plot_same_bytes(models: dict[str, receval.Result], tmp_path: Path) -> None:
    for kind in plots.KINDS:
        for fmt in ("svg", "png"):
            plots.plot(models, kind, tmp_path / f"a.{fmt}")  # two figures, drawn apart
            plots.plot(models, kind, tmp_path / f"b.{fmt}")
            first = (tmp_path / f"a.{fmt}").read_bytes()
            assert first == (tmp_path / f"b.{fmt}").read_bytes(), (kind, fmt)
        svg = (tmp_path / "a.svg").read_text()
        assert "<dc:date>" not in svg and "receval" in svg


@pytest.mark.parametrize("name", ["rev$$", "$x^2$", r"a\frac{1}{0}$", "50$ and $"])
def test_tex_in_a_name_is_drawn_as_text(models: dict[str, receval.Result], tmp_path: Path,
                                        name: str) -> None:
    both = {name: models["alpha"], "beta": models["beta"]}
    for kind in plots.KINDS:
        for fmt in ("png", "svg"):
            fig = plots.plot(both, kind, tmp_path / f"{kind}.{fmt}")
        boxes = [*(ax.get_legend() for ax in fig.axes if ax.get_legend()), *fig.legends]
        legends = [t.get_text() for legend in boxes for t in legend.get_texts()]
        assert any(text.startswith(name) for text in legends), legends
    metric = receval.evaluate({"user": [1], "item": [1]},
                              {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
    plots.plot_distribution({name: metric}, path=tmp_path / "one.png")


def test_curves_stop_where_the_lists_end() -> None:
    truth, preds = _ranked({"a": 3, "b": None, "c": 12}, length=20)
    result = receval.evaluate(truth, preds, [f"{f}@1,5,10,20,30,50" for f in "PR"])
    assert list_depth(result) == 20  # 60 rows over 3 users; the deepest hit is at 12
    assert curve_limit({"m": result}) == 20
    assert curve_limit({"m": result}, max_k=30) == 30
    # lists of 13: the mean list length says 13 (the deepest hit, 12, would say less)
    dense = ",".join(map(str, range(1, 31)))
    short = receval.evaluate(truth, preds.groupby("user").head(13), [f"P@{dense}", f"R@{dense}"])
    assert list_depth(short) == 13 and curve_limit({"m": short}) == 13
    # only cutoffs 10 and 20 around it: the curves go on to 20, the first cutoff past 13
    coarse = receval.evaluate(truth, preds.groupby("user").head(13), ["P@1,5,10,20", "R@1,5,10,20"])
    assert curve_limit({"m": coarse}) == 20


def test_curve_ks_reach_the_cap_and_keep_asked_cutoffs() -> None:
    ks = curve_ks(["P@7", "nDCG@333"], max_k=1000)
    assert ks[:30] == list(range(1, 31)) and ks[-1] == 1000
    assert {100, 200, 500, 333} <= set(ks) and len(ks) < 60
    assert curve_ks(["P@50"], max_k=20) == list(range(1, 21))


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


def test_difference_plot_draws_compare_numbers(models: dict[str, receval.Result]) -> None:
    metrics = ["nDCG@10", "MRR"]
    fig = plots.plot_differences(models, metrics, n_resamples=400, seed=7)
    ax = fig.axes[0]
    want = receval.compare(None, models, metrics, baseline="alpha", n_resamples=400,
                           seed=7).table
    points = np.concatenate([c.get_offsets() for c in ax.collections
                             if hasattr(c, "get_offsets") and len(c.get_offsets())
                             and c.get_offsets().ndim == 2 and type(c).__name__ ==
                             "PathCollection"])
    ys = sorted(points[:, 1].tolist())
    assert ys == pytest.approx(sorted(want["delta"].tolist()), abs=0)
    bars = [seg for c in ax.collections if type(c).__name__ == "LineCollection"
            for seg in c.get_segments()]
    spans = sorted((float(s[:, 1].min()), float(s[:, 1].max())) for s in bars)
    expected = sorted(zip(want["ci_low"], want["ci_high"], strict=True))
    assert np.allclose(spans, expected, rtol=0, atol=1e-12)
    assert "bootstrap intervals (400 resamples, seed 7)" in ax.get_title()
    assert "Holm correction" in ax.get_title()
    with pytest.raises(ReceValError, match="at least two models"):
        plots.plot_differences({"alpha": models["alpha"]})
