"""The streaming benchmarks still run end to end on tiny data: bench_text_ids.py (text and
integer ids give equal summaries, else it exits 1) and bench_streaming_logs.py (the monitor's
JSON output equal with and without a budget, else it exits 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import receval

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize(
    ("script", "args", "said"),
    [
        ("bench_text_ids.py", ["--users", "3000", "--budget", "16MiB"], "summaries equal: True"),
        (
            "bench_streaming_logs.py",
            ["--lists", "3000", "--days", "20", "--budget", "16MiB"],
            "equal: True",
        ),
    ],
)
def test_the_benchmark_runs_and_agrees(
    script: str, args: list[str], said: str, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(receval.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert said in done.stdout
