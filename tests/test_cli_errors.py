"""Every bad input exits 2 with one line on stderr and no traceback; --debug shows it."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from receval.cli import main
from receval.exceptions import ReceValError

GOOD_TRUTH = "user,item,rating\nu1,i1,4\nu1,i2,2\nu2,i1,5\n"
GOOD_PREDS = "user,item,score\nu1,i1,0.9\nu1,i3,0.5\nu2,i2,0.1\n"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "truth.csv").write_text(GOOD_TRUTH)
    (tmp_path / "preds.csv").write_text(GOOD_PREDS)
    return tmp_path


def _bad(tmp_path: Path, case: str) -> list[str]:
    """Arguments of `receval evaluate` for one bad-input case."""
    t, p = str(tmp_path / "truth.csv"), str(tmp_path / "preds.csv")
    bad = tmp_path / "bad"

    def link(name: str, to: str) -> str:
        path = bad.with_name(name)
        path.unlink(missing_ok=True)
        path.symlink_to(to)
        return str(path)

    def write(name: str, data: bytes) -> str:
        path = bad.with_name(name)
        path.write_bytes(data)
        return str(path)

    cases: dict[str, list[str]] = {
        "missing truth file": ["-t", str(tmp_path / "nope.csv"), "-p", p],
        "missing predictions file": ["-t", t, "-p", str(tmp_path / "nope.csv")],
        "directory": ["-t", str(tmp_path), "-p", p],
        "binary file": ["-t", t, "-p", write("b.csv", b"\x00\x9f\x00\x01" * 100)],
        "not parquet": ["-t", t, "-p", write("b.parquet", b"PAR1 garbage")],
        "broken gzip": ["-t", t, "-p", write("b.csv.gz", gzip.compress(GOOD_PREDS.encode())[:30])],
        "wrong delimiter": ["-t", t, "-p", p, "--delimiter", ";"],
        "missing column": ["-t", t, "-p", write("noscore.csv", b"user,item,value\nu1,i1,1\n")],
        "wrong column flag": ["-t", t, "-p", p, "--score-col", "prediction"],
        "non-numeric score": ["-t", t, "-p", write("s.csv", b"user,item,score\nu1,i1,high\n")],
        "non-numeric rating": ["-t", write("r.csv", b"user,item,rating\nu1,i1,good\n"), "-p", p,
                               "--relevance-threshold", "3"],
        "empty file": ["-t", write("e.csv", b""), "-p", p],
        "header only": ["-t", t, "-p", write("h.csv", b"user,item,score\n")],
        "ragged rows": ["-t", t, "-p", write("g.csv", b"user,item,score\nu1,i1\n")],
        "nan score": ["-t", t, "-p", write("n.csv", b"user,item,score\nu1,i1,NaN\n")],
        "duplicate rows": ["-t", t, "-p", write("d.csv", b"user,item,score\nu1,i1,1\nu1,i1,2\n")],
        "unknown metric": ["-t", t, "-p", p, "-m", "precisoin@10"],
        "bad cutoff": ["-t", t, "-p", p, "-m", "P@0"],
        "no shared user": ["-t", t, "-p", write("o.csv", b"user,item,score\nzz,i1,1\n"),
                           "--users", "both"],
        "qrels as run": ["-t", t, "-p", write("q.txt", b"q1 0 d1 1\n"),
                         "--predictions-format", "trec"],
        "malformed trec": ["-t", write("t.qrels", b"q1 0 d1 1\nq1 0 d2\n"), "-p", p],
        "malformed jsonl": ["-t", t, "-p", write("j.jsonl", b'{"user": "u1", "item":\n')],
        "per-user extension": ["-t", t, "-p", p, "--per-user", str(tmp_path / "x.xlsx")],
        "bad option value": ["-t", t, "-p", p, "--profile", "trec_eval", "--score-threshold",
                             "inf"],
        "per-user overwrites the truth": ["-t", t, "-p", p, "--per-user", t],
        "report overwrites the predictions through a link": [
            "-t", t, "-p", p, "--report", link("r.html", p)],
        "report suffix": ["-t", t, "-p", p, "--report", str(tmp_path / "r.csv")],
        "cutoff beyond int64": ["-t", t, "-p", p, "-m", "P@9223372036854775808"],
        "one column for user and item": ["-t", t, "-p", p, "--user-col", "user",
                                         "--item-col", "user"],
        "one column for item and score": ["-t", t, "-p", p, "--score-col", "item"],
    }
    return cases[case]


CASES = [
    "missing truth file", "missing predictions file", "directory", "binary file", "not parquet",
    "broken gzip", "wrong delimiter", "missing column", "wrong column flag", "non-numeric score",
    "non-numeric rating", "empty file", "header only", "ragged rows", "nan score",
    "duplicate rows", "unknown metric", "bad cutoff", "no shared user", "qrels as run",
    "malformed trec", "malformed jsonl", "per-user extension", "bad option value",
    "per-user overwrites the truth", "report overwrites the predictions through a link",
    "report suffix", "cutoff beyond int64", "one column for user and item",
    "one column for item and score",
]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_exits_2_with_one_line(files: Path, case: str) -> None:
    result = CliRunner().invoke(main, ["evaluate", *_bad(files, case), "-m", "P@1"])
    assert result.exit_code == 2, (case, result.output)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, (case, result.stderr)
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output


EXPECTED_WORDS = {
    "missing truth file": "truth file not found",
    "wrong delimiter": "is the delimiter right",
    "missing column": "no column 'score'",
    "wrong column flag": "no column 'prediction'",
    "non-numeric score": "'score' must be numeric",
    "empty file": "is empty",
    "unknown metric": "did you mean",
    "qrels as run": "TREC qrels",
    "per-user overwrites the truth": "is the input file",
    "report overwrites the predictions through a link": "is the input file",
    "report suffix": "--report must end in .html, .htm",
    "cutoff beyond int64": "9223372036854775808",
    "one column for user and item": "--user-col and --item-col both name the column 'user'",
    "one column for item and score": "--item-col and --score-col both name the column 'item'",
}


@pytest.mark.parametrize("case", list(EXPECTED_WORDS))
def test_messages_say_what_is_wrong(files: Path, case: str) -> None:
    result = CliRunner().invoke(main, ["evaluate", *_bad(files, case)])
    assert EXPECTED_WORDS[case] in result.stderr


def test_unreadable_file(files: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads any file: permissions cannot make one unreadable")
    locked = files / "locked.csv"
    locked.write_text(GOOD_PREDS)
    locked.chmod(0)
    result = CliRunner().invoke(main, ["evaluate", "-t", str(files / "truth.csv"),
                                       "-p", str(locked)])
    assert result.exit_code == 2 and "permission denied" in result.stderr


def test_debug_shows_the_traceback(files: Path) -> None:
    args = ["evaluate", *_bad(files, "missing truth file"), "--debug"]
    result = CliRunner().invoke(main, args)
    assert isinstance(result.exception, ReceValError)
    process = subprocess.run([sys.executable, "-m", "receval.cli", *args], capture_output=True,
                             text=True, check=False)
    assert process.returncode == 1 and "Traceback" in process.stderr


def test_real_process_exit_code_and_stderr(files: Path) -> None:
    args = _bad(files, "non-numeric score")
    process = subprocess.run([sys.executable, "-m", "receval.cli", "evaluate", *args],
                             capture_output=True, text=True, check=False)
    assert process.returncode == 2
    assert process.stdout == ""
    assert process.stderr.count("\n") == 1 and "Traceback" not in process.stderr


def test_plot_bad_output_extension(files: Path) -> None:
    result = CliRunner().invoke(main, ["plot", "-t", str(files / "truth.csv"), "-p",
                                       str(files / "preds.csv"), "-o", str(files / "x.pdf")])
    assert result.exit_code == 2 and ".png, .svg" in result.stderr


def test_bad_input_leaves_the_inputs_untouched(files: Path) -> None:
    for case in ("per-user overwrites the truth",
                 "report overwrites the predictions through a link"):
        CliRunner().invoke(main, ["evaluate", *_bad(files, case)])
        assert (files / "truth.csv").read_text() == GOOD_TRUTH
        assert (files / "preds.csv").read_text() == GOOD_PREDS


def test_markup_in_the_report_path_is_a_path(files: Path) -> None:
    """`r[/x].html` is a path (directory `r[`), not rich markup: written, exit 0."""
    (files / "r[").mkdir()
    result = CliRunner().invoke(main, ["evaluate", "-t", str(files / "truth.csv"), "-p",
                                       str(files / "preds.csv"), "-m", "P@1",
                                       "--relevance-threshold", "3",
                                       "--report", str(files / "r[/x].html")])
    assert result.exit_code == 0, result.output
    assert "report written to" in result.stderr and "r[/x].html" in result.stderr
    assert (files / "r[" / "x].html").is_file()


@pytest.mark.parametrize("command", ["evaluate", "plot"])
def test_tex_in_a_model_name(files: Path, command: str) -> None:
    """A model named `rev$$` (or `a$b`) is text in the plots: no mathtext error, exit 0."""
    for name in ("rev$$", "a$b"):
        (files / f"{name}.csv").write_text(GOOD_PREDS)
    per_user = files / "per_user.csv"
    out = ["--report", str(files / "r.html"), "--per-user", str(per_user)] \
        if command == "evaluate" else ["-o", str(files / "p.svg")]
    result = CliRunner().invoke(main, [command, "-t", str(files / "truth.csv"), "-p",
                                       str(files / "rev$$.csv"), "-p", str(files / "a$b.csv"),
                                       "--relevance-threshold", "3", *out])
    assert result.exit_code == 0, result.output


def test_write_error_names_the_file_and_exits_2(files: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk while writing: exit 2, one line naming the file, the old file intact."""
    import errno

    import pyarrow.csv as pacsv

    def full(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    target = files / "per_user.csv"
    target.write_text("old\n")
    monkeypatch.setattr(pacsv, "write_csv", full)
    result = CliRunner().invoke(main, ["evaluate", "-t", str(files / "truth.csv"), "-p",
                                       str(files / "preds.csv"), "-m", "P@1",
                                       "--per-user", str(target)])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: --per-user: cannot write {target}: no space left on device"]
    assert target.read_text() == "old\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_output_directory(files: Path) -> None:
    locked = files / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        result = CliRunner().invoke(main, ["evaluate", "-t", str(files / "truth.csv"), "-p",
                                           str(files / "preds.csv"), "--per-user",
                                           str(locked / "x.csv")])
    finally:
        locked.chmod(0o755)
    assert result.exit_code == 2 and str(locked / "x.csv") in result.stderr


@pytest.mark.parametrize("error, code", [
    ("arrow", 2), ("csv", 2), ("bug", 1)])
def test_library_errors_on_bad_data_exit_2_and_bugs_exit_1(error: str, code: int) -> None:
    """Parsers' errors on malformed data are bad input; anything else is a bug: one line."""
    import csv

    import click
    import pyarrow as pa

    from receval.cli import _errors_exit_2

    errors = {"arrow": pa.lib.ArrowInvalid("CSV parse error: expected 3 columns, got 2"),
              "csv": csv.Error("field larger than field limit (131072)"),
              "bug": KeyError("user")}

    @click.command()
    @click.option("--debug", is_flag=True)
    @_errors_exit_2
    def command(debug: bool) -> None:
        raise errors[error]

    result = CliRunner().invoke(command, [])
    assert result.exit_code == code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in lines[0]
    assert ("--debug" in lines[0]) == (code == 1)
