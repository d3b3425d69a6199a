"""The ``receval evaluate`` command."""

from __future__ import annotations

import contextlib
from typing import Any

import click
from rich.text import Text

from receval.cli.common import (
    REPORT_SUFFIXES,
    _check_output,
    _errors_exit_2,
    _evaluate_files,
    _input_options,
    _metrics_option,
    _print_written,
    _report_progress,
    _semantics_options,
    _stdout,
    _warn_undefined,
    _write_per_user,
    main,
)
from receval.io.output import TABLE_SUFFIXES, atomic_output, sigterm_as_exit
from receval.io.terminal import safe_text
from receval.report.tables import FORMATS as OUTPUT_FORMATS  # one list: the renderer's


@main.command()
@_input_options
@_metrics_option()
@_semantics_options
@click.option("--format", "-f", "fmt", type=click.Choice(OUTPUT_FORMATS), default="table",
              show_default=True, help="How the summary is printed on stdout.")
@click.option("--per-user", metavar="FILE",
              help="Write per-user values to FILE (.csv, .tsv or .parquet).")
@click.option("--report", metavar="FILE",
              help="Write a self-contained HTML report (tables, plots, distributions).")
@click.option("--max-k", type=click.IntRange(1, 10_000), default=None, metavar="N",
              help="Last cutoff of the report's curves. [default: as deep as the lists go, "
                   "up to 1000]")
@click.option("--raw-csv", is_flag=True,
              help="Write CSV/TSV text cells as they are: by default a cell starting with =, +, "
                   "-, @, tab or CR gets a ' in front, so a spreadsheet does not run it.")
@_errors_exit_2
def evaluate(metrics: tuple[str, ...], fmt: str, per_user: str | None, report: str | None,
             max_k: int | None, **params: Any) -> None:
    """Evaluate predictions against the truth and print the metrics.

    \b
    receval evaluate --truth test.csv --predictions run.csv -m P@10 -m nDCG@10
    receval evaluate -t test.qrels -p bm25.run -p dense.run -m P@5,10 --profile trec_eval
    receval evaluate -t test.csv -p run.csv --format json --report report.html
    """
    from receval.measures.spec import parse_metrics
    from receval.report import tables
    from receval.report.models import CURVE_MAX_K, curve_ks, restrict, with_curves

    asked = [s.name for s in parse_metrics(list(metrics))]
    outputs = _check_output(params, {"--per-user": (per_user, TABLE_SUFFIXES),
                                     "--report": (report, REPORT_SUFFIXES)})
    wanted = with_curves(asked, curve_ks(asked, max_k or CURVE_MAX_K)) if report else asked
    runs = _evaluate_files(wanted, params, top_items=bool(report), asked=asked)
    models = {name: restrict(r, asked) for name, r in runs.results.items()}
    _warn_undefined(models)
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
            write_report(tmp, runs.results, metrics=asked, inputs=runs.inputs,
                         top_items=runs.top_items, max_k=max_k,
                         progress=_report_progress(stack))
    if fmt == "table":
        out = _stdout()
        out.print(tables.rich_table(models))
        out.print(tables.options_line(next(iter(models.values()))), style="dim",
                  highlight=False, markup=False)
        for name, result in models.items():
            prefix = f"{name}: " if len(models) > 1 else ""
            out.print(Text(safe_text(f"{prefix}{tables.counts_line(result)}")),
                      style="dim", highlight=False)
    elif fmt == "csv":
        click.echo(tables.to_csv(models, raw=raw_csv).rstrip("\n"))
    else:
        click.echo(tables.render(models, fmt).rstrip("\n"))
    if report:
        _print_written("report", report)
    runs.print_notes()
