"""The ``receval plot`` command."""

from __future__ import annotations

from typing import Any

import click

from receval.cli.common import (
    DEFAULT_METRICS,
    PLOT_SUFFIXES,
    _beyond_options,
    _check_output,
    _errors_exit_2,
    _evaluate_files,
    _input_options,
    _metric_names,
    _metrics_option,
    _print_written,
    _semantics_options,
    _train_options,
    main,
)
from receval.cli.options_table import option, shared
from receval.exceptions import ReceValError
from receval.io.output import atomic_output, sigterm_as_exit
from receval.report.plots import KINDS as PLOT_KINDS  # one list: the plotter's


@main.command()
@_input_options
@_train_options
@_beyond_options
@_metrics_option(())
@_semantics_options
@click.option("--kind", type=click.Choice(PLOT_KINDS), default="pr-curve",
              show_default=True, help="at-k: P@k and R@k against k; pr-curve: the curve traced "
              "by k; f-beta: iso-F curves; distribution: per-user histogram of a metric; "
              "comparison: bars with bootstrap CIs; differences: each model's paired difference "
              "from the first, with its interval (filled where significant after Holm).")
@option("out", required=True, help="Output image, .png or .svg.")
@shared("max_k", "seed")
@_errors_exit_2
def plot(metrics: tuple[str, ...], kind: str, out: str, max_k: int | None, seed: int,
         **params: Any) -> None:
    """Plot one or several models: curves over k, distributions, comparisons.

    \b
    receval plot -t test.csv -p a.csv -p b.csv --kind pr-curve -o pr.png
    receval plot -t test.csv -p a.csv --kind distribution -m nDCG@10 -o ndcg.svg
    """
    from receval.beyond.names import parse_beyond
    from receval.report import plots
    from receval.report.models import CURVE_MAX_K, curve_ks, curve_limit, with_curves

    target = _check_output(params, {"--out": (out, PLOT_SUFFIXES)})["--out"]
    curves = kind in ("at-k", "pr-curve", "f-beta")
    asked = _metric_names(metrics or DEFAULT_METRICS)[0] if not curves else []
    specs = [parse_beyond(n) for n in asked]
    catalogue = [s.name for s in specs if s is not None and s.entry.reduction == "catalogue"]
    if catalogue:
        raise ReceValError(f"{catalogue[0]!r} is one number over all lists (catalogue level): "
                           f"no per-user values to plot; receval evaluate shows it")
    wanted = with_curves(asked, curve_ks([], max_k or CURVE_MAX_K)) if curves else asked
    runs = _evaluate_files(wanted, params)
    extra: dict[str, Any] = {}
    if curves:
        extra["max_k"] = curve_limit(runs.results, max_k)
    if kind == "distribution":
        extra["metric"] = asked[0]
    elif kind in ("comparison", "differences"):
        extra.update(metrics=asked, seed=seed)
    with sigterm_as_exit(), atomic_output(target, "--out") as tmp:
        plots.plot(runs.results, kind, tmp, **extra)
    _print_written("plot", out)
    runs.print_notes()
