#!/usr/bin/env bash
# A separate virtual environment with Cornac 3.0.1 for tests/test_profiles_recbole_cornac.py
# (it sees the main environment's numpy and scipy, and adds Cornac and powerlaw). The test runs
# it in a subprocess and skips only when it is absent.
set -euo pipefail
. "$(dirname "$0")/peer_venv.sh"
VENV="$(peer_venv_path cornac "$0")"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import cornac" 2>/dev/null; then
  peer_venv_make "$VENV" 1
  "$VENV/bin/python" -m pip install -q "cornac==3.0.1"
fi
"$VENV/bin/python" -c "import cornac; print('cornac', cornac.__version__, 'in', '$VENV')"
