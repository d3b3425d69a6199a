"""The ``receval compare`` command: paired tests between models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from receval.cli.common import (
    _beyond_options,
    _check_columns,
    _errors_exit_2,
    _evaluate_files,
    _input_options,
    _metric_names,
    _metrics_option,
    _read_strata,
    _semantics_options,
    _stdout,
    _train_options,
    _warn_undefined,
    main,
)
from receval.exceptions import ReceValError
from receval.io.terminal import safe_text


@main.command()
@_input_options
@_train_options
@_beyond_options
@_metrics_option()
@_semantics_options
@click.option("--baseline", "-b", default=None, metavar="MODEL",
              help="The model the others are compared with (a predictions file's stem; "
                   "'popular' with --train adds the most-popular baseline); default: every "
                   "pair of models.")
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
@click.option("--strata", default=None, metavar="FILE|NAME",
              help="Compare per group of users too: a file (CSV, TSV or Parquet) with the user "
                   "column and one group column, or a built-in stratum of --train: activity, "
                   "activity:N, cold, cold:N. Users the file does not name: group (none).")
@click.option("--format", "-f", "fmt",
              type=click.Choice(("table", "json", "csv", "markdown", "latex")),
              default="table", show_default=True, help="How the comparison is printed.")
@_errors_exit_2
def compare(metrics: tuple[str, ...], baseline: str | None, test: str, correction: str,
            alpha: float, resamples: int, seed: int, strata: str | None, fmt: str,
            **params: Any) -> None:
    """Is model B really better than A? Paired tests per user, corrected for multiplicity,
    with the difference's bootstrap interval and effect sizes.

    \b
    receval compare -t test.csv -p pop.csv -p svd.csv -m P@10 -m nDCG@10 --baseline pop
    receval compare -t test.csv -p a.csv -p b.csv -p c.csv --test randomization -f json
    """
    from receval.compare import POPULAR, cell_header, cell_rows, check_pairable, footnote
    from receval.compare import compare as compare_models

    popular = baseline == POPULAR and not any(Path(p).stem == POPULAR
                                              for p in params["predictions"])
    if popular and not params.get("train"):
        raise ReceValError("--baseline popular needs the training data: pass --train FILE")
    if len(params["predictions"]) + popular < 2:
        raise ReceValError("compare needs at least two --predictions files")
    _check_columns(params)
    asked, _ = _metric_names(metrics)
    check_pairable(asked)  # before any file is read
    runs = _evaluate_files(asked, params)
    if popular:
        runs.results[POPULAR] = _popular_result(asked, params, runs)
    _warn_undefined(runs.results)
    groups: Any = None
    train = None if runs.train is None else {"user": runs.train.users, "item": runs.train.items}
    if strata is not None:
        users = next(iter(runs.results.values())).per_user["user"]
        groups = (_read_strata(strata, params, text_ids=users.dtype == object)
                  if Path(strata).exists() else strata)
    result = compare_models(None, runs.results, asked, baseline=baseline, test=test,
                            correction=correction, alpha=alpha, n_resamples=resamples,
                            seed=seed, strata=groups, train=train)
    if fmt == "json":
        click.echo(result.to_json())
    elif fmt == "csv":
        click.echo(result.to_csv().rstrip("\n"))
    elif fmt == "markdown":
        click.echo(result.to_markdown())
    elif fmt == "latex":
        click.echo(result.to_latex())
    else:
        table = Table(title="paired comparison")
        header = cell_header(result)
        for name in header[:-10]:
            table.add_column(name, style="bold" if name == "model" else None)
        for name in header[-10:]:
            table.add_column(name, justify="right")
        for row in cell_rows(result):
            table.add_row(*(Text(safe_text(c)) for c in row))
        out = _stdout()
        out.print(table)
        out.print(Text(footnote(result)), style="dim", highlight=False)
    runs.print_notes()


def _popular_result(asked: list[str], params: dict[str, Any], runs: Any) -> Any:
    """The most-popular baseline for the evaluated users, evaluated as a predictions file is
    (written to a temporary file, read back with the same options)."""
    import tempfile

    from receval.baselines import most_popular
    from receval.compare import POPULAR, POPULAR_K
    from receval.measures.spec import parse_metric

    users = next(iter(runs.results.values())).per_user["user"].tolist()
    from receval.beyond.names import parse_beyond

    k = max((x for x in ((parse_beyond(m) or parse_metric(m)).k for m in asked) if x),
            default=POPULAR_K)
    train = runs.train
    lists = most_popular({"user": train.users, "item": train.items}, users, k)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{POPULAR}.csv"
        # written as the other predictions are read (header, delimiter), as CSV
        lists.rename(columns={"user": params["user_col"], "item": params["item_col"],
                              "score": params["score_col"]}).to_csv(
            path, index=False, header=not params["no_header"], sep=params["delimiter"] or ",")
        more = _evaluate_files(asked, {**params, "predictions": (str(path),),
                                       "prediction_columns": None,
                                       "predictions_format": "csv"})
    runs.inputs[f"predictions: {POPULAR}"] = "most popular in --train"
    return more.results[POPULAR]
