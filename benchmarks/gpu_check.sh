#!/usr/bin/env bash
# The GPU checks of the torch engine in one command, on a machine with a CUDA GPU:
#   bash benchmarks/gpu_check.sh [OUT_DIR]
# 1. the engine-conformance suite with the torch doors on CUDA (pytest -m torch_device),
# 2. benchmarks/bench_gpu.py at 100k users x 50k items (+ a torch.profiler table),
# 3. benchmarks/gpu_order.py: which sums the device's own scans change,
# 4. bench_gpu.py at 1M users x 50k items (10x the scores; blocks of a quarter of free memory).
# Wheels in .whl/ (packages the machine lacks, e.g. array-api-compat) are installed first.
set -u
OUT=${1:-${OUT:-/tmp/gpu_check}}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD/src:$PWD/benchmarks:${PYTHONPATH:-}
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
LOG=$OUT/run.log
{
  date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import sys, torch, numba, numpy, pandas; print(sys.version.split()[0], 'torch', \
torch.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__, 'pandas', \
pandas.__version__)"
  echo "== numba compile (once, before the parallel tests)"
  time python3 -c "import pandas as pd, receval; receval.evaluate(pd.DataFrame({'user': [1], \
'item': [1]}), pd.DataFrame({'user': [1], 'item': [1], 'score': [1.0]}), ['P@1'])"
  echo "== conformance on CUDA"
  # the marked modules only: collecting the whole tree imports peers this machine may lack
  timeout "${CONFORMANCE_S:-200}" python3 -m pytest -m torch_device --torch-device cuda \
    $(grep -l "pytest.mark.torch_device" tests/test_*.py) -q -n 12 -p no:cacheprovider \
    > "$OUT/conformance.log" 2>&1
  tail -8 "$OUT/conformance.log"
  echo "== bench 100k x 50k"
  timeout "${BENCH_S:-170}" python3 benchmarks/bench_gpu.py --users 100000 --items 50000 \
    --repeat 3 --torchmetrics-users 300 --out "$OUT/bench_100k.json" \
    --profile "$OUT/profile_100k.txt" 2>&1
  echo "== order"
  timeout 90 python3 benchmarks/gpu_order.py --out "$OUT/order.json" > /dev/null 2>&1 \
    && python3 -c "import json; r = json.load(open('$OUT/order.json')); \
print(json.dumps(r['primitives'])); print({t: {k: {m: v for m, v in x['users_differing'].items() \
if v} for k, x in r['engine'][t].items()} for t in r['engine']})"
  echo "== bench 1M x 50k"
  timeout "${LARGE_S:-150}" python3 benchmarks/bench_gpu.py --users 1000000 --items 50000 \
    --repeat 1 --torchmetrics-users 100 --out "$OUT/bench_1m.json" 2>&1
  date -u
} 2>&1 | tee "$LOG"
