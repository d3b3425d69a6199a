"""Start-up time, side by side with a bare interpreter (issue 33, item 1).

Times, as medians of ``--repeat`` fresh processes each: ``python -c pass``, ``import receval``,
``receval --help`` and ``receval evaluate`` on a 10-row file (after one untimed run, so numba's
cached kernels are on disk), and prints each one's ratio to ``python -c pass``. The targets, on
a quiet machine: ``import receval`` and ``receval --help`` under 0.5 s, ``receval evaluate``
under 1.5 s. The machine's load average is printed before and after: compare ratios within one
run, not seconds across runs.

    python benchmarks/bench_startup.py --repeat 7
    python benchmarks/bench_startup.py --repeat 1 --json out.json   # the test's quick check
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: the targets on a quiet machine, in seconds
TARGETS = {"import receval": 0.5, "receval --help": 0.5, "receval evaluate (10 rows)": 1.5}


def commands(folder: Path) -> dict[str, list[str]]:
    """What is timed: each a command line of this interpreter."""
    py = sys.executable
    return {
        "python -c pass": [py, "-c", "pass"],
        "import receval": [py, "-c", "import receval"],
        "receval --help": [py, "-m", "receval.cli", "--help"],
        "receval evaluate (10 rows)": [py, "-m", "receval.cli", "evaluate", "-t",
                                       str(folder / "t.csv"), "-p", str(folder / "p.csv")],
    }


def write_inputs(folder: Path) -> None:
    """A 10-row truth and a 10-row predictions file (5 users)."""
    truth = ["user,item,rating"] + [f"{u},{u + i},1" for u in range(5) for i in range(2)]
    preds = ["user,item,score"] + [f"{u},{u + i},{1 - i / 4}" for u in range(5)
                                   for i in (1, 2)]
    (folder / "t.csv").write_text("\n".join(truth) + "\n")
    (folder / "p.csv").write_text("\n".join(preds) + "\n")


#: the environment of every run: bytecode written and read as an installed package's is (a
#: shell with PYTHONDONTWRITEBYTECODE=1 would otherwise compile receval's sources every run)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def time_once(argv: list[str]) -> float:
    """Wall seconds of one run; a failing run stops the benchmark."""
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=ENV)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per command (median)")
    parser.add_argument("--json", type=Path, default=None, help="also write the medians here")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_inputs(folder)
        timed = commands(folder)
        for argv_ in timed.values():  # warm: the OS cache, numba's kernel cache
            time_once(argv_)
        runs: dict[str, list[float]] = {name: [] for name in timed}
        for _ in range(args.repeat):  # interleaved, so a burst of load hits every command
            for name, argv_ in timed.items():
                runs[name].append(time_once(argv_))
    medians = {name: statistics.median(values) for name, values in runs.items()}
    base = medians["python -c pass"]
    print(f"load average before {load_before:.2f}, after {os.getloadavg()[0]:.2f}; "
          f"medians of {args.repeat} runs; {sys.version.split()[0]}")
    print(f"{'command':<28}{'seconds':>9}{'x python -c pass':>18}{'target':>9}")
    for name, seconds in medians.items():
        target = f"{TARGETS[name]:.1f}" if name in TARGETS else ""
        print(f"{name:<28}{seconds:>9.3f}{seconds / base:>18.1f}{target:>9}")
    if args.json is not None:
        args.json.write_text(json.dumps(medians, indent=2) + "\n")
    return medians


if __name__ == "__main__":
    main()
