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
  "streaming")``;
- ``frames`` (not in the default list): ``receval.evaluate`` from pandas frames read from the
  same files before the clock starts (the scaling table's "frames" row).

The streamed worker also times its phases (``phases``: splitting the chunks into spill files,
reading the spill back, evaluating the batches; the rest is reading and checking the chunks
and the finish), the floor of the time the issue asks for: read + partition + one pass.
``--inputs DIR`` keeps the generated files in ``DIR/u<users>-<order>`` and reuses them (a
second invocation, e.g. the thread table, does not regenerate them). ``--shards N`` checks
that the streamed values are those of the users' shards evaluated apart: the users cut in
``N`` ranges (whole blocks of 200,000), each range's files generated on their own (the same
rows as in the file of all users), streamed in a process of its own and deleted; the shards'
per-user values, put together, must equal the whole run's bit for bit and their exact sum
(``math.fsum``) over all users the whole run's summary.

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
    python benchmarks/bench_streaming.py --users 5000000 --budget 1GiB --tools stream --shards 5
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
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
KNOWN = (*TOOLS, "frames")
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
    if tool in ("memory", "stream", "frames"):
        import receval

        rss_import = _rss()
        phases = _time_phases() if tool == "stream" else {}
        inputs: tuple[Any, Any] = (str(truth), str(preds))
        if tool == "frames":  # read before the clock starts, as bench_queries' frames
            inputs = (pd.read_parquet(truth), pd.read_parquet(preds))
        start = time.perf_counter()
        result = receval.evaluate(
            *inputs, METRICS, memory_budget=budget if tool == "stream" else None
        )
        seconds = time.perf_counter() - start
        values = result.per_user
        extra = {
            "rss_import": rss_import,
            "streaming": result.counts.get("streaming"),  # type: ignore[typeddict-item]
            "summary": {k: float(v) for k, v in result.summary.items()},
            "phases": {k: round(v, 3) for k, v in phases.items()},
        }
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
    load = os.getloadavg()[0]
    return {"tool": tool, "seconds": seconds, "peak_bytes": peak, "load": load, **extra}


def _time_phases() -> dict[str, float]:
    """Wall seconds spent in the streaming path's steps, filled in as it runs: ``partition``
    (chunks split and appended to spill files), ``spill_read`` (a partition read back),
    ``evaluate`` (the batches evaluated: the one pass); the clock's rest is reading and
    checking the input chunks and the finish. The methods are wrapped, not changed."""
    from receval.streaming import plan, spill

    spent = {"partition": 0.0, "spill_read": 0.0, "evaluate": 0.0}

    def timed(cls: Any, name: str, key: str) -> None:
        inner = getattr(cls, name)

        @functools.wraps(inner)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start

        setattr(cls, name, wrapper)

    timed(spill.Partitioner, "add", "partition")
    timed(spill.Partitioner, "close", "partition")
    timed(spill.Partitioner, "read", "spill_read")
    timed(plan._Run, "evaluate", "evaluate")
    return spent


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
    load = os.getloadavg()[0]
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
    got = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    got["load_before"] = load
    return got


def check(data: Path, tool: str, reference: str = "memory") -> float:
    """The largest difference between ``tool``'s per-user values and ``reference``'s (receval
    in memory; the streamed ones where the in-memory path is not run): 0.0 required of
    receval's paths."""
    import numpy as np
    import pandas as pd
    from bench_queries import METRICS

    ref = pd.read_parquet(data / f"values-{reference}.parquet")
    ref = ref.sort_values("user").reset_index(drop=True)
    got = (
        pd.read_parquet(data / f"values-{tool}.parquet").sort_values("user").reset_index(drop=True)
    )
    if len(ref) != len(got) or not (ref["user"].to_numpy() == got["user"].to_numpy()).all():
        return float("inf")
    return max(float(np.max(np.abs(ref[m].to_numpy() - got[m].to_numpy()))) for m in METRICS)


def inputs_for(
    root: Path, order: str, args: argparse.Namespace, first_user: int = 0, n_users: int = 0
) -> Path:
    """The folder of one order's input files under ``root``, written unless already there
    (``done`` marks a complete pair); ``first_user``/``n_users``: a shard of the users."""
    from bench_queries import write_inputs

    n_users = n_users or args.users
    name = f"u{args.users}-{order}" + (
        f"-shard{first_user}" if first_user or n_users != args.users else ""
    )
    data = root / name
    if (data / "done").exists():
        return data
    data.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    _, _, n_truth, n_preds = write_inputs(
        data,
        n_users,
        args.items,
        args.relevant,
        seed=0,
        ids="int",
        order="by-user" if order == "sorted" else "shuffled",
        first_user=first_user,
    )
    (data / "done").write_text(f"{n_truth} {n_preds}\n")
    print(
        f"{name}: {n_truth:,} truth + {n_preds:,} prediction rows written in "
        f"{time.perf_counter() - start:.1f} s",
        flush=True,
    )
    return data


def shard_check(root: Path, order: str, data: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The whole run's streamed values against its ``--shards`` shards streamed apart: the
    per-user values bit for bit, the summary against the exact mean (``math.fsum``) of the
    shards' per-user values. Each shard's files are deleted once evaluated."""
    import shutil

    import bench_queries
    import numpy as np
    import pandas as pd
    from bench_queries import METRICS

    whole = pd.read_parquet(data / "values-stream.parquet").sort_values("user")
    whole = whole.reset_index(drop=True)
    block = bench_queries.BLOCK_USERS
    blocks = -(-args.users // block)
    cuts = [round(i * blocks / args.shards) * block for i in range(args.shards + 1)]
    cuts[-1] = args.users
    parts, runs = [], []
    for first, last in itertools.pairwise(cuts):
        if last <= first:
            continue
        shard = inputs_for(root, order, args, first_user=first, n_users=last - first)
        got = run_worker("stream", shard, args.budget, None)
        runs.append(
            {
                "first_user": first,
                "users": last - first,
                "seconds": got["seconds"],
                "peak_gib": got["peak_bytes"] / 2**30,
                "summary": got["summary"],
            }
        )
        parts.append(pd.read_parquet(shard / "values-stream.parquet"))
        shutil.rmtree(shard)
        print(f"  shard {first:,}..{last - 1:,}: {got['seconds']:.2f} s", flush=True)
    joined = pd.concat(parts, ignore_index=True).sort_values("user").reset_index(drop=True)
    same = len(joined) == len(whole) and all(
        np.array_equal(joined[c].to_numpy(), whole[c].to_numpy()) for c in ["user", *METRICS]
    )
    summary = json.loads((data / "summary-stream.json").read_text())
    gaps = {m: abs(math.fsum(joined[m].to_numpy()) / len(joined) - summary[m]) for m in METRICS}
    return {
        "order": order,
        "shards": runs,
        "per_user_identical": bool(same),
        "summary_vs_fsum_of_shards": gaps,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=200_000)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--relevant", type=int, default=10)
    parser.add_argument("--budget", default="256MiB")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"of {','.join(KNOWN)}")
    parser.add_argument("--orders", default=",".join(ORDERS))
    parser.add_argument("--threads", default="", help="a list: 1,2,4 (default: all cores)")
    parser.add_argument(
        "--data", default=None, help="folder for the inputs (default: a temporary folder)"
    )
    parser.add_argument(
        "--inputs", default=None, help="keep the inputs in this folder and reuse them"
    )
    parser.add_argument(
        "--shards", type=int, default=0, help="check the streamed values against N shards"
    )
    parser.add_argument("--out", default=None, help="write the results as JSON")
    parser.add_argument("--block-users", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--values", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        done = worker(args.worker, Path(args.data), args.budget, Path(args.values))
        if "summary" in done:
            Path(args.values).with_name(f"summary-{args.worker}.json").write_text(
                json.dumps(done["summary"])
            )
        print(json.dumps(done))
        return 0

    if args.block_users:  # smaller generator blocks: a shard check on a few users (the tests)
        import bench_queries

        bench_queries.BLOCK_USERS = args.block_users
    tools = [t for t in args.tools.split(",") if t]
    unknown = sorted(set(tools) - set(KNOWN))
    if unknown:
        parser.error(f"unknown tools {unknown}; known: {', '.join(KNOWN)}")
    if args.shards and "stream" not in tools:
        parser.error("--shards checks the streamed values: --tools must hold stream")
    # receval's values are the reference: in memory where run, else the streamed ones
    reference = next(t for t in ("memory", "frames", "stream", *tools) if t in tools)
    thread_list: list[int | None] = [int(t) for t in args.threads.split(",") if t] or [None]
    rows: list[dict[str, Any]] = []
    shards: list[dict[str, Any]] = []
    ok = True
    with tempfile.TemporaryDirectory(dir=args.data) as tmp:
        root = Path(args.inputs) if args.inputs else Path(tmp)
        for order in args.orders.split(","):
            data = inputs_for(root, order, args)
            for threads in thread_list:
                runs: dict[str, list[dict[str, Any]]] = {t: [] for t in tools}
                for _ in range(args.repeat):  # one round: every tool once, interleaved
                    for tool in tools:
                        runs[tool].append(run_worker(tool, data, args.budget, threads))
                for tool, measured in runs.items():
                    diff = check(data, tool, reference) if tool != reference else 0.0
                    receval_path = tool in ("memory", "stream", "frames")
                    exact = diff == 0.0 if receval_path else diff <= 1e-12
                    ok = ok and exact
                    row = {
                        "order": order,
                        "users": args.users,
                        "threads": threads,
                        "tool": tool,
                        "seconds": statistics.median(g["seconds"] for g in measured),
                        "all_seconds": [round(g["seconds"], 3) for g in measured],
                        "peak_gib": max(g["peak_bytes"] for g in measured) / 2**30,
                        "rss_import_gib": (measured[0].get("rss_import") or 0) / 2**30,
                        "streaming": measured[0].get("streaming"),
                        "phases": [g.get("phases") for g in measured] if tool == "stream" else None,
                        "load": [round(g["load_before"], 1) for g in measured],
                        "reference": reference,
                        "max_diff": diff,
                        "rounds": len(measured),
                    }
                    rows.append(row)
                    print(
                        f"  {order:8s} threads={threads or 'all':>3} {tool:7s} "
                        f"{row['seconds']:7.2f} s {row['all_seconds']} "
                        f"peak {row['peak_gib']:.2f} GiB  "
                        f"import {row['rss_import_gib']:.2f} GiB  "
                        f"diff {diff:.1e}  load {row['load']}  {row['streaming'] or ''} "
                        f"{row['phases'] or ''}",
                        flush=True,
                    )
            if args.shards:
                got_shards = shard_check(root, order, data, args)
                shards.append(got_shards)
                ok = ok and got_shards["per_user_identical"]
                print(f"  {order}: shards {json.dumps(got_shards)}", flush=True)
            if not args.inputs:  # the temporary folder goes; drop each order's files now
                import shutil

                shutil.rmtree(data, ignore_errors=True)
    meta = {
        "machine": platform.node(),
        "cpus": os.cpu_count(),
        "budget": args.budget,
        "items": args.items,
        "relevant": args.relevant,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    if args.out:
        Path(args.out).write_text(
            json.dumps({"meta": meta, "rows": rows, "shards": shards}, indent=1)
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
