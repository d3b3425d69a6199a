"""The popular/long-tail cut through items of equal training popularity is warned
(``head-ties``): which tied items count as popular follows their first appearance, so the
popularity-bias metrics that read the cut (PopRSP, PopREO, APLT, ACLT, ...) may change with the
row order. Found by tests/test_registry_properties.py's row-order property on PopRSP."""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd
import pytest

import receval

TRUTH = pd.DataFrame({"user": [0, 0, 1, 3, 3], "item": [0, 1, 0, 0, 1]})
PREDS = pd.DataFrame({"user": [0, 1, 1, 1, 2, 2, 2, 3], "item": [0, 0, 1, 2, 0, 1, 7, 0],
                      "score": [0.0] * 8})


def run(train: pd.DataFrame, metrics: list[str], **beyond: Any) -> receval.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(TRUTH, PREDS, metrics, train=train, ties="pessimistic",
                                relevance_threshold=None, beyond=beyond or None)


def codes(result: receval.Result) -> list[str]:
    return [w["code"] for w in result.warnings]


def train_with(popularity: dict[int, int]) -> pd.DataFrame:
    """Training rows giving each item exactly this many interactions (distinct users)."""
    rows = [(u, item) for item, n in popularity.items() for u in range(100, 100 + n)]
    return pd.DataFrame(rows, columns=["user", "item"])


def test_a_cut_through_tied_items_is_warned_and_a_clean_cut_is_not() -> None:
    # popularity 6, 2, 2 (total 10): the head holds 80% at the second item, the third ties it
    tied = run(train_with({0: 6, 1: 2, 2: 2}), ["PopRSP@3", "APLT@3"])
    assert "head-ties" in codes(tied)
    message = next(w["message"] for w in tied.warnings if w["code"] == "head-ties")
    assert "head_share=0.8" in message and "(2)" in message
    clean = run(train_with({0: 6, 1: 3, 2: 1}), ["PopRSP@3", "APLT@3"])
    assert "head-ties" not in codes(clean)


def test_recboles_tail_by_a_share_of_items_is_checked_too() -> None:
    # tail_ratio 0.5 of 4 trained items: the 2 least popular, and items 2 and 3 tie at 1 with 1
    result = run(train_with({0: 5, 1: 1, 2: 1, 3: 1}), ["APLT@3"], tail_ratio=0.5)
    assert "head-ties" in codes(result)
    assert "tail_ratio=0.5" in next(w["message"] for w in result.warnings
                                    if w["code"] == "head-ties")


@pytest.mark.parametrize("seed", range(8))
def test_a_tied_cut_is_warned_in_every_order_and_a_clean_cut_gives_one_value(seed: int) -> None:
    # every training item has popularity 1: any head of 80% cuts through the tie
    train = pd.DataFrame({"user": [0, 0, 0, 0, 2], "item": [0, 1, 2, 3, 7]})
    base = run(train, ["PopRSP@3"])
    other = run(train.sample(frac=1, random_state=seed), ["PopRSP@3"])
    assert "head-ties" in codes(base) and "head-ties" in codes(other)
    # a clean cut: the same value in every order
    train = train_with({0: 6, 1: 3, 2: 1})
    values = {run(train.sample(frac=1, random_state=s), ["PopRSP@3"]).summary["PopRSP@3"]
              for s in range(4)}
    assert len(values) == 1
