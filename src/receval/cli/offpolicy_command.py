"""The ``receval offpolicy`` command: what each target policy would earn online, estimated
from the served log (:func:`receval.offpolicy.estimate`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from receval import numbers
from receval.cli import served_log_flags as flags
from receval.cli.common import _errors_exit_2, _stdout, main
from receval.cli.finite import FiniteRange
from receval.cli.options_table import option, shared
from receval.exceptions import ReceValError
from receval.io.terminal import safe_text
from receval.offpolicy.estimate import REPEATS

SHOWN = ("value", "ci_low", "ci_high", "ess", "max_weight", "max_weight_share",
         "support_missing")
#: how each shown column is written (receval.numbers); the rest are values
_KIND: dict[str, numbers.Kind] = {"ess": "size", "max_weight_share": "share",
                                  "support_missing": "count"}


#: the id columns of a log, a target and a reward model: read as text, integers only when
#: every id is canonical (``007`` and ``7`` stay two items, as in ``offpolicy.estimate``)
ID_COLUMNS = ("request", "item", "user")


def _read(path: str, flag: str) -> Any:
    """A table (CSV, TSV, Parquet or JSON Lines) as a pandas frame, through
    :func:`receval.io.frames.read_frame`; one-line errors naming the file."""
    from receval.io.frames import read_frame

    return read_frame(path, flag.lstrip("-"), ids=ID_COLUMNS).to_pandas()


def _streamed_or_read(path: str, flag: str, streamed: bool) -> Any:
    """With --memory-budget, a Parquet file's path as it is (read in partitions); else the
    table read whole."""
    if streamed:
        from receval.io.detect import detect_format
        from receval.io.source import check_file

        if detect_format(check_file(path, flag.lstrip("-")), flag.lstrip("-"), "auto") \
                == "parquet":
            return path
    return _read(path, flag)


def _targets(specs: tuple[str, ...], streamed: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ReceValError(f"--target takes NAME=FILE; got {spec!r}")
        if name in out:
            raise ReceValError(f"--target {name!r} given twice")
        out[name] = _streamed_or_read(path, f"--target {name}", streamed)
    return out


@main.command()
@click.option("--log", "log_path", default=None, metavar="FILE",
              help="The served log, one row per shown item: request, item, position (1 = "
                   "top), reward, propensity [, propensity_prefix, propensity_slate].")
@flags.impressions(False, "Instead of --log: monitor's impressions (user, item, rank or score, "
                          "served_at) with the logger's propensity, joined with --feedback by "
                          "monitor's attribution rule.")
@flags.feedback(False, "With --impressions: user, item, value, at.")
@flags.propensity_col("With --impressions: the logger's probability of each shown item.")
@flags.attribution()
@flags.window()
@flags.origin()
@flags.variant_col()
@flags.time_unit()
@click.option("--by", "by", multiple=True, metavar="COLUMN",
              help="Estimate per group of requests: window (monitor's calendar windows of "
                   "served_at), variant, or another column of the log. Repeat for several.")
@click.option("--html", "html_path", default=None, metavar="FILE",
              help="Also write the estimates with their intervals and diagnostics as an HTML "
                   "page.")
@flags.targets(True, "A target policy: request (or user and served_at), item, position, "
                     "probability; or request, item, score with --rule. Repeat for several.")
@click.option("--estimators", "-e", default=None,
              help="Comma-separated: ips, snips, dm, dr, sndr, switch_dr, dros, iips, sips, rips, "
                   "cascade_dr, sn_sips, sn_rips, pi, pbm. [default: ips,snips, and dr with "
                   "--reward-model]")
@click.option("--reward-model", default=None, metavar="FILE",
              help="request, item [, position], prediction (dm, dr, sndr, switch_dr, dros).")
@click.option("--rule", type=click.Choice(("topk", "epsilon_greedy", "softmax",
                                           "plackett_luce")), default="topk", show_default=True,
              help="How a score table becomes a distribution.")
@click.option("--epsilon", type=click.FloatRange(0, 1), default=None,
              help="epsilon of --rule epsilon_greedy.")
@click.option("--temperature", type=FiniteRange(0, None, min_open=True), default=None,
              help="temperature of --rule softmax / plackett_luce.")
@click.option("--clip", type=FiniteRange(0, None, min_open=True), default=None,
              help="Cap every importance weight at this value.")
@click.option("--switch-threshold", type=FiniteRange(0, None, min_open=True), default=10.0,
              show_default=True, help="switch_dr: rows with a larger weight use the model.")
@click.option("--shrinkage", type=FiniteRange(0, None, min_open=True), default=None,
              help="dros: lambda of the shrunk weights lambda w / (w^2 + lambda).")
@click.option("--repeats", type=click.Choice(REPEATS), default=REPEATS[0], show_default=True,
              help="refuse: a served list shows each item once (a repeated item is an error); "
                   "allow: slates whose positions are drawn independently (Open Bandit "
                   "Pipeline's indep logs) may show an item at several positions.")
@option("resamples", what="Bootstrap resamples over requests", zero="the normal interval only")
@option("memory_budget", help="Read a Parquet --log (and Parquet targets and reward model) in "
                              "partitions of requests within SIZE of memory (2GiB, 500MB), "
                              "with the same numbers (docs/streaming.md).")
@shared("confidence", "seed", "format")
@_errors_exit_2
def offpolicy(log_path: str | None, impressions: str | None, feedback: str | None,
              propensity_col: str, attribution: str, window: str, origin: str | None,
              variant_col: str | None, time_unit: str | None, by: tuple[str, ...],
              html_path: str | None, targets: tuple[str, ...], estimators: str | None,
              reward_model: str | None, rule: str, epsilon: float | None,
              temperature: float | None, clip: float | None, switch_threshold: float,
              shrinkage: float | None, repeats: str,
              resamples: int, memory_budget: str | None, confidence: float, seed: int,
              silence: tuple[str, ...], fmt: str) -> None:
    """Estimate what each target policy would earn online from the served log (IPS, SNIPS,
    DR, ...), with bootstrap intervals over requests and the importance weights' diagnostics."""
    from receval.offpolicy import estimate, log_from_monitor

    if (log_path is None) == (impressions is None) or (impressions is None) != (feedback is None):
        raise ReceValError("give either --log, or --impressions with --feedback")
    if html_path is not None:
        from receval.io.output import check_outputs
        from receval.io.source import check_file

        sources = [check_file(p, "input") for p in (log_path, impressions, feedback) if p]
        check_outputs({"--html": (html_path, (".html", ".htm"))}, sources)
    if impressions is not None and feedback is not None:
        from receval.io.source import check_file

        log = log_from_monitor(str(check_file(impressions, "impressions")),
                               str(check_file(feedback, "feedback")),
                               propensity_col=propensity_col, attribution=attribution,
                               window=window, origin=origin, variant_col=variant_col,
                               time_unit=time_unit)
        source = Path(impressions).name
    elif memory_budget is not None:  # read in partitions (receval.offpolicy.streamed)
        log = str(log_path)
        source = Path(str(log_path)).name
    else:
        log = _read(str(log_path), "--log")
        source = Path(str(log_path)).name
    if memory_budget is not None and impressions is not None:
        raise ReceValError("--memory-budget streams a Parquet --log (not --impressions)")
    tables = _targets(targets, streamed=memory_budget is not None)
    model = (_streamed_or_read(reward_model, "--reward-model", memory_budget is not None)
             if reward_model else None)
    if estimators is None:
        estimators = "ips,snips,dr" if model is not None else "ips,snips"
    names = [e.strip() for e in estimators.split(",") if e.strip()]
    options: dict[str, Any] = {"rule": rule, "switch_threshold": switch_threshold,
                               "alpha": round(1 - confidence, 12), "silence": list(silence),
                               "repeats": repeats}
    if "window" in by and log_path is not None:
        options.update(window=window, origin=origin, time_unit=time_unit)
    for key, value in (("epsilon", epsilon), ("temperature", temperature), ("clip", clip),
                       ("shrinkage", shrinkage)):
        if value is not None:
            options[key] = value
    streamed: dict[str, Any] = ({} if memory_budget is None else
                                {"memory_budget": memory_budget, "narrow_ids": True})
    result = estimate(log, tables, estimators=names, reward_model=model, seed=seed,
                      n_resamples=resamples, by=list(by) or None, **streamed, **options)
    if html_path is not None:
        from receval.io.output import atomic_output
        from receval.report.offpolicy import page

        with atomic_output(html_path) as path:
            Path(path).write_text(page(result.table, title=f"off-policy estimates: {source}",
                                       confidence=confidence), encoding="utf-8")
    if fmt == "json":
        click.echo(result.to_json())
    elif fmt == "csv":
        click.echo(result.to_csv().rstrip("\n"))
    else:
        _print(result.table, source, confidence, resamples, list(by))


def _print(frame: Any, log_name: str, confidence: float, resamples: int,
           by: list[str]) -> None:
    from receval.report.fit import fit_tables

    headers = [*by, "target", "estimator", *SHOWN]
    rows = []
    for row in frame.to_dict(orient="records"):
        cells = [safe_text(str(row[c])) for c in by]
        cells += [safe_text(str(row["target"])), str(row["estimator"])]
        cells += [numbers.number(row[c], _KIND.get(c, "value")) for c in SHOWN]
        rows.append(cells)
    out = _stdout()  # every column, no cell cut: parts that repeat the row's names
    out.print(fit_tables(headers, rows, out.width, keys=len(by) + 2, right=list(SHOWN),
                         title=f"off-policy estimates from {safe_text(log_name)} "
                               f"({int(frame['n_requests'].iloc[0])} requests)",
                         caption=f"ci: {confidence:.0%} bootstrap percentile over requests, "
                                 f"{resamples} resamples; ess: effective sample size of the "
                                 "weights"))
