"""Plot layout (issue 19, point 7): a curve stops at its own lists' depth (a 10-item list is
not drawn as a vertical line down to the deepest model's k), the k labels never overlap, and
the legend of the F-beta panels sits outside every panel (it covered a label in F2)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import receval
from receval.report import plots
from receval.report.models import curve_ks, curve_limit, with_curves


def _runs() -> dict[str, receval.Result]:
    """Two models on 60 users: one ranks 10 items, the other 100."""
    rng = np.random.default_rng(2)
    truth, short, deep = [], [], []
    for u in range(60):
        truth += [(u, int(i)) for i in rng.choice(300, 12, replace=False)]
        short += [(u, int(i), 1.0 - j / 100) for j, i in
                  enumerate(rng.choice(300, 10, replace=False))]
        deep += [(u, int(i), 1.0 - j / 1000) for j, i in
                 enumerate(rng.choice(300, 100, replace=False))]
    t = pd.DataFrame(truth, columns=["user", "item"])
    metrics = with_curves([], curve_ks([], 120))
    return {name: receval.evaluate(t, pd.DataFrame(rows, columns=["user", "item", "score"]),
                                   metrics)
            for name, rows in (("ten", short), ("hundred", deep))}


def _model_lines(ax) -> list:
    return [line for line in ax.get_lines() if line.get_color() != "0.75"]


def _boxes(fig, ax) -> list:
    renderer = fig.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in ax.texts]


@pytest.mark.parametrize("kind", ["pr-curve", "at-k", "f-beta"])
def test_each_curve_stops_at_its_own_lists_depth(kind: str) -> None:
    runs = _runs()
    limit = curve_limit(runs)  # what the CLI and the report pass: as deep as the deepest list
    assert limit is not None and limit >= 100
    fig = plots.plot(runs, kind, max_k=limit)
    ten, hundred = _model_lines(fig.axes[0])
    assert len(ten.get_xdata()) == len([k for k in curve_ks([], 120) if k <= 10])
    assert len(hundred.get_xdata()) == len([k for k in curve_ks([], 120) if k <= 100])
    if kind == "pr-curve":  # recall never grows past the list: the last point is k = 10
        assert max(ten.get_xdata()) == pytest.approx(runs["ten"].summary["R@10"])


def test_pr_curve_labels_do_not_overlap() -> None:
    fig = plots.plot_pr_curve(_runs(), max_k=120)
    fig.canvas.draw()
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert "k=1" in texts and "k=10" in texts and "k=100" in texts
    for a, b in itertools.combinations(_boxes(fig, ax), 2):
        assert not a.overlaps(b), (a, b)


def test_fbeta_legend_is_outside_the_panels_and_labels_do_not_overlap() -> None:
    fig = plots.plot_fbeta(_runs(), max_k=120)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert all(ax.get_legend() is None for ax in fig.axes)
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert [t.get_text() for t in legend.get_texts()] == ["ten", "hundred"]
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent(renderer))
        assert any(t.get_text().startswith("k=") for t in ax.texts)
        for a, b in itertools.combinations(_boxes(fig, ax), 2):
            assert not a.overlaps(b)
