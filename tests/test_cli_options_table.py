"""Options defined once (issue 21, point 3): every flag more than one command takes is declared
in one place (receval.cli.options_table), behaves the same in every command, and the choices of
the named options come from the Literal types of receval.options."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import receval.cli
from receval import options as core
from receval.cli import COMMANDS, all_commands, main
from receval.cli.options_table import EVERY_COMMAND, OPTIONS

CLI = Path(receval.cli.__file__).parent


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _declarations() -> dict[str, list[str]]:
    """Each flag a ``click.option(...)`` call of the cli package names, with ``file:line``."""
    found: dict[str, list[str]] = {}
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "option"):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
                        found.setdefault(arg.value, []).append(f"{path.name}:{node.lineno}")
    return found


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_each_shared_flag_is_declared_once(name: str) -> None:
    """The flag's text is in the table once, and no command's click.option names it."""
    flag = _flag(name)
    elsewhere = [p for p in _declarations().get(flag, []) if not p.startswith("options_table")]
    assert not elsewhere
    table = (CLI / "options_table.py").read_text()
    assert table.count(f'"{flag}"') == 1


def test_no_flag_is_declared_twice_but_the_homonyms() -> None:
    """The flags more than one command declared (--debug 6 times, --seed 7 with three types,
    the column flags, --format, --resamples, ...): each declared by at most one click.option
    call now: in the table, or by the one command that takes it."""
    twice = {f for f, p in _declarations().items() if len(p) > 1}
    assert twice == set(HOMONYMS)


#: flags two commands spell alike for different things (renaming one breaks its users):
#: not one option, so not in the table; a new one fails the test above
HOMONYMS = {
    "--test": "compare: the paired test; sample: the test interactions file",
    "--alpha": "compare: the significance level; sample: the popularity exponent",
    "--log": "evaluate/compare/check: the tracker; offpolicy: the served log file",
}


def _commands() -> dict[str, click.Command]:
    return all_commands()  # every command module loaded (they load on demand)


def _params(command: click.Command, flag: str) -> list[click.Parameter]:
    return [p for p in command.params if flag in getattr(p, "opts", ())]


@pytest.mark.parametrize("name", EVERY_COMMAND)
def test_every_command_takes_debug_and_silence(name: str) -> None:
    missing = [c for c, command in _commands().items() if not _params(command, _flag(name))]
    assert not missing


def test_seed_is_one_type_and_one_help_everywhere() -> None:
    seeds = {c: _params(command, "--seed")[0] for c, command in _commands().items()
             if _params(command, "--seed")}
    assert {"compare", "demo", "evaluate", "monitor", "offpolicy", "plot", "sample",
            "split"} <= set(seeds)
    for param in seeds.values():
        assert isinstance(param.type, click.IntRange)
        assert (param.type.min, param.type.max, param.type.min_open) == (0, None, False)
    assert len({p.help for p in seeds.values()}) == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["compare", "demo", "evaluate", "monitor", "offpolicy",
                                     "plot", "sample", "split"])
@pytest.mark.parametrize("value", ["-1", "1.5", "x"])
def test_a_bad_seed_is_the_same_one_line_error_in_every_command(command: str,
                                                                  value: str) -> None:
    # before the table, split and sample took any int (-1 went on to the split), plot and
    # demo any int too: the same flag, three types
    out = CliRunner().invoke(main, [command, "--seed", value])
    assert out.exit_code == 2
    lines = out.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: Invalid value for '--seed': ")
    assert lines[0].endswith(f"(see 'main {command} --help')")


def test_resamples_confidence_and_columns_are_one_type_everywhere() -> None:
    for flag in ("--resamples", "--confidence", "--user-col", "--item-col", "--delimiter",
                 "--format", "--max-k", "--strata", "--report", "--raw-csv"):
        kinds = {type(p.type).__name__ for command in _commands().values()
                 for p in _params(command, flag)}
        assert len(kinds) == 1, (flag, kinds)


def test_choices_come_from_the_literal_types() -> None:
    hints = typing.get_type_hints(core.Options)
    assert core.CHOICES["ties"] == typing.get_args(core.Ties)
    assert core.CHOICES["precision_denominator"] == typing.get_args(core.PrecisionDenominator)
    literal_fields = [n for n, h in hints.items()
                      if core._literal_choices(h) is not None]
    assert sorted(core.CHOICES) == sorted(literal_fields)
    evaluate = _commands()["evaluate"]
    for name, choices in core.CHOICES.items():
        (param,) = _params(evaluate, _flag(name))
        assert isinstance(param.type, click.Choice)
        assert tuple(param.type.choices) == choices


def test_torch_tie_policies_are_the_literal_less_ranx() -> None:
    torch_engine = pytest.importorskip("receval.engines.torch_engine")
    assert tuple(t for t in typing.get_args(core.Ties)
                                              if t != "ranx") == torch_engine.TIE_POLICIES


def test_silence_is_the_same_choice_everywhere() -> None:
    from receval.checks import WARNINGS

    for command in _commands().values():
        (param,) = _params(command, "--silence")
        assert isinstance(param.type, click.Choice)
        assert sorted(param.type.choices) == sorted(WARNINGS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_unknown_silence_code_is_the_same_one_line_error_in_every_command(
        command: str) -> None:
    out = CliRunner().invoke(main, [command, "--silence", "nope"])
    assert out.exit_code == 2
    (line,) = out.output.strip().splitlines()
    assert line.startswith("error: Invalid value for '--silence': 'nope' is not one of ")


def test_split_takes_silence_like_every_command(tmp_path: Path) -> None:
    """split had no --silence (exit 2 on the flag); the group now adds it to every command."""
    from receval.checks import WARNINGS

    data = tmp_path / "ratings.csv"
    data.write_text("user,item,timestamp\n" + "".join(
        f"u{u},i{i},{u * 10 + i}\n" for u in range(6) for i in range(4)))
    args = ["split", str(data), "--method", "random-user", "--test-fraction", "0.25",
            "--train-out", str(tmp_path / "tr.csv"), "--test-out", str(tmp_path / "te.csv")]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert CliRunner().invoke(main, [*args, "--silence", sorted(WARNINGS)[0]]).exit_code == 0


def test_command_choices_are_the_library_lists() -> None:
    """Each choice flag reads the tuple the library validates with (before: copies)."""
    from receval.compare import CORRECTION_FAMILIES
    from receval.monitor.inputs import UNITS
    from receval.sampled import STRATEGIES
    from receval.split import METHODS, TIES
    from receval.stats.corrections import CORRECTIONS
    from receval.stats.tests import TESTS

    expected = {("compare", "--test"): TESTS, ("compare", "--correction"): CORRECTIONS,
                ("compare", "--correction-family"): CORRECTION_FAMILIES,
                ("monitor", "--time-unit"): tuple(UNITS), ("sample", "--strategy"): STRATEGIES,
                ("split", "--method"): METHODS, ("split", "--ties"): TIES}
    commands = _commands()
    for (command, flag), choices in expected.items():
        (param,) = _params(commands[command], flag)
        assert isinstance(param.type, click.Choice)
        assert param.type.choices is choices or tuple(param.type.choices) == tuple(choices)


@pytest.mark.parametrize(("flag", "value"), [("--confidence", "1.5"), ("--resamples", "-3"),
                                             ("--max-k", "0"), ("--format", "yaml")])
def test_a_bad_shared_value_is_one_line_naming_the_flag_in_every_command(
        flag: str, value: str) -> None:
    takers = sorted(c for c, command in _commands().items() if _params(command, flag))
    assert len(takers) >= 2
    for command in takers:
        out = CliRunner().invoke(main, [command, flag, value])
        assert out.exit_code == 2, (command, out.output)
        (line,) = out.output.strip().splitlines()
        assert line.startswith(f"error: Invalid value for '{flag}'"), (command, line)
