"""Outputs under attack: refused paths, atomic writes, CSV formula injection, terminal escapes.

Issue 9, points 1-6: an output that is an input (also through links), or that two outputs
share, or that cannot be written is refused before any work; every output is written to a
temporary file and renamed into place (a failed, interrupted, killed or concurrent run leaves
one complete file); CSV/TSV text cells that a spreadsheet would run are neutralised; control
characters from the data never reach the terminal raw.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import receval.cli as cli
from receval.exceptions import ReceValError
from receval.io.formulas import neutralise_cell, neutralise_table
from receval.io.output import atomic_output, check_outputs, write_table
from receval.io.terminal import one_line, safe_text

TRUTH = "user,item,rating\nu1,i1,4\nu1,i2,2\nu2,i1,5\nu3,i3,1\n"
PREDS = "user,item,score\nu1,i1,0.9\nu1,i3,0.5\nu2,i2,0.1\nu3,i3,0.3\n"
OLD = "old result, must survive\n"


@pytest.fixture
def d(tmp_path: Path) -> Path:
    (tmp_path / "truth.csv").write_text(TRUTH)
    (tmp_path / "preds.csv").write_text(PREDS)
    return tmp_path


def invoke(*args: str | Path) -> click.testing.Result:
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def _patch_commands(monkeypatch: pytest.MonkeyPatch, name: str, value: object) -> None:
    """Replace ``name`` in every command module that uses it (each imports it by name)."""
    import importlib
    import pkgutil

    patched = 0
    for info in pkgutil.iter_modules(cli.__path__):
        if info.name == "__main__":  # running it would run the command line
            continue
        module = importlib.import_module(f"receval.cli.{info.name}")
        if hasattr(module, name):
            monkeypatch.setattr(module, name, value)
            patched += 1
    assert patched >= 2, f"{name} is used by no command module"


def evaluate(d: Path, *args: str | Path) -> click.testing.Result:
    return invoke("evaluate", "-t", d / "truth.csv", "-p", d / "preds.csv", "-m", "P@1",
                  "--relevance-threshold", "3", *args)


def leftovers(directory: Path) -> list[str]:
    """Temporary files left behind in ``directory``."""
    return sorted(p.name for p in directory.iterdir() if ".tmp" in p.name)


# --- 1. refused output paths, before any work --------------------------------------------------


def _symlink(d: Path, name: str, to: str) -> Path:
    (d / name).symlink_to(d / to)
    return d / name


def _hardlink(d: Path, name: str, to: str) -> Path:
    os.link(d / to, d / name)
    return d / name


def _directory(d: Path, name: str) -> Path:
    (d / name).mkdir()
    return d / name


#: case -> (extra arguments of `receval evaluate`/`plot` built in the directory, words expected)
REFUSED: dict[str, tuple[Callable[[Path], list[str | Path]], str]] = {
    "per-user is the truth": (lambda d: ["--per-user", d / "truth.csv"], "is the input file"),
    "per-user is the predictions": (lambda d: ["--per-user", d / "preds.csv"],
                                    "is the input file"),
    "per-user is the truth, spelt another way": (
        lambda d: ["--per-user", d / "sub" / ".." / "truth.csv"], "is the input file"),
    "per-user is a symlink to the truth": (
        lambda d: ["--per-user", _symlink(d, "link.csv", "truth.csv")], "is the input file"),
    "per-user is a hard link to the predictions": (
        lambda d: ["--per-user", _hardlink(d, "hard.csv", "preds.csv")], "is the input file"),
    "report is a symlink to the predictions": (
        lambda d: ["--report", _symlink(d, "r.html", "preds.csv")], "is the input file"),
    "report and per-user the same path": (
        lambda d: ["--report", d / "x.csv", "--per-user", d / "x.csv"], "must end in .html"),
    "report and per-user the same file through a link": (
        lambda d: ["--per-user", d / "out.csv", "--report", _symlink(d, "out.html", "out.csv")],
        "name the same file"),
    "report suffix": (lambda d: ["--report", d / "report.csv"], "--report must end in .html"),
    "report without suffix": (lambda d: ["--report", d / "report"], "--report must end in"),
    "per-user suffix": (lambda d: ["--per-user", d / "x.xlsx"], "--per-user must end in"),
    "per-user is a directory": (lambda d: ["--per-user", _directory(d, "dir.csv")],
                                "is a directory"),
    "report is a directory": (lambda d: ["--report", _directory(d, "dir.html")],
                              "is a directory"),
    "parent is a file": (lambda d: ["--per-user", d / "truth.csv" / "x.csv"],
                         "is not a directory"),
    "per-user is not a regular file": (
        lambda d: ["--per-user", _symlink(d, "null.csv", "/dev/null")],
        "not a regular file"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_output_exits_2_before_any_work(d: Path, case: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    make, words = REFUSED[case]
    args = make(d)

    def no_work(*_: object, **__: object) -> None:
        raise AssertionError("the evaluation started")

    _patch_commands(monkeypatch, "_evaluate_files", no_work)
    result = evaluate(d, *args)
    assert result.exit_code == 2, (case, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
    assert result.stdout == ""
    assert (d / "truth.csv").read_text() == TRUTH and (d / "preds.csv").read_text() == PREDS
    assert leftovers(d) == []


@pytest.mark.parametrize("case", ["--out is the truth through a symlink", "--out suffix",
                                  "--out is a directory"])
def test_plot_refuses_bad_out_before_any_work(d: Path, case: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    out = {"--out is the truth through a symlink": lambda: _symlink(d, "p.svg", "truth.csv"),
           "--out suffix": lambda: d / "p.pdf",
           "--out is a directory": lambda: _directory(d, "p.png")}[case]()
    _patch_commands(monkeypatch, "_evaluate_files",
                    lambda *a, **k: pytest.fail("work started"))
    result = invoke("plot", "-t", d / "truth.csv", "-p", d / "preds.csv", "-o", out)
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.output
    assert (d / "truth.csv").read_text() == TRUTH


def test_unwritable_directory_refused_before_any_work(d: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The directory is probed with a temporary file; a refusal names the flag and the path."""
    import tempfile

    real = tempfile.mkstemp

    def refuse(*args: object, **kwargs: object) -> tuple[int, str]:
        if str(kwargs.get("dir")) == str(d / "locked"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(*args, **kwargs)  # type: ignore[call-overload]

    (d / "locked").mkdir()
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    _patch_commands(monkeypatch, "_evaluate_files",
                    lambda *a, **k: pytest.fail("work started"))
    result = evaluate(d, "--per-user", d / "locked" / "out.csv")
    assert result.exit_code == 2
    assert "--per-user: cannot write" in result.stderr and "permission denied" in result.stderr
    assert str(d / "locked" / "out.csv") in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory_and_file_refused(d: Path) -> None:
    (d / "ro").mkdir()
    (d / "ro").chmod(0o555)
    (d / "old.csv").write_text(OLD)
    (d / "old.csv").chmod(0o444)
    try:
        result = evaluate(d, "--per-user", d / "ro" / "x.csv")
        assert result.exit_code == 2 and "cannot write" in result.stderr
        result = evaluate(d, "--per-user", d / "old.csv")
        assert result.exit_code == 2 and "read-only" in result.stderr
    finally:
        (d / "ro").chmod(0o755)
    assert (d / "old.csv").read_text() == OLD


def test_missing_output_directories_are_created(d: Path) -> None:
    """A missing directory whose nearest existing ancestor is writable is made, as before."""
    result = evaluate(d, "--per-user", d / "new" / "deep" / "out.csv")
    assert result.exit_code == 0, result.output
    assert (d / "new" / "deep" / "out.csv").read_text().startswith('"user","P@1"')


def test_check_outputs_python_api(tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text("x")
    with pytest.raises(ReceValError, match="is the input file"):
        check_outputs({"out": (tmp_path / "in.csv", (".csv",))}, [tmp_path / "in.csv"])
    with pytest.raises(ReceValError, match="--a and --b name the same file"):
        check_outputs({"--a": (tmp_path / "o.csv", ()), "--b": (tmp_path / "o.csv", ())})
    assert check_outputs({"--a": (None, (".csv",))}) == {}


# --- 2. atomic outputs -------------------------------------------------------------------------


def _half_then(error: BaseException) -> Callable[..., None]:
    """A ``pyarrow.csv.write_csv`` stand-in that writes half the table, then raises."""
    real = pacsv.write_csv

    def write(table: pa.Table, path: object, *args: object, **kwargs: object) -> None:
        real(table.slice(0, len(table) // 2), path, *args, **kwargs)
        raise error

    return write


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"),
                                   KeyboardInterrupt(), RuntimeError("a bug in a writer")],
                         ids=["disk full", "ctrl-c", "bug"])
def test_failed_write_leaves_the_old_file_and_no_temp(d: Path, error: BaseException,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (d / "out.csv").write_text(OLD)
    monkeypatch.setattr(pacsv, "write_csv", _half_then(error))
    result = evaluate(d, "--per-user", d / "out.csv")
    assert result.exit_code != 0
    assert (d / "out.csv").read_text() == OLD
    assert leftovers(d) == []
    if isinstance(error, OSError):  # bad environment: exit 2 naming the file
        assert result.exit_code == 2
        assert f"--per-user: cannot write {d / 'out.csv'}: no space left" in result.stderr


def test_failed_report_leaves_every_old_output(d: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """All outputs or none: a report that fails after the per-user file was written leaves the
    old per-user file too."""
    import receval.report.html as html

    (d / "out.csv").write_text(OLD)
    (d / "r.html").write_text(OLD)

    def broken(*_: object, **__: object) -> str:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(html, "render_report", broken)
    result = evaluate(d, "--per-user", d / "out.csv", "--report", d / "r.html")
    assert result.exit_code == 2 and "--report: cannot write" in result.stderr, result.output
    assert (d / "out.csv").read_text() == OLD and (d / "r.html").read_text() == OLD
    assert leftovers(d) == []
    assert result.stdout == ""  # nothing printed as if it had worked


def test_atomic_output_keeps_normal_permissions(tmp_path: Path) -> None:
    old_mask = os.umask(0o027)
    try:
        with atomic_output(tmp_path / "new.csv") as tmp:
            tmp.write_text("x")
        assert stat.S_IMODE((tmp_path / "new.csv").stat().st_mode) == 0o640
        (tmp_path / "kept.csv").write_text("old")
        (tmp_path / "kept.csv").chmod(0o604)
        with atomic_output(tmp_path / "kept.csv") as tmp:
            tmp.write_text("new")
        assert stat.S_IMODE((tmp_path / "kept.csv").stat().st_mode) == 0o604
    finally:
        os.umask(old_mask)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="only root can give a file to another user")
def test_atomic_output_keeps_the_owner(tmp_path: Path) -> None:
    (tmp_path / "theirs.csv").write_text("old")
    os.chown(tmp_path / "theirs.csv", 12345, 23456)
    with atomic_output(tmp_path / "theirs.csv") as tmp:
        tmp.write_text("new")
    info = (tmp_path / "theirs.csv").stat()
    assert (info.st_uid, info.st_gid) == (12345, 23456)


def test_writing_through_a_symlink_replaces_its_target(d: Path) -> None:
    (d / "results").mkdir()
    (d / "results" / "run1.csv").write_text(OLD)
    (d / "latest.csv").symlink_to(d / "results" / "run1.csv")
    assert evaluate(d, "--per-user", d / "latest.csv").exit_code == 0
    assert (d / "latest.csv").is_symlink()
    assert (d / "results" / "run1.csv").read_text().startswith('"user","P@1"')


# A receval run whose CSV writer writes the first chunk, says "writing", then waits for a file
# `go` before writing the rest: the test kills it there (SIGKILL), or lets two runs that are
# both mid-write finish at the same time.
SLOW_WRITER = textwrap.dedent("""
    import pathlib, sys, time
    import pyarrow as pa
    import pyarrow.csv as pacsv
    real = pacsv.write_csv
    go = pathlib.Path(sys.argv[1])
    def slow(table, path, *args, **kwargs):
        sink = pa.BufferOutputStream()
        real(table, sink, *args, **kwargs)
        data = sink.getvalue().to_pybytes()
        with open(path, "wb") as fh:
            for start in range(0, len(data), 4096):
                fh.write(data[start:start + 4096])
                fh.flush()
                if start == 0:
                    print("writing", flush=True)
                    while not go.exists():
                        time.sleep(0.01)
    pacsv.write_csv = slow
    from receval.cli import main
    sys.exit(main(sys.argv[2:]))
""")


@pytest.fixture
def big(tmp_path: Path) -> Path:
    """4,000 users (a per-user file of 10 chunks), predictions a and b that differ."""
    users = [f"u{i}" for i in range(4000)]
    pd.DataFrame({"user": users, "item": "i1"}).to_csv(tmp_path / "truth.csv", index=False)
    for name, hit in (("a", "i1"), ("b", "i2")):
        pd.DataFrame({"user": users, "item": hit, "score": 1.0}).to_csv(tmp_path / f"{name}.csv",
                                                                        index=False)
    (tmp_path / "slow.py").write_text(SLOW_WRITER)
    return tmp_path


def _slow_run(d: Path, preds: str, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(d / "slow.py"), str(d / "go"), "evaluate", "-t",
         str(d / "truth.csv"), "-p", str(d / preds), "-m", "P@1", "-f", "json",
         "--per-user", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    return process.stdout.readline()


def test_sigkill_mid_write_leaves_the_old_file(big: Path) -> None:
    out = big / "out" / "per_user.csv"
    out.parent.mkdir()
    out.write_text(OLD)
    process = _slow_run(big, "a.csv", out)
    try:
        assert _wait_for_line(process) == "writing\n"
        temps = leftovers(out.parent)
        assert len(temps) == 1 and temps[0].startswith(".per_user.csv.")  # a hidden temp file
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == -signal.SIGKILL
    assert out.read_text() == OLD


def test_sigterm_mid_write_leaves_the_old_file_and_no_temp(big: Path) -> None:
    out = big / "per_user.csv"
    out.write_text(OLD)
    process = _slow_run(big, "a.csv", out)
    try:
        assert _wait_for_line(process) == "writing\n"
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == 128 + signal.SIGTERM
    assert out.read_text() == OLD
    assert leftovers(big) == []


def test_concurrent_writers_leave_one_complete_file(big: Path) -> None:
    out = big / "per_user.csv"
    first, second = _slow_run(big, "a.csv", out), _slow_run(big, "b.csv", out)
    assert [_wait_for_line(p) for p in (first, second)] == ["writing\n"] * 2  # both mid-write
    (big / "go").touch()
    codes = [p.wait(timeout=300) for p in (first, second)]
    for p in (first, second):
        p.communicate()
    assert codes == [0, 0]
    frame = pd.read_csv(out)
    assert len(frame) == 4000 and frame["user"].is_unique
    # one run's file, whole: all hits (a) or none (b), never a mix of the two
    assert frame["P@1"].tolist() in ([1.0] * 4000, [0.0] * 4000)
    assert leftovers(big) == []


# --- 3. CSV/TSV formula injection --------------------------------------------------------------

HOSTILE_IDS = ['=HYPERLINK("http://x","y")', "+1", "-1", "@SUM(1)", "=1+1"]


def _hostile_files(d: Path) -> None:
    ids = ["u1", *HOSTILE_IDS]
    pd.DataFrame({"user": ids, "item": "i1"}).to_csv(d / "truth.csv", index=False)
    pd.DataFrame({"user": ids, "item": "i1", "score": 1.0}).to_csv(d / "=cmd.csv", index=False)
    pd.DataFrame({"user": ids, "item": "i2", "score": 1.0}).to_csv(d / "b.csv", index=False)


@pytest.mark.parametrize("suffix, sep", [(".csv", ","), (".tsv", "\t")])
def test_per_user_text_cells_are_neutralised(tmp_path: Path, suffix: str, sep: str) -> None:
    _hostile_files(tmp_path)
    out = tmp_path / f"per_user{suffix}"
    result = invoke("evaluate", "-t", tmp_path / "truth.csv", "-p", tmp_path / "=cmd.csv",
                    "-p", tmp_path / "b.csv", "-m", "P@1", "--per-user", out)
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out, sep=sep, dtype=str)
    assert set(frame["user"]) == {"u1", *("'" + i for i in HOSTILE_IDS)}
    assert set(frame["model"]) == {"'=cmd", "b"}
    assert sorted(frame["P@1"].astype(float)) == [0.0] * 6 + [1.0] * 6


def test_raw_csv_writes_cells_as_they_are(tmp_path: Path) -> None:
    _hostile_files(tmp_path)
    out = tmp_path / "per_user.csv"
    result = invoke("evaluate", "-t", tmp_path / "truth.csv", "-p", tmp_path / "=cmd.csv",
                    "-m", "P@1", "--per-user", out, "--raw-csv")
    assert result.exit_code == 0, result.output
    assert set(pd.read_csv(out, dtype=str)["user"]) == {"u1", *HOSTILE_IDS}


def test_summary_csv_header_is_neutralised(tmp_path: Path) -> None:
    _hostile_files(tmp_path)
    args: list[str | Path] = ["evaluate", "-t", tmp_path / "truth.csv", "-p",
                              tmp_path / "=cmd.csv", "-p", tmp_path / "b.csv", "-m", "P@1",
                              "-f", "csv"]
    assert invoke(*args).stdout.splitlines()[0] == "metric,'=cmd,b"
    assert invoke(*args, "--raw-csv").stdout.splitlines()[0] == "metric,=cmd,b"


def test_numbers_are_never_touched(tmp_path: Path) -> None:
    """Negative integer ids stay numbers (only text cells are neutralised)."""
    (tmp_path / "t.csv").write_text("user,item\n-1,5\n-2,6\n")
    (tmp_path / "p.csv").write_text("user,item,score\n-1,5,-0.5\n-2,7,-1.5\n")
    out = tmp_path / "per_user.csv"
    result = invoke("evaluate", "-t", tmp_path / "t.csv", "-p", tmp_path / "p.csv", "-m", "P@1",
                    "--per-user", out)
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines()[1:] == ["-2,0", "-1,1"]


def test_parquet_keeps_ids_exact(tmp_path: Path) -> None:
    _hostile_files(tmp_path)
    out = tmp_path / "per_user.parquet"
    invoke("evaluate", "-t", tmp_path / "truth.csv", "-p", tmp_path / "=cmd.csv", "-m", "P@1",
           "--per-user", out)
    assert set(pq.read_table(out).column("user").to_pylist()) == {"u1", *HOSTILE_IDS}


NEUTRALISED = [
    ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
    ("+1", "'+1"), ("-1", "'-1"), ("@SUM(1)", "'@SUM(1)"), ("\tx", "'\tx"), ("\rx", "'\rx"),
    ("u=1", "u=1"), ("P@10", "P@10"), ("", ""), ("'=x", "''=x"), ("'x", "'x"), (" =x", " =x"),
]


@pytest.mark.parametrize("cell, expected", NEUTRALISED)
def test_neutralise_cell(cell: str, expected: str) -> None:
    assert neutralise_cell(cell) == expected


def test_neutralise_table_matches_the_cell_rule_and_keeps_types() -> None:
    cells = [c for c, _ in NEUTRALISED]
    table = pa.table({"s": cells, "big": pa.array(cells, pa.large_string()),
                      "dict": pa.array(cells).dictionary_encode(),
                      "n": pa.array(range(-5, -5 + len(cells))), "=h": [None] * len(cells)})
    out = neutralise_table(table)
    expected = [e for _, e in NEUTRALISED]
    assert out.column("s").to_pylist() == expected == out.column("big").to_pylist()
    assert out.column("dict").to_pylist() == expected
    assert out.column("n").to_pylist() == list(range(-5, -5 + len(cells)))
    assert out.column_names == ["s", "big", "dict", "n", "'=h"]


def test_write_table_python_api(tmp_path: Path) -> None:
    table = pa.table({"user": ["-1", "u"], "x": [-1, 2]})
    text = write_table(table, tmp_path / "t.tsv").read_text()
    assert text.splitlines()[1:] == ['"\'-1"\t-1', '"u"\t2']
    with pytest.raises(ReceValError, match="must end in"):
        write_table(table, tmp_path / "t.xlsx")


# --- 4. terminal safety ------------------------------------------------------------------------

ESCAPED = [
    ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"), ("\x1b[2J", "\\x1b[2J"), ("a\x9bb", "a\\x9bb"),
    ("\x00\x7f", "\\x00\\x7f"), ("x\ry", "x\\x0dy"), ("line\nnext", "line\\x0anext"),
    ("abc\u202edcba", "abc\\u202edcba"), ("é 中文 ✓", "é 中文 ✓"), ("C:\\r\\n", "C:\\r\\n"),
    ("[bold]r[/x].html", "[bold]r[/x].html"),
]


@pytest.mark.parametrize("text, expected", ESCAPED)
def test_safe_text(text: str, expected: str) -> None:
    assert safe_text(text) == expected


def test_one_line_collapses_blanks_then_escapes() -> None:
    assert one_line("a\n  b\r\n\x1b[2Jc") == "a b \\x1b[2Jc"


def _fake_command(action: Callable[[], None]) -> click.Command:
    @click.command()
    @click.option("--debug", is_flag=True)
    @cli._errors_exit_2
    def command(**_: object) -> None:
        action()

    return command


HOSTILE = "header \x1b]0;pwned\x07 and \x1b[2J with [/x] markup\x9b"
SHOWN = "header \\x1b]0;pwned\\x07 and \\x1b[2J with [/x] markup\\x9b"


def _raise(err: BaseException) -> Callable[[], None]:
    def action() -> None:
        raise err

    return action


def _warn() -> None:
    import warnings

    warnings.warn(HOSTILE, UserWarning, stacklevel=1)
    warnings.warn(HOSTILE, UserWarning, stacklevel=1)


TERMINAL = {
    "error message": (_raise(ReceValError(HOSTILE)), 2, f"error: {SHOWN}"),
    "warning": (_warn, 0, f"warning: {SHOWN}"),
    "OSError": (_raise(OSError(HOSTILE)), 2, f"error: {SHOWN}"),
    "a bug": (_raise(TypeError(HOSTILE + "\nsecond line")), 1,
              f"error: TypeError: {SHOWN} (rerun with --debug for the traceback)"),
}


@pytest.mark.parametrize("case", list(TERMINAL))
def test_no_control_character_or_markup_reaches_the_terminal(case: str) -> None:
    action, code, line = TERMINAL[case]
    result = CliRunner().invoke(_fake_command(action), [])
    assert result.exit_code == code
    assert result.stderr.splitlines() == [line]  # one line, warnings said once


def test_hostile_header_is_escaped_end_to_end(d: Path) -> None:
    (d / "bad.csv").write_bytes(b"user,item,\x1b]0;pwned\x07\x1b[2J\nu1,i1,1\n")
    result = invoke("evaluate", "-t", d / "truth.csv", "-p", d / "bad.csv")
    assert result.exit_code == 2
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "\\x1b]0;pwned\\x07" in result.stderr


def test_hostile_model_name_and_paths_are_escaped(d: Path) -> None:
    """A predictions file named with an escape sequence and markup, a report path with markup:
    the summary table, the counts and the 'written' line show them escaped, literally."""
    name = "m\x1b[2J[bold]"
    (d / f"{name}.csv").write_text(PREDS)
    (d / "r[").mkdir()
    result = invoke("evaluate", "-t", d / "truth.csv", "-p", d / f"{name}.csv", "-p",
                    d / "preds.csv", "-m", "P@1", "--relevance-threshold", "3",
                    "--report", d / "r[/x].html")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output
    assert "m\\x1b[2J[bold]" in result.stdout
    assert f"report written to {d}/r[/x].html" in result.stderr
    assert (d / "r[" / "x].html").read_text().startswith("<!DOCTYPE html>")


def test_notes_are_escaped_and_not_markup(capsys: pytest.CaptureFixture[str]) -> None:
    runs = cli._Runs({}, {}, {}, ["path [/x] \x1b[2J"])
    runs.print_notes()
    assert "note: path [/x] \\x1b[2J" in capsys.readouterr().err


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Rich wraps at 80 columns when not on a terminal; the tests look for whole lines."""
    monkeypatch.setenv("COLUMNS", "200")
    yield
