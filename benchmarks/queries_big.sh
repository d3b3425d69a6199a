#!/usr/bin/env bash
# bench_queries.py at 1M and 5M users on a large machine, in one command:
#   bash benchmarks/queries_big.sh [OUT_DIR]
# 1M users: every tool (receval from frames and Parquet, the CLI, DuckDB, Polars, the floor);
# 5M users (600M rows; about 60 GiB of memory at the peak): receval, DuckDB, Polars and the
# floor (the CLI reads the same files as receval from Parquet). Python packages the machine
# lacks may come as .whl/*.tar.xz (site-packages trees) and are unpacked to /tmp/site first.
# Each tool's line is printed as soon as it is measured, so a run cut short still reports.
set -u
OUT=${1:-${OUT:-/tmp/queries_big}}
mkdir -p "$OUT"
if compgen -G ".whl/*.tar.xz" > /dev/null; then
  mkdir -p /tmp/site
  for pack in .whl/*.tar.xz; do tar -xJf "$pack" -C /tmp/site; done
fi
if [ -d /tmp/site ]; then export PYTHONPATH=/tmp/site; fi
export PYTHONPATH=$PWD/src:$PWD/benchmarks:${PYTHONPATH:-}
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
DATA=${DATA:-/tmp/queries_big_data}
SMALL=${SMALL:-1000000} LARGE=${LARGE:-5000000}  # users
{
  date -u; nproc; free -g | head -2
  python3 -c "import sys, numpy, pandas, numba, pyarrow, duckdb, polars; print(sys.version.split()[0], \
'numpy', numpy.__version__, 'pandas', pandas.__version__, 'numba', numba.__version__, 'pyarrow', \
pyarrow.__version__, 'duckdb', duckdb.__version__, 'polars', polars.__version__); \
import receval" || exit 1
  echo "== $SMALL users, every tool"
  timeout "${ONE_M_S:-150}" python3 benchmarks/bench_queries.py --users "$SMALL" --repeat 1 \
    --data-dir "$DATA/1m" --out "$OUT/queries_1m.json"
  rm -rf "$DATA/1m"
  echo "== $LARGE users"
  timeout "${FIVE_M_S:-380}" python3 benchmarks/bench_queries.py --users "$LARGE" --repeat 1 \
    --tools receval,duckdb,polars,floor --data-dir "$DATA/5m" --out "$OUT/queries_5m.json"
  rm -rf "$DATA"
  date -u
} 2>&1 | tee "$OUT/run.log"
