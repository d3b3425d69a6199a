"""Cold first runs of two receval trees, interleaved (a shared machine drifts: ABBA...).

Each run is bench_first_run's plain call in a fresh process with an empty ``NUMBA_CACHE_DIR``,
receval imported from ``<tree>/src``: the wall seconds of the first ``evaluate``, the CPU
seconds of that call (compiling is one thread: the figure that moves least with the load of
other processes), and the number of compilations.

    git worktree add --detach /tmp/first-run-base a147b48
    python benchmarks/compare_first_run.py /tmp/first-run-base . --rounds 3
    python benchmarks/compare_first_run.py OLD NEW --rounds 3 --options '{"ties": "average"}'
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import bench_first_run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="a receval checkout (its src/ is imported)")
    parser.add_argument("new", help="another checkout")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--options", default="{}", help="receval.evaluate options, as JSON")
    args = parser.parse_args()
    trees = {"base": Path(args.base).resolve(), "new": Path(args.new).resolve()}
    options = json.loads(args.options)
    rows: dict[str, list[dict]] = {side: [] for side in trees}
    for i in range(args.rounds):
        for side in ("base", "new") if i % 2 == 0 else ("new", "base"):
            os.environ["PYTHONPATH"] = str(trees[side] / "src")
            with tempfile.TemporaryDirectory() as cache:
                row = bench_first_run.run(cache, **options)
            row["load"] = os.getloadavg()[0]
            rows[side].append(row)
            print(side, f"{row['first_evaluate_s']:.2f} s wall",
                  f"{row['compile_cpu_s']:.2f} CPU-s", row["compilations"], "compilations",
                  row["slowest"][:2], f"load {row['load']:.1f}", flush=True)
    for side, runs in rows.items():
        wall = statistics.median(r["first_evaluate_s"] for r in runs)
        cpu = statistics.median(r["compile_cpu_s"] for r in runs)
        print(f"{side}: median {wall:.2f} s wall, {cpu:.2f} CPU-s; compilations "
              f"{[r['compilations'] for r in runs]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
