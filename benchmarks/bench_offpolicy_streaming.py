"""Off-policy estimates of a Parquet log, read whole and under a memory budget: time and peak
memory, each in its own process, and whether every number is equal.

    PYTHONPATH=src python benchmarks/bench_offpolicy_streaming.py --requests 300000 \\
        --budget 256MiB
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make(folder: Path, n: int, seed: int = 0) -> None:
    """A log of n requests x 3 positions (rows shuffled) and a probability target."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    req = np.repeat(rng.permutation(n), 3)
    pos = np.tile([1, 2, 3], n)
    item = (req * 7 + pos * 13) % 5000
    log = pd.DataFrame(
        {
            "request": req,
            "item": item,
            "position": pos,
            "reward": rng.integers(0, 2, req.size).astype(float),
            "propensity": rng.uniform(0.2, 0.9, req.size),
        }
    )
    log = log.sample(frac=1.0, random_state=seed)
    log.to_parquet(folder / "log.parquet", index=False)
    target = log[["request", "item", "position"]].assign(
        probability=rng.uniform(0.05, 0.9, len(log))
    )
    target.to_parquet(folder / "target.parquet", index=False)


def run(folder: Path, budget: str | None) -> dict[str, object]:
    """One estimate in this process: its seconds, peak RSS and table."""
    import pandas as pd

    from receval.offpolicy import estimate

    start = time.perf_counter()
    if budget is None:
        out = estimate(
            pd.read_parquet(folder / "log.parquet"),
            {"t": pd.read_parquet(folder / "target.parquet")},
            estimators=["ips", "snips"],
            n_resamples=100,
        )
    else:
        out = estimate(
            str(folder / "log.parquet"),
            {"t": str(folder / "target.parquet")},
            estimators=["ips", "snips"],
            n_resamples=100,
            memory_budget=budget,
        )
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "seconds": seconds,
        "peak_bytes": peak,
        "partitions": out.options.get("partitions", 1),
        "table": out.table.to_csv(),  # floats at full precision
    }


def main() -> None:
    """Make the files, then each path in its own process."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300_000)
    parser.add_argument("--budget", default="256MiB")
    parser.add_argument("--child", nargs=2, metavar=("FOLDER", "BUDGET"))
    args = parser.parse_args()
    if args.child:
        folder, budget = Path(args.child[0]), args.child[1]
        print(json.dumps(run(folder, None if budget == "-" else budget)))
        return
    folder = Path(tempfile.mkdtemp())
    try:
        results = _measure(folder, args.requests, args.budget)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    tables = {r.pop("table") for r in results.values()}
    for name, r in results.items():
        print(
            f"{name}: {r['seconds']:.2f} s, peak {r['peak_bytes'] / 2**20:.0f} MiB, "
            f"{r['partitions']} partition(s)"
        )
    print("equal tables:", len(tables) == 1)


def _measure(folder: Path, n: int, budget_text: str) -> dict[str, dict[str, object]]:
    make(folder, n)
    results = {}
    for name, budget in (("in memory", "-"), (f"budget {budget_text}", budget_text)):
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(folder), budget],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise SystemExit(done.stderr.strip().splitlines()[-1])
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


if __name__ == "__main__":
    main()
