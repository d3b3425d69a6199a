"""The layers of docs/design.md, written as import-linter contracts in pyproject.toml, hold; and the
contracts would catch an upward import or a module nobody placed (so the check can fail)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import receval.report  # noqa: F401  (registers the views some tests remove)
from receval import io
from receval.exceptions import ReceValError
from receval.report import plots, tables
from receval.result import VIEWS, Result

ROOT = Path(__file__).resolve().parents[1]
LINT = [sys.executable, "-c", "from importlinter.cli import lint_imports_command as m; m()"]


def lint(src: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the ``receval`` package found under ``src``, without a cache dir."""
    env = dict(os.environ, PYTHONPATH=str(src))  # before the editable install's path entry
    return subprocess.run([*LINT, "--config", str(config), "--no-cache", "--no-logo"],
                          cwd=src.parent, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of src/receval and pyproject.toml to plant imports in."""
    shutil.copytree(ROOT / "src" / "receval", tmp_path / "src" / "receval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_layers_hold() -> None:
    run = lint(ROOT / "src", ROOT / "pyproject.toml")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_an_upward_import_breaks_the_contract(copy: Path) -> None:
    result = copy / "src" / "receval" / "result.py"
    result.write_text(result.read_text() + "\nfrom receval.report import tables  # planted\n")
    run = lint(copy / "src", copy / "pyproject.toml")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "receval.result -> receval.report.tables" in run.stdout


def test_a_function_level_import_counts(copy: Path) -> None:
    data = copy / "src" / "receval" / "data" / "csr.py"
    data.write_text(data.read_text() + "\n\ndef _planted() -> None:\n"
                                       "    from receval.engines import numba_engine  # noqa\n")
    run = lint(copy / "src", copy / "pyproject.toml")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "receval.data.csr -> receval.engines.numba_engine" in run.stdout


def test_a_module_nobody_placed_breaks_the_contract(copy: Path) -> None:
    (copy / "src" / "receval" / "unplaced.py").write_text('"""Planted."""\n')
    run = lint(copy / "src", copy / "pyproject.toml")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "receval.unplaced" in run.stdout


# Result is pure data: the report lends it its views ---------------------------------------------


def _result() -> Result:
    return Result(summary={"P@1": 1.0}, per_user=__import__("pandas").DataFrame({"user": [1]}),
                  counts={"users": {"evaluated": 1}}, options={})


def test_result_without_the_report_has_no_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("receval.result.VIEWS", {})
    r = _result()
    assert r._repr_html_() is None  # a notebook then shows the plain repr
    with pytest.raises(ReceValError, match="no plot view is registered"):
        r.plot("pr-curve")


def test_the_report_lends_result_its_views(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[object, ...]] = []
    monkeypatch.setitem(VIEWS, "plot", lambda *a, **kw: calls.append((*a, kw)) or "figure")
    monkeypatch.setitem(VIEWS, "html", lambda r: "<b>view</b>")
    r = _result()
    assert r.plot("at-k", None, max_k=3) == "figure"
    assert calls == [(r, "at-k", None, {"max_k": 3})]
    assert r._repr_html_() == "<b>view</b>"


# one list of formats ------------------------------------------------------------------------


def test_the_cli_takes_its_format_lists_from_their_owners() -> None:
    from receval.cli import common, evaluate_command, plot_command

    assert common.INPUT_FORMATS is io.FORMATS
    assert evaluate_command.OUTPUT_FORMATS is tables.FORMATS
    assert plot_command.PLOT_KINDS is plots.KINDS


def test_profiles_explain_still_reaches_the_moved_names() -> None:
    import receval.explain
    import receval.profiles

    for name in ("explain", "format_explain", "Explanation", "OptionDifference",
                 "DEFAULT_EXPLAIN_METRICS"):
        assert getattr(receval.profiles, name) is getattr(receval.explain, name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        receval.profiles.nothing  # noqa: B018
