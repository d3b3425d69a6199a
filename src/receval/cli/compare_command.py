"""The ``receval compare`` command: paired tests between models."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table
from rich.text import Text

from receval.cli.common import (
    _check_columns,
    _errors_exit_2,
    _evaluate_files,
    _input_options,
    _metrics_option,
    _semantics_options,
    _stdout,
    _warn_undefined,
    main,
)
from receval.exceptions import ReceValError
from receval.io.terminal import safe_text


@main.command()
@_input_options
@_metrics_option()
@_semantics_options
@click.option("--baseline", "-b", default=None, metavar="MODEL",
              help="The model the others are compared with (a predictions file's stem); "
                   "default: every pair of models.")
@click.option("--test", type=click.Choice(("t", "wilcoxon", "randomization", "bootstrap")),
              default="t", show_default=True,
              help="Paired test: t (scipy ttest_rel), wilcoxon (inflates type-I error at "
                   "recommender scale), randomization (sign flips) or bootstrap.")
@click.option("--correction", type=click.Choice(("holm", "bh", "bonferroni", "none")),
              default="holm", show_default=True,
              help="Multiple-comparison correction across every (pair x metric) row.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True,
              help="Significance level; the interval is at 1 - alpha.")
@click.option("--resamples", type=click.IntRange(1, None), default=10_000, show_default=True,
              help="Resamples of the bootstrap interval and of the randomization and bootstrap "
                   "tests.")
@click.option("--seed", type=click.IntRange(0, None), default=0, show_default=True,
              help="Seed of the resampling (each row's stream is keyed by its names).")
@click.option("--format", "-f", "fmt", type=click.Choice(("table", "json", "csv", "markdown")),
              default="table", show_default=True, help="How the comparison is printed.")
@_errors_exit_2
def compare(metrics: tuple[str, ...], baseline: str | None, test: str, correction: str,
            alpha: float, resamples: int, seed: int, fmt: str, **params: Any) -> None:
    """Is model B really better than A? Paired tests per user, corrected for multiplicity,
    with the difference's bootstrap interval and effect sizes.

    \b
    receval compare -t test.csv -p pop.csv -p svd.csv -m P@10 -m nDCG@10 --baseline pop
    receval compare -t test.csv -p a.csv -p b.csv -p c.csv --test randomization -f json
    """
    from receval.compare import cell_rows, footnote
    from receval.compare import compare as compare_models
    from receval.measures.spec import parse_metrics

    if len(params["predictions"]) < 2:
        raise ReceValError("compare needs at least two --predictions files")
    _check_columns(params)
    asked = [s.name for s in parse_metrics(list(metrics))]
    runs = _evaluate_files(asked, params)
    _warn_undefined(runs.results)
    result = compare_models(None, runs.results, asked, baseline=baseline, test=test,
                            correction=correction, alpha=alpha, n_resamples=resamples,
                            seed=seed)
    if fmt == "json":
        click.echo(result.to_json())
    elif fmt == "csv":
        click.echo(result.to_csv().rstrip("\n"))
    elif fmt == "markdown":
        click.echo(result.to_markdown())
    else:
        table = Table(title="paired comparison")
        for name in ("model", "baseline", "metric"):
            table.add_column(name, style="bold" if name == "model" else None)
        for name in ("mean", "baseline mean", "delta", f"{1 - alpha:.0%} CI", "p",
                     "p adjusted", "d_z", "P(better)", "W/T/L", "n"):
            table.add_column(name, justify="right")
        for row in cell_rows(result):
            table.add_row(*(Text(safe_text(c)) for c in row))
        out = _stdout()
        out.print(table)
        out.print(Text(footnote(result)), style="dim", highlight=False)
    runs.print_notes()
