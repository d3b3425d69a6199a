"""Beyond-accuracy metrics on the command line (`-m coverage@2 --train FILE`): the values of a
small case worked out by hand from the formulas of docs/beyond-accuracy.md (and equal to
receval.evaluate's), every output format with catalogue metrics (summary only), the flags
--item-features and --beyond, and the one-line errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result

import receval
from receval.cli import main

# training popularity: a 3 rows (users 1, 2, 3), b 1 (user 1), c 1 (user 3), d none (cold)
TRAIN = pd.DataFrame({"user": [1, 1, 2, 3, 3], "item": ["a", "b", "a", "a", "c"]})
TRUTH = pd.DataFrame({"user": [1, 2, 3], "item": ["c", "b", "b"]})
# top-2 lists: user 1 [d, c], user 2 [b, c], user 3 [b, d]
SVD = pd.DataFrame({"user": [1, 1, 2, 2, 3, 3], "item": ["d", "c", "b", "c", "b", "d"],
                    "score": [0.9, 0.8, 0.7, 0.6, 0.9, 0.1]})
# every user: [a]
POP = pd.DataFrame({"user": [1, 2, 3], "item": ["a", "a", "a"], "score": [1.0, 1.0, 1.0]})
# categories: a drama, b comedy, c drama + comedy, d horror
FEATURES = "item,genres\na,drama\nb,comedy\nc,drama|comedy\nd,horror\n"

LOG5 = math.log2(5)
#: worked out by hand (see each line)
HAND = {
    # user 1: c (relevant) at rank 2 -> 1 / log2(3); users 2 and 3: b at rank 1 -> 1
    "nDCG@2": (1 / math.log2(3) + 2) / 3,
    # catalogue = train + truth items {a, b, c}; listed {b, c, d}; d outside -> 2 / 3
    "coverage@2": 2 / 3,
    # -log2(p), p = training rows / 5: b, c -> log2 5, d (cold) -> 0;
    # users: (log2 5) / 2, (2 log2 5) / 2, (log2 5) / 2
    "novelty@2": (LOG5 / 2 + LOG5 + LOG5 / 2) / 3,
    # 1 - cosine of multi-hot genres: [d, c] 1, [b, c] 1 - 1/sqrt(2), [b, d] 1
    "diversity@2": (1 + (1 - 1 / math.sqrt(2)) + 1) / 3,
    # exposures over I + listed = {a: 0, b: 2, c: 2, d: 2}, sorted 0, 2, 2, 2, n = 4:
    # sum (2i - n - 1) x_i / (n sum x) = (-1*2 + 1*2 + 3*2) / (4 * 6)
    "gini@2": 6 / 24,
    # short head = shortest popularity prefix with 80% of 5 rows: {a, b} (or {a, c}); tail
    # share per list: 1, 1/2, 1/2 (either way)
    "APLT@2": (1 + 0.5 + 0.5) / 3,
}
POP_HAND = {
    "nDCG@2": 0.0,
    "coverage@2": 1 / 3,
    "novelty@2": math.log2(5 / 3),
    # exposures a 3, b 0, c 0 (d neither listed nor in I): (2*3 - 3 - 1) * 3 / (3 * 3)
    "gini@2": 6 / 9,
    "APLT@2": 0.0,
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("beyond_cli")
    TRAIN.to_csv(folder / "train.csv", index=False)
    TRUTH.to_csv(folder / "truth.csv", index=False)
    SVD.to_csv(folder / "svd.csv", index=False)
    POP.to_csv(folder / "pop.csv", index=False)
    (folder / "features.csv").write_text(FEATURES)
    return folder


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def evaluate(files: Path, *args: str, models: tuple[str, ...] = ("svd",)) -> Result:
    preds = [a for m in models for a in ("-p", files / f"{m}.csv")]
    return run("evaluate", "-t", files / "truth.csv", *preds, *args)


def metric_args(metrics: list[str]) -> list[str]:
    return [a for m in metrics for a in ("-m", m)]


def test_values_equal_the_hand_oracle_and_the_python_api(files: Path) -> None:
    result = evaluate(files, *metric_args(list(HAND)), "--train", str(files / "train.csv"),
                      "--item-features", str(files / "features.csv"), "-f", "json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summary"]
    assert list(summary) == list(HAND)
    assert summary == pytest.approx(HAND, rel=1e-12)
    genres = {"a": ["drama"], "b": ["comedy"], "c": ["drama", "comedy"], "d": ["horror"]}
    api = receval.evaluate(TRUTH, SVD, list(HAND), train=TRAIN, item_features=genres).summary
    assert summary == api  # the same numbers bit for bit


def test_two_models_every_format(files: Path, tmp_path: Path) -> None:
    metrics = metric_args(list(POP_HAND))
    common = ("--train", str(files / "train.csv"))
    result = evaluate(files, *metrics, *common, "-f", "json", models=("svd", "pop"))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summary"]
    assert summary["pop"] == pytest.approx(POP_HAND, rel=1e-12, abs=1e-15)
    assert summary["svd"] == pytest.approx({m: HAND[m] for m in POP_HAND}, rel=1e-12)
    # a catalogue metric is one number over the lists: the paired tests leave it out
    for fmt in ("table", "markdown", "latex", "csv"):
        out = evaluate(files, *metrics, *common, "-f", fmt, models=("svd", "pop"))
        assert out.exit_code == 0, (fmt, out.output)
        line = next(x for x in out.stdout.splitlines() if "coverage@2" in x
                    and "not tested" not in x)
        assert "0.333" in line and "0.666" in line, (fmt, line)
    table = evaluate(files, *metrics, *common, "-f", "markdown", models=("svd", "pop"))
    assert ("not tested (one number over all lists, no per-user values): coverage@2, gini@2"
            in table.stdout)
    # per-user values: the per-user metrics only
    per_user = tmp_path / "users.csv"
    out = evaluate(files, *metrics, *common, "--per-user", str(per_user),
                   models=("svd", "pop"))
    assert out.exit_code == 0, out.output
    frame = pd.read_csv(per_user)
    assert list(frame.columns) == ["model", "user", "nDCG@2", "novelty@2", "APLT@2"]
    svd = frame[frame["model"] == "svd"]
    assert svd["novelty@2"].tolist() == pytest.approx([LOG5 / 2, LOG5, LOG5 / 2], rel=1e-12)


def test_beyond_flag_bundle_and_switches(files: Path) -> None:
    train = ("--train", str(files / "train.csv"))
    # RecTools counts the distinct listed items, outside the catalogue too: b, c, d
    out = evaluate(files, "-m", "coverage@2", *train, "--beyond", "rectools", "-f", "json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["summary"] == {"coverage@2": 3.0}
    # novelty from distinct users / 3 training users: b, c -> log2 3; d cold -> 0
    out = evaluate(files, "-m", "novelty@2", *train, "--beyond",
                   "novelty_popularity=users,novelty_base=2", "-f", "json")
    assert out.exit_code == 0, out.output
    log3 = math.log2(3)
    assert json.loads(out.stdout)["summary"]["novelty@2"] == pytest.approx(
        (log3 / 2 + log3 + log3 / 2) / 3, rel=1e-12)
    bad = evaluate(files, "-m", "novelty@2", *train, "--beyond", "novelty_popularity=users,x")
    assert bad.exit_code == 2 and "'x' is not KEY=VALUE" in bad.stderr
    bad = evaluate(files, "-m", "novelty@2", *train, "--beyond", "rectool")
    assert bad.exit_code == 2 and "unknown beyond profile 'rectool'" in bad.stderr


def test_missing_train_is_one_line_naming_the_flag(files: Path) -> None:
    out = evaluate(files, "-m", "nDCG@2", "-m", "novelty@10")
    assert out.exit_code == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "--train" in lines[0] and "novelty@10" in lines[0], out.stderr
    assert "Traceback" not in out.output
    out = evaluate(files, "-m", "diversity@2", "--train", str(files / "train.csv"))
    assert out.exit_code == 2 and "--item-features" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_unknown_name_suggests_the_close_beyond_names(files: Path) -> None:
    for typo, close in (("coverge@10", "'coverage@10'"), ("novelti@5", "'novelty@5'"),
                        ("diversty@3", "'diversity@3'")):
        out = evaluate(files, "-m", typo)
        assert out.exit_code == 2, out.output
        assert close in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    out = evaluate(files, "-m", "novelty")  # a beyond name without its cutoff
    assert out.exit_code == 2 and "novelty@10" in out.stderr


def test_accuracy_lists_still_parse(files: Path) -> None:
    """trec_eval comma lists ('P.1,2') keep their meaning next to beyond names."""
    out = evaluate(files, "-m", "P.1,2", "-m", "coverage@1,2", "-f", "json")
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)["summary"]
    assert list(summary)[2:] == ["coverage@1", "coverage@2"]
    # P@1: users 2, 3 hit at rank 1 -> 2/3; P@2: one hit in each list -> 1/2
    assert list(summary.values())[:2] == pytest.approx([2 / 3, 1 / 2])


def test_features_and_flags_need_a_beyond_metric(files: Path) -> None:
    out = evaluate(files, "-m", "nDCG@2", "--item-features", str(files / "features.csv"))
    assert out.exit_code == 2 and "beyond-accuracy metric" in out.stderr


def test_compare_and_plot(files: Path, tmp_path: Path) -> None:
    train = ("--train", str(files / "train.csv"))
    preds = ("-p", str(files / "svd.csv"), "-p", str(files / "pop.csv"))
    out = run("compare", "-t", files / "truth.csv", *preds, "-m", "novelty@2", *train,
              "-f", "json")
    assert out.exit_code == 0, out.output
    assert "novelty@2" in out.stdout
    out = run("compare", "-t", files / "truth.csv", *preds, "-m", "coverage@2", *train)
    assert out.exit_code == 2 and "catalogue" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    image = tmp_path / "novelty.svg"
    out = run("plot", "-t", files / "truth.csv", *preds, "-m", "novelty@2", *train,
              "--kind", "distribution", "-o", image)
    assert out.exit_code == 0, out.output
    assert image.read_text().lstrip().startswith("<?xml")
    out = run("plot", "-t", files / "truth.csv", *preds, "-m", "gini@2", *train,
              "--kind", "distribution", "-o", image)
    assert out.exit_code == 2 and "catalogue" in out.stderr
