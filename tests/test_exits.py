"""Exit codes (issue 33, item 2): a missing required option is one line and exit 2 in every
command (click 8.4 takes an explicit ``default=None`` as a value, so a required option so
declared was never enforced); Spark's JVM start-up lines never come before receval's line."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from receval.cli import all_commands, main


def _required() -> list[tuple[str, str]]:
    return [(name, p.name or "") for name, cmd in sorted(all_commands().items())
            for p in cmd.params if p.required and isinstance(p, click.Option)]


def test_some_commands_have_required_options() -> None:
    names = {(c, p) for c, p in _required()}
    assert ("monitor", "feedback") in names and ("plot", "out") in names


@pytest.mark.parametrize(("command", "param"), _required())
def test_a_missing_required_option_is_one_line_and_exit_2(command: str, param: str) -> None:
    cmd = all_commands()[command]
    args = [command] + ["x.csv" for p in cmd.params
                        if isinstance(p, click.Argument) and p.required]
    for p in cmd.params:  # every other required option given (a value the parser takes)
        if p.required and p.name != param and isinstance(p, click.Option):
            value = p.type.choices[0] if isinstance(p.type, click.Choice) else "x.csv"
            args += [p.opts[0], str(value)]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2, out.output
    lines = out.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Missing option"), lines
    flag = next(p for p in cmd.params if p.name == param).opts
    assert any(f in lines[0] for f in flag)


def test_monitor_without_feedback_exits_2(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text("user,item,rank,served_at\n1,1,1,2024-01-01\n")
    out = subprocess.run([sys.executable, "-m", "receval.cli", "monitor", "-i", str(log)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: Missing option '--feedback'. (see 'python -m receval.cli monitor --help')"]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("pyspark") is None or shutil.which("java") is None,
                    reason="needs pyspark and Java")
def test_spark_on_a_bad_file_prints_one_line(tmp_path: Path) -> None:
    import pandas as pd

    pd.DataFrame({"user": [1], "item": [1], "rating": [1]}).to_parquet(tmp_path / "t.parquet")
    (tmp_path / "bad.parquet").write_text("garbage")
    out = subprocess.run([sys.executable, "-m", "receval.cli", "evaluate", "--engine", "spark",
                          "-t", str(tmp_path / "t.parquet"), "-p", str(tmp_path / "bad.parquet"),
                          "--spark-master", "local[1]"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 2
    lines = [line for line in out.stderr.splitlines() if "FutureWarning" not in line
             and "require_minimum_pandas_version" not in line]  # pyspark's own, from Python
    assert len(lines) == 1 and lines[0].startswith("error: Spark failed"), out.stderr


def test_an_error_after_reading_exits_2_every_time(tmp_path: Path) -> None:
    """The one-line error, then exit 2 — never an abort at shutdown (Arrow's threads waited on
    by an object freed while the interpreter finalizes: rc -6, seen under load)."""
    (tmp_path / "t.csv").write_text("user,item,rating\n" + "".join(
        f"{u},{i},1\n" for u in range(50) for i in range(5)))
    for _ in range(5):
        out = subprocess.run([sys.executable, "-m", "receval.cli", "evaluate", "-t",
                              str(tmp_path / "t.csv"), "-p", str(tmp_path / "nope.csv")],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 2, out.stderr
        assert out.stderr.strip().splitlines() == [
            f"error: predictions file not found: {tmp_path / 'nope.csv'}"]


def test_release_native_frees_arrow_readers_held_in_cycles() -> None:
    import gc
    import io as stdio
    import weakref

    import pyarrow.csv as pacsv

    from receval.cli.common import release_native

    class Holder:
        pass

    holder = Holder()
    holder.me = holder  # a cycle, as a traceback and its frames make
    holder.reader = pacsv.open_csv(stdio.BytesIO(b"a,b\n1,2\n"))
    gone = weakref.ref(holder)
    gc.disable()
    try:
        del holder
        assert gone() is not None  # only the collector frees a cycle
        release_native()
        assert gone() is None
    finally:
        gc.enable()
