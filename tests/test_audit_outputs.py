"""The audit in every output (issue 32): one run of ``receval evaluate`` prints its audit lines
and warnings on the terminal and tests one family of comparisons (the letters' footnote);
the HTML report, ``--format json``, ``--log json``, ``--log dvc`` and ``--log mlflow`` (a
local file store, where mlflow is installed) must each hold every one of those counts,
lines and warnings, and the same family.

The suite is generated: every output of :data:`OUTPUTS` x every run of :data:`RUNS`, each run
made to raise one warning kind (training items in the lists, lists emptied by
``--exclude-train``, ranks passed as scores, a threshold outside the ratings' range, lists of
different depths on MRR, a protected group in no list, concentrated debiasing weights). A new
output is one entry of :data:`OUTPUTS`; the expected values come from the terminal's own text,
never from the record under test. The record's keys are
:data:`receval.report.audit.AUDIT_KEYS`: a writer that drops one fails here
(:func:`test_a_writer_that_drops_a_key_fails` shows the check failing).
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.cli import main
from receval.report.audit import AUDIT_KEYS, MODEL_KEYS, TESTS_KEYS

MODELS = ("a", "b")


def _flat(text: str) -> str:
    """``text`` with every run of white space one space (rich wraps long lines)."""
    return re.sub(r"\s+", " ", text).strip()


# --- the runs: each raises one warning kind ---------------------------------------------------


@dataclass(frozen=True)
class Run:
    """A two-model ``receval evaluate`` run: how its files differ from the base ones
    (:func:`_files`), its extra flags, and the warning code it must raise."""

    name: str
    code: str
    flags: tuple[str, ...]
    tweak: Callable[[dict[str, pd.DataFrame]], None] = field(default=lambda files: None)


def _ranks(files: dict[str, pd.DataFrame]) -> None:
    """Scores 1..n within every list: ranks passed as scores."""
    for m in MODELS:
        run = files[m]
        run["score"] = run.groupby("user").cumcount() + 1.0


def _ratings(files: dict[str, pd.DataFrame]) -> None:
    """Star ratings 1-5 in the truth (the threshold 0.8 reads as a share)."""
    truth = files["truth"]
    truth["rating"] = np.resize([1.0, 2.0, 3.0, 4.0, 5.0], len(truth))


def _deeper_b(files: dict[str, pd.DataFrame]) -> None:
    """Model b's lists 5 items deeper than a's."""
    rng = np.random.default_rng(7)
    extra = [(u, 40 + k, -1.0 - k) for u in range(30) for k in rng.permutation(5)]
    files["b"] = pd.concat(
        [files["b"], pd.DataFrame(extra, columns=["user", "item", "score"])], ignore_index=True
    )


def _emptied(files: dict[str, pd.DataFrame]) -> None:
    """Users 0 to 2 trained on every item of both models' lists: --exclude-train empties them."""
    lists = pd.concat([files[m] for m in MODELS])
    held = lists[lists["user"] < 3][["user", "item"]]
    files["train"] = pd.concat([files["train"], held]).drop_duplicates(ignore_index=True)


def _rare_genre(files: dict[str, pd.DataFrame]) -> None:
    """Items' genres: the rarest (the default protected group) is an item of the training
    data that no list holds."""
    files["train"] = pd.concat(
        [files["train"], pd.DataFrame({"user": [0], "item": [99]})], ignore_index=True
    )
    items = pd.DataFrame(
        {"item": range(40), "genres": np.resize(["Drama", "Comedy", "Action"], 40)}
    )
    files["items"] = pd.concat(
        [items, pd.DataFrame({"item": [99], "genres": ["Western"]})], ignore_index=True
    )


def _skewed(files: dict[str, pd.DataFrame]) -> None:
    """Propensities with one tiny value: one weight holds most of the total."""
    truth = files["truth"]
    truth["p"] = np.where(np.arange(len(truth)) == 0, 1e-4, 0.9)


RUNS = (
    Run(
        "train-items",
        "train-items",
        ("-m", "nDCG@10", "-m", "P@5", "-m", "novelty@10", "-m", "coverage@10"),
    ),
    Run(
        "emptied-lists",
        "emptied-lists",
        ("-m", "nDCG@10", "-m", "P@5", "--exclude-train"),
        _emptied,
    ),
    Run("ranks-as-scores", "ranks-as-scores", ("-m", "nDCG@10", "-m", "P@5"), _ranks),
    Run(
        "threshold-range",
        "threshold-range",
        ("-m", "nDCG@10", "-m", "P@5", "--relevance-threshold", "0.8"),
        _ratings,
    ),
    Run("list-depths", "list-depths", ("-m", "nDCG@10", "-m", "MRR"), _deeper_b),
    Run(
        "protected-group",
        "protected-group",
        (
            "-m",
            "nDCG@10",
            "-m",
            "rND@10",
            "--item-features",
            "{items}",
            "--beyond",
            "fairness_step=5",
        ),
        _rare_genre,
    ),
    Run(
        "debias",
        "debias",
        ("-m", "nDCG@10", "-m", "P@5", "--debias", "ips", "--propensity", "p"),
        _skewed,
    ),
)


def _files(folder: Path, run: Run) -> dict[str, Path]:
    """Two models' 10-item lists over 30 users (scores not 1..n), a truth and a training set
    that share a fifth of their rows with the lists; then the run's tweak."""
    rng = np.random.default_rng(1)
    files = {
        "train": pd.DataFrame(
            {"user": rng.integers(0, 30, 300), "item": rng.integers(0, 40, 300)}
        ).drop_duplicates(),
        "truth": pd.DataFrame(
            {"user": rng.integers(0, 30, 90), "item": rng.integers(0, 40, 90)}
        ).drop_duplicates(),
    }
    for name, seed in zip(MODELS, (2, 3), strict=True):
        r = np.random.default_rng(seed)
        files[name] = pd.DataFrame(
            [(u, i, 10.5 - k) for u in range(30) for k, i in enumerate(r.permutation(40)[:10])],
            columns=["user", "item", "score"],
        )
    run.tweak(files)
    paths = {}
    for name, frame in files.items():
        paths[name] = folder / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    return paths


# --- the outputs: each read back as text, or as the audit record -------------------------------


@dataclass
class Terminal:
    """What one invocation printed: stdout (flattened) and stderr."""

    stdout: str
    stderr: str


@dataclass
class Outputs:
    """One run's outputs. Three invocations of the same flags: ``table`` (the terminal's
    summary, ``--log dvc``), ``json`` (``--format json``, ``--log json``) and ``report``
    (``--report``, ``--log mlflow`` where mlflow is installed: the report adds the curves'
    P@k and R@k to what is computed, so it is checked against its own terminal). ``records``:
    output -> (its audit record, the counts it carries beside it, the invocation whose
    terminal it must match)."""

    terminals: dict[str, Terminal]
    page: str
    records: dict[str, tuple[dict[str, Any], dict[str, Any], str]]


def _invoke(args: list[str], env: dict[str, str] | None = None) -> Any:
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, (args, result.output)
    return result


def _mlflow_record(folder: Path, stderr: str, store: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The audit.json and counts.json of the MLflow run the invocation logged to, read back
    with MLflow's client."""
    from mlflow.tracking import MlflowClient

    run_id = stderr.split("logged to MLflow run ")[1].split()[0]
    client = MlflowClient(store)
    local = Path(client.download_artifacts(run_id, "receval", str(folder / "mlflow-back")))
    codes = client.get_run(run_id).data.tags["receval.warnings"]
    record = json.loads((local / "audit.json").read_text())
    assert codes == ", ".join(dict.fromkeys(w["code"] or "other" for w in record["warnings"]))
    return record, json.loads((local / "counts.json").read_text())


_CACHE: dict[str, Outputs] = {}


def outputs(run: Run, tmp_path_factory: pytest.TempPathFactory) -> Outputs:
    """Every output of ``run``, made once per session."""
    if run.name in _CACHE:
        return _CACHE[run.name]
    folder = tmp_path_factory.mktemp(run.name)
    paths = _files(folder, run)
    flags = [f.format(items=paths.get("items", "")) for f in run.flags]
    base = [
        "evaluate",
        "-t",
        str(paths["truth"]),
        "-p",
        str(paths["a"]),
        "-p",
        str(paths["b"]),
        "--train",
        str(paths["train"]),
        *flags,
    ]
    mlflow = importlib.util.find_spec("mlflow") is not None
    store = (folder / "mlruns").as_uri()
    with warnings.catch_warnings():  # the CLI prints them; MLflow's own deprecations aside
        warnings.simplefilter("ignore")
        table = _invoke([*base, "--log", "dvc", "--log-dir", str(folder / "dvc")])
        as_json = _invoke(
            [*base, "--format", "json", "--log", "json", "--log-dir", str(folder / "json")]
        )
        report = _invoke(
            [*base, "--report", str(folder / "r.html"), *(("--log", "mlflow") if mlflow else ())],
            env={"MLFLOW_TRACKING_URI": store, "MLFLOW_ALLOW_FILE_STORE": "true"},
        )
    summary = json.loads(as_json.stdout)
    logged = json.loads((folder / "json" / "receval.json").read_text())
    assert summary["warnings"] == summary["audit"]["warnings"]  # the top-level key too
    assert logged["warnings"] == logged["audit"]["warnings"]
    page = html.unescape(re.sub(r"<[^>]+>", " ", (folder / "r.html").read_text("utf-8")))
    records = {
        "--format json": (summary["audit"], summary["counts"], "table"),
        "--log json": (logged["audit"], logged["counts"], "table"),
        "--log dvc": (
            json.loads((folder / "dvc" / "audit.json").read_text()),
            json.loads((folder / "dvc" / "counts.json").read_text()),
            "table",
        ),
    }
    if mlflow:
        records["--log mlflow"] = (*_mlflow_record(folder, report.stderr, store), "report")
    terminals = {
        "table": Terminal(_flat(table.stdout), table.stderr),
        "json": Terminal("", as_json.stderr),
        "report": Terminal(_flat(report.stdout), report.stderr),
    }
    _CACHE[run.name] = Outputs(terminals, _flat(page), records)
    return _CACHE[run.name]


# --- what the terminal says, read from its text ------------------------------------------------


def terminal_warnings(out: Terminal) -> list[str]:
    """The warnings printed on stderr (``warning: ...``), each flattened."""
    return [_flat(w) for w in re.findall(r"^warning: (.*)$", out.stderr, flags=re.M)]


def terminal_lines(out: Terminal, model: str) -> list[str]:
    """The audit lines the terminal printed for ``model`` (``a: users evaluated ...``)."""
    starts = r"(?:streamed|users evaluated|train audit|debias=)"
    return [
        line.strip()
        for line in re.findall(
            rf"(?:^| ){model}: ({starts}.*?)(?= [ab]: {starts}| report written|$)", out.stdout
        )
    ]


def holm(text: str) -> list[int]:
    """The number of comparisons the footnote's correction spans."""
    return [int(n) for n in re.findall(r"Holm correction across ([\d,]+) comparisons?", text)]


def check_record(record: dict[str, Any]) -> None:
    """Every key of the audit record is there, per model and in the family."""
    assert list(record) == list(AUDIT_KEYS), list(record)
    assert list(record["models"]) == list(MODELS)
    for entry in record["models"].values():
        assert list(entry) == list(MODEL_KEYS), list(entry)
    if record["tests"] is not None:
        assert list(record["tests"]) == list(TESTS_KEYS), list(record["tests"])


# --- the generated suite -------------------------------------------------------------------------

RECORD_OUTPUTS = ["--format json", "--log json", "--log dvc", "--log mlflow"]


@pytest.mark.parametrize("run", RUNS, ids=[r.name for r in RUNS])
def test_the_terminal_says_the_runs_warning(
    run: Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each run raises the warning kind it is there for (so the checks below can fail), and
    the summary in JSON prints the warnings the table does."""
    out = outputs(run, tmp_path_factory)
    table = out.terminals["table"]
    said = terminal_warnings(table)
    assert any(f"--silence {run.code})" in w for w in said), (run.code, said)
    assert terminal_warnings(out.terminals["json"]) == said
    for model in MODELS:
        assert terminal_lines(table, model), table.stdout
    assert holm(table.stdout), table.stdout


@pytest.mark.parametrize("output", RECORD_OUTPUTS)
@pytest.mark.parametrize("run", RUNS, ids=[r.name for r in RUNS])
def test_each_output_holds_every_count_warning_and_test(
    run: Run, output: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    out = outputs(run, tmp_path_factory)
    if output not in out.records:
        pytest.skip("mlflow is not installed (pip install 'receval[mlflow]')")
    record, counts_beside, invocation = out.records[output]
    terminal = out.terminals[invocation]
    check_record(record)
    # the same warnings as the terminal printed, each once, in its order, with its code
    assert [_flat(w["message"]) for w in record["warnings"]] == terminal_warnings(terminal)
    assert run.code in [w["code"] for w in record["warnings"]]
    for w in record["warnings"]:
        assert w["message"].endswith(f"--silence {w['code']})"), w
    for model in MODELS:  # the terminal's audit lines, and the counts behind them
        assert [_flat(x) for x in record["models"][model]["lines"]] == terminal_lines(
            terminal, model
        )
        assert record["models"][model]["counts"] == counts_beside[model]
    # the family the terminal's letters come from: the same number of comparisons, the same
    # metrics left out and why, one pair
    tests = record["tests"]
    assert [tests["comparisons"]] == holm(terminal.stdout)
    assert (tests["test"], tests["correction"]) == ("t", "holm")
    assert {(r["baseline"], r["model"]) for r in tests["rows"]} == {("a", "b")}
    assert len(tests["rows"]) == tests["comparisons"] == len(tests["tested"])
    for metric, why in tests["not_tested"].items():
        assert f"not tested ({why}): {metric}" in terminal.stdout


@pytest.mark.parametrize("run", RUNS, ids=[r.name for r in RUNS])
def test_the_report_holds_the_terminals_audit(
    run: Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    out = outputs(run, tmp_path_factory)
    terminal = out.terminals["report"]
    for model in MODELS:
        lines = terminal_lines(terminal, model)
        assert lines
        for line in lines:
            assert line in out.page, line
    said = terminal_warnings(terminal)
    assert any(f"--silence {run.code})" in w for w in said)
    for text in said:
        assert text in out.page, text
    assert holm(out.page) and set(holm(out.page)) == set(holm(terminal.stdout))


def test_a_writer_that_drops_a_key_fails() -> None:
    """The record check fails on a record missing any key (a writer that drops one)."""
    r = receval.evaluate(
        {"user": [1, 2], "item": [1, 1]},
        {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]},
        ["P@1"],
    )
    from receval.report.audit import audit_record

    record = json.loads(json.dumps(audit_record({"a": r, "b": r})))
    check_record(record)
    for key in AUDIT_KEYS:
        with pytest.raises(AssertionError):
            check_record({k: v for k, v in record.items() if k != key})
    for key in MODEL_KEYS:
        broken = json.loads(json.dumps(record))
        del broken["models"]["b"][key]
        with pytest.raises(AssertionError):
            check_record(broken)
    for key in TESTS_KEYS:
        broken = json.loads(json.dumps(record))
        del broken["tests"][key]
        with pytest.raises(AssertionError):
            check_record(broken)


# --- from Python: a Result and a Comparison keep their run's warnings --------------------------


def test_python_outputs_carry_the_results_warnings(tmp_path: Path) -> None:
    """``Result.to_json`` and ``Result.log`` carry the warnings the call raised; a comparison's
    log carries its own (lists of different depths) and the models'; silenced ones are not
    kept."""
    truth = {"user": [1, 1, 2], "item": [1, 2, 1], "rating": [1.0, 5.0, 3.0]}
    short = {"user": [1, 2], "item": [1, 3], "score": [0.9, 0.9]}
    deep = {
        "user": [1, 1, 1, 2, 2, 2],
        "item": [3, 1, 4, 3, 5, 1],
        "score": [0.9, 0.8, 0.7, 0.9, 0.8, 0.7],
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = receval.evaluate(truth, short, ["P@1"], relevance_threshold=0.8)
        quiet = receval.evaluate(
            truth, short, ["P@1"], relevance_threshold=0.8, silence=["threshold-range"]
        )
        c = receval.compare(
            truth, {"short": short, "deep": deep}, ["MRR"], n_resamples=50, relevance_threshold=4
        )
    raised = [str(w.message) for w in caught]
    assert [w["code"] for w in r.warnings] == ["threshold-range"]
    assert r.warnings[0]["message"] in raised
    assert quiet.warnings == []
    assert json.loads(r.to_json())["warnings"] == r.warnings
    from receval.report.html import render_report

    page = _flat(html.unescape(render_report(r)))
    assert _flat(r.warnings[0]["message"]) in page  # the report from Python: its own warnings
    folder = Path(r.log("json", str(tmp_path / "one")))
    logged = json.loads((folder / "receval.json").read_text())
    assert logged["warnings"] == r.warnings == logged["audit"]["warnings"]
    assert "list-depths" in [w["code"] for w in c.warnings]
    folder = Path(c.log("dvc", str(tmp_path / "cmp")))
    audit = json.loads((folder / "audit.json").read_text())
    assert [w["code"] for w in audit["warnings"]] == [w["code"] for w in c.warnings]
    # the comparison's family: its own table's rows, corrected together
    assert audit["tests"]["comparisons"] == len(c.table)
    assert audit["tests"]["rows"][0]["p_adjusted"] == pytest.approx(
        float(c.table["p_adjusted"].iloc[0])
    )


def test_a_gates_log_holds_its_audit(tmp_path: Path) -> None:
    """``receval check --log json``: the record holds the gate's models, the warnings the
    command printed and the comparison's family (its rows, corrected together)."""
    rng = np.random.default_rng(4)
    truth = pd.DataFrame({"user": rng.integers(0, 20, 60), "item": rng.integers(0, 30, 60)})
    truth.drop_duplicates().to_csv(tmp_path / "test.csv", index=False)
    for name, seed in (("new", 5), ("old", 6)):
        r = np.random.default_rng(seed)
        rows = [(u, i, k + 1.0) for u in range(20) for k, i in enumerate(r.permutation(30)[:8])]
        pd.DataFrame(rows, columns=["user", "item", "score"]).to_csv(
            tmp_path / f"{name}.csv", index=False
        )
    (tmp_path / "gate.toml").write_text(
        'truth = "test.csv"\npredictions = "new.csv"\nbaseline = "old.csv"\nresamples = 200\n'
        'checks = ["P@5 >= baseline - 0.5", "nDCG@5 >= 0"]\n'
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = CliRunner().invoke(
            main,
            [
                "check",
                str(tmp_path / "gate.toml"),
                "--log",
                "json",
                "--log-dir",
                str(tmp_path / "log"),
            ],
        )
    assert out.exit_code == 0, out.output
    logged = json.loads((tmp_path / "log" / "receval.json").read_text())
    record = logged["audit"]
    assert list(record) == list(AUDIT_KEYS)
    said = terminal_warnings(Terminal("", out.stderr))
    assert "ranks-as-scores" in [w["code"] for w in record["warnings"]]
    assert [_flat(w["message"]) for w in record["warnings"]] == said
    tests = record["tests"]
    assert list(tests) == list(TESTS_KEYS) and tests["comparisons"] == len(tests["rows"]) > 0
    assert {r["metric"] for r in tests["rows"]} >= {"P@5"}
    from receval.tracking import metric_key

    for row in tests["rows"]:  # the family is the comparison the log holds, row by row
        logged_row = logged["metrics"]["comparison"][f"{row['model']}_vs_{row['baseline']}"]
        assert logged_row[metric_key(row["metric"])]["p_adjusted"] == row["p_adjusted"]


def test_compares_json_and_log_hold_the_warnings_it_printed(tmp_path: Path) -> None:
    """``receval compare``: ``--format json`` and ``--log json`` hold the warnings the command
    printed (lists of different depths on MRR among them) and the comparison's family."""
    run = next(r for r in RUNS if r.name == "list-depths")
    paths = _files(tmp_path, run)
    base = [
        "compare",
        "-t",
        str(paths["truth"]),
        "-p",
        str(paths["a"]),
        "-p",
        str(paths["b"]),
        "--train",
        str(paths["train"]),
        "-m",
        "nDCG@10",
        "-m",
        "MRR",
        "--resamples",
        "100",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _invoke(
            [*base, "--format", "json", "--log", "json", "--log-dir", str(tmp_path / "log")]
        )
    said = terminal_warnings(Terminal("", out.stderr))
    assert any("--silence list-depths)" in w for w in said), said
    shown = json.loads(out.stdout)
    assert [_flat(w["message"]) for w in shown["warnings"]] == said
    logged = json.loads((tmp_path / "log" / "receval.json").read_text())
    assert [_flat(w["message"]) for w in logged["audit"]["warnings"]] == said
    assert logged["audit"]["tests"]["comparisons"] == len(shown["rows"])
