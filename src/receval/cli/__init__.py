"""The ``receval`` command line: thin, parse -> read -> evaluate -> render, exit codes 0 / 2.

Bad input exits 2 with a one-line message and no traceback (``--debug`` shows it). Every
option of :func:`receval.evaluate` is a flag, made from :class:`receval.options.Options`, so a
new option of the core is a new flag here without an edit. One module per command, loaded
when the command runs (:mod:`receval.cli.group`); what they share is in
:mod:`receval.cli.common`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import click

from receval.cli.group import main

__all__ = ["COMMANDS", "_Runs", "_errors_exit_2", "all_commands", "main"]

#: every command: the import of its module (which registers it on :data:`main`; each name
#: written out, as the layer check reads every import's target) and its help's first
#: paragraph, as ``receval --help`` lists it before the module is loaded
COMMANDS: dict[str, tuple[Callable[[], Any], str]] = {
    "check": (
        lambda: importlib.import_module("receval.cli.check_command"),
        "Check a gate: the expectations of a TOML file (docs/gates.md) on a run or a "
        "comparison. Prints each check with its value and interval; exits 0 when all hold, 3 "
        "when one fails, 2 on bad input.",
    ),
    "compare": (
        lambda: importlib.import_module("receval.cli.compare_command"),
        "Is model B really better than A? Paired tests per user, corrected for multiplicity, "
        "with the difference's bootstrap interval and effect sizes.",
    ),
    "demo": (
        lambda: importlib.import_module("receval.cli.demo_command"),
        "The offline workflow on seeded synthetic data: split, leakage audit, a popularity "
        "baseline and a model, evaluation without training items, paired comparison.",
    ),
    "evaluate": (
        lambda: importlib.import_module("receval.cli.evaluate_command"),
        "Evaluate predictions against the truth and print the metrics.",
    ),
    "explain": (
        lambda: importlib.import_module("receval.cli.explain_command"),
        "Which options differ between two profiles, and on your data how much each one moves "
        "each metric (PROFILE_B defaults to receval's defaults; 'defaults' names them too).",
    ),
    "monitor": (
        lambda: importlib.import_module("receval.cli.monitor_command"),
        "Metrics per time window from served lists and delayed feedback, with intervals, a "
        "drift flag against a reference window and, with --variant-col, variant comparisons.",
    ),
    "offpolicy": (
        lambda: importlib.import_module("receval.cli.offpolicy_command"),
        "Estimate what each target policy would earn online from the served log (IPS, SNIPS, "
        "DR, ...), with bootstrap intervals over requests and the importance weights' "
        "diagnostics.",
    ),
    "plot": (
        lambda: importlib.import_module("receval.cli.plot_command"),
        "Plot one or several models: curves over k, distributions, comparisons.",
    ),
    "resolve": (
        lambda: importlib.import_module("receval.cli.resolve_command"),
        "Resolve generated titles (GENERATED: user, rank, text) to catalogue items and, with "
        "TRUTH (user, item), evaluate the resolved lists; the counts of each match and flag are "
        "printed beside the metrics.",
    ),
    "sample": (
        lambda: importlib.import_module("receval.cli.sample_command"),
        "Write the candidates every model scores: each test user's test items plus sampled "
        "negatives (not the user's training or test items), seeded.",
    ),
    "split": (
        lambda: importlib.import_module("receval.cli.split_command"),
        "Split interactions into train and test files, seeded, and print the leakage audit.",
    ),
}


def all_commands() -> dict[str, click.Command]:
    """Every command, each module loaded (for the docs and the tests that read them all).

    Example:
        >>> sorted(all_commands()) == sorted(COMMANDS)
        True
    """
    for name in COMMANDS:
        main.get_command(click.Context(main), name)
    return dict(main.commands)


type(main).lazy = COMMANDS  # the one group


def __getattr__(name: str) -> Any:
    """``_Runs``, ``_errors_exit_2`` (:mod:`receval.cli.common`) and the command modules,
    loaded on first use."""
    if name in ("_Runs", "_errors_exit_2"):
        from receval.cli import common

        return getattr(common, name)
    command = name.removesuffix("_command")
    if name.endswith("_command") and command in COMMANDS:
        return COMMANDS[command][0]()
    raise AttributeError(f"module 'receval.cli' has no attribute {name!r}")
