"""docs/semantics.md section 9: the worked examples, verbatim, with the expected values typed in
from the document. Each example also runs through the reference oracle, so a wrong oracle is
caught here before it is trusted by the generated tests."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import receval

try:
    from tests.reference import oracle
except ImportError:  # pytest run from elsewhere: tests/ itself is on sys.path
    from reference import oracle

IMPLEMENTATIONS = ["receval", "oracle"]


def run(impl, truth_rows, pred_rows, metrics, **options):
    """Summary and per-user values (user -> {metric: value}) from either implementation."""
    if impl == "oracle":
        out = oracle.evaluate(truth_rows, pred_rows, metrics, **options)
        return out.summary, out.per_user
    truth = pd.DataFrame(truth_rows, columns=["user", "item", "rating"])
    preds = pd.DataFrame(pred_rows, columns=["user", "item", "score"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", receval.UndefinedMetricWarning)
        result = receval.evaluate(truth, preds, metrics, **options)
    per_user = {
        row["user"]: {m: row[m] for m in metrics} for row in result.per_user.to_dict("records")
    }
    return result.summary, per_user


# --- 1. Rating example, score-threshold semantics ---------------------------------------------

# (item, true rating, predicted rating), sorted by prediction
EXAMPLE_1 = [
    ("i7", 2, 4.9),
    ("i5", 5, 4.5),
    ("i10", 4, 4.3),
    ("i2", 2, 3.6),
    ("i3", 3, 3.4),
    ("i1", 4, 2.3),
]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_example_1_rating_score_threshold(impl):
    truth = [("u", item, rating) for item, rating, _ in EXAMPLE_1]
    preds = [("u", item, score) for item, _, score in EXAMPLE_1]
    summary, _ = run(impl, truth, preds, ["P@3", "R@3"],
                     relevance_threshold=3.5, score_threshold=3.5)
    # relevant: i5, i10, i1 (3); recommended@3: i7, i5, i10 (3); hits: 2
    assert summary["P@3"] == pytest.approx(2 / 3, abs=1e-12)
    assert summary["R@3"] == pytest.approx(2 / 3, abs=1e-12)


def test_example_1_counts_the_predictions_below_the_score_threshold():
    truth = pd.DataFrame([("u", i, r) for i, r, _ in EXAMPLE_1],
                         columns=["user", "item", "rating"])
    preds = pd.DataFrame([("u", i, s) for i, _, s in EXAMPLE_1],
                         columns=["user", "item", "score"])
    result = receval.evaluate(truth, preds, ["P@3"], relevance_threshold=3.5,
                              score_threshold=3.5)
    assert result.counts["rows"]["predictions_below_score_threshold"] == 2  # i3, i1
    assert result.options["precision_denominator"] == "returned"


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_example_1_nothing_recommended_precision_is_undefined_and_set_to_one(impl):
    # same user, but no item in the top k has a predicted score >= 3.5
    truth = [("u", item, rating) for item, rating, _ in EXAMPLE_1]
    preds = [("u", item, score - 2.0) for item, _, score in EXAMPLE_1]  # top score 2.9
    summary, _ = run(impl, truth, preds, ["P@3"], relevance_threshold=3.5,
                     score_threshold=3.5, empty="one")
    assert summary["P@3"] == 1.0
    summary, _ = run(impl, truth, preds, ["P@3"], relevance_threshold=3.5,
                     score_threshold=3.5, empty="zero")
    assert summary["P@3"] == 0.0


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_example_1_no_relevant_item_recall_is_undefined_and_set_to_one(impl):
    truth = [("u", item, 2) for item, _, _ in EXAMPLE_1]  # nothing rated >= 3.5
    preds = [("u", item, score) for item, _, score in EXAMPLE_1]
    summary, _ = run(impl, truth, preds, ["R@3"], relevance_threshold=3.5,
                     score_threshold=3.5, empty="one")
    assert summary["R@3"] == 1.0


# --- 2. Multi-label example, top-k semantics ---------------------------------------------------

EXAMPLE_2_TRUE = [0, 3]
EXAMPLE_2_RANKING = [1, 2, 0, 4, 3, 5]
EXAMPLE_2_RECALL = [0, 0, 0.5, 0.5, 1.0]
EXAMPLE_2_PRECISION = [0, 0, 1 / 3, 0.25, 0.4]


def _example_2_rows():
    truth = [("x", label, 1.0) for label in EXAMPLE_2_TRUE]
    n = len(EXAMPLE_2_RANKING)
    preds = [("x", label, float(n - pos)) for pos, label in enumerate(EXAMPLE_2_RANKING)]
    return truth, preds


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_example_2_multilabel_recall_and_precision_at_1_to_5(impl):
    truth, preds = _example_2_rows()
    names = [f"{f}@{k}" for k in range(1, 6) for f in ("P", "R")]
    summary, _ = run(impl, truth, preds, names)
    for k in range(1, 6):
        assert summary[f"R@{k}"] == pytest.approx(EXAMPLE_2_RECALL[k - 1], abs=1e-12)
        assert summary[f"P@{k}"] == pytest.approx(EXAMPLE_2_PRECISION[k - 1], abs=1e-12)


def test_example_2_precision_rises_at_5_because_the_5th_item_is_relevant():
    truth, preds = _example_2_rows()
    summary, _ = run("receval", truth, preds, [f"P@{k}" for k in range(1, 7)])
    assert EXAMPLE_2_RANKING[4] in EXAMPLE_2_TRUE
    assert summary["P@5"] > summary["P@4"]
    # the exact rule: P@(k+1) >= P@k  iff  h_(k+1) >= P@k
    for k in range(1, 6):
        h_next = 1.0 if EXAMPLE_2_RANKING[k] in EXAMPLE_2_TRUE else 0.0
        assert (summary[f"P@{k + 1}"] >= summary[f"P@{k}"]) == (h_next >= summary[f"P@{k}"])


# --- 3. AP with the min(k, L) normaliser --------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_example_3_ap_hits_at_2_and_6_with_three_relevant(impl):
    truth = [("u", item, 1.0) for item in ("a", "b", "c")]  # L = 3
    ranking = ["n1", "a", "n2", "n3", "n4", "b"]  # hits at ranks 2 and 6
    preds = [("u", item, 10.0 - pos) for pos, item in enumerate(ranking)]
    summary, _ = run(impl, truth, preds, ["AP@6"])
    assert round(summary["AP@6"], 4) == 0.2778
    assert summary["AP@6"] == pytest.approx((1 / 2 + 2 / 6) / min(6, 3), abs=1e-12)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_example_3_ap_true_labels_1_0_4(impl):
    truth = [("u", label, 1.0) for label in (1, 0, 4)]
    ranking = [1, 2, 0, 4, 3, 5]  # "1, 2, 0, 4, ...": hits at ranks 1, 3, 4
    preds = [("u", label, 10.0 - pos) for pos, label in enumerate(ranking)]
    summary, _ = run(impl, truth, preds, ["AP@4", "MAP@4"])
    assert round(summary["AP@4"], 4) == 0.8056
    assert summary["AP@4"] == pytest.approx((1 / 1 + 2 / 3 + 3 / 4) / 3, abs=1e-12)
    assert summary["MAP@4"] == summary["AP@4"]


# --- 4. R-precision ---------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_example_4_r_precision_whatever_k(impl):
    truth = [("u", item, 1.0) for item in ("r1", "r2", "r3", "r4")]  # 4 relevant
    ranking = ["r1", "n1", "r2", "r3", "r4", "n2"]  # top 4 holds 3 of them
    preds = [("u", item, 10.0 - pos) for pos, item in enumerate(ranking)]
    for other in (["P@1"], ["P@2", "nDCG@10"], ["R@6", "AP@3"]):
        summary, _ = run(impl, truth, preds, ["Rprec", *other])
        assert summary["Rprec"] == 0.75


# --- 5. Two users, macro vs micro recall@2 -------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_example_5_macro_vs_micro_recall(impl):
    truth = [("a", "x", 1.0), ("b", "p", 1.0), ("b", "q", 1.0), ("b", "r", 1.0)]
    preds = [("a", "x", 2.0), ("a", "y", 1.0), ("b", "z", 2.0), ("b", "w", 1.0)]
    macro, per_user = run(impl, truth, preds, ["R@2"], average="macro")
    micro, _ = run(impl, truth, preds, ["R@2"], average="micro")
    assert per_user["a"]["R@2"] == 1.0
    assert per_user["b"]["R@2"] == 0.0
    assert macro["R@2"] == 0.5
    assert micro["R@2"] == 0.25
