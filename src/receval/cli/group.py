"""The ``receval`` group: its one-line usage errors, and its commands, each loaded when run.

A command's module (``receval.cli.evaluate_command``, ...) is imported only when the command
is run or its help is asked: ``receval --help`` lists the commands from :data:`COMMANDS`
(name -> module and the one-line help, checked against each command's own docstring by
tests/test_startup.py), so it loads neither pandas nor numba.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

#: every command: its module (which registers it on :data:`main`) and its help's first
#: paragraph, as ``receval --help`` lists it before the module is loaded
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("receval.cli.check_command",
              "Check a gate: the expectations of a TOML file (docs/gates.md) on a run or a "
              "comparison. Prints each check with its value and interval; exits 0 when all "
              "hold, 3 when one fails, 2 on bad input."),
    "compare": ("receval.cli.compare_command",
                "Is model B really better than A? Paired tests per user, corrected for "
                "multiplicity, with the difference's bootstrap interval and effect sizes."),
    "demo": ("receval.cli.demo_command",
             "The offline workflow on seeded synthetic data: split, leakage audit, a popularity "
             "baseline and a model, evaluation without training items, paired comparison."),
    "evaluate": ("receval.cli.evaluate_command",
                 "Evaluate predictions against the truth and print the metrics."),
    "explain": ("receval.cli.explain_command",
                "Which options differ between two profiles, and on your data how much each one "
                "moves each metric (PROFILE_B defaults to receval's defaults; 'defaults' names "
                "them too)."),
    "monitor": ("receval.cli.monitor_command",
                "Metrics per time window from served lists and delayed feedback, with "
                "intervals, a drift flag against a reference window and, with --variant-col, "
                "variant comparisons."),
    "offpolicy": ("receval.cli.offpolicy_command",
                  "Estimate what each target policy would earn online from the served log "
                  "(IPS, SNIPS, DR, ...), with bootstrap intervals over requests and the "
                  "importance weights' diagnostics."),
    "plot": ("receval.cli.plot_command",
             "Plot one or several models: curves over k, distributions, comparisons."),
    "sample": ("receval.cli.sample_command",
               "Write the candidates every model scores: each test user's test items plus "
               "sampled negatives (not the user's training or test items), seeded."),
    "split": ("receval.cli.split_command",
              "Split interactions into train and test files, seeded, and print the leakage "
              "audit."),
}


class _OneLineGroup(click.Group):
    """The ``receval`` group: a usage error (a missing option, a bad value, an unknown flag or
    command) is one line on stderr naming the ``--help`` to read, exit 2, instead of click's
    usage block; everything else is click's standalone behaviour. Commands load on demand
    (:data:`COMMANDS`)."""

    def main(self, args: Any = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as err:
            if type(err).__name__ == "NoArgsIsHelpError":  # a bare ``receval``: the help
                err.show()
                sys.exit(err.exit_code)
            from receval.io.terminal import one_line

            path = err.ctx.command_path if err.ctx is not None else "receval"
            click.echo(f"error: {one_line(err.format_message())} (see '{path} --help')",
                       err=True)
            sys.exit(err.exit_code)
        except click.ClickException as err:
            err.show()
            sys.exit(err.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        # an Exit (--help, --version, ctx.exit) comes back as its code; a command, as None
        sys.exit(code if isinstance(code, int) else 0)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Register ``cmd`` with the flags every command takes (``--debug``, ``--silence``:
        :data:`receval.cli.options_table.EVERY_COMMAND`), which act in
        :func:`receval.cli.common._errors_exit_2`."""
        from receval.cli.options_table import every_command_params

        taken = {p.name for p in cmd.params}
        cmd.params += [p for p in every_command_params() if p.name not in taken]
        super().add_command(cmd, name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, its module imported first (it registers the command)."""
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(COMMANDS[cmd_name][0])
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list of ``receval --help``, from :data:`COMMANDS` for the commands not loaded."""
        names = self.list_commands(ctx)
        shown = [(n, self.commands.get(n) or click.Command(n, help=COMMANDS[n][1]))
                 for n in names]
        shown = [(n, c) for n, c in shown if not c.hidden]
        if shown:
            limit = formatter.width - 6 - max(len(n) for n, _ in shown)
            with formatter.section("Commands"):
                formatter.write_dl([(n, c.get_short_help_str(limit)) for n, c in shown])


def _print_version(ctx: click.Context) -> None:
    """``receval --version`` (the package metadata is read only then)."""
    from receval._version import __version__

    click.echo(f"receval, version {__version__}")
    ctx.exit()


def all_commands() -> dict[str, click.Command]:
    """Every command, each module loaded (for the docs and the tests that read them all).

    Example:
        >>> sorted(all_commands()) == sorted(COMMANDS)
        True
    """
    for name in COMMANDS:
        main.get_command(click.Context(main), name)
    return dict(main.commands)


@click.group(cls=_OneLineGroup,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _param, value: _print_version(ctx) if value else None,
              help="Show the version and exit.")
def main() -> None:
    """receval: exact, explicit and fast evaluation of recommender systems."""
