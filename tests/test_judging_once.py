"""One judge: relevance under ``relevance_threshold="user_mean"`` is decided by
:func:`receval.engines.judge.relevant_rows` for the accuracy metrics and the beyond-accuracy
and fairness metrics alike, with the mean's sum exact (no row order, no item names)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import receval
from receval.engines.judge import relevant_items

METRICS = ["P@1", "serendipity@1", "nDCG_AWRF@1"]


def _inputs(rows: list[tuple[str, float]]) -> dict[str, pd.DataFrame]:
    """User u's truth ``rows`` (item, rating), b always rated 0.2; the list puts b first;
    u's training item z shares no genre with b."""
    items, ratings = zip(*rows, strict=True)
    return {
        "truth": pd.DataFrame({"user": ["u"] * 3, "item": items, "rating": ratings}),
        "predictions": pd.DataFrame(
            {"user": ["u"] * 3, "item": ["b", "x", "y"], "score": [0.9, 0.5, 0.1]}
        ),
        "train": pd.DataFrame({"user": ["u", "v", "v"], "item": ["z", "x", "y"]}),
        "item_features": pd.DataFrame(
            {"item": ["a", "b", "c", "x", "y", "z"], "genres": ["g1", "g2", "g1", "g1", "g2", "g1"]}
        ),
    }


@pytest.mark.parametrize(
    "rows",
    [
        [("c", 0.1), ("b", 0.2), ("a", 0.3)],  # the old beyond judge dropped b (row-order sum)
        [("a", 0.1), ("b", 0.2), ("c", 0.3)],  # the old core judge dropped b (item-order sum)
        [("c", 0.3), ("a", 0.1), ("b", 0.2)],
    ],
)
def test_accuracy_and_beyond_metrics_judge_the_same_row(rows):
    """u's mean is fsum(0.1, 0.2, 0.3) / 3 = 0.6 / 3 = 0.19999999999999998 whatever the
    order, so b (0.2) is relevant: P@1 = 1, serendipity@1 = (1 - sim(b, z)) * rel(b) = 1
    (auralist; b and z share no genre), and every number is the one a fixed threshold of
    0.15 gives (the same relevant set: b and the item rated 0.3)."""
    assert math.fsum([0.1, 0.2, 0.3]) / 3 <= 0.2
    data = _inputs(rows)
    got = receval.evaluate(
        data["truth"],
        data["predictions"],
        METRICS,
        relevance_threshold="user_mean",
        train=data["train"],
        item_features=data["item_features"],
    ).summary
    fixed = receval.evaluate(
        data["truth"],
        data["predictions"],
        METRICS,
        relevance_threshold=0.15,
        train=data["train"],
        item_features=data["item_features"],
    ).summary
    assert got["P@1"] == 1.0
    assert got["serendipity@1"] == 1.0
    assert got["nDCG_AWRF@1"] > 0.0
    assert got == fixed


def test_relevant_items_follow_the_exact_mean_in_any_row_order():
    """The judge's per-user CSR form (the beyond-accuracy and debiased truth) keeps 0.2 and
    0.3 in every row order; the old beyond judge's bincount sum in row order (0.1 + 0.2 + 0.3
    = 0.6000000000000001) dropped 0.2."""
    for values in ([0.1, 0.2, 0.3], [0.3, 0.2, 0.1], [0.2, 0.1, 0.3]):
        v = np.array(values)
        ptr, items = relevant_items(
            np.array([0, 3]), np.array([10, 20, 30]), v, np.array([0]), "user_mean"
        )
        assert ptr.tolist() == [0, 2]
        assert sorted(v[np.searchsorted([10, 20, 30], items)].tolist()) == [0.2, 0.3]
