"""The layers of docs/design.md, written as import-linter contracts in pyproject.toml, hold; and the
contracts would catch an upward import or a module nobody placed (so the check can fail)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import receval.explain
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


# no import goes up, however it is written ----------------------------------------------------


def layer_of() -> dict[str, int]:
    """Each top-level module or package of receval -> its layer (0: the top), from the
    import-linter contract in pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in project["tool"]["importlinter"]["contracts"] if c["id"] == "layers")
    return {name.strip().strip("()"): i for i, line in enumerate(contract["layers"])
            for name in re.split(r"[|:]", line)}


def imports_of(path: Path, package: str, *, typing_only: bool = True) -> list[tuple[int, str]]:
    """Every receval module ``path`` imports, at any depth (function bodies included), through
    ``import``, ``from ... import``, ``importlib.import_module(...)`` or ``__import__(...)``;
    a dynamic name (not a string literal) is returned as ``"?"``. ``typing_only=False`` leaves
    out the imports under ``if TYPE_CHECKING:`` (they never run)."""
    tree = ast.parse(path.read_text(), str(path))
    skipped = set() if typing_only else {
        id(inner) for node in ast.walk(tree) if isinstance(node, ast.If)
        and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"
        for stmt in node.body for inner in ast.walk(stmt)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            # ``from receval import evaluation``: the module is base.name
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                found.append((node.lineno, arg.value if isinstance(arg, ast.Constant)
                               and isinstance(arg.value, str) else "?"))
    return [(line, name) for line, name in found if name == "?" or name.startswith("receval")]


def upward_imports(src: Path) -> list[str]:
    """``module:line -> target`` for each import from a layer above the module's own."""
    layers = layer_of()
    bad = []
    for path in sorted((src / "receval").rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts == ("receval", "__init__"):  # the package's lazy loader sits above every layer
            continue
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = ".".join(parts[:-1])
        mine = layers[parts[1].removesuffix(".py")] if len(parts) > 1 else None
        for line, target in imports_of(path, package):
            top = target.split(".")[1] if target.count(".") else None
            if target == "?" or (mine is not None and top in layers and layers[top] < mine):
                bad.append(f"{module}:{line} -> {target}")
    return bad


def test_no_import_goes_up_a_layer_not_even_inside_a_function_or_through_importlib() -> None:
    assert upward_imports(ROOT / "src") == []


def modules(src: Path) -> dict[str, Path]:
    """Each module of the receval package under ``src`` by its dotted name."""
    out = {}
    for path in sorted((src / "receval").rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def import_cycles(src: Path) -> list[list[str]]:
    """The import cycles among receval's modules as they run (function-level imports and
    importlib included, ``TYPE_CHECKING`` imports not): each strongly connected component of
    more than one module (Tarjan)."""
    found = modules(src)
    graph: dict[str, set[str]] = {}
    for module, path in found.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets = set()
        for _, name in imports_of(path, package, typing_only=False):
            while name and name not in found:  # a name imported from a module: the module
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = [stack.pop()]
            while component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycle_not_even_through_a_function_level_import() -> None:
    assert import_cycles(ROOT / "src") == []


def test_a_function_level_cycle_is_caught(copy: Path) -> None:
    # the shim this test replaced: profiles reached explain, which imports profiles
    profiles = copy / "src" / "receval" / "profiles.py"
    profiles.write_text(profiles.read_text() + "\n\ndef _planted() -> object:\n"
                        "    from receval import explain\n\n    return explain\n")
    assert any({"receval.profiles", "receval.explain"} <= set(c)
               for c in import_cycles(copy / "src"))


def test_an_importlib_import_up_a_layer_is_caught(copy: Path) -> None:
    profiles = copy / "src" / "receval" / "profiles.py"
    profiles.write_text(profiles.read_text() + "\n\ndef _planted() -> object:\n"
                        "    import importlib\n\n"
                        "    return importlib.import_module('receval.explain')\n")
    bad = upward_imports(copy / "src")
    assert len(bad) == 1 and bad[0].startswith("receval.profiles:")
    assert bad[0].endswith(" -> receval.explain")


def test_profiles_no_longer_reaches_up_to_explain() -> None:
    import receval.profiles

    assert not hasattr(receval.profiles, "explain")
    assert receval.explain.explain("trec_eval", "ranx").a == "trec_eval"
