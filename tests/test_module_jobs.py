"""One job per module (issue 21, point 8): the training data's reader, audit and strata builders
live apart, the command line keeps its text and leaves reading to receval.io, and monitor/core
leaves its test and its writers to receval.stats and monitor/outputs."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import receval.training
from receval.monitor import outputs
from receval.stats.unpaired import welch_p_value

SRC = Path(__file__).resolve().parents[1] / "src" / "receval"


def _calls(path: Path) -> set[str]:
    """The names of the functions and methods ``path`` calls."""
    tree = ast.parse(path.read_text())
    return {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            for n in ast.walk(tree) if isinstance(n, ast.Call)}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_training_is_a_package_of_one_job_per_module() -> None:
    package = SRC / "training"
    assert sorted(p.name for p in package.glob("*.py")) == [
        "__init__.py", "groups.py", "leakage.py", "reading.py"]
    assert not (SRC / "training.py").exists()
    for path in package.glob("*.py"):
        text = path.read_text()
        assert "--train-columns takes" not in text and "train audit:" not in text, path.name
        assert "blake2b" not in text, path.name  # random streams are randomness.py's
    reading = _calls(package / "reading.py")
    assert "warn" not in reading and "quantile" not in reading


@pytest.mark.parametrize("name", receval.training.__all__)
def test_every_public_name_of_training_is_still_importable(name: str) -> None:
    assert getattr(receval.training, name) is not None


def test_the_command_line_reads_through_receval_io() -> None:
    calls = _calls(SRC / "cli" / "common.py")
    assert not calls & {"read_csv", "read_parquet", "read_json", "read_table"}
    assert "parse_train_columns" in _calls(SRC / "cli" / "common.py")  # its own text, cli's


def test_monitor_core_neither_tests_nor_writes() -> None:
    core = SRC / "monitor" / "core.py"
    assert not any(m.startswith("scipy") for m in _imports(core))
    assert not _calls(core) & {"ttest_ind", "write_table"}
    assert "receval.monitor.ab" in _imports(core) and "receval.monitor.outputs" in \
        _imports(core)
    # the variant comparisons (monitor/ab.py) leave their tests to receval.stats
    ab = SRC / "monitor" / "ab.py"
    assert not any(m.startswith("scipy") for m in _imports(ab))
    assert {"receval.stats.unpaired", "receval.stats.sequential"} <= _imports(ab)


def test_welch_matches_its_formula() -> None:
    # t = (mean b - mean a) / sqrt(var b / n_b + var a / n_a), Welch-Satterthwaite df
    from scipy.stats import t as student

    a, b = np.array([1.0, 2.0, 4.0, 7.0]), np.array([3.0, 5.0, 6.0])
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    t = (b.mean() - a.mean()) / np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    assert welch_p_value(b, a) == pytest.approx(2 * student.sf(abs(t), df), rel=1e-12)


def test_the_monitor_records_are_plain() -> None:
    import pandas as pd

    frame = pd.DataFrame({"x": [np.int64(2)], "y": [np.inf]})
    assert outputs.records(frame) == [{"x": 2, "y": None}]
