"""The kernel pass alone (``dispatch.run``: picture and metrics) of one tree, under options.

Run from a checkout with its ``src`` on ``PYTHONPATH``; the data is bench_core's (as
compare_refs.sh makes it). Prints the wall min and median and the process CPU min and median
of 5 timed runs (after one that compiles or loads the kernel) and saves the per-user values,
so two trees can be compared bit for bit:

    for side in "$OLD" "$NEW"; do (cd "$side" && PYTHONPATH=$side/src python \\
        "$NEW/benchmarks/kernel_pass.py" DATA_DIR '{"ties": "average"}' \\
        "/tmp/v-$(basename $side).npy"); done
"""

from __future__ import annotations

import json
import pathlib
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench_core as bc

from receval import audit, dispatch, shaping
from receval.data.columns import read_columns
from receval.measures.spec import parse_metrics
from receval.options import Options


def main() -> int:
    warnings.simplefilter("ignore")
    data, options_json, out = sys.argv[1:4]
    truth, pred, _ = bc.load_frames(pathlib.Path(data))
    options = Options(**json.loads(options_json))
    specs = parse_metrics(bc.metric_names([1, 5, 10, 20, 50, 100]))
    t = read_columns(truth, side="truth", user_col="user", item_col="item", value_col="rating",
                     value_required=False)
    p = read_columns(pred, side="predictions", user_col="user", item_col="item",
                     value_col="score", value_required=True, fallback_rank_col="rank")
    prepared = shaping.prepare(t, p, options)
    selected = audit.select_users(prepared, options)
    request = dispatch.engine_request(prepared, selected, specs, options)
    result = dispatch.run(request, specs, options)  # compiled or loaded from the cache
    walls, cpus = [], []
    for _ in range(5):
        wall, cpu = time.perf_counter(), time.process_time()
        dispatch.run(request, specs, options)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    np.save(out, np.asarray(result.value))
    print(min(walls), statistics.median(walls), min(cpus), statistics.median(cpus))
    return 0


if __name__ == "__main__":
    sys.exit(main())
