"""The HTML report: one self-contained, offline file from a jinja2 template (autoescape on).

Figures are SVG ``data:`` URIs inside ``<img>`` (an image never runs script), the page has no
link to the network and a Content-Security-Policy that forbids script and remote loads, and every
id, name and path goes through jinja2's escaping. The same input gives the same bytes: the
figures are reproducible and the page holds no date unless ``timestamp=True``.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from receval import numbers
from receval._version import __version__
from receval.beyond.names import direction
from receval.measures.spec import parse_metric
from receval.report import plots
from receval.report.audit import ABOVE_RANGE, audit_lines, counts_line, warning_records
from receval.report.beyond import accuracy_names, without_beyond
from receval.report.fairness import fairness_section
from receval.report.models import (
    as_models,
    curve_limit,
    curve_points,
    first_hit_bucket,
    hit_edges,
    paired_differences,
    ranking_metrics,
    restrict,
)
from receval.report.page import environment
from receval.report.significance import Significance, family
from receval.report.tables import (
    above_range,
    above_range_note,
    not_per_group_note,
    options_line,
    rows,
)
from receval.result import Result
from receval.stats.pairing import pair_values

TEMPLATES = Path(__file__).parent / "templates"
#: at most this many metrics get a histogram; this many users are listed where models differ
MAX_HISTOGRAMS = 6
DIFFERING_USERS = 5
#: the cutoff of the "no hit" counts when no metric asked has one
DEFAULT_CUTOFF = 10
#: a report step's name, told to ``progress`` before the step starts
Progress = Callable[[str], None]


def render_report(
    results: Result | Mapping[str, Result],
    *,
    metrics: Sequence[str] | None = None,
    inputs: Mapping[str, str] | None = None,
    top_items: Mapping[str, Sequence[tuple[Any, int]]] | None = None,
    title: str = "receval report",
    seed: int = 0,
    max_k: int | None = None,
    timestamp: bool = False,
    progress: Progress | None = None,
    beyond: Mapping[str, Any] | None = None,
    item_titles: Any = None,
    offpolicy: Any = None,
    warnings: Sequence[str] | None = None,
) -> str:
    """The report as an HTML string.

    ``metrics`` are the rows of the summary (default: all metrics of the first result; extra
    ``P@k``/``R@k`` kept only for the curves stay out of the tables); ``inputs`` names the files
    (label -> path); ``top_items`` lists each model's most predicted items (item, rows).
    The curves go up to ``max_k``, by default as deep as the lists go (as far as the results
    hold P@k and R@k: see :func:`receval.report.models.curve_limit`). The page holds the time
    it was made only with ``timestamp=True``, so the same input gives the same bytes.
    ``progress`` is called with the name of each step before it starts. ``beyond``: the
    beyond-accuracy section, from :func:`receval.report.beyond.beyond_section`; the
    beyond-accuracy metrics among ``metrics`` (default: those the results hold) are also rows
    of the summary (after the accuracy ones, untested). ``item_titles``: item -> title (a
    dict, a Series or a frame of item, title), shown beside the most predicted items.
    ``offpolicy``: an off-policy estimate (:func:`receval.offpolicy.estimate`'s result or its
    table), shown as its own section (:mod:`receval.report.offpolicy`'s fragment).
    ``warnings``: the run's warnings, each shown once under the summary (``receval evaluate``
    passes every warning it prints; default: the results' own, :attr:`Result.warnings`).

    The page carries the audit the terminal prints (:func:`receval.report.audit.audit_lines`:
    who was evaluated, the training audit, the debiased metrics' weights) and tests the
    family of comparisons the terminal tests: every metric of the summary whose value is a
    mean over users, beyond-accuracy ones included (:func:`receval.report.tables.marks`).

    A value significantly better than others carries a badge (``> a, c``: better than the
    models lettered a and c), explained under the table.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1,2", "R@1,2"])
        >>> page = render_report({"<i>bm25</i>": r, "b": r}, metrics=["P@2"])
        >>> "&lt;i&gt;bm25&lt;/i&gt;" in page and "<i>bm25</i>" not in page
        True
    """
    step = progress or (lambda _: None)
    given = as_models(results)
    # beyond-accuracy metrics have their own section (receval.report.beyond) and their own
    # rows at the end of the summary; the tests, curves and histograms read accuracy metrics
    models = {name: without_beyond(r) for name, r in given.items()}
    first = next(iter(models.values()))
    shown = list(metrics) if metrics else list(first.metrics or first.summary)
    shown = accuracy_names(shown)
    given_first = next(iter(given.values()))
    asked = list(metrics) if metrics else list(given_first.metrics or given_first.summary)
    tables = {name: restrict(r, shown) for name, r in models.items()}
    limit = curve_limit(models, max_k)
    template = environment(TEMPLATES).get_template("report.html.j2")
    titles = _title_lookup(item_titles)
    step("paired tests between the models")
    # every pair, as receval.compare: paired t, Holm across pairs x metrics, 1,000 resamples;
    # the family is the terminal's (receval.report.tables.marks): every metric of the summary
    # whose value is a mean over users, the beyond-accuracy ones included
    tests = family(given, asked, n_resamples=1000, seed=seed)  # the terminal's family
    beyond_rows = [_summary_row(n, [r.summary.get(n, math.nan) for r in given.values()],
                                list(given), tests)
                   for n in asked if n not in accuracy_names([n])]
    step("curves and comparison plots")
    figures = _figures(models, tables, seed, limit, tests)
    step("per-user distributions")
    distributions = _distributions(tables)
    step("users without a hit, and where models differ")
    users = _users(models, tables, limit, seed)
    step("writing the page")
    return template.render(
        title=title,
        version=__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC") if timestamp else "",
        inputs=dict(inputs or {}),
        models=list(models),
        letters=tests.letters if tests is not None else {},
        # the footnote without its superscript letters: the page shows badges
        significance_note=(tests.footnote().split(": ", 1)[-1].replace("no mark:", "no badge:")
                           if tests is not None else ""),
        summary=[_summary_row(m, v, list(models), tests, given) for m, v in rows(tables)],
        beyond_rows=beyond_rows,
        options=_options(next(iter(tables.values()))),
        options_line=options_line(first),
        counts=[_counts(name, r) for name, r in tables.items()],
        warnings=list(dict.fromkeys(str(w) for w in warnings) if warnings is not None
                      else (w["message"] for w in warning_records(
                          w for r in given.values() for w in r.warnings))),
        above_range_note=above_range_note(given),
        figures=figures,
        distributions=distributions,
        users=users,
        top_items={name: _top_items(items, titles)
                   for name, items in (top_items or {}).items()},
        item_titles=titles is not None,
        beyond=dict(beyond) if beyond else None,
        # per group: every metric asked for that has per-group values (beyond ones included)
        strata=[_strata(name, r.strata[["group", "users", *[m for m in asked
                                                              if m in r.strata.columns]]],
                        not_per_group_note(r, asked))
                for name, r in given.items() if r.strata is not None],
        fairness=fairness_section(given, asked, seed=seed),  # None: no fairness metric asked
        offpolicy=_offpolicy(offpolicy),
    )


def _offpolicy(offpolicy: Any) -> dict[str, Any] | None:
    """The off-policy section's values (the fragment's), or None when none was given."""
    if offpolicy is None:
        return None
    from receval.report.offpolicy import section_context

    options = getattr(offpolicy, "options", {})
    alpha = options.get("alpha", 0.05)
    return section_context(getattr(offpolicy, "table", offpolicy), round(1 - alpha, 12),
                           options.get("n_resamples"))


def _strata(model: str, strata: Any, note: str | None = None) -> dict[str, Any]:
    """One model's groups as the template shows them: header, formatted rows and the note
    naming the metrics that are not per group (:func:`receval.report.tables.not_per_group_note`)."""
    metrics = [c for c in strata.columns if c not in ("group", "users")]
    rows = [[str(row["group"]), numbers.count(row["users"]),
             *(numbers.value(row[m]) for m in metrics)]
            for row in strata.to_dict(orient="records")]
    return {"model": model, "header": ["group", "users", *metrics], "rows": rows, "note": note}


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


def _summary_row(metric: str, values: list[float], names: list[str],
                 tests: Significance | None,
                 results: Mapping[str, Result] | None = None) -> dict[str, Any]:
    """The values, each with the letters of the models it is significantly better than
    (``mark``: ``"a, c"``; ``better``: their names, for the badge's tooltip) and, from
    ``results``, the mark of IPS values above the range (``above``)."""
    marks = tests.marks if tests is not None else {}
    by_letter = {v: k for k, v in tests.letters.items()} if tests is not None else {}
    cells = []
    for name, v in zip(names, values, strict=True):
        letters = _letters(marks.get((name, metric), ""), by_letter)
        above = results is not None and above_range(results[name], metric) > 0
        cells.append({"text": numbers.value(v), "mark": ", ".join(letters),
                      "better": ", ".join(f"{x} ({by_letter[x]})" for x in letters),
                      "above": ABOVE_RANGE if above else ""})
    return {"metric": metric, "cells": cells}


def _letters(mark: str, by_letter: Mapping[str, str]) -> list[str]:
    """``mark`` (letters run together, some two long past z) cut into the models' letters."""
    out, i = [], 0
    while i < len(mark):
        size = 2 if mark[i:i + 2] in by_letter else 1
        out.append(mark[i:i + size])
        i += size
    return out


def _title_lookup(titles: Any) -> dict[str, str] | None:
    """item (as text) -> title from a dict, a Series or a frame of item, title."""
    if titles is None:
        return None
    from receval.report.beyond import _titles

    table = _titles(titles)
    pairs = table.items() if table is not None else ()
    return {str(item): str(title) for item, title in pairs}


def _top_items(items: Sequence[tuple[Any, int]],
               titles: Mapping[str, str] | None) -> list[tuple[Any, str, int]]:
    return [(item, (titles or {}).get(str(item), ""), n) for item, n in items]


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
        "audit": audit_lines(result),  # the terminal's lines, in its order
        "users": list(users.items()),
        "rows": list(rows_.items()),
        "policy": undefined["policy"],
        "undefined": [(m, n) for m, n in undefined["users"].items()],
        "ties": list(result.counts.get("ties_at_cutoff", {}).items()),
        "generated": _generated(cast(dict[str, Any], result.counts).get("generated") or {}),
    }


def _generated(counts: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """How generated titles resolved (:func:`receval.text.evaluate`; docs/generated.md): each
    count and its share of ``generated`` ('-' where not measured); empty for other results."""
    total = counts.get("generated") or 0
    return [(k, "-" if v is None else v,
             "" if k == "generated" or v is None or not total else f"{v / total:.4f}")
            for k, v in counts.items()]


def _figures(models: dict[str, Result], tables: dict[str, Result], seed: int,
             limit: int | None, tests: Significance | None = None) -> list[dict[str, str]]:
    figures = []
    if any(len(curve_points(r, limit)[0]) for r in models.values()):
        depth = f"k = 1 to {limit}"
        figures += [
            {"title": f"Precision and recall at each cutoff ({depth})",
             "uri": plots.data_uri(plots.plot_at_k(models, max_k=limit))},
            {"title": f"Precision-recall curve traced by k ({depth})",
             "uri": plots.data_uri(plots.plot_pr_curve(models, max_k=limit))},
            {"title": "F-beta iso-curves (beta = 0.5, 1, 2), zoomed to the points; the grey "
                      "curves are labelled with their F value",
             "uri": plots.data_uri(plots.plot_fbeta(models, max_k=limit))},
        ]
    metrics = ranking_metrics(next(iter(tables.values())))
    shown = [m for m in metrics[:12] if tests is not None and m not in tests.skipped]
    if tests is not None and shown:
        base = next(iter(tables))
        figures.append({"title": f"Paired differences from {base} with their intervals (filled: "
                                 "significant after the correction; " + tests.footnote()
                                 .split(" (", 1)[1].rsplit(")", 1)[0] + ")",
                        "uri": plots.data_uri(plots.plot_differences(tables, shown,
                                                                     tests=tests))})
    elif metrics and len(tables) == 1:
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
            stats.append({"model": name, "users": numbers.count(len(v)),
                          "mean": numbers.value(_mean(v)),
                          "quantiles": [numbers.value(x) for x in q],
                          "zeros": numbers.share((v == 0).mean() if len(v) else None)})
        figure = plots.plot_distribution(tables, metric)
        out.append({"metric": metric, "uri": plots.data_uri(figure), "stats": stats})
    return out


def _users(models: dict[str, Result], tables: dict[str, Result], limit: int | None,
           seed: int) -> dict[str, Any] | None:
    """Where users miss: how deep each model's first hit lies, and where models differ."""
    first = next(iter(tables.values()))
    metrics = ranking_metrics(first)
    cutoffs = [k for k in (parse_metric(m).k for m in metrics) if k]
    cutoff = cutoffs[0] if cutoffs else DEFAULT_CUTOFF
    out: dict[str, Any] = {"cutoff": cutoff, "limit": limit, "hits": None, "missing": [],
                           "metric": metrics[0] if metrics else None, "differences": []}
    edges = hit_edges(next(iter(models.values())), cutoff, limit)
    if edges and all(hit_edges(r, cutoff, limit) == edges for r in models.values()):
        out["hits"] = _first_hits(models, edges)
        if cutoff in edges:
            out["missing"] = [_missing(name, r, edges, cutoff) for name, r in models.items()]
    if metrics and len(tables) > 1:
        base_name, base = next(iter(tables.items()))
        out["baseline"] = base_name
        out["differences"] = [_difference(base_name, base, name, r, metrics[0], seed)
                              for name, r in list(tables.items())[1:]]
    return out if out["hits"] or out["differences"] else None


def _first_hits(models: dict[str, Result], edges: list[int]) -> dict[str, Any]:
    """Rows: rank buckets of the first hit; cells: share (count) of each model's users."""
    labels = [f"rank {k}" if lo + 1 == k else f"ranks {lo + 1}\u2013{k}"
              for lo, k in zip([0, *edges[:-1]], edges, strict=True)]
    labels.append(f"none in the top {edges[-1]}")
    columns = []
    for result in models.values():
        bucket = first_hit_bucket(result, edges)
        bucket = bucket[bucket >= 0]
        counts = np.bincount(bucket, minlength=len(labels))
        columns.append([_share(n, len(bucket)) for n in counts])
    return {"rows": [[label, *(c[i] for c in columns)] for i, label in enumerate(labels)]}


def _missing(name: str, result: Result, edges: list[int], cutoff: int) -> dict[str, Any]:
    """Users with no hit in the top ``cutoff``: those a deeper hit shows the list holds (a
    better order would reach them) and those the whole list misses."""
    bucket = first_hit_bucket(result, edges)
    bucket = bucket[bucket >= 0]
    at = edges.index(cutoff)
    missed = int((bucket > at).sum())
    deeper = int(((bucket > at) & (bucket < len(edges))).sum())
    users = result.counts["users"]
    policy = result.counts["undefined"]["policy"]
    empty = users.get("without_relevant", 0) if policy != "skip" else 0
    return {"model": name, "users": numbers.count(len(bucket)),
            "missed": _share(missed, len(bucket)),
            "deeper": _share(deeper, missed), "never": _share(missed - deeper, missed),
            "depth": edges[-1], "without_relevant": empty}


def _difference(base_name: str, base: Result, name: str, other: Result, metric: str,
                seed: int) -> dict[str, Any]:
    """The model's per-user difference to the base model: its interval is compare's
    (:func:`receval.stats.pairing.pair_values`, the pair's stream: the exact mirror when the
    models are swapped); better and worse in the metric's declared direction."""
    if name < base_name:  # the users in the order of the model whose name sorts first
        pairs = paired_differences(other, base, metric).rename(
            columns={"baseline": "other", "other": "baseline"})
        pairs["difference"] = pairs["other"] - pairs["baseline"]
    else:
        pairs = paired_differences(base, other, metric)
    diff = pairs["difference"].to_numpy(dtype=np.float64)
    tol = 1e-12
    better = direction(metric)
    row = pair_values(pairs["baseline"].to_numpy(dtype=np.float64),
                      pairs["other"].to_numpy(dtype=np.float64), baseline=base_name,
                      model=name, metric=metric, test="t", alpha=0.05, n_resamples=1000,
                      seed=seed, better=better)
    lo, hi = row["ci_low"], row["ci_high"]
    gain = -diff if better == "lower" else diff  # > 0: the model is better for the user
    # the largest differences first; equal ones in the order of the per-user table
    order = pairs.assign(_gain=gain)
    losses = order[order["_gain"] < -tol].sort_values("_gain", kind="stable")
    gains = order[order["_gain"] > tol].sort_values("_gain", ascending=False, kind="stable")
    losses, gains = losses.head(DIFFERING_USERS), gains.head(DIFFERING_USERS)

    def listed(frame: Any) -> list[list[str]]:
        return [[str(u), numbers.value(b), numbers.value(o), numbers.delta(d)] for u, b, o, d in
                frame[["user", "baseline", "other", "difference"]].itertuples(index=False)]

    return {"model": name, "metric": metric, "users": numbers.count(len(diff)),
            "better": _share(int((gain > tol).sum()), len(diff)),
            "same": _share(int((np.abs(diff) <= tol).sum()), len(diff)),
            "worse": _share(int((gain < -tol).sum()), len(diff)),
            "mean": numbers.delta(_mean(diff)), "ci": numbers.interval(lo, hi, "delta"),
            "gains": listed(gains), "losses": listed(losses)}


def _share(n: int, total: int) -> str:
    return f"{numbers.share(n / total)} ({numbers.count(n)})" if total else "0"


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else math.nan

