"""The HTML report: one self-contained, offline file from a jinja2 template (autoescape on).

Figures are SVG ``data:`` URIs inside ``<img>`` (an image never runs script), the page has no
link to the network and a Content-Security-Policy that forbids script and remote loads, and every
id, name and path goes through jinja2's escaping.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from receval._version import __version__
from receval.report import plots
from receval.report.models import as_models, curve_points, ranking_metrics, restrict
from receval.report.tables import best_indices, counts_line, options_line, rows
from receval.result import Result

TEMPLATES = Path(__file__).parent / "templates"
#: at most this many metrics get a histogram, and this many users are listed as the lowest
MAX_HISTOGRAMS = 6
LOWEST_USERS = 10


def render_report(
    results: Result | Mapping[str, Result],
    *,
    metrics: Sequence[str] | None = None,
    inputs: Mapping[str, str] | None = None,
    top_items: Mapping[str, Sequence[tuple[Any, int]]] | None = None,
    title: str = "receval report",
    seed: int = 0,
) -> str:
    """The report as an HTML string.

    ``metrics`` are the rows of the summary (default: all metrics of the first result; extra
    ``P@k``/``R@k`` kept only for the curves stay out of the tables); ``inputs`` names the files
    (label -> path); ``top_items`` lists each model's most predicted items (item, rows).

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": ["<i>u</i>"], "item": [1]},
        ...     {"user": ["<i>u</i>"], "item": [1], "score": [1.0]}, ["P@1,2", "R@1,2"])
        >>> page = render_report({"bm25": r}, metrics=["P@2"])
        >>> "&lt;i&gt;u&lt;/i&gt;" in page and "<i>u</i>" not in page
        True
    """
    import jinja2

    models = as_models(results)
    first = next(iter(models.values()))
    shown = list(metrics) if metrics else list(first.metrics or first.summary)
    tables = {name: restrict(r, shown) for name, r in models.items()}
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )
    template = env.get_template("report.html.j2")
    return template.render(
        title=title,
        version=__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        inputs=dict(inputs or {}),
        models=list(models),
        summary=[_summary_row(m, v, len(models)) for m, v in rows(tables)],
        options=_options(next(iter(tables.values()))),
        options_line=options_line(first),
        counts=[_counts(name, r) for name, r in tables.items()],
        figures=_figures(models, tables, seed),
        distributions=_distributions(tables),
        lowest=_lowest(tables),
        top_items={name: list(items) for name, items in (top_items or {}).items()},
    )


def write_report(path: str | Path, results: Result | Mapping[str, Result],
                 **kwargs: Any) -> Path:
    """Render the report (see :func:`render_report`) and write it to ``path`` (UTF-8).

    Example:
        >>> import tempfile, pathlib, receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> p = write_report(pathlib.Path(tempfile.mkdtemp()) / "r.html", r)
        >>> p.read_text().startswith("<!DOCTYPE html>")
        True
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(results, **kwargs), encoding="utf-8")
    return path


def _summary_row(metric: str, values: list[float], n_models: int) -> dict[str, Any]:
    best = best_indices(metric, values) if n_models > 1 else set()
    return {"metric": metric,
            "cells": [{"text": _fmt(v), "best": i in best} for i, v in enumerate(values)]}


def _options(result: Result) -> list[tuple[str, str]]:
    out = []
    for key, value in result.options.items():
        if key == "metrics" and isinstance(value, dict):
            # only the names that are not already canonical say something
            value = {a: b for a, b in value.items() if a != b}
            if not value:
                continue
            key = "metric names"
        text = ", ".join(f"{a} = {b}" for a, b in value.items()) if isinstance(value, dict) \
            else str(value)
        out.append((key, text))
    return out


def _counts(name: str, result: Result) -> dict[str, Any]:
    users, rows_ = result.counts["users"], result.counts["rows"]
    undefined = result.counts["undefined"]
    return {
        "model": name,
        "line": counts_line(result),
        "users": list(users.items()),
        "rows": list(rows_.items()),
        "policy": undefined["policy"],
        "undefined": [(m, n) for m, n in undefined["users"].items()],
        "ties": list(result.counts.get("ties_at_cutoff", {}).items()),
    }


def _figures(models: dict[str, Result], tables: dict[str, Result],
             seed: int) -> list[dict[str, str]]:
    figures = []
    if any(len(curve_points(r)[0]) for r in models.values()):
        figures += [
            {"title": "Precision and recall at each cutoff",
             "uri": plots.data_uri(plots.plot_at_k(models))},
            {"title": "Precision-recall curve traced by k",
             "uri": plots.data_uri(plots.plot_pr_curve(models))},
            {"title": "F-beta iso-curves (beta = 0.5, 1, 2)",
             "uri": plots.data_uri(plots.plot_fbeta(models))},
        ]
    metrics = ranking_metrics(next(iter(tables.values())))
    if metrics:
        figures.append({"title": "Model comparison with bootstrap confidence intervals",
                        "uri": plots.data_uri(plots.plot_comparison(tables, metrics[:12],
                                                                    seed=seed))})
    return figures


def _distributions(tables: dict[str, Result]) -> list[dict[str, Any]]:
    out = []
    for metric in ranking_metrics(next(iter(tables.values())))[:MAX_HISTOGRAMS]:
        stats = []
        for name, result in tables.items():
            v = result.per_user[metric].to_numpy(dtype=np.float64)
            v = v[~np.isnan(v)]
            q = np.quantile(v, [0, 0.25, 0.5, 0.75, 1]) if len(v) else [math.nan] * 5
            stats.append({"model": name, "users": len(v), "mean": _fmt(_mean(v)),
                          "quantiles": [_fmt(x) for x in q],
                          "zeros": f"{(v == 0).mean():.1%}" if len(v) else "nan"})
        figure = plots.plot_distribution(tables, metric)
        out.append({"metric": metric, "uri": plots.data_uri(figure), "stats": stats})
    return out


def _lowest(tables: dict[str, Result]) -> dict[str, Any] | None:
    name, result = next(iter(tables.items()))
    metrics = ranking_metrics(result)
    if not metrics:
        return None
    frame = result.per_user[["user", *metrics]].sort_values(metrics[0], kind="stable")
    head = frame.head(LOWEST_USERS)
    return {"model": name, "metric": metrics[0], "columns": ["user", *metrics],
            "rows": [[str(row[0]), *(_fmt(x) for x in row[1:])]
                     for row in head.itertuples(index=False)]}


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else math.nan


def _fmt(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.4f}"
