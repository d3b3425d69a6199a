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


@pytest.fixture()
def rated(tmp_path: Path) -> tuple[Path, Path]:
    """Star ratings: u1 rated a 5, b 3, c 4; u2 a 2, d 5. Lists: u1 b > a > x, u2 a > d, and
    u3 (no truth) a."""
    truth, preds = tmp_path / "truth.csv", tmp_path / "run.csv"
    truth.write_text("user,item,rating\nu1,a,5\nu1,b,3\nu1,c,4\nu2,a,2\nu2,d,5\n")
    preds.write_text("user,item,score\nu1,b,0.9\nu1,a,0.8\nu1,x,0.7\nu2,a,0.9\nu2,d,0.5\n"
                     "u3,a,1\n")
    return truth, preds


def test_options_flags_apply_to_both_sides(rated: tuple[Path, Path]) -> None:
    """--relevance-threshold 4: relevant = {a, c} for u1, {d} for u2, on both sides, as
    'receval evaluate --profile ranx --relevance-threshold 4' would count them."""
    truth, preds = rated
    result = run("explain", "ranx", "-t", truth, "-p", preds, "-m", "P@2,R@2",
                 "--relevance-threshold", "4", "-f", "json", "--silence", "no-threshold")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["overrides"] == {"relevance_threshold": 4.0}
    assert "relevance_threshold" not in {d["option"] for d in doc["differences"]}
    # u1: a at rank 2 of {a, c}: P@2 1/2, R@2 1/2; u2: d at rank 2 of {d}: 1/2, 1
    for side in ("ranx", "defaults"):
        assert doc["values"][side] == {"P@2": pytest.approx(0.5), "R@2": pytest.approx(0.75)}
    # without it: ranx counts rating >= 1 (all), the defaults every row: P@2 1, R@2 (2/3+1)/2
    doc = json.loads(run("explain", "ranx", "-t", truth, "-p", preds, "-m", "P@2,R@2",
                         "-f", "json", "--silence", "no-threshold").stdout)
    assert doc["overrides"] == {}
    assert doc["values"]["ranx"] == {"P@2": pytest.approx(1.0), "R@2": pytest.approx(5 / 6)}


def test_profile_flag_is_refused(rated: tuple[Path, Path]) -> None:
    result = run("explain", "ranx", "--profile", "trec_eval")
    assert result.exit_code == 2
    assert "not --profile" in result.stderr


def test_table_is_not_cut_when_piped(files: tuple[Path, Path]) -> None:
    """CliRunner's stdout is no terminal: the table keeps every column and cell whole, though
    it is wider than 80 columns."""
    truth, preds = files
    metrics = ["P@10", "R@10", "AP@10", "nDCG@10", "RR@10", "Hit@10"]
    result = run("explain", "trec_eval", "kaggle", "-t", truth, "-p", preds,
                 "-m", ",".join(metrics))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(line for line in lines if "option" in line)
    assert all(m in header for m in metrics)
    assert "…" not in result.stdout
    assert "min_k_relevant" in result.stdout  # the widest option value, whole
    assert max(len(line) for line in lines) > 100
    assert sum("ap_normalizer" in line for line in lines) == 1  # one line per row: no wrap
