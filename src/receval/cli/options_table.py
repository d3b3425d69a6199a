"""Every flag that more than one command takes, declared once.

A command names the flags it shares with :func:`shared` (``@shared("seed", "strata")``) or
takes one with a command-specific default or choices with :func:`option`
(``@option("format", choices=("table", "json"))``): the flag's name, type, range and help
live here only, so ``--seed -1`` is the same one-line error in every command. The flags
made from :class:`receval.options.Options` come from its annotations
(:func:`receval.cli.common._semantics_options`), their choices from its ``Literal`` types.

A flag of every command (:data:`EVERY_COMMAND`: ``--debug``, ``--silence``) is added by the
``receval`` group to each command it registers, and acts through :data:`EFFECTS`, a context
that :func:`receval.cli.common._errors_exit_2` (the wrapper of every command) enters; the
wrapper hands a command only the flags of every command that its signature names
(:func:`taken_by`; a command with ``**params`` gets them all), so a command that names its
parameters one by one never meets a flag it does not read. Adding one is this file only: an
entry in :data:`OPTIONS`, its name in :data:`EVERY_COMMAND` and, when it acts while the command
runs, its context in :data:`EFFECTS` (tests/test_declared_once.py plants one and runs every
command with it).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

#: the help of ``--seed``, the same in every command
SEED_HELP = (
    "Seed of the random draws (non-negative integer); each stream is keyed by what it "
    "draws for (names, never positions), so the order of models or groups and the "
    "thread count change nothing."
)


def _debug() -> Decorator:
    return click.option("--debug", is_flag=True, help="Show the traceback of an error.")


def _silence() -> Decorator:
    from receval.checks import WARNINGS

    return click.option(
        "--silence",
        multiple=True,
        type=click.Choice(sorted(WARNINGS)),
        metavar="CODE",
        help=f"Do not print this warning (repeat for more): {', '.join(sorted(WARNINGS))}.",
    )


def _seed(default: int = 0) -> Decorator:
    return click.option(
        "--seed", type=click.IntRange(0, None), default=default, show_default=True, help=SEED_HELP
    )


def _resamples(
    default: int = 1000,
    *,
    minimum: int = 0,
    what: str = "Bootstrap resamples of each interval",
    zero: str = "none",
) -> Decorator:
    from receval.stats import MAX_RESAMPLES

    none = f" (0: {zero})" if minimum == 0 else ""
    return click.option(
        "--resamples",
        type=click.IntRange(minimum, MAX_RESAMPLES),
        default=default,
        show_default=True,
        help=f"{what}{none}.",
    )


def _confidence() -> Decorator:
    return click.option(
        "--confidence",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.95,
        show_default=True,
        help="Level of the intervals.",
    )


def _format(
    choices: Sequence[str] = ("table", "json", "csv"),
    default: str = "table",
    what: str = "the result",
) -> Decorator:
    return click.option(
        "--format",
        "-f",
        "fmt",
        type=click.Choice(tuple(choices)),
        default=default,
        show_default=True,
        help=f"How {what} is printed.",
    )


def _column(flag: str, default: str | None) -> Callable[..., Decorator]:
    def factory(default: str | None = default, note: str = "") -> Decorator:
        role = flag[2:].removesuffix("-col")
        return click.option(
            flag,
            default=default,
            show_default=default is not None,
            help=f"The {role} column{note}.",
        )

    return factory


def _delimiter() -> Decorator:
    return click.option(
        "--delimiter",
        default=None,
        help="CSV delimiter (default: sniffed; 'tab' or '\\t' for a tab).",
    )


def _raw_csv() -> Decorator:
    return click.option(
        "--raw-csv",
        is_flag=True,
        help="Write CSV/TSV text cells as they are: by default a cell starting with =, +, -, @, "
        "tab or CR gets a ' in front, so a spreadsheet does not run it.",
    )


def _max_k() -> Decorator:
    return click.option(
        "--max-k",
        type=click.IntRange(1, 10_000),
        default=None,
        metavar="N",
        help="Last cutoff of the curves. [default: as deep as the lists go, up to 1000]",
    )


def _strata() -> Decorator:
    return click.option(
        "--strata",
        default=None,
        metavar="FILE|NAME",
        help="Results per group of users too: a file (CSV, TSV or Parquet) with the user "
        "column and one group column, or a built-in stratum of --train: activity, "
        "activity:N, cold, cold:N. Users the file does not name: group (none).",
    )


def _report() -> Decorator:
    return click.option(
        "--report", default=None, metavar="FILE", help="Write a self-contained HTML report."
    )


def _memory_budget(help: str | None = None) -> Decorator:
    return click.option(
        "--memory-budget",
        default=None,
        metavar="SIZE",
        help=help
        or "Stream the truth and predictions files (CSV, TSV, Parquet) within SIZE of "
        "memory (2GiB, 500MB), with the same numbers; unset, files that would not fit "
        "in half the machine's memory are streamed too (docs/streaming.md).",
    )


def _named(flag: str, short: str | None = None, metavar: str = "FILE") -> Callable[..., Decorator]:
    """A file or a name whose meaning each command says (``help``): one spelling, one type."""

    def factory(help: str, dest: str | None = None, required: bool = False) -> Decorator:
        names = [flag, *([short] if short else []), *([dest] if dest else [])]
        return click.option(*names, required=required, metavar=metavar, help=help)

    return factory


#: flag name -> factory of its click option (keywords: a command's default or choices)
OPTIONS: dict[str, Callable[..., Decorator]] = {
    "debug": _debug,
    "silence": _silence,
    "seed": _seed,
    "resamples": _resamples,
    "confidence": _confidence,
    "format": _format,
    "user_col": _column("--user-col", "user"),
    "item_col": _column("--item-col", "item"),
    "rating_col": _column("--rating-col", "rating"),
    "score_col": _column("--score-col", "score"),
    "timestamp_col": _column("--timestamp-col", "timestamp"),
    "delimiter": _delimiter,
    "raw_csv": _raw_csv,
    "max_k": _max_k,
    "strata": _strata,
    "report": _report,
    "memory_budget": _memory_budget,
    "train": _named("--train"),
    "items": _named("--items"),
    "out": _named("--out", "-o"),
    "baseline": _named("--baseline", "-b", metavar="NAME"),
}

#: the flags every command takes: the group adds them to each command (see the module)
EVERY_COMMAND = ("debug", "silence")


def _silenced(params: Mapping[str, Any]) -> contextlib.AbstractContextManager[Any]:
    from receval import checks

    return checks.silence(params.get("silence"))


#: what a flag of every command does while the command runs: a context entered by the
#: wrapper of every command (``--debug`` acts on the error itself, in the wrapper)
EFFECTS: dict[str, Callable[[Mapping[str, Any]], contextlib.AbstractContextManager[Any]]] = {
    "silence": _silenced,
}


def every_command_effects(params: Mapping[str, Any]) -> contextlib.ExitStack:
    """The contexts of :data:`EFFECTS` for one command's ``params``, in one stack.

    Example:
        >>> with every_command_effects({"silence": ("ties",)}):
        ...     pass
    """
    stack = contextlib.ExitStack()
    for name in EVERY_COMMAND:
        if name in EFFECTS:
            stack.enter_context(EFFECTS[name](params))
    return stack


def every_command_params() -> list[click.Parameter]:
    """The flags of :data:`EVERY_COMMAND`, as click parameters: the ``receval`` group adds
    them to each command it registers (a command takes them as ``**params``).

    Example:
        >>> [p.name for p in every_command_params()]
        ['debug', 'silence']
    """

    def holder() -> None: ...

    shared(*EVERY_COMMAND)(holder)
    # click keeps a function's parameters last-applied first
    return list(reversed(holder.__click_params__))  # type: ignore[attr-defined]


def option(name: str, **settings: Any) -> Decorator:
    """The shared flag ``name`` with a command's own default or choices.

    Example:
        >>> import click
        >>> @click.command()
        ... @option("seed", default=7)
        ... def run(seed: int) -> None: ...
        >>> [(p.name, p.default) for p in run.params]
        [('seed', 7)]
    """
    return OPTIONS[name](**settings)


def shared(*names: str) -> Decorator:
    """The shared flags ``names``, in this order in ``--help``.

    Example:
        >>> import click
        >>> @click.command()
        ... @shared("debug", "seed")
        ... def run(debug: bool, seed: int) -> None: ...
        >>> [p.name for p in run.params]
        ['debug', 'seed']
    """

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            f = OPTIONS[name]()(f)
        return f

    return decorate


def taken_by(command: Callable[..., Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as ``command`` takes them: the flags of :data:`EVERY_COMMAND` that its
    signature does not name are left out (they act through :data:`EFFECTS`, and ``--debug``
    in the wrapper); a command with ``**params`` gets every one. Any other flag is passed as
    it is, so a command's own parameter missing from its signature is still an error.

    Example:
        >>> def run(seed: int, silence: tuple[str, ...]) -> None: ...
        >>> taken_by(run, {"seed": 1, "silence": (), "debug": False})
        {'seed': 1, 'silence': ()}
        >>> def run_all(seed: int, **params: object) -> None: ...
        >>> sorted(taken_by(run_all, {"seed": 1, "debug": False}))
        ['debug', 'seed']
    """
    signature = inspect.signature(command).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.values()):
        return dict(params)
    return {
        name: value
        for name, value in params.items()
        if name in signature or name not in EVERY_COMMAND
    }
