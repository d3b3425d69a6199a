"""Profiles against each tool's formula on the cases where they differed (issue 33, item 8);
expected values written from the tools' definitions, not from receval."""

from __future__ import annotations

import math

import numpy as np
import pytest

import receval


def _cornac_rating(truth: list[float], pred: list[float]) -> tuple[float, float]:
    """Cornac's rating evaluation, user_based=False: MAE and RMSE over every test pair."""
    err = np.asarray(pred) - np.asarray(truth)
    return float(np.mean(np.abs(err))), float(math.sqrt(np.mean(err ** 2)))


def test_cornac_mae_rmse_pool_every_test_pair() -> None:
    truth = {"user": ["A", "A", "B", "B"], "item": [1, 2, 3, 4], "rating": [0.0, 0.5, 3.0, 4.0]}
    preds = {"user": ["A", "A", "B", "B"], "item": [1, 2, 3, 4], "score": [1.0, 1.5, 3.0, 4.0]}
    got = receval.evaluate(truth, preds, ["MAE", "RMSE", "P@2"], profile="cornac").summary
    mae, rmse = _cornac_rating([0.0, 0.5, 3.0, 4.0], [1.0, 1.5, 3.0, 4.0])
    assert got["MAE"] == pytest.approx(mae) and mae == 0.5
    assert got["RMSE"] == pytest.approx(rmse)
    assert got["P@2"] == 1.0  # ranking metrics still skip user A (no rating >= 1)


def test_cornac_rating_metrics_of_users_without_a_positive() -> None:
    truth = {"user": ["A", "A"], "item": [1, 2], "rating": [0.0, 0.5]}
    preds = {"user": ["A", "A"], "item": [1, 2], "score": [1.0, 1.5]}
    got = receval.evaluate(truth, preds, ["MAE", "RMSE"], profile="cornac").summary
    assert got == pytest.approx(dict(zip(("MAE", "RMSE"),
                                         _cornac_rating([0.0, 0.5], [1.0, 1.5]), strict=True)))


@pytest.mark.parametrize("seed", range(20))
def test_cornac_mae_on_random_cases(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    users = rng.integers(0, 5, n)
    items = np.arange(n)
    rating = rng.integers(0, 6, n) / 2.0  # 0.0 .. 2.5: many users without a rating >= 1
    score = rng.normal(2.0, 1.0, n)
    if not (rating >= 1).any():
        rating[0] = 1.0
    got = receval.evaluate({"user": users, "item": items, "rating": rating},
                           {"user": users, "item": items, "score": score}, ["MAE", "RMSE"],
                           profile="cornac").summary
    mae, rmse = _cornac_rating(list(rating), list(score))
    assert got["MAE"] == pytest.approx(mae, abs=1e-12)
    assert got["RMSE"] == pytest.approx(rmse, abs=1e-12)


def test_rectools_with_an_empty_training_frame_gives_zeros_not_an_index_error() -> None:
    """RecTools' MeanInvUserFreq and AvgRecPopularity on an empty interactions frame: every
    recommended item is unknown, each adds 0."""
    import pandas as pd

    from receval.beyond import beyond_metrics

    lists = pd.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 10, 12],
                          "score": [2.0, 1.0, 2.0, 1.0]})
    train = pd.DataFrame({"user": pd.Series([], dtype="int64"),
                          "item": pd.Series([], dtype="int64")})
    summary, per_user = beyond_metrics(lists, ["novelty@2", "ARP@2"], train=train,
                                       profile="rectools")
    assert summary == {"novelty@2": 0.0, "ARP@2": 0.0}
    assert per_user["novelty@2"].tolist() == [0.0, 0.0]


def test_torchmetrics_ndcg_with_a_negative_target_is_the_documented_gap() -> None:
    """torchmetrics' nDCG takes a target of -1 as a gain of -1 (0.877); receval's gains are
    never negative (0.950): the gap the profile names."""
    lg = math.log2(3)
    torchmetrics_value = (2 - 1 / lg + 1 / 2) / (2 + 1 / lg - 1 / 2)
    receval_value = (2 + 1 / 2) / (2 + 1 / lg)
    assert round(torchmetrics_value, 3) == 0.877 and round(receval_value, 3) == 0.950
    got = receval.evaluate({"user": [1, 1, 1], "item": [1, 2, 3], "rating": [2, -1, 1]},
                           {"user": [1, 1, 1], "item": [1, 2, 3], "score": [0.9, 0.8, 0.7]},
                           ["nDCG@3"], profile="torchmetrics").summary["nDCG@3"]
    assert got == pytest.approx(receval_value)
    assert any("negative target" in gap for gap in receval.profiles.PROFILES["torchmetrics"].gaps)


def _evidently_ild(vectors: list[list[float]]) -> float:
    """Evidently's DiversityMetric for one list: the cosine distances of the unordered pairs,
    summed, divided by the list's length."""
    x = np.asarray(vectors, dtype=float)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    m = len(x)
    return sum(1 - float(x[i] @ x[j]) for i in range(m) for j in range(i + 1, m)) / m


@pytest.mark.parametrize("vectors", [[[1, 0], [0, 1]], [[1, 0], [0, 1], [1, 1]],
                                     [[1, 0, 0], [1, 1, 0], [0, 0, 1], [1, 1, 1]]])
def test_evidently_diversity_divides_the_pair_sum_by_the_list_length(vectors) -> None:
    import pandas as pd

    from receval.beyond import beyond_metrics

    m = len(vectors)
    lists = pd.DataFrame({"user": [1] * m, "item": list(range(m)),
                          "score": [float(m - i) for i in range(m)]})
    feats = pd.DataFrame({"item": list(range(m)),
                          **{f"f{j}": [float(v[j]) for v in vectors]
                             for j in range(len(vectors[0]))}})
    got = beyond_metrics(lists, [f"diversity@{m}"], item_features=feats, profile="evidently")[0]
    assert got[f"diversity@{m}"] == pytest.approx(_evidently_ild(vectors))
    mean = beyond_metrics(lists, [f"diversity@{m}"], item_features=feats)[0]
    assert mean[f"diversity@{m}"] == pytest.approx(_evidently_ild(vectors) * 2 / (m - 1))
