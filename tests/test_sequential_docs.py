"""docs/sequential.md and docs/generated.md run: their Python blocks in order in one namespace
per document, and a line ``expression  # literal`` claims the expression's value (a comment
that is not a Python literal is prose). The MovieLens block needs ml-latest-small (the
``MOVIELENS`` environment variable, default ../shared/data/ml-latest-small beside the
repository) and is skipped without it."""

from __future__ import annotations

import ast
import os
import re
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
# shared/ lies beside the repository (on a developer machine and in CI alike)
_BESIDE = Path(__file__).resolve().parents[2] / "shared" / "data" / "ml-latest-small"
MOVIELENS = Path(os.environ.get("MOVIELENS", str(_BESIDE)))


def blocks(doc: str) -> list[str]:
    text = (ROOT / "docs" / doc).read_text()
    return [
        m.group(2) for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S) if m.group(1) == "python"
    ]


def claims(code: str) -> list[tuple[str, Any]]:
    """(expression, value) for each line ``expression  # literal``."""
    out = []
    for line in code.splitlines():
        match = re.match(r"^(\S.*?)\s+#\s*(.+?)\s*$", line)
        if match is None:
            continue
        try:
            value = ast.literal_eval(match.group(2))
        except (ValueError, SyntaxError):
            continue  # prose
        out.append((match.group(1), value))
    return out


def run(doc: str, which: list[int], monkeypatch: pytest.MonkeyPatch) -> int:
    """Run the blocks ``which`` of ``doc`` in one namespace; the number of claims checked."""
    monkeypatch.setenv("MOVIELENS", str(MOVIELENS))
    namespace: dict[str, Any] = {}
    checked = 0
    code_blocks = blocks(doc)
    for i in which:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(code_blocks[i], f"{doc} block {i}", "exec"), namespace)
        for expr, value in claims(code_blocks[i]):
            assert eval(expr, namespace) == value, expr
            checked += 1
    return checked


def test_sequential_doc_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(blocks("sequential.md")) == 3
    assert run("sequential.md", [0, 2], monkeypatch) == 7


def test_sequential_doc_movielens(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (MOVIELENS / "ratings.csv").is_file():
        pytest.skip(f"no ml-latest-small at {MOVIELENS} (set MOVIELENS)")
    assert run("sequential.md", [1], monkeypatch) == 7


def test_generated_doc_examples(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """docs/generated.md: the Python blocks' claims, then its commands on the example's
    tables (written as CSV files) with this tree's receval, each exiting 0 and printing the
    counts."""
    import shlex
    import subprocess
    import sys

    assert len(blocks("generated.md")) == 3
    monkeypatch.chdir(tmp_path)
    assert run("generated.md", [0, 1, 2], monkeypatch) == 12
    namespace: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(blocks("generated.md")[0], "generated.md", "exec"), namespace)
    for name in ("answers", "movies", "history", "candidates"):
        namespace[name].to_csv(tmp_path / f"{name}.csv", index=False)
    pd.DataFrame({"user": ["ana", "ben"], "item": [5, 2]}).to_csv(
        tmp_path / "truth.csv", index=False
    )
    text = (ROOT / "docs" / "generated.md").read_text()
    bash = [m.group(1) for m in re.finditer(r"```bash\n(.*?)```", text, re.S)]
    commands = [line for code in bash for line in code.splitlines() if line.strip()]
    assert len(commands) == 2
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    for line in commands:
        args = shlex.split(line)
        done = subprocess.run(
            [sys.executable, "-m", "receval.cli", *args[1:]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, (line, done.stderr)
        assert "unresolved" in done.stdout
