"""Start-up (issue 33, item 1): ``import receval`` and ``receval --help`` load none of the heavy
libraries, ``receval evaluate`` only what an evaluation needs, and the public API is unchanged
(names resolve on first use). Each check runs in a fresh interpreter and reads its
``sys.modules``; the times themselves are measured by benchmarks/bench_startup.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

import receval
from receval.cli import COMMANDS, all_commands

SRC = Path(receval.__file__).resolve().parents[1]

#: what ``import receval`` and ``receval --help`` must not load
HEAVY = ("numpy", "pandas", "pyarrow", "numba", "scipy", "matplotlib", "jinja2", "torch",
         "pyspark", "mlflow", "rich")

#: what ``receval evaluate`` on a small file must not load (it needs pandas, pyarrow, numba)
NOT_FOR_EVALUATE = ("matplotlib", "jinja2", "torch", "pyspark", "mlflow", "scipy.stats",
                    "scipy.sparse", "receval.compare", "receval.report.html",
                    "receval.beyond.compute", "receval.monitor.core", "receval.offpolicy")


def _loaded(code: str, cwd: Path | None = None) -> list[str]:
    """The modules a fresh interpreter holds after ``code`` (its last line of output)."""
    env = dict(os.environ, PYTHONPATH=str(SRC))
    probe = (f"{code}\nimport sys, json\n"
             "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=env, cwd=cwd, timeout=300, check=True)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def _top(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted({m for m in modules for n in names if m == n or m.startswith(n + ".")})


def test_import_receval_loads_no_heavy_library() -> None:
    loaded = _loaded("import receval")
    assert _top(loaded, HEAVY) == []
    assert "importlib.metadata" not in loaded  # the version is read when asked


def test_the_help_loads_no_heavy_library() -> None:
    code = ("from receval.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass")
    loaded = _loaded(code)
    assert _top(loaded, HEAVY) == []
    assert not [m for m in loaded if m.endswith("_command")]  # no command module either


def test_evaluate_loads_what_an_evaluation_needs_only(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("user,item,rating\n1,1,1\n2,3,1\n")
    (tmp_path / "p.csv").write_text("user,item,score\n1,1,0.9\n2,2,0.5\n")
    code = ("from receval.cli import main\n"
            "try:\n    main(['evaluate', '-t', 't.csv', '-p', 'p.csv', '-m', 'nDCG@10'])\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code")
    loaded = _loaded(code, cwd=tmp_path)
    assert "receval.cli.evaluate_command" in loaded and "numba" in loaded  # it did evaluate
    assert _top(loaded, NOT_FOR_EVALUATE) == []


def test_the_probe_sees_a_heavy_import() -> None:
    """The checks above can fail: an eager import is seen."""
    assert _top(_loaded("import receval\nreceval.compare"), HEAVY)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_help_lists_each_command_as_its_own_docstring_says(name: str) -> None:
    command = all_commands()[name]
    listed = click.Command(name, help=COMMANDS[name][1])
    for limit in (45, 80, 200):
        assert listed.get_short_help_str(limit) == command.get_short_help_str(limit)


def test_every_command_is_listed() -> None:
    assert sorted(all_commands()) == sorted(COMMANDS)


def test_the_public_api_is_unchanged() -> None:
    code = """
import inspect, receval
import receval.compare, receval.monitor  # the submodules: the names stay the functions
assert inspect.isfunction(receval.compare) and inspect.isfunction(receval.monitor)
assert inspect.isfunction(receval.evaluate) and inspect.isclass(receval.Comparison)
assert set(receval.__all__) <= set(dir(receval)) and "metrics" in dir(receval)
for name in receval.__all__:
    getattr(receval, name)
from receval import Result, evaluate, compare, monitor, Gate, check, Options
assert receval.report.tables and receval.metrics.precision_at_k
r = evaluate({"user": [1], "item": [1]}, {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
assert r._repr_html_() is not None  # the report's view, loaded on first use
try:
    receval.nope
except AttributeError as err:
    assert "nope" in str(err)
else:
    raise AssertionError("receval.nope resolved")
"""
    _loaded(code)


def test_doctests_of_a_module_needing_a_missing_extra_are_skipped() -> None:
    """Plain ``pytest`` without torch: engines/torch_engine.py is not a collection error."""
    root = SRC.parent
    code = """
import importlib.util, sys
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a, **k: None if name.split(".")[0] == "torch" \\
    else real(name, *a, **k)
sys.modules["torch"] = None  # import torch fails
import pytest
sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider",
                      "src/receval/engines"]))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(SRC)), timeout=300)
    assert out.returncode in (0, 5), out.stdout + out.stderr  # 5: nothing collected
    assert "error" not in out.stdout.lower()
