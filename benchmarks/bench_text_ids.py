"""Peak memory of text ids against integer ids (issue 35, item 4), on the command line.

The inputs: ``--users`` users x 20 predictions (tie-free random scores) and 5 truth items per
user, items drawn from about 1M (bench_queries.py's generator), written to Parquet twice from
the same rows: integer ids, and text ids ('u17' users, zero-padded '0004711' items: every
distinct id a distinct string). Each run is ``receval evaluate -t truth.parquet -p
preds.parquet -m <13 metrics> --format json`` in a process of its own, started by a small
process of its own (``--measure``) whose only child it is: its peak resident memory is that
child's ``ru_maxrss`` (``resource.getrusage(RUSAGE_CHILDREN)``). ``--budget`` adds a run of
each with ``--memory-budget`` (the streaming path). The summaries of text and integer ids are
checked equal (the same rows); the script exits 1 if not.

    python benchmarks/bench_text_ids.py --users 500000
    python benchmarks/bench_text_ids.py --users 2000000 --budget 1GiB   # a quiet machine
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ITEMS, RELEVANT = 20, 5
METRICS = [
    "P@5",
    "P@10",
    "P@20",
    "R@10",
    "R@20",
    "nDCG@5",
    "nDCG@10",
    "nDCG@20",
    "AP@10",
    "AP@20",
    "RR@10",
    "Hit@10",
    "Hit@20",
]


def measure(truth: str, preds: str, budget: str | None) -> dict[str, Any]:
    """One CLI run as this process's only child: seconds, peak RSS (bytes), summary."""
    cmd = [
        sys.executable,
        "-m",
        "receval.cli",
        "evaluate",
        "-t",
        truth,
        "-p",
        preds,
        "-m",
        ",".join(METRICS),
        "--format",
        "json",
    ]
    if budget:
        cmd += ["--memory-budget", budget]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    out = json.loads(done.stdout)
    return {
        "seconds": seconds,
        "peak": peak,
        "summary": out["summary"],
        "streaming": out.get("counts", {}).get("streaming"),
    }


def run(truth: Path, preds: Path, budget: str | None) -> dict[str, Any]:
    """:func:`measure` in a fresh process (no earlier run's peak carried over)."""
    cmd = [sys.executable, __file__, "--measure", str(truth), str(preds), budget or ""]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return dict(json.loads(done.stdout))


def write(data: Path, users: int, seed: int) -> dict[str, tuple[Path, Path]]:
    """The same rows as integer and as text ids."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from bench_queries import as_string_ids, generate

    paths = {}
    for ids in ("int", "text"):
        paths[ids] = (data / f"truth_{ids}.parquet", data / f"preds_{ids}.parquet")
    writers: dict[Path, Any] = {}
    try:
        for first in range(0, users, 200_000):
            truth, pred = generate(min(200_000, users - first), ITEMS, RELEVANT, seed, first)
            for ids in ("int", "text"):
                for frame, path in zip((truth, pred), paths[ids], strict=True):
                    frame = as_string_ids(frame) if ids == "text" else frame
                    table = pa.Table.from_pandas(frame, preserve_index=False)
                    if path not in writers:
                        writers[path] = pq.ParquetWriter(path, table.schema)
                    writers[path].write_table(table, row_group_size=1 << 20)
    finally:
        for w in writers.values():
            w.close()
    return paths


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--measure":
        print(json.dumps(measure(sys.argv[2], sys.argv[3], sys.argv[4] or None)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=500_000)
    parser.add_argument("--budget", default=None, help="also run with --memory-budget")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="keep the inputs in this folder (reused by a later run with the "
        "same --users and --seed); default: a temporary folder",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.data is not None:
            folder = args.data / f"text_ids_{args.users}_{args.seed}"
            folder.mkdir(parents=True, exist_ok=True)
        paths = {
            ids: (folder / f"truth_{ids}.parquet", folder / f"preds_{ids}.parquet")
            for ids in ("int", "text")
        }
        if not all(p.exists() for pair in paths.values() for p in pair):
            paths = write(folder, args.users, args.seed)
        results: dict[str, Any] = {}
        for budget in [None] + ([args.budget] if args.budget else []):
            mode = "memory" if budget is None else f"stream {budget}"
            for ids in ("int", "text"):  # interleaved
                results[f"{mode} {ids}"] = run(*paths[ids], budget)
    ok = True
    print(
        f"{args.users} users x {ITEMS} predictions, {len(METRICS)} metrics, "
        f"{platform.node()}, {platform.python_version()}"
    )
    for mode in dict.fromkeys(k.rsplit(" ", 1)[0] for k in results):
        a, b = results[f"{mode} int"], results[f"{mode} text"]
        same = a["summary"] == b["summary"]
        ok &= same
        print(
            f"{mode:>14}: int {a['peak'] / 2**30:.2f} GiB {a['seconds']:.1f} s | text "
            f"{b['peak'] / 2**30:.2f} GiB {b['seconds']:.1f} s | text/int "
            f"{b['peak'] / a['peak']:.2f}x | summaries equal: {same}"
        )
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
