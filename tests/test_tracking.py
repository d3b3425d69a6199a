"""Trackers (issue 19): ``Result.log`` / ``Comparison.log`` and ``--log mlflow|dvc|json``: the
metric keys for every registry name, what each target holds (read back with MLflow's own
client from a real local store, DVC's own ``dvc metrics show``), and the errors."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.beyond.names import ENTRIES as BEYOND
from receval.cli import main
from receval.measures.registry import ENTRIES
from receval.measures.spec import parse_metric
from receval.tracking import MLFLOW_KEY, metric_key, metric_keys, record

TRUTH = {"user": ["u1", "u1", "u2", "u3"], "item": ["a", "b", "a", "c"]}
A = {"user": ["u1", "u1", "u2", "u3"], "item": ["a", "x", "x", "c"], "score": [0.9, 0.8, 0.9, 0.9]}
B = {"user": ["u1", "u1", "u2", "u3"], "item": ["x", "b", "a", "x"], "score": [0.9, 0.8, 0.9, 0.9]}


def every_name() -> list[str]:
    """Every name the registries accept, with a cutoff where the family takes one and a
    parameter where it has one, aliases included."""
    names = []
    for e in ENTRIES.values():
        for base in (e.name, *e.aliases):
            if e.parameter is not None:
                names += [base, f"{base}@0.5"]
            elif e.cutoff == "none":
                names.append(base)
            else:
                names += [f"{base}@10", f"{base}@5"] + ([base] if e.cutoff == "optional" else [])
    for b in BEYOND.values():
        names += [f"{alias}@10" for alias in (b.name, *b.aliases)]
    return names


def test_keys_of_every_registry_name_are_mlflow_keys_and_collision_free() -> None:
    names = every_name()
    assert len(names) > 150
    keys: dict[str, str] = {}
    for name in names:
        key = metric_key(name)
        assert MLFLOW_KEY.match(key), (name, key)
        assert "@" not in key and key == key.lower()
        try:
            meaning = parse_metric(name).canonical
        except receval.ReceValError:  # a beyond-accuracy name
            from receval.beyond.names import parse_beyond

            spec = parse_beyond(name)
            assert spec is not None, name
            meaning = f"{spec.metric}@{spec.k}"
        # one key, one metric: two names share a key only when they name the same metric
        assert keys.setdefault(key, meaning) == meaning, (name, key, keys[key], meaning)
    mlflow = pytest.importorskip("mlflow", reason="pip install 'receval[mlflow]'")
    from mlflow.utils.validation import _validate_metric_name

    for key in keys:
        _validate_metric_name(key)
    assert mlflow is not None


def test_the_documented_examples() -> None:
    assert [metric_key(n) for n in ("nDCG@10", "P@10", "MAP@10", "MRR", "F0.5@10", "RBP@0.8",
                                    "coverage@10")] == \
        ["ndcg_at_10", "p_at_10", "map_at_10", "mrr", "f0.5_at_10", "rbp_at_0.8",
         "coverage_at_10"]


def test_names_that_share_a_key_are_refused_one_line() -> None:
    with pytest.raises(receval.ReceValError, match=r"^metrics 'nDCG@10' and 'ndcg@10' share "
                                                   r"the key 'ndcg_at_10'; ask for one of them$"):
        metric_keys(["nDCG@10", "ndcg@10"])
    r = receval.evaluate(TRUTH, A, ["P@1"])
    with pytest.raises(receval.ReceValError, match="share the logged key 'a_b/p_at_1'"):
        record({"a+b": r, "a_b": r})


# --- dvc and json -----------------------------------------------------------------------------


def test_result_log_json_holds_everything(tmp_path: Path) -> None:
    r = receval.evaluate(TRUTH, A, ["P@1", "nDCG@2"], ties="item_ascending")
    folder = Path(r.log("json", str(tmp_path / "log"), name="a"))
    data = json.loads((folder / "receval.json").read_text())
    # by hand: u1 a first (hit), u2 x (miss), u3 c (hit): P@1 = 2/3
    assert data["metrics"]["a"]["p_at_1"] == pytest.approx(2 / 3)
    assert set(data["metrics"]["a"]) == {"p_at_1", "ndcg_at_2"}
    assert data["params"]["receval_version"] == receval.__version__ == data["version"]
    assert data["params"]["ties"] == "item_ascending"
    assert json.loads(data["params"]["metrics"]) == {"P@1": "P@1", "nDCG@2": "nDCG@2"}
    assert data["counts"]["a"]["users"]["evaluated"] == 3
    per_user = pd.read_parquet(folder / "per_user.parquet")
    assert per_user["user"].tolist() == ["u1", "u2", "u3"]
    assert per_user["P@1"].tolist() == [1.0, 0.0, 1.0]


def test_comparison_log_dvc_nested_per_model_and_group(tmp_path: Path) -> None:
    c = receval.compare(TRUTH, {"a": A, "b": B}, ["P@1"], baseline="a",
                        strata={"u1": "x", "u2": "x", "u3": "y"}, n_resamples=200)
    folder = Path(c.log("dvc", str(tmp_path)))
    metrics = json.loads((folder / "metrics.json").read_text())
    # a: u1, u3 hit -> 2/3; b: u2 hits (u1's first item x is a miss) -> 1/3
    assert metrics["a"] == {"p_at_1": pytest.approx(2 / 3)}
    assert metrics["b"] == {"p_at_1": pytest.approx(1 / 3)}
    overall = metrics["comparison"]["b_vs_a"]["p_at_1"]
    assert overall["delta"] == pytest.approx(-1 / 3)
    assert set(overall) == {"delta", "ci_low", "ci_high", "p_value", "p_adjusted"}
    groups = metrics["comparison"]["b_vs_a"]["groups"]
    assert groups["x"]["p_at_1"]["delta"] == pytest.approx(0.0)  # u1 -1, u2 +1
    assert groups["y"]["p_at_1"]["delta"] == pytest.approx(-1.0)
    counts = json.loads((folder / "counts.json").read_text())
    assert set(counts) == {"a", "b"}
    per_user = pd.read_parquet(folder / "per_user.parquet")
    assert per_user.columns.tolist() == ["model", "user", "P@1"] and len(per_user) == 6


def dvc_command() -> str | None:
    venv = Path(os.environ.get("DVC_VENV", "/tmp/dvc-venv")) / "bin" / "dvc"
    return str(venv) if venv.exists() else shutil.which("dvc")


@pytest.mark.skipif(dvc_command() is None,
                    reason="dvc is not installed (bash .ci/dvc.sh puts it in its own venv)")
def test_dvc_metrics_show_reads_the_file(tmp_path: Path) -> None:
    c = receval.compare(TRUTH, {"a": A, "b": B}, ["P@1", "nDCG@2"], n_resamples=200)
    c.log("dvc", str(tmp_path / "eval"))
    dvc = dvc_command()
    assert dvc is not None
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    subprocess.run([dvc, "init", "--no-scm", "-q"], cwd=tmp_path, check=True, env=env,
                   timeout=300)
    (tmp_path / "dvc.yaml").write_text("metrics:\n  - eval/metrics.json\n")
    done = subprocess.run([dvc, "metrics", "show", "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)[""]["data"]["eval/metrics.json"]["data"]
    assert shown["a"]["ndcg_at_2"] == pytest.approx(c.results["a"].summary["nDCG@2"])
    assert shown["comparison"]["b_vs_a"]["p_at_1"]["delta"] == pytest.approx(-1 / 3)


# --- mlflow -----------------------------------------------------------------------------------


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    mlflow = pytest.importorskip("mlflow", reason="pip install 'receval[mlflow]'")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # a file store in a temporary folder
    monkeypatch.chdir(tmp_path)
    uri = (tmp_path / "mlruns").as_uri()
    mlflow.set_tracking_uri(uri)
    yield uri
    mlflow.set_tracking_uri(None)


def test_mlflow_run_read_back_with_mlflow_client(store: str, tmp_path: Path) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    r = receval.evaluate(TRUTH, A, ["P@1", "nDCG@2", "MRR"], ties="item_ascending")
    run_id = r.log("mlflow")
    client = MlflowClient(store)
    run = client.get_run(run_id)
    assert run.data.metrics == {"p_at_1": pytest.approx(2 / 3),
                                "ndcg_at_2": pytest.approx(r.summary["nDCG@2"]),
                                "mrr": pytest.approx(r.summary["MRR"])}
    assert run.data.params["receval_version"] == receval.__version__
    assert run.data.params["ties"] == "item_ascending"
    assert run.info.status == "FINISHED"
    files = sorted(a.path for a in client.list_artifacts(run_id, "receval"))
    assert files == ["receval/audit.json", "receval/counts.json", "receval/per_user.parquet"]
    local = Path(client.download_artifacts(run_id, "receval", str(tmp_path / "back")))
    assert json.loads((local / "counts.json").read_text())["users"]["evaluated"] == 3
    assert pd.read_parquet(local / "per_user.parquet")["P@1"].tolist() == [1.0, 0.0, 1.0]
    # inside an active run: logged there, the run left open
    with mlflow.start_run() as active:
        c = receval.compare(TRUTH, {"a": A, "b": B}, ["P@1"], n_resamples=200)
        assert c.log("mlflow") == active.info.run_id
        assert mlflow.active_run() is not None
    metrics = client.get_run(active.info.run_id).data.metrics
    assert metrics["a/p_at_1"] == pytest.approx(2 / 3)
    assert metrics["b_vs_a/p_at_1/delta"] == pytest.approx(-1 / 3)
    assert client.get_run(active.info.run_id).data.params["compare.test"] == "t"


def test_cli_log_mlflow(store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    pd.DataFrame(TRUTH).to_csv("t.csv", index=False)
    pd.DataFrame(A).to_csv("a.csv", index=False)
    out = CliRunner().invoke(main, ["evaluate", "-t", "t.csv", "-p", "a.csv", "-m", "P@1",
                                    "--log", "mlflow"])
    assert out.exit_code == 0, out.output
    run_id = out.stderr.split("logged to MLflow run ")[1].split()[0]
    assert MlflowClient(store).get_run(run_id).data.metrics == {"p_at_1": pytest.approx(2 / 3)}


def _cli_mlflow(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``receval evaluate --log mlflow`` in a fresh process in ``tmp_path``, MLflow's settings
    from ``env`` only."""
    pytest.importorskip("mlflow", reason="pip install 'receval[mlflow]'")
    pd.DataFrame(TRUTH).to_csv(tmp_path / "t.csv", index=False)
    pd.DataFrame(A).to_csv(tmp_path / "a.csv", index=False)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    return subprocess.run([sys.executable, "-m", "receval.cli", "evaluate", "-t", "t.csv", "-p",
                           "a.csv", "-m", "P@1", "--log", "mlflow"], cwd=tmp_path,
                          env={**clean, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
                               "MLFLOW_HTTP_REQUEST_TIMEOUT": "10", **env},
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(importlib.util.find_spec("sqlalchemy") is not None,
                    reason="MLflow's default SQLite store opens with SQLAlchemy installed")
def test_mlflow_skinny_without_a_store_logs_to_mlruns_and_says_so(tmp_path: Path) -> None:
    out = _cli_mlflow(tmp_path, {})
    assert out.returncode == 0, out.stderr
    said = [line for line in out.stderr.splitlines() if "file store ./mlruns" in line]
    assert len(said) == 1 and "set MLFLOW_TRACKING_URI" in said[0]
    assert (tmp_path / "mlruns").is_dir()


@pytest.mark.parametrize(("env", "says"), [
    ({"MLFLOW_TRACKING_URI": "file:./store"}, "set MLFLOW_ALLOW_FILE_STORE=true"),
    ({"MLFLOW_TRACKING_URI": "http://127.0.0.1:9"}, "cannot reach the tracking server"),
])
def test_mlflow_failures_are_one_line_naming_what_to_set(tmp_path: Path, env: dict[str, str],
                                                         says: str) -> None:
    out = _cli_mlflow(tmp_path, env)
    assert out.returncode == 2, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and says in last and "Traceback" not in out.stderr


def test_a_reused_mlflow_run_id_with_another_option_is_one_line(tmp_path: Path) -> None:
    mlflow = pytest.importorskip("mlflow", reason="pip install 'receval[mlflow]'")
    env = {"MLFLOW_TRACKING_URI": (tmp_path / "mlruns").as_uri(),
           "MLFLOW_ALLOW_FILE_STORE": "true"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        mlflow.set_tracking_uri(env["MLFLOW_TRACKING_URI"])
        with mlflow.start_run() as run:
            mlflow.log_param("ties", "random")  # receval will log ties=stable
    finally:
        mlflow.set_tracking_uri(None)
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    out = _cli_mlflow(tmp_path, {**env, "MLFLOW_RUN_ID": run.info.run_id})
    assert out.returncode == 2, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert "MLFLOW_RUN_ID" in last and "unset MLFLOW_RUN_ID" in last


def test_without_mlflow_the_install_hint(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError
    r = receval.evaluate(TRUTH, A, ["P@1"])
    with pytest.raises(receval.ReceValError, match=r"^logging to MLflow needs mlflow: pip "
                                                   r"install 'receval\[mlflow\]'$"):
        r.log("mlflow")


# --- the command line -------------------------------------------------------------------------


def test_cli_log_json_and_dvc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    pd.DataFrame(TRUTH).to_csv("t.csv", index=False)
    pd.DataFrame(A).to_csv("a.csv", index=False)
    pd.DataFrame(B).to_csv("b.csv", index=False)
    out = CliRunner().invoke(main, ["evaluate", "-t", "t.csv", "-p", "a.csv", "-m", "P@1",
                                    "--log", "json"])
    assert out.exit_code == 0, out.output
    assert "log written to receval-log" in out.stderr
    data = json.loads(Path("receval-log/receval.json").read_text())
    assert data["metrics"] == {"a": {"p_at_1": pytest.approx(2 / 3)}}
    out = CliRunner().invoke(main, ["compare", "-t", "t.csv", "-p", "a.csv", "-p", "b.csv",
                                    "-m", "P@1", "--resamples", "100", "--log", "dvc",
                                    "--log-dir", "d"])
    assert out.exit_code == 0, out.output
    metrics = json.loads(Path("d/metrics.json").read_text())
    assert metrics["comparison"]["b_vs_a"]["p_at_1"]["delta"] == pytest.approx(-1 / 3)


@pytest.mark.parametrize(("args", "message"), [
    (["--log", "mlflow", "--log-dir", "x"], "--log-dir is for --log dvc|json"),
    (["--log-dir", "x"], "--log-dir is for --log dvc|json"),
    (["--log", "json", "--log-dir", "t.csv"], "--log-dir t.csv: a file, not a folder"),
    (["--log", "wandb"], "Invalid value for '--log'"),
])
def test_cli_log_errors_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    pd.DataFrame(TRUTH).to_csv("t.csv", index=False)
    pd.DataFrame(A).to_csv("a.csv", index=False)
    out = CliRunner().invoke(main, ["evaluate", "-t", "t.csv", "-p", "a.csv", "-m", "P@1",
                                    *args])
    assert out.exit_code == 2, out.output
    assert message in out.stderr
    assert "Traceback" not in out.output


def test_cli_without_mlflow_hint_before_any_work(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mlflow" else real(name, *a))
    out = CliRunner().invoke(main, ["evaluate", "-t", str(tmp_path / "missing.csv"), "-p",
                                    "a.csv", "--log", "mlflow"])
    assert out.exit_code == 2
    assert out.stderr.strip() == "error: logging to MLflow needs mlflow: pip install " \
                                 "'receval[mlflow]'"


@pytest.mark.slow
def test_the_readme_mlflow_snippet_in_a_fresh_venv_with_only_the_extra(tmp_path: Path) -> None:
    """``pip install 'receval[mlflow]'`` in an empty venv, then the README's MLflow block (after
    the data it names): it logs, with MLflow's own defaults otherwise."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    start = readme.index("<!-- readme-test: skip (needs the mlflow extra")
    block = readme[start:].split("```python\n", 1)[1].split("```", 1)[0]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MLFLOW_", "PYTHON", "VIRTUAL_ENV"))}
    install = subprocess.run([python, "-m", "pip", "install", "-q", f"{root}[mlflow]"],
                             capture_output=True, text=True, env=env, timeout=1800)
    if install.returncode and "NewConnectionError" in install.stderr + install.stdout:
        pytest.skip("no package index reachable")
    assert install.returncode == 0, install.stderr[-2000:]
    script = ("import receval\n"
              "cmp_truth = {'user': [1, 1, 2, 3], 'item': [1, 2, 3, 4]}\n"
              "svd = {'user': [1, 1, 2, 3], 'item': [1, 5, 3, 9], 'score': [0.9, 0.8, 0.7, 0.6]}\n"
              "pop = {'user': [1, 1, 2, 3], 'item': [5, 1, 9, 4], 'score': [0.9, 0.8, 0.7, 0.6]}\n"
              "c = receval.compare(cmp_truth, {'pop': pop, 'svd': svd}, ['P@1', 'nDCG@2'],\n"
              "                    baseline='pop', n_resamples=100)\n" + block +
              "print('logged', mlflow.last_active_run().info.run_id)\n")
    done = subprocess.run([python, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "logged" in done.stdout and (tmp_path / "mlruns").is_dir()
