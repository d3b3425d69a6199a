"""receval against the plain-Python reference (tests/reference/oracle.py) on generated inputs.

Every metric family at several cutoffs (and without one), every option that changes a number:
the five tie policies, both protocols, score thresholds, both precision and recall
denominators, the four AP normalisers, the three gains, the four empty policies, macro and
micro averaging, the five user selections, duplicates, unknown ratings, integer, sparse and
string ids, and every input container. Values must agree to 1e-9, per user and averaged.
"""

from __future__ import annotations

import math
import tempfile
import warnings
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import receval

try:
    from tests.reference import oracle
    from tests.reference.data import CONTAINERS, Data, as_container, datasets, options
except ImportError:  # pytest run from elsewhere: tests/ itself is on sys.path
    from reference import oracle
    from reference.data import CONTAINERS, Data, as_container, datasets, options

METRICS = [
    "P@1", "P@3", "P@10",
    "R@2", "R@5", "R",
    "F1@3", "F0.5@2", "F2@5",
    "AP@1", "AP@3", "MAP@5", "MAP",
    "nDCG@1", "nDCG@3", "nDCG",
    "RR@2", "MRR",
    "Hit@1", "Hit@4", "Hit",
    "Rprec",
    "RMSE", "MAE",
]  # fmt: skip

TOL = 1e-9

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def run_receval(data, metrics, container="pandas", **opts):
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", receval.UndefinedMetricWarning)
        truth = as_container(data.truth_frame(), container, Path(tmp) / "truth.csv")
        preds = as_container(data.prediction_frame(), container, Path(tmp) / "preds.csv")
        return receval.evaluate(truth, preds, metrics, **opts)


def close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= TOL


def check(data, metrics=METRICS, container="pandas", **opts):
    """receval and the oracle agree: same error, or same summary, per-user values, counts."""
    try:
        expected = oracle.evaluate(data.truth, data.predictions, metrics, **opts)
    except oracle.Undefined:
        with pytest.raises(receval.UndefinedMetricError):
            run_receval(data, metrics, container, **opts)
        return
    except oracle.DuplicateRow:
        with pytest.raises(receval.ReceValError, match="duplicate"):
            run_receval(data, metrics, container, **opts)
        return
    except oracle.NoUser:
        with pytest.raises(receval.ReceValError, match="no user"):
            run_receval(data, metrics, container, **opts)
        return
    result = run_receval(data, metrics, container, **opts)

    assert list(result.summary) == list(metrics)
    bad = {m: (result.summary[m], expected.summary[m]) for m in metrics
           if not close(result.summary[m], expected.summary[m])}
    assert not bad, f"summary (receval, oracle): {bad}"

    users = result.per_user["user"].tolist()
    assert sorted(users) == sorted(expected.per_user)
    assert users == sorted(users), "per_user rows are sorted by user id"
    for row in result.per_user.to_dict("records"):
        want = expected.per_user[row["user"]]
        bad = {m: (row[m], want[m]) for m in metrics if not close(row[m], want[m])}
        assert not bad, f"user {row['user']!r} (receval, oracle): {bad}"

    counts = result.counts
    assert counts["users"]["evaluated"] == len(expected.per_user)
    for m, n in expected.undefined.items():
        assert counts["undefined"]["users"][m] == n, m
    audit = expected.audit
    rows = counts["rows"]
    assert rows["truth_dropped_missing_rating"] == audit["truth_missing_rating"]
    assert rows["truth_dropped_duplicates"] == audit["truth_duplicates"]
    assert rows["predictions_dropped_duplicates"] == audit["prediction_duplicates"]
    assert rows["predictions_without_truth"] == audit["without_truth"]
    assert rows["predictions_below_score_threshold"] == audit["below_score_threshold"]
    for key in ("truth_kept", "truth_not_evaluated", "predictions_kept",
                "predictions_not_evaluated"):
        assert rows[key] == audit[key], key
    assert counts["users"]["without_relevant"] == audit["without_relevant"]
    assert counts["users"]["without_predictions"] == audit["without_predictions"]
    assert counts["ties_at_cutoff"] == expected.ties_at_cutoff


# --- everything at once ----------------------------------------------------------------------


@SETTINGS
@given(data=datasets(duplicates=True), opts=options(duplicates=st.sampled_from(["first", "max"])))
def test_any_option_combination(data, opts):
    check(data, **opts)


@settings(SETTINGS, max_examples=100)
@given(data=datasets(), opts=options())
def test_any_option_combination_no_duplicates(data, opts):
    check(data, **opts)


# --- one option at a time, the others drawn --------------------------------------------------


@pytest.mark.parametrize("ties", ["stable", "item", "pessimistic", "optimistic", "average"])
@SETTINGS
@given(data=st.data())
def test_ties(ties, data):
    check(data.draw(datasets()), **data.draw(options(ties=ties)))


@pytest.mark.parametrize("ties", ["stable", "item", "pessimistic", "optimistic", "average"])
@SETTINGS
@given(data=datasets(scores=st.sampled_from([1.0, 2.0])), opts=options(empty="zero"))
def test_ties_heavy(ties, data, opts):
    """Two score values only: nearly every cutoff falls inside a tie group."""
    check(data, **{**opts, "ties": ties})


@pytest.mark.parametrize("protocol", ["full", "known"])
@pytest.mark.parametrize("score_threshold", [None, 1.0, 2.5])
@SETTINGS
@given(data=st.data())
def test_protocol_and_score_threshold(protocol, score_threshold, data):
    opts = data.draw(options(protocol=protocol, score_threshold=score_threshold))
    check(data.draw(datasets()), **opts)


@pytest.mark.parametrize("precision_denominator", [None, "k", "returned"])
@pytest.mark.parametrize("recall_denominator", ["relevant", "capped"])
@SETTINGS
@given(data=st.data())
def test_denominators(precision_denominator, recall_denominator, data):
    opts = data.draw(options(precision_denominator=precision_denominator,
                             recall_denominator=recall_denominator))
    check(data.draw(datasets()), **opts)


@pytest.mark.parametrize("ap_normalizer", ["min_k_relevant", "relevant", "hits", "k",
                                           "min_returned_relevant"])
@pytest.mark.parametrize("ties", ["stable", "average"])
@SETTINGS
@given(data=st.data())
def test_ap_normalizers(ap_normalizer, ties, data):
    opts = data.draw(options(ap_normalizer=ap_normalizer, ties=ties))
    check(data.draw(datasets()), ["AP@1", "AP@2", "AP@3", "AP@5", "MAP@20", "MAP"], **opts)


@pytest.mark.parametrize("gain", ["binary", "linear", "exponential"])
@SETTINGS
@given(data=st.data())
def test_gains(gain, data):
    opts = data.draw(options(gain=gain))
    check(data.draw(datasets()), ["nDCG@1", "nDCG@2", "nDCG@5", "nDCG"], **opts)


@pytest.mark.parametrize("empty", ["zero", "one", "skip", "error"])
@pytest.mark.parametrize("average", ["macro", "micro"])
@SETTINGS
@given(data=st.data())
def test_empty_and_average(empty, average, data):
    opts = data.draw(options(empty=empty, average=average))
    check(data.draw(datasets()), **opts)


@pytest.mark.parametrize("users", ["truth", "both", "relevant", "predictions", "union"])
@SETTINGS
@given(data=st.data())
def test_user_selection(users, data):
    opts = data.draw(options(users=users, empty=data.draw(st.sampled_from(["zero", "skip"]))))
    check(data.draw(datasets()), **opts)


@pytest.mark.parametrize("relevance_threshold", [None, 3.0, 3.5, "user_mean"])
@SETTINGS
@given(data=st.data())
def test_relevance_thresholds(relevance_threshold, data):
    opts = data.draw(options(relevance_threshold=relevance_threshold))
    check(data.draw(datasets()), **opts)


@pytest.mark.parametrize("duplicates", ["first", "max"])
@SETTINGS
@given(data=st.data())
def test_duplicates_kept_once(duplicates, data):
    opts = data.draw(options(duplicates=duplicates))
    check(data.draw(datasets(duplicates=True)), **opts)


@SETTINGS
@given(data=datasets(duplicates=True), opts=options())
def test_duplicates_are_an_error_by_default(data, opts):
    check(data, **opts)


@pytest.mark.parametrize("id_kind", ["int", "str", "sparse"])
@pytest.mark.parametrize("container", [*CONTAINERS, "csv"])
@settings(SETTINGS, max_examples=25)
@given(data=st.data())
def test_id_kinds_and_containers(id_kind, container, data):
    opts = data.draw(options())
    check(data.draw(datasets(id_kind=id_kind)), container=container, **opts)


@settings(SETTINGS, max_examples=30)
@given(data=datasets(max_users=20, max_items=30, max_list=25), opts=options())
def test_longer_lists(data, opts):
    if opts["ties"] == "average":  # the oracle enumerates orderings: keep ties small
        opts["ties"] = "item"
    check(data, **opts)  # (users split over threads: tests/test_threads.py)


def test_pandas_string_columns_made_of_several_chunks():
    """Regression: pandas 3 'str' columns built by pd.concat are several Arrow chunks; they
    were read as a pyarrow ChunkedArray, and encoding the ids raised a TypeError."""
    data = Data(
        truth=[("u1", "a", 4.0), ("u1", "b", 1.0), ("u2", "a", 5.0), ("u2", "c", 3.0)],
        predictions=[("u1", "a", 0.9), ("u1", "c", 0.8), ("u2", "c", 0.7), ("u2", "b", 0.1)],
        id_kind="str",
    )
    check(data, container="pandas_chunked", relevance_threshold=3.0)
