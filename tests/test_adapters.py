"""Adapters: each input shape gives the numbers of the same data written as long tables."""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import receval
from receval.adapters import from_label_lists, from_matrices, from_surprise, from_top_k
from receval.exceptions import ReceValError

METRICS = ["P@2", "R@3", "MAP@3", "nDCG@3", "MRR@3"]  # cutoffs <= 3: a top-3 cut keeps them
Prediction = namedtuple("Prediction", "uid iid r_ui est details")  # Surprise's own shape


def _summary(truth: object, preds: object, **kw: object) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(truth, preds, METRICS, **kw).summary


def test_surprise_predictions() -> None:
    preds = [
        Prediction("u1", "i1", 5.0, 4.1, {"was_impossible": False}),
        Prediction("u1", "i2", 2.0, 4.5, {}),
        Prediction("u1", "i3", 4.0, 3.0, {}),
        Prediction("u2", "i1", 1.0, 2.0, {}),
        Prediction("u2", "i4", None, 3.3, {}),  # no known rating
    ]
    truth, scored = from_surprise(preds)
    result = receval.evaluate(truth, scored, ["P@2", "RMSE"], relevance_threshold=3.5,
                              users="relevant")
    # u1 ranks i2 (2.0), i1 (5.0), i3 (4.0): one relevant in the top 2; u2 has no relevant
    # item, so users="relevant" leaves u2 out, of RMSE too
    assert result.summary["P@2"] == 0.5
    errors = np.array([4.1 - 5, 4.5 - 2, 3.0 - 4])
    assert result.summary["RMSE"] == pytest.approx(np.sqrt((errors**2).mean()))
    assert result.counts["rows"]["truth_dropped_missing_rating"] == 1


def test_surprise_mixed_id_types_become_strings() -> None:
    truth, _ = from_surprise([(1, "a", 3.0, 3.0, {}), ("x", 2, 3.0, 3.0, {})])
    assert truth.column("user").to_pylist() == ["1", "x"]
    with pytest.raises(ReceValError, match="uid, iid, r_ui, est"):
        from_surprise([(1, 2)])


def test_label_lists_match_the_worked_example() -> None:
    """docs/semantics.md 9.2: labels {0, 3}, ranking 1, 2, 0, 4, 3, 5."""
    scores = np.array([[0.5, 0.9, 0.8, 0.2, 0.3, 0.1]])
    truth, preds = from_label_lists([[0, 3]], scores)
    ks = [1, 2, 3, 4, 5]
    out = receval.evaluate(truth, preds, [f"R@{k}" for k in ks] + [f"P@{k}" for k in ks]).summary
    assert [out[f"R@{k}"] for k in ks] == pytest.approx([0, 0, 0.5, 0.5, 1.0])
    assert [out[f"P@{k}"] for k in ks] == pytest.approx([0, 0, 1 / 3, 0.25, 0.4])


def test_label_lists_padded_array_and_top_k() -> None:
    rng = np.random.default_rng(0)
    scores = rng.random((6, 12))
    labels = np.array([[1, 4, -1], [0, -1, -1], [11, 2, 3], [5, 5, -1], [-1, -1, -1], [7, 8, 99]])
    truth, preds = from_label_lists(labels, scores)
    assert truth.num_rows == 2 + 1 + 3 + 2 + 0 + 2  # -1 and 99 are outside [0, 12)
    full = _summary(truth, preds, duplicates="first")
    _, cut = from_label_lists(labels, scores, top_k=3)
    assert cut.num_rows == 18
    assert _summary(truth, cut, duplicates="first") == pytest.approx(full)


def test_matrices_dense_scores_sparse_truth(tmp_path: object) -> None:
    rng = np.random.default_rng(1)
    scores = rng.random((8, 10))
    dense_truth = (rng.random((8, 10)) < 0.3) * rng.integers(1, 6, (8, 10))
    truth, preds = from_matrices(sp.csr_matrix(dense_truth), scores,
                                 users=[f"u{i}" for i in range(8)])
    long_truth = pd.DataFrame([(f"u{u}", i, float(dense_truth[u, i]))
                               for u, i in zip(*np.nonzero(dense_truth), strict=True)],
                              columns=["user", "item", "rating"])
    long_preds = pd.DataFrame([(f"u{u}", i, scores[u, i]) for u in range(8) for i in range(10)],
                              columns=["user", "item", "score"])
    assert _summary(truth, preds, relevance_threshold=3) == pytest.approx(
        _summary(long_truth, long_preds, relevance_threshold=3))
    # dense truth works the same, and so does a top-k cut for cutoffs <= k
    t2, p2 = from_matrices(dense_truth, scores, top_k=3, users=[f"u{i}" for i in range(8)])
    assert _summary(t2, p2, relevance_threshold=3) == pytest.approx(
        _summary(long_truth, long_preds, relevance_threshold=3))


def test_matrices_exclude_seen_items() -> None:
    truth = sp.csr_matrix(np.array([[0, 1, 0, 1]]))
    scores = np.array([[0.9, 0.8, 0.7, 0.1]])
    seen = sp.csr_matrix(np.array([[1, 0, 0, 0]]))
    t, p = from_matrices(truth, scores, exclude=seen)
    assert p.column("item").to_pylist() == [1, 2, 3]
    assert receval.evaluate(t, p, ["P@1"]).summary["P@1"] == 1.0
    with pytest.raises(ReceValError, match="shape"):
        from_matrices(sp.csr_matrix(np.ones((2, 4))), scores)


def test_top_k_indices() -> None:
    top = np.array([[3, 1, 0], [2, -1, -1]])
    truth = sp.csr_matrix(np.array([[0, 1, 0, 1], [1, 0, 0, 0]]))
    t, p = from_top_k(top, truth, items=["a", "b", "c", "d"])
    assert p.to_pylist()[:2] == [{"user": 0, "item": "d", "rank": 1},
                                 {"user": 0, "item": "b", "rank": 2}]
    out = receval.evaluate(t, p, ["P@2", "R@2", "MRR"]).summary
    assert out == pytest.approx({"P@2": 0.5, "R@2": 0.5, "MRR": 0.5})
    t2, p2 = from_top_k(top, labels=[[1, 3], [0]], n_items=4, items=["a", "b", "c", "d"])
    assert receval.evaluate(t2, p2, ["P@2", "R@2", "MRR"]).summary == pytest.approx(out)
    with pytest.raises(ReceValError, match="not both"):
        from_top_k(top, truth, labels=[[1]])


def test_torch_like_tensors_are_accepted() -> None:
    class Tensor:  # the two methods the adapters use
        def __init__(self, data: np.ndarray) -> None:
            self.data = data

        def detach(self) -> Tensor:
            return self

        def cpu(self) -> Tensor:
            return self

        def numpy(self) -> np.ndarray:
            return self.data

    scores = np.array([[0.1, 0.9], [0.8, 0.2]])
    truth, preds = from_label_lists(Tensor(np.array([[1], [1]])), Tensor(scores))
    assert receval.evaluate(truth, preds, ["P@1"]).summary["P@1"] == 0.5
