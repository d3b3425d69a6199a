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
    }
    return cases[case]


CASES = [
    "missing truth file", "missing predictions file", "directory", "binary file", "not parquet",
    "broken gzip", "wrong delimiter", "missing column", "wrong column flag", "non-numeric score",
    "non-numeric rating", "empty file", "header only", "ragged rows", "nan score",
    "duplicate rows", "unknown metric", "bad cutoff", "no shared user", "qrels as run",
    "malformed trec", "malformed jsonl", "per-user extension", "bad option value",
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
