"""The hostile-input battery of issue 20, as a table: each case is a command line, the exit code
it must end with, the one line it must print on stderr (a regex; exit 0 cases print notes and
are not held to one line), what stdout must (not) hold, and the files: every input byte for byte
as it was, and no file but the expected outputs.

The cases cover the failures the battery found on the newer commands (split, sample, compare,
monitor): ids through files, formula cells and control characters in outputs, click's usage
errors, ``--resamples`` out of range, empty ids, a timestamp error without its line. Python API
cases (``evaluate_scores``, ``compare``) and the round trips that need two commands follow the
table.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import receval
import receval.cli as cli
from receval.exceptions import ReceValError

#: the input files of every case (written fresh into each case's folder)
FILES: dict[str, str] = {
    "truth.csv": "user,item\nu1,i1\nu2,i2\nu3,i1\n",
    "a.csv": "user,item,score\nu1,i1,1\nu2,i1,1\nu3,i1,1\n",
    "b.csv": "user,item,score\nu1,i2,1\nu2,i2,1\nu3,i2,1\n",
    "=2.csv": "user,item,score\nu1,i1,1\nu2,i1,1\nu3,i1,1\n",
    "=1+2.csv": "user,item,score\nu1,i2,1\nu2,i2,1\nu3,i2,1\n",
    "x\x07y\rz.csv": "user,item,score\nu1,i2,1\nu2,i2,1\nu3,i1,1\n",
    # users whose ids a spreadsheet would run, and an integer column with a gap
    "ratings.csv": ("user,item,timestamp,n\n-a,i1,1,9007199254740993\n-a,i2,2,\n"
                    "@b,i3,3,7\n@b,i4,4,8\nu3,i5,5,1\nu3,i6,6,2\n"),
    "empty_user.csv": "user,item,timestamp\nu1,i1,1\n,i2,2\nu1,i3,3\n",
    "bad_time.csv": "user,item,timestamp\nu1,i1,1\nu1,i2,x\nu2,i3,3\n",
    "train.csv": "user,item\nu1,i1\nu2,i2\n",
    "test_empty.csv": "user,item\nu1,i3\n,i4\n",
    "imp.csv": ("user,item,rank,served_at,variant\nu1,i1,1,2024-01-01,=2\n"
                "u2,i1,1,2024-01-01,=1+2\nu3,i3,1,2024-01-02,\x07x\n"),
    "fb.csv": "user,item,value,at\nu1,i1,1,2024-01-01\nu2,i1,1,2024-01-01\nu3,i3,1,2024-01-02\n",
}

#: what a usage error's one line ends with
SEE_HELP = r" \(see '\S+( \S+)? --help'\)$"
#: a raw control character (tab and newline are CSV/table syntax here)
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass
class Case:
    args: list[str]
    code: int
    #: the one stderr line (regex, searched) for a failing case; None: not checked
    stderr: str | None = None
    #: files the command must create (relative to the case folder)
    outputs: list[str] = field(default_factory=list)
    #: a check of stdout
    stdout: Callable[[str], bool] | None = None


def _no_raw_control(out: str) -> bool:
    return not RAW_CONTROL.search(out)


def _neutralised_models(out: str) -> bool:
    cells = {c for line in out.splitlines()[1:] for c in line.split(",")[:2]}
    return {"'=2", "'=1+2"} <= cells and not {"=2", "=1+2"} & cells and _no_raw_control(out)


def _markdown_safe(out: str) -> bool:
    return "x\\x07y\\x0dz" in out and _no_raw_control(out)


def _variants_neutralised(out: str) -> bool:
    variants = {line.split(",")[2] for line in out.splitlines()[1:]}
    return variants == {"'=2", "'=1+2", "\\x07x"} and _no_raw_control(out)


COMPARE = ["compare", "-t", "truth.csv", "-p", "=2.csv", "-p", "=1+2.csv", "-p",
           "x\x07y\rz.csv", "-m", "P@1", "--resamples", "10"]
SPLIT = ["split", "ratings.csv", "--method", "leave-last-out", "--train-out", "out/tr.csv",
         "--test-out", "out/te.csv"]
MONITOR = ["monitor", "-i", "imp.csv", "--feedback", "fb.csv", "-m", "P@1", "--window", "7D",
           "--variant-col", "variant", "--resamples", "0"]

CASES: dict[str, Case] = {
    # --- outputs: formula cells neutralised, control characters escaped ---------------------
    "compare csv": Case([*COMPARE, "-f", "csv"], 0, stdout=_neutralised_models),
    "compare markdown": Case([*COMPARE, "-f", "markdown"], 0, stdout=_markdown_safe),
    "compare latex": Case([*COMPARE, "-f", "latex"], 0, stdout=_no_raw_control),
    "evaluate csv": Case(["evaluate", "-t", "truth.csv", "-p", "=2.csv", "-p", "x\x07y\rz.csv",
                          "-m", "P@1", "-f", "csv"], 0,
                         stdout=lambda out: out.splitlines()[0] == "metric,'=2,x\\x07y\\x0dz"),
    "evaluate markdown": Case(["evaluate", "-t", "truth.csv", "-p", "x\x07y\rz.csv", "-p",
                               "a.csv", "-m", "P@1", "-f", "markdown"], 0,
                              stdout=_no_raw_control),
    "monitor csv": Case([*MONITOR, "-f", "csv"], 0, stdout=_variants_neutralised),
    # --- ids through files -------------------------------------------------------------------
    "split writes": Case(SPLIT, 0, outputs=["out/tr.csv", "out/te.csv"]),
    "split empty id": Case(["split", "empty_user.csv", "--method", "leave-last-out",
                            "--train-out", "tr.csv", "--test-out", "te.csv"], 2,
                           r"^error: column 'user' has an empty id at line 3 of \S*"
                           r"empty_user\.csv \(1 rows in all\); every row needs one$"),
    "split timestamp line": Case(["split", "bad_time.csv", "--method", "leave-last-out",
                                  "--train-out", "tr.csv", "--test-out", "te.csv"], 2,
                                 r"^error: timestamp column 'timestamp' holds 'x' at line 3 of "
                                 r"\S*bad_time\.csv, neither a number nor a date"),
    "sample empty id": Case(["sample", "--train", "train.csv", "--test", "test_empty.csv",
                             "-o", "c.csv", "--negatives", "1"], 2,
                            r"^error: column 'user' has an empty id at line 3 of \S*"
                            r"test_empty\.csv"),
    # --- messages: click usage errors in one line, exit 2 ------------------------------------
    "resamples 5e9": Case([*COMPARE[:-2], "--resamples", "5e9"], 2,
                          r"^error: Invalid value for '--resamples': '5e9' is not a valid "
                          r"integer range\." + SEE_HELP),
    "resamples 5000000000": Case([*COMPARE[:-2], "--resamples", "5000000000"], 2,
                                 r"^error: Invalid value for '--resamples': 5000000000 is not "
                                 r"in the range 1<=x<=10000000\." + SEE_HELP),
    "monitor resamples": Case([*MONITOR[:-2], "--resamples", "99999999999"], 2,
                              r"^error: Invalid value for '--resamples'.*" + SEE_HELP),
    "unknown option": Case(["evaluate", "-t", "truth.csv", "-p", "a.csv", "--frobnicate"], 2,
                           r"^error: No such option '--frobnicate'\. Did you mean "
                           r"'--format'\?" + SEE_HELP),
    "missing option": Case(["evaluate", "-p", "a.csv"], 2,
                           r"^error: Missing option '--truth' / '-t'\." + SEE_HELP),
    "unknown command": Case(["evalute"], 2, r"^error: No such command 'evalute'\. Did you "
                            r"mean 'evaluate'\?" + SEE_HELP),
    "bad choice": Case([*SPLIT[:2], "--method", "nope", *SPLIT[4:]], 2,
                       r"^error: Invalid value for '--method': 'nope' is not one of .*"
                       + SEE_HELP),
    "bad format": Case(["evaluate", "-t", "truth.csv", "-p", "a.csv", "-f", "xml"], 2,
                       r"^error: Invalid value for '--format' / '-f': 'xml' is not one of .*"
                       + SEE_HELP),
    "not an integer": Case([*SPLIT, "--seed", "x"], 2,
                           r"^error: Invalid value for '--seed': 'x' is not a valid "
                           r"integer( range)?\." + SEE_HELP),
    "out of range": Case(["sample", "--train", "train.csv", "--test", "truth.csv", "-o",
                          "c.csv", "--negatives", "0"], 2,
                         r"^error: Invalid value for '--negatives': 0 is not in the range "
                         r"x>=1\." + SEE_HELP),
    "bad threshold": Case(["evaluate", "-t", "truth.csv", "-p", "a.csv",
                           "--relevance-threshold", "abc"], 2,
                          r"^error: Invalid value for '--relevance-threshold': 'abc' is "
                          r"neither a number nor 'user_mean'" + SEE_HELP),
    "extra argument": Case([*SPLIT, "surplus"], 2,
                           r"^error: Got unexpected extra argument \(surplus\)" + SEE_HELP),
    "missing argument": Case(["split", "--method", "random-user"], 2,
                             r"^error: Missing argument 'FILE'\." + SEE_HELP),
    "flag value": Case(["compare", "-t", "truth.csv", "-p", "a.csv", "-p", "b.csv",
                        "--alpha", "2"], 2,
                       r"^error: Invalid value for '--alpha': 2\.0 is not in the range "
                       r"0<x<1\." + SEE_HELP),
    "option without value": Case(["evaluate", "-t", "truth.csv", "-p"], 2,
                                 r"^error: Option '-p' requires an argument\." + SEE_HELP),
    "unknown silence": Case(["evaluate", "-t", "truth.csv", "-p", "a.csv", "--silence",
                             "nope"], 2,
                            r"^error: Invalid value for '--silence': 'nope' is not one of .*"
                            + SEE_HELP),
}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", list(CASES))
def test_battery(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    for file, text in FILES.items():
        (tmp_path / file).write_text(text)
    before = _snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.main, case.args)
    assert result.exit_code == case.code, (result.stdout, result.stderr)
    if case.stderr is not None:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and re.search(case.stderr, lines[0]), result.stderr
    if case.stdout is not None:
        assert case.stdout(result.stdout), result.stdout
    after = _snapshot(tmp_path)
    assert {k: after.get(k) for k in before} == before  # every input as it was
    assert sorted(set(after) - set(before)) == sorted(case.outputs)  # nothing stray


# --- ids through files: the round trips --------------------------------------------------------


def test_split_ids_read_back_as_they_were(tmp_path: Path) -> None:
    """A model's predictions for users -a and @b match the test rows split wrote (the issue:
    P@1 1/3 instead of 1, the ids read back as '-a and '@b)."""
    (tmp_path / "r.csv").write_text(FILES["ratings.csv"])
    runner = CliRunner()
    split = runner.invoke(cli.main, ["split", str(tmp_path / "r.csv"), "--method",
                                     "leave-last-out", "--train-out", str(tmp_path / "tr.csv"),
                                     "--test-out", str(tmp_path / "te.csv")])
    assert split.exit_code == 0, split.output
    assert "'-a" in (tmp_path / "te.csv").read_text()  # neutralised for spreadsheets
    (tmp_path / "p.csv").write_text("user,item,score\n-a,i2,1\n@b,i4,1\nu3,i6,1\n")
    result = runner.invoke(cli.main, ["evaluate", "-t", str(tmp_path / "te.csv"), "-p",
                                      str(tmp_path / "p.csv"), "-m", "P@1", "-f", "json"])
    assert result.exit_code == 0, result.output
    assert '"P@1": 1.0' in result.stdout


def test_split_keeps_every_other_column_exact(tmp_path: Path) -> None:
    """An integer column with a gap stays integers (was 9.007199254740992e+15), in CSV and
    Parquet; text ids keep their type."""
    (tmp_path / "r.csv").write_text(FILES["ratings.csv"])
    for suffix in ("csv", "parquet"):
        out = {side: tmp_path / f"{side}.{suffix}" for side in ("tr", "te")}
        result = CliRunner().invoke(cli.main, ["split", str(tmp_path / "r.csv"), "--method",
                                               "leave-last-out", "--train-out", str(out["tr"]),
                                               "--test-out", str(out["te"])])
        assert result.exit_code == 0, result.output
        if suffix == "csv":
            lines = out["tr"].read_text().splitlines()
            assert lines[1] == '"\'-a","i1",1,9007199254740993'
            assert lines[2] == '"\'@b","i3",3,7'
            assert out["te"].read_text().splitlines()[1] == '"\'-a","i2",2,'
        else:
            train = pq.read_table(out["tr"])
            assert train.schema.field("n").type == pa.int64()
            assert train.schema.field("user").type == pa.string()
            assert train.column("n").to_pylist() == [9007199254740993, 7, 1]
            assert pq.read_table(out["te"]).column("n").to_pylist() == [None, 8, 2]


def test_a_literal_leading_quote_is_kept_by_doubling_it(tmp_path: Path) -> None:
    """The reader takes one quote off a quoted formula cell: the writer doubles a quote that is
    already there, so an id '-a (with its quote) survives a round trip too."""
    from receval.io import read_truth
    from receval.io.output import write_table

    ids = ["-a", "'-a", "''@b", "'x", "=1+1", "u"]
    path = write_table(pa.table({"user": ids, "item": ["i"] * len(ids)}), tmp_path / "t.csv")
    assert read_truth(path).column("user").to_pylist() == ids


def test_split_api_refuses_empty_ids() -> None:
    with pytest.raises(ReceValError, match=r"column 'item' has an empty id at row 1 "):
        receval.split.random_holdout({"user": [1, 2], "item": ["a", ""]}, test_count=1)
    with pytest.raises(ReceValError, match=r"column 'user' has an empty id at row 0 "):
        receval.sampled.sample_candidates({"user": ["u"], "item": ["a"]},
                                          {"user": [""], "item": ["b"]}, 1)


# --- messages: the Python API and two-command cases --------------------------------------------


def test_evaluate_scores_empty_matrix_is_a_receval_error() -> None:
    pytest.importorskip("torch")
    with pytest.raises(ReceValError, match=r"scores has no rows \(0 users x 5 items\)"):
        receval.evaluate_scores({"user": [0], "item": [0]}, np.zeros((0, 5), np.float32),
                                ["P@1"], device="cpu")


@pytest.mark.parametrize("budget", [-5, 0, True, 1.5])
def test_evaluate_scores_refuses_a_bad_memory_budget(budget: object) -> None:
    pytest.importorskip("torch")
    with pytest.raises(ReceValError, match=r"^memory_budget must be a positive integer"):
        receval.evaluate_scores({"user": [0], "item": [0]}, np.ones((1, 3), np.float32),
                                ["P@1"], device="cpu", memory_budget=budget)


def test_compare_caps_n_resamples() -> None:
    truth = {"user": [1, 2], "item": [1, 1]}
    a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
    with pytest.raises(ReceValError, match=r"^n_resamples must be at most 10,000,000, got "
                       r"5,000,000,000"):
        receval.compare(truth, {"a": a, "b": a}, ["P@1"], n_resamples=5_000_000_000)


def test_a_comma_list_is_the_same_metric_set_for_a_monitor_state(tmp_path: Path) -> None:
    """``-m P@1,R@1`` then ``-m P@1 -m R@1`` on one state: the same metrics (was refused as
    another metric set)."""
    days = {1: FILES["imp.csv"], 9: FILES["imp.csv"].replace("2024-01-0", "2024-01-1")}
    for day, served in days.items():
        (tmp_path / f"imp{day}.csv").write_text(served)
        (tmp_path / f"fb{day}.csv").write_text(
            FILES["fb.csv"].replace("2024-01-0", "2024-01-1" if day == 9 else "2024-01-0"))

    def run(day: int, *metrics: str) -> object:
        return CliRunner().invoke(cli.main, [
            "monitor", "-i", str(tmp_path / f"imp{day}.csv"), "--feedback",
            str(tmp_path / f"fb{day}.csv"), "--window", "7D", "--resamples", "0", "--state",
            str(tmp_path / "s.sqlite"), "-f", "csv", *metrics])

    first = run(1, "-m", "P@1,R@1")
    assert first.exit_code == 0, first.output
    again = run(9, "-m", "P@1", "-m", "R@1")
    assert again.exit_code == 0, again.stderr
    assert again.stdout.startswith("window_start,window_end,P@1,R@1,")


def test_text_tables_escape_every_control_character() -> None:
    """The one writer: every C0/C1 control, DEL and bidi override escaped in every format."""
    from receval.io.text_tables import csv_text, latex_cell, markdown_cell

    hostile = "".join(map(chr, [*range(0, 32), *range(127, 160), 0x202E])) + "=x"
    for out in (csv_text(["h"], [[hostile]]), markdown_cell(hostile), latex_cell(hostile)):
        body = out.replace("\n", "") if out.endswith("\n") else out
        assert not RAW_CONTROL.search(body.replace("\n", "")) and "\u202e" not in body
    assert pd.Series(csv_text(["m"], [["=2"], ["-a"], [-1]]).splitlines()).tolist() == \
        ["m", "'=2", "'-a", "-1"]
