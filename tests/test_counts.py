"""The audit in ``Result.counts`` reconciles (issue 9, point 10): every row read is kept or
dropped for one named reason, and every user seen is evaluated or left out for one reason.

Per side, in ``counts["rows"]``::

    truth       = truth_kept + truth_dropped_missing_rating + truth_dropped_unpredicted
                  + truth_dropped_duplicates + truth_not_evaluated
    predictions = predictions_kept + predictions_dropped_duplicates
                  + predictions_ignored_known_protocol + predictions_below_score_threshold
                  + predictions_not_evaluated

``*_kept`` are the evaluated users' truth rows and the predictions in their ranked lists;
``*_not_evaluated`` the rows (after dropping duplicates) of users who are not evaluated;
duplicates are dropped and counted for every user, evaluated or not. In ``counts["users"]``::

    seen = evaluated + not_evaluated_only_in_truth + not_evaluated_only_in_predictions
           + not_evaluated_without_relevant + not_evaluated_rows_dropped

The expected counts here are computed with pandas from the input, never by receval.
"""

from __future__ import annotations

import math
import warnings

import hypothesis.strategies as st
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings

import receval

try:
    from tests.reference.data import datasets
except ImportError:  # pytest run from elsewhere: tests/ itself is on sys.path
    from reference.data import datasets

TRUTH_REASONS = ("truth_kept", "truth_dropped_missing_rating", "truth_dropped_unpredicted",
                 "truth_dropped_duplicates", "truth_not_evaluated")
PREDICTION_REASONS = ("predictions_kept", "predictions_dropped_duplicates",
                      "predictions_ignored_known_protocol", "predictions_below_score_threshold",
                      "predictions_not_evaluated")
USER_REASONS = ("not_evaluated_only_in_truth", "not_evaluated_only_in_predictions",
                "not_evaluated_without_relevant", "not_evaluated_rows_dropped")

#: every option that drops (or sets aside) rows or users
DROPPING = {
    "duplicates": st.sampled_from(["first", "max", "keep"]),
    "truth_scope": st.sampled_from(["all", "predicted"]),
    "score_threshold": st.sampled_from([None, 0.5, 2.0, 3.5]),
    "users": st.sampled_from(["truth", "both", "relevant", "predictions", "union"]),
    "protocol": st.sampled_from(["full", "known"]),
    "relevance_threshold": st.sampled_from([None, 3.0, "user_mean"]),
    "nonpositive_scores": st.sampled_from(["rank", "irrelevant"]),
    "ties": st.sampled_from(["stable", "average"]),
}


def evaluate(truth: pd.DataFrame, preds: pd.DataFrame, **opts: object) -> receval.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(truth, preds, ["P@3", "nDCG", "RMSE"], empty="zero", **opts)


def assert_reconciled(result: receval.Result) -> None:
    rows, users = result.counts["rows"], result.counts["users"]
    assert rows["truth"] == sum(rows.get(key, 0) for key in TRUTH_REASONS), rows
    assert rows["predictions"] == sum(rows.get(key, 0) for key in PREDICTION_REASONS), rows
    assert users["not_evaluated"] == sum(users[key] for key in USER_REASONS), users
    assert users["seen"] == users["evaluated"] + users["not_evaluated"], users


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=datasets(duplicates=True), opts=st.fixed_dictionaries(DROPPING))
def test_rows_and_users_always_reconcile(data, opts) -> None:
    truth, preds = data.truth_frame(), data.prediction_frame()
    try:
        result = evaluate(truth, preds, **opts)
    except receval.ReceValError as err:
        assert "no user" in str(err)
        assume(False)
    assert_reconciled(result)
    rows, users = result.counts["rows"], result.counts["users"]
    rated = truth[truth["rating"].notna()]
    assert rows["truth"] == len(truth) and rows["predictions"] == len(preds)
    assert rows["truth_dropped_missing_rating"] == len(truth) - len(rated)
    assert users["seen"] == len(set(rated["user"]) | set(preds["user"]))
    if opts["duplicates"] == "keep":
        assert rows["truth_dropped_duplicates"] == rows["predictions_dropped_duplicates"] == 0
    else:  # every user's repeated rows, evaluated or not
        # nonpositive_scores="irrelevant" turns rows scored <= 0 into items of their own first
        listed = preds[preds["score"] > 0] if opts["nonpositive_scores"] == "irrelevant" \
            else preds
        assert rows["predictions_dropped_duplicates"] == listed.duplicated(["user", "item"]).sum()
        if opts["truth_scope"] == "all":
            assert rows["truth_dropped_duplicates"] == rated.duplicated(["user", "item"]).sum()


def test_duplicates_of_users_who_are_not_evaluated_are_counted() -> None:
    """The issue's case in small: user 9 (predictions only) is not evaluated under
    users='truth', and its repeated row used to vanish from the counts."""
    truth = pd.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3], "rating": [5.0, 4.0, math.nan]})
    preds = pd.DataFrame({"user": [1, 1, 9, 9, 9], "item": [1, 1, 5, 5, 6],
                          "score": [0.3, 0.2, 0.9, 0.8, 0.1]})
    result = evaluate(truth, preds, duplicates="first")
    rows, users = result.counts["rows"], result.counts["users"]
    assert rows["predictions_dropped_duplicates"] == 2  # (1, 1) once, (9, 5) once
    assert rows["predictions_kept"] == 1  # user 1's list: item 1
    assert rows["predictions_not_evaluated"] == 2  # user 9: items 5 and 6
    assert rows["truth_kept"] == 2 and rows["truth_not_evaluated"] == 0
    assert rows["truth_dropped_missing_rating"] == 1  # user 2's only row: user 2 is not seen
    assert users["seen"] == 2 and users["evaluated"] == 1
    assert users["not_evaluated_only_in_predictions"] == 1
    assert_reconciled(result)


def test_the_duplicate_count_does_not_depend_on_which_users_are_evaluated() -> None:
    truth = pd.DataFrame({"user": [1, 2, 2], "item": [1, 3, 3], "rating": [5.0, 4.0, 4.0]})
    preds = pd.DataFrame({"user": [1, 2], "item": [1, 3], "score": [0.3, 0.2]})
    for users in ("truth", "predictions", "both"):
        result = evaluate(truth, preds.iloc[:1] if users == "both" else preds,
                          duplicates="max", users=users)
        assert result.counts["rows"]["truth_dropped_duplicates"] == 1, users
        assert_reconciled(result)


@pytest.mark.parametrize(("users", "left_out"), [
    ("truth", {"only_in_predictions": 1}),  # d
    ("predictions", {"only_in_truth": 2}),  # b, c
    ("both", {"only_in_truth": 2, "only_in_predictions": 1}),  # b, c; d
    ("relevant", {"only_in_predictions": 1, "without_relevant": 1}),  # d; c
    ("union", {}),
])
def test_each_user_left_out_has_one_reason(users: str, left_out: dict[str, int]) -> None:
    # a: both sides, relevant; b: truth only, relevant; c: truth only, rating 1 (not relevant
    # at threshold 3); d: predictions only
    truth = pd.DataFrame({"user": ["a", "b", "c"], "item": [1, 1, 1], "rating": [5.0, 5.0, 1.0]})
    preds = pd.DataFrame({"user": ["a", "d"], "item": [1, 1], "score": [1.0, 1.0]})
    result = evaluate(truth, preds, users=users, relevance_threshold=3.0)
    counts = result.counts["users"]
    assert {key: counts[key] for key in USER_REASONS if counts[key]} == {
        f"not_evaluated_{reason}": n for reason, n in left_out.items()}
    assert counts["seen"] == 4
    assert_reconciled(result)


def test_truth_rows_dropped_by_truth_scope_can_leave_a_user_without_rows() -> None:
    truth = pd.DataFrame({"user": ["a", "b"], "item": [1, 2], "rating": [5.0, 5.0]})
    preds = pd.DataFrame({"user": ["a"], "item": [1], "score": [1.0]})
    result = evaluate(truth, preds, truth_scope="predicted")
    assert result.counts["rows"]["truth_dropped_unpredicted"] == 1
    assert result.counts["users"]["not_evaluated_rows_dropped"] == 1  # b: no row left
    assert_reconciled(result)
