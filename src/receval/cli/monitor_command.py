"""The ``receval monitor`` command: metrics per time window from served lists and delayed
feedback, incremental through a state file."""

from __future__ import annotations

from typing import Any

import click
from rich.text import Text

from receval.cli import served_log_flags as flags
from receval.cli.common import (
    REPORT_SUFFIXES,
    _beyond_kwargs,
    _beyond_options,
    _errors_exit_2,
    _metric_names,
    _metrics_option,
    _semantics,
    _semantics_options,
    _stdout,
    err_console,
    main,
)
from receval.cli.finite import FiniteRange
from receval.cli.options_table import option, shared
from receval.exceptions import ReceValError
from receval.io.terminal import safe_text

PLOT_SUFFIXES = (".png", ".svg")


@main.command()
@flags.impressions(True, "What was served: user, item, rank (1 best) or score, served_at "
                         "(CSV, TSV, Parquet or JSON Lines).")
@flags.feedback(True)
@_metrics_option(("P@10", "R@10", "nDCG@10", "MRR"), beyond=False)
@flags.window()
@click.option("--step", default=None, metavar="DURATION",
              help="Rolling windows: a window of --window starts every --step (which divides "
                   "it). [default: calendar windows]")
@flags.attribution()
@click.option("--lateness", default="0s", show_default=True,
              help="How late feedback may arrive: the watermark waits that much longer.")
@click.option("--min-feedback", type=click.IntRange(1, None), default=None,
              help="A list counts only once this many of its items have feedback (rating "
                   "logs). [default: every list counts; one without feedback is all "
                   "non-relevant once its attribution period is over]")
@flags.origin()
@click.option("--state", default=None, metavar="FILE",
              help="State file (.sqlite): read if it exists, updated (atomically, one run at "
                   "a time) after the run, so the next run reads only the new logs; a batch "
                   "fed twice is applied once.")
@click.option("--lock-timeout", type=FiniteRange(0, None), default=600, show_default=True,
              help="Seconds to wait for another run holding the state file.")
@click.option("--late-out", default=None, metavar="FILE",
              help="Write this run's late feedback rows, with the reason each was ignored "
                   "(.csv, .tsv or .parquet).")
@flags.time_unit()
@shared("report")
@click.option("--plot", "plot_path", default=None, metavar="FILE",
              help="Write the drift plot (.png or .svg).")
@click.option("--reference", default=None, metavar="TIME",
              help="Start of the reference window of the drift band (default: the first).")
@flags.variant_col()
@flags.targets(False, "With --report: a target policy (user, served_at, item, position, "
                      "probability; as receval offpolicy --target) whose off-policy estimates "
                      "(ips, snips) per window go in the report. Repeat for several.")
@flags.propensity_col("With --target: the impressions' column of the logger's probability "
                      "of each shown item.")
@option("baseline", help="Variant the others are compared with.")
@click.option("--unit", type=click.Choice(["user", "list"]), default="user", show_default=True,
              help="Unit of the variant comparisons: the randomised one (lists only when "
                   "each list was assigned a variant at random).")
@click.option("--planned-users", type=click.IntRange(1, None), default=10_000,
              show_default=True,
              help="Users the decisions' confidence sequence is tuned for (its power is best "
                   "near this number; valid for any).")
@click.option("--covariate", default=None, metavar="FILE",
              help="Pre-period value per user (user and a column per metric, or 'covariate'; "
                   "CSV, TSV or Parquet): CUPED-adjusted decisions.")
@shared("user_col", "item_col")
@option("score_col", default=None, note=" ordering the served list [default: score, else rank]")
@click.option("--served-col", default="served_at", show_default=True)
@click.option("--value-col", default="value", show_default=True)
@click.option("--time-col", default="at", show_default=True)
@shared("resamples", "confidence", "seed")
@option("memory_budget", help="Read the Parquet logs in pieces of time within SIZE of memory "
                              "(2GiB, 500MB), with the numbers of one read (docs/streaming.md).")
@_semantics_options
@option("train", help="Training interactions (user, item): each served list's user history, "
                   "for calibration@k (docs/fairness.md).")
@_beyond_options
@option("format", what="each window")
@_errors_exit_2
def monitor(impressions: str, feedback: str, metrics: tuple[str, ...], window: str,
            step: str | None, attribution: str, lateness: str, min_feedback: int | None,
            origin: str | None,
            state: str | None, lock_timeout: float, late_out: str | None,
            time_unit: str | None, report: str | None, plot_path: str | None,
            reference: str | None, variant_col: str | None, targets: tuple[str, ...],
            propensity_col: str, baseline: str | None, unit: str, planned_users: int,
            covariate: str | None,
            user_col: str, item_col: str, score_col: str | None, served_col: str,
            value_col: str, time_col: str, resamples: int, confidence: float, seed: int,
            fmt: str, **params: Any) -> None:
    """Metrics per time window from served lists and delayed feedback, with intervals, a
    drift flag against a reference window and, with --variant-col, variant comparisons.

    \b
    receval monitor -i served.parquet --feedback clicks.parquet -m P@10 --window 7D \\
        --attribution 7D --state state.sqlite --report monitor.html
    """
    import receval
    from receval.io.output import check_outputs
    from receval.io.source import check_file

    names, beyond = _metric_names(metrics)
    fairness = _fairness_kwargs({**params, "user_col": user_col, "item_col": item_col}, names,
                                beyond)  # refusals before any file is read
    inputs = [check_file(impressions, "impressions"), check_file(feedback, "feedback")]
    from receval.io.output import TABLE_SUFFIXES
    from receval.monitor.state import SUFFIXES

    check_outputs({"--state": (state, (*SUFFIXES, ".parquet", ".pq")),
                   "--late-out": (late_out, TABLE_SUFFIXES),
                   "--report": (report, REPORT_SUFFIXES),
                   "--plot": (plot_path, PLOT_SUFFIXES)}, inputs)
    if targets and not report:
        raise ReceValError("--target puts off-policy estimates in the report: give --report")
    if targets and state:
        raise ReceValError("--target with --state: the estimates would cover this run's logs "
                           "only, the windows every run's; run it without --state")
    from receval.cli.offpolicy_command import _targets

    policies = _targets(targets)  # read (or refused) before anything is written
    budget = params.pop("memory_budget", None)
    if targets and budget is not None:
        raise ReceValError("--target reads the logs whole for its estimates; run it without "
                           "--memory-budget")
    options = _semantics(params)
    result = receval.monitor(
        # 'P@10,R@10' and 'P@10' 'R@10' are one metric set (a state must not tell them apart)
        str(inputs[0]), str(inputs[1]), names, window=window, step=step,
        attribution=attribution, lateness=lateness, min_feedback=min_feedback, state=state,
        variant_col=variant_col, baseline=baseline,
        origin=origin, user_col=user_col, item_col=item_col, score_col=score_col,
        served_col=served_col, value_col=value_col, time_col=time_col, n_resamples=resamples,
        confidence=confidence, seed=seed, time_unit=time_unit, late_out=late_out,
        lock_timeout=lock_timeout, unit=unit, planned_users=planned_users,
        covariate=covariate, memory_budget=budget, **options, **fairness)
    if reference is not None:
        result.drift(reference)  # a bad reference fails before anything is written
    if plot_path:
        result.plot(path=plot_path, reference=reference)
    if report:
        result.to_html(report, reference=reference, offpolicy=_offpolicy(
            result, policies, str(inputs[0]), str(inputs[1]), propensity_col=propensity_col,
            user_col=user_col, item_col=item_col, score_col=score_col, served_col=served_col,
            value_col=value_col, time_col=time_col, time_unit=time_unit))
    if fmt == "json":
        click.echo(result.to_json())
    elif fmt == "csv":
        click.echo(result.to_csv().rstrip("\n"))
    else:
        _print_table(result, reference)
    for label, path in (("state", state), ("late feedback", late_out), ("report", report),
                        ("plot", plot_path)):
        if path:
            err_console.print(Text(f"wrote {label}: {safe_text(str(path))}"), style="dim",
                              highlight=False, soft_wrap=True)


def _offpolicy(result: Any, policies: dict[str, Any], impressions: str, feedback: str,
               **columns: Any) -> Any:
    """The off-policy estimates per window of the ``--target`` policies, or None."""
    if not policies:
        return None
    from receval.offpolicy.monitor_windows import monitor_estimates

    return monitor_estimates(result, impressions, feedback, policies, **columns)


def _fairness_kwargs(params: dict[str, Any], names: list[str],
                     beyond: list[str]) -> dict[str, Any]:
    """``item_features=``, ``beyond=`` and ``train=`` of :func:`receval.monitor` for the
    fairness and calibration metrics (:mod:`receval.monitor.fairness`), refused in one line
    where a window cannot define them."""
    from receval.monitor.fairness import fairness_specs

    if not beyond:
        if params.get("train"):
            raise ReceValError("--train is read by calibration@k: ask it (-m calibration@10)")
        return _beyond_kwargs(params, beyond)
    given = {"item_features": params.get("item_features"), "train": params.get("train"),
             "profile": params.get("profile")}
    kwargs: dict[str, Any] = {}
    try:
        fairness_specs(names, given, switches=False)  # before any file is read
        kwargs = _beyond_kwargs(params, beyond)
        fairness_specs(names, {**given, **kwargs})
    except ReceValError as err:  # the flags, not the Python keywords
        text = str(err).replace("item_groups= (item -> group) or item_features= (--item-features "
                                "FILE)", "--item-features FILE").replace(
            "train= (--train FILE: user, item rows)", "--train FILE").replace(
            "protected_group= in beyond=", "--beyond protected_group=NAME")
        raise ReceValError(text) from None
    if params.get("train"):
        from receval.training import read_train

        kwargs["train"] = read_train(params["train"], user_col=params["user_col"],
                                     item_col=params["item_col"],
                                     delimiter=params.get("delimiter"))
    return kwargs


def _print_table(result: Any, reference: str | None) -> None:
    from receval.monitor.cells import NOTE, interval_cell, value_cell
    from receval.numbers import count

    drift = result.drift(reference)
    variant_col = result.options.get("variant_col")
    from receval.report.fit import fit_tables

    headers = ["window", *([str(variant_col)] if variant_col else [])]
    for name in result.metrics:
        headers += [name, "interval"]
    headers += ["evaluated (n)", "waiting", "unjudged", "drift"]
    rows = []
    for _, w in result.windows.iterrows():
        start = w["window_start"]
        mine = drift[drift["window_start"] == start]
        if variant_col:
            mine = mine[mine[variant_col] == w[variant_col]]
        flagged = ", ".join(mine.loc[mine["flag"], "metric"]) or ""
        better = ", ".join(mine.loc[mine["change"] == "better", "metric"])
        cells = [str(start.date()) if start.hour == 0 else str(start)]
        if variant_col:
            cells.append(str(w[variant_col]))
        for name in result.metrics:
            cells.append(value_cell(w[name]))
            cells.append(interval_cell(w[f"{name}_ci_low"], w[f"{name}_ci_high"],
                                       int(w["users_evaluated"])))
        cells += [*(count(w[c]) for c in ("users_evaluated", "users_waiting", "users_unjudged")),
                  "; ".join([*([f"worse: {flagged}"] if flagged else []),
                             *([f"better: {better}"] if better else [])])]
        rows.append([safe_text(c) for c in cells])
    out = _stdout()
    keys = 2 if variant_col else 1  # what names a row, repeated in each part
    out.print(fit_tables(headers, rows, out.width, keys=keys, right=headers[keys:-1],
                         title="monitor"))
    c = result.counts
    out.print(Text(f"watermark {c['watermark']}; late rows ignored: "
                   f"{c['late_impressions_ignored']} impressions, "
                   f"{c['late_feedback_ignored']} feedback; counts are served lists"),
              style="dim", highlight=False)
    shown = [cell for _, w in result.windows.iterrows() for name in result.metrics
             for cell in (value_cell(w[name]),
                          interval_cell(w[f"{name}_ci_low"], w[f"{name}_ci_high"],
                                        int(w["users_evaluated"])))]
    if any(cell in ("n/a", "n = 1") for cell in shown):
        out.print(Text(NOTE), style="dim", highlight=False)
    if variant_col:
        _print_decisions(result, out)


def _print_decisions(result: Any, out: Any) -> None:
    """The cumulative decisions (variant, metric): difference, confidence sequence,
    always-valid p-value, users, looks and the stop/continue reading; the method below."""
    from rich.table import Table

    from receval.monitor.ab import describe, reading
    from receval.numbers import count

    d = result.decisions
    opts = result.options
    if not len(d):
        out.print(Text("decisions: no closed window yet (a look is the end of a closed "
                       "window)"), style="dim", highlight=False)
        return
    table = Table(title="decisions (every closed window so far)")
    for name in ("variant", "metric", "delta", "confidence sequence", "p (always valid)",
                 "users", "looks", "reading"):
        table.add_column(name, justify="left" if name in ("variant", "metric") else "right")
    for _, r in d.iterrows():
        cs = f"[{r['cs_low']:+.4f}, {r['cs_high']:+.4f}]" if r["cs_low"] == r["cs_low"] \
            else "n/a"
        p = f"{r['p_always_valid']:.4g}" if r["p_always_valid"] == r["p_always_valid"] \
            else "n/a"
        table.add_row(*(Text(safe_text(c)) for c in (
            f"{r['variant']} vs {r['baseline']}", str(r["metric"]), f"{r['delta']:+.4f}", cs, p,
            f"{count(r['users'])} / {count(r['baseline_users'])}", str(r["looks"]),
            reading(r))))
    out.print(table)
    line = describe(opts.get("planned_users", 10_000), opts.get("confidence", 0.95))
    if "variance_reduction" in d and d["variance_reduction"].notna().any():
        line += "; CUPED-adjusted (variance reduction " + ", ".join(
            f"{r['metric']}: {r['variance_reduction']:.0%}" for _, r in d.iterrows()) + ")"
    out.print(Text(line), style="dim", highlight=False, soft_wrap=True)
