"""Bad input is refused with a one-line message that says what and where; every row receval
drops and every user it leaves out is counted in ``Result.counts``."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest

import receval
from receval import ReceValError, UndefinedMetricError


def frames():
    truth = pd.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rating": [4.0, 5.0, 3.0]})
    preds = pd.DataFrame({"user": [1, 1, 2, 2], "item": [10, 12, 11, 10],
                          "score": [0.5, 0.4, 0.3, 0.2]})
    return truth, preds


def evaluate(truth, preds, metrics=("P@2",), **opts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", receval.UndefinedMetricWarning)
        return receval.evaluate(truth, preds, list(metrics), **opts)


# --- missing columns -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("side", "drop", "others"),
    [
        ("truth", "item", ["user", "rating"]),
        ("truth", "user", ["item", "rating"]),
        ("predictions", "user", ["item", "score"]),
        ("predictions", "item", ["user", "score"]),
        ("predictions", "score", ["user", "item"]),
    ],
)
def test_missing_column_is_named_with_the_columns_that_exist(side, drop, others):
    truth, preds = frames()
    if side == "truth":
        truth = truth.drop(columns=drop)
    else:
        preds = preds.drop(columns=drop)
    with pytest.raises(ReceValError) as err:
        evaluate(truth, preds)
    msg = str(err.value)
    assert side in msg and repr(drop) in msg
    for col in others:
        assert col in msg


def test_renamed_column_is_reported_with_what_was_found():
    truth, preds = frames()
    with pytest.raises(ReceValError, match=r"no column 'user'.*'uid', 'item', 'score'"):
        evaluate(truth, preds.rename(columns={"user": "uid"}))
    with pytest.raises(ReceValError, match=r"no column 'uid'"):
        evaluate(truth, preds, user_col="uid")


def test_rating_column_is_needed_for_a_threshold_and_for_rmse():
    truth, preds = frames()
    implicit = truth.drop(columns="rating")
    assert evaluate(implicit, preds).summary["P@2"] == pytest.approx(0.5)
    for kwargs, metrics in (({"relevance_threshold": 3.5}, ["P@2"]), ({}, ["RMSE"]),
                            ({"gain": "linear"}, ["nDCG@2"])):
        with pytest.raises(ReceValError, match=r"no column 'rating'.*'user', 'item'"):
            evaluate(implicit, preds, metrics, **kwargs)


# --- NaN and inf -----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("row", [0, 2, 3])
def test_non_finite_score_names_the_row(bad, row):
    truth, preds = frames()
    preds.loc[row, "score"] = bad
    with pytest.raises(ReceValError) as err:
        evaluate(truth, preds)
    msg = str(err.value)
    assert f"row {row}" in msg
    assert str(bad) in msg and "'score'" in msg
    assert f"user {preds.loc[row, 'user']}" in msg


def test_null_score_in_polars_names_the_row():
    truth, preds = frames()
    preds_pl = pl.from_pandas(preds).with_columns(
        pl.when(pl.int_range(pl.len()) == 1).then(None).otherwise(pl.col("score"))
        .alias("score"))
    with pytest.raises(ReceValError, match=r"row 1\b"):
        evaluate(truth, preds_pl)


@pytest.mark.parametrize("bad", [math.inf, -math.inf])
def test_infinite_rating_names_the_input_row(bad):
    truth, preds = frames()
    truth.loc[0, "rating"] = math.nan  # a missing rating before it must not shift the row
    truth.loc[2, "rating"] = bad
    with pytest.raises(ReceValError, match=rf"'rating' holds {bad} at row 2\b"):
        evaluate(truth, preds, relevance_threshold=3.0)


def test_missing_ratings_are_dropped_and_counted():
    truth, preds = frames()
    truth.loc[1, "rating"] = math.nan  # (1, 11) is not judged: user 1 has one relevant item
    result = evaluate(truth, preds, ["R@2", "P@2"], relevance_threshold=3.0)
    assert result.counts["rows"]["truth_dropped_missing_rating"] == 1
    assert result.per_user.set_index("user").loc[1, "R@2"] == 1.0


def test_all_ratings_missing_is_an_error():
    truth, preds = frames()
    truth["rating"] = math.nan
    with pytest.raises(ReceValError, match="rating"):
        evaluate(truth, preds, relevance_threshold=3.0)


# --- duplicates ------------------------------------------------------------------------------


def test_duplicate_truth_row_is_an_error_naming_user_and_item():
    truth, preds = frames()
    truth = pd.concat([truth, pd.DataFrame({"user": [2], "item": [10], "rating": [1.0]})])
    with pytest.raises(ReceValError, match=r"duplicate.*truth.*user 2, item 10"):
        evaluate(truth, preds)


def test_duplicate_prediction_row_is_an_error_naming_user_and_item():
    truth, preds = frames()
    preds = pd.concat([preds, pd.DataFrame({"user": [1], "item": [12], "score": [0.9]})])
    with pytest.raises(ReceValError, match=r"duplicate.*predictions.*user 1, item 12"):
        evaluate(truth, preds)


def test_duplicates_of_a_user_who_is_not_evaluated_are_an_error_too():
    """Users of the truth are evaluated; user 9 only has predictions, user 2 only truth."""
    truth = pd.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 3, 4]})
    preds = pd.DataFrame({"user": [1, 9, 9], "item": [1, 5, 5], "score": [0.3, 0.2, 0.1]})
    with pytest.raises(ReceValError, match=r"duplicate.*predictions.*user 9, item 5"):
        evaluate(truth, preds, ["P@1"])
    twice = pd.concat([truth, pd.DataFrame({"user": [2], "item": [3]})])
    with pytest.raises(ReceValError, match=r"duplicate.*truth.*user 2, item 3"):
        evaluate(twice, preds.iloc[:1], ["P@1"], users="both")  # user 2 has no predictions
    kept = evaluate(truth, preds, ["P@1"], duplicates="first")  # user 9 is not evaluated
    assert kept.summary["P@1"] == 0.5
    # but every dropped row is counted (issue 9.10): user 9's repeat, and its other row
    assert kept.counts["rows"]["predictions_dropped_duplicates"] == 1
    assert kept.counts["rows"]["predictions_not_evaluated"] == 1


def test_duplicate_string_ids_are_named_as_written():
    truth = pd.DataFrame({"user": ["ann", "ann"], "item": ["x", "x"]})
    preds = pd.DataFrame({"user": ["ann"], "item": ["x"], "score": [1.0]})
    with pytest.raises(ReceValError, match=r"user 'ann', item 'x'"):
        evaluate(truth, preds)


def _duplicated():
    """User 1: x scored 0.1 then 0.9, so 'first' ranks y above x and 'max' ranks x first.
    User 2: truth (2, a) rated 1 then 5, so 'first' finds nothing relevant at threshold 3
    and 'max' one relevant item. Both users are on both sides."""
    truth = pd.DataFrame({"user": [1, 2, 2, 2, 1], "item": ["x", "a", "b", "a", "x"],
                          "rating": [4.0, 1.0, 1.0, 5.0, 4.0]})
    preds = pd.DataFrame({"user": [1, 1, 1, 2, 2], "item": ["x", "y", "x", "a", "a"],
                          "score": [0.1, 0.5, 0.9, 0.3, 0.3]})
    return truth, preds


def test_duplicates_first_keeps_the_first_row_and_counts_the_dropped():
    truth, preds = _duplicated()
    result = evaluate(truth, preds, ["P@1", "R@1"], duplicates="first", relevance_threshold=3.0)
    per_user = result.per_user.set_index("user")
    assert per_user.loc[1, "P@1"] == 0.0  # x kept at 0.1: y ranks first
    assert per_user.loc[2, "R@1"] == 0.0  # undefined (rating 1 kept), set to zero
    assert result.counts["undefined"]["users"]["R@1"] == 1
    assert result.counts["rows"]["truth_dropped_duplicates"] == 2
    assert result.counts["rows"]["predictions_dropped_duplicates"] == 2


def test_duplicates_max_keeps_the_highest_value_and_counts_the_dropped():
    truth, preds = _duplicated()
    result = evaluate(truth, preds, ["P@1", "R@1"], duplicates="max", relevance_threshold=3.0)
    per_user = result.per_user.set_index("user")
    assert per_user.loc[1, "P@1"] == 1.0  # x kept at 0.9
    assert per_user.loc[2, "R@1"] == 1.0  # rating 5 kept: a is relevant and ranked first
    assert result.counts["undefined"]["users"]["R@1"] == 0
    assert result.counts["rows"]["truth_dropped_duplicates"] == 2
    assert result.counts["rows"]["predictions_dropped_duplicates"] == 2


def test_duplicate_rows_and_a_user_missing_from_the_other_side():
    """Regression (data/csr.py ``drop_duplicates``): with a duplicate to drop and a user
    with no row on one side sorting last, ``np.add.reduceat`` got an index past the end:
    ValueError 'index 1 out-of-bounds in add.reduceat [0, 1)'."""
    truth = pd.DataFrame({"user": ["a", "a", "b"], "item": ["x", "x", "y"],
                          "rating": [1.0, 2.0, 1.0]})
    preds = pd.DataFrame({"user": ["a"], "item": ["x"], "score": [1.0]})
    result = evaluate(truth, preds, ["P@1"], duplicates="first")
    assert result.summary["P@1"] == 0.5  # a: 1 of 1; b: empty list
    assert result.counts["rows"]["truth_dropped_duplicates"] == 1


# --- cutoffs and metric names ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["P@0", "R@0", "nDCG@-1", "AP@-3", "MRR@0"])
def test_cutoff_must_be_positive(name):
    truth, preds = frames()
    with pytest.raises(ReceValError, match=rf"{re.escape(name)}.*positive"):
        evaluate(truth, preds, [name])


@pytest.mark.parametrize("name", ["P@1.5", "nDCG@2.25", "P@x", "Hit@k", "R@ten", "P@"])
def test_cutoff_must_be_an_integer(name):
    truth, preds = frames()
    with pytest.raises(ReceValError, match=re.escape(repr(name))):
        evaluate(truth, preds, [name])


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [("precison@10", "precision@10"), ("recal", "recall"), ("ndgc", "ndcg"), ("Rprc", "rprec"),
     ("MAPP", "map"), ("nDGC@5", "ndcg@5"), ("recal@3", "recall@3"), ("Rprc@5", "rprec'"),
     ("MRRR", "mrr")],
)
def test_unknown_metric_suggests_the_closest(typo, suggestion):
    truth, preds = frames()
    with pytest.raises(ReceValError, match=rf"unknown metric {re.escape(repr(typo))}") as err:
        evaluate(truth, preds, [typo])
    assert f"did you mean '{suggestion}" in str(err.value)


def test_other_bad_metric_lists():
    truth, preds = frames()
    with pytest.raises(ReceValError, match="needs a cutoff"):
        evaluate(truth, preds, ["P"])
    with pytest.raises(ReceValError, match="takes no cutoff"):
        evaluate(truth, preds, ["Rprec@5"])
    with pytest.raises(ReceValError, match="twice"):
        evaluate(truth, preds, ["P@3", "P@3"])
    with pytest.raises(ReceValError, match="no metric"):
        evaluate(truth, preds, [])
    with pytest.raises(TypeError):
        evaluate(truth, preds, [5])


# --- empty inputs ----------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["truth", "predictions"])
@pytest.mark.parametrize("kind", ["pandas", "polars", "dict"])
def test_empty_input_is_refused(side, kind, tmp_path):
    truth, preds = frames()
    empty = (truth if side == "truth" else preds).iloc[:0]
    if kind == "polars":
        empty = pl.from_pandas(empty)
    elif kind == "dict":
        empty = {c: [] for c in empty.columns}
    args = (empty, preds) if side == "truth" else (truth, empty)
    with pytest.raises(ReceValError, match=rf"{side}.*empty"):
        evaluate(*args)


def test_empty_files_are_refused(tmp_path):
    truth, preds = frames()
    header_only = tmp_path / "t.csv"
    header_only.write_text("user,item,rating\n")
    with pytest.raises(ReceValError, match=r"truth.*empty"):
        evaluate(header_only, preds)
    zero_bytes = tmp_path / "p.csv"
    zero_bytes.write_text("")
    with pytest.raises(ReceValError, match=r"predictions.*empty"):
        evaluate(truth, zero_bytes)


def test_no_user_in_common_is_refused():
    truth, preds = frames()
    preds["user"] += 100
    with pytest.raises(ReceValError, match="no user"):
        evaluate(truth, preds, users="both")


def test_no_user_with_a_relevant_item_is_refused():
    truth, preds = frames()
    with pytest.raises(ReceValError, match="no user"):
        evaluate(truth, preds, users="relevant", relevance_threshold=10.0)


# --- id types --------------------------------------------------------------------------------


@pytest.mark.parametrize("column", ["user", "item"])
@pytest.mark.parametrize("side", ["truth", "predictions"])
def test_ids_of_mismatched_types_are_an_input_error(column, side):
    truth, preds = frames()
    frame = truth if side == "truth" else preds
    frame[column] = frame[column].astype(str)
    with pytest.raises(ReceValError, match=rf"{column} ids of mismatched types.*one type"):
        evaluate(truth, preds)


def test_missing_and_non_integer_ids_name_the_row():
    truth, preds = frames()
    with pytest.raises(ReceValError, match=r"'user'.*row 1\b"):
        evaluate(truth.assign(user=[1, None, 2]), preds)
    with pytest.raises(ReceValError, match=r"'item'.*row 2\b"):
        evaluate(truth, preds.assign(item=[10.0, 12.0, 11.5, 10.0]))


def test_non_numeric_scores_name_the_row():
    truth, preds = frames()
    with pytest.raises(ReceValError, match=r"'score' holds 'a' at row 0\b"):
        evaluate(truth, preds.assign(score=["a", "0.2", "0.3", "0.1"]))


def test_unsupported_input_type_is_a_type_error():
    truth, preds = frames()
    with pytest.raises(TypeError):
        evaluate(truth, preds.to_numpy())


# --- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [("ties", "random"), ("protocol", "partial"), ("precision_denominator", "rec"),
     ("recall_denominator", "k"), ("ap_normalizer", "L"), ("gain", "log"),
     ("empty", "ignore"), ("average", "weighted"), ("users", "all"), ("duplicates", "last"),
     ("relevance_threshold", "median"), ("relevance_threshold", math.nan),
     ("relevance_threshold", True), ("score_threshold", math.inf),
     ("score_threshold", math.nan), ("score_threshold", "high")],
)
def test_unknown_option_value_is_named(option, value):
    truth, preds = frames()
    with pytest.raises(ReceValError, match=rf"{option}={re.escape(repr(value))}"):
        evaluate(truth, preds, **{option: value})


def test_empty_error_names_the_user():
    truth, preds = frames()
    truth = pd.concat([truth, pd.DataFrame({"user": [3], "item": [10], "rating": [1.0]})])
    with pytest.raises(UndefinedMetricError, match=r"R@2.*user 3.*no relevant"):
        evaluate(truth, preds, ["P@2", "R@2"], relevance_threshold=3.0, empty="error")


# --- every dropped row and left-out user is counted ------------------------------------------


def _audit_frames():
    truth = pd.DataFrame(
        [("u1", "a", 5.0), ("u1", "b", 2.0), ("u1", "c", math.nan), ("u1", "d", 4.0),
         ("u2", "a", 1.0),  # u2: nothing relevant at 3.5
         ("u3", "x", 4.0),  # u3: no predictions
         ("u5", "e", math.nan)],  # u5: its only row has no rating
        columns=["user", "item", "rating"])
    preds = pd.DataFrame(
        [("u1", "a", 0.9), ("u1", "b", 0.8), ("u1", "z", 0.7), ("u1", "d", 0.2),
         ("u2", "a", 0.4), ("u2", "q", 0.6),
         ("u4", "a", 0.5)],  # u4: only in the predictions
        columns=["user", "item", "score"])
    return truth, preds


def test_counts_every_dropped_row_and_every_left_out_user():
    truth, preds = _audit_frames()
    result = evaluate(truth, preds, ["R@2", "P@2"], relevance_threshold=3.5,
                      score_threshold=0.5, empty="skip")
    rows = result.counts["rows"]
    assert rows["truth"] == 7 and rows["predictions"] == 7
    assert rows["truth_dropped_missing_rating"] == 2  # (u1, c), (u5, e)
    assert rows["predictions_without_truth"] == 2  # (u1, z), (u2, q)
    assert rows["predictions_below_score_threshold"] == 2  # (u1, d), (u2, a)
    assert rows["truth_dropped_duplicates"] == 0
    assert rows["predictions_dropped_duplicates"] == 0
    users = result.counts["users"]
    assert users["evaluated"] == 3  # u1, u2, u3
    assert users["in_truth"] == 3
    assert users["in_predictions"] == 3
    assert users["in_both"] == 2
    assert users["only_in_truth"] == 1  # u3
    assert users["only_in_predictions"] == 1  # u4
    assert users["without_relevant"] == 1  # u2
    assert users["without_predictions"] == 1  # u3
    assert users["not_evaluated"] == 1  # u4
    # R@2 undefined for u2 (nothing relevant); P@2 over what was returned undefined for u3
    assert result.counts["undefined"] == {"policy": "skip", "users": {"R@2": 1, "P@2": 1}}
    assert result.counts["averaged"] == {"R@2": 2, "P@2": 2}
    per_user = result.per_user.set_index("user")
    assert math.isnan(per_user.loc["u2", "R@2"]) and math.isnan(per_user.loc["u3", "P@2"])
    # u1: relevant {a, d}; returned a, b, z; top 2 = a, b
    assert result.summary == {"R@2": pytest.approx((0.5 + 0.0) / 2),
                              "P@2": pytest.approx((0.5 + 0.0) / 2)}


def test_counts_predictions_ignored_by_the_known_protocol():
    truth, preds = _audit_frames()
    result = evaluate(truth, preds, ["P@2"], relevance_threshold=3.5, protocol="known")
    rows = result.counts["rows"]
    assert rows["predictions_without_truth"] == 2
    assert rows["predictions_ignored_known_protocol"] == 2


@pytest.mark.parametrize(
    ("users", "evaluated", "not_evaluated"),
    [("truth", 3, 1), ("both", 2, 2), ("relevant", 2, 2), ("predictions", 3, 1),
     ("union", 4, 0)],
)
def test_counts_users_left_out_by_the_selection(users, evaluated, not_evaluated):
    truth, preds = _audit_frames()
    result = evaluate(truth, preds, ["P@2"], relevance_threshold=3.5, users=users)
    assert result.counts["users"]["evaluated"] == evaluated == len(result.per_user)
    assert result.counts["users"]["not_evaluated"] == not_evaluated


def test_counts_per_metric_what_each_empty_policy_did():
    truth, preds = _audit_frames()
    for empty, averaged in (("zero", 3), ("one", 3), ("skip", 2)):
        result = evaluate(truth, preds, ["R@2"], relevance_threshold=3.5, empty=empty)
        assert result.counts["undefined"]["users"]["R@2"] == 1
        assert result.counts["averaged"]["R@2"] == averaged
    with pytest.warns(receval.UndefinedMetricWarning, match="R@2"):
        receval.evaluate(truth, preds, ["R@2"], relevance_threshold=3.5)


def test_duplicates_are_counted_per_side():
    truth = pd.DataFrame({"user": [1, 1, 1, 2], "item": [5, 5, 5, 6], "rating": [1., 2., 3., 4.]})
    preds = pd.DataFrame({"user": [1, 2, 2], "item": [5, 6, 6], "score": [1.0, 2.0, 3.0]})
    for keep in ("first", "max"):
        result = evaluate(truth, preds, ["P@1"], duplicates=keep)
        assert result.counts["rows"]["truth_dropped_duplicates"] == 2
        assert result.counts["rows"]["predictions_dropped_duplicates"] == 1
        assert result.summary["P@1"] == 1.0


def test_scores_as_numpy_arrays_in_a_dict():
    truth = {"user": np.array([1, 1]), "item": np.array([1, 2])}
    preds = {"user": np.array([1, 1]), "item": np.array([2, 3]), "score": np.array([0.9, 0.1])}
    assert evaluate(truth, preds, ["P@1"]).summary["P@1"] == 1.0


def test_empty_error_says_why_ndcg_is_undefined():
    truth = pd.DataFrame({"user": [1, 2], "item": [10, 10], "rating": [0.0, 4.0]})
    preds = pd.DataFrame({"user": [1, 2], "item": [10, 10], "score": [1.0, 1.0]})
    # user 1 has a relevant item (no threshold) whose linear gain is 0: IDCG = 0
    with pytest.raises(UndefinedMetricError, match=r"nDCG@2.*user 1.*ideal DCG is 0"):
        evaluate(truth, preds, ["nDCG@2"], gain="linear", empty="error")
    with pytest.raises(UndefinedMetricError, match=r"P@2.*user 3.*nothing recommended"):
        evaluate(pd.concat([truth, pd.DataFrame({"user": [3], "item": [1], "rating": [1.0]})]),
                 preds, ["P@2"], precision_denominator="returned", empty="error")
