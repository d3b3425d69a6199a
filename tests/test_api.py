"""The curated public surface and the array functions' agreement with evaluate()."""

import numpy as np
import pandas as pd
import pytest

import receval
from receval import metrics as rm


def test_public_names_are_sorted_and_importable() -> None:
    assert receval.__all__ == sorted(receval.__all__)
    for name in receval.__all__:
        assert hasattr(receval, name)
    assert rm.__all__ == sorted(rm.__all__)


def _long_tables(y_true: np.ndarray, y_score: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    users, items = np.nonzero(y_true > 0)
    truth = pd.DataFrame({"user": users, "item": items, "rating": y_true[users, items]})
    u, i = np.indices(y_score.shape)
    preds = pd.DataFrame({"user": u.ravel(), "item": i.ravel(), "score": y_score.ravel()})
    return truth, preds


@pytest.mark.parametrize("ties", ["stable", "item", "average", "pessimistic"])
def test_array_functions_equal_evaluate_on_long_tables(ties: str) -> None:
    rng = np.random.default_rng(3)
    y_true = rng.integers(0, 3, (40, 12)).astype(float) * (rng.random((40, 12)) < 0.4)
    y_score = rng.integers(0, 5, (40, 12)).astype(float)  # many ties
    truth, preds = _long_tables(y_true, y_score)
    result = receval.evaluate(truth, preds, ["P@5", "R@5", "AP@5", "nDCG@5", "RR@5", "Hit@5",
                                             "F1@5", "Rprec"], ties=ties, users="predictions")
    pairs = {
        "P@5": rm.precision_at_k(y_true, y_score, 5, ties=ties),
        "R@5": rm.recall_at_k(y_true, y_score, 5, ties=ties),
        "AP@5": rm.average_precision_at_k(y_true, y_score, 5, ties=ties),
        "nDCG@5": rm.ndcg_at_k(y_true, y_score, 5, ties=ties),
        "RR@5": rm.reciprocal_rank_at_k(y_true, y_score, 5, ties=ties),
        "Hit@5": rm.hit_rate_at_k(y_true, y_score, 5, ties=ties),
        "F1@5": rm.f1_at_k(y_true, y_score, 5, ties=ties),
        "Rprec": rm.r_precision(y_true, y_score, ties=ties),
    }
    for name, value in pairs.items():
        assert value == pytest.approx(result.summary[name], abs=1e-12), name


def test_graded_ndcg_matches_scikit_learn_without_ties() -> None:
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(11)
    y_true = rng.integers(0, 4, (30, 15)).astype(float)
    y_true[:, 0] = 1.0  # sklearn scores an all-zero row 0; keep every row defined
    y_score = rng.random((30, 15))
    for k in (1, 3, 10, 15):
        expected = sklearn_metrics.ndcg_score(y_true, y_score, k=k)
        assert rm.ndcg_at_k(y_true, y_score, k, gain="linear") == pytest.approx(expected, 1e-12)


def test_average_ties_ndcg_matches_scikit_learn_tie_averaging() -> None:
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    y_true = rng.integers(0, 4, (30, 10)).astype(float)
    y_true[:, 0] = 2.0
    y_score = rng.integers(0, 3, (30, 10)).astype(float)
    for k in (1, 2, 5, 10):
        expected = sklearn_metrics.ndcg_score(y_true, y_score, k=k, ignore_ties=False)
        got = rm.ndcg_at_k(y_true, y_score, k, gain="linear", ties="average")
        assert got == pytest.approx(expected, 1e-12)


def test_per_row_values_and_shape_errors() -> None:
    values = rm.precision_at_k([[1, 0, 0], [0, 0, 1]], [[3, 2, 1], [3, 2, 1]], 1, average=None)
    assert values.tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="shape"):
        rm.precision_at_k([1, 0], [0.5, 0.2, 0.1], 1)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        rm.precision_at_k([1, 0], [0.5, 0.2], 0)
    with pytest.raises(ValueError, match="y_score holds nan at row 0, column 1"):
        rm.precision_at_k([1, 0], [0.5, np.nan], 1)
