"""The streaming path (``memory_budget=``, :mod:`receval.streaming`) equals the in-memory path
bit for bit: summary, per-user values, counts, options, sums and warnings, on the
conformance data (every family of the registry, the matrix's option sets), CSV and Parquet,
rows shuffled and sorted by user, budgets forced down to many partitions and chunks of a few
rows (users straddle every chunk boundary). The in-memory path is itself held to the
independent oracle by tests/test_conformance_matrix.py; one case here checks the streamed
numbers against the oracle directly. Also: the temporary folder is removed on error and on
Ctrl-C, what a budget cannot take is refused in one line (CLI exit 2), and the peak memory is
measured in a subprocess (never the clock).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import struct
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import receval
from receval.cli import main
from receval.evaluation import evaluate_partition
from receval.exceptions import ReceValError
from receval.measures.registry import ENTRIES
from receval.streaming import evaluate_files
from receval.streaming.ordered import sorted_by_footer

sys.path.insert(0, str(Path(__file__).parent))
from test_conformance_matrix import (
    FAMILY_NAMES,
    OPTION_SETS,
    case,
    expected_refusal,
)

try:
    from tests.reference import oracle
except ImportError:  # pragma: no cover - run from tests/
    from reference import oracle  # type: ignore[no-redef]


def _bits(value: Any) -> Any:
    """A float as its 8 bytes (NaN equal to NaN, 0.0 unequal to -0.0), others as they are."""
    return struct.pack("<d", value) if isinstance(value, float) else value


def _run(fn: Any) -> tuple[receval.Result, list[tuple[type, str]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [(w.category, str(w.message)) for w in caught]


def assert_same(memory: receval.Result, streamed: receval.Result) -> None:
    """Every number of the two results equal bit for bit (``counts["streaming"]`` aside)."""
    assert list(memory.summary) == list(streamed.summary)
    assert {k: _bits(v) for k, v in memory.summary.items()} == {
        k: _bits(v) for k, v in streamed.summary.items()
    }
    pd.testing.assert_frame_equal(memory.per_user, streamed.per_user, check_exact=True)
    counts = dict(streamed.counts)
    assert counts.pop("streaming")["batches"] >= 1
    assert dict(memory.counts) == counts
    assert memory.options == streamed.options
    assert memory.metrics == streamed.metrics
    # the exact sums (the first undefined user: a row in memory, an id when merged)
    for a, b in zip(memory.sums.metrics, streamed.sums.metrics, strict=True):
        assert dataclasses.replace(a, first_undefined=None) == dataclasses.replace(
            b, first_undefined=None
        )


def _write(frame: pd.DataFrame, path: Path, row_group: int = 5) -> Path:
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        pq.write_table(
            pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=row_group
        )
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """The conformance case (seed 0): rows shuffled across users (CSV, Parquet) and sorted by
    user (Parquet, small row groups)."""
    d = tmp_path_factory.mktemp("conformance")
    c = case(0)
    rng = np.random.default_rng(35)
    truth = c["truth"].iloc[rng.permutation(len(c["truth"]))].reset_index(drop=True)
    preds = c["long"].iloc[rng.permutation(len(c["long"]))].reset_index(drop=True)
    out = {
        "csv": (_write(truth, d / "t.csv"), _write(preds, d / "p.csv")),
        "parquet": (_write(truth, d / "t.parquet"), _write(preds, d / "p.parquet", 7)),
        "sorted": (
            _write(truth.sort_values("user", kind="stable"), d / "ts.parquet"),
            _write(preds.sort_values("user", kind="stable"), d / "ps.parquet", 7),
        ),
    }
    return out


def _metrics(options: dict[str, Any]) -> list[str]:
    return [
        n
        for e in ENTRIES.values()
        if not expected_refusal(e, "numba", options)
        for n in FAMILY_NAMES[e.name]
    ]


def _both(
    truth: Path,
    preds: Path,
    metrics: list[str],
    *,
    partitions: int = 4,
    rows: int = 6,
    **options: Any,
) -> tuple[Any, Any]:
    memory = _run(lambda: receval.evaluate(str(truth), str(preds), metrics, **options))
    strata = options.pop("strata", None)
    profile = options.pop("profile", None)
    streamed = _run(
        lambda: evaluate_files(
            truth,
            preds,
            metrics,
            evaluate_partition,
            explicit=options,
            strata=strata,
            profile=profile,
            memory_budget="64MiB",
            partitions=partitions,
            rows_per_chunk=rows,
        )
    )
    return memory, streamed


@pytest.mark.parametrize("layout", ["csv", "parquet", "sorted"])
@pytest.mark.parametrize("name", list(OPTION_SETS))
def test_streamed_equals_in_memory(
    files: dict[str, tuple[Path, Path]], layout: str, name: str
) -> None:
    """Every family of the registry under every option set of the matrix: the same bits,
    the same warnings; the sorted files take one pass, the others are partitioned."""
    options = dict(OPTION_SETS[name])
    (memory, w_memory), (streamed, w_streamed) = _both(*files[layout], _metrics(options), **options)
    assert_same(memory, streamed)
    assert w_memory == w_streamed
    how = streamed.counts["streaming"]
    if layout == "sorted":
        assert (how["mode"], how["passes"]) == ("sorted", 1)
        assert how["batches"] > 1
    else:
        assert (how["mode"], how["passes"], how["partitions"]) == ("partitioned", 2, 4)


@pytest.mark.parametrize(
    "extra",
    [
        {"users": "union"},
        {"users": "both"},
        {"users": "relevant", "relevance_threshold": 3},
        {"profile": "trec_eval"},
        {"profile": "recbole"},
        {"average": "micro"},
        {"duplicates": "first"},
        {"duplicates": "keep"},
        {"duplicates": "max"},
        {"ties": "stable", "empty": "nan"},
    ],
)
@pytest.mark.parametrize("layout", ["csv", "sorted"])
def test_options_and_duplicates(
    files: dict[str, tuple[Path, Path]], tmp_path: Path, layout: str, extra: dict[str, Any]
) -> None:
    """User selections, profiles (per-family options merged), micro averages and every
    duplicates policy (the duplicated rows straddle chunks)."""
    truth, preds = files[layout]
    if "duplicates" in extra:
        frame = pd.read_csv(preds) if layout == "csv" else pd.read_parquet(preds)
        doubled = pd.concat([frame, frame.iloc[::4].assign(score=0.25)], ignore_index=True)
        if layout == "sorted":
            doubled = doubled.sort_values("user", kind="stable")
        preds = _write(doubled, tmp_path / preds.name, 7)
    metrics = ["P@3", "R@3", "nDCG@3", "AP@3", "MRR", "bpref", "RMSE"]
    (memory, w_memory), (streamed, w_streamed) = _both(
        truth, preds, metrics, partitions=3, rows=4, **extra
    )
    assert_same(memory, streamed)
    assert w_memory == w_streamed


def test_text_and_mixed_ids_and_strata(tmp_path: Path) -> None:
    """Text user ids ('007' is not '7'), text items, a strata mapping: one partition per user
    at most. Items stored as integers in Parquet against text in the truth are refused by both
    paths alike (one id type per side: README, "Ids")."""
    truth = pd.DataFrame(
        {"user": ["007", "7", "a", "a", "b", "007"], "item": ["1", "2", "3", "x", "1", "3"]}
    )
    preds = pd.DataFrame(
        {
            "user": ["7", "007", "a", "a", "b", "b", "c", "007"],
            "item": [1, 3, 3, 1, 2, 1, 1, 2],
            "score": [0.5, 0.4, 0.9, 0.9, 0.1, 0.7, 0.3, 0.8],
        }
    )
    t = _write(truth, tmp_path / "t.csv")
    mixed = _write(preds.assign(user=preds["user"].astype(str)), tmp_path / "mixed.parquet", 3)
    refusals = []
    for run in (lambda: receval.evaluate(str(t), str(mixed), ["P@2"]),
                lambda: evaluate_files(t, mixed, ["P@2"], evaluate_partition, explicit={},
                                       memory_budget="64MiB", partitions=3, rows_per_chunk=2)):
        with pytest.raises(ReceValError, match="mismatched types") as caught:
            run()
        refusals.append(str(caught.value))
    assert refusals[0] == refusals[1]
    p = _write(preds.assign(user=preds["user"].astype(str), item=preds["item"].astype(str)),
               tmp_path / "p.parquet", 3)
    strata = {"007": "g1", "7": "g2", "a": "g1"}
    (memory, w_m), (streamed, w_s) = _both(
        t, p, ["P@2", "nDCG@2", "MRR"], partitions=3, rows=2, strata=strata
    )
    assert_same(memory, streamed)
    assert w_m == w_s
    pd.testing.assert_frame_equal(memory.strata, streamed.strata, check_exact=True)
    assert memory.per_user["user"].tolist() == ["007", "7", "a", "b"]


def test_streamed_numbers_match_the_oracle(files: dict[str, tuple[Path, Path]]) -> None:
    """The streamed values against the independent definitions (not only against the
    in-memory path)."""
    metrics = ["P@3", "R@3", "nDCG@3", "AP@3", "RR"]
    truth, preds = (pd.read_parquet(f) for f in files["parquet"])  # the rows' order of ties
    want = oracle.evaluate(
        list(truth.itertuples(index=False, name=None)),
        list(preds.itertuples(index=False, name=None)),
        metrics,
    )
    got = evaluate_files(
        *files["parquet"],
        metrics,
        evaluate_partition,
        partitions=5,
        rows_per_chunk=3,
        memory_budget="64MiB",
        silence=["ties", "no-threshold"],
    )
    for name in metrics:
        assert math.isclose(got.summary[name], want.summary[name], rel_tol=1e-12, abs_tol=1e-13), (
            name
        )


def test_footer_sorted_but_rows_not_falls_back(tmp_path: Path) -> None:
    """Row groups in order by their statistics but a group unsorted inside: the one-pass
    reading finds it and the rows are partitioned instead (3 passes), same numbers."""
    truth = pd.DataFrame({"user": [2, 1, 3, 4, 4], "item": [1, 2, 3, 4, 5]})
    preds = pd.DataFrame(
        {
            "user": [2, 1, 1, 3, 4, 4],
            "item": [1, 2, 9, 3, 5, 4],
            "score": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        }
    )
    t = _write(truth, tmp_path / "t.parquet", 2)
    p = _write(preds, tmp_path / "p.parquet", 3)
    assert sorted_by_footer(t, "user") and sorted_by_footer(p, "user")
    (memory, _), (streamed, _) = _both(t, p, ["P@2", "MRR"], partitions=2, rows=2)
    assert_same(memory, streamed)
    how = streamed.counts["streaming"]
    assert (how["mode"], how["passes"]) == ("partitioned", 3)


def _spill_root(tmp_path: Path) -> Path:
    root = tmp_path / "spill"
    root.mkdir()
    return root


def test_temporary_folder_removed_on_success_error_and_interrupt(
    files: dict[str, tuple[Path, Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spill folder is gone after a run, after an error (duplicates refused) and after
    Ctrl-C in the middle of the partitions."""
    root = _spill_root(tmp_path)
    truth, preds = files["csv"]
    evaluate_files(truth, preds, ["P@3"], evaluate_partition, spill_dir=root, partitions=3)
    assert list(root.iterdir()) == []
    doubled = pd.concat([pd.read_csv(preds)] * 2, ignore_index=True)
    bad = _write(doubled, tmp_path / "dup.csv")
    with pytest.raises(ReceValError, match="duplicate"):
        evaluate_files(truth, bad, ["P@3"], evaluate_partition, spill_dir=root, partitions=3)
    assert list(root.iterdir()) == []
    from receval.streaming import plan

    calls = []

    def interrupted(self: Any, truth: Any, preds: Any) -> None:
        calls.append(1)
        assert any(root.iterdir())  # the spill files exist while partitions are evaluated
        raise KeyboardInterrupt

    monkeypatch.setattr(plan._Run, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        evaluate_files(truth, preds, ["P@3"], evaluate_partition, spill_dir=root, partitions=3)
    assert calls and list(root.iterdir()) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"memory_budget": "lots"}, "memory_budget must be a size"),
        ({"memory_budget": "1MiB"}, "at least 16MiB"),
        ({"memory_budget": "1GiB", "train": "t"}, "cannot take train=: the training audit"),
        ({"memory_budget": "1GiB", "engine": "torch"}, "runs the numba engine"),
        ({"memory_budget": "1GiB", "strata": "activity"}, "built-in strata"),
    ],
)
def test_refusals_in_one_line(
    files: dict[str, tuple[Path, Path]], kwargs: dict[str, Any], message: str
) -> None:
    truth, preds = files["csv"]
    with pytest.raises(ReceValError, match=message) as err:
        receval.evaluate(str(truth), str(preds), ["P@3"], **kwargs)
    assert "\n" not in str(err.value)


def test_refusals_frames_beyond_and_formats(
    files: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    truth, preds = files["csv"]
    with pytest.raises(ReceValError, match="pass truth and predictions as paths"):
        receval.evaluate(pd.read_csv(truth), pd.read_csv(preds), ["P@3"], memory_budget="1GiB")
    with pytest.raises(ReceValError, match="cannot evaluate coverage@3"):
        receval.evaluate(str(truth), str(preds), ["P@3", "coverage@3"], memory_budget="1GiB")
    lines = tmp_path / "p.jsonl"
    pd.read_csv(preds).to_json(lines, orient="records", lines=True)
    with pytest.raises(ReceValError, match="streams CSV, TSV and Parquet"):
        receval.evaluate(str(truth), str(lines), ["P@3"], memory_budget="1GiB")


def test_streamed_when_the_inputs_would_not_fit(
    files: dict[str, tuple[Path, Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No budget given, inputs estimated larger than the automatic budget: streamed."""
    from receval.streaming import budget

    truth, preds = files["parquet"]
    plain = receval.evaluate(str(truth), str(preds), ["P@3", "MRR"])
    assert "streaming" not in plain.counts
    monkeypatch.setattr(budget, "in_memory_bytes", lambda rows: 1 << 50)
    streamed = receval.evaluate(str(truth), str(preds), ["P@3", "MRR"])
    assert streamed.counts["streaming"]["budget_bytes"] == budget.auto_budget()
    assert_same(plain, streamed)


def test_cli_memory_budget(files: dict[str, tuple[Path, Path]]) -> None:
    """``--memory-budget``: the JSON summary of the in-memory command; bad sizes and refused
    flags exit 2 with one line."""
    truth, preds = files["csv"]
    runner = CliRunner()
    base = ["evaluate", "-t", str(truth), "-p", str(preds), "-m", "P@3,nDCG@3", "--format", "json"]
    plain = runner.invoke(main, base)
    streamed = runner.invoke(main, [*base, "--memory-budget", "64MiB"])
    assert plain.exit_code == 0 and streamed.exit_code == 0, streamed.output
    got = json.loads(streamed.stdout)
    assert got["counts"].pop("streaming")["mode"] == "partitioned"
    for audit in got["audit"]["models"].values():  # the audit record says it too, in a line
        assert audit["counts"].pop("streaming")["mode"] == "partitioned"
        assert audit["lines"].pop(0).startswith("streamed (partitioned): ")
    assert json.loads(plain.stdout) == got
    assert plain.stderr == streamed.stderr  # the same warnings
    for extra in (["--memory-budget", "lots"], ["--memory-budget", "1GiB", "--no-header"]):
        bad = runner.invoke(main, [*base, *extra])
        assert bad.exit_code == 2
        assert len(bad.output.strip().splitlines()) == 1, bad.output


_PEAK = """
import json, os, sys
import pandas as pd
import receval

def rss(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key))

metrics = ["P@10", "R@10", "nDCG@10", "MAP@10"]
# the kernels compiled or loaded first (a one-off, whatever the data), then the peak reset;
# ``import receval`` is lazy, so the library's own footprint is read after that first call
receval.evaluate(pd.DataFrame({"user": [1], "item": [2]}),
                 pd.DataFrame({"user": [1], "item": [2], "score": [0.5]}), metrics)
after_import = rss("VmRSS:")
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
budget = sys.argv[3] if sys.argv[3] != "none" else None
r = receval.evaluate(sys.argv[1], sys.argv[2], metrics, memory_budget=budget)
print(json.dumps({"import": after_import, "users": len(r.per_user), "peak": rss("VmHWM:"),
                  "streaming": r.counts.get("streaming")}))
"""


def test_peak_memory_within_the_budget(tmp_path: Path) -> None:
    """30,000 users x 100 shuffled predictions (3.3M rows, Parquet): streamed under 128MiB
    the peak stays within 1.25 x 128MiB + the RSS of the loaded library (``import receval``
    is lazy: read after a first tiny evaluation has loaded it); in memory the
    same call goes over that line (so the check can fail). The peak is Linux's high-water
    mark (``VmHWM``), reset after a first tiny evaluation has compiled or loaded the kernels
    (a one-off whatever the data: a first compile alone peaks at hundreds of MB)."""
    rng = np.random.default_rng(0)
    users, items = 30_000, 100
    # user u's items: distinct, start + j * 7919 modulo a prime
    pool = (
        rng.integers(0, 1_000_003, users)[:, None] + np.arange(items + 10)[None, :] * 7919
    ) % 1_000_003
    order = rng.permutation(users * items)
    preds = pa.table(
        {
            "user": np.repeat(np.arange(users), items)[order],
            "item": pool[:, :items].ravel()[order],
            "score": rng.random(users * items),
        }
    )
    t_order = rng.permutation(users * 10)
    truth = pa.table(
        {"user": np.repeat(np.arange(users), 10)[t_order], "item": pool[:, 5:15].ravel()[t_order]}
    )
    pq.write_table(preds, tmp_path / "p.parquet", row_group_size=1 << 20)
    pq.write_table(truth, tmp_path / "t.parquet", row_group_size=1 << 20)
    del preds, truth
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(Path(receval.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
        ),
    }

    def peak(budget: str) -> dict[str, Any]:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _PEAK,
                str(tmp_path / "t.parquet"),
                str(tmp_path / "p.parquet"),
                budget,
            ],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))

    budget = 128 << 20
    streamed = peak("128MiB")
    assert streamed["streaming"]["mode"] == "partitioned"
    assert streamed["users"] == users
    assert streamed["peak"] <= 1.25 * budget + streamed["import"], streamed
    memory = peak("none")
    assert memory["peak"] > 1.25 * budget + memory["import"], memory


def test_the_doc_runs() -> None:
    """docs/streaming.md: its Python block runs (``expression   # value`` lines are claims)
    and its command runs on the files the block wrote, exit 0."""
    import re
    import shlex

    doc = Path(__file__).resolve().parents[1] / "docs" / "streaming.md"
    blocks = re.findall(r"```(\w*)\n(.*?)```", doc.read_text(), re.S)
    namespace: dict[str, Any] = {}
    python = [code for lang, code in blocks if lang == "python"]
    assert len(python) == 1
    exec(compile(python[0], str(doc), "exec"), namespace)
    claims = 0
    for line in python[0].splitlines():
        claim = re.match(r"^(\S.*?)\s+#\s*(\S.*)$", line)
        if claim:
            assert repr(eval(claim.group(1), namespace)) == claim.group(2), line
            claims += 1
    assert claims == 2
    commands = [code.strip() for lang, code in blocks if lang == "bash"]
    assert len(commands) == 1
    args = shlex.split(commands[0])
    env = {**os.environ, "PYTHONPATH": str(Path(receval.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-m", "receval.cli", *args[1:]],
        cwd=namespace["folder"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "nDCG@2" in done.stdout


def test_bench_streaming_runs_and_agrees(tmp_path: Path) -> None:
    """benchmarks/bench_streaming.py on 300 users: every tool's per-user values agree with
    receval's in memory (the streamed ones bit for bit), or the script exits 1."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_streaming.py"
    out = tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": str(Path(receval.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, str(script), "--users", "300", "--budget", "64MiB", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert {(r["order"], r["tool"]) for r in rows} == {
        (o, t) for o in ("shuffled", "sorted") for t in ("memory", "stream", "duckdb", "polars")
    }
    modes = {r["order"]: r["streaming"]["mode"] for r in rows if r["tool"] == "stream"}
    assert modes == {"shuffled": "partitioned", "sorted": "sorted"}
    assert all(r["max_diff"] == 0.0 for r in rows if r["tool"] == "stream")


def test_cli_compare_memory_budget(files: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    """``receval compare --memory-budget``: the comparison of the in-memory command (paired
    tests and intervals from the same per-user values)."""
    truth, preds = files["csv"]
    other = tmp_path / "other.csv"
    frame = pd.read_csv(preds)
    frame.assign(score=frame["score"].to_numpy()[::-1]).to_csv(other, index=False)
    runner = CliRunner()
    base = [
        "compare",
        "-t",
        str(truth),
        "-p",
        str(preds),
        "-p",
        str(other),
        "-m",
        "P@3,nDCG@3",
        "--format",
        "json",
        "--resamples",
        "200",
        "--silence",
        "ties",
        "--silence",
        "no-threshold",
    ]
    plain = runner.invoke(main, base)
    streamed = runner.invoke(main, [*base, "--memory-budget", "64MiB"])
    assert plain.exit_code == 0 and streamed.exit_code == 0, streamed.output
    assert plain.stdout == streamed.stdout


def test_column_names_and_ranks(tmp_path: Path) -> None:
    """Columns named per side (``truth_columns=``, ``prediction_columns=``), a graded truth
    read with a threshold, and predictions with a rank column instead of a score."""
    c = case(1)
    truth = c["truth"].rename(columns={"user": "uid", "item": "mid", "rating": "stars"})
    long = c["long"].sort_values(["user", "score"], ascending=[True, False], kind="stable")
    long = long.assign(rank=long.groupby("user").cumcount() + 1).drop(columns="score")
    t = _write(truth, tmp_path / "t.csv")
    p = _write(long.rename(columns={"user": "u"}), tmp_path / "p.parquet", 9)
    options = {
        "truth_columns": {"user": "uid", "item": "mid", "rating": "stars"},
        "prediction_columns": {"user": "u"},
        "relevance_threshold": 3,
    }
    metrics = ["P@3", "nDCG@3", "MRR", "bpref"]
    memory = _run(lambda: receval.evaluate(str(t), str(p), metrics, **options))
    columns = {k: options.pop(k) for k in ("truth_columns", "prediction_columns")}
    streamed = _run(
        lambda: evaluate_files(
            t,
            p,
            metrics,
            evaluate_partition,
            explicit=options,
            columns=columns,
            partitions=3,
            rows_per_chunk=5,
        )
    )
    assert_same(memory[0], streamed[0])
    assert memory[1] == streamed[1]
