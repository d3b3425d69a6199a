"""The summary table of one or several models as text: rich, JSON, CSV, Markdown or LaTeX.

Rows are metrics, columns are models (one column ``value`` for a single model). With several
models, each column is lettered (a, b, ...) and a value carries the letters of the models it is
significantly better than (paired t-test on the per-user values, Holm across every pair and
metric, adjusted p < 0.05: :mod:`receval.report.significance`), explained in a footnote; a
value without a mark is not significantly better than any other (no "best" in bold: a higher
mean alone says nothing).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
from rich.table import Table
from rich.text import Text

from receval import numbers
from receval.io.terminal import safe_text
from receval.io.text_tables import csv_text, latex_cell, markdown_cell, safe_lines

# the audit lines live with the audit record (receval.report.audit), named here too
from receval.report.audit import (  # noqa: F401
    ABOVE_RANGE,
    audit_lines,
    counts_line,
    debias_line,
    streaming_line,
    ties_text,
    train_audit_line,
)
from receval.report.fit import fixed_table, split_to_fit
from receval.report.significance import Significance, family, superscript
from receval.result import Result

FORMATS = ("table", "json", "csv", "markdown", "latex")


def render(models: dict[str, Result], fmt: str) -> str:
    """The summary of ``models`` (name -> Result) in ``fmt``: json, csv, markdown or latex.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1", "MRR"])
        >>> print(render({"bm25": r}, "markdown"))
        | metric | value |
        |:---|---:|
        | P@1 | 1.0000 |
        | MRR | 1.0000 |
    """
    renderers: dict[str, Callable[[dict[str, Result]], str]] = {
        "json": to_json, "csv": to_csv, "markdown": to_markdown, "latex": to_latex}
    if fmt not in renderers:
        raise ValueError(f"format {fmt!r} is not one of {', '.join(renderers)}")
    return renderers[fmt](models)


def to_json(models: dict[str, Result], *, warnings: Iterable[Any] | None = None) -> str:
    """One JSON object. One model: ``summary`` (metric -> mean), ``counts``, ``options``,
    ``model``. Several: ``models`` (names) and ``summary``/``counts``/``options`` keyed by model.
    Both: ``warnings`` (the run's, each ``{"code", "message"}``: ``warnings`` as the command
    printed them, default the results' own) and ``audit``, the record every output carries
    (:func:`receval.report.audit.audit_record`: audit lines, counts, warnings, the family of
    tests the terminal's letters come from).

    Example:
        >>> import json, receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> json.loads(to_json({"a": r}))["summary"]
        {'P@1': 1.0}
        >>> out = json.loads(to_json({"a": r, "b": r}))
        >>> out["summary"]["b"], list(out["audit"]), out["audit"]["tests"]["comparisons"]
        ({'P@1': 1.0}, ['models', 'warnings', 'tests'], 1)
    """
    from receval.report.audit import audit_record

    audit = audit_record(models, warnings=warnings)
    if len(models) == 1:
        name, result = next(iter(models.items()))
        return json.dumps({**result.to_dict(), "model": name, "warnings": audit["warnings"],
                           "audit": audit}, default=_json_default, allow_nan=False)
    dicts = {name: r.to_dict() for name, r in models.items()}
    out: dict[str, Any] = {"models": list(models)}
    out.update({key: {name: d[key] for name, d in dicts.items()}
                for key in ("summary", "counts", "options")})
    if any("strata" in d for d in dicts.values()):  # per group of users (--strata)
        out["strata"] = {name: d.get("strata") for name, d in dicts.items()}
    out.update(warnings=audit["warnings"], audit=audit)
    return json.dumps(out, default=_json_default, allow_nan=False)


def to_csv(models: dict[str, Result], *, raw: bool = False) -> str:
    """``metric`` then one column per model, full precision. Text cells that a spreadsheet
    would run as a formula (model names such as ``=cmd``) get a ``'`` in front unless ``raw``.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> to_csv({"a": r}).splitlines()
        ['metric,value', 'P@1,1.0']
    """
    # the one text-table writer (receval.io.text_tables): formula cells neutralised unless
    # raw, control characters escaped
    return csv_text(["metric", *_columns(models)],
                    ([metric, *values] for metric, values in rows(models)), raw=raw)


def to_markdown(models: dict[str, Result]) -> str:
    """A pipe table; the best value of each row is bold when there are several models.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> to_markdown({"a": r}).splitlines()[0]
        '| metric | value |'
    """
    tests = marks(models)
    header = ["metric", *map(markdown_cell, _columns(models, tests))]
    lines = ["| " + " | ".join(header) + " |", "|:---|" + "---:|" * (len(header) - 1)]
    for metric, values in rows(models):
        cells = [numbers.value(v) + superscript(_mark(tests, name, metric))
                 for name, v in zip(models, values, strict=True)]
        lines.append("| " + " | ".join([markdown_cell(metric), *cells]) + " |")
    if tests is not None:
        lines += ["", safe_lines(tests.footnote())]
    return "\n".join(lines)


def to_latex(models: dict[str, Result]) -> str:
    r"""A booktabs ``tabular``; the best value of each row is ``\textbf`` with several models.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> print(to_latex({"my_model": r, "b": r}).splitlines()[3])
        metric & my\_model (a) & b (b) \\
    """
    tests = marks(models)
    columns = _columns(models, tests)
    lines = [r"\begin{tabular}{l" + "r" * len(columns) + "}", r"\toprule"]
    lines[0:0] = [f"% receval {options_line(next(iter(models.values())))}"]
    lines.append(" & ".join(["metric", *map(_latex_escape, columns)]) + r" \\")
    lines.append(r"\midrule")
    for metric, values in rows(models):
        cells = [numbers.value(v) + (rf"$^{{\mathrm{{{mark}}}}}$"
                                     if (mark := _mark(tests, name, metric)) else "")
                 for name, v in zip(models, values, strict=True)]
        lines.append(" & ".join([_latex_escape(metric), *cells]) + r" \\")
    lines.append(r"\bottomrule")
    if tests is not None:
        note = _latex_escape(tests.footnote().split(": ", 1)[1])
        lines.append(rf"\multicolumn{{{len(columns) + 1}}}{{p{{0.9\linewidth}}}}"
                     rf"{{\footnotesize Superscripts: {note}}} \\")
    lines.append(r"\end{tabular}")
    return "\n".join(lines)


def summary_lines(models: dict[str, Result], width: int) -> list[Table | Text]:
    """The summary as tables that fit ``width`` columns (the models cut into several tables,
    each repeating the metric column, when they do not fit in one; no cell is ever cut), then
    the significance footnote across the full width.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 2], "item": [1, 1]},
        ...     {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1"])
        >>> models = {f"model_{i}": r for i in range(8)}
        >>> [type(x).__name__ for x in summary_lines(models, 80)]
        ['Table', 'Table', 'Text']
        >>> [type(x).__name__ for x in summary_lines(models, 200)]
        ['Table', 'Text']
    """
    headers, cells = _summary_cells(models)
    tests = marks(models)
    lines: list[Table | Text] = [
        fixed_table(headers, cells, part, right=headers[1:], bold=("metric",), wrap=False)
        for part in split_to_fit(headers, cells, width, wrap=False)]
    if tests is not None:
        lines.append(Text(tests.footnote(), style="dim"))
    note = above_range_note(models)
    if note:
        lines.append(Text(note, style="dim"))
    return lines


def _summary_cells(models: dict[str, Result]) -> tuple[list[str], list[list[str]]]:
    tests = marks(models)
    headers = ["metric", *(safe_text(name) for name in _columns(models, tests))]
    cells = [[safe_text(metric), *(numbers.value(v) + superscript(_mark(tests, name, metric))
                                   + (ABOVE_RANGE if above_range(models[name], metric) else "")
                                   for name, v in zip(models, values, strict=True))]
             for metric, values in rows(models)]
    return headers, cells


def strata_table(strata: pd.DataFrame, model: str = "", width: int | None = None) -> list[Table]:
    """Rich tables of :attr:`Result.strata <receval.result.Result>`: one row per group of users
    (``(none)``: users the mapping does not name), its users and means; several tables, each
    repeating the group and users columns, when the metrics do not fit ``width`` columns.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 2], "item": [1, 1]},
        ...     {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1"],
        ...     strata={1: "new", 2: "old"})
        >>> [t.row_count for t in strata_table(r.strata)]
        [2]
    """
    title = f"{model}: per group of users" if model else "per group of users"
    metrics = [c for c in strata.columns if c not in ("group", "users")]
    headers = ["group", "users", *(safe_text(str(m)) for m in metrics)]
    cells = [[safe_text(str(cells["group"])), numbers.count(cells["users"]),
              *(numbers.value(cells[m]) for m in metrics)]
             for cells in (dict(zip(strata.columns, row, strict=True))
                           for row in strata.itertuples(index=False))]
    parts = split_to_fit(headers, cells, width or 10**9, keys=2, wrap=False)
    return [fixed_table(headers, cells, part, right=headers[1:], bold=("group",),
                        title=safe_text(title) if i == 0 else None, wrap=False)
            for i, part in enumerate(parts)]


def not_per_group_note(result: Result, metrics: Sequence[str] | None = None) -> str | None:
    """The line under a per-group table naming the metrics asked for (``metrics``, or all)
    that have no per-group column (``Result.counts["strata"]["not_per_group"]``:
    catalogue-level metrics), with why; ``None`` when every metric is there.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 2], "item": [1, 1]},
        ...     {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1", "coverage@1"],
        ...     strata={1: "new", 2: "old"})
        >>> not_per_group_note(r)
        'coverage@1: not per group: one number over every list (catalogue-level)'
    """
    missing = (result.counts.get("strata") or {}).get("not_per_group") or {}
    by_reason: dict[str, list[str]] = {}
    for name, why in missing.items():
        if metrics is not None and name not in metrics:
            continue
        by_reason.setdefault(why, []).append(name)
    return "; ".join(f"{', '.join(names)}: {why}" for why, names in by_reason.items()) or None


def marks(models: dict[str, Result]) -> Significance | None:
    """The paired t-tests between every two models behind the marks (Holm, alpha 0.05; no
    resampling), or ``None`` for one model or models evaluated on different users.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 2], "item": [1, 1]},
        ...     {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1"])
        >>> marks({"a": r}) is None, marks({"a": r, "b": r}).marks[("b", "P@1")]
        (True, '')
    """
    return family(models)  # the one family: the report's and the audit record's too


def _mark(tests: Significance | None, model: str, metric: str) -> str:
    return "" if tests is None else tests.marks.get((model, metric), "")


def above_range(result: Result, metric: str) -> int:
    """Users whose IPS value of ``metric`` is above the metric's range (0 without
    ``debias="ips"``): :data:`ABOVE_RANGE` marks its summary value.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> above_range(r, "P@1")
        0
    """
    return int(result.counts.get("debias", {}).get("above_range", {}).get(metric, 0))


def above_range_note(models: Mapping[str, Result]) -> str | None:
    """The footnote of :data:`ABOVE_RANGE`, or ``None`` when nothing is marked."""
    marked = sorted({m for r in models.values() for m in r.summary if above_range(r, m)})
    if not marked:
        return None
    return (f"{ABOVE_RANGE}: some users' IPS values are above the metric's range of 1 "
            f"({', '.join(marked)}): IPS divides the weighted hits by the observed count, "
            "not by the weights (docs/debiased-metrics.md); debias='snips' stays inside it")


def rows(models: dict[str, Result]) -> list[tuple[str, list[float]]]:
    """(metric, one value per model) in the order of the first model's metrics.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> rows({"a": r})
        [('P@1', [1.0])]
    """
    first = next(iter(models.values()))
    names = first.metrics or list(first.summary)
    return [(m, [float(r.summary.get(m, math.nan)) for r in models.values()]) for m in names]


def _columns(models: dict[str, Result], tests: Significance | None = None) -> list[str]:
    if len(models) == 1:
        return ["value"]
    if tests is None:
        return list(models)
    return [f"{name} ({tests.letters[name]})" for name in models]


def options_line(result: Result) -> str:
    """The options that most often explain a difference, as ``key=value, ...``.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> options_line(r).split(", ")[:2]
        ['protocol=full', 'ties=stable']
    """
    o: Mapping[str, Any] = result.options
    keys = ("relevance_threshold", "score_threshold", "protocol", "ties", "empty", "average",
            "users", "ap_normalizer", "gain", "profile")
    parts = [f"{k}={o[k]}" for k in keys if o.get(k) is not None]
    if o.get("debias"):  # debiased metrics (receval.debias): say so beside the numbers
        model = o.get("propensity")
        if isinstance(model, dict):
            model = (f"popularity:{model['gamma']:g}" if model.get("model") == "popularity"
                     else model.get("column"))
        parts.append(f"debias={o['debias']}, propensity={model}")
        if o.get("propensity_clip") is not None:
            parts.append(f"propensity_clip={o['propensity_clip']:g}")
    return ", ".join(parts)


def _latex_escape(text: str) -> str:
    return latex_cell(text)  # control characters escaped too (receval.io.text_tables)


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars in counts or options
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
