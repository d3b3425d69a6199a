"""The defects of the pipeline issue (issue 21), each checked where a user meets it: the item
features file read one way from Python and the command line, beyond-accuracy names in every
multi-model table, the coverage catalogue independent of the relevance threshold, report
intervals keyed by names, ``--max-list`` and ``--silence`` on the command line, and the torch
engine's ``device=``. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner, Result

import receval
from receval.cli import main

# lists (top-2): user 1 [d, c], user 2 [b, c], user 3 [b, d]
TRUTH = pd.DataFrame({"user": [1, 2, 3], "item": ["c", "b", "b"]})
SVD = pd.DataFrame({"user": [1, 1, 2, 2, 3, 3], "item": ["d", "c", "b", "c", "b", "d"],
                    "score": [0.9, 0.8, 0.7, 0.6, 0.9, 0.1]})
# MovieLens' shape: an id column, a title (text) and the genres as 'a|b'
MOVIES = ('movieId,title,genres\n'
          'a,"Heat, 1995",Drama\nb,Up,Comedy\nc,"Big, 1988",Drama|Comedy\nd,It,Horror\n')
# 1 - cosine of the multi-hot genres: [d, c] 1; [b, c] 1 - 1/sqrt(2); [b, d] 1
DIVERSITY = (1 + (1 - 1 / math.sqrt(2)) + 1) / 3


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture()
def files(tmp_path: Path) -> Path:
    TRUTH.to_csv(tmp_path / "truth.csv", index=False)
    SVD.to_csv(tmp_path / "svd.csv", index=False)
    (tmp_path / "movies.csv").write_text(MOVIES)
    return tmp_path


# --- (a) the item features: one reader, one meaning -------------------------------------------


def test_genres_split_on_bar_the_same_in_python_and_on_the_command_line(files: Path) -> None:
    movies = pd.read_csv(files / "movies.csv")
    columns = {"item": "movieId", "features": "genres"}
    frame = receval.evaluate(TRUTH, SVD, ["diversity@2"], item_features=movies,
                             item_features_columns=columns).summary["diversity@2"]
    path = receval.evaluate(TRUTH, SVD, ["diversity@2"], item_features=files / "movies.csv",
                            item_features_columns=columns).summary["diversity@2"]
    cli = run("evaluate", "-t", files / "truth.csv", "-p", files / "svd.csv", "-m",
              "diversity@2", "--item-features", files / "movies.csv",
              "--item-features-columns", "item=movieId,features=genres", "-f", "json")
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.stdout)["summary"]["diversity@2"] == frame == path
    assert frame == pytest.approx(DIVERSITY, rel=1e-12)


def test_a_bar_separated_text_column_of_a_frame_is_a_list_of_categories() -> None:
    # before: 'Drama|Comedy' was one category of its own, and c shared nothing with b
    genres = pd.DataFrame({"item": list("abcd"),
                           "genres": ["Drama", "Comedy", "Drama|Comedy", "Horror"]})
    got = receval.evaluate(TRUTH, SVD, ["diversity@2"], item_features=genres).summary
    assert got["diversity@2"] == pytest.approx(DIVERSITY, rel=1e-12)


def test_several_candidate_feature_columns_are_an_error_naming_the_flag(files: Path) -> None:
    (files / "items.csv").write_text(MOVIES.replace("movieId", "item"))
    cli = run("evaluate", "-t", files / "truth.csv", "-p", files / "svd.csv", "-m",
              "diversity@2", "--item-features", files / "items.csv")
    assert cli.exit_code == 2, cli.output
    lines = cli.stderr.strip().splitlines()
    assert len(lines) == 1 and "--item-features-columns features=NAME" in lines[0]
    assert "'title', 'genres'" in lines[0]
    frame = pd.read_csv(files / "items.csv")
    with pytest.raises(receval.ReceValError, match="item_features_columns"):
        receval.evaluate(TRUTH, SVD, ["diversity@2"], item_features=frame)


def test_the_features_reader_keeps_007_and_7_apart(tmp_path: Path) -> None:
    from receval.io.features import read_item_features

    (tmp_path / "f.csv").write_text("item,genre\n007,x\n7,y\n")
    assert read_item_features(tmp_path / "f.csv").column("item").to_pylist() == ["007", "7"]
    truth = pd.DataFrame({"user": ["u"], "item": ["007"]})
    preds = pd.DataFrame({"user": ["u", "u"], "item": ["007", "7"], "score": [2.0, 1.0]})
    # 007 -> x and 7 -> y share no category: diversity 1 (read as 7 and 7: one item, undefined)
    got = receval.evaluate(truth, preds, ["diversity@2"], item_features=tmp_path / "f.csv")
    assert got.summary["diversity@2"] == 1.0


# --- (b) beyond-accuracy names in every multi-model door --------------------------------------


def _popularity_files(folder: Path) -> None:
    """40 users; model 'rare' lists 10 of the 15 least trained items, 'common' 10 of the 15
    most: their novelty differs for every user, so the paired test marks it."""
    rng = np.random.default_rng(0)
    items = [f"i{j}" for j in range(30)]
    weights = np.arange(30, 0, -1) / np.arange(30, 0, -1).sum()
    train = [(u, i) for u in range(40) for i in rng.choice(items, 8, replace=False, p=weights)]
    pd.DataFrame(train, columns=["user", "item"]).to_csv(folder / "train.csv", index=False)
    truth = [(u, f"t{u % 9}") for u in range(40)]  # held out: never a training item
    pd.DataFrame(truth, columns=["user", "item"]).to_csv(folder / "truth.csv", index=False)
    for name, chosen in (("rare", items[-15:]), ("common", items[:15])):
        rows = [(u, i, float(10 - r)) for u in range(40)  # 10 of the 15, a user's own
                for r, i in enumerate(chosen[u % 6:][:10])]
        pd.DataFrame(rows, columns=["user", "item", "score"]).to_csv(folder / f"{name}.csv",
                                                                      index=False)


def test_evaluate_two_models_with_a_beyond_metric_marks_it(tmp_path: Path) -> None:
    _popularity_files(tmp_path)
    cli = run("evaluate", "-t", tmp_path / "truth.csv", "-p", tmp_path / "rare.csv", "-p",
              tmp_path / "common.csv", "--train", tmp_path / "train.csv", "-m",
              "P@10,novelty@10,coverage@10", "-f", "markdown", "--silence", "train-items")
    assert cli.exit_code == 0, cli.output  # before: unknown metric 'novelty@10'
    row = next(line for line in cli.stdout.splitlines() if line.startswith("| novelty@10"))
    assert "ᵇ" in row.split("|")[2]  # rare (a) is significantly more novel than common (b)
    assert "not tested (one number over all lists, no per-user values): coverage@10" in \
        cli.stdout


def test_compare_refuses_catalogue_metrics_up_front_and_pairs_per_user_ones(
        tmp_path: Path) -> None:
    _popularity_files(tmp_path)
    truth, train = pd.read_csv(tmp_path / "truth.csv"), pd.read_csv(tmp_path / "train.csv")
    runs = {n: pd.read_csv(tmp_path / f"{n}.csv") for n in ("rare", "common")}
    with pytest.raises(receval.ReceValError, match=r"^'coverage@10' is one number over all "
                       r"lists \(catalogue level\): no per-user values to pair"):
        receval.compare(truth, runs, ["P@10", "coverage@10"], train=train)
    table = receval.compare(truth, runs, ["novelty@10"], train=train,
                            silence=["train-items", "no-match"]).table
    assert table["metric"].tolist() == ["novelty@10"] and table["p_value"].iloc[0] < 0.05


def test_monitor_neither_offers_nor_takes_beyond_metrics() -> None:
    shown = run("monitor", "--help")
    assert shown.exit_code == 0 and "coverage" not in shown.stdout
    refused = run("monitor", "-i", "nowhere.parquet", "--feedback", "nowhere.parquet", "-m",
                  "P@10,coverage@10")
    assert refused.exit_code == 2
    lines = refused.stderr.strip().splitlines()  # per-list fairness metrics are computed
    assert len(lines) == 1 and lines[0].startswith(
        "error: 'coverage@10' is one number over every list of a window (catalogue level)")


# --- (c) the catalogue does not move with the relevance threshold -----------------------------


def test_coverage_catalogue_is_train_plus_every_truth_item() -> None:
    train = pd.DataFrame({"user": [1, 2], "item": ["a", "b"]})
    truth = pd.DataFrame({"user": [1, 2], "item": ["c", "d"], "rating": [5.0, 2.0]})
    preds = pd.DataFrame({"user": [1, 2], "item": ["a", "d"], "score": [1.0, 1.0]})
    # I = train {a, b} + truth {c, d}; listed {a, d}: 2 / 4, whatever is relevant
    got = [receval.evaluate(truth, preds, ["coverage@1", "gini@1"], train=train,
                            relevance_threshold=t, silence="train-items").summary
           for t in (None, 1, 3, 5)]
    assert [g["coverage@1"] for g in got] == [0.5] * 4  # before, at 3 and 5: 1/3
    # exposures over I: a 1, b 0, c 0, d 1; sorted 0 0 1 1, n 4: (1*1 + 3*1) / (4*2)
    assert [g["gini@1"] for g in got] == [0.5] * 4


# --- (d) report intervals keyed by names --------------------------------------------------------


def test_report_intervals_do_not_move_when_models_are_reordered() -> None:
    from receval.report.bootstrap import metric_cis

    rng = np.random.default_rng(1)
    truth = pd.DataFrame({"user": np.arange(60), "item": rng.integers(0, 5, 60)})
    models = {}
    for name in ("a", "b"):
        preds = pd.DataFrame({"user": np.repeat(np.arange(60), 3),
                              "item": rng.integers(0, 5, 180), "score": rng.random(180)})
        models[name] = receval.evaluate(truth, preds, ["P@3"], duplicates="first")
    forward = metric_cis(models, ["P@3"], n_resamples=200)
    backward = metric_cis(dict(reversed(models.items())), ["P@3"], n_resamples=200)
    assert forward == backward


def test_monitor_intervals_come_from_the_one_bootstrap() -> None:
    from receval.monitor.intervals import resampled_means
    from receval.stats.intervals import bootstrap_means

    values = np.arange(500) % 7 / 7
    got = resampled_means(values, 300, np.random.default_rng(5))
    assert np.array_equal(got, bootstrap_means(values, 300, np.random.default_rng(5)))


# --- (e) --max-list and --silence on the command line -----------------------------------------


def test_max_list_flag_is_an_integer(files: Path) -> None:
    cli = run("evaluate", "-t", files / "truth.csv", "-p", files / "svd.csv", "-m", "P@2",
              "--max-list", "1", "-f", "json")
    assert cli.exit_code == 0, cli.output  # before: max_list='1' must be a positive integer
    # each list cut to its first item: d (miss), b (hit), b (hit) -> P@2 = (0 + 1/2 + 1/2) / 3
    assert json.loads(cli.stdout)["summary"]["P@2"] == pytest.approx(1 / 3, rel=1e-15)
    assert run("evaluate", "-t", files / "truth.csv", "-p", files / "svd.csv",
               "--max-list", "x").exit_code == 2


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_silence_undefined_holds_on_the_command_line(files: Path, command: str) -> None:
    # user 3's truth is rated 1: nothing relevant at threshold 4, R@2 undefined for them
    pd.DataFrame({"user": [1, 2, 3], "item": ["c", "b", "b"], "rating": [5, 5, 1]}).to_csv(
        files / "rated.csv", index=False)
    args = ["-t", files / "rated.csv", "-p", files / "svd.csv", "-p", files / "svd.csv",
            "-m", "R@2", "--relevance-threshold", "4"]
    loud = run(command, *args)
    assert loud.exit_code == 0, loud.output
    assert "undefined for some users" in loud.stderr
    quiet = run(command, *args, "--silence", "undefined")
    assert quiet.exit_code == 0 and "undefined" not in quiet.stderr, quiet.stderr


# --- (f) evaluate(engine="torch", device=...) ---------------------------------------------------


def test_torch_engine_takes_a_device() -> None:
    pytest.importorskip("torch")
    metrics = ["P@2", "nDCG@2", "MRR"]
    numba = receval.evaluate(TRUTH, SVD, metrics).summary
    assert receval.evaluate(TRUTH, SVD, metrics, engine="torch", device="cpu").summary == numba
    with pytest.raises(receval.ReceValError, match="is not a torch device"):
        receval.evaluate(TRUTH, SVD, metrics, engine="torch", device="gpu0")
    with pytest.raises(receval.ReceValError, match="takes no device"):
        receval.evaluate(TRUTH, SVD, metrics, device="cpu")


def test_evaluate_scores_computes_judged_families_and_max_list() -> None:
    pytest.importorskip("torch")
    truth = pd.DataFrame({"user": [0, 0, 1, 1, 1], "item": [0, 1, 2, 3, 0],
                          "rating": [5.0, 1.0, 4.0, 2.0, 3.0]})
    scores = np.array([[0.9, 0.8, 0.1, 0.7], [0.2, 0.3, 0.9, 0.5]])
    long = pd.DataFrame({"user": np.repeat([0, 1], 4), "item": np.tile(np.arange(4), 2),
                         "score": scores.ravel()})
    metrics = ["bpref", "ERR@2", "Judged@2", "RBP@0.5", "iprec@0.5", "P@2"]
    for max_list in (None, 1, 3):
        want = receval.evaluate(truth, long, metrics, relevance_threshold=3,
                                max_list=max_list)
        got = receval.evaluate_scores(truth, scores, metrics, relevance_threshold=3,
                                      max_list=max_list, device="cpu")
        assert got.summary == want.summary, max_list
    # max_list=1: user 0 keeps item 0 (rated 5), user 1 item 2 (rated 4): P@2 = 1/2 each
    got = receval.evaluate_scores(truth, scores, ["P@2"], relevance_threshold=3, max_list=1,
                                  device="cpu")
    assert got.summary["P@2"] == 0.5


def test_python_monitor_refuses_beyond_metrics_in_one_line_as_the_cli_does() -> None:
    """Issue 21: ``receval.monitor(..., ["coverage@10"])`` said "unknown metric 'coverage@10';
    did you mean 'hitrate@10'?"; it now says what the command line says, before reading."""
    imps = {"user": [1], "item": [2], "rank": [1], "served_at": ["2024-01-01T00:00:00Z"]}
    fb = {"user": [1], "item": [2], "value": [1], "at": ["2024-01-01T01:00:00Z"]}
    with pytest.raises(receval.ReceValError) as err:
        receval.monitor(imps, fb, ["P@1", "coverage@10"])
    assert str(err.value).startswith("'coverage@10' is one number over every list of a "
                                     "window (catalogue level)")
    assert "\n" not in str(err.value)
