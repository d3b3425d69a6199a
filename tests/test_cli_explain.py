"""`receval explain`: the options two profiles set differently, and on the user's files how much
each one moves each metric. Expected numbers are worked by hand from the formulas (the example
of docs/profiles.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from receval.cli import main

HITS = 1 / 1 + 2 / 4 + 3 / 7  # u1's precisions at its hits (ranks 1, 4, 7) in the top 10


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    """u1: 12 relevant items, 11 predicted (hits at ranks 1, 4, 7); u2: 1 relevant, no run."""
    truth, preds = tmp_path / "truth.csv", tmp_path / "run.csv"
    truth.write_text("user,item\n" + "".join(f"u1,{i}\n" for i in "bdghmnpqstvw") + "u2,z\n")
    preds.write_text("user,item,score\n" + "".join(
        f"u1,{item},{1.0 - 0.05 * rank}\n" for rank, item in enumerate("bcedfigjklo")))
    return truth, preds


def test_options_only_lists_what_differs() -> None:
    result = run("explain", "trec_eval", "kaggle", "-f", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    differing = {d["option"]: (d["a"], d["b"]) for d in doc["differences"]}
    assert differing["ap_normalizer"] == ("relevant", "min_k_relevant")
    assert differing["users"] == ("both", "truth")
    assert differing["empty"] == ("zero", "one")
    assert "protocol" not in differing  # both rank every prediction
    assert doc["metrics"] == [] and doc["values"] == {"trec_eval": {}, "kaggle": {}}


def test_effects_on_the_users_files(files: tuple[Path, Path]) -> None:
    truth, preds = files
    result = run("explain", "trec_eval", "kaggle", "-t", truth, "-p", preds, "-m", "AP@10",
                 "-f", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    trec = HITS / 12  # AP over all 12 relevant; u2 has no run: not averaged (no -c)
    kaggle = (HITS / 10 + 0.0) / 2  # AP over min(k, L) = 10; u2 averaged in with 0
    assert doc["values"]["trec_eval"]["AP@10"] == pytest.approx(trec, abs=1e-12)
    assert doc["values"]["kaggle"]["AP@10"] == pytest.approx(kaggle, abs=1e-12)
    effects = {o: by["AP@10"] for o, by in doc["effects"].items()}
    assert effects["ap_normalizer"] == pytest.approx(HITS / 10 - trec, abs=1e-12)
    assert effects["users"] == pytest.approx(trec / 2 - trec, abs=1e-12)
    assert effects["ties"] == 0.0  # no tied scores
    together = sum(effects.values()) + doc["interaction"]["AP@10"]
    assert together == pytest.approx(kaggle - trec, abs=1e-12)


def test_table_against_the_defaults(files: tuple[Path, Path]) -> None:
    truth, preds = files
    result = run("explain", "spark", "-t", truth, "-p", preds, "-m", "P@10,AP@10")
    assert result.exit_code == 0, result.output
    assert "spark vs defaults" in result.stdout
    assert "users" in result.stdout and "interaction" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuchtool"], "unknown profile 'nosuchtool'"),
        (["ranx", "-t", "TRUTH"], "give both --truth and --predictions"),
        (["ranx", "-t", "TRUTH", "-p", "RUN", "-p", "RUN"], "one --predictions file"),
        (["ranx", "-t", "TRUTH", "-p", "RUN", "-m", "P@0"], "must be positive"),
    ],
)
def test_bad_input_exits_2(files: tuple[Path, Path], args: list[str], message: str) -> None:
    truth, preds = files
    args = [str(truth) if a == "TRUTH" else str(preds) if a == "RUN" else a for a in args]
    result = run("explain", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
