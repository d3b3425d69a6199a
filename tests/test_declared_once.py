"""Declared once (issue 32, point 5): the evaluation options are the fields of
:class:`receval.options.Options`; every other place that names them is derived from the fields
or held to them here, and a flag every command takes is one edit of
``receval.cli.options_table``.

The options: ``receval.evaluate`` keeps one explicit keyword per field (IDE completion), and
this module checks those keywords against the fields (names, UNSET defaults, types, docs); the
dict of passed options is read from the keywords by the fields' names
(:func:`receval.options.passed_options`); ``compare`` and ``evaluate_scores`` take them as
``**options`` and the Spark engine as the ``explicit`` mapping, so they hold no copy. A value
passed for each field reaches ``Result.options`` through evaluate, compare and
evaluate_scores, and the monitor's record of the options passed.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import re
import types
import typing
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pytest

import receval
from receval.cli import COMMANDS
from receval.options import CHOICES, OPTION_NAMES, UNSET, Options, passed_options

ROOT = Path(__file__).resolve().parents[1]

TRUTH = pd.DataFrame({"user": [0, 0, 1, 1], "item": [0, 1, 0, 2], "rating": [4.0, 2.0, 5.0, 3.0]})
PREDS = pd.DataFrame(
    {
        "user": [0, 0, 0, 1, 1, 1],
        "item": [0, 1, 2, 0, 1, 2],
        "score": [0.9, 0.6, 0.3, 0.8, 0.5, 0.7],
    }
)
SCORES = np.array([[0.9, 0.6, 0.3], [0.8, 0.5, 0.7]])

#: a value other than the default for each option that is not a named choice (those take
#: their first choice that is not the default): a new open option needs a row here
OPEN_VALUES: dict[str, Any] = {
    "relevance_threshold": 3.0,
    "score_threshold": 0.4,
    "max_list": 2,
    "err_max_grade": 4.0,
    "persistence": 0.5,
}


def _other_value(name: str) -> Any:
    """A valid value of option ``name`` that is not its default (as recorded)."""
    if name in OPEN_VALUES:
        return OPEN_VALUES[name]
    default = Options().to_dict()[name]
    return next(c for c in CHOICES[name] if c != default)


def _types(hint: Any) -> frozenset[Any]:
    """The types a hint admits, each ``Literal`` widened to the types of its values
    (``Ties`` -> ``{str}``, ``float | Literal["user"]`` -> ``{float, str}``)."""
    if typing.get_origin(hint) is Literal:
        return frozenset(type(v) for v in typing.get_args(hint))
    args = typing.get_args(hint)
    if args and (typing.get_origin(hint) in (typing.Union, types.UnionType)):
        return frozenset().union(*(_types(a) for a in args))
    return frozenset({hint})


def _keywords(function: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(function).parameters)


# --- receval.evaluate: one keyword per field ------------------------------------------------


def test_the_unset_keywords_of_evaluate_are_exactly_the_fields() -> None:
    params = _keywords(receval.evaluate)
    unset = {n for n, p in params.items() if p.default is UNSET}
    assert unset == set(OPTION_NAMES)
    assert all(params[n].kind is inspect.Parameter.KEYWORD_ONLY for n in OPTION_NAMES)


def test_each_keyword_admits_the_types_of_its_field() -> None:
    """The keywords are annotated ``str`` where the field is a ``Literal`` (a caller's text
    type-checks); otherwise the same types."""
    fields = typing.get_type_hints(Options)
    annotations = receval.evaluate.__annotations__
    for name in OPTION_NAMES:
        keyword = eval(annotations[name], {})  # builtins only: float | str | None
        assert _types(keyword) == _types(fields[name]), name


def test_each_option_has_its_one_paragraph_of_docs() -> None:
    """The Options docstring documents each field once; the CLI's help of each flag is that
    paragraph and evaluate's docstring points to it, not a copy."""
    from receval.cli.common import _option_help

    helps = _option_help()
    assert set(helps) == set(OPTION_NAMES)
    assert all(len(text) > 20 for text in helps.values())
    assert "described\n    on :class:`~receval.options.Options`" in (receval.evaluate.__doc__ or "")


def test_the_readme_table_names_each_option_with_its_default() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Options and defaults", 1)[1].split("\n\n", 2)[2].split("\n\n")[0]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| ([^|]*)\|", section, re.M)}
    assert set(rows) == set(OPTION_NAMES)
    for name, value in Options().to_dict().items():  # precision_denominator: as resolved
        written = "`None`" if value is None else f"`{json.dumps(value)}`"
        assert rows[name].startswith(written), (name, rows[name])


def test_the_passed_dict_is_read_by_the_field_names() -> None:
    assert passed_options(dict.fromkeys(OPTION_NAMES, UNSET)) == {}
    with pytest.raises(KeyError):  # a keyword missing for a field cannot pass unseen
        passed_options({})


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("name", OPTION_NAMES)
def test_each_option_passed_to_evaluate_is_the_one_recorded(name: str) -> None:
    value = _other_value(name)
    with _quiet():
        result = receval.evaluate(TRUTH, PREDS, ["P@2"], **{name: value})
    assert result.options[name] == value
    expected = Options(**{name: value}).to_dict()  # and no other moved
    assert {n: result.options[n] for n in expected} == expected


# --- the doors that take the options as **options or a mapping: no copy ----------------------


def test_compare_and_evaluate_scores_take_the_options_without_naming_them() -> None:
    for function in (receval.compare, receval.evaluate_scores):
        params = _keywords(function)
        assert not set(params) & set(OPTION_NAMES), function.__name__
        assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        assert ":func:`receval.evaluate`" in (function.__doc__ or "")


def test_the_spark_engine_takes_the_passed_options_as_one_mapping() -> None:
    pytest.importorskip("pyspark")
    from receval.spark.driver import evaluate_spark

    params = _keywords(evaluate_spark)
    assert "explicit" in params and not set(params) & set(OPTION_NAMES)


@pytest.mark.parametrize("name", OPTION_NAMES)
def test_each_option_reaches_compare(name: str) -> None:
    value = _other_value(name)
    with _quiet():
        c = receval.compare(
            TRUTH, {"a": PREDS, "b": PREDS}, ["P@2"], n_resamples=10, **{name: value}
        )
    assert {m: r.options[name] for m, r in c.results.items()} == {"a": value, "b": value}


@pytest.mark.parametrize("name", OPTION_NAMES)
def test_each_option_reaches_evaluate_scores(name: str) -> None:
    pytest.importorskip("torch")
    value = _other_value(name)
    with _quiet():
        result = receval.evaluate_scores(TRUTH, SCORES, ["P@2"], device="cpu", **{name: value})
    assert result.options[name] == value


IMPRESSIONS = pd.DataFrame(
    {
        "user": [0, 0, 1, 1],
        "item": [0, 1, 0, 2],
        "rank": [1, 2, 1, 2],
        "served_at": pd.Timestamp("2026-01-01"),
    }
)
FEEDBACK = pd.DataFrame(
    {"user": [0, 1], "item": [0, 2], "value": [4.0, 5.0], "at": pd.Timestamp("2026-01-01 01:00")}
)


@pytest.mark.parametrize("name", OPTION_NAMES)
def test_each_option_reaches_monitor(name: str) -> None:
    value = _other_value(name)
    with _quiet():
        m = receval.monitor(
            IMPRESSIONS, FEEDBACK, ["P@2"], window="D", n_resamples=0, **{name: value}
        )
    assert m.options["options"] == {name: value}


def test_an_unknown_option_is_refused_at_every_door() -> None:
    with pytest.raises(TypeError, match="tie"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], tie="item")  # type: ignore[call-arg]
    with pytest.raises(receval.ReceValError, match="tie"):
        pytest.importorskip("torch")
        receval.evaluate_scores(TRUTH, SCORES, ["P@1"], device="cpu", tie="item")


# --- a flag of every command: one edit of receval.cli.options_table ---------------------------


def _inputs(folder: Path) -> dict[str, list[str]]:
    """Small files, and a run of each command on them."""
    users = [f"u{u}" for u in range(6)]
    files = {
        "truth.csv": "user,item\n"
        + "".join(f"{u},i{(k + j) % 5}\n" for k, u in enumerate(users) for j in range(2)),
        "a.csv": "user,item,score\n"
        + "".join(f"{u},i{j},{1 - j / 10}\n" for u in users for j in range(4)),
        "b.csv": "user,item,score\n"
        + "".join(f"{u},i{4 - j},{1 - j / 10}\n" for u in users for j in range(4)),
        "train.csv": "user,item\n" + "".join(f"{u},i9\n" for u in users),
        "log.csv": "request,item,position,reward,propensity\n"
        "1,a,1,1,0.5\n2,b,1,0,0.5\n3,a,1,0,0.5\n4,b,1,1,0.5\n",
        "target.csv": "request,item,position,probability\n"
        + "".join(f"{r},a,1,1.0\n" for r in range(1, 5)),
        "imp.csv": "user,item,rank,served_at\n"
        + "".join(
            f"{u},i{j},{j + 1},2026-01-0{1 + k % 3}T00:00:00\n"
            for k, u in enumerate(users)
            for j in range(3)
        ),
        "fb.csv": "user,item,value,at\n"
        + "".join(f"{u},i{k % 3},1,2026-01-0{1 + k % 3}T01:00:00\n" for k, u in enumerate(users)),
        "gate.toml": 'truth = "truth.csv"\npredictions = "b.csv"\nbaseline = "a.csv"\n'
        'resamples = 20\nchecks = ["P@1 >= 0"]\n',
        "gen.csv": "user,rank,text\nu,1,Heat\nv,1,Up (2009)\n",
        "movies.csv": "movieId,title\n1,Heat (1995)\n5,Up (2009)\n",
        "movie_truth.csv": "user,movieId\nu,1\nv,5\n",
        "ratings.csv": "user,item,timestamp\n"
        + "".join(f"u{u},i{i},{u * 10 + i}\n" for u in range(6) for i in range(4)),
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    f = {name: str(folder / name) for name in files}
    return {
        "check": ["check", f["gate.toml"]],
        "compare": [
            "compare",
            "-t",
            f["truth.csv"],
            "-p",
            f["a.csv"],
            "-p",
            f["b.csv"],
            "-m",
            "P@1",
            "--resamples",
            "20",
        ],
        "demo": ["demo"],
        "evaluate": ["evaluate", "-t", f["truth.csv"], "-p", f["a.csv"], "-m", "P@1"],
        "explain": ["explain", "trec_eval", "kaggle"],
        "monitor": [
            "monitor",
            "-i",
            f["imp.csv"],
            "--feedback",
            f["fb.csv"],
            "-m",
            "P@1",
            "--window",
            "D",
            "--resamples",
            "0",
        ],
        "offpolicy": [
            "offpolicy",
            "--log",
            f["log.csv"],
            "--target",
            f"a={f['target.csv']}",
            "--resamples",
            "0",
        ],
        "plot": [
            "plot",
            "-t",
            f["truth.csv"],
            "-p",
            f["a.csv"],
            "-m",
            "P@1",
            "-o",
            str(folder / "plot.png"),
        ],
        "resolve": [
            "resolve",
            f["gen.csv"],
            f["movie_truth.csv"],
            "--catalogue",
            f["movies.csv"],
            "--item-col",
            "movieId",
            "-m",
            "MRR",
        ],
        "sample": [
            "sample",
            "--train",
            f["train.csv"],
            "--test",
            f["truth.csv"],
            "--negatives",
            "1",
            "-o",
            str(folder / "candidates.csv"),
        ],
        "split": [
            "split",
            f["ratings.csv"],
            "--method",
            "random-user",
            "--test-fraction",
            "0.25",
            "--train-out",
            str(folder / "tr.csv"),
            "--test-out",
            str(folder / "te.csv"),
        ],
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    return _inputs(tmp_path_factory.mktemp("commands"))


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``--threads N`` planted in the table as a flag of every command, with an effect that
    records N while the command runs; the commands registered again, as their modules'
    imports register them. Returns what the effect saw."""
    import click

    from receval.cli import all_commands, main, options_table

    commands = all_commands()  # each module loaded before the table changes
    seen: list[Any] = []

    @contextlib.contextmanager
    def effect(params: Mapping[str, Any]) -> Iterator[None]:
        seen.append(params.get("threads"))
        yield

    monkeypatch.setitem(
        options_table.OPTIONS,
        "threads",
        lambda: click.option(
            "--threads",
            type=click.IntRange(1, None),
            default=None,
            help="Threads of the kernels (planted by a test).",
        ),
    )
    monkeypatch.setattr(options_table, "EVERY_COMMAND", (*options_table.EVERY_COMMAND, "threads"))
    monkeypatch.setitem(options_table.EFFECTS, "threads", effect)
    for name, command in commands.items():
        monkeypatch.setattr(command, "params", list(command.params))  # restored afterwards
        main.add_command(command, name)
    return seen


def test_a_run_is_written_for_every_command(runs: dict[str, list[str]]) -> None:
    assert set(runs) == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_flag_planted_in_the_table_reaches_every_command(
    command: str, runs: dict[str, list[str]], planted: list[Any]
) -> None:
    """Before: ``receval offpolicy`` named its parameters one by one and exited 1 on the
    planted flag (``TypeError: offpolicy() got an unexpected keyword argument 'threads'``)."""
    from click.testing import CliRunner

    from receval.cli import main

    shown = CliRunner().invoke(main, [command, "--help"])
    assert shown.exit_code == 0 and "--threads" in shown.output
    with _quiet():
        out = CliRunner().invoke(main, [*runs[command], "--threads", "3"])
    assert out.exit_code == 0, out.output
    assert planted == [3]


# --- receval offpolicy --repeats ----------------------------------------------------------------


def test_offpolicy_repeats_is_a_flag(tmp_path: Path) -> None:
    """Request 1 shows item a twice (slots drawn one by one). IPS by hand, each shown row's
    weight target probability / propensity times its reward, summed per request, averaged:
    request 1: 1/0.5 * 1 + 1/0.5 * 0 = 2; request 2: b is not in the target (0), a at
    position 2: 1/0.5 * 1 = 2; IPS = (2 + 2) / 2 = 2.0."""
    from click.testing import CliRunner

    from receval.cli import main
    from receval.offpolicy.estimate import REPEATS

    (tmp_path / "log.csv").write_text(
        "request,item,position,reward,propensity\n1,a,1,1,0.5\n1,a,2,0,0.5\n"
        "2,b,1,0,0.5\n2,a,2,1,0.5\n"
    )
    (tmp_path / "t.csv").write_text(
        "request,item,position,probability\n1,a,1,1.0\n1,a,2,1.0\n2,a,2,1.0\n"
    )
    args = [
        "offpolicy",
        "--log",
        str(tmp_path / "log.csv"),
        "--target",
        f"t={tmp_path / 't.csv'}",
        "-e",
        "ips",
        "--resamples",
        "0",
        "-f",
        "json",
    ]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2
    (line,) = refused.output.strip().splitlines()
    assert "repeats='allow'" in line
    assert CliRunner().invoke(main, [*args, "--repeats", "refuse"]).exit_code == 2
    allowed = CliRunner().invoke(main, [*args, "--repeats", "allow"])
    assert allowed.exit_code == 0, allowed.output
    (row,) = json.loads(allowed.output)["estimates"]
    assert row["value"] == 2.0
    assert REPEATS == ("refuse", "allow")
    bad = CliRunner().invoke(main, [*args, "--repeats", "yes"])
    assert bad.exit_code == 2 and bad.output.startswith("error: Invalid value for '--repeats'")
