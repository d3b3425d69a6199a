#!/usr/bin/env bash
# A separate virtual environment with Open Bandit Pipeline 0.5.7 for tests/test_offpolicy_obp.py:
# OBP's last release pins Python < 3.11 (and numpy 1.23, pandas 1.5, torch 1.12), so it installs
# only from its sdist with --no-deps --ignore-requires-python, next to current releases of the
# libraries `import obp` pulls in (obp.utils imports torch: a CPU wheel). The test runs OBP in a
# subprocess and skips only when this environment is absent.
set -euo pipefail
. "$(dirname "$0")/peer_venv.sh"
VENV="$(peer_venv_path obp "$0")"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import obp" 2>/dev/null; then
  peer_venv_make "$VENV" 0
  "$VENV/bin/python" -m pip install -q numpy pandas scipy scikit-learn matplotlib seaborn tqdm pyyaml "torch==2.13.0"
  DL="$(mktemp -d)"
  "$VENV/bin/python" -m pip download -q --no-deps --ignore-requires-python --no-binary obp -d "$DL" "obp==0.5.7"
  "$VENV/bin/python" -m pip install -q --no-deps --ignore-requires-python "$DL"/obp-0.5.7.tar.gz
  rm -rf "$DL"
fi
"$VENV/bin/python" -c "import obp; print('obp', obp.__version__, 'in', '$VENV')"
