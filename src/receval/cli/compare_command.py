"""The ``receval compare`` command: paired tests between models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
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
from receval.cli.debias_flags import debias_options
from receval.cli.log_option import _check_log, _log_options, _log_runs
from receval.cli.options_table import option, shared
from receval.cli.streaming_runs import evaluate_files_streaming, streamed_unasked
from receval.compare import CORRECTION_FAMILIES
from receval.exceptions import ReceValError
from receval.io.terminal import safe_text
from receval.stats.corrections import CORRECTIONS
from receval.stats.tests import TESTS


@main.command()
@_input_options
@_train_options
@_beyond_options
@_metrics_option()
@_semantics_options
@option("baseline", help="The model the others are compared with (a predictions file's stem; "
                   "'popular' with --train adds the most-popular baseline); default: every "
                   "pair of models.")
@click.option("--test", type=click.Choice(TESTS),
              default="t", show_default=True,
              help="Paired test: t (scipy ttest_rel), wilcoxon (inflates type-I error at "
                   "recommender scale), randomization (sign flips) or bootstrap.")
@click.option("--correction", type=click.Choice(CORRECTIONS),
              default="holm", show_default=True,
              help="Multiple-comparison correction across every (pair x metric) row.")
@click.option("--correction-family", type=click.Choice(CORRECTION_FAMILIES),
              default="separate", show_default=True,
              help="With --strata: 'separate' corrects the overall rows alone (the adjusted "
                   "p-values they have without --strata) and the group rows as a second "
                   "family; 'all' corrects every row as one family.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True,
              help="Significance level; the interval is at 1 - alpha.")
@option("resamples", default=10_000, minimum=1,
        what="Resamples of the bootstrap interval and of the randomization and bootstrap tests")
@shared("seed", "strata", "memory_budget")
@option("format", choices=("table", "json", "csv", "markdown", "latex"), what="the comparison")
@debias_options
@_log_options
@_errors_exit_2
def compare(metrics: tuple[str, ...], baseline: str | None, test: str, correction: str,
            correction_family: str, alpha: float, resamples: int, seed: int,
            strata: str | None, fmt: str, **params: Any) -> None:
    """Is model B really better than A? Paired tests per user, corrected for multiplicity,
    with the difference's bootstrap interval and effect sizes.

    \b
    receval compare -t test.csv -p pop.csv -p svd.csv -m P@10 -m nDCG@10 --baseline pop
    receval compare -t test.csv -p a.csv -p b.csv -p c.csv --test randomization -f json
    """
    from receval.compare import POPULAR, check_pairable
    from receval.compare import compare as compare_models

    popular = baseline == POPULAR and not any(Path(p).stem == POPULAR
                                              for p in params["predictions"])
    if popular and not params.get("train"):
        raise ReceValError("--baseline popular needs the training data: pass --train FILE")
    if params.get("propensity") == "popularity:estimate":
        raise ReceValError("--propensity popularity:estimate would fit gamma to each model's "
                           "own lists: run receval evaluate with it once, then pass "
                           "--propensity popularity:G with its gamma")
    if len(params["predictions"]) + popular < 2:
        raise ReceValError("compare needs at least two --predictions files")
    _check_columns(params)
    _check_log(params)
    asked, _ = _metric_names(metrics)
    check_pairable(asked)  # before any file is read
    import warnings

    # the run's warnings, recorded for --log's audit too, then passed on to be printed
    with warnings.catch_warnings(record=True) as caught:
        if params.get("memory_budget") is not None or streamed_unasked(params, None):
            runs = evaluate_files_streaming(asked, params)  # --memory-budget (docs/streaming.md)
        else:
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
                                seed=seed, strata=groups, train=train,
                                correction_family=correction_family)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    from receval.report.audit import warning_records

    result.warnings = warning_records(caught)  # JSON and --log: the warnings printed
    if fmt == "json":
        click.echo(result.to_json())
    elif fmt == "csv":
        click.echo(result.to_csv().rstrip("\n"))
    elif fmt == "markdown":
        click.echo(result.to_markdown())
    elif fmt == "latex":
        click.echo(result.to_latex())
    else:
        out = _stdout()
        for line in comparison_lines(result, out.width):
            out.print(line, highlight=False)
    _log_runs(params, result.results, result, warnings=result.warnings)
    runs.print_notes()


#: the columns left out first when the table is wider than the terminal, first to last
DROP_ORDER = ("W/T/L", "P(better)", "p", "baseline mean", "d_z", "mean", "n")


def comparison_lines(result: Any, width: int) -> list[Any]:
    """The terminal table of a comparison that fits ``width`` columns, its cells whole, then
    a note naming the columns left out to fit (if any) and the footnote (test, correction
    families, interval). One (model, baseline) pair is named in the title; its columns go
    first when space is short.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> lines = comparison_lines(receval.compare(truth, {"a": a, "b": a}, ["P@1"]), 80)
        >>> str(lines[1])
        'columns left out to fit 80 columns: baseline mean, p, P(better), W/T/L; -f markdown or \
-f csv shows them all'
    """
    from receval.compare import cell_header, cell_rows, footnote
    from receval.report.fit import drop_to_fit, fixed_table

    header = cell_header(result)
    rows = [[safe_text(c) for c in row] for row in cell_rows(result)]
    pairs = result.table[["model", "baseline"]].drop_duplicates()
    title = "paired comparison"
    first: tuple[str, ...] = ()
    if len(pairs) == 1:
        model, base = (safe_text(str(x)) for x in pairs.iloc[0])
        title = f"paired comparison: {model} against {base}"
        first = ("model", "baseline")
    kept = drop_to_fit(header, rows, width, (*first, *DROP_ORDER))
    table = fixed_table(header, rows, kept, right=header[-10:], bold=("model",), title=title)
    lines: list[Any] = [table]
    left_out = [h for i, h in enumerate(header) if i not in kept and h not in first]
    if left_out:
        lines.append(Text(f"columns left out to fit {width} columns: {', '.join(left_out)}; "
                          "-f markdown or -f csv shows them all", style="dim"))
    lines.append(Text(footnote(result), style="dim"))
    return lines


def _popular_result(asked: list[str], params: dict[str, Any], runs: Any) -> Any:
    """The most-popular baseline for the evaluated users, evaluated as a predictions file is
    (written to a temporary file, read back with the same options)."""
    import tempfile

    from receval.baselines import popular_baseline
    from receval.compare import POPULAR, POPULAR_K, metric_cutoffs

    users = next(iter(runs.results.values())).per_user["user"].tolist()
    train = runs.train
    # the library's baseline (compare(baseline="popular")): as deep as the deepest model list
    lists = popular_baseline({"user": train.users, "item": train.items}, users,
                             depths=[r.list_depth for r in runs.results.values()],
                             cutoffs=metric_cutoffs(asked), default=POPULAR_K)
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
