"""Profiles against the worked examples E1-E6 of shared/research/peer-semantics.md.

Every number below was produced there by running the tool (or a verbatim copy of its function)
or by transliterating its source; each test names the example and the tool. The cross-checks
against the installed tools themselves are in ``tests/test_profiles_peers.py``.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pandas as pd
import pytest

import receval
from receval.exceptions import ReceValError, UndefinedMetricWarning
from receval.explain import Explanation, explain, format_explain
from receval.profiles import PROFILES, get, resolve

RELEVANT = ["a", "c", "f"]


def ev(truth: dict, preds: dict, metrics: list[str], **kw: object) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return receval.evaluate(truth, preds, metrics, **kw).summary


def one_user(items: list[str], scores: list[float], relevant: list[str] = RELEVANT,
             ratings: list[float] | None = None, user: str = "u1") -> tuple[dict, dict]:
    truth: dict = {"user": [user] * len(relevant), "item": list(relevant)}
    if ratings is not None:
        truth["rating"] = list(ratings)
    preds = {"user": [user] * len(items), "item": list(items), "score": list(scores)}
    return truth, preds


def approx(expected: float, places: int = 4) -> object:
    return pytest.approx(expected, abs=0.5 * 10**-places)


# E1: relevant = {a, c, f}, ranking a > b > c > d > e, k = 10 ------------------------------

E1 = one_user(list("abcde"), [5.0, 4.0, 3.0, 2.0, 1.0])
E1_METRICS = ["P@10", "R@10", "AP@10", "AP", "nDCG@10", "Rprec"]


@pytest.mark.parametrize("profile", ["trec_eval", "ranx"])
def test_e1_trec_eval_ranx(profile: str) -> None:
    got = ev(*E1, E1_METRICS, profile=profile)
    assert got == {"P@10": approx(0.2), "R@10": approx(0.6667), "AP@10": approx(0.5556),
                   "AP": approx(0.5556), "nDCG@10": approx(0.7039), "Rprec": approx(0.6667)}


def test_e1_ranx_burges_gain_is_the_same_on_binary_truth() -> None:
    binary = one_user(list("abcde"), [5.0, 4.0, 3.0, 2.0, 1.0], ratings=[1, 1, 1])
    assert ev(*binary, ["nDCG@10"], profile="ranx", gain="exponential")["nDCG@10"] == (
        approx(0.7039))


def test_e1_torchmetrics_f_left_out() -> None:
    got = ev(*E1, ["P@10", "R@10", "AP@10", "nDCG@10", "Rprec"], profile="torchmetrics")
    assert got == {"P@10": approx(0.2), "R@10": approx(1.0), "AP@10": approx(0.8333),
                   "nDCG@10": approx(0.9197), "Rprec": approx(0.5)}
    adaptive = ev(*E1, ["P@10"], profile="torchmetrics", precision_denominator="returned")
    assert adaptive["P@10"] == approx(0.4)


@pytest.mark.parametrize("f_score", [0.0, -100.0])
def test_e1_torchmetrics_f_included_with_nonpositive_score(f_score: float) -> None:
    data = one_user(list("abcdef"), [5.0, 4.0, 3.0, 2.0, 1.0, f_score])
    got = ev(*data, ["P@10", "R@10", "AP@10", "nDCG@10", "Rprec"], profile="torchmetrics")
    assert got == {"P@10": approx(0.2), "R@10": approx(0.6667), "AP@10": approx(0.8333),
                   "nDCG@10": approx(0.8711), "Rprec": approx(0.6667)}
    adaptive = ev(*data, ["P@10"], profile="torchmetrics", precision_denominator="returned")
    assert adaptive["P@10"] == approx(0.3333)


def test_e1_torchmetrics_f_included_with_positive_score() -> None:
    data = one_user(list("abcdef"), [5.0, 4.0, 3.0, 2.0, 1.0, 0.5])
    got = ev(*data, ["P@10", "R@10", "AP@10", "nDCG@10", "Rprec"], profile="torchmetrics")
    assert got == {"P@10": approx(0.3), "R@10": approx(1.0), "AP@10": approx(0.7222),
                   "nDCG@10": approx(0.8711), "Rprec": approx(0.6667)}


def test_e1_torchmetrics_all_scores_negative() -> None:
    data = one_user(list("abcdef"), [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0])
    got = ev(*data, ["P@10", "R@10", "AP@10", "nDCG@10", "Rprec"], profile="torchmetrics")
    assert got == {"P@10": 0.0, "R@10": 0.0, "AP@10": 0.0, "nDCG@10": approx(0.8711),
                   "Rprec": approx(0.6667)}


def test_e1_tensorflow() -> None:
    # 12 classes, f at logit rank 6
    items = list("abcde") + ["f"] + [f"z{i}" for i in range(6)]
    data = one_user(items, [12.0 - i for i in range(12)])
    got = ev(*data, ["P@10", "R@10", "AP@10"], profile="tensorflow")
    assert got == {"P@10": approx(0.3), "R@10": approx(1.0), "AP@10": approx(0.7222)}
    # f ranked outside the top 10
    items = list("abcde") + [f"z{i}" for i in range(6)] + ["f"]
    data = one_user(items, [12.0 - i for i in range(12)])
    got = ev(*data, ["P@10", "R@10", "AP@10"], profile="tensorflow")
    assert got == {"P@10": approx(0.2), "R@10": approx(0.6667), "AP@10": approx(0.5556)}


def test_e1_recommenders_spark_kaggle() -> None:
    assert ev(*E1, ["P@10", "R@10", "AP@10", "nDCG@10"], profile="recommenders") == {
        "P@10": approx(0.2), "R@10": approx(0.6667), "AP@10": approx(0.5556),
        "nDCG@10": approx(0.7039)}
    # recommenders `map` (not map_at_k) divides by R
    assert ev(*E1, ["AP@10"], profile="recommenders", ap_normalizer="relevant")["AP@10"] == (
        approx(0.5556))
    assert ev(*E1, ["P@10", "R@10", "AP@10", "AP", "nDCG@10"], profile="spark") == {
        "P@10": approx(0.2), "R@10": approx(0.6667), "AP@10": approx(0.5556),
        "AP": approx(0.5556), "nDCG@10": approx(0.7039)}
    assert ev(*E1, ["AP@10"], profile="kaggle")["AP@10"] == approx(0.5556)


# E2: ties. Relevant = {x}; a and x both score 1.0; P@1 ----------------------------------

def test_e2_ties() -> None:
    tie_ax = one_user(["a", "x"], [1.0, 1.0], relevant=["x"])
    tie_xa = one_user(["x", "a"], [1.0, 1.0], relevant=["x"])
    # trec_eval: docno descending -> x first, whatever the input order
    assert ev(*tie_ax, ["P@1"], profile="trec_eval")["P@1"] == 1.0
    assert ev(*tie_xa, ["P@1"], profile="trec_eval")["P@1"] == 1.0
    # trec_eval 9.0.8 reads float32: 1.0 and 1.000000001 tie; v10.0 (double) ranks b first
    close = one_user(["x", "b"], [1.0, 1.000000001], relevant=["x"])
    assert ev(*close, ["P@1"], profile="trec_eval")["P@1"] == 1.0
    assert ev(*close, ["P@1"], profile="trec_eval", score_dtype="float64")["P@1"] == 0.0
    # ranx Run: insertion order
    assert ev(*tie_ax, ["P@1"], profile="ranx")["P@1"] == 0.0
    assert ev(*tie_xa, ["P@1"], profile="ranx")["P@1"] == 1.0
    # torchmetrics: tie-averaged nDCG
    assert ev(*tie_ax, ["nDCG@1"], profile="torchmetrics")["nDCG@1"] == approx(0.5)
    # TensorFlow top_k: lower index first (a < x), whatever the input order
    assert ev(*tie_xa, ["P@1"], profile="tensorflow")["P@1"] == 0.0
    # Recommenders: input order
    assert ev(*tie_ax, ["P@1"], profile="recommenders")["P@1"] == 0.0
    assert ev(*tie_xa, ["P@1"], profile="recommenders")["P@1"] == 1.0


def test_e2_trec_eval_compares_integer_ids_as_text() -> None:
    truth = {"user": [1], "item": [10]}
    preds = {"user": [1, 1], "item": [10, 9], "score": [1.0, 1.0]}
    # strcmp: "9" > "10", so 9 ranks first (pytrec_eval gives P_1 = 0)
    assert ev(truth, preds, ["P@1"], profile="trec_eval")["P@1"] == 0.0
    assert ev(truth, preds, ["P@1"], profile="trec_eval", item_order="native")["P@1"] == 1.0


# E3: ranking b > d > e > a > c (hits at ranks 4 and 5), k = 10 ----------------------------

def test_e3() -> None:
    data = one_user(list("bdeac"), [5.0, 4.0, 3.0, 2.0, 1.0])
    metrics = ["Rprec", "AP@10", "nDCG@10", "RR"]
    for profile in ("trec_eval", "ranx"):
        assert ev(*data, metrics, profile=profile) == {
            "Rprec": 0.0, "AP@10": approx(0.2167), "nDCG@10": approx(0.3836), "RR": 0.25}
    with_f = one_user(list("bdeacf"), [5.0, 4.0, 3.0, 2.0, 1.0, -100.0])
    assert ev(*with_f, metrics, profile="torchmetrics") == {
        "Rprec": 0.0, "AP@10": approx(0.3250), "nDCG@10": approx(0.5508), "RR": 0.25}
    for profile in ("spark", "recommenders"):
        got = ev(*data, ["AP@10", "nDCG@10"], profile=profile)
        assert got == {"AP@10": approx(0.2167), "nDCG@10": approx(0.3836)}


# E4: population. u1 as in E1; u2 has truth {g} and no predictions; u3 has predictions only --

def e4() -> tuple[dict, dict]:
    truth = {"user": ["u1"] * 3 + ["u2"], "item": ["a", "c", "f", "g"]}
    preds = {"user": ["u1"] * 5 + ["u3"] * 2, "item": [*"abcde", "p", "q"],
             "score": [5.0, 4.0, 3.0, 2.0, 1.0, 2.0, 1.0]}
    return truth, preds


def test_e4_population() -> None:
    metrics = ["P@10", "R@10", "nDCG@10"]
    trec = ev(*e4(), metrics, profile="trec_eval")  # u1 only
    assert trec == {"P@10": approx(0.2), "R@10": approx(0.6667), "nDCG@10": approx(0.7039)}
    both_users = {"P@10": approx(0.1), "R@10": approx(0.3333), "nDCG@10": approx(0.3520)}
    assert ev(*e4(), metrics, profile="trec_eval", users="truth") == both_users  # -c
    assert ev(*e4(), metrics, profile="ranx") == both_users  # make_comparable=True
    # Recommenders: P/R over common users, nDCG over every truth user
    assert ev(*e4(), metrics, profile="recommenders") == {
        "P@10": approx(0.2), "R@10": approx(0.6667), "nDCG@10": approx(0.3520)}
    # Spark averages every RDD row: u1, u2 (empty prediction), u3 (empty label set, 0) by
    # default; an RDD of u1 and u2; the inner join (u1)
    assert ev(*e4(), ["P@10"], profile="spark")["P@10"] == approx(0.2 / 3)
    assert ev(*e4(), metrics, profile="spark", users="truth") == both_users
    assert ev(*e4(), ["P@10"], profile="spark", users="both")["P@10"] == approx(0.2)
    # ml_metrics mapk over (u1, u2 = [])
    assert ev(*e4(), ["AP@10"], profile="kaggle")["AP@10"] == approx(0.2778)


# Spark's own expected values (apache/spark mllib/src/test/scala/org/apache/spark/mllib/
# evaluation/RankingMetricsSuite.scala): RDD rows (predictions in rank order, labels[, label
# relevances]); every row is averaged, one without labels and one without predictions too.

SPARK_SUITE = {
    "binary": [([1, 6, 2, 7, 8, 3, 9, 10, 4, 5], [1, 2, 3, 4, 5], None),
               ([4, 1, 5, 6, 2, 7, 3, 8, 9, 10], [1, 2, 3], None),
               ([1, 2, 3, 4, 5], [], None)],
    "graded": [([1, 6, 2, 7, 8, 3, 9, 10, 4, 5], [1, 2, 3, 4, 5], [3.0, 2.0, 1.0, 1.0, 1.0]),
               ([4, 1, 5, 6, 2, 7, 3, 8, 9, 10], [1, 2, 3], [2.0, 0.0, 0.0]),
               ([1, 2, 3, 4, 5], [], [])],
    "few_predictions": [([1, 6, 2], [1, 2, 3, 4, 5], None), ([], [1, 2, 3], None)],
}
_SUITE_PR = {"P@1": 1 / 3, "P@2": 1 / 3, "P@3": 1 / 3, "P@4": 0.75 / 3, "P@5": 0.8 / 3,
             "P@10": 0.8 / 3, "P@15": 8 / 45, "AP": 0.355026, "AP@1": 0.333334,
             "AP@2": 0.25, "AP@3": 0.24074, "R@1": 1 / 15, "R@2": 8 / 45, "R@3": 11 / 45,
             "R@4": 11 / 45, "R@5": 16 / 45, "R@10": 2 / 3, "R@15": 2 / 3}
SPARK_SUITE_WANT = {
    "binary": {**_SUITE_PR, "nDCG@3": 1 / 3, "nDCG@5": 0.328788, "nDCG@10": 0.487913,
               "nDCG@15": 0.487913},
    "graded": {**_SUITE_PR, "nDCG@3": 0.511959, "nDCG@5": 0.487806, "nDCG@10": 0.518700,
               "nDCG@15": 0.518700},
    "few_predictions": {"P@1": 0.5, "P@2": 0.25, "nDCG@1": 0.5, "nDCG@2": 0.30657,
                        "R@1": 0.1, "R@2": 0.1},
}


def spark_suite_frames(test: str) -> tuple[dict, dict]:
    truth: dict = {"user": [], "item": [], "rating": []}
    preds: dict = {"user": [], "item": [], "score": []}
    for u, (ranked, labels, rel) in enumerate(SPARK_SUITE[test]):
        truth["user"] += [u] * len(labels)
        truth["item"] += labels
        truth["rating"] += rel if rel is not None else [1.0] * len(labels)
        preds["user"] += [u] * len(ranked)
        preds["item"] += ranked
        preds["score"] += [float(len(ranked) - j) for j in range(len(ranked))]
    return truth, preds


def test_spark_profile_gives_sparks_own_test_values() -> None:
    """All 50 expected values of RankingMetricsSuite.scala (to its 1e-5), graded nDCG with
    gain="exponential" (its 2^rel - 1; a label of relevance 0 still counts for P, R, AP);
    the inner join (users="both") misses those where a row has no label or no prediction."""
    checked, differ = 0, 0
    for test, want in SPARK_SUITE_WANT.items():
        extra = {"gain": "exponential"} if test == "graded" else {}
        got = ev(*spark_suite_frames(test), list(want), profile="spark", **extra)
        inner = ev(*spark_suite_frames(test), list(want), profile="spark", users="both",
                   **extra)
        for name, value in want.items():
            assert got[name] == pytest.approx(value, abs=1e-5), (test, name)
            differ += inner[name] != pytest.approx(value, abs=1e-5)
            checked += 1
    assert checked == 50
    assert differ == 50


def test_e4_torchmetrics_empty_target_action() -> None:
    # groups u1 and u3 (u3 has no positive target): neg / pos / skip
    assert ev(*e4(), ["P@10"], profile="torchmetrics")["P@10"] == approx(0.1)
    assert ev(*e4(), ["P@10"], profile="torchmetrics", empty="one")["P@10"] == approx(0.6)
    assert ev(*e4(), ["P@10"], profile="torchmetrics", empty="skip")["P@10"] == approx(0.2)
    with pytest.raises(receval.UndefinedMetricError):
        ev(*e4(), ["P@10"], profile="torchmetrics", empty="error")


def test_e4_tensorflow() -> None:
    # two rows: u1 as in E1 with f outside the top 10, u2 with labels {g} and g at rank 1
    items = list("abcde") + [f"z{i}" for i in range(6)] + ["f"]
    truth = {"user": ["u1"] * 3 + ["u2"], "item": ["a", "c", "f", "g"]}
    preds = {"user": ["u1"] * 12 + ["u2"] * 12,
             "item": items + ["g"] + [f"y{i}" for i in range(11)],
             "score": [12.0 - i for i in range(12)] * 2}
    got = ev(truth, preds, ["P@10", "R@10", "AP@10"], profile="tensorflow")
    assert got["P@10"] == approx(0.15)  # micro: 3 / 20
    assert got["AP@10"] == approx(0.7778)  # macro
    # TF counts dense -1 padding as a false negative (R = 0.6); receval: 3 / 4 (gap)
    assert got["R@10"] == approx(0.75)
    # a row with no label makes TF's AP NaN
    preds_nolabel = {k: v + w for (k, v), w in
                     zip(preds.items(), (["u3"], ["a"], [1.0]), strict=True)}
    assert math.isnan(ev(truth, preds_nolabel, ["AP@10"], profile="tensorflow")["AP@10"])


# E5: duplicates. Relevant = {a, c}; ranking a, a, c; k = 3 --------------------------------

def test_e5_duplicates() -> None:
    data = one_user(["a", "a", "c"], [3.0, 2.0, 1.0], relevant=["a", "c"])
    assert ev(*data, ["AP@3"], profile="kaggle")["AP@3"] == approx(0.8333)
    # a duplicate in `actual`: ['a', 'a', 'c'] vs ['a', 'c']
    data = one_user(["a", "c"], [2.0, 1.0], relevant=["a", "a", "c"])
    assert ev(*data, ["AP@3"], profile="kaggle")["AP@3"] == approx(0.6667)
    # trec_eval: fatal "duplicate docs"; the tools that count duplicates twice are not
    # reproduced, and receval says so instead of giving another number
    dup = one_user(["a", "a", "c"], [3.0, 2.0, 1.0], relevant=["a", "c"])
    for profile in ("trec_eval", "ranx", "torchmetrics", "tensorflow", "recommenders",
                    "spark"):
        with pytest.raises(ReceValError, match="duplicate"):
            ev(*dup, ["P@3"], profile=profile)


# E6: graded relevance a=1, c=2, f=3; ranking a..e; k = 10 ---------------------------------

def test_e6_graded() -> None:
    data = one_user(list("abcde"), [5.0, 4.0, 3.0, 2.0, 1.0], ratings=[1, 2, 3])
    assert ev(*data, ["nDCG@10"], profile="trec_eval")["nDCG@10"] == approx(0.4200)
    assert ev(*data, ["nDCG@10"], profile="ranx")["nDCG@10"] == approx(0.4200)
    assert ev(*data, ["nDCG@10"], profile="ranx", gain="exponential")["nDCG@10"] == (
        approx(0.2662))
    assert ev(*data, ["nDCG@10"], profile="ranx", relevance_threshold=2)["nDCG@10"] == (
        approx(0.2346))
    assert ev(*data, ["nDCG@10"], profile="recommenders", gain="linear")["nDCG@10"] == (
        approx(0.4200))
    assert ev(*data, ["nDCG@10"], profile="recommenders", gain="exponential")["nDCG@10"] == (
        approx(0.2662))
    # torchmetrics / scikit-learn with f included, scored last
    with_f = one_user(list("abcdef"), [5.0, 4.0, 3.0, 2.0, 1.0, 0.0], ratings=[1, 2, 3])
    assert ev(*with_f, ["nDCG@10"], profile="torchmetrics")["nDCG@10"] == approx(0.6444)


# Surprise FAQ example ------------------------------------------------------------------------

def test_surprise_example() -> None:
    truth = {"user": ["u"] * 6, "item": list("abcdef"), "rating": [5, 2, 4, 1, 1, 4]}
    preds = {"user": ["u"] * 6, "item": list("abcdef"),
             "score": [4.9, 4.5, 3.8, 3.6, 3.0, 1.0]}
    got = ev(truth, preds, ["P@10", "R@10"], profile="surprise")
    assert got == {"P@10": approx(0.5), "R@10": approx(0.6667)}
    nothing = {"user": ["v"] * 2, "item": ["x", "y"], "rating": [1, 2]}
    low = {"user": ["v"] * 2, "item": ["x", "y"], "score": [1.0, 2.0]}
    assert ev(nothing, low, ["P@10", "R@10"], profile="surprise") == {"P@10": 0.0, "R@10": 0.0}
    # before v1.1.1 (PR #349) both were 1
    assert ev(nothing, low, ["P@10", "R@10"], profile="surprise", empty="one") == {
        "P@10": 1.0, "R@10": 1.0}


def test_surprise_needs_ratings() -> None:
    truth, preds = E1
    with pytest.raises(ReceValError, match="rating"):
        ev(truth, preds, ["P@10"], profile="surprise")


# Mechanics -----------------------------------------------------------------------------------

def test_every_profile_is_registered_and_valid() -> None:
    assert set(PROFILES) == {"trec_eval", "ranx", "torchmetrics", "tensorflow", "recommenders",
                             "surprise", "spark", "kaggle", "lenskit", "trec_eval10",
                             "recbole", "cornac"}
    for p in PROFILES.values():
        assert p.source and p.version and p.metrics
        r = resolve(p.name)
        assert r.name == p.name


def test_profile_aliases_and_unknown() -> None:
    assert get("pytrec_eval").name == "trec_eval"
    assert get("TF").name == "tensorflow"
    with pytest.raises(ReceValError, match="unknown profile"):
        get("nosuchtool")


def test_explicit_options_override_the_profile_and_the_profile_is_recorded() -> None:
    r = receval.evaluate(*E1, ["AP@10"], profile="trec_eval", ap_normalizer="hits")
    assert r.options["profile"] == "trec_eval"
    assert r.options["ap_normalizer"] == "hits"
    assert r.summary["AP@10"] == approx(0.8333)
    assert receval.evaluate(*E1, ["AP@10"]).options["profile"] is None


def test_per_metric_options_are_recorded() -> None:
    r = receval.evaluate(*e4(), ["P@10", "nDCG@10"], profile="recommenders")
    assert r.options["users"] == "both"
    assert r.options["per_metric"] == {"nDCG@10": {"users": "truth"}}
    assert r.per_user.columns.tolist() == ["user", "P@10", "nDCG@10"]
    assert r.per_user["user"].tolist() == ["u1", "u2"]
    assert math.isnan(r.per_user["P@10"].iloc[1])
    assert r.counts["users_per_metric"] == {"P@10": 1, "nDCG@10": 2}
    # an explicit option wins over the per-metric one too
    r = receval.evaluate(*e4(), ["P@10", "nDCG@10"], profile="recommenders", users="truth")
    assert "per_metric" not in r.options


def test_explain_lists_differences_and_effects() -> None:
    e = explain("trec_eval", "kaggle", *E1, ["AP@10", "AP@2"])
    assert isinstance(e, Explanation)
    options = {d.option: (d.a, d.b) for d in e.differences}
    assert options["ap_normalizer"] == ("relevant", "min_k_relevant")
    assert e.values_a["AP@2"] == approx(0.3333)  # 1 / R
    assert e.values_b["AP@2"] == approx(0.5)  # 1 / min(k, R)
    assert e.effects["ap_normalizer"]["AP@2"] == approx(0.1667)
    assert e.effects["ap_normalizer"]["AP@10"] == 0.0
    text = format_explain(e)
    assert "ap_normalizer" in text and "= trec_eval" in text
    assert e.rows()[0]["option"] == e.differences[0].option


def test_explain_per_family_scope_and_defaults() -> None:
    e = explain(None, "torchmetrics")
    scope = {d.option: d.scope for d in e.differences}
    assert scope["nonpositive_scores"] == "P, R, AP, RR"
    assert scope["truth_scope"] == "all"
    assert e.a == "defaults"
    from rich.console import Console

    console = Console(record=True, width=200)
    console.print(e)
    assert "nonpositive_scores" in console.export_text()


def test_docs_example() -> None:
    """docs/profiles.md: one set of predictions, five MAP@10 values (each from the real tool:
    pytrec_eval, ranx, ml_metrics, torchmetrics, recommenders and pyspark gave these)."""
    truth = {"user": ["u1"] * 12 + ["u2"], "item": [*"bdghmnpqstvw", "z"]}
    preds = {"user": ["u1"] * 11, "item": list("bcedfigjklo"),
             "score": [1.0 - 0.05 * i for i in range(11)]}
    want = {"spark": 0.096429, "recommenders": 0.192857, "trec_eval": 0.160714,
            "kaggle": 0.096429, "ranx": 0.080357, "torchmetrics": 0.642857}
    for profile, value in want.items():
        assert ev(truth, preds, ["AP@10"], profile=profile)["AP@10"] == approx(value, 6)
    # Spark on the inner-joined RDD (u1 only)
    assert ev(truth, preds, ["AP@10"], profile="spark", users="both")["AP@10"] == approx(
        0.192857, 6)
    e = explain("trec_eval", "kaggle", truth, preds, ["AP@10"])
    assert e.effects["ap_normalizer"]["AP@10"] == approx(0.0321)
    assert e.effects["users"]["AP@10"] == approx(-0.0804)
    assert e.interaction["AP@10"] == approx(-0.0161)


# trec_eval's own test output: every value of out.test.aql that receval computes -------------

TREC_EVAL_DATA = Path(__file__).parent / "data" / "trec_eval"
#: trec_eval measure (before the cutoff) -> receval metric family, with the options it needs
#: beyond the profile's. relative_P_k is hits@k / min(k, R): recall over min(k, R).
TREC_EVAL_CUT = {"P": ("P", {}), "recall": ("R", {}), "map_cut": ("AP", {}),
                 "ndcg_cut": ("nDCG", {}), "success": ("Hit", {}),
                 "relative_P": ("R", {"recall_denominator": "capped"})}
TREC_EVAL_UNCUT = {"map": "AP", "ndcg": "nDCG", "Rprec": "Rprec", "Rprec_mult_1.00": "Rprec",
                   "recip_rank": "RR", "num_rel_ret": "num_rel_ret"}


def _trec_eval_metric(measure: str, n_ret: int) -> tuple[str, dict] | None:
    """The receval metric (and extra options) for a trec_eval measure, ``None`` for those
    receval does not compute. ``set_*`` measures are over the whole retrieved list: a cutoff
    ``n_ret`` (the longest list) with precision over the items returned."""
    if measure in TREC_EVAL_UNCUT:
        return TREC_EVAL_UNCUT[measure], {}
    sets = {"set_P": ("P", {"precision_denominator": "returned"}), "set_recall": ("R", {}),
            "set_F": ("F1", {"precision_denominator": "returned"}),
            "set_relative_P": ("R", {"recall_denominator": "capped"})}
    if measure in sets:
        family, opts = sets[measure]
        return f"{family}@{n_ret}", opts
    base, _, cut = measure.rpartition("_")
    if base in TREC_EVAL_CUT and cut.isdigit():
        family, opts = TREC_EVAL_CUT[base]
        return f"{family}@{cut}", opts
    return None


def _read_trec(path: Path, names: list[str]) -> pd.DataFrame:
    return pd.read_csv(path, sep=r"\s+", header=None, names=names,
                       dtype={"user": str, "item": str})


def test_trec_eval_own_test_output() -> None:
    """``trec_eval -m all_trec -q -l2 qrels.rel_level results.test`` (out.test.aql, from
    trec_eval's repository): every printed value receval computes, per topic and over all, to
    the 4 decimals printed. ``-l2`` is relevance_threshold=2 for the binary measures; ndcg and
    ndcg_cut keep every level > 0 as gains (the profile pins them)."""
    qrels = _read_trec(TREC_EVAL_DATA / "qrels.rel_level", ["user", "iter", "item", "rating"])
    run = _read_trec(TREC_EVAL_DATA / "results.test",
                     ["user", "q0", "item", "rank", "score", "tag"])
    n_ret = int(run.groupby("user").size().max())
    expected: dict[tuple[str, str], tuple[str, dict]] = {}  # (measure, topic) -> printed
    by_options: dict[tuple, list[str]] = {}
    for line in (TREC_EVAL_DATA / "out.test.aql").read_text().splitlines():
        measure, topic, printed = line.split()
        found = _trec_eval_metric(measure, n_ret)
        if found is None:
            continue
        metric, opts = found
        expected[(measure, topic)] = (printed, {"metric": metric, "opts": opts})
        names = by_options.setdefault(tuple(sorted(opts.items())), [])
        if metric not in names:
            names.append(metric)
    results = {key: receval.evaluate(qrels, run, names, profile="trec_eval",
                                     relevance_threshold=2, **dict(key))
               for key, names in by_options.items()}
    got, want = {}, {}
    for (measure, topic), (printed, spec) in expected.items():
        r = results[tuple(sorted(spec["opts"].items()))]
        if topic == "all":
            value = r.summary[spec["metric"]]
        else:
            value = r.per_user.set_index("user").loc[topic, spec["metric"]]
        # counts are printed as integers (num_rel_ret: the sum over topics on the all line)
        got[(measure, topic)] = f"{value:.4f}" if "." in printed else f"{value:g}"
        want[(measure, topic)] = printed
    assert got == want
    # 58 measures x (3 topics + all): P, recall, map_cut, ndcg_cut, relative_P at 9 cutoffs,
    # success at 3, map, ndcg, Rprec, Rprec_mult_1.00, recip_rank, set_P, set_recall, set_F,
    # set_relative_P, num_rel_ret
    assert len(got) == 232
    assert want[("num_rel_ret", "all")] == "59"


# trec_eval -l N: the binary measures only ---------------------------------------------------


def test_trec_eval_relevance_threshold_leaves_ndcg_at_every_level() -> None:
    """Ratings a 1, c 2, f 3; ranking a > b > c > d > e. With relevance_threshold=2 (-l2) P@2
    counts c and f only, but nDCG keeps gains 1, 2, 3 as trec_eval's ndcg_cut does."""
    truth, preds = one_user(list("abcde"), [5.0, 4, 3, 2, 1], ratings=[1, 2, 3])
    dcg = 1 / math.log2(2) + 2 / math.log2(4)  # a (gain 1) at rank 1, c (gain 2) at rank 3
    ideal = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    r = receval.evaluate(truth, preds, ["P@2", "nDCG@5"], profile="trec_eval",
                         relevance_threshold=2)
    assert r.summary == {"P@2": 0.0, "nDCG@5": pytest.approx(dcg / ideal, abs=1e-12)}
    assert r.options["relevance_threshold"] == 2
    assert r.options["per_metric"] == {"nDCG@5": {"relevance_threshold": 1}}
    # without the profile, the threshold cuts nDCG's gains too: only c and f are relevant
    plain = ev(truth, preds, ["nDCG@5"], relevance_threshold=2, gain="linear")["nDCG@5"]
    assert plain == pytest.approx((2 / math.log2(4)) / (3 + 2 / math.log2(3)), abs=1e-12)


# ranx: its own order of tied scores ---------------------------------------------------------

# 20 items, i0..i19, scores 1, 2, 1, 2, ...: ten tied at 2. ranx 0.3.21 (Run.from_df, then
# evaluate(make_comparable=True)) ranks them i9 i1 i3 i19 i5 i11 i13 i15 i17 i7 (numba's
# quicksort, twice; printed by ranx.data_structures.common.typed_list_argosrt); with
# make_comparable=False (one sort) i17 i15 i13 i11 i7 i19 i3 i1 i9 i5; input order: i1 i3 ...
RANX_TIE = one_user([f"i{j}" for j in range(20)], [1.0, 2.0] * 10, relevant=["i9"])


def test_ranx_ties_follow_ranx_not_the_input_order() -> None:
    got = ev(*RANX_TIE, ["P@1", "RR"], profile="ranx")
    assert got == {"P@1": 1.0, "RR": 1.0}  # ranx itself: precision@1 1.0, mrr 1.0
    stable = ev(*RANX_TIE, ["RR"], profile="ranx", ties="stable")
    assert stable["RR"] == pytest.approx(1 / 5)  # i1 i3 i5 i7 i9: the 5th
    assert PROFILES["ranx"].options["ties"] == "ranx"


def test_ranx_order_groups_of_users_interleaved() -> None:
    """Each user's rows are ordered alone, wherever they sit in the input."""
    import numpy as np

    from receval.profiles import ranx_order

    users = np.array([0, 1] * 20)  # user 0: even rows, user 1: odd rows
    scores = np.repeat([1.0, 2.0], 2).tolist() * 10
    order = ranx_order(users, np.array(scores))
    assert sorted(order) == list(range(40))
    assert all(users[order] == users)  # each row position keeps its user
    for u in (0, 1):
        mine = order[users == u]
        assert list(np.array(scores)[mine]) == [2.0] * 10 + [1.0] * 10
        # the same permutation as a lone user with those scores (1 1 2 2 ... or 1 2 1 2 ...)
        alone = ranx_order(np.zeros(20, dtype=np.int64), np.array(scores)[users == u])
        assert list(mine) == list(np.flatnonzero(users == u)[alone])


# explain: the user's options apply to both sides ---------------------------------------------


def test_explain_options_override_both_profiles() -> None:
    """relevance_threshold=4 on star ratings: relevant {a, c} for u1 and {d} for u2 on both
    sides, so relevance_threshold no longer differs and P@2 is (1/2 + 1/2) / 2."""
    truth = {"user": ["u1"] * 3 + ["u2"] * 2, "item": ["a", "b", "c", "a", "d"],
             "rating": [5.0, 3, 4, 2, 5]}
    preds = {"user": ["u1"] * 3 + ["u2"] * 2, "item": ["b", "a", "x", "a", "d"],
             "score": [0.9, 0.8, 0.7, 0.9, 0.5]}
    e = explain("trec_eval", None, truth, preds, ["P@2"], relevance_threshold=4,
                silence=["no-threshold"])
    assert e.overrides == {"relevance_threshold": 4}
    assert e.values_a == {"P@2": 0.5} and e.values_b == {"P@2": 0.5}
    # nDCG is trec_eval's exception: -l does not reach it, so there the thresholds differ
    assert [(d.option, d.a, d.b, d.metrics) for d in e.differences
            if d.option == "relevance_threshold"] == []
    e = explain("trec_eval", None, truth, preds, ["P@2", "nDCG@2"], relevance_threshold=4)
    assert [(d.option, d.a, d.b, d.metrics) for d in e.differences
            if d.option == "relevance_threshold"] == [("relevance_threshold", 1, 4, ("nDCG",))]
    assert "both with relevance_threshold=4" in e.__rich__().title
    with pytest.raises(ReceValError, match="not profile="):
        explain("ranx", None, truth, preds, ["P@2"], profile="ranx")
