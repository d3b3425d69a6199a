"""docs/offpolicy.md runs: its Python blocks in order in one namespace (their asserts are the
claims: the truth inside the intervals, the naive metric ranking the two policies the wrong
way), a line ``expression   # value`` checks the value, and its shell commands run with this
tree's ``receval`` and exit 0."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from receval.exceptions import ReceValWarning

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "offpolicy.md"


def _blocks(lang: str) -> list[str]:
    return [m.group(2) for m in re.finditer(r"```(\w*)\n(.*?)```", DOC.read_text(), re.S)
            if m.group(1) == lang]


def test_the_python_and_the_commands_of_the_doc_run(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    python = _blocks("python")
    assert len(python) == 4
    for code in python:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exec(compile(code, str(DOC), "exec"), namespace)
        assert not [w for w in caught if issubclass(w.category, ReceValWarning)], caught
        for line in code.splitlines():
            claim = re.match(r"^(\S.*?)\s+#\s*(\[.*\])\s*$", line)
            if claim:
                assert repr(eval(claim.group(1), namespace)) == claim.group(2), line
    commands = [line for code in _blocks("bash") for line in code.splitlines() if line.strip()]
    assert len(commands) == 4
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    for line in commands:
        args = shlex.split(line)
        assert args[0] == "receval"
        done = subprocess.run([sys.executable, "-m", "receval.cli", *args[1:]], cwd=tmp_path,
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, (line, done.stderr)
        if args[1] == "monitor":  # the estimates per window go in its report
            page = (tmp_path / args[args.index("--report") + 1]).read_text()
            assert "<h2>Off-policy estimates</h2>" in page and ">snips</td>" in page
        else:
            assert "snips" in done.stdout
