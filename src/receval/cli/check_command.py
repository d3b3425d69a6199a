"""The ``receval check`` command: a gate file's checks, a table, JUnit XML, exit 3 on a failure."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from receval.cli.common import _errors_exit_2, _stdout, main
from receval.cli.log_option import _check_log, _log_options, _log_runs
from receval.io.terminal import safe_text

#: the exit status when a check does not hold (2: bad input, 1: a bug)
FAILED = 3


@main.command()
@click.argument("config", metavar="GATE.toml")
@click.option("--junit", metavar="FILE", default=None,
              help="Also write the checks as JUnit XML (a test case per check) for CI.")
@_log_options
def check(**params: Any) -> None:
    """Check a gate: the expectations of a TOML file (docs/gates.md) on a run or a comparison.
    Prints each check with its value and interval; exits 0 when all hold, 3 when one fails,
    2 on bad input.

    \b
    receval check gate.toml
    receval check gate.toml --junit gate.xml --log mlflow
    """
    if not _run(**params):
        sys.exit(FAILED)


@_errors_exit_2
def _run(config: str, junit: str | None, **params: Any) -> bool:
    import receval
    from receval.gates import verdict
    from receval.gates.run import input_paths
    from receval.io.output import atomic_output, check_outputs

    inputs = input_paths(config)  # the gate file and every file it reads: never overwritten
    _check_log(params, inputs)
    outputs = check_outputs({"--junit": (junit, (".xml",))}, inputs)
    gate = receval.check(config)
    _log_runs(params, gate.results, gate.comparison)  # before --junit: a failure here is exit
    # 2 with no JUnit file claiming the checks ran
    if "--junit" in outputs:
        with atomic_output(outputs["--junit"], "--junit") as tmp:
            tmp.write_text(gate.to_junit(), encoding="utf-8")
    table = Table(title=f"receval check {safe_text(gate.name)} (confidence {gate.confidence:g})")
    for name, justify in (("", "left"), ("check", "left"), ("value", "right"),
                          ("interval", "right"), ("needs", "left")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for row in gate.rows():
        style = "green" if row[0] == "pass" else "bold red"
        table.add_row(Text(row[0], style=style), *(Text(safe_text(c)) for c in row[1:]))
    out = _stdout()
    out.print(table)
    for failure in gate.failures:
        out.print(Text(safe_text(f"FAIL {failure.name}: {failure.reason}")), highlight=False,
                  soft_wrap=True)
    out.print(Text(verdict(gate)), style="green" if gate.passed else "bold red",
              highlight=False)
    return gate.passed
