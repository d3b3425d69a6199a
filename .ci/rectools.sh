#!/usr/bin/env bash
# A separate virtual environment with RecTools for tests/test_beyond_peers.py: RecTools 0.19
# pins numpy < 2 (and pandas < 3), which the main environment must not get. The test runs it
# in a subprocess and skips only when this environment is absent.
set -euo pipefail
. "$(dirname "$0")/peer_venv.sh"
VENV="$(peer_venv_path rectools "$0")"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import rectools" 2>/dev/null; then
  peer_venv_make "$VENV" 0
  "$VENV/bin/python" -m pip install -q "rectools==0.19.0"
fi
"$VENV/bin/python" -c "import rectools; print('rectools', rectools.__version__, 'in', '$VENV')"
