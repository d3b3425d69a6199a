"""What the commands share: the group, the options made from :class:`receval.options.Options`,
reading and evaluating files, the error wrapper (exit 2, one line) and the consoles."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import sys
import typing
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from receval.cli.group import main  # noqa: F401  (the group each command registers on)
from receval.cli.options_table import every_command_effects, option, taken_by
from receval.exceptions import ReceValError, UndefinedMetricWarning
from receval.io.detect import FORMATS as INPUT_FORMATS  # one list: the reader's
from receval.io.terminal import one_line, safe_text
from receval.result import Result

console = Console()
err_console = Console(stderr=True)

DEFAULT_METRICS = ("P@10", "R@10", "MAP@10", "nDCG@10", "MRR")
REPORT_SUFFIXES = (".html", ".htm")
PLOT_SUFFIXES = (".png", ".svg")


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
    hints = typing.get_type_hints(core.Options)
    names = [field.name for field in dataclasses.fields(core.Options)]
    for name in reversed(names):
        # the flag's type from the field's annotation (an int field read as text was refused)
        kinds = set(typing.get_args(hints[name])) - {type(None)} or {hints[name]}
        if name == "relevance_threshold":
            kind: Any = _Threshold()
        elif name in core.CHOICES:
            kind = click.Choice(core.CHOICES[name])
        elif kinds == {float}:
            kind = float
        elif kinds == {int}:
            kind = int
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
    options: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
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
        option("delimiter"),
        option("user_col", note=" of both files (--truth-columns names it per file)"),
        option("item_col", note=" of both files"),
        option("rating_col", note=" of the truth"),
        option("score_col", note=" of the predictions (a 'rank' column, 1 = best, works when "
                                 "there is no score)"),
        click.option("--truth-columns", default=None, metavar="ROLE=NAME,...",
                     help="The truth's own column names, overriding the --*-col flags: "
                          "e.g. user=userId,item=movieId,rating=r."),
        click.option("--prediction-columns", default=None, metavar="ROLE=NAME,...",
                     help="The predictions' own column names: e.g. "
                          "user=userId,item=movieId,score=prediction (or rank=...)."),
        click.option("--engine", default=None, help="Evaluation engine (default: numba)."),
    ]
    for decorate in reversed(options):
        f = decorate(f)
    return f


def _train_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The training data: the leakage audit and the exclusion of training items."""
    options = [
        option("train", help="Training interactions (user, item, optional timestamp): audited "
                          "against truth and predictions (train audit)."),
        click.option("--train-columns", default=None, metavar="ROLE=NAME,...",
                     help="The training file's own column names: e.g. "
                          "user=userId,item=movieId,timestamp=ts."),
        click.option("--exclude-train", is_flag=True,
                     help="Remove each user's training items from their predictions before "
                          "ranking (the full-ranking protocol; needs --train)."),
    ]
    for decorate in reversed(options):
        f = decorate(f)
    return f


def _metrics_option(default: tuple[str, ...] = DEFAULT_METRICS, *,
                    beyond: bool = True) -> Callable[..., Any]:
    """``-m``; ``beyond=False``: a command that computes no beyond-accuracy metric does not
    offer them."""
    offer = (" beyond accuracy (docs/beyond-accuracy.md): coverage@10, novelty@10, "
             "diversity@10, gini@10, ... (most need --train)." if beyond else "")
    return click.option(
        "-m", "--metric", "metrics", multiple=True, default=default, show_default=True,
        help="A metric, e.g. P@10, nDCG@5, MAP@10, MRR, F1@10, Rprec, RMSE; 'P@5,10,20' gives "
             f"three cutoffs.{offer} Repeat for more.",
    )


# --- beyond-accuracy metrics (receval.beyond): names, --item-features, --beyond ---------------


def _beyond_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--item-features`` and ``--beyond`` (the training data is ``--train``)."""
    f = click.option(
        "--beyond", "beyond", default=None, metavar="NAME|KEY=VALUE,...",
        help="Switches of the beyond-accuracy metrics: a tool's bundle (recommenders, "
             "rectools, evidently) or switches, e.g. novelty_popularity=users,"
             "similarity=cooccurrence (docs/beyond-accuracy.md).")(f)
    f = click.option(
        "--item-features-columns", metavar="ROLE=NAME,...", default=None,
        help="The item features file's columns: item=movieId,features=genres (default: "
             "--item-col, and the one column besides it, or all numeric ones).")(f)
    return click.option(
        "--item-features", metavar="FILE", default=None,
        help="Item features for diversity@k / serendipity@k (CSV, TSV, Parquet or JSON "
             "Lines): an item column and one category column (several rows per item, or "
             "'a|b' lists) or numeric columns (an embedding per item); several candidate "
             "columns: name one with --item-features-columns. Its categories are the item "
             "groups of the fairness and calibration metrics (awrf@k, calibration@k: "
             "docs/fairness.md).")(f)


def _metric_names(metrics: tuple[str, ...] | list[str]) -> tuple[list[str], list[str]]:
    """``(every name in the order asked, the beyond-accuracy ones)``; an unknown name
    suggests the closest accuracy or beyond-accuracy names."""
    import difflib

    from receval.beyond.names import ALIASES as BEYOND
    from receval.beyond.names import split_metrics
    from receval.measures.spec import ALIASES, parse_metrics

    names: list[str] = []
    beyond: list[str] = []
    for raw in metrics:
        try:  # an accuracy list as parse_metrics reads it ('P.5,10' of trec_eval included)
            names += [s.name for s in parse_metrics([raw])]
            continue
        except ReceValError as err:
            failed = err
        accuracy, specs, order = split_metrics([raw])
        for name in accuracy:
            try:
                parse_metrics([name])
            except ReceValError as err:
                base, sep, k = name.strip().partition("@")
                close = difflib.get_close_matches(base.lower(), [*ALIASES, *BEYOND], n=3,
                                                  cutoff=0.6)
                if not any(c in BEYOND for c in close):
                    raise
                shown = ", ".join(repr(c + sep + k) for c in close)
                raise ReceValError(f"unknown metric {name!r}; did you mean {shown}?") from err
        if not specs:
            raise failed
        names += order
        beyond += [s.name for s in specs]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise ReceValError(f"metric {twice!r} is requested twice")
    return names, beyond


def _beyond_kwargs(params: dict[str, Any], beyond: list[str]) -> dict[str, Any]:
    """``item_features=`` and ``beyond=`` of :func:`receval.evaluate`, after checking that the
    metrics asked have their inputs (the messages name the flags)."""
    from receval.beyond.names import parse_beyond
    from receval.beyond.settings import BeyondOptions, resolve

    kwargs: dict[str, Any] = {}
    text = (params.get("beyond") or "").strip()
    if text and "=" in text:
        types = {f.name: type(f.default) for f in dataclasses.fields(BeyondOptions)}
        switches: dict[str, Any] = {}
        for pair in text.split(","):
            key, sep, value = (p.strip() for p in pair.partition("="))
            if not sep or not key:
                raise ReceValError(f"--beyond: {pair.strip()!r} is not KEY=VALUE")
            kind = types.get(key, str)
            try:
                switches[key] = kind(value) if kind in (int, float) else value
            except ValueError:
                raise ReceValError(f"--beyond: {key} takes a number; got {value!r}") from None
        kwargs["beyond"] = switches
    elif text:
        kwargs["beyond"] = text
    if params.get("item_features"):  # read once, by receval.io, as Python reads a path
        from receval.beyond.frames import read_features
        from receval.io.features import parse_features_flag, read_item_features

        columns = {"item": params.get("item_col") or "item",
                   **(parse_features_flag(params.get("item_features_columns")) or {})}
        table = read_item_features(params["item_features"], columns=columns,
                                   delimiter=params.get("delimiter"))
        kwargs["item_features"] = table.to_pandas()
        read_features(kwargs["item_features"])  # a bad file fails before any evaluation
    elif params.get("item_features_columns"):
        raise ReceValError("--item-features-columns names the columns of --item-features FILE; "
                           "pass it too")
    if beyond:
        from receval.beyond.attach import check_inputs  # scipy: only when a metric needs it

        specs = [s for s in (parse_beyond(n) for n in beyond) if s is not None]
        options = resolve(params.get("profile"), kwargs.get("beyond"))
        try:
            check_inputs(specs, options, has_train=bool(params.get("train")),
                         has_features="item_features" in kwargs)
        except ReceValError as err:  # the flags, not the Python keywords
            text = str(err).replace("train= (a frame of user, item rows)", "--train FILE")
            text = text.replace("item_groups= (item -> group) or ", "")
            text = text.replace("item_features=", "--item-features FILE").replace(
                "beyond={'similarity': 'cooccurrence'} with train=",
                "--beyond similarity=cooccurrence with --train").replace(
                "pass train=", "pass --train FILE")
            raise ReceValError(text) from None
    elif kwargs:
        raise ReceValError("--item-features and --beyond need a beyond-accuracy metric, e.g. "
                           "-m coverage@10 -m novelty@10")
    return kwargs


def _read_item_table(path: str, flag: str, item_col: str = "item",
                     columns: str | None = None) -> Any:
    """An item table (``--items``: CSV, TSV, Parquet or JSON Lines) as a pandas frame with its
    item column named ``item``, read by :mod:`receval.io` (``007`` stays ``007``); ``columns``
    (``--items-columns item=movieId,title=title``) names the file's own columns."""
    from receval.io.features import read_item_features

    named: dict[str, str] = {}
    for pair in (columns or "").split(",") if columns else []:
        role, sep, name = (p.strip() for p in pair.partition("="))
        if not sep or not role or not name:
            raise ReceValError(f"{flag}-columns takes ROLE=NAME pairs separated by commas "
                               f"(e.g. item=movieId,title=title); got {pair.strip()!r}")
        named[role] = name
    unknown = sorted(set(named) - {"item", "title"})
    if unknown:
        raise ReceValError(f"{flag}-columns takes the roles item and title; got {unknown[0]!r}")
    wanted = {"item": named.get("item", item_col)}
    if "title" in named:
        wanted["features"] = named["title"]
    fix = f"{flag}-columns item=NAME" if columns or item_col == "item" else "--item-col NAME"
    return read_item_features(path, columns=wanted, side=flag.lstrip("-"), fix=fix).to_pandas()


def _errors_exit_2(command: Callable[..., Any]) -> Callable[..., Any]:
    """Bad input: one line on stderr and exit 2; anything else (a receval bug): one line and
    exit 1. ``--debug``: the traceback. Every text from the data that is printed (errors,
    warnings) has its control characters escaped and no rich markup read."""

    @functools.wraps(command)
    def wrapper(*args: Any, **params: Any) -> Any:

        try:
            # --silence (and any flag of every command) holds for every warning of the
            # command, the CLI's own included
            with warnings.catch_warnings(record=True) as caught, \
                    every_command_effects(params):
                warnings.simplefilter("default")
                out = command(*args, **taken_by(command, params))
            # each distinct warning once (one per model or per call is noise)
            for text in dict.fromkeys(str(w.message) for w in caught):
                _print_warning(text)
            return out
        except (click.exceptions.Exit, click.exceptions.ClickException, click.exceptions.Abort):
            raise
        except Exception as err:
            if params.get("debug"):
                raise
            bad_input = _is_bad_input(err)
            text = one_line(str(err)) or type(err).__name__
            if not bad_input:  # a bug: the first line of its message is enough
                first = one_line(str(err).strip().split("\n", 1)[0])[:300]
                text = f"{type(err).__name__}: {first} (rerun with --debug for the traceback)"
            click.echo(f"error: {text}", err=True)
            code = 2 if bad_input else 1
        # outside the except block: the error, its traceback and the frames it holds (Arrow
        # readers among their locals) are released now, not during interpreter shutdown
        release_native()
        sys.exit(code)

    return wrapper


def release_native() -> None:
    """Free now what native code still holds (Arrow readers and tables kept alive by a
    traceback's frames, in reference cycles): released during interpreter shutdown instead, an
    Arrow object whose destructor waits for its thread pool releases the GIL and cannot take it
    back, and the process aborts ("terminate called without an active exception", rc -6).

    Example:
        >>> release_native()
    """
    import gc

    gc.collect()


def _is_bad_input(err: BaseException) -> bool:
    """Errors that mean bad input (exit 2): receval's own, file system errors, undecodable
    text, and what the CSV and Arrow parsers raise on malformed data."""
    import csv

    import pyarrow as pa

    return isinstance(err, ReceValError | OSError | UnicodeDecodeError | csv.Error
                      | pa.lib.ArrowInvalid)


def _print_warning(message: Warning | str) -> None:
    """One line ``warning: ...`` on stderr, escaped, never read as markup."""
    text = one_line(str(message))
    err_console.print(Text("warning: ", style="yellow") + Text(text), soft_wrap=True)



def _stdout() -> Console:
    """The console for stdout: a terminal's width, or, piped or redirected, no width at all (rich
    would cut a wide table at 80 columns and wrap the lines)."""
    return console if console.is_terminal else Console(width=100_000, highlight=False)


def _report_progress(stack: contextlib.ExitStack) -> Callable[[str], None] | None:
    """A spinner on stderr naming each step of the report, when stderr is a terminal."""
    if not err_console.is_terminal:
        return None
    status = stack.enter_context(err_console.status("report", spinner="dots"))
    return lambda step: status.update(Text(f"report: {step}"))



@dataclasses.dataclass
class _Runs:
    results: dict[str, Result]
    inputs: dict[str, str]
    top_items: dict[str, list[tuple[Any, int]]]
    notes: list[str]
    #: each model's predictions (with ``keep=True``: the report's beyond-accuracy section)
    #: and the training data read from --train (None without)
    predictions: dict[str, Any] = dataclasses.field(default_factory=dict)
    train: Any = None
    #: --strata as evaluate took it (a user -> group frame, or a built-in name), for --disparity
    strata: Any = None

    def print_notes(self) -> None:
        """Notes go to stderr once everything succeeded (an error stays one line)."""
        for note in self.notes:
            err_console.print(Text(f"note: {safe_text(note)}"), style="dim", highlight=False,
                              soft_wrap=True)


def _evaluate_files(metrics: list[str], params: dict[str, Any], *,
                    top_items: bool = False, asked: list[str] | None = None,
                    keep: bool = False) -> _Runs:
    """Read the truth once, then read and evaluate each predictions file in turn.

    ``asked``: the metrics the user asked for, when ``metrics`` adds more (the report's
    curves): ties across a cutoff are then said for the asked cutoffs only.
    """
    import receval
    from receval import checks
    from receval.beyond.names import parse_beyond
    from receval.measures.spec import parse_metrics

    kwargs = _semantics(params)
    beyond = [n for n in metrics if parse_beyond(n) is not None]
    kwargs.update(_beyond_kwargs(params, beyond))
    extra = asked is not None and set(asked) != set(metrics)
    if extra:
        kwargs["silence"] = sorted({*kwargs.get("silence", ()), "ties"})
    truth, runs = _read_truth(params, kwargs)
    if params.get("train") or params.get("exclude_train"):
        truth = _with_train(params, kwargs, truth, runs)
    if params.get("strata"):  # a user -> group file, or a built-in stratum of --train
        strata = params["strata"]
        if Path(strata).exists():
            import pyarrow as pa

            # the file's ids read as the truth's were: text, or integers when all are
            strata = _read_strata(strata, params,
                                  text_ids=not pa.types.is_integer(truth.schema.field("user").type))
        kwargs["strata"] = strata
    for name, path, aligned_truth, preds in _read_predictions(params, truth):
        _compile_notice()  # the inputs are read: the kernels run next
        with warnings.catch_warnings():
            # said once per model by _warn_undefined, for the metrics asked (not curve extras)
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            these = _within_depth(metrics, asked, preds) if extra else metrics
            runs.results[name] = receval.evaluate(aligned_truth, preds, these, **kwargs)
        if extra and "ties" not in params.get("silence", ()):
            accuracy = [n for n in asked or [] if n not in beyond]
            cutoffs = {s.k for s in parse_metrics(accuracy)} if accuracy else set()
            tied = runs.results[name].counts["ties_at_cutoff"]
            checks.check_ties({k: n for k, n in tied.items() if k in cutoffs},
                              runs.results[name].options["ties"])
        runs.inputs[f"predictions: {name}"] = str(path)
        if top_items:
            runs.top_items[name] = _top_items(preds)
        if keep:
            runs.predictions[name] = preds
    runs.train = kwargs.get("train")
    runs.strata = kwargs.get("strata")
    return runs


def _within_depth(metrics: list[str], asked: list[str] | None, preds: Any) -> list[str]:
    """``metrics`` without the report's curve cutoffs (P@k, R@k not asked) past the first one
    at or beyond the deepest list: past it a curve only shows P@k falling as 1/k, and a
    report over 20-item lists would otherwise evaluate ~100 cutoffs up to 1000."""
    import pyarrow.compute as pc

    counts = preds.group_by("user").aggregate([("user", "count")]).column("user_count")
    return cut_at_depth(metrics, asked, int(pc.max(counts).as_py() or 0))


def cut_at_depth(metrics: list[str], asked: list[str] | None, deepest: int) -> list[str]:
    """``metrics`` without the report's curve cutoffs (P@k, R@k not asked) past the first one
    at or beyond the ``deepest`` list (:func:`_within_depth` reads it from a table).

    Example:
        >>> cut_at_depth(["P@1", "P@2", "R@2", "P@5", "P@10"], ["P@1"], 2)
        ['P@1', 'P@2', 'R@2']
    """
    curve = re.compile(r"^[PR]@(\d+)$")
    kept = set(asked or ())
    extra_ks = sorted({int(m.group(1)) for n in metrics if n not in kept and (m := curve.match(n))})
    limit = next((k for k in extra_ks if k >= deepest), None)
    if limit is None:
        return metrics
    return [
        n for n in metrics if n in kept or not (m := curve.match(n)) or int(m.group(1)) <= limit
    ]


#: how long the first run's compilation takes, as the README says it (a plain ``evaluate`` on
#: a fresh install, 2 cores: 7.4-7.7 CPU-s of compiling, benchmarks/README.md "First run",
#: 2026-11-26, `d52aea1`, 2-core dev machine)
COMPILE_SECONDS = 8

#: what the first run prints on stderr while numba compiles
COMPILE_NOTICE = (f"compiling receval's kernels (first run only, about {COMPILE_SECONDS} s on 2 "
                  "cores; later runs load them)")

#: whether this process printed the notice already (a command may evaluate several times)
_notice_printed = False


def _compile_notice() -> None:
    """Say once on stderr why the very first run waits (numba compiles the kernels once, then
    caches them), on a terminal or not: a CI log then explains its slow first step. Commands
    call it once their inputs are read, so a bad input's error is still the only line."""
    global _notice_printed
    from receval.engines.numba_engine import kernels_cached

    if not _notice_printed and not kernels_cached():
        _notice_printed = True
        err_console.print(f"note: {COMPILE_NOTICE}", style="dim", highlight=False,
                          soft_wrap=True)


def _read_truth(params: dict[str, Any], kwargs: dict[str, Any]) -> tuple[Any, _Runs]:
    """The truth table, and an empty :class:`_Runs` holding its path and the reading notes.

    TREC qrels list judged documents, relevant or not: without a threshold or a profile,
    ``kwargs`` gets ``relevance_threshold=1`` (rel >= 1 is relevant, as in trec_eval).
    """
    from receval import io
    from receval.io.progress import file_progress
    from receval.io.source import check_file
    from receval.io.wanted import parse_columns_flag

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
                              columns=parse_columns_flag(params.get("truth_columns"), "truth"),
                              progress=progress, **_reading(params))
    from receval.cli.debias_flags import with_propensity_column

    truth = with_propensity_column(truth, truth_path, truth_format, params, _reading(params))
    return truth, _Runs({}, {"truth": str(truth_path)}, {}, notes)


def _with_train(params: dict[str, Any], kwargs: dict[str, Any], truth: Any, runs: _Runs) -> Any:
    """Read ``--train`` once into ``kwargs`` (``train=``, ``exclude_train=``); the truth
    gains its file's timestamp column, when the training data has timestamps too."""
    from receval import training
    from receval.cli.training_text import parse_train_columns
    from receval.io.wanted import parse_columns_flag

    if not params.get("train"):
        raise ReceValError("--exclude-train needs the training data: pass --train FILE")
    columns = parse_train_columns(params.get("train_columns"))
    trained = training.read_train(params["train"], user_col=params["user_col"],
                                  item_col=params["item_col"], columns=columns,
                                  **_reading(params))
    kwargs.update(train=trained, exclude_train=bool(params.get("exclude_train")))
    runs.inputs["train"] = str(params["train"])
    return training.with_truth_timestamps(
        truth, params["truth"], trained, user_col=params["user_col"],
        item_col=params["item_col"], timestamp_col=(columns or {}).get("timestamp", "timestamp"),
        truth_columns=parse_columns_flag(params.get("truth_columns"), "truth"),
        **_reading(params))


def _read_predictions(params: dict[str, Any],
                      truth: Any) -> Iterator[tuple[str, Path, Any, Any]]:
    """Each predictions file in turn, as ``(model name, path, truth, predictions)``, with the
    truth's ids and the file's ids of one type (strings if either side has strings)."""
    from receval import io
    from receval.io.progress import file_progress
    from receval.io.source import check_file
    from receval.io.wanted import parse_columns_flag

    pred_paths = [check_file(p, "predictions") for p in params["predictions"]]
    columns = parse_columns_flag(params.get("prediction_columns"), "predictions")
    for name, path in zip(io.model_names(pred_paths), pred_paths, strict=True):
        with file_progress(path, name, err_console) as progress:
            preds = io.read_predictions(path, format=params["predictions_format"],
                                        user_col=params["user_col"],
                                        item_col=params["item_col"],
                                        score_col=params["score_col"], columns=columns,
                                        progress=progress, **_reading(params))
        aligned_truth, preds = io.align_id_types([truth, preds])
        yield name, path, aligned_truth, preds


def _reading(params: dict[str, Any]) -> dict[str, Any]:
    return {"header": not params["no_header"], "delimiter": params["delimiter"]}


def _warn_undefined(models: dict[str, Result]) -> None:
    """One warning per model whose asked metrics were undefined for some users and filled
    in (through :mod:`receval.checks`, so ``--silence undefined`` holds)."""
    from receval import checks
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
        checks.warn(UndefinedMetricWarning, text)  # --silence undefined holds


def _semantics(params: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of :func:`receval.evaluate` the user gave (the rest: defaults)."""
    import inspect

    import receval
    from receval.options import Options

    names = [f.name for f in dataclasses.fields(Options)]
    kwargs = {n: params[n] for n in names if params.get(n) is not None}
    if params.get("engine"):
        kwargs["engine"] = params["engine"]
    if params.get("silence"):
        kwargs["silence"] = list(params["silence"])
    from receval.cli.debias_flags import debias_kwargs

    kwargs.update(debias_kwargs(params))  # --propensity, --debias, --propensity-clip
    if params.get("profile"):
        if "profile" not in inspect.signature(receval.evaluate).parameters:
            raise ReceValError("this version of receval has no profiles")
        kwargs["profile"] = params["profile"]
    return kwargs


def _read_strata(path: str, params: dict[str, Any], *, text_ids: bool) -> Any:
    """The ``--strata`` file (:func:`receval.io.groups.read_user_groups`) with the flags."""
    from receval.io.groups import read_user_groups

    return read_user_groups(path, user_col=params["user_col"], delimiter=params["delimiter"],
                            text_ids=text_ids)


def _top_items(preds: Any, n: int = 10) -> list[tuple[Any, int]]:
    counts = preds.group_by("item").aggregate([("user", "count")])
    counts = counts.sort_by([("user_count", "descending"), ("item", "ascending")]).slice(0, n)
    return list(zip(counts.column("item").to_pylist(), counts.column("user_count").to_pylist(),
                    strict=True))


def _check_output(params: dict[str, Any],
                  outputs: dict[str, tuple[str | None, tuple[str, ...]]]) -> dict[str, Path]:
    """Check the outputs (flag -> (path, suffixes)) and the column flags before any work: an
    output that is an input, shared, of the wrong kind or not writable is refused (exit 2)."""
    from receval.io.output import check_outputs

    _check_columns(params)
    inputs = [p for p in (params.get("truth"), *(params.get("predictions") or ()),
                          params.get("train")) if p]
    return check_outputs(outputs, inputs)


def _check_columns(params: dict[str, Any]) -> None:
    """The column flags of one side must name different columns (a side whose columns are
    given by --truth-columns / --prediction-columns is checked by the reader)."""
    roles = {"truth": ("user_col", "item_col", "rating_col"),
             "predictions": ("user_col", "item_col", "score_col")}
    overrides = {"truth": "truth_columns", "predictions": "prediction_columns"}
    for side, keys in roles.items():
        if params.get(overrides[side]):
            continue
        seen: dict[str, str] = {}
        for key in keys:
            column = params.get(key)
            if column is None:
                continue
            if column in seen:
                flags = f"--{seen[column].replace('_', '-')} and --{key.replace('_', '-')}"
                raise ReceValError(f"{flags} both name the column {column!r} of the {side}; "
                                   "each must name its own column")
            seen[column] = key


def _print_written(what: str, path: str) -> None:
    err_console.print(Text(f"{what} written to {safe_text(path)}"), highlight=False,
                      soft_wrap=True)


def _write_per_user(models: dict[str, Result], path: Path, *, raw: bool = False) -> None:
    """The per-user values of every model (a ``model`` column first when several) to ``path``
    (CSV, TSV or Parquet by suffix; written as is: the caller makes it atomic)."""
    import pandas as pd
    import pyarrow as pa

    from receval.io.output import write_table

    if len(models) == 1 and type(only := next(iter(models.values()))).__name__ == "StreamedResult":
        from receval.streaming.peruser import still_spilled

        spill = still_spilled(only)
        if spill is not None:  # spilled by a streamed run: written from disk, never held
            spill.write(path, columns=getattr(only, "per_user_columns", None), raw=raw)
            return
    frames = [r.per_user.assign(model=name) for name, r in models.items()]
    frame = frames[0].drop(columns="model") if len(frames) == 1 else pd.concat(frames)
    if len(frames) > 1:
        frame = frame[["model", *[c for c in frame.columns if c != "model"]]]
    table = pa.Table.from_pandas(frame, preserve_index=False)
    write_table(table, path, raw=raw, atomic=False)


