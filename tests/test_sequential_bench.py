"""benchmarks/bench_sequential.py and benchmarks/bench_text.py run end to end on tiny data (their
numbers are in benchmarks/README.md): the sequential one checks that its summary equals
receval.evaluate's on the same rows, the text one that the counts add up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SRC = Path(__file__).resolve().parents[1] / "src"


def _run(script: str, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_bench_sequential_runs() -> None:
    out = _run("bench_sequential.py", "--queries", "500", "--k", "20", "--repeat", "1")
    assert out["queries"] == 500 and out["prediction_rows"] == 10_000
    assert out["ratio_keep_over_evaluate"] > 0


def test_bench_text_runs() -> None:
    out = _run("bench_text.py", "--generated", "2000", "--titles", "500")
    counts = out["counts"]
    parts = ("exact", "normalised", "fuzzy", "unresolved", "ambiguous")
    assert sum(counts[k] for k in parts) == counts["generated"] == 2000
    assert counts["fuzzy"] > 0 and counts["unresolved"] > 0
