"""The peer venvs of .ci/run (issue 33, item 9): keyed to the script and the interpreter that
runs the tests, and, when they share its packages, sharing the packages of *that* interpreter
(from an activated virtual environment: the venv's, not the base interpreter's)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="bash scripts")


def _bash(code: str, env: dict[str, str]) -> str:
    out = subprocess.run(["bash", "-c", f"set -euo pipefail; . .ci/peer_venv.sh; {code}"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_peer_venv_from_an_activated_venv_sees_that_venvs_packages(tmp_path: Path) -> None:
    outer = tmp_path / "outer"  # the venv a user made and activated (no system packages)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(outer)], check=True,
                   timeout=300)
    site = subprocess.run([str(outer / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "only_in_outer.py").write_text("WHERE = 'outer'\n")
    # the real peer venvs' paths (.ci/run exports RECBOLE_VENV, ...) must not leak in: they
    # override the keyed path, and this test would then remake the real venv
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME") and not k.endswith("_VENV")}
    env.update(VIRTUAL_ENV=str(outer), PATH=f"{outer / 'bin'}:{env['PATH']}",
               RECEVAL_PEERS_DIR=str(tmp_path / "peers"))
    peer = _bash("p=$(peer_venv_path recbole .ci/recbole.sh); peer_venv_make \"$p\" 1; "
                 "echo \"$p\"", env)
    assert peer.startswith(str(tmp_path / "peers" / "recbole-"))
    seen = subprocess.run([f"{peer}/bin/python", "-c", "import only_in_outer; "
                           "print(only_in_outer.WHERE)"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert seen.stdout.strip() == "outer", seen.stderr
    # keyed: the system interpreter (no venv active) gets another path, and so does a script
    # that changed
    plain = {k: v for k, v in os.environ.items() if not k.endswith("_VENV")}
    plain["RECEVAL_PEERS_DIR"] = str(tmp_path / "peers")
    plain.pop("VIRTUAL_ENV", None)
    assert _bash("peer_venv_path recbole .ci/recbole.sh", plain) != peer
    assert _bash("peer_venv_path recbole .ci/cornac.sh", env) != peer
    assert _bash("peer_venv_path recbole .ci/recbole.sh", env) == peer  # stable
    assert _bash("RECBOLE_VENV=/x peer_venv_path recbole .ci/recbole.sh", env) == "/x"


def test_every_peer_script_uses_the_keyed_path() -> None:
    for script in ("recbole", "cornac", "rectools", "evidently", "obp", "dvc"):
        text = (ROOT / ".ci" / f"{script}.sh").read_text()
        assert f"peer_venv_path {script}" in text and "/tmp/" not in text, script
        assert "--system-site-packages" not in text, script
    run = (ROOT / ".ci" / "run").read_text()
    assert "peer_venv_path" in run and "pip install" not in (ROOT / ".ci" / "peers.txt").read_text(
    ).replace("python -m pip install", "")
