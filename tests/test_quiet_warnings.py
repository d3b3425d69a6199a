"""No quiet number: the mistakes an input can hide are warned (and counted) — lists emptied
by ``exclude_train``, ranks passed as scores, a relevance threshold off the ratings' scale,
lists of different depths on a metric without a cutoff — and the built-in popular baseline
is as deep as the deepest model list, in the library and on the command line alike.
Expected numbers are worked by hand."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.checks import (
    EmptiedListsWarning,
    ListDepthsWarning,
    RanksAsScoresWarning,
    ThresholdRangeWarning,
)
from receval.cli import main


def _caught(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, caught


def _of(caught, category):
    return [str(w.message) for w in caught if issubclass(w.category, category)]


def test_exclude_train_emptying_a_list_is_counted_as_such_and_warned():
    """User 1's two predictions are both training items: exclude_train leaves an empty list.
    The user is in both files: counted in in_both and emptied_by_exclude_train, not as a user
    only in the truth or without predictions. P@1: user 1 has 0, user 2 (c first, relevant)
    has 1: 0.5."""
    truth = pd.DataFrame({"user": [1, 2], "item": ["a", "c"]})
    preds = pd.DataFrame({"user": [1, 1, 2], "item": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]})
    train = pd.DataFrame({"user": [1, 1], "item": ["a", "b"]})
    r, caught = _caught(
        receval.evaluate,
        truth,
        preds,
        ["P@1"],
        train=train,
        exclude_train=True,
        silence=["train-items", "train-overlap"],
    )
    users = r.counts["users"]
    assert users["emptied_by_exclude_train"] == 1
    assert users["only_in_truth"] == 0 and users["without_predictions"] == 0
    assert users["in_both"] == 2 and users["in_predictions"] == 2
    assert r.summary["P@1"] == 0.5
    assert len(_of(caught, EmptiedListsWarning)) == 1


def test_no_list_emptied_no_warning():
    truth = pd.DataFrame({"user": [1], "item": ["a"]})
    preds = pd.DataFrame({"user": [1, 1], "item": ["a", "b"], "score": [2.0, 1.0]})
    r, caught = _caught(
        receval.evaluate,
        truth,
        preds,
        ["P@1"],
        train=pd.DataFrame({"user": [1], "item": ["b"]}),
        exclude_train=True,
        silence=["train-items"],
    )
    assert r.counts["users"]["emptied_by_exclude_train"] == 0
    assert not _of(caught, EmptiedListsWarning)


def test_ranks_passed_as_scores_are_warned_naming_the_rank_column():
    """Each list's scores are 1..n (user 1: five items): a rank column read as scores, so the
    rank-5 item ranks first."""
    truth = pd.DataFrame({"user": [1, 2], "item": ["a", "f"]})
    ranks = pd.DataFrame(
        {
            "user": [1, 1, 1, 1, 1, 2, 2],
            "item": ["a", "b", "c", "d", "e", "f", "g"],
            "score": [1.0, 2.0, 3.0, 4.0, 5.0, 1.0, 2.0],
        }
    )
    r, caught = _caught(receval.evaluate, truth, ranks, ["P@1"])
    assert r.summary["P@1"] == 0.0  # read upside down: e and g first
    messages = _of(caught, RanksAsScoresWarning)
    assert len(messages) == 1 and "'rank'" in messages[0]
    # read as ranks, the same lists put a and f first: P@1 = 1, and no warning
    r2, caught2 = _caught(receval.evaluate, truth, ranks.rename(columns={"score": "rank"}), ["P@1"])
    assert r2.summary["P@1"] == 1.0 and not _of(caught2, RanksAsScoresWarning)
    # scores that merely hold whole numbers, not 1..n in every list: no warning
    other = ranks.assign(score=[1.0, 2.0, 3.0, 4.0, 6.0, 1.0, 2.0])
    assert not _of(_caught(receval.evaluate, truth, other, ["P@1"])[1], RanksAsScoresWarning)
    # a worked example's two-item lists scored 2, 1: too short to tell, no warning
    short = ranks[ranks["item"].isin(["a", "b", "f", "g"])]
    assert not _of(_caught(receval.evaluate, truth, short, ["P@1"])[1], RanksAsScoresWarning)


@pytest.mark.parametrize(
    ("threshold", "warned"),
    [(0.8, True), (6.0, True), (0.5, True), (4.0, False), (None, False), ("user_mean", False)],
)
def test_relevance_threshold_off_the_ratings_scale_is_warned(threshold, warned):
    """Ratings 0.5 to 5: 0.8 reads as a share (only the 0.5 falls below it), 6 leaves nothing
    relevant, 0.5 everything; 4 is on the scale."""
    truth = pd.DataFrame({"user": [1, 1, 1], "item": ["a", "b", "c"], "rating": [0.5, 3.0, 5.0]})
    preds = pd.DataFrame({"user": [1], "item": ["c"], "score": [1.0]})
    _, caught = _caught(receval.evaluate, truth, preds, ["P@1"], relevance_threshold=threshold)
    assert bool(_of(caught, ThresholdRangeWarning)) is warned


TRUTH = pd.DataFrame({"user": [1], "item": ["z"]})
TRAIN = pd.DataFrame({"user": [10, 11, 12, 10, 11, 12], "item": ["x", "x", "x", "y", "y", "z"]})
DEEP = pd.DataFrame({"user": [1, 1, 1], "item": ["q", "r", "z"], "score": [3.0, 2.0, 1.0]})
SHALLOW = pd.DataFrame({"user": [1], "item": ["q"], "score": [1.0]})


def test_lists_of_different_depths_on_a_metric_without_cutoff_are_warned():
    _, caught = _caught(
        receval.compare, TRUTH, {"deep": DEEP, "shallow": SHALLOW}, ["P@1", "MRR"], n_resamples=10
    )
    messages = _of(caught, ListDepthsWarning)
    assert len(messages) == 1 and "MRR" in messages[0] and "deep 3" in messages[0]
    _, at_cutoff = _caught(
        receval.compare, TRUTH, {"deep": DEEP, "shallow": SHALLOW}, ["P@1", "MRR@1"], n_resamples=10
    )
    assert not _of(at_cutoff, ListDepthsWarning)


def test_popular_baseline_is_as_deep_as_the_deepest_model_list(tmp_path: Path):
    """Training rows: x 3, y 2, z 1; user 1 has none, so the popular list is x, y, z. The
    model's list is 3 deep: the baseline too, so z (user 1's truth) is at rank 3: MRR 1/3.
    Built as deep as the largest cutoff (1, of P@1) it held x alone: MRR 0."""
    c, caught = _caught(
        receval.compare,
        TRUTH,
        {"m": DEEP},
        ["P@1", "MRR"],
        baseline="popular",
        train=TRAIN,
        n_resamples=10,
    )
    row = c.table.set_index("metric").loc["MRR"]
    assert row["baseline_mean"] == pytest.approx(1 / 3, abs=1e-15)
    assert row["mean"] == pytest.approx(1 / 3, abs=1e-15)  # the model has z at rank 3 too
    assert c.results["popular"].list_depth == 3
    assert not _of(caught, ListDepthsWarning)
    # the command line builds the same baseline
    TRUTH.to_csv(tmp_path / "truth.csv", index=False)
    TRAIN.to_csv(tmp_path / "train.csv", index=False)
    DEEP.to_csv(tmp_path / "m.csv", index=False)
    out = CliRunner().invoke(
        main,
        [
            "compare",
            "-t",
            str(tmp_path / "truth.csv"),
            "-p",
            str(tmp_path / "m.csv"),
            "-m",
            "P@1",
            "-m",
            "MRR",
            "--baseline",
            "popular",
            "--train",
            str(tmp_path / "train.csv"),
            "--resamples",
            "10",
            "-f",
            "json",
        ],
    )
    assert out.exit_code == 0, out.output
    rows = {r["metric"]: r for r in json.loads(out.stdout)["rows"]}
    assert rows["MRR"]["baseline_mean"] == pytest.approx(1 / 3, abs=1e-15)
    assert np.isclose(rows["P@1"]["baseline_mean"], 0.0)
