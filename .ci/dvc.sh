#!/usr/bin/env bash
# A separate virtual environment with DVC for tests/test_tracking.py (`dvc metrics show` reads
# the metrics.json that `--log dvc` writes): DVC brings ~70 packages (celery, pygit2, hydra...)
# the main environment does not need. The test runs its `dvc` command and skips only when this
# environment is absent.
set -euo pipefail
. "$(dirname "$0")/peer_venv.sh"
VENV="$(peer_venv_path dvc "$0")"
if [ ! -x "$VENV/bin/dvc" ]; then
  peer_venv_make "$VENV" 0
  "$VENV/bin/python" -m pip install -q "dvc==3.67.1"
fi
"$VENV/bin/dvc" --version
