"""The ``receval`` command line: thin, parse -> read -> evaluate -> render, exit codes 0 / 2.

Bad input exits 2 with a one-line message and no traceback (``--debug`` shows it). Every
option of :func:`receval.evaluate` is a flag, made from :class:`receval.options.Options`, so a
new option of the core is a new flag here without an edit.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from receval._version import __version__
from receval.demo import CUTOFFS, FAMILIES
from receval.exceptions import ReceValError, UndefinedMetricWarning
from receval.result import Result

console = Console()
err_console = Console(stderr=True)

DEFAULT_METRICS = ("P@10", "R@10", "MAP@10", "nDCG@10", "MRR")
OUTPUT_FORMATS = ("table", "json", "csv", "markdown", "latex")
PLOT_KINDS = ("at-k", "pr-curve", "f-beta", "distribution", "comparison")
INPUT_FORMATS = ("auto", "csv", "tsv", "parquet", "jsonl", "trec")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="receval")
def main() -> None:
    """receval: exact, explicit and fast evaluation of recommender systems."""


@main.command()
@click.option("--seed", default=7, show_default=True, help="Seed of the synthetic data.")
def demo(seed: int) -> None:
    """Evaluate a baseline on seeded synthetic ratings and print the metric table."""
    from receval.demo import run_demo

    started = time.perf_counter()
    with (
        console.status("generating ratings, training the baseline, evaluating..."),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        results = run_demo(seed=seed)
    elapsed = time.perf_counter() - started
    console.print(
        "[bold]receval demo[/bold]: 2,000 synthetic users, 1,000 items (power-law popularity, "
        "1-5 stars), 80/20 split per user, baseline = mean + user bias + item bias.\n"
        "Relevant = true rating >= 3.5. [italic]Rating semantics[/italic]: the test pairs ranked "
        "by predicted rating, recommended only if predicted >= 3.5 (precision over the number "
        "recommended). [italic]Top-k semantics[/italic]: the same lists, every item of the top k "
        "recommended (precision over k). [italic]Full ranking[/italic]: the 15 most popular "
        "unseen items of the whole catalogue (the popularity baseline)."
    )
    console.print(_demo_table(results))
    rating = results["rating semantics"]
    console.print(
        f"RMSE {rating.summary['RMSE']:.4f}   MAE {rating.summary['MAE']:.4f}   "
        f"users evaluated {rating.counts['users']['evaluated']}, "
        f"without a relevant item {rating.counts['users']['without_relevant']} "
        f"(undefined values count as {rating.options['empty']!r}); {elapsed:.1f} s"
    )
    console.print(
        "\nNext: [bold]receval evaluate --truth test.csv --predictions run.csv -m P@10 -m "
        "nDCG@10[/bold], or in Python [bold]receval.evaluate(truth_df, predictions_df, "
        "['P@10', 'nDCG@10'])[/bold]. Every option (ties, thresholds, empty-user policy, "
        "averaging) is listed in the README."
    )


def _demo_table(results: dict[str, Result]) -> Table:
    table = Table(title="baseline on synthetic ratings")
    table.add_column("metric", style="bold")
    for name in results:
        table.add_column(name, justify="right")
    for family in FAMILIES:
        for k in CUTOFFS:
            name = f"{family}@{k}"
            table.add_row(name, *(f"{r.summary[name]:.4f}" for r in results.values()),
                          end_section=k == CUTOFFS[-1])
    return table


# --- shared options --------------------------------------------------------------------------


class _Threshold(click.ParamType):
    """A number, or ``user_mean``."""

    name = "NUMBER|user_mean"

    def convert(self, value: Any, param: Any, ctx: Any) -> float | str:
        if isinstance(value, float | int) or value == "user_mean":
            return value
        try:
            return float(value)
        except ValueError:
            self.fail(f"{value!r} is neither a number nor 'user_mean'", param, ctx)


def _option_help() -> dict[str, str]:
    """Each option's paragraph of the :class:`~receval.options.Options` docstring."""
    from receval.options import Options

    doc = Options.__doc__ or ""
    block = doc.split("Attributes:", 1)[-1].split("Example:", 1)[0]
    out: dict[str, str] = {}
    for match in re.finditer(r"^ {8}(\w+): (.*?)(?=^ {8}\w+: |\Z)", block, re.M | re.S):
        out[match.group(1)] = " ".join(match.group(2).replace("``", "").split())
    return out


def _semantics_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """One flag per field of :class:`~receval.options.Options`, plus ``--profile``."""
    from receval import options as core

    helps = _option_help()
    names = [field.name for field in dataclasses.fields(core.Options)]
    for name in reversed(names):
        if name == "relevance_threshold":
            kind: Any = _Threshold()
        elif name == "score_threshold":
            kind = float
        elif name in core.CHOICES:
            kind = click.Choice(core.CHOICES[name])
        else:
            kind = str
        f = click.option(f"--{name.replace('_', '-')}", name, type=kind, default=None,
                         help=helps.get(name, f"the {name} option of receval.evaluate"))(f)
    try:
        from receval.profiles import PROFILES

        profile_type: Any = click.Choice(sorted(PROFILES))
    except ImportError:
        profile_type = str
    return click.option(
        "--profile", type=profile_type, default=None,
        help="Reproduce a known tool's numbers: its bundle of options replaces the defaults; "
             "options given as flags override it.",
    )(f)


def _input_options(f: Callable[..., Any], *, required: bool = True) -> Callable[..., Any]:
    """The input files, their formats and column names."""
    options = [
        click.option("--truth", "-t", required=required, metavar="FILE",
                     help="Truth: CSV, TSV, Parquet, JSON Lines or TREC qrels (gzip welcome)."),
        click.option("--predictions", "-p", required=required, multiple=True, metavar="FILE",
                     help="Predictions: CSV, TSV, Parquet, JSON Lines or a TREC run. Repeat to "
                          "compare models side by side (model name = file stem)."),
        click.option("--truth-format", type=click.Choice(INPUT_FORMATS), default="auto",
                     show_default=True, help="Format of the truth file (auto: by extension, "
                                              "else by content)."),
        click.option("--predictions-format", type=click.Choice(INPUT_FORMATS), default="auto",
                     show_default=True, help="Format of the predictions files."),
        click.option("--no-header", is_flag=True,
                     help="CSV/TSV files have no header: columns are user, item, rating|score."),
        click.option("--delimiter", default=None,
                     help="CSV delimiter (default: sniffed; 'tab' or '\\t' for a tab)."),
        click.option("--user-col", default="user", show_default=True),
        click.option("--item-col", default="item", show_default=True),
        click.option("--rating-col", default="rating", show_default=True),
        click.option("--score-col", default="score", show_default=True,
                     help="Score column of the predictions (a 'rank' column, 1 = best, works "
                          "when there is no score)."),
        click.option("--engine", default=None, help="Evaluation engine (default: numba)."),
        click.option("--debug", is_flag=True, help="Show the traceback of an error."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _metrics_option(default: tuple[str, ...] = DEFAULT_METRICS) -> Callable[..., Any]:
    return click.option(
        "-m", "--metric", "metrics", multiple=True, default=default, show_default=True,
        help="A metric, e.g. P@10, nDCG@5, MAP@10, MRR, F1@10, Rprec, RMSE; 'P@5,10,20' gives "
             "three cutoffs. Repeat for more.",
    )


def _errors_exit_2(command: Callable[..., Any]) -> Callable[..., Any]:
    """Bad input: one line on stderr and exit 2; anything else: exit 1. ``--debug``: traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **params: Any) -> Any:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("default")
                out = command(*args, **params)
            for w in caught:
                if not issubclass(w.category, UndefinedMetricWarning):
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)
                    continue
                text = " ".join(str(w.message).split())
                err_console.print(Text("warning: ", style="yellow") + Text(text), soft_wrap=True)
            return out
        except click.exceptions.Exit:
            raise
        except Exception as err:
            if params.get("debug"):
                raise
            bad_input = isinstance(err, ReceValError | OSError | UnicodeDecodeError)
            text = " ".join(str(err).split()) or type(err).__name__
            if not bad_input:
                text = f"{type(err).__name__}: {text} (rerun with --debug for the traceback)"
            click.echo(f"error: {text}", err=True)
            sys.exit(2 if bad_input else 1)

    return wrapper


# --- evaluate --------------------------------------------------------------------------------


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
@_errors_exit_2
def evaluate(metrics: tuple[str, ...], fmt: str, per_user: str | None, report: str | None,
             **params: Any) -> None:
    """Evaluate predictions against the truth and print the metrics.

    \b
    receval evaluate --truth test.csv --predictions run.csv -m P@10 -m nDCG@10
    receval evaluate -t test.qrels -p bm25.run -p dense.run -m P@5,10 --profile trec_eval
    receval evaluate -t test.csv -p run.csv --format json --report report.html
    """
    from receval.measures.spec import parse_metrics
    from receval.report import tables
    from receval.report.models import curve_ks, restrict, with_curves

    asked = [s.name for s in parse_metrics(list(metrics))]
    _check_output(per_user, (".csv", ".tsv", ".parquet", ".pq"), "--per-user")
    wanted = with_curves(asked, curve_ks(asked)) if report else asked
    runs = _evaluate_files(wanted, params, top_items=bool(report))
    models = {name: restrict(r, asked) for name, r in runs.results.items()}
    _warn_undefined(models)
    if fmt == "table":
        console.print(tables.rich_table(models))
        console.print(tables.options_line(next(iter(models.values()))), style="dim",
                      highlight=False)
        for name, result in models.items():
            prefix = f"{name}: " if len(models) > 1 else ""
            console.print(f"{prefix}{tables.counts_line(result)}", style="dim", highlight=False)
    else:
        click.echo(tables.render(models, fmt).rstrip("\n"))
    if per_user:
        _write_per_user(models, Path(per_user))
    if report:
        from receval.report.html import write_report

        write_report(report, runs.results, metrics=asked, inputs=runs.inputs,
                     top_items=runs.top_items)
        err_console.print(f"report written to {report}", highlight=False, soft_wrap=True)
    runs.print_notes()


# --- plot ------------------------------------------------------------------------------------


@main.command()
@_input_options
@_metrics_option(())
@_semantics_options
@click.option("--kind", type=click.Choice(PLOT_KINDS), default="pr-curve",
              show_default=True, help="at-k: P@k and R@k against k; pr-curve: the curve traced "
              "by k; f-beta: iso-F curves; distribution: per-user histogram of a metric; "
              "comparison: bars with bootstrap CIs.")
@click.option("--out", "-o", required=True, metavar="FILE", help="Output image, .png or .svg.")
@click.option("--max-k", default=20, show_default=True, type=click.IntRange(1, 1000),
              help="Largest cutoff of the curves.")
@click.option("--seed", default=0, show_default=True, help="Seed of the bootstrap.")
@_errors_exit_2
def plot(metrics: tuple[str, ...], kind: str, out: str, max_k: int, seed: int,
         **params: Any) -> None:
    """Plot one or several models: curves over k, distributions, comparisons.

    \b
    receval plot -t test.csv -p a.csv -p b.csv --kind pr-curve -o pr.png
    receval plot -t test.csv -p a.csv --kind distribution -m nDCG@10 -o ndcg.svg
    """
    from receval.measures.spec import parse_metrics
    from receval.report import plots
    from receval.report.models import with_curves

    _check_output(out, (".png", ".svg"), "--out")
    curves = kind in ("at-k", "pr-curve", "f-beta")
    asked = [s.name for s in parse_metrics(list(metrics or DEFAULT_METRICS))] if not curves \
        else []
    wanted = with_curves(asked, list(range(1, max_k + 1))) if curves else asked
    runs = _evaluate_files(wanted, params)
    extra: dict[str, Any] = {}
    if kind == "distribution":
        extra["metric"] = asked[0]
    elif kind == "comparison":
        extra.update(metrics=asked, seed=seed)
    plots.plot(runs.results, kind, out, **extra)
    err_console.print(f"plot written to {out}", highlight=False, soft_wrap=True)
    runs.print_notes()


# --- helpers ---------------------------------------------------------------------------------


# --- explain ---------------------------------------------------------------------------------


@main.command()
@click.argument("profile_a", metavar="PROFILE_A")
@click.argument("profile_b", metavar="[PROFILE_B]", required=False)
@functools.partial(_input_options, required=False)
@_metrics_option(())
@click.option("--format", "-f", "fmt", type=click.Choice(("table", "json")), default="table",
              show_default=True, help="How the comparison is printed on stdout.")
@_errors_exit_2
def explain(profile_a: str, profile_b: str | None, metrics: tuple[str, ...], fmt: str,
            **params: Any) -> None:
    """Which options differ between two profiles, and on your data how much each one moves
    each metric (PROFILE_B defaults to receval's defaults; 'defaults' names them too).

    \b
    receval explain trec_eval ranx
    receval explain trec_eval kaggle -t test.csv -p run.csv -m AP@10 -m nDCG@10
    """
    from receval.profiles import PROFILES
    from receval.profiles import explain as explain_profiles

    names = [profile_a, profile_b or "defaults"]
    for name in names:
        if name not in PROFILES and name != "defaults":
            raise ReceValError(f"unknown profile {name!r}; known: defaults, "
                               f"{', '.join(sorted(PROFILES))}")
    a, b = (None if n == "defaults" else n for n in names)
    if bool(params["truth"]) != bool(params["predictions"]):
        raise ReceValError("give both --truth and --predictions (or neither, for the options)")
    if len(params["predictions"]) > 1:
        raise ReceValError("explain takes one --predictions file")
    truth = preds = None
    if params["truth"]:
        # each side's relevance threshold is its profile's: the TREC default is not applied
        truth, _ = _read_truth(params, {})
        _, _, truth, preds = next(_read_predictions(params, truth))
    e = explain_profiles(a, b, truth, preds, list(metrics) if metrics else None)
    if fmt == "json":
        click.echo(json.dumps(_explanation_dict(e), indent=2, allow_nan=False))
    elif not e.differences:
        console.print(f"{e.a} and {e.b} use the same options", highlight=False)
    else:
        console.print(e)
    for label, message in e.errors.items():
        err_console.print(f"warning: {label}: {message}", style="yellow", highlight=False,
                          soft_wrap=True)


def _explanation_dict(e: Any) -> dict[str, Any]:
    """:class:`~receval.profiles.Explanation` as plain JSON (undefined numbers are null)."""

    def number(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {
        "a": e.a,
        "b": e.b,
        "differences": [{"option": d.option, "a": d.a, "b": d.b,
                         "applies_to": d.scope} for d in e.differences],
        "metrics": e.metrics,
        "values": {e.a: {m: number(v) for m, v in e.values_a.items()},
                   e.b: {m: number(v) for m, v in e.values_b.items()}},
        "effects": {o: {m: number(v) for m, v in by.items()} for o, by in e.effects.items()},
        "interaction": {m: number(v) for m, v in e.interaction.items()} if e.metrics else {},
        "errors": e.errors,
    }


@dataclasses.dataclass
class _Runs:
    results: dict[str, Result]
    inputs: dict[str, str]
    top_items: dict[str, list[tuple[Any, int]]]
    notes: list[str]

    def print_notes(self) -> None:
        """Notes go to stderr once everything succeeded (an error stays one line)."""
        for note in self.notes:
            err_console.print(f"note: {note}", style="dim", highlight=False, soft_wrap=True)


def _evaluate_files(metrics: list[str], params: dict[str, Any], *,
                    top_items: bool = False) -> _Runs:
    """Read the truth once, then read and evaluate each predictions file in turn."""
    import receval

    kwargs = _semantics(params)
    truth, runs = _read_truth(params, kwargs)
    for name, path, aligned_truth, preds in _read_predictions(params, truth):
        with warnings.catch_warnings():
            # said once per model by _warn_undefined, for the metrics asked (not curve extras)
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            runs.results[name] = receval.evaluate(aligned_truth, preds, metrics, **kwargs)
        runs.inputs[f"predictions: {name}"] = str(path)
        if top_items:
            runs.top_items[name] = _top_items(preds)
    return runs


def _read_truth(params: dict[str, Any], kwargs: dict[str, Any]) -> tuple[Any, _Runs]:
    """The truth table, and an empty :class:`_Runs` holding its path and the reading notes.

    TREC qrels list judged documents, relevant or not: without a threshold or a profile,
    ``kwargs`` gets ``relevance_threshold=1`` (rel >= 1 is relevant, as in trec_eval).
    """
    from receval import io
    from receval.io.progress import file_progress
    from receval.io.source import check_file

    truth_path = check_file(params["truth"], "truth")
    truth_format = io.detect_format(truth_path, "truth", params["truth_format"])
    notes: list[str] = []
    if truth_format == "trec" and "relevance_threshold" not in kwargs and "profile" not in kwargs:
        kwargs["relevance_threshold"] = 1
        notes.append("TREC qrels: rel >= 1 is relevant (as trec_eval); "
                     "--relevance-threshold changes it")
    with file_progress(truth_path, "truth", err_console) as progress:
        truth = io.read_truth(truth_path, format=truth_format, user_col=params["user_col"],
                              item_col=params["item_col"], rating_col=params["rating_col"],
                              progress=progress, **_reading(params))
    return truth, _Runs({}, {"truth": str(truth_path)}, {}, notes)


def _read_predictions(params: dict[str, Any],
                      truth: Any) -> Iterator[tuple[str, Path, Any, Any]]:
    """Each predictions file in turn, as ``(model name, path, truth, predictions)``, with the
    truth's ids and the file's ids of one type (strings if either side has strings)."""
    from receval import io
    from receval.io.progress import file_progress
    from receval.io.source import check_file

    pred_paths = [check_file(p, "predictions") for p in params["predictions"]]
    for name, path in zip(io.model_names(pred_paths), pred_paths, strict=True):
        with file_progress(path, name, err_console) as progress:
            preds = io.read_predictions(path, format=params["predictions_format"],
                                        user_col=params["user_col"],
                                        item_col=params["item_col"],
                                        score_col=params["score_col"], progress=progress,
                                        **_reading(params))
        aligned_truth, preds = io.align_id_types([truth, preds])
        yield name, path, aligned_truth, preds


def _reading(params: dict[str, Any]) -> dict[str, Any]:
    return {"header": not params["no_header"], "delimiter": params["delimiter"]}


def _warn_undefined(models: dict[str, Result]) -> None:
    """One line per model whose asked metrics were undefined for some users and filled in."""
    from receval.measures.spec import RATING, parse_metric

    for name, result in models.items():
        undefined = result.counts["undefined"]
        touched = {m: n for m, n in undefined["users"].items()
                   if n and parse_metric(m).family not in RATING}
        if not touched or undefined["policy"] == "skip":
            continue
        worst = max(touched, key=lambda m: touched[m])
        prefix = f"{name}: " if len(models) > 1 else ""
        text = (f"{prefix}{len(touched)} metric(s) undefined for some users (up to "
                f"{touched[worst]} users, for {worst}) were set by "
                f"empty={undefined['policy']!r}; counts.undefined has the count per metric")
        err_console.print(Text("warning: ", style="yellow") + Text(text), soft_wrap=True)


def _semantics(params: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of :func:`receval.evaluate` the user gave (the rest: defaults)."""
    import inspect

    import receval
    from receval.options import Options

    names = [f.name for f in dataclasses.fields(Options)]
    kwargs = {n: params[n] for n in names if params.get(n) is not None}
    if params.get("engine"):
        kwargs["engine"] = params["engine"]
    if params.get("profile"):
        if "profile" not in inspect.signature(receval.evaluate).parameters:
            raise ReceValError("this version of receval has no profiles")
        kwargs["profile"] = params["profile"]
    return kwargs


def _top_items(preds: Any, n: int = 10) -> list[tuple[Any, int]]:
    counts = preds.group_by("item").aggregate([("user", "count")])
    counts = counts.sort_by([("user_count", "descending"), ("item", "ascending")]).slice(0, n)
    return list(zip(counts.column("item").to_pylist(), counts.column("user_count").to_pylist(),
                    strict=True))


def _check_output(path: str | None, suffixes: tuple[str, ...], flag: str) -> None:
    if path and Path(path).suffix.lower() not in suffixes:
        raise ReceValError(f"{flag} must end in {', '.join(suffixes)}; got {path!r}")


def _write_per_user(models: dict[str, Result], path: Path) -> None:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    frames = [r.per_user.assign(model=name) for name, r in models.items()]
    frame = frames[0].drop(columns="model") if len(frames) == 1 else pd.concat(frames)
    if len(frames) > 1:
        frame = frame[["model", *[c for c in frame.columns if c != "model"]]]
    table = pa.Table.from_pandas(frame, preserve_index=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() in (".parquet", ".pq"):
        pq.write_table(table, path)
    else:
        delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
        pacsv.write_csv(table, path, pacsv.WriteOptions(delimiter=delimiter))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
