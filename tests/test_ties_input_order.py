"""The order-free tie policies (``item``, ``item_ascending``, ``pessimistic``, ``optimistic``,
``average``) never read the order of the input rows: after the policy's own key (relevance and
gain for ``pessimistic``/``optimistic``) a tie is broken by item id descending, as ``item``
breaks it, in the numba and torch engines and in the lists the beyond-accuracy metrics read.

Each case below gave two values on the two row orders before (the input order broke the
tie); the expected values are worked by hand from the definitions.
"""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd
import pytest

import receval

ENGINES = ["numba", "torch"]


def run(truth: list[tuple[Any, ...]], preds: list[tuple[Any, ...]], metric: str,
        **opts: Any) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tied scores on purpose
        result = receval.evaluate(pd.DataFrame(truth, columns=["user", "item", "rating"]),
                                  pd.DataFrame(preds, columns=["user", "item", "score"]),
                                  [metric], **opts)
    return float(result.summary[metric])


def both_orders(truth: list[tuple[Any, ...]], preds: list[tuple[Any, ...]], metric: str,
                **opts: Any) -> tuple[float, float]:
    return (run(truth, preds, metric, **opts),
            run(truth[::-1], preds[::-1], metric, **opts))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("ties", ["pessimistic", "optimistic"])
def test_err_reads_no_row_order_between_equal_gains(engine: str, ties: str) -> None:
    # a (rating 2) and b (rating 1) are both relevant with binary gain 1: tied for the policy.
    # Item id descending puts b first: R_b = (2^1-1)/2^2 = 1/4, R_a = 3/4,
    # ERR@2 = 1/4 + (1/2)(3/4)(3/4) = 17/32 (a first would give 25/32)
    truth = [("u", "a", 2.0), ("u", "b", 1.0)]
    preds = [("u", "a", 1.0), ("u", "b", 1.0)]
    assert both_orders(truth, preds, "ERR@2", ties=ties, relevance_threshold=1,
                       engine=engine) == (17 / 32, 17 / 32)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("ties", ["pessimistic", "optimistic"])
def test_judged_reads_no_row_order_between_non_relevant_items(engine: str, ties: str) -> None:
    # a is judged non-relevant (rating 0 < 1), b has no truth row: both non-relevant, tied.
    # Item id descending puts b first: Judged@1 = 0 (a first would give 1)
    truth = [("u", "a", 0.0), ("u", "c", 1.0)]
    preds = [("u", "a", 1.0), ("u", "b", 1.0)]
    assert both_orders(truth, preds, "Judged@1", ties=ties, relevance_threshold=1,
                       engine=engine) == (0.0, 0.0)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("ties", ["pessimistic", "optimistic", "average", "item"])
def test_the_items_a_cut_list_holds_read_no_row_order(engine: str, ties: str) -> None:
    # nothing predicted is relevant: u1 ties a and b, u2 ties a and c. Item id descending
    # lists b and c at k=1: 2 of the catalogue's 4 items {a, b, c, d} (a first: 1 of 4)
    truth = [("u1", "d", 1.0), ("u2", "d", 1.0)]
    preds = [("u1", "a", 1.0), ("u1", "b", 1.0), ("u2", "a", 1.0), ("u2", "c", 1.0)]
    train = pd.DataFrame([("u1", "a"), ("u2", "b"), ("u2", "c")], columns=["user", "item"])
    assert both_orders(truth, preds, "coverage@1", ties=ties, relevance_threshold=1,
                       train=train, engine=engine) == (0.5, 0.5)


def test_the_default_policy_still_reads_the_row_order() -> None:
    # ties="stable" (the default) keeps the input order: a first, then b first
    truth = [("u", "a", 2.0), ("u", "b", 1.0)]
    preds = [("u", "a", 1.0), ("u", "b", 1.0)]
    assert both_orders(truth, preds, "ERR@2", relevance_threshold=1) == (25 / 32, 17 / 32)
