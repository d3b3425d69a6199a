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



BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.slow
@pytest.mark.parametrize(("script", "args", "keys"), [
    ("bench_compare.py", ["--users", "2000", "--models", "2", "--resamples", "200",
                          "--ranx-users", "500", "--ranx-permutations", "2",
                          "--ranx-compare-users", "200", "--repeat", "1"],
     ["receval_t_s", "receval_randomization_s", "ranx_fisher_scaled_s"]),
    ("bench_beyond.py", ["--users", "2000", "--k", "10", "--items", "500", "--train-rows",
                         "20000", "--features", "8", "--cooc-users", "200"],
     ["context_seconds", "metrics"]),
    ("bench_monitor.py", ["--users", "500", "--days", "8", "--k", "5", "--resamples", "50"],
     ["batch_s", "offline_evaluate_s", "daily_update_s"]),
])
def test_the_other_benchmarks_run_on_tiny_data(script: str, args: list[str], keys: list[str],
                                               tmp_path: Path) -> None:
    """Each benchmark of the newer issues still runs end to end (its numbers are only in
    benchmarks/README.md); bench_monitor checks incremental == batch itself and exits 1 if
    not."""
    if script == "bench_compare.py" and importlib.util.find_spec("ranx") is None:
        pytest.skip("ranx is the peer of bench_compare and is not installed")
    out = tmp_path / "results.json"
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *args, "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert all(key in results for key in keys), sorted(results)


@pytest.mark.slow
def test_bench_queries_agrees_with_duckdb_and_polars(tmp_path: Path) -> None:
    """bench_queries.py runs receval, its CLI, DuckDB SQL and Polars lazy on 300 users and each
    one's values equal receval's to 1e-12 (per user; the CLI's means)."""
    tools = ["receval", "cli", "polars", "floor"]
    if importlib.util.find_spec("duckdb") is not None:
        tools.append("duckdb")
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_queries.py"), "--users", "300", "--repeat", "1",
         "--tools", ",".join(tools), "--data-dir", str(tmp_path / "data"), "--out", str(out)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert {row["tool"] for row in rows} == set(tools)
    per_tool = {"receval": 2, "cli": 1, "duckdb": 2, "polars": 2, "floor": 2}  # frames, Parquet
    assert len(rows) == sum(per_tool[tool] for tool in tools)
    for row in rows:
        assert row["agree"] and row["largest_difference"] <= 1e-12, row
    if "duckdb" not in tools:
        pytest.skip("duckdb is not installed: its query was not checked (pip install duckdb)")


@pytest.mark.slow
def test_bench_queries_all_metrics_and_string_ids(tmp_path: Path) -> None:
    """``--metrics all``: the DuckDB and Polars queries and the floor written for P, R, nDCG,
    AP, RR and Hit at six cutoffs agree with receval per user; string ids run too."""
    tools = ["receval", "polars", "floor"]
    if importlib.util.find_spec("duckdb") is not None:
        tools.append("duckdb")
    for extra in (["--metrics", "all"], ["--ids", "string"]):
        out = tmp_path / "results.json"
        done = subprocess.run(
            [sys.executable, str(BENCHMARKS / "bench_queries.py"), "--users", "200",
             "--repeat", "1", "--tools", ",".join(tools), "--out", str(out), *extra],
            capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        results = json.loads(out.read_text())
        assert len(results["metrics"]) == (36 if extra[0] == "--metrics" else 4)
        assert all(row["agree"] for row in results["rows"]), results["rows"]
        assert all(row["peak_rss_bytes"] > 0 for row in results["rows"])


def test_bench_queries_notices_a_value_that_differs() -> None:
    """The agreement check of bench_queries.py is not vacuous: one user's nDCG off by 1e-9
    (or a user missing) is reported."""
    spec = importlib.util.spec_from_file_location("bench_queries", BENCHMARKS / "bench_queries.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    import pandas as pd

    ref = pd.DataFrame({"user": [0, 1], "P@10": [0.1, 0.2], "R@10": [0.05, 0.1],
                        "nDCG@10": [0.3, 0.4], "MAP@10": [0.01, 0.02]})
    off = ref.copy()
    off.loc[1, "nDCG@10"] += 1e-9
    assert bench.largest_difference(ref, ref.iloc[::-1]) == 0.0
    assert abs(bench.largest_difference(ref, off) - 1e-9) < 1e-15
    assert bench.largest_difference(ref, ref.iloc[:1]) == float("inf")
    means = {m: float(ref[m].mean()) for m in bench.METRICS}
    assert bench.largest_difference(ref, means) == 0.0
    means["MAP@10"] += 1e-6
    assert bench.largest_difference(ref, means) > 1e-12
