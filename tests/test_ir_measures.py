"""The IR measures trec_eval and ir_measures have (issue 14): bpref, RBP and its residual,
ERR@k, Judged@k, interpolated precision at recall levels and the 11-point average,
Rprec_mult, num_rel/num_ret, trec_eval's ``-M`` (``max_list``) and ``-J``
(``protocol="known"``), and trec_eval's measure names as aliases.

Expected values come from pytrec_eval (trec_eval 9.0.8), trec_eval's own test output
(tests/data/trec_eval) and oracles written here from each formula, never from receval."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.exceptions import ReceValError
from receval.measures.spec import parse_metric

SILENCE = ["ties", "undefined", "id-mismatch", "no-threshold", "no-match"]
TREC_NAMES = ["bpref", "iprec_at_recall_0.00", "iprec_at_recall_0.10", "iprec_at_recall_0.40",
              "iprec_at_recall_1.00", "Rprec_mult_0.20", "Rprec_mult_1.00", "Rprec_mult_2.00",
              "11pt_avg", "num_rel", "num_ret", "P_5", "map", "recip_rank", "ndcg_cut_5"]


def _random(seed: int, n_users: int = 40, n_items: int = 30):
    rng = np.random.default_rng(seed)
    truth, preds = [], []
    for u in range(n_users):
        for i in rng.choice(n_items, rng.integers(0, 12), replace=False):
            truth.append((f"u{u}", f"d{i}", int(rng.integers(0, 4))))
        for i in rng.choice(n_items, rng.integers(1, 16), replace=False):
            preds.append((f"u{u}", f"d{i}", float(rng.integers(0, 5))))  # many ties
    return truth, preds


ADVERSARIAL = {
    # no relevant item; only unjudged items; empty truth row set for a user; all relevant
    "no_relevant": ([("a", "x", 0), ("a", "y", 1)], [("a", "x", 1.0), ("a", "z", 0.5)]),
    "unjudged_only": ([("a", "x", 3)], [("a", "p", 1.0), ("a", "q", 0.9)]),
    "all_relevant": ([("a", "x", 3), ("a", "y", 2)], [("a", "y", 1.0), ("a", "x", 1.0)]),
    "nonrel_first": ([("a", "x", 0), ("a", "y", 0), ("a", "z", 3), ("b", "w", 2)],
                     [("a", "x", 3.0), ("a", "y", 2.0), ("a", "q", 1.5), ("a", "z", 1.0),
                      ("b", "w", 0.1), ("b", "v", 0.2)]),
    "ties": ([("a", "x", 2), ("a", "y", 0), ("a", "z", 2)],
             [("a", "x", 1.0), ("a", "y", 1.0), ("a", "z", 1.0), ("a", "w", 1.0)]),
}


def _frames(truth, preds):
    return (pd.DataFrame(truth, columns=["user", "item", "rating"]),
            pd.DataFrame(preds, columns=["user", "item", "score"]))


def _pytrec(truth, preds, judged_only: bool = False):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels: dict = {}
    run: dict = {}
    for u, i, r in truth:
        qrels.setdefault(u, {})[i] = r
    for u, i, s in preds:
        run.setdefault(u, {})[i] = s
    measures = {"bpref", "iprec_at_recall", "Rprec_mult", "11pt_avg", "num_rel", "num_ret",
                "P", "map", "recip_rank", "ndcg_cut"}
    return pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=2,
                                          judged_docs_only_flag=judged_only).evaluate(run)


def _check_pytrec(truth, preds, judged_only: bool) -> None:
    want = _pytrec(truth, preds, judged_only)
    t, p = _frames(truth, preds)
    extra = {"protocol": "known"} if judged_only else {}
    r = receval.evaluate(t, p, TREC_NAMES, profile="trec_eval", relevance_threshold=2,
                         score_dtype="float64", silence=SILENCE, **extra)
    per_user = r.per_user.set_index("user")
    for u, values in want.items():
        for name in TREC_NAMES:
            expected = values[name]  # NaN: trec_eval's 0/0 on an empty -J list, as the profile
            assert per_user.loc[u, name] == pytest.approx(expected, abs=1e-12, nan_ok=True), (
                u, name)


@pytest.mark.parametrize("judged_only", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_trec_eval_measures_random(seed: int, judged_only: bool) -> None:
    _check_pytrec(*_random(seed), judged_only)


# (-J with nothing judged retrieved: trec_eval has no list to score, so no case)
@pytest.mark.parametrize(("case", "judged_only"), [
    (case, j) for case in sorted(ADVERSARIAL) for j in (False, True)
    if not (j and case == "unjudged_only")])
def test_trec_eval_measures_adversarial(case: str, judged_only: bool) -> None:
    _check_pytrec(*ADVERSARIAL[case], judged_only)


# --- oracles from the formulas ------------------------------------------------------------


def _ranked(preds, user):
    """The user's list in trec_eval's order: score descending, item id descending."""
    mine = sorted(((s, i) for u, i, s in preds if u == user), key=lambda x: x[1], reverse=True)
    return [i for s, i in sorted(mine, key=lambda x: -x[0])]  # stable: ids stay descending


def _oracle(truth, preds, user, threshold=2, k=5, p=0.8, max_list=None):
    judged = {i: r for u, i, r in truth if u == user}
    ranked = _ranked(preds, user)[:max_list]
    rel = [i in judged and judged[i] >= threshold for i in ranked]
    n_rel = sum(r >= threshold for r in judged.values())
    n_nonrel = len(judged) - n_rel
    # bpref (Buckley & Voorhees 2004)
    total, nonrel_above = 0.0, 0
    for i, is_rel in zip(ranked, rel, strict=True):
        if i not in judged:
            continue
        if is_rel:
            total += 1.0 if nonrel_above == 0 else 1 - min(nonrel_above, n_rel) / min(
                n_nonrel, n_rel)
        else:
            nonrel_above += 1
    bpref = total / n_rel if n_rel else math.nan
    # RBP and its residual (Moffat & Zobel 2008)
    rbp = (1 - p) * sum(p**j for j, r in enumerate(rel) if r)
    resid = (1 - p) * sum(p**j for j, i in enumerate(ranked) if i not in judged) + p ** len(
        ranked)
    # ERR (Chapelle et al. 2009), g_max the highest relevant rating
    g_max = max((r for r in judged.values() if r >= threshold), default=None)
    err, survive = 0.0, 1.0
    for j, i in enumerate(ranked[:k]):
        g = judged[i] if i in judged and judged[i] >= threshold else 0
        stop = (2**g - 1) / 2**g_max if g_max is not None else 0.0
        err += survive * stop / (j + 1)
        survive *= 1 - stop
    top = ranked[:k]
    judged_at = sum(i in judged for i in top) / len(top) if top else math.nan
    return {"bpref": bpref, "RBP@0.8": rbp, "RBP_resid@0.8": resid,
            f"ERR@{k}": err if n_rel else math.nan, f"Judged@{k}": judged_at}


@pytest.mark.parametrize("max_list", [None, 4])
@pytest.mark.parametrize("seed", [3, 4])
def test_formula_oracle_random(seed: int, max_list: int | None) -> None:
    truth, preds = _random(seed, n_users=25)
    t, p = _frames(truth, preds)
    names = ["bpref", "RBP@0.8", "RBP_resid@0.8", "ERR@5", "Judged@5"]
    r = receval.evaluate(t, p, names, relevance_threshold=2, ties="item", empty="nan",
                         max_list=max_list, silence=SILENCE)
    per_user = r.per_user.set_index("user")
    for user in sorted({u for u, _, _ in truth}):
        want = _oracle(truth, preds, user, max_list=max_list)
        for name in names:
            got = per_user.loc[user, name]
            if math.isnan(want[name]):
                assert math.isnan(got), (user, name)
            else:
                assert got == pytest.approx(want[name], abs=1e-12), (user, name)


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_formula_oracle_adversarial(case: str) -> None:
    truth, preds = ADVERSARIAL[case]
    t, p = _frames(truth, preds)
    names = ["bpref", "RBP@0.8", "RBP_resid@0.8", "ERR@5", "Judged@5"]
    r = receval.evaluate(t, p, names, relevance_threshold=2, ties="item", empty="nan",
                         users="both", silence=SILENCE)
    per_user = r.per_user.set_index("user")
    for user in per_user.index:
        want = _oracle(truth, preds, user)
        for name in names:
            got = per_user.loc[user, name]
            assert (math.isnan(got) and math.isnan(want[name])) or got == pytest.approx(
                want[name], abs=1e-12), (user, name)


def test_max_list_is_trec_eval_minus_m() -> None:
    """-M 4: trec_eval ranks, then keeps the top 4 of each list; pytrec_eval on runs cut to
    their top 4 (in trec_eval's order) gives the same numbers."""
    truth, preds = _random(5)
    kept = {u: set(_ranked(preds, u)[:4]) for u in {u for u, _, _ in preds}}
    cut = [row for row in preds if row[1] in kept[row[0]]]
    want = _pytrec(truth, cut)
    t, p = _frames(truth, preds)
    r = receval.evaluate(t, p, TREC_NAMES, profile="trec_eval", relevance_threshold=2,
                         score_dtype="float64", max_list=4, silence=SILENCE)
    per_user = r.per_user.set_index("user")
    for u, values in want.items():
        for name in TREC_NAMES:
            assert per_user.loc[u, name] == pytest.approx(values[name], abs=1e-12), (u, name)
    assert per_user["num_ret"].max() == 4
    with pytest.raises(ReceValError, match="max_list"):
        receval.evaluate(t, p, ["P@5"], max_list=0)


# --- trec_eval's own test output ------------------------------------------------------------

TREC_EVAL_DATA = Path(__file__).parent / "data" / "trec_eval"


def test_trec_eval_own_output_bpref_and_rprec_mult() -> None:
    """out.test.aql (trec_eval 10.0, -l2): bpref and Rprec_mult at every multiple, per topic
    and over all, to the 4 printed decimals. (Its iprec_at_recall and 11pt_avg round x R to the
    nearest, trec_eval 10's change; receval follows 9.0.8 / pytrec_eval, checked above.)"""
    def read(path, names):
        return pd.read_csv(path, sep=r"\s+", header=None, names=names,
                           dtype={"user": str, "item": str})

    qrels = read(TREC_EVAL_DATA / "qrels.rel_level", ["user", "iter", "item", "rating"])
    run = read(TREC_EVAL_DATA / "results.test", ["user", "q0", "item", "rank", "score", "tag"])
    want = {}
    for line in (TREC_EVAL_DATA / "out.test.aql").read_text().splitlines():
        measure, topic, printed = line.split()
        if measure == "bpref" or measure.startswith("Rprec_mult_"):
            want[(measure, topic)] = printed
    names = sorted({m for m, _ in want})
    r = receval.evaluate(qrels, run, names, profile="trec_eval", relevance_threshold=2,
                         silence=SILENCE)
    per_user = r.per_user.set_index("user")
    got = {(m, t): f"{r.summary[m] if t == 'all' else per_user.loc[t, m]:.4f}"
           for m, t in want}
    assert got == want
    assert len(want) == 44  # bpref and 10 multiples, 3 topics and all


# --- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("trec", "canonical"), [
    ("P_10", "P@10"), ("P.10", "P@10"), ("recall_10", "R@10"), ("ndcg_cut_10", "nDCG@10"),
    ("map_cut_10", "AP@10"), ("recip_rank", "RR"), ("Rprec", "Rprec"), ("bpref", "bpref"),
    ("map", "AP"), ("ndcg", "nDCG"), ("success_1", "Hit@1"),
    ("num_rel_ret_5", "num_rel_ret@5"), ("num_rel_ret", "num_rel_ret"),
    ("iprec_at_recall_0.50", "iprec@0.5"), ("11pt_avg", "11pt_avg"),
    ("Rprec_mult_0.50", "Rprec_mult@0.5"), ("num_rel", "num_rel"), ("num_ret", "num_ret"),
    ("rbp", "RBP"), ("rbp_resid", "RBP_resid"), ("RBP@0.8", "RBP@0.8"), ("ERR@10", "ERR@10"),
    ("Judged@10", "Judged@10"),
])
def test_trec_eval_names(trec: str, canonical: str) -> None:
    spec = parse_metric(trec)
    assert spec.canonical == canonical
    assert spec.name == trec  # the result's column is the name as written


@pytest.mark.parametrize("name", ["infAP", "gm_bpref", "relative_P_10", "utility"])
def test_trec_eval_names_receval_does_not_have(name: str) -> None:
    with pytest.raises(ReceValError, match=f"unknown metric '{name}'.*trec_eval measure"):
        parse_metric(name)


@pytest.mark.parametrize(("name", "message"), [
    ("RBP@1", r"p must be in \(0, 1\)"), ("iprec@1.5", r"recall must be in \[0, 1\]"),
    ("Rprec_mult@0", "multiple must be in"), ("RBP@x", "is not a number")])
def test_bad_parameters(name: str, message: str) -> None:
    with pytest.raises(ReceValError, match=message):
        parse_metric(name)


def test_pasting_a_trec_eval_list() -> None:
    truth, preds = ADVERSARIAL["nonrel_first"]
    t, p = _frames(truth, preds)
    r = receval.evaluate(t, p, ["P_5", "ndcg_cut_10", "recip_rank", "bpref", "Rprec"],
                         profile="trec_eval", relevance_threshold=2, silence=SILENCE)
    assert list(r.summary) == ["P_5", "ndcg_cut_10", "recip_rank", "bpref", "Rprec"]


# --- where they are not defined ---------------------------------------------------------------


def test_average_ties_refuse_clearly_and_score_matrices_compute_them() -> None:
    truth, preds = ADVERSARIAL["ties"]
    t, p = _frames(truth, preds)
    with pytest.raises(ReceValError, match="ties='average'"):
        receval.evaluate(t, p, ["bpref"], ties="average", relevance_threshold=2)
    pytest.importorskip("torch")
    # evaluate_scores builds the judged items and applies max_list as evaluate does (issue 21)
    scores = np.array([[1.0, 0.5]])
    long = {"user": ["a", "a"], "item": ["x", "y"], "score": [1.0, 0.5]}
    for metrics, extra in ((["Judged@2", "bpref"], {}), (["P@2"], {"max_list": 1})):
        got = receval.evaluate_scores(t, scores, metrics, user_ids=["a"], item_ids=["x", "y"],
                                      device="cpu", relevance_threshold=2, silence=SILENCE,
                                      **extra)
        want = receval.evaluate(t[t["user"] == "a"], long, metrics, relevance_threshold=2,
                                silence=SILENCE, **extra)
        assert got.summary == want.summary


@pytest.mark.parametrize("ties", ["stable", "item", "pessimistic", "optimistic"])
def test_max_list_on_every_path(ties: str) -> None:
    """max_list without a judged-items family (the kernel's counting path, no sort) and with
    one (the sorting path): the numbers of the run cut to its top M by hand, the top M taken
    in the tie policy's order (oracle: sort by score, then the policy's key, then row)."""
    truth, preds = _random(6, n_users=30)
    rating = {(u, i): r for u, i, r in truth}
    m = 3
    kept = []
    for user in sorted({u for u, _, _ in preds}):
        rows = [(row, i, s) for row, (u, i, s) in enumerate(preds) if u == user]
        rel = {i: float(rating.get((user, i), -1) >= 2) for _, i, _ in rows}
        sign = {"stable": 0.0, "item": 0.0, "pessimistic": 1.0, "optimistic": -1.0}[ties]
        if ties == "item":  # item id descending (strings, byte-wise)
            by_item = sorted(rows, key=lambda r: r[1], reverse=True)
            order = sorted(by_item, key=lambda r: -r[2])
        else:
            order = sorted(rows, key=lambda r, rel=rel: (-r[2], sign * rel[r[1]], r[0]))
        kept += [row for row, _, _ in order[:m]]
    cut = [preds[row] for row in sorted(kept)]
    names = ["P@2", "P@5", "AP", "RR", "Rprec", "nDCG@5", "R@10", "num_ret"]
    t, p = _frames(truth, preds)
    _, pc = _frames(truth, cut)
    for extra in ([], ["bpref"]):
        got = receval.evaluate(t, p, names + extra, relevance_threshold=2, ties=ties,
                               max_list=m, silence=SILENCE).per_user
        want = receval.evaluate(t, pc, names + extra, relevance_threshold=2, ties=ties,
                                silence=SILENCE).per_user
        pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize("ties", ["stable", "item", "pessimistic", "optimistic"])
def test_torch_engine_gives_the_numba_numbers(ties: str) -> None:
    """evaluate(engine='torch') builds the judged items' ranks and applies max_list itself:
    the numba engine's per-user values, bit for bit (CPU)."""
    pytest.importorskip("torch")
    truth, preds = _random(7, n_users=30)
    t, p = _frames(truth, preds)
    names = ["bpref", "RBP@0.8", "RBP_resid", "ERR@5", "Judged@5", "iprec@0.3", "11pt_avg",
             "Rprec_mult@0.6", "num_ret", "P@3", "AP", "nDCG@5"]
    for max_list in (None, 4):
        a = receval.evaluate(t, p, names, relevance_threshold=2, ties=ties, max_list=max_list,
                             silence=SILENCE)
        b = receval.evaluate(t, p, names, relevance_threshold=2, ties=ties, max_list=max_list,
                             engine="torch", silence=SILENCE)
        pd.testing.assert_frame_equal(a.per_user, b.per_user, check_exact=True)
        assert a.summary == b.summary


def test_a_trec_eval_m_list_with_repeated_cutoffs() -> None:
    from receval.measures.spec import parse_metrics

    specs = parse_metrics("P.5,10,iprec_at_recall.0.5,0.6,ndcg_cut.10")
    assert [s.canonical for s in specs] == ["P@5", "P@10", "iprec@0.5", "iprec@0.6",
                                            "nDCG@10"]
