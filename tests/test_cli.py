"""`receval evaluate` end to end: every file format gives the numbers of receval.evaluate on the
same data, the JSON contract holds, every option flag reaches the core, several models compare."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

import receval
from receval.cli import main

METRICS = ["P@3", "R@5", "MAP@5", "nDCG@5", "MRR", "RMSE"]


@pytest.fixture(scope="module")
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(11)
    truth_rows, pred_rows = [], []
    for u in range(40):
        items = rng.choice(60, 12, replace=False)
        for i in items[:5]:
            truth_rows.append((f"u{u}", int(i), float(rng.integers(1, 6))))
        for i in items[2:12]:
            pred_rows.append((f"u{u}", int(i), round(float(rng.random()), 4)))
    truth = pd.DataFrame(truth_rows, columns=["user", "item", "rating"])
    preds = pd.DataFrame(pred_rows, columns=["user", "item", "score"])
    return truth, preds


def expected(frames: tuple[pd.DataFrame, pd.DataFrame], **options: object) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(*frames, METRICS, **options).summary


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def run_json(*args: str | Path) -> dict:
    result = run("evaluate", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def metric_args(metrics: list[str] = METRICS) -> list[str]:
    return [a for m in metrics for a in ("-m", m)]


WRITERS: dict[str, Callable[[pd.DataFrame, Path], None]] = {
    "csv": lambda df, p: df.to_csv(p, index=False),
    "tsv": lambda df, p: df.to_csv(p, index=False, sep="\t"),
    "csv.gz": lambda df, p: df.to_csv(p, index=False, compression="gzip"),
    "parquet": lambda df, p: pq.write_table(pa.Table.from_pandas(df, preserve_index=False), p),
    "jsonl": lambda df, p: df.to_json(p, orient="records", lines=True),
    "jsonl.gz": lambda df, p: df.to_json(p, orient="records", lines=True, compression="gzip"),
}


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_every_format_gives_the_core_numbers(frames: tuple[pd.DataFrame, pd.DataFrame],
                                             tmp_path: Path, fmt: str) -> None:
    truth, preds = tmp_path / f"truth.{fmt}", tmp_path / f"model.{fmt}"
    WRITERS[fmt](frames[0], truth)
    WRITERS[fmt](frames[1], preds)
    out = run_json("--truth", truth, "--predictions", preds, *metric_args(),
                   "--relevance-threshold", "3")
    assert out["summary"] == pytest.approx(expected(frames, relevance_threshold=3))
    assert out["model"] == "model"


def test_no_header_and_custom_delimiter_and_columns(frames: tuple[pd.DataFrame, pd.DataFrame],
                                                    tmp_path: Path) -> None:
    truth, preds = frames
    truth.to_csv(tmp_path / "t.csv", index=False, header=False)
    preds.to_csv(tmp_path / "p.csv", index=False, header=False)
    out = run_json("-t", tmp_path / "t.csv", "-p", tmp_path / "p.csv", "--no-header",
                   *metric_args())
    assert out["summary"] == pytest.approx(expected(frames))
    renamed = preds.rename(columns={"user": "uid", "item": "iid", "score": "pred"})
    renamed.to_csv(tmp_path / "p2.csv", index=False, sep=";")
    t2 = truth.rename(columns={"user": "uid", "item": "iid", "rating": "stars"})
    t2.to_csv(tmp_path / "t2.csv", index=False, sep="|")
    out = run_json("-t", tmp_path / "t2.csv", "-p", tmp_path / "p2.csv", "--user-col", "uid",
                   "--item-col", "iid", "--rating-col", "stars", "--score-col", "pred",
                   *metric_args())
    assert out["summary"] == pytest.approx(expected(frames))


def test_json_contract(frames: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path) -> None:
    frames[0].to_csv(tmp_path / "t.csv", index=False)
    frames[1].to_csv(tmp_path / "p.csv", index=False)
    out = run_json("-t", tmp_path / "t.csv", "-p", tmp_path / "p.csv", "-m", "precision@3",
                   "-m", "P@5,10", "-m", "MAP@10", "-m", "ndcg@5")
    # the names as the user wrote them, in order, each mapped to its mean
    assert list(out["summary"]) == ["precision@3", "P@5", "P@10", "MAP@10", "ndcg@5"]
    assert all(isinstance(v, float) for v in out["summary"].values())
    users, rows = out["counts"]["users"], out["counts"]["rows"]
    assert users["evaluated"] == 40 and users["not_evaluated"] == 0
    assert {"truth_dropped_missing_rating", "truth_dropped_duplicates",
            "predictions_dropped_duplicates"} <= set(rows)
    assert set(out["counts"]["undefined"]["users"]) == set(out["summary"])
    assert out["options"]["ties"] == "stable"


def test_option_flags_reach_the_core(frames: tuple[pd.DataFrame, pd.DataFrame],
                                     tmp_path: Path) -> None:
    frames[0].to_csv(tmp_path / "t.csv", index=False)
    frames[1].to_csv(tmp_path / "p.csv", index=False)
    base = ["-t", tmp_path / "t.csv", "-p", tmp_path / "p.csv", *metric_args()]
    flags = {
        "relevance_threshold": ("--relevance-threshold", "user_mean"),
        "score_threshold": ("--score-threshold", "0.5"),
        "protocol": ("--protocol", "known"),
        "ties": ("--ties", "pessimistic"),
        "precision_denominator": ("--precision-denominator", "returned"),
        "recall_denominator": ("--recall-denominator", "capped"),
        "ap_normalizer": ("--ap-normalizer", "relevant"),
        "gain": ("--gain", "linear"),
        "empty": ("--empty", "skip"),
        "average": ("--average", "micro"),
        "users": ("--users", "both"),
        "duplicates": ("--duplicates", "first"),
    }
    for name, (flag, value) in flags.items():
        core_value: object = float(value) if name == "score_threshold" else value
        out = run_json(*base, flag, value)
        assert out["options"][name] == core_value, name
        assert out["summary"] == pytest.approx(expected(frames, **{name: core_value}),
                                               nan_ok=True), name


def test_every_core_option_has_a_flag() -> None:
    import dataclasses

    from receval.options import Options

    result = run("evaluate", "--help")
    for field in dataclasses.fields(Options):
        assert f"--{field.name.replace('_', '-')}" in result.output, field.name
    for flag in ("--profile", "--engine", "--user-col", "--item-col", "--rating-col",
                 "--score-col", "--per-user", "--report", "--format", "--no-header"):
        assert flag in result.output


def test_profile_flag(frames: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path) -> None:
    profiles = pytest.importorskip("receval.profiles")
    frames[0].to_csv(tmp_path / "t.csv", index=False)
    frames[1].to_csv(tmp_path / "p.csv", index=False)
    name = sorted(profiles.PROFILES)[0]
    out = run_json("-t", tmp_path / "t.csv", "-p", tmp_path / "p.csv", "-m", "P@3",
                   "--profile", name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        core = receval.evaluate(*frames, ["P@3"], profile=name)
    assert out["summary"] == pytest.approx(core.summary, nan_ok=True)
    assert out["options"].get("profile") == name


def test_several_models_side_by_side(frames: tuple[pd.DataFrame, pd.DataFrame],
                                     tmp_path: Path) -> None:
    truth, preds = frames
    truth.to_csv(tmp_path / "t.csv", index=False)
    preds.to_csv(tmp_path / "good.csv", index=False)
    worse = preds.assign(score=-preds["score"])
    worse.to_parquet(tmp_path / "worse.parquet", index=False)
    args = ["-t", tmp_path / "t.csv", "-p", tmp_path / "good.csv", "-p",
            tmp_path / "worse.parquet", *metric_args()]
    out = run_json(*args)
    assert out["models"] == ["good", "worse"]
    assert out["summary"]["good"] == pytest.approx(expected(frames))
    assert out["summary"]["worse"] == pytest.approx(expected((truth, worse)))
    assert set(out["counts"]) == {"good", "worse"}
    table = run("evaluate", *args)
    assert table.exit_code == 0
    header = next(line for line in table.stdout.splitlines() if "metric" in line)
    assert "good" in header and "worse" in header
    csv_text = run("evaluate", *args, "-f", "csv").stdout.splitlines()
    assert csv_text[0] == "metric,good,worse" and len(csv_text) == 1 + len(METRICS)


def test_text_formats(frames: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path) -> None:
    frames[0].to_csv(tmp_path / "t.csv", index=False)
    frames[1].to_csv(tmp_path / "p.csv", index=False)
    args = ["evaluate", "-t", tmp_path / "t.csv", "-p", tmp_path / "p.csv", "-m", "P@3",
            "-m", "MRR"]
    values = expected(frames)
    table = run(*args).stdout
    assert f"{values['P@3']:.4f}" in table and "users evaluated 40" in table
    markdown = run(*args, "-f", "markdown").stdout.splitlines()
    assert markdown[0] == "| metric | value |"
    assert markdown[2] == f"| P@3 | {values['P@3']:.4f} |"
    latex = run(*args, "-f", "latex").stdout
    assert r"\begin{tabular}{lr}" in latex and f"MRR & {values['MRR']:.4f}" in latex
    csv_lines = run(*args, "-f", "csv").stdout.splitlines()
    assert csv_lines[1].split(",")[0] == "P@3"
    assert float(csv_lines[1].split(",")[1]) == pytest.approx(values["P@3"])


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_per_user_file(frames: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path,
                       suffix: str) -> None:
    frames[0].to_csv(tmp_path / "t.csv", index=False)
    frames[1].to_csv(tmp_path / "p.csv", index=False)
    frames[1].to_csv(tmp_path / "q.csv", index=False)
    target = tmp_path / f"out/per_user.{suffix}"
    run("evaluate", "-t", tmp_path / "t.csv", "-p", tmp_path / "p.csv", "-m", "P@3",
        "--per-user", target)
    frame = pd.read_csv(target) if suffix == "csv" else pd.read_parquet(target)
    core = receval.evaluate(*frames, ["P@3"]).per_user
    assert list(frame.columns) == ["user", "P@3"]
    assert frame["P@3"].tolist() == pytest.approx(core["P@3"].tolist())
    run("evaluate", "-t", tmp_path / "t.csv", "-p", tmp_path / "p.csv", "-p", tmp_path / "q.csv",
        "-m", "P@3", "--per-user", target)
    frame = pd.read_csv(target) if suffix == "csv" else pd.read_parquet(target)
    assert list(frame.columns) == ["model", "user", "P@3"] and len(frame) == 80


def test_string_and_integer_ids_meet(tmp_path: Path) -> None:
    """Integer ids in one file and string ids in the other still match."""
    (tmp_path / "t.csv").write_text("user,item\n1,10\n2,20\n")
    (tmp_path / "p.jsonl").write_text('{"user": "1", "item": "10", "score": 1}\n'
                                      '{"user": "2", "item": "x", "score": 1}\n')
    out = run_json("-t", tmp_path / "t.csv", "-p", tmp_path / "p.jsonl", "-m", "P@1")
    assert out["summary"] == {"P@1": 0.5}


def test_undefined_values_warn_on_one_line(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("user,item,rating\n1,10,1\n2,20,5\n")
    (tmp_path / "p.csv").write_text("user,item,score\n1,10,1\n2,20,1\n")
    result = run("evaluate", "-t", tmp_path / "t.csv", "-p", tmp_path / "p.csv", "-m", "R@1",
                 "--relevance-threshold", "3", "-f", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["summary"] == {"R@1": 0.5}
    warning_lines = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning_lines) == 1 and "empty='zero'" in warning_lines[0]
