"""Plots of one or several models (matplotlib, Agg; saved as PNG or SVG).

Every function takes a :class:`~receval.result.Result` or a mapping name -> Result, returns a
matplotlib ``Figure`` (no pyplot, no global state) and saves it when ``path`` is given. The
curves use the ``P@k`` and ``R@k`` values the results hold: evaluate with e.g.
``["P@1,2,5,10,20", "R@1,2,5,10,20"]`` (the CLI adds them for you); ``max_k`` cuts them.

Text that comes from the data (model and metric names) is drawn as it is: mathtext is off, so
a name such as ``rev$$`` or ``$x^2$`` neither fails nor turns into a formula. The same plot
gives the same bytes: SVG ids come from a fixed salt and no file carries a date.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import numpy as np

from receval import numbers
from receval._version import __version__
from receval.exceptions import ReceValError
from receval.report.bootstrap import metric_cis
from receval.report.models import as_models, curve_limit, curve_points, ranking_metrics
from receval.result import Result

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Results = Result | Mapping[str, Result]
KINDS = ("at-k", "pr-curve", "f-beta", "distribution", "comparison", "differences")
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf")
#: matplotlib settings in force while a figure is drawn and saved: no mathtext in labels
#: (names come from the data), SVG ids from a fixed salt (the same plot, the same bytes)
RC = {"text.parse_math": False, "svg.hashsalt": "receval", "svg.fonttype": "path"}
#: the metadata written into every file: a fixed software name and no date
SVG_METADATA: dict[str, Any] = {"Date": None, "Creator": f"receval {__version__}"}
PNG_METADATA: dict[str, Any] = {"Software": f"receval {__version__}"}

_P = ParamSpec("_P")
_T = TypeVar("_T")


@contextlib.contextmanager
def plot_settings() -> Iterator[None]:
    """The matplotlib settings of :data:`RC`, for the time of a ``with`` block.

    Example:
        >>> import matplotlib
        >>> with plot_settings():
        ...     matplotlib.rcParams["text.parse_math"]
        False
    """
    import matplotlib

    with matplotlib.rc_context(RC):  # type: ignore[arg-type]
        yield


def _plain(function: Callable[_P, _T]) -> Callable[_P, _T]:
    """Run ``function`` under :func:`plot_settings` (texts are made with mathtext off)."""

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        with plot_settings():
            return function(*args, **kwargs)

    return wrapper


def plot(results: Results, kind: str, path: str | Path | None = None, **kwargs: Any) -> Figure:
    """Draw ``kind`` (one of :data:`KINDS`; ``_`` works for ``-``) and save it to ``path``.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1,2", "R@1,2"])
        >>> len(plot(r, "at_k").axes)
        2
    """
    functions: dict[str, Callable[..., Figure]] = {
        "at-k": plot_at_k, "pr-curve": plot_pr_curve, "f-beta": plot_fbeta,
        "distribution": plot_distribution, "comparison": plot_comparison,
        "differences": plot_differences}
    key = kind.lower().replace("_", "-")
    if key not in functions:
        raise ReceValError(f"plot kind {kind!r} is not one of {', '.join(KINDS)}")
    return functions[key](results, path=path, **kwargs)


@_plain
def plot_at_k(results: Results, *, max_k: int | None = None,
              path: str | Path | None = None) -> Figure:
    """Precision@k and recall@k against k (up to ``max_k``), one line per model.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1,2", "R@1,2"])
        >>> [ax.get_ylabel() for ax in plot_at_k(r).axes]
        ['precision@k', 'recall@k']
    """
    models = _curves(results, max_k)
    fig = _figure(10, 4)
    axes = fig.subplots(1, 2)
    for i, (name, (ks, p, r)) in enumerate(models.items()):
        for ax, values in zip(axes, (p, r), strict=True):
            ax.plot(ks, values, marker="o", markersize=3, color=_color(i), label=name)
    for column, (ax, label) in enumerate(zip(axes, ("precision@k", "recall@k"), strict=True)):
        ax.set_xlabel("k")
        ax.set_ylabel(label)
        ax.set_ylim(0, _upper([curve[1 + column] for curve in models.values()]))
        ax.xaxis.set_major_locator(_integer_locator())
        _log_x_if_wide(ax, models)
        ax.grid(alpha=0.3)
    axes[1].legend(loc="lower right", fontsize="small")
    fig.suptitle("precision and recall at each cutoff k")
    return _finish(fig, path)


@_plain
def plot_pr_curve(results: Results, *, max_k: int | None = None,
                  path: str | Path | None = None) -> Figure:
    """The precision-recall curve traced by k: (R@k, P@k) for k = 1, 2, ... up to ``max_k``.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1,2", "R@1,2"])
        >>> plot_pr_curve(r).axes[0].get_xlabel()
        'recall@k'
    """
    models = _curves(results, max_k)
    fig = _figure(6, 5)
    ax = fig.subplots()
    for i, (name, (_, p, r)) in enumerate(models.items()):
        ax.plot(r, p, marker="o", markersize=3, color=_color(i), label=name)
    _pr_axes(ax)
    top_r = max(float(np.nanmax(r, initial=0)) for _, _, r in models.values())
    top_p = max(float(np.nanmax(p, initial=0)) for _, p, _ in models.values())
    ax.set_xlim(0, min(1.02, max(top_r * 1.15, 0.05)))
    ax.set_ylim(0, min(1.02, max(top_p * 1.25, 0.05)))
    ax.set_title("precision-recall curve traced by k")
    _legend_below(fig, ax, len(models))
    taken: list[Any] = []  # the labels placed so far: a label never covers another
    for i, (_, (ks, p, r)) in enumerate(models.items()):
        _label_ks(ax, ks, r, p, _color(i), taken)
    return _finish(fig, path)


@_plain
def plot_fbeta(results: Results, *, betas: tuple[float, ...] = (0.5, 1.0, 2.0),
               max_k: int | None = None, path: str | Path | None = None) -> Figure:
    """Iso-F-beta curves (one panel per beta) under each model's (R@k, P@k) points.

    On a curve every (recall, precision) has the same F-beta; beta < 1 favours precision,
    beta > 1 recall, so the panels show where each model's cutoffs stand for each weighting.
    The axes are zoomed to the points (with a margin) and the iso-curves are drawn at round
    F values inside that window, so a model at P = 0.05, R = 0.1 is not lost in a corner.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1,2", "R@1,2"])
        >>> [ax.get_title() for ax in plot_fbeta(r).axes]
        ['F0.5', 'F1', 'F2']
    """
    models = _curves(results, max_k)
    fig = _figure(4.2 * len(betas), 4.4)
    axes = np.atleast_1d(fig.subplots(1, len(betas), sharey=True))
    right, top = _window(models)
    for ax, beta in zip(axes, betas, strict=True):
        _iso_f(ax, beta, right, top)
        for i, (name, (_, p, r)) in enumerate(models.items()):
            ax.plot(r, p, marker="o", markersize=3, color=_color(i), label=name)
        _pr_axes(ax, right, top)
        ax.set_title(f"F{beta:g}")
    fig.suptitle("iso-F-beta curves; the label marks each model's best k")
    # below the panels: inside one it covered the iso-curves' and the models' labels
    _legend_below(fig, axes[-1], len(models))
    for ax, beta in zip(axes, betas, strict=True):
        taken: list[Any] = [t.get_window_extent().padded(2) for t in ax.texts]  # iso labels
        for i, (_, (ks, p, r)) in enumerate(models.items()):
            if len(ks):
                best = int(np.nanargmax(_f(p, r, beta)))
                _place_label(ax, f"k={ks[best]}", (r[best], p[best]), _color(i), taken,
                             force=True)
    return _finish(fig, path)


@_plain
def plot_distribution(results: Results, metric: str | None = None, *, bins: int = 20,
                      path: str | Path | None = None) -> Figure:
    """Histogram of the per-user values of ``metric`` (default: the first ranking metric).

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 2], "item": [1, 1]},
        ...     {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1"])
        >>> plot_distribution(r, "P@1").axes[0].get_xlabel()
        'P@1 per user'
    """
    models = as_models(results)
    metric = metric or _first_metric(models)
    fig = _figure(6, 4)
    ax = fig.subplots()
    edges = np.linspace(*_range(models, metric), bins + 1).tolist()
    for i, (name, result) in enumerate(models.items()):
        values = _per_user(result, metric)
        values = values[~np.isnan(values)]
        ax.hist(values, bins=edges, histtype="stepfilled" if len(models) == 1 else "step",
                alpha=0.6 if len(models) == 1 else 1.0, linewidth=1.5, color=_color(i),
                label=f"{name} (mean {numbers.value(result.summary[metric])})")
        ax.axvline(result.summary[metric], color=_color(i), linestyle="--", linewidth=1)
    ax.set_xlabel(f"{metric} per user")
    ax.set_ylabel("users")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(f"distribution of {metric} over users")
    return _finish(fig, path)


@_plain
def plot_comparison(results: Results, metrics: list[str] | None = None, *,
                    confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0,
                    path: str | Path | None = None) -> Figure:
    """Bars of each metric's mean per model, with bootstrap confidence intervals over users.

    Intervals are drawn where the mean is the mean of the per-user values (macro averaging);
    the users are resampled ``n_resamples`` times from ``SeedSequence(seed)``.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 2], "item": [1, 1]},
        ...     {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1", "MRR"])
        >>> len(plot_comparison({"a": r, "b": r}, n_resamples=50).axes[0].patches)
        4
    """
    models = as_models(results)
    metrics = metrics or ranking_metrics(next(iter(models.values())))
    if not metrics:
        raise ReceValError("no metric to compare; pass metrics=[...]")
    cis = metric_cis(models, metrics, confidence=confidence, n_resamples=n_resamples, seed=seed)
    fig = _figure(max(6, 0.9 * len(metrics) * max(1, len(models)) + 2), 4.5)
    ax = fig.subplots()
    width = 0.8 / len(models)
    x = np.arange(len(metrics))
    tops: list[np.ndarray] = []
    for i, (name, result) in enumerate(models.items()):
        means = np.array([result.summary[m] for m in metrics], dtype=float)
        lows = np.array([(cis[(name, m)] or (v, v))[0] for m, v in zip(metrics, means,
                                                                        strict=True)])
        highs = np.array([(cis[(name, m)] or (v, v))[1] for m, v in zip(metrics, means,
                                                                         strict=True)])
        error = np.vstack([np.clip(means - lows, 0, None), np.clip(highs - means, 0, None)])
        ax.bar(x + (i - (len(models) - 1) / 2) * width, means, width, yerr=error, capsize=3,
               color=_color(i), label=name, error_kw={"elinewidth": 1})
        tops.append(np.maximum(means, highs))
    ax.set_xticks(x, metrics, rotation=30 if len(metrics) > 6 else 0)
    ax.set_ylabel("mean over users")
    ax.set_ylim(0, _upper(tops))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    shown = sum(v is not None for v in cis.values())
    note = (f"{confidence:.0%} bootstrap intervals over users ({n_resamples} resamples, "
            f"seed {seed})" if shown else "no interval: the means are not per-user means")
    ax.set_title(f"model comparison; {note}", fontsize="medium")
    return _finish(fig, path)


@_plain
def plot_differences(results: Results, metrics: list[str] | None = None, *,
                     baseline: str | None = None, test: str = "t", correction: str = "holm",
                     alpha: float = 0.05, n_resamples: int = 1000, seed: int = 0,
                     tests: Any = None, path: str | Path | None = None) -> Figure:
    """Paired differences against ``baseline`` (default: the first model): per metric and
    model, the mean per-user difference (model - baseline) with its paired bootstrap interval
    at ``1 - alpha``; a filled marker where the difference is significant after ``correction``
    across every pair and metric (:func:`receval.report.significance.significance`, the
    numbers :func:`receval.compare` gives), a hollow one where it is not. ``tests``: that
    :class:`~receval.report.significance.Significance`, when already computed.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2, 3], "item": [1, 1, 1]}
        >>> a = receval.evaluate(truth, {"user": [1, 2, 3], "item": [1, 2, 2],
        ...                              "score": [1.0] * 3}, ["P@1", "MRR"])
        >>> b = receval.evaluate(truth, {"user": [1, 2, 3], "item": [1, 1, 2],
        ...                              "score": [1.0] * 3}, ["P@1", "MRR"])
        >>> ax = plot_differences({"a": a, "b": b}, n_resamples=50).axes[0]
        >>> ax.get_ylabel()
        'difference from a (model - a)'
    """
    from receval.report.significance import CORRECTION_NAMES, TEST_NAMES, significance

    models = as_models(results)
    if len(models) < 2:
        raise ReceValError("a difference plot needs at least two models")
    metrics = metrics or ranking_metrics(next(iter(models.values())))
    base = baseline if baseline is not None else next(iter(models))
    if base not in models:
        raise ReceValError(f"baseline {base!r} is not one of the models: {', '.join(models)}")
    if tests is None:
        tests = significance(models, metrics, test=test, correction=correction, alpha=alpha,
                             n_resamples=n_resamples, seed=seed)
    if tests is None:
        raise ReceValError("the models were not evaluated on the same users: no paired "
                           "differences to draw")
    shown = [m for m in metrics if m not in tests.skipped]
    others = [name for name in models if name != base]
    fig = _figure(max(6, 0.9 * len(shown) * max(1, len(others)) + 2), 4.5)
    ax = fig.subplots()
    x = np.arange(len(shown))
    width = 0.8 / max(1, len(others))
    table = tests.table
    alpha = tests.options["alpha"]
    for i, name in enumerate(others):
        deltas, lows, highs, significant = [], [], [], []
        for metric in shown:
            row = table[(table.metric == metric) & (((table.baseline == base) & (
                table.model == name)) | ((table.baseline == name) & (table.model == base)))]
            r = row.iloc[0]
            flip = r["baseline"] != base  # drawn as name - base
            sign = -1.0 if flip else 1.0
            deltas.append(sign * r["delta"])
            low, high = (-r["ci_high"], -r["ci_low"]) if flip else (r["ci_low"], r["ci_high"])
            lows.append(low)
            highs.append(high)
            significant.append(bool(r["p_adjusted"] < alpha))
        d, lo, hi = np.array(deltas), np.array(lows), np.array(highs)
        where = x + (i - (len(others) - 1) / 2) * width
        error = np.vstack([np.clip(d - lo, 0, None), np.clip(hi - d, 0, None)])
        ax.errorbar(where, d, yerr=error, fmt="none", ecolor=_color(i + 1), capsize=4,
                    elinewidth=1.2)
        filled = np.array(significant, dtype=bool)
        ax.scatter(where[filled], d[filled], color=_color(i + 1), zorder=3, s=36,
                   label=f"{name}: significant")
        ax.scatter(where[~filled], d[~filled], facecolors="white", edgecolors=_color(i + 1),
                   zorder=3, s=36, label=f"{name}: not significant")
    ax.axhline(0.0, color="#444444", linewidth=1, label=f"{base} (baseline)")
    ax.set_xticks(x, shown, rotation=30 if len(shown) > 6 else 0)
    ax.set_ylabel(f"difference from {base} (model - {base})")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    o = tests.options
    alpha = o["alpha"]
    ax.set_title(f"paired differences, {1 - alpha:.0%} bootstrap intervals ({o['resamples']:,} "
                 f"resamples, seed {o['seed']}); {TEST_NAMES[o['test']]}, "
                 f"{CORRECTION_NAMES[o['correction']]} correction", fontsize="medium")
    return _finish(fig, path)


def save(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` as PNG or SVG, by the extension of ``path``.

    Example:
        >>> import tempfile, pathlib
        >>> from matplotlib.figure import Figure
        >>> p = save(Figure(), pathlib.Path(tempfile.mkdtemp()) / "f.svg")
        >>> p.read_text().lstrip().startswith("<?xml")
        True
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise ReceValError(f"plot file must end in .png or .svg; got {path.name!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_render(fig, fmt, dpi=150))
    return path


def data_uri(fig: Figure, fmt: str = "svg") -> str:
    """``fig`` as a ``data:`` URI, for a self-contained HTML page (an ``<img>``: never script).

    Example:
        >>> from matplotlib.figure import Figure
        >>> data_uri(Figure()).startswith("data:image/svg+xml;base64,")
        True
    """
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    return f"data:{mime};base64," + base64.b64encode(_render(fig, fmt, dpi=110)).decode("ascii")


def to_bytes(fig: Figure, fmt: str = "svg", *, dpi: int = 150) -> bytes:
    """``fig`` as the bytes of a PNG or SVG file: the same figure always gives the same bytes
    (fixed SVG ids, no date, a fixed software name).

    Example:
        >>> from matplotlib.figure import Figure
        >>> fig = Figure(); _ = fig.subplots().plot([0, 1], [1, 0])
        >>> to_bytes(fig) == to_bytes(fig) and to_bytes(fig, "png") == to_bytes(fig, "png")
        True
    """
    if fmt not in ("png", "svg"):
        raise ReceValError(f"plot format must be png or svg; got {fmt!r}")
    return _render(fig, fmt, dpi=dpi)


# --- helpers ---------------------------------------------------------------------------------


def _render(fig: Figure, fmt: str, *, dpi: int) -> bytes:
    buffer = io.BytesIO()
    metadata = SVG_METADATA if fmt == "svg" else PNG_METADATA
    with plot_settings():
        fig.savefig(buffer, format=fmt, dpi=dpi, bbox_inches="tight", metadata=metadata)
    return buffer.getvalue()


def _integer_locator() -> Any:
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _figure(width: float, height: float) -> Figure:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'receval[plot]'") from None
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)  # Agg, whatever backend pyplot may be using
    return fig


def _finish(fig: Figure, path: str | Path | None) -> Figure:
    if path is not None:
        save(fig, path)
    return fig


def _curves(results: Results,
            max_k: int | None = None) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each model's (k, P@k, R@k) up to ``max_k`` and to its own lists' depth
    (:func:`~receval.report.models.curve_limit`): past it a curve would only fall straight
    down, P@k shrinking as 1/k over ranks no list holds."""
    models = {}
    for name, result in as_models(results).items():
        depth = curve_limit({name: result})
        limit = depth if max_k is None else max_k if depth is None else min(max_k, depth)
        models[name] = curve_points(result, limit)
    if not any(len(ks) for ks, _, _ in models.values()):
        raise ReceValError(
            "the result holds no cutoff k with both P@k and R@k; evaluate with e.g. "
            "metrics=['P@1,2,5,10', 'R@1,2,5,10'] to plot curves"
        )
    return models


def _color(i: int) -> str:
    return COLORS[i % len(COLORS)]


def _upper(values: list[np.ndarray]) -> float:
    """The top of a [0, ...] axis for ``values``: 1.05 past 0.5, else 20% over the largest."""
    finite = [float(np.nanmax(v)) for v in values if len(v) and not np.isnan(v).all()]
    top = max(finite, default=0.0)
    return 1.05 if top > 0.5 or not math.isfinite(top) else max(top * 1.2, 0.05)


def _log_x_if_wide(ax: Axes, models: Mapping[str, tuple[np.ndarray, ...]]) -> None:
    top = max((int(ks.max()) for ks, _, _ in models.values() if len(ks)), default=1)
    if top > 50:
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.set_xscale("log")
        # plain numbers: the default labels are mathtext, and mathtext is off (see RC)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())


def _legend_below(fig: Figure, ax: Axes, n: int) -> None:
    """The legend of ``ax``'s lines under the figure (outside every panel: it covers no
    point and no label), then the layout fixed so that labels can be placed for good."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(n, 4), fontsize="small")
    fig.draw_without_rendering()  # the constrained layout settles the axes' final place
    fig.set_layout_engine("none")


#: where a point's label may go, in points from the point, tried in order
_OFFSETS = ((3, 4), (3, -11), (-30, 4), (-30, -11), (3, 12), (3, -19))


def _label_ks(ax: Axes, ks: np.ndarray, r: np.ndarray, p: np.ndarray, color: str,
              taken: list[Any]) -> None:
    """Label a few points with their k (first, last and about five between), each where it
    covers no label placed before (``taken``: their boxes); a point without room goes
    unlabelled, except the first and the last."""
    if len(ks) == 0:
        return
    chosen = sorted(set(np.linspace(0, len(ks) - 1, min(len(ks), 6)).round().astype(int)))
    for j in chosen:
        _place_label(ax, f"k={ks[j]}", (r[j], p[j]), color, taken,
                     force=j in (chosen[0], chosen[-1]))


def _place_label(ax: Axes, text: str, xy: tuple[float, float], color: str, taken: list[Any],
                 force: bool = False) -> None:
    """Annotate ``xy`` at the first offset of :data:`_OFFSETS` whose box overlaps no box in
    ``taken`` (then added to it); without one, the first offset if ``force``, else none."""
    boxes = []
    for offset in _OFFSETS:
        label = ax.annotate(text, xy, textcoords="offset points", xytext=offset, fontsize=7,
                            color=color)
        box = label.get_window_extent().padded(3)  # a little air between labels
        if not any(box.overlaps(other) for other in taken):
            taken.append(box)
            return
        boxes.append(box)
        label.remove()
    if force:
        ax.annotate(text, xy, textcoords="offset points", xytext=_OFFSETS[0], fontsize=7,
                    color=color)
        taken.append(boxes[0])


def _pr_axes(ax: Axes, right: float = 1.02, top: float = 1.02) -> None:
    ax.set_xlim(0, right)
    ax.set_ylim(0, top)
    ax.set_xlabel("recall@k")
    ax.set_ylabel("precision@k")
    ax.grid(alpha=0.3)


def _f(p: np.ndarray, r: np.ndarray, beta: float) -> np.ndarray:
    b2 = beta * beta
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((p + r) > 0, (1 + b2) * p * r / (b2 * p + r), 0.0)


def _window(models: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
            ) -> tuple[float, float]:
    """The right and top limits of a recall-precision panel: 12% over the largest point
    (at least 0.01, at most 1.02)."""
    def top_of(values: list[np.ndarray]) -> float:
        finite = [float(np.nanmax(v)) for v in values if len(v) and not np.isnan(v).all()]
        return min(1.02, max(max(finite, default=0.0) * 1.12, 0.01))

    return (top_of([r for _, _, r in models.values()]),
            top_of([p for _, p, _ in models.values()]))


def iso_levels(beta: float, right: float, top: float) -> list[float]:
    """Round F-beta values whose iso-curves cross the window [0, right] x [0, top].

    Example:
        >>> iso_levels(1.0, 1.0, 1.0)
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
        >>> iso_levels(1.0, 0.12, 0.06)
        [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07]
    """
    from matplotlib.ticker import MaxNLocator

    f_max = float(_f(np.array([min(top, 1.0)]), np.array([min(right, 1.0)]), beta)[0])
    if f_max <= 0:
        return []
    ticks = MaxNLocator(nbins=10, steps=[1, 2, 2.5, 5, 10]).tick_values(0, f_max)
    return [round(float(t), 10) for t in ticks if 0 < t < min(f_max, 1.0)]


def _iso_f(ax: Axes, beta: float, right: float = 1.0, top: float = 1.0) -> None:
    """Curves of constant F-beta inside the window: P = f R / ((1 + b²) R - b² f), drawn from
    where P = ``top`` (or the asymptote R = b² f / (1 + b²)) to R = ``right``."""
    b2 = beta * beta
    for f in iso_levels(beta, right, top):
        p_top = min(top, 1.0)
        start = b2 * f * p_top / ((1 + b2) * p_top - f) if (1 + b2) * p_top > f else math.inf
        start = max(start, b2 * f / (1 + b2) * (1 + 1e-9))
        stop = min(right, 1.0)
        if start >= stop:
            continue
        r = np.linspace(start, stop, 400)
        p = f * r / ((1 + b2) * r - b2 * f)
        keep = (p >= 0) & (p <= p_top * (1 + 1e-9))
        if not keep.any():
            continue
        ax.plot(r[keep], p[keep], color="0.75", linewidth=0.8, zorder=0)
        near_top = p[keep][-1] > 0.9 * p_top  # then the label goes under the curve's end
        ax.annotate(f"{f:g}", (r[keep][-1], p[keep][-1]), fontsize=7, color="0.4",
                    xytext=(-2, -2 if near_top else 2), textcoords="offset points",
                    ha="right", va="top" if near_top else "bottom")


def _first_metric(models: dict[str, Result]) -> str:
    metrics = ranking_metrics(next(iter(models.values())))
    if not metrics:
        raise ReceValError("no ranking metric to plot; pass metric=...")
    return metrics[0]


def _per_user(result: Result, metric: str) -> np.ndarray:
    if metric not in result.per_user.columns:
        shown = ", ".join(c for c in result.per_user.columns if c != "user")
        raise ReceValError(f"metric {metric!r} is not in the result; it has: {shown}")
    return result.per_user[metric].to_numpy(dtype=np.float64)


def _range(models: dict[str, Result], metric: str) -> tuple[float, float]:
    values = np.concatenate([_per_user(r, metric) for r in models.values()])
    values = values[~np.isnan(values)]
    lo = min(0.0, float(values.min())) if len(values) else 0.0
    hi = max(1.0, float(values.max())) if len(values) else 1.0
    return lo, hi
