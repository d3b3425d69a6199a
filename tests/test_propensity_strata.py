"""Propensity-stratified evaluation (Jadidinejad et al. 2021): the test rows split by their
item's propensity into equal-width strata, each evaluated alone; values checked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from receval.exceptions import ReceValError
from receval.propensity_strata import propensity_strata, strata_of

# train: item "p" 9 rows, the niche items 1 each: with gamma = 1, p has propensity 1, a niche
# item (1/9)^1
TRAIN = pd.DataFrame({"user": 0, "item": ["p"] * 9 + ["n1", "n2", "n3"]})
TRUTH = pd.DataFrame({"user": [1, 2, 3, 4, 4], "item": ["p", "p", "n1", "n2", "p"]})
# model A: the popular item first for everyone; model B: each user's niche item first
A = pd.DataFrame({"user": np.repeat([1, 2, 3, 4], 2), "item": ["p", "n1"] * 4,
                  "score": [2.0, 1.0] * 4})
B = pd.DataFrame({"user": np.repeat([1, 2, 3, 4], 2),
                  "item": ["n3", "p", "n3", "n2", "n1", "p", "n2", "p"],
                  "score": [2.0, 1.0] * 4})


def test_strata_are_equal_widths_with_the_maximum_in_the_last() -> None:
    s, edges = strata_of(np.array([0.0, 0.25, 0.5, 0.75, 1.0]), 4)
    assert s.tolist() == [0, 1, 2, 3, 3]
    assert edges.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    same, _ = strata_of(np.array([0.3, 0.3]), 3)
    assert same.tolist() == [0, 0]


def test_each_stratum_is_the_evaluation_of_its_rows_by_hand() -> None:
    a = propensity_strata(TRUTH, A, ["P@1", "R@2"], train=TRAIN,
                          propensity=("popularity", 1.0))
    b = propensity_strata(TRUTH, B, ["P@1", "R@2"], train=TRAIN,
                          propensity=("popularity", 1.0))
    # low stratum (propensity 1/9): users 3 (n1) and 4 (n2); high (1): users 1, 2, 4 (p)
    assert a["rows"].tolist() == [2, 3] and a["users"].tolist() == [2, 3]
    # A: user 3 finds n1 at 2 (P@1 0, R@2 1), user 4 misses n2; p first for all in the high
    assert a["P@1"].tolist() == [0.0, 1.0]
    assert a["R@2"].tolist() == [0.5, 1.0]
    # B: both niche items first; p at 2 for user 1 only, never for user 2, 2nd for user 4
    assert b["P@1"].tolist() == [1.0, 0.0]
    assert b["R@2"].tolist() == pytest.approx([1.0, 2 / 3], abs=1e-15)
    assert a.attrs["propensity"] == {"model": "popularity", "gamma": 1.0}
    assert a["propensity_low"].tolist() == pytest.approx([1 / 9, (1 / 9 + 1) / 2])


def test_a_truth_column_gives_the_propensity_and_empty_strata_are_left_out() -> None:
    truth = TRUTH.assign(prop=[0.9, 0.9, 0.1, 0.1, 0.9])
    t = propensity_strata(truth, A, ["P@1"], propensity="prop", n_strata=3)
    assert t["stratum"].tolist() == [1, 3]  # nothing between 0.37 and 0.63
    assert t["rows"].sum() == len(truth)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"propensity": ("popularity", 1.0)}, "needs train="),
    ({"propensity": "nope", "train": TRAIN}, "is not ('popularity', gamma) nor"),
    ({"propensity": ("popularity", 1.0), "train": TRAIN, "n_strata": 0}, "n_strata must be"),
    ({"propensity": ("popularity", -3), "train": TRAIN}, "gamma must be a number >= -1"),
])
def test_bad_requests_are_one_line(kwargs: dict, message: str) -> None:
    with pytest.raises(ReceValError, match=None) as err:
        propensity_strata(TRUTH, A, ["P@1"], **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_bad_propensity_column_names_the_row() -> None:
    with pytest.raises(ReceValError, match=r"'prop' is not a propensity > 0 at row 1 \(1 bad"):
        propensity_strata(TRUTH.assign(prop=[0.5, 0.0, 0.5, 0.5, 0.5]), A, ["P@1"],
                          propensity="prop")
