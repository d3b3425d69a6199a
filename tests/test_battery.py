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

import gzip
import io
import math
import os
import re
import sqlite3
import threading
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


def _parquet(columns: dict[str, list[object]]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue()


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
    # --- issue 33's battery: gates, logs, off-policy, times -----------------------------------
    "gate.toml": 'truth = "truth.csv"\npredictions = "a.csv"\nchecks = ["P@1 >= 0"]\n',
    "truthx.xml": "user,item\nu1,i1\nu2,i2\nu3,i1\n",
    "gate_x.toml": 'truth = "truthx.xml"\npredictions = "a.csv"\nchecks = ["P@1 >= 0"]\n',
    "gate_d.toml": 'truth = "d/receval.json"\npredictions = "a.csv"\nchecks = ["P@1 >= 0"]\n',
    "deep_arrays.toml": "x = " + "[" * 50_000 + "]" * 50_000 + "\n",
    "deep_tables.toml": "x = " + "{a = " * 3_000 + "1" + " }" * 3_000 + "\n",
    "truth5.toml": 'truth = 5\npredictions = "a.csv"\nchecks = ["P@1 >= 0"]\n',
    "strata_bad.csv": "user,group\nu1,a\nu2,b,extra\nu3,c\n",
    "strata_bad.toml": ('truth = "truth.csv"\npredictions = "a.csv"\nstrata = "strata_bad.csv"\n'
                        'checks = ["P@1[*] >= 0"]\n'),
    "resamples_max.toml": ('truth = "truth.csv"\npredictions = "a.csv"\nbaseline = "b.csv"\n'
                           'resamples = 9223372036854775807\nchecks = ["P@1 >= baseline"]\n'),
    "resamples_1e9.toml": ('truth = "truth.csv"\npredictions = "a.csv"\nbaseline = "b.csv"\n'
                           'resamples = 1000000000\nchecks = ["P@1 >= baseline"]\n'),
    "train_renamed.csv": "userId,movieId\nu1,i9\nu1,i8\nu2,i9\nu3,i7\nu3,i6\nu3,i5\n",
    "activity.toml": ('truth = "truth.csv"\npredictions = "a.csv"\ntrain = "train_renamed.csv"\n'
                      'strata = "activity"\nchecks = ["P@1[*] >= 0"]\n'
                      '[options]\ntrain_columns = {user = "userId", item = "movieId"}\n'),
    "d/receval.json": "".join(f'{{"user": "u{u}", "item": "i1"}}\n' for u in (1, 2, 3)),
    "d/metrics.json": "".join(f'{{"user": "u{u}", "item": "i1", "score": 1}}\n'
                              for u in (1, 2, 3)),
    "strata.csv": "user,group\nu1,a\nu2,b\nu3,b\n",
    "y3000.csv": ("user,item,timestamp\nu1,i1,2024-01-01\nu1,i2,3000-01-01\nu2,i3,2024-01-02\n"
                  "u2,i4,2024-01-03\n"),
    "imp3000.csv": ("user,item,rank,served_at\nu1,i1,1,2024-01-01T00:00:00Z\n"
                    "u2,i1,1,3000-01-01T00:00:00Z\n"),
    "fb3000.csv": "user,item,value,at\nu1,i1,1,2024-01-01T01:00:00Z\n",
    "log.csv": ("request,item,position,reward,propensity,grp\n1,a,1,1,0.5,\"\t=1\"\n"
                "1,b,2,0,0.5,\"\t=1\"\n2,a,1,0,0.5,\u009b\n2,c,2,1,0.5,\u009b\n"
                "3,b,1,1,0.5,\u202ex\n3,c,2,0,0.5,\u202ex\n"),
    "log_twice.csv": ("request,item,position,reward,propensity\n1,a,1,1,0.5\n1,a,2,0,0.5\n"
                      "2,a,1,0,0.5\n"),
    "target.csv": ("request,item,position,probability\n1,a,1,1\n1,b,2,1\n2,a,1,1\n2,c,2,1\n"
                   "3,b,1,1\n3,c,2,1\n"),
    "target_r.csv": "request,item,position,probability\nr1,a,1,1\nr2,a,1,1\n",
    "target_mass.csv": ("request,item,position,probability\n1,a,1,0.9\n1,c,1,0.9\n"
                        "2,a,1,1\n"),
    "scores.csv": "request,item,score\n1,a,1e308\n1,b,-1e308\n2,a,1\n2,c,2\n",
}

#: binary input files of every case
BYTES: dict[str, bytes] = {
    "log.csv.gz": gzip.compress(FILES["log.csv"].encode())[:-12],
    "imp.csv.gz": gzip.compress(FILES["imp.csv"].encode())[:-12],
    "tt.parquet": _parquet({"user": ["u1", "u2"], "item": ["i1", "i2"]}),
    "pp.parquet": _parquet({"user": [1, 2], "item": ["i1", "i2"], "score": [1.0, 1.0]}),
    "e/per_user.parquet": _parquet({"user": ["u1", "u2", "u3"], "item": ["i1"] * 3,
                                    "score": [1.0] * 3}),
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
    # --- issue 33: nothing an input is overwritten ---------------------------------------------
    "check junit onto the truth": Case(["check", "gate_x.toml", "--junit", "truthx.xml"], 2,
                                       r"^error: --junit \S*truthx\.xml is the input file"),
    "log json onto an input": Case(["evaluate", "-t", "d/receval.json", "-p", "a.csv", "-m",
                                    "P@1", "--log", "json", "--log-dir", "d"], 2,
                                   r"^error: --log json \(receval\.json\) \S*receval\.json is "
                                   r"the input file"),
    "log dvc onto an input": Case(["evaluate", "-t", "truth.csv", "-p", "d/metrics.json", "-m",
                                   "P@1", "--log", "dvc", "--log-dir", "d"], 2,
                                  r"^error: --log dvc \(metrics\.json\) \S*metrics\.json is "
                                  r"the input file"),
    "log json onto per_user.parquet": Case(["evaluate", "-t", "truth.csv", "-p",
                                            "e/per_user.parquet", "-m", "P@1", "--log", "json",
                                            "--log-dir", "e"], 2,
                                           r"^error: --log json \(per_user\.parquet\) "
                                           r"\S*per_user\.parquet is the input file"),
    "check log json onto a gate input": Case(["check", "gate_d.toml", "--log", "json",
                                              "--log-dir", "d"], 2,
                                             r"^error: --log json \(receval\.json\) "
                                             r"\S*receval\.json is the input file"),
    "junit not written on exit 2": Case(["check", "gate.toml", "--junit", "out.xml", "--log",
                                         "json", "--log-dir", "truth.csv/sub"], 2,
                                        r"truth\.csv"),
    # --- state, off-policy flags: NaN refused --------------------------------------------------
    "lock timeout nan": Case([*MONITOR, "--state", "s.sqlite", "--lock-timeout", "nan"], 2,
                             r"^error: Invalid value for '--lock-timeout': 'nan' is not a "
                             r"number\." + SEE_HELP),
    "switch threshold nan": Case(["offpolicy", "--log", "log.csv", "--target", "t=target.csv",
                                  "--switch-threshold", "nan"], 2,
                                 r"^error: Invalid value for '--switch-threshold': 'nan' is not "
                                 r"a number\." + SEE_HELP),
    # --- off-policy: one line for each bad target or log ---------------------------------------
    "offpolicy no matching request": Case(["offpolicy", "--log", "log.csv", "--target",
                                           "t=target_r.csv"], 2,
                                          r"^error: target 't': none of its 2 row\(s\) names a "
                                          r"request of the log \(first: request 'r1'"),
    "offpolicy mass above 1": Case(["offpolicy", "--log", "log.csv", "--target",
                                    "t=target_mass.csv"], 2,
                                   r"^error: target 't': 2 row\(s\) at a position whose "
                                   r"probabilities add up to more than 1 \(1\.8 at position 1"),
    "offpolicy softmax overflow": Case(["offpolicy", "--log", "log.csv", "--target",
                                        "t=scores.csv", "--rule", "softmax", "--temperature",
                                        "1e-300"], 2,
                                       r"^error: target 't': \d+ row\(s\) whose score / "
                                       r"temperature \(1e-300\) overflows"),
    "offpolicy item twice in a list": Case(["offpolicy", "--log", "log_twice.csv", "--target",
                                            "t=target.csv"], 2,
                                           r"^error: log: item .* served twice in one list "
                                           r"\(request .*\) at row \d+ \(1 repeated rows"),
    "offpolicy csv": Case(["offpolicy", "--log", "log.csv", "--target", "@t=target.csv", "--by",
                           "grp", "-f", "csv", "--resamples", "0"], 0,
                          stdout=lambda out: "\\x09=1" in out and "\\x9b" in out and
                          "\\u202e" in out and ",'@t," in out and _no_raw_control(out) and
                          "\u202e" not in out),
    # --- readers: a truncated gzip is one line, times out of range refused ---------------------
    "offpolicy truncated gzip": Case(["offpolicy", "--log", "log.csv.gz", "--target",
                                      "t=target.csv"], 2,
                                     r"^error: cannot read log file \S*log\.csv\.gz: "),
    "monitor truncated gzip": Case(["monitor", "-i", "imp.csv.gz", "--feedback", "fb.csv", "-m",
                                    "P@1", "--window", "7D", "--resamples", "0"], 2,
                                   r"^error: cannot read impressions file \S*imp\.csv\.gz: "),
    "split year 3000": Case(["split", "y3000.csv", "--method", "leave-last-out", "--train-out",
                             "tr.csv", "--test-out", "te.csv"], 2,
                            r"^error: timestamp column 'timestamp' holds '3000-01-01' at line 3 "
                            r"of \S*y3000\.csv, outside the dates receval can hold "
                            r"\(1677-09-22 \.\. 2262-04-11"),
    "monitor year 3000": Case(["monitor", "-i", "imp3000.csv", "--feedback", "fb3000.csv", "-m",
                               "P@1", "--window", "7D", "--resamples", "0"], 2,
                              r"^error: impressions: column 'served_at' is outside the supported "
                              r"times 1677-09-22 \.\. 2262-04-11 at row 1 \(value "
                              r"'3000-01-01T00:00:00Z'"),
    # --- gates ---------------------------------------------------------------------------------
    "gate nested arrays": Case(["check", "deep_arrays.toml"], 2,
                               r"^error: deep_arrays\.toml: not valid TOML for a gate: arrays or "
                               r"tables nested too deep$"),
    "gate nested tables": Case(["check", "deep_tables.toml"], 2,
                               r"^error: deep_tables\.toml: not valid TOML for a gate"),
    "gate truth = 5": Case(["check", "truth5.toml"], 2,
                           r"^error: truth5\.toml line 1: 'truth' must be a file \(a quoted "
                           r"path\), got 5$"),
    "gate malformed strata": Case(["check", "strata_bad.toml"], 2,
                                  r"^error: cannot read strata file \S*strata_bad\.csv: "),
    "gate resamples 2**63-1": Case(["check", "resamples_max.toml"], 2,
                                   r"^error: resamples_max\.toml line 4: 'resamples' must be at "
                                   r"most 10,000,000, got 9,223,372,036,854,775,807$"),
    "gate resamples 1e9": Case(["check", "resamples_1e9.toml"], 2,
                               r"^error: resamples_1e9\.toml line 4: 'resamples' must be at most "
                               r"10,000,000, got 1,000,000,000$"),
    "gate activity with renamed training columns": Case(["check", "activity.toml"], 0),
    # --- fairness, id types ----------------------------------------------------------------------
    "disparity with a catalogue metric only": Case(
        ["evaluate", "-t", "truth.csv", "-p", "a.csv", "-m", "coverage@1", "--strata",
         "strata.csv", "--disparity", "welch"], 2,
        r"^error: model 'a': no per-user metric to compare between groups of users \(evaluated: "
        r"coverage@1"),
    "parquet integer ids against text ids": Case(
        ["evaluate", "-t", "tt.parquet", "-p", "pp.parquet", "-m", "P@1"], 2,
        r"^error: user ids of mismatched types: predictions \(parquet\) stores integers, "
        r"truth has strings"),
    "unknown silence": Case(["evaluate", "-t", "truth.csv", "-p", "a.csv", "--silence",
                             "nope"], 2,
                            r"^error: Invalid value for '--silence': 'nope' is not one of .*"
                            + SEE_HELP),
}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _write_inputs(folder: Path) -> None:
    for file, text in FILES.items():
        (folder / file).parent.mkdir(parents=True, exist_ok=True)
        (folder / file).write_text(text)
    for file, data in BYTES.items():
        (folder / file).parent.mkdir(parents=True, exist_ok=True)
        (folder / file).write_bytes(data)


@pytest.mark.parametrize("name", list(CASES))
def test_battery(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    _write_inputs(tmp_path)
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


# --- issue 33's battery: the cases that need more than one command line -------------------------


def _cli(args: list[str]) -> object:
    return CliRunner().invoke(cli.main, args)


def _one_line(result: object, pattern: str) -> None:
    lines = result.stderr.splitlines()  # type: ignore[attr-defined]
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    assert len(lines) == 1 and re.search(pattern, lines[0]), lines


def test_junit_is_well_formed_with_control_characters_in_names(tmp_path: Path) -> None:
    """A strata group holding BEL and U+0001 (was: the JUnit file did not parse)."""
    import xml.etree.ElementTree as ET

    (tmp_path / "s.csv").write_text("user,group\nu1,a\x07b\nu2,c\x01\nu3,c\x01\n")
    for name in ("truth.csv", "a.csv"):
        (tmp_path / name).write_text(FILES[name])
    (tmp_path / "g.toml").write_text('truth = "truth.csv"\npredictions = "a.csv"\n'
                                     'strata = "s.csv"\nchecks = ["P@1[*] >= 0"]\n')
    result = _cli(["check", str(tmp_path / "g.toml"), "--junit", str(tmp_path / "g.xml")])
    assert result.exit_code == 0, result.output
    root = ET.fromstring((tmp_path / "g.xml").read_bytes())
    names = [case.get("name") for case in root.iter("testcase")]
    assert names == ["P@1[a\\x07b] >= 0", "P@1[c\\x01] >= 0"]


def test_gate_and_compare_with_activity_strata_and_renamed_training_columns() -> None:
    """Issue 33 item 5: was "train file has no column 'user', 'item'" in both."""
    truth = {"user": [1, 2, 3, 4], "item": [1, 1, 1, 1]}
    a = {"user": [1, 2, 3, 4], "item": [1, 2, 1, 1], "score": [1.0] * 4}
    b = {"user": [1, 2, 3, 4], "item": [2, 2, 2, 1], "score": [1.0] * 4}
    train = pd.DataFrame({"userId": [1, 1, 1, 2, 3, 3, 4], "movieId": [5, 6, 7, 5, 6, 7, 8]})
    columns = {"user": "userId", "item": "movieId"}
    c = receval.compare(truth, {"a": a, "b": b}, ["P@1"], baseline="b", train=train,
                        train_columns=columns, strata="activity", n_resamples=10)
    groups = c.table["group"].tolist()
    assert groups[0] == "(all)" and len(groups) > 1
    gate = receval.check({"truth": truth, "predictions": a, "train": train,
                          "strata": "activity", "options": {"train_columns": columns},
                          "checks": ["P@1[*] >= 0"]})
    assert gate.passed and len(gate.outcomes) == len(set(groups) - {"(all)"})


def test_offpolicy_command_keeps_007_and_7_apart(tmp_path: Path) -> None:
    """receval offpolicy and receval.offpolicy.estimate on the same rows: SNIPS 1.0 (the CLI
    read items 007 and 7 as one, SNIPS 0.5)."""
    from receval.offpolicy import estimate

    log = "request,item,position,reward,propensity\n1,007,1,1,0.5\n2,7,1,0,0.5\n"
    target = "request,item,position,probability\n1,007,1,1\n2,007,1,1\n"
    (tmp_path / "log.csv").write_text(log)
    (tmp_path / "t.csv").write_text(target)
    result = _cli(["offpolicy", "--log", str(tmp_path / "log.csv"), "--target",
                   f"t={tmp_path / 't.csv'}", "-e", "snips", "--resamples", "0", "-f", "json"])
    assert result.exit_code == 0, result.output
    import json

    cli_value = json.loads(result.stdout)["estimates"][0]["value"]
    frame = pd.read_csv(io.StringIO(log), dtype={"item": str})
    python = estimate(frame, {"t": pd.read_csv(io.StringIO(target), dtype={"item": str})},
                      estimators=["snips"], n_resamples=0).table["value"].iloc[0]
    # the oracle: only request 1's logged item is the target's; weight 1 / 0.5 = 2 on reward 1
    # over the total weight 2 (request 2's logged item 7 is not the target's 007; read as one
    # item, request 2 added weight 2 on reward 0: 0.5)
    assert cli_value == python == 2 * 1 / 2


def test_split_writes_every_other_column_as_it_was_read(tmp_path: Path) -> None:
    """A zip code 00501 stays 00501 (was 501), a decimal stays a decimal."""
    (tmp_path / "r.csv").write_text("user,item,zip,rating,timestamp\nu1,i1,00501,4.5,1\n"
                                    "u1,i2,00502,3,2\nu2,i3,10001,NA,3\nu2,i4,00007,1,4\n")
    result = _cli(["split", str(tmp_path / "r.csv"), "--method", "leave-last-out",
                   "--train-out", str(tmp_path / "tr.csv"), "--test-out",
                   str(tmp_path / "te.csv")])
    assert result.exit_code == 0, result.output
    train = (tmp_path / "tr.csv").read_text().splitlines()
    test = (tmp_path / "te.csv").read_text().splitlines()
    assert train[1:] == ['"u1","i1","00501",4.5,1', '"u2","i3","10001",,3']
    assert test[1:] == ['"u1","i2","00502",3,2', '"u2","i4","00007",1,4']


def test_pipes_are_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-t <(cat t.csv)``: compare, split, sample and check hung; evaluate said the truth was
    empty, monitor "no such file" (the input was opened several times)."""
    monkeypatch.chdir(tmp_path)
    _write_inputs(tmp_path)

    def pipe(name: str) -> str:
        r, w = os.pipe()
        data = (tmp_path / name).read_bytes()

        def feed() -> None:
            with os.fdopen(w, "wb") as fh:
                fh.write(data)

        threading.Thread(target=feed, daemon=True).start()
        opened.append(r)
        return f"/dev/fd/{r}"

    opened: list[int] = []
    commands = {
        "evaluate": lambda: ["evaluate", "-t", pipe("truth.csv"), "-p", "a.csv", "-m", "P@1"],
        "compare": lambda: ["compare", "-t", pipe("truth.csv"), "-p", "a.csv", "-p", "b.csv",
                            "-m", "P@1", "--resamples", "10"],
        "split": lambda: ["split", pipe("ratings.csv"), "--method", "leave-last-out",
                          "--train-out", "tr.csv", "--test-out", "te.csv"],
        "sample": lambda: ["sample", "--train", pipe("train.csv"), "--test", "truth.csv", "-o",
                           "c.csv", "--negatives", "1"],
        "check": lambda: ["check", pipe("gate.toml")],
        "monitor": lambda: ["monitor", "-i", pipe("imp.csv"), "--feedback", "fb.csv", "-m",
                            "P@1", "--window", "7D", "--resamples", "0"],
    }
    for name, args in commands.items():
        done: list[object] = []
        argv = args()
        worker = threading.Thread(target=lambda a=argv, d=done: d.append(_cli(a)), daemon=True)
        worker.start()
        worker.join(120)
        assert done, f"{name} hangs on a pipe"
        result = done[0]
        assert result.exit_code == 0, (name, result.output)  # type: ignore[attr-defined]
    for fd in opened:
        os.close(fd)


def test_state_files_that_are_not_states(tmp_path: Path) -> None:
    """A foreign SQLite database is refused and left as it was (was: receval's tables added to
    it); an empty file is refused (was: taken as a new state, the history gone); a table that
    lost a column is the damaged-state line (was: exit 1, OperationalError)."""
    _write_inputs(tmp_path)
    args = [*MONITOR[:1], "-i", str(tmp_path / "imp.csv"), "--feedback",
            str(tmp_path / "fb.csv"), "-m", "P@1", "--window", "7D", "--resamples", "0",
            "--state"]
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE customers (name TEXT)")
    con.commit()
    con.close()
    before = foreign.read_bytes()
    _one_line(_cli([*args, str(foreign)]), r"^error: state \S*foreign\.sqlite' is a SQLite "
              r"database but not a receval monitor state \(tables: customers\)")
    assert foreign.read_bytes() == before
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    _one_line(_cli([*args, str(empty)]), r"^error: state \S*empty\.sqlite' is an empty file "
              r"\(0 bytes\)")
    assert empty.read_bytes() == b""
    state = tmp_path / "s.sqlite"
    assert _cli([*args, str(state)]).exit_code == 0  # type: ignore[attr-defined]
    con = sqlite3.connect(state)
    con.execute("ALTER TABLE receval_monitor DROP COLUMN value")
    con.commit()
    con.close()
    _one_line(_cli([*args, str(state)]), r"^error: state \S*s\.sqlite' is damaged or was "
              r"changed by hand \(SQLite: no such column: value\)")


def test_python_refuses_what_the_flags_refuse(tmp_path: Path) -> None:
    """lock_timeout=nan, switch_threshold=nan, item_groups={}: one ReceValError each."""
    from receval.monitor.state import open_state
    from receval.offpolicy import estimate

    state = tmp_path / "never-created.sqlite"
    with pytest.raises(ReceValError, match=r"^lock_timeout must be a finite number"), \
            open_state(state, lock_timeout=math.nan):
        pass
    assert not state.exists()
    log = pd.DataFrame({"request": [1], "item": ["a"], "position": [1], "reward": [1.0],
                        "propensity": [0.5]})
    target = pd.DataFrame({"request": [1], "item": ["a"], "position": [1],
                           "probability": [1.0]})
    with pytest.raises(ReceValError, match=r"^switch_threshold must be a finite number > 0; "
                       r"got nan"):
        estimate(log, {"t": target}, switch_threshold=math.nan)
    with pytest.raises(ReceValError, match=r"^item groups are empty: no item has a group"):
        receval.evaluate({"user": [1], "item": [1]}, {"user": [1], "item": [1], "score": [1.0]},
                         ["nDCG_AWRF@1"], item_groups={})


def test_a_batch_repeating_part_of_an_earlier_one_counts_each_list_once(tmp_path: Path) -> None:
    """Yesterday's second half fed again with today's log: the windows equal one run over the
    distinct lists (was: the repeated lists counted twice, or refused as items served twice)."""
    imp = pd.DataFrame({"user": [1, 1, 2, 2, 3, 3, 4, 4], "item": [1, 2] * 4, "rank": [1, 2] * 4,
                        "served_at": ["2024-01-01"] * 4 + ["2024-01-02"] * 4})
    fb = pd.DataFrame({"user": [1, 2, 3, 4], "item": [1, 1, 2, 1], "value": [1.0] * 4,
                       "at": ["2024-01-01T01:00"] * 2 + ["2024-01-02T01:00"] * 2})
    kw = {"window": "7D", "n_resamples": 0}
    state = tmp_path / "s.sqlite"
    receval.monitor(imp.iloc[:6], fb.iloc[:3], ["P@1"], state=state, **kw)
    with pytest.warns(receval.checks.ReplayedListsWarning, match=r"^1 served list\(s\)"):
        again = receval.monitor(imp.iloc[4:], fb.iloc[3:], ["P@1"], state=state, **kw)
    assert again.counts["lists_replayed"] == 1
    final = receval.monitor(imp.iloc[:0], fb.iloc[:0], ["P@1"], state=state, **kw)
    # the oracle: users 1, 2, 4 have their top item in the feedback, user 3 its second: 3/4
    assert final.windows["P@1"].tolist() == [0.75]
    assert final.windows["users_evaluated"].tolist() == [4]


#: reads of input files outside receval.io, each with why it is not an input table
READS_ALLOWED = {
    ("monitor/state.py", "open("): "the first bytes of the state file: its kind",
    ("spark/footers.py", "pq.ParquetFile"): "Parquet footers only: the schema Spark reads",
    ("streaming/budget.py", "pq.ParquetFile"): "Parquet footers only: the number of rows",
    ("streaming/budget.py", "open("): "the cgroup's memory limit, not an input",
    ("streaming/ordered.py", "pq.ParquetFile"): "Parquet footers only: whether sorted by user",
    ("gates/monitor.py", ".read_text("): "a monitor's JSON output (receval's own), not a table",
    ("streaming/peruser.py", "pq.read_table"): "the run's own per-user spill files, not an input",
    ("streaming/peruser.py", "pq.ParquetFile"): "the run's own per-user spill files, not an input",
}
_READ_CALL = re.compile(r"pd\.read_(csv|parquet|json|table|excel)\b|pq\.read_table\b|"
                        r"pq\.ParquetFile\(|pacsv\.(read_csv|open_csv)\b|pajson\.read_json\b|"
                        r"(?<![\w.])open\(|\.read_text\(|\.read_bytes\(|gzip\.open\(|"
                        r"tomllib\.load\(")


def test_every_input_is_read_through_receval_io() -> None:
    """Issue 32 item 4: split, monitor, the off-policy command, gates and training had their
    own readers. A read call outside ``receval/io`` (doctests aside) fails this test."""
    root = Path(receval.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("io/"):
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            code = line.strip()
            if code.startswith((">>>", "...", "#")):
                continue
            for match in _READ_CALL.finditer(code):
                call = match.group().rstrip("\\b")
                if not any(rel == f and call.startswith(c) for f, c in READS_ALLOWED):
                    found.append(f"{rel}: {code}")
    assert not found, "\n".join(found)
