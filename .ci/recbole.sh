#!/usr/bin/env bash
# A separate virtual environment with RecBole 1.2.1 for tests/test_profiles_recbole_cornac.py.
# It sees the test environment's packages (torch, numpy, scipy, pandas, scikit-learn; through
# .ci/peer_venv.sh, from a virtual environment too) and adds only what recbole.evaluator imports: RecBole itself without its dependencies (they pin ray
# <= 2.6.3 and colorlog/colorama exactly), colorlog, colorama, texttable, tabulate, thop,
# pyyaml and tensorboard. The test runs it in a subprocess and skips only when it is absent.
set -euo pipefail
. "$(dirname "$0")/peer_venv.sh"
VENV="$(peer_venv_path recbole "$0")"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import recbole" 2>/dev/null; then
  peer_venv_make "$VENV" 1
  "$VENV/bin/python" -m pip install -q --no-deps "recbole==1.2.1"
  "$VENV/bin/python" -m pip install -q "colorlog==4.7.2" "colorama==0.4.4" texttable tabulate \
    thop pyyaml tensorboard
fi
"$VENV/bin/python" -c "import numpy; numpy.float = float; import recbole.evaluator.metrics, recbole; print('recbole', recbole.__version__, 'in', '$VENV')"
