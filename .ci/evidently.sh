#!/usr/bin/env bash
# A separate virtual environment with Evidently for tests/test_beyond_peers.py: Evidently
# 0.7.23 does not import under pandas 3 (pandas.core.dtypes.common.infer_dtype_from_object), so
# it gets pandas < 3 there, away from the main environment. The test runs it in a subprocess
# and skips only when this environment is absent.
set -euo pipefail
. "$(dirname "$0")/peer_venv.sh"
VENV="$(peer_venv_path evidently "$0")"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import evidently" 2>/dev/null; then
  peer_venv_make "$VENV" 0
  "$VENV/bin/python" -m pip install -q "evidently==0.7.23" "pandas<3"
fi
"$VENV/bin/python" -c "import evidently; print('evidently', evidently.__version__, 'in', '$VENV')"
