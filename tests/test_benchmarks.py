"""The benchmark script runs end to end on tiny data, with the peers it can find, and its
values agree with the peers' (the speed numbers themselves are only in benchmarks/README.md)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_core.py"


@pytest.mark.slow
def test_bench_core_runs_on_tiny_data_and_agrees_with_the_peers(tmp_path: Path) -> None:
    peers = [p for p in ("ranx", "pytrec_eval") if importlib.util.find_spec(p)]
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--users", "300", "--peer-users", "200",
         "--recommenders-users", "50", "--repeat", "1", "--peers", ",".join(peers) or "none",
         "--data-dir", str(tmp_path / "data"), "--out", str(out), "--timeout", "600"],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["receval"]["values"], "receval's own values are in the results"
    for peer in peers:
        agreement = results["agreement"][peer]
        print(peer, agreement)
        assert agreement["metrics"] > 10 and agreement["agree"], agreement
    if not peers:
        pytest.skip("no peer installed: only receval's own run was checked")

