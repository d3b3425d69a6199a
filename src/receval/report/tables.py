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
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
from rich.table import Table
from rich.text import Text

from receval import numbers
from receval.io.terminal import safe_text
from receval.io.text_tables import csv_text, latex_cell, markdown_cell, safe_lines
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
    renderers = {"json": to_json, "csv": to_csv, "markdown": to_markdown, "latex": to_latex}
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


def counts_line(result: Result) -> str:
    """One sentence on who was evaluated and which rows were dropped.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 2], "item": [1, 1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> counts_line(r)
        'users evaluated 2 (in truth 2, in predictions 1, without predictions 1, \
without a relevant item 0); rows: truth 2, predictions 1, none dropped'

    Counts are thousands separated, as in every table (``rows: truth 20,164``).
    """
    from receval.numbers import count as n

    users, rows_ = result.counts["users"], result.counts["rows"]
    # every reason a row is not in the evaluation (Result.counts documents how they add up)
    dropped = {k: v for k, v in rows_.items() if v and (
        "dropped" in k or "ignored" in k or k.endswith(("below_score_threshold",
                                                        "not_evaluated")))}
    skipped = {m: n for m, n in result.counts["undefined"]["users"].items() if n}
    text = (
        f"users evaluated {n(users['evaluated'])} (in truth {n(users['in_truth'])}, in "
        f"predictions {n(users['in_predictions'])}, without predictions "
        f"{n(users['without_predictions'])}, without a relevant item "
        f"{n(users['without_relevant'])}); rows: truth {n(rows_['truth'])}, "
        f"predictions {n(rows_['predictions'])}, "
    )
    text += (", ".join(f"{k.replace('_', ' ')} {n(v)}" for k, v in dropped.items())
             or "none dropped")
    if skipped:
        policy = result.counts["undefined"]["policy"]
        shown = ", ".join(f"{m} {n(c)}" for m, c in skipped.items())
        text += f"; users with an undefined value (set by empty={policy!r}): {shown}"
    return text + ties_text(result)


#: the mark beside a summary value that some users' IPS values push above the range
ABOVE_RANGE = "\u2021"


def train_audit_line(counts: Mapping[str, Any], rows: Mapping[str, Any] | None = None) -> str:
    """The training audit (``Result.counts["train"]``) in one line, as the terminal and the
    HTML report print it; ``rows``
    (``counts["rows"]``) adds the prediction rows excluded by ``exclude_train``.

    Example:
        >>> train_audit_line({"rows": 10, "users": 2, "items": 5, "predictions_in_train": 3,
        ...             "truth_in_train": 0, "users_without_train": 1,
        ...             "items_without_train": 2}, {"predictions": 12})
        'train audit: 10 rows, 2 users, 5 items; predictions in train 3 (25% of 12), truth in \
train 0, users without train 1, items without train 2'
    """
    total = (rows or {}).get("predictions")
    share = f" ({counts['predictions_in_train'] / total:.0%} of {total:,})" if total else ""
    parts = [f"predictions in train {counts['predictions_in_train']:,}{share}",
             f"truth in train {counts['truth_in_train']:,}",
             f"users without train {counts['users_without_train']:,}",
             f"items without train {counts['items_without_train']:,}"]
    if "train_after_test" in counts:
        parts.append(f"train after test {counts['train_after_test']:,}")
    excluded = (rows or {}).get("predictions_excluded_train")
    if excluded is not None:
        parts.append(f"excluded from the lists {excluded:,} (exclude_train)")
    return (f"train audit: {counts['rows']:,} rows, {counts['users']:,} users, "
            f"{counts['items']:,} items; " + ", ".join(parts))


def debias_line(result: Result) -> str | None:
    """The debiased metrics' weights (``Result.counts["debias"]``, :mod:`receval.debias`) in
    one line, as the terminal and the HTML report print it; ``None`` without ``debias=``.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 1], "item": [1, 2], "p": [0.5, 1.0]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"], debias="snips",
        ...     propensity="p")
        >>> debias_line(r)
        'debias=snips weights: 2 relevant truth rows, effective sample size 1.8, largest \
weight 2 (66.7% of the total), mean weight 1.5'
    """
    d = result.counts.get("debias")
    if not d:
        return None
    text = (f"debias={d['estimator']} weights: {d['rows']:,} relevant truth rows, effective "
            f"sample size {d['ess']:,.1f}, largest weight {d['max_weight']:,.4g} "
            f"({100 * d['max_weight_share']:.3g}% of the total), mean weight "
            f"{d['mean_weight']:,.4g}")
    if d.get("at_clip"):
        text += f", {d['at_clip']:,} at the clip"
    above = {m: n for m, n in d.get("above_range", {}).items() if n}
    if above:
        text += ("; IPS values above the range of 1 (marked " + ABOVE_RANGE + "): "
                 + ", ".join(f"{m} {n:,} users" for m, n in above.items()))
    return text


def streaming_line(result: Result) -> str | None:
    """How the files were streamed (``Result.counts["streaming"]``, ``memory_budget=``), or
    ``None`` for a run read in memory.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> streaming_line(r) is None
        True
    """
    how = result.counts.get("streaming")
    if not how:
        return None
    return (f"streamed ({how['mode']}): {how['partitions']:,} partitions, {how['passes']} "
            f"passes over the data, budget {how['budget_bytes'] / 2**20:,.0f} MiB")


def audit_lines(result: Result) -> list[str]:
    """Every line of a result's audit, in the order the terminal prints them: how the files
    were streamed (:func:`streaming_line`, with ``memory_budget=``), who was evaluated
    (:func:`counts_line`), the training audit (:func:`train_audit_line`, with ``train=``) and
    the debiased metrics' weights (:func:`debias_line`, with ``debias=``). The HTML report,
    JSON and the trackers carry the same lines (:func:`receval.report.audit.audit_record`).

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"], train={"user": [1],
        ...     "item": [1]})
        >>> [line.split(":")[0] for line in audit_lines(r)]
        ['users evaluated 1 (in truth 1, in predictions 1, without predictions 0, without a \
relevant item 0); rows', 'train audit']
    """
    lines = [counts_line(result)]
    streamed = streaming_line(result)
    if streamed:
        lines.insert(0, streamed)
    if "train" in result.counts:
        lines.append(train_audit_line(result.counts["train"], result.counts["rows"]))
    debiased = debias_line(result)
    if debiased:
        lines.append(debiased)
    return lines


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


def ties_text(result: Result) -> str:
    """``; tied scores across a cutoff: ...`` when ranks k and k + 1 of some users' lists tie
    (the number then depends on how ties are ordered), else ``""``.

    Example:
        >>> import receval, warnings
        >>> with warnings.catch_warnings():  # the TiesWarning says the same
        ...     warnings.simplefilter("ignore")
        ...     r = receval.evaluate({"user": [1], "item": [1]},
        ...         {"user": [1, 1], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1"])
        >>> ties_text(r).split(" (")[0]
        '; tied scores across a cutoff: 1 user at k=1'
        >>> "ties='average'" in ties_text(r)
        True
    """
    tied = {k: n for k, n in result.counts.get("ties_at_cutoff", {}).items() if n}
    if not tied:
        return ""
    shown = ", ".join(f"{n:,} user{'' if n == 1 else 's'} at k={k}" for k, n in tied.items())
    ties = result.options.get("ties")
    how = (f"ties={ties!r} orders them by row order; ties='average' gives the exact "
           "expectation" if ties in ("stable", "ranx") else f"ties={ties!r}")
    return f"; tied scores across a cutoff: {shown} ({how})"


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
