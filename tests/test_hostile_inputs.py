"""Hostile inputs, table-driven: each bad file is refused with one line that names the side,
the column, where the first bad row is (a file's line, a frame's row) and how many rows are bad,
by ``receval.evaluate(path, path)`` and by ``receval evaluate`` alike (exit 2)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import receval
from receval import ReceValError
from receval.cli import main

TRUTH = b"user,item,rating\nu1,i1,4\nu2,i2,5\nu3,i3,1\n"
PREDS = b"user,item,score\nu1,i1,0.9\nu2,i1,0.5\nu3,i3,0.1\n"


def _parquet(columns: dict[str, pa.Array]) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue().to_pybytes()


# (id, truth file, predictions file, Python keyword arguments, command-line flags, message)
FILE_CASES: list[tuple[str, tuple[str, bytes], tuple[str, bytes], dict[str, Any], list[str],
                       str]] = [
    ("uint64 id beyond int64", ("t.csv", TRUTH),
     ("p.parquet", _parquet({"user": pa.array([1, 2**63 + 5], pa.uint64()),
                             "item": pa.array([1, 2]), "score": pa.array([0.1, 0.2])})),
     {}, [],
     r"predictions column 'user' holds 9223372036854775813 at row 1 of \S*p\.parquet "
     r"\(1 bad row in all\); ids must be integers within int64"),
    ("float id 1e19", ("t.csv", TRUTH),
     ("p.parquet", _parquet({"user": pa.array([1.0, 2.0, 3.0]),
                             "item": pa.array([1.0, 1e19, 2e19]),
                             "score": pa.array([0.1, 0.2, 0.3])})),
     {}, [], r"predictions column 'item' holds 1e\+19 at row 1 of \S*p\.parquet "
             r"\(2 bad rows in all\)"),
    ("binary id not UTF-8", ("t.csv", TRUTH),
     ("p.parquet", _parquet({"user": pa.array([b"u1", b"u2"], pa.binary()),
                             "item": pa.array([b"i1", b"\xff"], pa.binary()),
                             "score": pa.array([0.1, 0.2])})),
     {}, [], r"predictions column 'item' holds b'\\xff' at row 1 .*binary ids must be UTF-8"),
    ("malformed quoting", ("t.csv", TRUTH),
     ("p.csv", b'user,item,score\n"u,1,"i,1",0.9\nu2,i2,0.5\n'),
     {}, [], r"cannot read predictions file \S*p\.csv: malformed quoting at line 2"),
    ("same column twice", ("t.csv", TRUTH), ("p.csv", PREDS),
     {"user_col": "user", "item_col": "user"}, ["--user-col", "user", "--item-col", "user"],
     r"both .*'user'"),
    ("rating column flag names the column", ("t.csv", b"user,item\nu1,i1\n"), ("p.csv", PREDS),
     {"rating_col": "stars", "relevance_threshold": 3},
     ["--rating-col", "stars", "--relevance-threshold", "3"],
     r"truth file \S*t\.csv has no column 'stars'; its columns are: 'user', 'item' "
     r"\(pass --truth-columns rating=NAME / truth_columns=\{'rating': NAME\}\)"),
    ("missing columns name the side and the flag",
     ("t.csv", b"userId,movieId\nu1,i1\n"), ("p.csv", PREDS), {}, [],
     r"truth file \S*t\.csv has no column 'user', 'item'; its columns are: 'userId', "
     r"'movieId' \(pass --truth-columns user=NAME,item=NAME / truth_columns="
     r"\{'user': NAME, 'item': NAME\}\)"),
    ("a per-side column that is missing", ("t.csv", TRUTH), ("p.csv", PREDS),
     {"prediction_columns": {"score": "prediction"}},
     ["--prediction-columns", "score=prediction"],
     r"predictions file \S*p\.csv has no column 'prediction'; its columns are: 'user', "
     r"'item', 'score'"),
    ("unknown key in the column names", ("t.csv", TRUTH), ("p.csv", PREDS),
     {"truth_columns": {"score": "s"}}, ["--truth-columns", "score=s"],
     r"truth_columns has an unknown key 'score'; its keys are 'user', 'item', 'rating'"),
    ("nan score: the line counts the header and blank lines", ("t.csv", TRUTH),
     ("p.csv", b"user,item,score\nu1,i1,0.9\n\nu2,i1,0.5\nu3,i3,nan\nu4,i4,\nu5,i5,1\n"),
     {}, [],
     r"predictions column 'score' holds nan at line 5 of \S*p\.csv \(user 'u3'; 2 bad rows "
     r"in all\); scores must be finite numbers"),
    ("non-numeric scores are counted", ("t.csv", TRUTH),
     ("p.csv", b"user,item,score\nu1,i1,0.9\nu2,i1,high\nu3,i3,low\n"), {}, [],
     r"predictions column 'score' holds 'high' at line 3 of \S*p\.csv \(2 bad rows in all\)"),
    ("infinite rating", ("t.csv", b"user,item,rating\nu1,i1,4\nu2,i2,inf\n"), ("p.csv", PREDS),
     {"relevance_threshold": 3}, ["--relevance-threshold", "3"],
     r"truth column 'rating' holds inf at line 3 of \S*t\.csv \(user 'u2'; 1 bad row in all\)"),
    ("empty id", ("t.csv", TRUTH), ("p.csv", b"user,item,score\nu1,i1,0.9\n,i2,0.5\n"), {}, [],
     r"predictions column 'user' holds an empty id at line 3 of \S*p\.csv \(1 bad row in all\)"),
    ("ragged rows", ("t.csv", TRUTH),
     ("p.csv", b"user,item,score\nu1,i1,0.9\nu2,i2\nu3,i3,0.1,x\n"), {}, [],
     r"predictions file \S*p\.csv has 2 fields at line 3 where the header has 3 "
     r"\(2 bad rows in all"),
    ("missing id in JSON Lines", ("t.csv", TRUTH),
     ("p.jsonl", b'{"user": "u1", "item": "i1", "score": 1}\n\n{"item": "i2", "score": 2}\n'),
     {}, [], r"predictions column 'user' holds a missing id at line 3 of \S*p\.jsonl"),
    ("nan in a TREC run: comment lines are counted",
     ("t.qrels", b"q1 0 d1 1\n"),
     ("p.run", b"# run\nq1 Q0 d1 1 1.0 t\n# more\nq1 Q0 d2 2 nan t\n"), {}, [],
     r"predictions column 'score' holds nan at line 4 of \S*p\.run \(user 'q1'; 1 bad row"),
    ("escape sequences in a header are shown, not sent", ("t.csv", TRUTH),
     ("p.csv", b"\x1b]0;title\x07,item,score\nu1,i1,0.9\n"), {}, [],
     r"its columns are: '\\x1b\]0;title\\x07', 'item', 'score'"),
]


def _files(tmp_path: Path, truth: tuple[str, bytes], preds: tuple[str, bytes]) -> tuple[Path,
                                                                                      Path]:
    (tmp_path / truth[0]).write_bytes(truth[1])
    (tmp_path / preds[0]).write_bytes(preds[1])
    return tmp_path / truth[0], tmp_path / preds[0]


@pytest.mark.parametrize(("case", "truth", "preds", "kwargs", "flags", "message"), FILE_CASES,
                         ids=[c[0] for c in FILE_CASES])
def test_python_refuses_with_one_line(tmp_path: Path, case: str, truth: tuple[str, bytes],
                                      preds: tuple[str, bytes], kwargs: dict[str, Any],
                                      flags: list[str], message: str) -> None:
    t, p = _files(tmp_path, truth, preds)
    with pytest.raises(ReceValError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        receval.evaluate(t, str(p), ["P@1"], **kwargs)
    text = str(info.value)
    assert "\n" not in text and "\x1b" not in text
    assert re.search(message, text), text


@pytest.mark.parametrize(("case", "truth", "preds", "kwargs", "flags", "message"), FILE_CASES,
                         ids=[c[0] for c in FILE_CASES])
def test_cli_exits_2_with_one_line(tmp_path: Path, case: str, truth: tuple[str, bytes],
                                   preds: tuple[str, bytes], kwargs: dict[str, Any],
                                   flags: list[str], message: str) -> None:
    t, p = _files(tmp_path, truth, preds)
    result = CliRunner().invoke(main, ["evaluate", "-t", str(t), "-p", str(p), "-m", "P@1",
                                       *flags])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "\x1b" not in result.stderr
    assert re.search(message, lines[0]), lines[0]


@pytest.mark.parametrize("flag", ["--truth-columns", "--prediction-columns"])
def test_cli_malformed_column_flag(tmp_path: Path, flag: str) -> None:
    t, p = _files(tmp_path, ("t.csv", TRUTH), ("p.csv", PREDS))
    result = CliRunner().invoke(main, ["evaluate", "-t", str(t), "-p", str(p), flag, "userId"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {flag} takes ROLE=NAME pairs separated by commas "
        "(e.g. user=userId,item=movieId); got 'userId'")


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    truth = pd.DataFrame({"user": [1, 2, 3], "item": [1, 2, 3]})
    preds = pd.DataFrame({"user": [1, 2, 3], "item": [1, 1, 3], "score": [0.9, 0.5, 0.1]})
    return truth, preds


Frames = Callable[[pd.DataFrame, pd.DataFrame], tuple[Any, Any]]

# (id, how to spoil the frames, keyword arguments, message)
FRAME_CASES: list[tuple[str, Frames, dict[str, Any], str]] = [
    ("object column mixing 1 and '1'",
     lambda t, p: (t.assign(user=pd.Series([1, "1", 2], dtype=object)), p), {},
     r"truth column 'user' holds '1' at row 1 \(row 0 holds 1; 1 bad row in all\); the column "
     r"mixes int and str"),
    ("uint64 ids beyond int64",
     lambda t, p: (t, p.assign(item=np.array([1, 2**63, 2**64 - 1], dtype=np.uint64))), {},
     r"predictions column 'item' holds 9223372036854775808 at row 1 \(2 bad rows in all\)"),
    ("float ids 1e19 and 2e19", lambda t, p: (t.assign(item=[1.0, 1e19, 2e19]), p), {},
     r"truth column 'item' holds 1e\+19 at row 1 \(2 bad rows in all\)"),
    ("binary ids not UTF-8",
     lambda t, p: (pa.table({"user": [1, 2], "item": pa.array([b"a", b"\xfe"], pa.binary())}),
                   p.assign(item=["a", "b", "c"])), {},
     r"truth column 'item' holds b'\\xfe' at row 1"),
    ("float ids on one side, strings on the other",
     lambda t, p: (t.assign(user=[1.0, 2.0, 3.0]), p.assign(user=["1", "2", "3"])), {},
     r"user ids of mismatched types: truth has integers, predictions has strings; give both "
     r"sides one type"),
    ("nan scores are counted",
     lambda t, p: (t, p.assign(score=[0.9, np.nan, np.inf])), {},
     r"predictions column 'score' holds nan at row 1 \(user 2; 2 bad rows in all\)"),
    ("non-numeric scores are counted",
     lambda t, p: (t, p.assign(score=["0.9", "x", "y"])), {},
     r"predictions column 'score' holds 'x' at row 1 \(2 bad rows in all\)"),
    ("a per-side name overrides the shared one",
     lambda t, p: (t, p), {"user_col": "user", "prediction_columns": {"user": "userId"}},
     r"predictions has no column 'userId'; its columns are: 'user', 'item', 'score' \(pass "
     r"--prediction-columns user=NAME / prediction_columns=\{'user': NAME\}\)"),
    ("blank-padded names are shown as they are",
     lambda t, p: (t.rename(columns={"user": "user "}), p), {},
     r"truth has no column 'user'; its columns are: 'user ', 'item'"),
]


@pytest.mark.parametrize(("case", "spoil", "kwargs", "message"), FRAME_CASES,
                         ids=[c[0] for c in FRAME_CASES])
def test_frames_refused_with_side_column_row_and_count(case: str, spoil: Frames,
                                                       kwargs: dict[str, Any],
                                                       message: str) -> None:
    truth, preds = spoil(*_frames())
    with pytest.raises(ReceValError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        receval.evaluate(truth, preds, ["P@1"], **kwargs)
    text = str(info.value)
    assert "\n" not in text
    assert re.search(message, text), text
