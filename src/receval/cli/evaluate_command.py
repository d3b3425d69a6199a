"""The ``receval evaluate`` command."""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from receval.cli.common import (
    REPORT_SUFFIXES,
    _beyond_options,
    _check_output,
    _errors_exit_2,
    _evaluate_files,
    _input_options,
    _metric_names,
    _metrics_option,
    _print_written,
    _report_progress,
    _Runs,
    _semantics,
    _semantics_options,
    _stdout,
    _train_options,
    _warn_undefined,
    _write_per_user,
    main,
)
from receval.cli.debias_flags import check_one_gamma, debias_options
from receval.cli.disparity_flag import check_disparity, disparity_option, disparity_tables
from receval.cli.log_option import _check_log, _log_options, _log_runs
from receval.cli.options_table import option, shared
from receval.cli.streaming_runs import evaluate_files_streaming, streamed_unasked
from receval.cli.training_text import parse_train_columns
from receval.exceptions import ReceValError
from receval.io.output import TABLE_SUFFIXES, atomic_output, sigterm_as_exit
from receval.io.terminal import safe_text
from receval.report.tables import FORMATS as OUTPUT_FORMATS  # one list: the renderer's


@main.command()
@_input_options
@_train_options
@_beyond_options
@_metrics_option()
@_semantics_options
@option("items", help="Item titles for the report's most predicted items and its "
                   "beyond-accuracy section (CSV, TSV or Parquet: an item column and a title "
                   "column).")
@click.option("--items-columns", metavar="ROLE=NAME,...", default=None,
              help="The --items file's own column names: item=movieId,title=title (default: "
                   "--item-col, and a 'title' column or the one besides it).")
@option("format", choices=OUTPUT_FORMATS, what="the summary")
@click.option("--per-user", metavar="FILE",
              help="Write per-user values to FILE (.csv, .tsv or .parquet).")
@shared("report", "max_k", "seed")
@click.option("--spark-master", default=None, metavar="URL",
              help="With --engine spark: the Spark master (local[4], spark://host:7077, "
                   "yarn; default: the active session or local[*]); files are read by Spark "
                   "(Parquet).")
@click.option("--spark-partitions", default="auto", show_default=True, metavar="N|auto|spark",
              callback=lambda _ctx, _param, value: _partitions(value),
              help="With --engine spark: shuffle partitions by user; auto: from the number of "
                   "rows (one per core down to 25,000 rows each, one per 4 million rows above); "
                   "spark: the session's spark.sql.shuffle.partitions.")
@shared("memory_budget", "raw_csv", "strata")
@disparity_option
@debias_options
@_log_options
@_errors_exit_2
def evaluate(metrics: tuple[str, ...], fmt: str, per_user: str | None, report: str | None,
             max_k: int | None, **params: Any) -> None:
    """Evaluate predictions against the truth and print the metrics.

    \b
    receval evaluate --truth test.csv --predictions run.csv -m P@10 -m nDCG@10
    receval evaluate -t test.qrels -p bm25.run -p dense.run -m P@5,10 --profile trec_eval
    receval evaluate -t test.csv -p run.csv --format json --report report.html
    receval evaluate -t test.csv -p run.csv --train train.csv -m nDCG@10 -m coverage@10
    receval evaluate -t test.csv -p run.csv --train train.csv -m AWRF@10 --item-features
        items.csv --strata activity --disparity welch
    """
    from receval.report import tables
    from receval.report.beyond import section_k, section_metrics
    from receval.report.models import CURVE_MAX_K, curve_ks, with_curves

    asked, beyond = _metric_names(metrics)
    check_disparity(params, fmt)
    check_one_gamma(params)
    accuracy = [n for n in asked if n not in beyond]
    outputs = _check_output(params, {"--per-user": (per_user, TABLE_SUFFIXES),
                                     "--report": (report, REPORT_SUFFIXES)})
    _check_log(params)
    section = bool(report and params.get("train"))  # the report's beyond-accuracy section
    if report and not accuracy:
        raise ReceValError("--report needs an accuracy metric besides the beyond-accuracy "
                           "ones, e.g. -m nDCG@10")
    k = section_k(asked)
    shown_beyond = section_metrics(asked, k) if section else beyond
    wanted = (with_curves(accuracy, curve_ks(accuracy, max_k or CURVE_MAX_K)) + shown_beyond
              if report else asked)
    # the run's warnings, recorded for the report too, then passed on to be printed
    with warnings.catch_warnings(record=True) as caught:
        if params.get("memory_budget") is not None or streamed_unasked(params, report):
            runs = evaluate_files_streaming(wanted, params, report, asked)
        elif params.get("engine") == "spark":
            runs = _evaluate_files_spark(wanted, params, bool(per_user or report))
        else:
            runs = _evaluate_files(wanted, params, top_items=bool(report), asked=asked,
                                   keep=section)
        models = {name: _restrict(r, asked, beyond) for name, r in runs.results.items()}
        _warn_undefined(models)
        if len(models) > 1:  # the letters compare the models: lists of one depth on MRR, MAP
            from receval.compare import check_list_depths

            check_list_depths({n: r.list_depth for n, r in runs.results.items()}, asked)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    raw_csv = bool(params.get("raw_csv"))
    # every output to a temporary file first: all are renamed into place, or none (an error in
    # the report leaves the old per-user file as it was), before the summary is printed
    with sigterm_as_exit(), contextlib.ExitStack() as stack:
        if "--per-user" in outputs:
            tmp = stack.enter_context(atomic_output(outputs["--per-user"], "--per-user"))
            _write_per_user(models, tmp, raw=raw_csv)
        if "--report" in outputs:
            from receval.report.html import write_report

            tmp = stack.enter_context(atomic_output(outputs["--report"], "--report"))
            titles = _item_titles(params)
            extra = _beyond_report(runs, shown_beyond, k, params, titles) if section else None
            write_report(tmp, runs.results, metrics=asked, inputs=runs.inputs,
                         top_items=runs.top_items, max_k=max_k,
                         progress=_report_progress(stack), beyond=extra, item_titles=titles,
                         seed=params["seed"], warnings=[str(w.message) for w in caught])
    if fmt == "table":
        out = _stdout()
        for shown in tables.summary_lines(_for_tables(models), out.width):
            out.print(shown, highlight=False)
        out.print(tables.options_line(next(iter(models.values()))), style="dim",
                  highlight=False, markup=False)
        for name, result in models.items():  # the audit: the HTML report shows the same
            prefix = f"{name}: " if len(models) > 1 else ""
            for line in tables.audit_lines(result):  # --memory-budget: how it streamed too
                out.print(Text(safe_text(f"{prefix}{line}")), style="dim", highlight=False)
        for name, result in models.items():
            if result.strata is not None:
                for table in tables.strata_table(result.strata,
                                                 name if len(models) > 1 else "", out.width):
                    out.print(table)
                note = tables.not_per_group_note(result)
                if note:  # catalogue-level metrics: named, never silently absent
                    out.print(Text(safe_text(note)), style="dim", highlight=False)
        if params.get("disparity"):  # the gap between the --strata groups, unpaired
            gaps, note = disparity_tables(models, runs.strata, runs.train, params, out.width)
            out.print(gaps)
            out.print(note, style="dim", highlight=False, markup=False)
    elif fmt == "csv":
        click.echo(tables.to_csv(_for_tables(models), raw=raw_csv).rstrip("\n"))
    elif fmt == "json":  # the audit record as every output carries it, the warnings printed
        click.echo(tables.to_json(_for_tables(models), warnings=caught))
    else:
        click.echo(tables.render(_for_tables(models), fmt).rstrip("\n"))
    if report:
        _print_written("report", report)
    _log_runs(params, models, warnings=caught)
    runs.print_notes()


def _partitions(value: str) -> int | str:
    """``--spark-partitions``: a positive whole number, ``auto`` or ``spark``."""
    text = str(value).strip().lower()
    if text in ("auto", "spark"):
        return text
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise click.BadParameter(f"{value!r} is not a positive whole number, 'auto' or 'spark'")


def _evaluate_files_spark(metrics: list[str], params: dict[str, Any],
                          per_user: bool) -> _Runs:
    """``--engine spark``: Spark reads the truth and each predictions file (Parquet); the
    per-user values are collected only for --per-user / --report."""
    import warnings

    import pandas as pd

    import receval
    from receval import io
    from receval.exceptions import UndefinedMetricWarning
    from receval.io.wanted import parse_columns_flag

    kwargs = _semantics(params)
    kwargs.update(_spark_inputs(metrics, params))
    # Spark's own log off (its failures become receval's one line); --debug: its ERROR lines
    kwargs["spark_options"] = {"master": params.get("spark_master"), "per_user": per_user,
                               "partitions": params.get("spark_partitions", "auto"),
                               "log_level": "ERROR" if params.get("debug") else "OFF"}
    columns = {"user_col": params["user_col"], "item_col": params["item_col"],
               "rating_col": params["rating_col"], "score_col": params["score_col"],
               "truth_columns": parse_columns_flag(params.get("truth_columns"), "truth"),
               "prediction_columns": parse_columns_flag(params.get("prediction_columns"),
                                                        "predictions")}
    runs = _Runs({}, {"truth": str(params["truth"])}, {}, [])
    paths = list(params["predictions"])
    for name, path in zip(io.model_names(paths), paths, strict=True):
        with warnings.catch_warnings():  # said once per model by _warn_undefined
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            result: Any = receval.evaluate(params["truth"], path, metrics, **kwargs,
                                           **columns)
        result.per_user = (result.per_user_pandas() if per_user
                           else pd.DataFrame(columns=["user", *result.metrics]))
        runs.results[name] = result
        runs.inputs[f"predictions: {name}"] = str(path)
    return runs


def _spark_inputs(metrics: list[str], params: dict[str, Any]) -> dict[str, Any]:
    """``--train`` / ``--exclude-train`` (Parquet, read by Spark), ``--strata`` (a file) and
    the beyond-accuracy inputs of ``--engine spark`` (docs/spark.md)."""
    from receval.beyond.names import parse_beyond
    from receval.cli.common import _beyond_kwargs, _read_strata

    out = _beyond_kwargs(params, [n for n in metrics if parse_beyond(n) is not None])
    if params.get("exclude_train") and not params.get("train"):
        raise ReceValError("--exclude-train needs the training data: pass --train FILE")
    if params.get("train"):
        out.update(train=str(params["train"]), exclude_train=bool(params.get("exclude_train")),
                   train_columns=parse_train_columns(params.get("train_columns")))
    strata = params.get("strata")
    if strata and Path(strata).exists():  # the file's ids of the truth's type
        import pyarrow as pa
        import pyarrow.dataset as ds

        try:
            kind = ds.dataset(params["truth"], format="parquet").schema.field(
                params["user_col"]).type
        except (pa.ArrowException, KeyError, OSError):  # the engine names what is wrong
            kind = pa.int64()
        strata = _read_strata(strata, params, text_ids=not pa.types.is_integer(kind))
    if params.get("strata"):
        out["strata"] = strata
    return out


def _restrict(result: Any, asked: list[str], beyond: list[str]) -> Any:
    """``result`` showing the metrics ``asked`` only, in their order; the beyond-accuracy ones
    (``beyond``) keep their summary and, per-user metrics, their ``per_user`` column
    (:func:`receval.report.models.restrict` reads accuracy names only). Per-user values a
    streamed run spilled to disk stay there (:func:`receval.streaming.peruser.restricted`)."""
    if type(result).__name__ == "StreamedResult":
        from receval.streaming.peruser import restricted

        return restricted(result, lambda r: _restrict_now(r, asked, beyond))
    return _restrict_now(result, asked, beyond)


def _restrict_now(result: Any, asked: list[str], beyond: list[str]) -> Any:
    from receval.report.models import restrict

    shown = restrict(result, [n for n in asked if n not in beyond])
    for name in beyond:
        if name in result.per_user.columns:
            shown.per_user[name] = result.per_user[name].to_numpy()
    shown.summary = {n: (result.summary[n] if n in beyond else shown.summary[n]) for n in asked}
    shown.per_user = shown.per_user[["user", *[n for n in asked
                                               if n in shown.per_user.columns]]]
    shown.metrics = list(asked)
    if result.strata is not None:  # per group: every metric asked for that has a column
        shown.strata = result.strata[["group", "users", *[n for n in asked
                                                          if n in result.strata.columns]]]
        groups = shown.counts.get("strata") or {}
        if groups:
            shown.counts["strata"] = {
                "undefined": {g: {n: v for n, v in by.items() if n in asked}
                              for g, by in groups["undefined"].items()},
                "not_per_group": {n: v for n, v in groups["not_per_group"].items()
                                  if n in asked}}
    if isinstance(result.options.get("metrics"), dict):
        shown.options["metrics"] = {n: result.options["metrics"].get(n, n) for n in asked}
    if isinstance(result.options.get("beyond"), dict):  # not the report's extra metrics
        record = dict(result.options["beyond"])
        record["catalogue_metrics"] = [n for n in record.get("catalogue_metrics", [])
                                       if n in asked]
        shown.options["beyond"] = record
    return shown


def _for_tables(models: dict[str, Any]) -> dict[str, Any]:
    """What the summary renderers read: a catalogue metric (summary only) gets an empty (NaN)
    per-user column, so the paired tests behind the marks leave it out as "not a mean over
    users" rather than fail on the missing column; the printed numbers are the summary's."""
    import copy

    import numpy as np

    out = {}
    for name, result in models.items():
        # one model: no marks, and its per-user values (spilled by a streamed run) stay unread
        missing = ([m for m in result.summary if m not in result.per_user.columns]
                   if len(models) > 1 else [])
        if missing:
            result = copy.copy(result)
            result.per_user = result.per_user.assign(**{m: np.nan for m in missing})
        out[name] = result
    return out


def _item_titles(params: dict[str, Any]) -> Any:
    """The --items table (item, title), or None without the flag."""
    from receval.cli.common import _read_item_table

    return (_read_item_table(params["items"], "--items", params.get("item_col") or "item",
                             params.get("items_columns"))
            if params.get("items") else None)


def _beyond_report(runs: _Runs, metrics: list[str], k: int, params: dict[str, Any],
                   titles: Any) -> Any:
    """The report's beyond-accuracy section (:mod:`receval.report.beyond`)."""
    from receval.report.beyond import beyond_section

    held = {n: _restrict(r, metrics, metrics) for n, r in runs.results.items()}
    return beyond_section(held, runs.predictions, runs.train, k=k, titles=titles,
                          exclude_train=bool(params.get("exclude_train")))
