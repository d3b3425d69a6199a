"""receval streaming (``memory_budget=``) against receval in memory, DuckDB SQL and Polars'
streaming engine, from Parquet, with each tool's peak memory (issue 35).

The inputs are bench_queries.py's (users x ``--items`` predictions with tie-free random
scores, ``--relevant`` truth items per user; integer ids), written twice: rows shuffled
across each block of 200,000 users (``shuffled``) and sorted by user (``sorted``). Each tool
runs in a process of its own (``--worker``): its peak memory is that process's high-water
mark (``VmHWM`` in /proc; ``ru_maxrss`` would carry over the parent's peak), its
``rss_import`` the resident memory right after ``import receval`` (the issue's allowance:
peak <= 1.25 x budget + rss_import). The tools:

- ``memory``: ``receval.evaluate(truth_path, preds_path, ...)`` (everything in memory);
- ``stream``: the same call with ``memory_budget=--budget`` (``Result.counts["streaming"]``:
  sorted or partitioned, partitions, passes);
- ``duckdb``: bench_queries.py's SQL over ``read_parquet`` (DuckDB spills when it must);
- ``polars``: bench_queries.py's lazy query over ``scan_parquet``, ``collect(engine=
  "streaming")``.

Every tool's per-user values are checked equal to receval's in-memory ones (receval's
streaming values bit for bit, the others to 1e-12); the script exits 1 if not. ``--threads``
runs receval (numba and Arrow) and DuckDB/Polars on that many threads; a list (``1,2``) gives
the scaling table. Times are medians of ``--repeat`` rounds, the tools interleaved.

    python benchmarks/bench_streaming.py --users 200000 --budget 256MiB --repeat 3
    python benchmarks/bench_streaming.py --users 1000000 --budget 1GiB --repeat 3
    python benchmarks/bench_streaming.py --users 5000000 --budget 1GiB --repeat 3 \\
        --tools stream,duckdb,polars
    python benchmarks/bench_streaming.py --users 10000000 --budget 2GiB --repeat 1 \\
        --tools stream,duckdb,polars --data /big/disk
    python benchmarks/bench_streaming.py --users 1000000 --budget 1GiB --threads 1,2,4,8,16
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TOOLS = ("memory", "stream", "duckdb", "polars")
ORDERS = ("shuffled", "sorted")


def _rss() -> int:
    """This process's resident memory now, in bytes (/proc)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _hwm() -> int:
    """This process's peak resident memory (Linux's ``VmHWM``): ``ru_maxrss`` would carry the
    parent's peak over ``fork`` and ``exec`` (the parent that generated the inputs)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))


def worker(tool: str, data: Path, budget: str, out: Path) -> dict[str, Any]:
    """One tool, once, in this process: seconds, peak and per-user values (to ``out``)."""
    import pandas as pd
    from bench_queries import METRICS, duckdb_sql, polars_query

    truth, preds = data / "truth.parquet", data / "preds.parquet"
    extra: dict[str, Any] = {}
    if tool in ("memory", "stream"):
        import receval

        rss_import = _rss()
        start = time.perf_counter()
        result = receval.evaluate(
            str(truth), str(preds), METRICS, memory_budget=budget if tool == "stream" else None
        )
        seconds = time.perf_counter() - start
        values = result.per_user
        extra = {"rss_import": rss_import, "streaming": result.counts.get("streaming")}  # type: ignore[typeddict-item]
    elif tool == "duckdb":
        import duckdb

        con = duckdb.connect()
        threads = os.environ.get("BENCH_THREADS")
        if threads:
            con.execute(f"SET threads TO {int(threads)}")
        con.execute(f"SET temp_directory = '{data / 'duckdb.tmp'}'")
        start = time.perf_counter()
        values = con.sql(duckdb_sql(f"read_parquet('{preds}')", f"read_parquet('{truth}')")).df()
        seconds = time.perf_counter() - start
    else:
        import polars as pl

        start = time.perf_counter()
        values = (
            polars_query(pl.scan_parquet(preds), pl.scan_parquet(truth))
            .collect(engine="streaming")
            .to_pandas()
        )
        seconds = time.perf_counter() - start
    peak = _hwm()
    pd.DataFrame(values).to_parquet(out)
    return {"tool": tool, "seconds": seconds, "peak_bytes": peak, **extra}


def run_worker(tool: str, data: Path, budget: str, threads: int | None) -> dict[str, Any]:
    """:func:`worker` in a fresh process (on ``threads`` threads when given)."""
    env = dict(os.environ)
    if threads:
        env.update(
            NUMBA_NUM_THREADS=str(threads),
            OMP_NUM_THREADS=str(threads),
            POLARS_MAX_THREADS=str(threads),
            BENCH_THREADS=str(threads),
            ARROW_NUM_THREADS=str(threads),
        )
    out = data / f"values-{tool}.parquet"
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--worker",
            tool,
            "--data",
            str(data),
            "--budget",
            budget,
            "--values",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{tool} failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def check(data: Path, tool: str) -> float:
    """The largest difference between ``tool``'s per-user values and receval's in memory
    (0.0 required of the streaming path)."""
    import numpy as np
    import pandas as pd
    from bench_queries import METRICS

    ref = pd.read_parquet(data / "values-memory.parquet").sort_values("user").reset_index(drop=True)
    got = (
        pd.read_parquet(data / f"values-{tool}.parquet").sort_values("user").reset_index(drop=True)
    )
    if len(ref) != len(got) or not (ref["user"].to_numpy() == got["user"].to_numpy()).all():
        return float("inf")
    return max(float(np.max(np.abs(ref[m].to_numpy() - got[m].to_numpy()))) for m in METRICS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=200_000)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--relevant", type=int, default=10)
    parser.add_argument("--budget", default="256MiB")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--orders", default=",".join(ORDERS))
    parser.add_argument("--threads", default="", help="a list: 1,2,4 (default: all cores)")
    parser.add_argument(
        "--data", default=None, help="folder for the inputs (default: a temporary folder)"
    )
    parser.add_argument("--out", default=None, help="write the results as JSON")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--values", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, Path(args.data), args.budget, Path(args.values))))
        return 0
    from bench_queries import write_inputs

    tools = [t for t in args.tools.split(",") if t]
    thread_list = [int(t) for t in args.threads.split(",") if t] or [None]
    rows: list[dict[str, Any]] = []
    ok = True
    with tempfile.TemporaryDirectory(dir=args.data) as tmp:
        for order in args.orders.split(","):
            data = Path(tmp) / order
            data.mkdir()
            start = time.perf_counter()
            _, _, n_truth, n_preds = write_inputs(
                data,
                args.users,
                args.items,
                args.relevant,
                seed=0,
                ids="int",
                order="by-user" if order == "sorted" else "shuffled",
            )
            print(
                f"{order}: {n_truth:,} truth + {n_preds:,} prediction rows written in "
                f"{time.perf_counter() - start:.1f} s",
                flush=True,
            )
            for threads in thread_list:
                runs: dict[str, list[dict[str, Any]]] = {t: [] for t in tools}
                for _ in range(args.repeat):
                    for tool in ["memory", *[t for t in tools if t != "memory"]]:
                        if tool not in tools and tool != "memory":
                            continue
                        got = run_worker(tool, data, args.budget, threads)
                        runs.setdefault(tool, []).append(got)
                for tool, got in runs.items():
                    if not got:
                        continue
                    diff = check(data, tool) if tool != "memory" else 0.0
                    exact = diff == 0.0 if tool == "stream" else diff <= 1e-12
                    ok = ok and exact
                    row = {
                        "order": order,
                        "users": args.users,
                        "threads": threads,
                        "tool": tool,
                        "seconds": statistics.median(g["seconds"] for g in got),
                        "peak_gib": max(g["peak_bytes"] for g in got) / 2**30,
                        "rss_import_gib": (got[0].get("rss_import") or 0) / 2**30,
                        "streaming": got[0].get("streaming"),
                        "max_diff": diff,
                        "rounds": len(got),
                    }
                    rows.append(row)
                    print(
                        f"  {order:8s} threads={threads or 'all':>3} {tool:7s} "
                        f"{row['seconds']:7.2f} s  peak {row['peak_gib']:.2f} GiB  "
                        f"import {row['rss_import_gib']:.2f} GiB  "
                        f"diff {diff:.1e}  {row['streaming'] or ''}",
                        flush=True,
                    )
    meta = {
        "machine": platform.node(),
        "cpus": os.cpu_count(),
        "budget": args.budget,
        "items": args.items,
        "relevant": args.relevant,
    }
    if args.out:
        Path(args.out).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
