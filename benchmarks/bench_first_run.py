"""The first run's compile time (issue 24 part 5), each case in a fresh process.

- cold: an empty numba cache (``NUMBA_CACHE_DIR`` a new temp dir), one ``receval.evaluate`` of
  P, R, nDCG, MAP at 10 on a tiny frame: the seconds before the first number, the process's
  CPU seconds during that call (``compile_cpu_s``: compiling is one thread, so on a loaded
  machine it is the figure that moves least), and the compilations numba made
  (``numba:compile`` events; the slowest named); ``--runs`` times, each in a new cache, with
  the medians;
- cold, ``ties="average"``: the same in an empty cache with a request that needs another
  kernel variant (the tie-group sums; see ``numba_engine.KernelVariant``);
- then ``ties="average"`` after the plain call in the same cache: what a second variant costs
  on top of the first;
- warm: the plain call again with that cache (loading the compiled kernels);
- after ``receval demo`` in another empty cache: the same call with integer ids and with
  string ids compiles nothing (the count of compilations is printed; 0 expected).

    python benchmarks/bench_first_run.py --runs 3 --out /tmp/first_run.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CALL = r"""
import json, resource, sys, time
start = time.perf_counter()
import pandas as pd
import receval
from numba.core import event
imported = time.perf_counter()
ids = sys.argv[1]
options = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
user = [1, 1, 2] if ids == "int" else ["a", "a", "b"]
truth = pd.DataFrame({"user": user[:2], "item": [1, 2] if ids == "int" else ["x", "y"]})
preds = pd.DataFrame({"user": user, "item": [2, 5, 4] if ids == "int" else ["y", "z", "w"],
                      "score": [0.9, 0.8, 0.7]})
with event.install_recorder("numba:compile") as rec:
    t, cpu = time.perf_counter(), time.process_time()
    receval.evaluate(truth, preds, ["P@10", "R@10", "nDCG@10", "MAP@10"], **options)
    first, cpu = time.perf_counter() - t, time.process_time() - cpu
open_, top = {}, []
for ts, ev in rec.buffer:
    d = ev.data["dispatcher"]
    key = (id(d), str(ev.data["args"]))
    if ev.is_start:
        open_[key] = (ts, len(open_))
    else:
        t0, depth = open_.pop(key)
        top.append((ts - t0, depth, f"{d.py_func.__module__}.{d.py_func.__name__}"))
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import_s": imported - start, "first_evaluate_s": first,
                  "compile_cpu_s": cpu, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "compilations": sum(1 for _ in top),
                  "slowest": sorted([(round(s, 2), n) for s, d, n in top if d == 0],
                                    reverse=True)[:5]}))
"""


def run(cache: str, ids: str = "int", **options: Any) -> dict[str, Any]:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    done = subprocess.run([sys.executable, "-c", CALL, ids, json.dumps(options)], env=env,
                          capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def cold(runs: int, **options: Any) -> dict[str, Any]:
    """``runs`` first calls, each in an empty cache: the runs and the medians."""
    rows = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            rows.append(run(cache, **options))
    return {"runs": rows, **{f"median_{key}": statistics.median(r[key] for r in rows)
                             for key in ("first_evaluate_s", "compile_cpu_s", "cpu_s")}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--runs", type=int, default=1, help="cold runs, each in a new cache")
    args = parser.parse_args()
    results: dict[str, Any] = {"cold": cold(args.runs),
                               "cold_average_ties": cold(args.runs, ties="average")}
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as demo:
        run(cache)
        results["average_ties_after_plain"] = run(cache, ties="average")
        results["warm"] = run(cache)
        env = {**os.environ, "NUMBA_CACHE_DIR": demo}
        subprocess.run([sys.executable, "-m", "receval.cli", "demo"], env=env, check=True,
                       capture_output=True, cwd=demo)
        results["after_demo_int"] = run(demo, "int")
        results["after_demo_string"] = run(demo, "string")
    results["load_average"] = os.getloadavg()
    for name, row in results.items():
        print(name, {k: v for k, v in row.items() if k != "runs"} if isinstance(row, dict)
              else row)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
