"""Peak memory of ``receval monitor`` over Parquet logs, whole and with ``--memory-budget``
(issue 35, item 5), each run a process of its own.

The logs: ``--lists`` served lists of 10 items over ``--days`` days (users drawn from a tenth of
the lists, ranks 1..10, served at uniform times), a click on 15% of the impressions a uniform
0-48 hours later (value 1). Each run is ``receval monitor -i imp.parquet --feedback fb.parquet
-m P@5,nDCG@10,MRR --window 7D --attribution 2D --format json``, started by a small process of
its own (``--measure``) whose only child it is: its peak resident memory is that child's
``ru_maxrss``. The two JSON outputs are checked equal (the streaming counts aside); the script
exits 1 if not.

    python benchmarks/bench_streaming_logs.py --lists 300000 --budget 256MiB
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def measure(imp: str, fb: str, budget: str | None) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "receval.cli",
        "monitor",
        "-i",
        imp,
        "--feedback",
        fb,
        "-m",
        "P@5,nDCG@10,MRR",
        "--window",
        "7D",
        "--attribution",
        "2D",
        "--format",
        "json",
        "--resamples",
        "200",
    ]
    if budget:
        cmd += ["--memory-budget", budget]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return {
        "seconds": time.perf_counter() - start,
        "peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
        "out": json.loads(done.stdout),
    }


def write(folder: Path, lists: int, days: int, seed: int) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    t0 = np.datetime64("2026-01-05T00:00:00", "ns").astype(np.int64)
    served = t0 + rng.integers(0, days * 86_400 * 10**9, lists)
    user = rng.integers(0, max(lists // 10, 1), lists)
    items = (rng.integers(0, 50_000, lists)[:, None] + np.arange(10) * 7919) % 50_000
    imp = pa.table(
        {
            "user": np.repeat(user, 10),
            "item": items.ravel(),
            "rank": np.tile(np.arange(1, 11), lists),
            "served_at": pa.array(np.repeat(served, 10), pa.timestamp("ns")),
        }
    )
    click = rng.random(lists * 10) < 0.15
    at = np.repeat(served, 10)[click] + rng.integers(0, 48 * 3600 * 10**9, int(click.sum()))
    fb = pa.table(
        {
            "user": np.repeat(user, 10)[click],
            "item": items.ravel()[click],
            "value": np.ones(int(click.sum())),
            "at": pa.array(at, pa.timestamp("ns")),
        }
    )
    pq.write_table(imp, folder / "imp.parquet", row_group_size=1 << 20)
    pq.write_table(fb, folder / "fb.parquet", row_group_size=1 << 20)
    return folder / "imp.parquet", folder / "fb.parquet"


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--measure":
        print(json.dumps(measure(sys.argv[2], sys.argv[3], sys.argv[4] or None)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lists", type=int, default=300_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--budget", default="256MiB")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        imp, fb = write(Path(tmp), args.lists, args.days, args.seed)
        runs = {}
        for budget in (None, args.budget):
            done = subprocess.run(
                [sys.executable, __file__, "--measure", str(imp), str(fb), budget or ""],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise SystemExit(done.stderr[-2000:])
            runs[budget or "whole"] = json.loads(done.stdout)
    whole, parts = runs["whole"], runs[args.budget]
    how = parts["out"]["counts"].pop("streaming")
    same = whole["out"] == parts["out"]
    print(f"{args.lists * 10:,} impressions over {args.days} days")
    print(
        f"whole: {whole['peak'] / 2**30:.2f} GiB {whole['seconds']:.1f} s | "
        f"--memory-budget {args.budget}: {parts['peak'] / 2**30:.2f} GiB "
        f"{parts['seconds']:.1f} s, {how['partitions']} pieces | equal: {same}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
