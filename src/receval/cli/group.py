"""The ``receval`` group: its one-line usage errors, and its commands, each loaded when run.

A command's module (``receval.cli.evaluate_command``, ...) is imported only when the command
is run or its help is asked: ``receval --help`` lists the commands from
:data:`receval.cli.COMMANDS` (name -> the module's import and the one-line help, checked
against each command's own docstring by tests/test_startup.py), so it loads neither pandas nor
numba.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, ClassVar

import click


class _OneLineGroup(click.Group):
    """The ``receval`` group: a usage error (a missing option, a bad value, an unknown flag or
    command) is one line on stderr naming the ``--help`` to read, exit 2, instead of click's
    usage block; everything else is click's standalone behaviour. Commands load on demand
    (:attr:`lazy`)."""

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
        # an Exit (--help, --version, ctx.exit) comes back as its code; a command, as None;
        # what native code holds is freed before shutdown (receval.cli.common.release_native)
        if "receval.cli.common" in sys.modules:
            sys.modules["receval.cli.common"].release_native()
        sys.exit(code if isinstance(code, int) else 0)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Register ``cmd`` with the flags every command takes (``--debug``, ``--silence``:
        :data:`receval.cli.options_table.EVERY_COMMAND`), which act in
        :func:`receval.cli.common._errors_exit_2`."""
        from receval.cli.options_table import every_command_params

        taken = {p.name for p in cmd.params}
        cmd.params += [p for p in every_command_params() if p.name not in taken]
        super().add_command(cmd, name)

    #: name -> (the import of the command's module, its help's first paragraph): the commands
    #: not loaded yet (:data:`receval.cli.COMMANDS`, which the package sets)
    lazy: ClassVar[dict[str, tuple[Callable[[], Any], str]]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, its module imported first (it registers the command)."""
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.lazy[cmd_name][0]()
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list of ``receval --help``, from :attr:`lazy` for the commands not loaded."""
        names = self.list_commands(ctx)
        shown = [(n, self.commands.get(n) or click.Command(n, help=self.lazy[n][1]))
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


@click.group(cls=_OneLineGroup,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _param, value: _print_version(ctx) if value else None,
              help="Show the version and exit.")
def main() -> None:
    """receval: exact, explicit and fast evaluation of recommender systems."""
