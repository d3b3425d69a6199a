#!/usr/bin/env bash
# Interleaved speed comparison of two receval commits on the bench_core workload, and a
# bit-for-bit check of their per-user values (a shared machine drifts: old and new runs
# alternate, ABAB..., so a load change hits both alike).
#
# Usage (from a checkout; BASE and NEW are commits, NEW defaults to the working tree):
#   benchmarks/compare_refs.sh BASE [NEW] [USERS] [ROUNDS]
#   benchmarks/compare_refs.sh c897919 HEAD 1000000 5
# Each round runs bench_core's receval worker (end to end, ingest, compute, kernel; medians of
# --repeat 3 inside) from each tree in a fresh process, then the kernel pass alone (5 runs,
# wall and process CPU time, one thread and numba's default). Prints the per-round numbers,
# the medians per tree, new/base ratios, and whether the per-user values are identical bit
# for bit.
set -euo pipefail

BASE=${1:?usage: compare_refs.sh BASE [NEW] [USERS] [ROUNDS]}
NEW=${2:-WORKTREE}
USERS=${3:-200000}
ROUNDS=${4:-3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
TMP=${COMPARE_TMP:-/tmp/receval-compare}
DATA=${COMPARE_DATA:-/tmp/receval-bench}
mkdir -p "$TMP"

tree_of() {  # a detached worktree of commit $1 (the working tree itself for WORKTREE)
    if [ "$1" = WORKTREE ]; then echo "$HERE"; return; fi
    local sha dir
    sha=$(git -C "$HERE" rev-parse --short "$1")
    dir="$TMP/tree-$sha"
    [ -d "$dir" ] || git -C "$HERE" worktree add --detach "$dir" "$sha" >/dev/null
    echo "$dir"
}
A=$(tree_of "$BASE")
B=$(tree_of "$NEW")
echo "base: $BASE at $A"
echo "new:  $NEW at $B"

# the data, generated once by the new tree's bench_core (the same generator in both)
DPATH=$(cd "$B/benchmarks" && python - "$USERS" "$DATA" <<'EOF'
import sys
from argparse import Namespace
import bench_core as bc
args = Namespace(items_per_user=100, relevant=20, seed=0, data_dir=sys.argv[2])
path = bc.data_path(args, int(sys.argv[1]))
bc.generate(path, int(sys.argv[1]), 100, 20, 0)
print(path)
EOF
)
CFG="{\"n_users\": $USERS, \"k\": 100, \"rel\": 20, \"cutoffs\": [1, 5, 10, 20, 50, 100], \"repeat\": 3, \"peer_repeat\": 1}"

run_tree() {  # one worker run of tree $1, its JSON line to $2
    (cd "$1" && PYTHONPATH="$1/src" python benchmarks/bench_core.py --worker receval \
        --worker-path "$DPATH" --worker-config "$CFG" | tail -1 > "$2")
}
per_user() {  # the per-user values of tree $1 on the data, as raw float64 bits, to $2
    (cd "$1" && PYTHONPATH="$1/src" python - "$DPATH" "$2" <<'EOF'
import sys, warnings
import numpy as np
sys.path.insert(0, "benchmarks")
import bench_core as bc
import receval
warnings.simplefilter("ignore")
truth, pred, _ = bc.load_frames(__import__("pathlib").Path(sys.argv[1]))
r = receval.evaluate(truth, pred, bc.metric_names([1, 5, 10, 20, 50, 100]))
np.save(sys.argv[2], r.per_user.drop(columns="user").to_numpy(np.float64))
np.save(sys.argv[2] + ".users", r.per_user["user"].to_numpy())
EOF
    )
}

kernel_cpu() {  # tree $1: the kernel pass alone, 5 timed runs: wall min, median; CPU min, median
    (cd "$1" && PYTHONPATH="$1/src" python - "$DPATH" <<'EOF'
import pathlib, statistics, sys, time, warnings
sys.path.insert(0, "benchmarks")
warnings.simplefilter("ignore")
import bench_core as bc
from receval import audit, dispatch, shaping
from receval.data.columns import read_columns
from receval.measures.spec import parse_metrics
from receval.options import Options
truth, pred, _ = bc.load_frames(pathlib.Path(sys.argv[1]))
metrics = bc.metric_names([1, 5, 10, 20, 50, 100])
options, specs = Options(), parse_metrics(metrics)
t = read_columns(truth, side="truth", user_col="user", item_col="item", value_col="rating",
                 value_required=False)
p = read_columns(pred, side="predictions", user_col="user", item_col="item",
                 value_col="score", value_required=True, fallback_rank_col="rank")
prepared = shaping.prepare(t, p, options)
selected = audit.select_users(prepared, options)
if hasattr(dispatch, "engine_request"):  # the typed request
    request = dispatch.engine_request(prepared, selected, specs, options)
    fn = lambda: dispatch.run(request, specs, options)
else:  # positional arrays and option codes (before issue 21)
    args = dispatch.kernel_arguments(specs, options)
    fn = lambda: dispatch.run(prepared, selected, specs, options, *args[2:], *args[:2])
fn()  # compiled or loaded from the cache
walls, cpus = [], []
for _ in range(5):
    w, c = time.perf_counter(), time.process_time()
    fn()
    walls.append(time.perf_counter() - w)
    cpus.append(time.process_time() - c)
print(min(walls), statistics.median(walls), min(cpus), statistics.median(cpus))
EOF
    )
}

# one untimed run each first: loads (or compiles) each tree's numba cache
run_tree "$A" "$TMP/warm-a.json"
run_tree "$B" "$TMP/warm-b.json"
for i in $(seq 1 "$ROUNDS"); do
    if [ $((i % 2)) -eq 1 ]; then first=a; else first=b; fi
    for side in $first $([ $first = a ] && echo b || echo a); do
        tree=$([ $side = a ] && echo "$A" || echo "$B")
        run_tree "$tree" "$TMP/run-$side-$i.json"
    done
done
# the kernel pass alone, interleaved: process CPU time (all threads) moves less with the load
# of other processes than wall time does; one thread, then numba's default
: > "$TMP/kernel.txt"
for i in $(seq 1 "$ROUNDS"); do
    for threads in 1 default; do
        for side in a b; do
            tree=$([ $side = a ] && echo "$A" || echo "$B")
            if [ $threads = 1 ]; then
                line=$(NUMBA_NUM_THREADS=1 kernel_cpu "$tree" | tail -1)
            else
                line=$(kernel_cpu "$tree" | tail -1)
            fi
            echo "$side $threads $line" >> "$TMP/kernel.txt"
        done
    done
done
per_user "$A" "$TMP/values-a.npy"
per_user "$B" "$TMP/values-b.npy"

python - "$TMP" "$ROUNDS" <<'EOF'
import json, statistics, sys
import numpy as np
tmp, rounds = sys.argv[1], int(sys.argv[2])
keys = ("seconds", "ingest", "compute", "kernel")
runs = {s: [json.load(open(f"{tmp}/run-{s}-{i}.json")) for i in range(1, rounds + 1)]
        for s in "ab"}
print(f"{'round':>5}  " + "  ".join(f"{k + ' base':>13} {k + ' new':>12}" for k in keys))
for i in range(rounds):
    print(f"{i + 1:>5}  " + "  ".join(
        f"{runs['a'][i].get(k, float('nan')):>13.3f} {runs['b'][i].get(k, float('nan')):>12.3f}"
        for k in keys))
for k in keys:
    a = statistics.median(r.get(k, float("nan")) for r in runs["a"])
    b = statistics.median(r.get(k, float("nan")) for r in runs["b"])
    print(f"median {k:>8}: base {a:.3f} s, new {b:.3f} s, new/base {b / a:.3f}")
errors = {s: runs[s][0].get("kernel_error") for s in "ab" if runs[s][0].get("kernel_error")}
if errors:
    print("kernel timing skipped:", errors)
kernel = {}
for line in open(f"{tmp}/kernel.txt"):
    side, threads, *nums = line.split()
    kernel.setdefault((side, threads), []).append([float(x) for x in nums])
for threads in ("1", "default"):
    a = np.median(np.array(kernel[("a", threads)]), axis=0)
    b = np.median(np.array(kernel[("b", threads)]), axis=0)
    print(f"kernel alone, {threads} thread(s), median over rounds of (min, median of 5): "
          f"wall base {a[0]:.3f}/{a[1]:.3f} new {b[0]:.3f}/{b[1]:.3f} (min: {b[0] / a[0]:.3f}); "
          f"CPU base {a[2]:.3f}/{a[3]:.3f} new {b[2]:.3f}/{b[3]:.3f} (min: {b[2] / a[2]:.3f})")
va, vb = np.load(f"{tmp}/values-a.npy"), np.load(f"{tmp}/values-b.npy")
ua = np.load(f"{tmp}/values-a.npy.users.npy", allow_pickle=True)
ub = np.load(f"{tmp}/values-b.npy.users.npy", allow_pickle=True)
same = (va.shape == vb.shape and np.array_equal(ua, ub)
        and np.array_equal(va.view(np.int64), vb.view(np.int64)))
print(f"per-user values: {va.shape[0]} users x {va.shape[1]} metrics, bit-identical: {same}")
summary_same = runs["a"][0]["values"] == runs["b"][0]["values"]
print(f"summaries identical: {summary_same}")
sys.exit(0 if same and summary_same else 1)
EOF
