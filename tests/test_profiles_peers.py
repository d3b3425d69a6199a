"""Every profile against the real tool, number for number, on random and adversarial inputs.

The peers are test dependencies (``.ci/peers.txt`` lists the pip commands CI runs):
pytrec-eval-terrier (trec_eval 9.0.8), ranx, torchmetrics (on torch 2.13.0 CPU), recommenders,
ml-metrics (Kaggle's apk), scikit-learn and pyspark (``tests/test_profiles_spark.py``).
``pytest.importorskip`` only guards a machine that cannot install one. TensorFlow is not
installed: its profile is checked against the numbers of peer-semantics.md in
``tests/test_profiles.py``. The Surprise FAQ function is reproduced below from its source.

Inputs are lists of ``(user, item, rating)`` and ``(user, item, score)`` rows; each tool gets
them in its own format, in the same row order (the order is what "stable" ties keep).
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import receval
from receval.exceptions import UndefinedMetricWarning

Rows = list[tuple[Any, Any, float]]
KS = (1, 2, 3, 5, 10, 20)  # 10 and 20 exceed the largest generated catalogue (8 items)
TOL = 1e-9
TOL32 = 1e-6  # torchmetrics computes in float32

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def receval_run(truth: Rows, preds: Rows, metrics: Sequence[str], profile: str,
                **options: Any) -> receval.Result:
    t = pd.DataFrame(truth, columns=["user", "item", "rating"])
    p = pd.DataFrame(preds, columns=["user", "item", "score"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return receval.evaluate(t, p, list(metrics), profile=profile, **options)


def per_user(result: receval.Result) -> dict[Any, dict[str, float]]:
    frame = result.per_user.set_index("user")
    return {u: {m: float(v) for m, v in row.items()} for u, row in frame.iterrows()}


def assert_close(got: float, want: float, tol: float, what: str) -> None:
    if math.isnan(want) and math.isnan(got):
        return
    assert abs(got - want) <= tol, f"{what}: receval {got!r} vs tool {want!r}"


def users_of(rows: Rows) -> list[Any]:
    return list(dict.fromkeys(r[0] for r in rows))


# --- inputs ----------------------------------------------------------------------------------

TIED_SCORES = (-2.0, -0.5, 0.0, 0.25, 1.0, 1.0000000001, 2.0, 3.0)


@st.composite
def datasets(draw: st.DrawFn, *, graded: bool = True, ties: bool = True,
             duplicates: bool = False, int_items: bool = False, ratings: Sequence[float] = (),
             ) -> tuple[Rows, Rows]:
    """Random truth and predictions: up to 5 users and 8 items, users on one side only,
    lists shorter than k, users with nothing relevant (rating 0), tied and non-positive scores.
    """
    n_users = draw(st.integers(1, 5))
    n_items = draw(st.integers(1, 8))
    pairs = [(u, i) for u in range(n_users) for i in range(n_items)]
    pick = st.sampled_from(pairs)
    t_pairs = draw(st.lists(pick, min_size=1, max_size=len(pairs) + 3, unique=not duplicates))
    p_pairs = draw(st.lists(pick, min_size=1, max_size=len(pairs) + 3, unique=not duplicates))
    levels = ratings or ((0, 1, 2, 3) if graded else (1,))
    rates = [float(draw(st.sampled_from(levels))) for _ in t_pairs]
    if ties:
        scores = [draw(st.sampled_from(TIED_SCORES)) for _ in p_pairs]
    else:  # distinct even in float32, some of them <= 0
        perm = draw(st.permutations(range(len(p_pairs))))
        scores = [float(x) - len(p_pairs) / 3 for x in perm]

    def item(i: int) -> Any:
        return 7 + 3 * i if int_items else f"i{i}"

    truth = [(f"u{u}", item(i), r) for (u, i), r in zip(t_pairs, rates, strict=True)]
    preds = [(f"u{u}", item(i), s) for (u, i), s in zip(p_pairs, scores, strict=True)]
    return truth, preds


def adversarial() -> dict[str, tuple[Rows, Rows]]:
    """Hand-made edge cases every tool sees."""
    e1_truth = [("u1", "a", 1.0), ("u1", "c", 1.0), ("u1", "f", 1.0)]
    e1_preds = [("u1", x, s) for x, s in zip("abcde", (5.0, 4.0, 3.0, 2.0, 1.0), strict=True)]
    return {
        "e1": (e1_truth, e1_preds),
        "all_tied": ([("u1", "b", 1.0), ("u1", "d", 2.0), ("u2", "a", 1.0)],
                     [("u1", x, 1.0) for x in "abcdef"] + [("u2", x, 0.5) for x in "ba"]),
        "short_lists": ([("u1", x, 1.0) for x in "abcdefgh"],
                        [("u1", "a", 0.3), ("u1", "z", 0.2)]),
        "nothing_relevant": ([("u1", "a", 0.0), ("u1", "b", 0.0), ("u2", "a", 3.0)],
                             [("u1", "a", 0.9), ("u1", "b", 0.8), ("u2", "a", 0.7)]),
        "one_side_only": ([("u1", "a", 1.0), ("u2", "b", 2.0)],
                          [("u1", "a", 1.0), ("u1", "b", 0.5), ("u3", "a", 1.0)]),
        "nonpositive_scores": ([("u1", "a", 1.0), ("u1", "b", 1.0), ("u1", "c", 1.0)],
                               [("u1", "a", 0.0), ("u1", "b", -1.0), ("u1", "c", 2.0),
                                ("u1", "d", -0.5)]),
        "float32_ties": ([("u1", "x", 1.0)], [("u1", "x", 1.0), ("u1", "b", 1.000000001)]),
        "graded": ([("u1", "a", 1.0), ("u1", "c", 2.0), ("u1", "f", 3.0), ("u1", "g", 0.0)],
                   [("u1", x, s) for x, s in zip("abcdeg", (6.0, 5, 4, 3, 2, 1), strict=True)]),
    }


ADVERSARIAL = adversarial()


# --- trec_eval (pytrec-eval-terrier 0.5.11 = trec_eval 9.0.8) --------------------------------

TREC_METRICS = {**{f"P@{k}": f"P_{k}" for k in KS}, **{f"R@{k}": f"recall_{k}" for k in KS},
                **{f"AP@{k}": f"map_cut_{k}" for k in KS},
                **{f"nDCG@{k}": f"ndcg_cut_{k}" for k in KS},
                **{f"Hit@{k}": f"success_{k}" for k in KS},
                "AP": "map", "nDCG": "ndcg", "Rprec": "Rprec", "RR": "recip_rank"}


def trec_eval(truth: Rows, preds: Rows) -> dict[str, dict[str, float]]:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for u, i, r in truth:
        qrels[u][str(i)] = int(r)
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for u, i, s in preds:
        run[u][str(i)] = float(s)
    cut = ",".join(map(str, KS))
    measures = {f"P.{cut}", f"recall.{cut}", f"map_cut.{cut}", f"ndcg_cut.{cut}",
                f"success.{cut}", "map", "ndcg", "Rprec", "recip_rank"}
    res = pytrec_eval.RelevanceEvaluator(dict(qrels), measures).evaluate(dict(run))
    return {u: {m: vals[t] for m, t in TREC_METRICS.items()} for u, vals in res.items()}


def check_trec_eval(truth: Rows, preds: Rows) -> None:
    want = trec_eval(truth, preds)
    if not want:  # no query on both sides: trec_eval reports nothing, receval raises
        with pytest.raises(receval.ReceValError, match="no user"):
            receval_run(truth, preds, list(TREC_METRICS), "trec_eval")
        return
    got = receval_run(truth, preds, list(TREC_METRICS), "trec_eval")
    got_users = per_user(got)
    assert set(map(str, got_users)) == set(want)
    for u, values in got_users.items():
        for m, v in values.items():
            assert_close(v, want[str(u)][m], TOL, f"trec_eval {m} user {u}")
    for m in TREC_METRICS:  # trec_eval's summary: the mean over the queries
        assert_close(got.summary[m], float(np.mean([w[m] for w in want.values()])), TOL, m)


@SETTINGS
@given(datasets())
def test_trec_eval_random(data: tuple[Rows, Rows]) -> None:
    check_trec_eval(*data)


@SETTINGS
@given(datasets(int_items=True))
def test_trec_eval_random_integer_ids_tie_as_text(data: tuple[Rows, Rows]) -> None:
    check_trec_eval(*data)


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_trec_eval_adversarial(case: str) -> None:
    check_trec_eval(*ADVERSARIAL[case])


# --- ranx 0.3.21 -----------------------------------------------------------------------------

RANX_METRICS = {**{f"P@{k}": f"precision@{k}" for k in KS},
                **{f"R@{k}": f"recall@{k}" for k in KS}, **{f"F1@{k}": f"f1@{k}" for k in KS},
                **{f"AP@{k}": f"map@{k}" for k in KS}, **{f"nDCG@{k}": f"ndcg@{k}" for k in KS},
                **{f"RR@{k}": f"mrr@{k}" for k in KS},
                **{f"Hit@{k}": f"hit_rate@{k}" for k in KS},
                "AP": "map", "RR": "mrr", "Rprec": "r-precision"}


def ranx_eval(truth: Rows, preds: Rows, metrics: dict[str, str],
              rel_lvl: int = 1) -> dict[str, float]:
    ranx = pytest.importorskip("ranx")
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for u, i, r in truth:
        qrels[u][str(i)] = int(r)
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for u, i, s in preds:  # a Run keeps this insertion order for tied scores
        run[u][str(i)] = float(s)
    names = [f"{t}-l{rel_lvl}" if rel_lvl != 1 else t for t in metrics.values()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ranx.evaluate(ranx.Qrels(dict(qrels)), ranx.Run(dict(run)), names,
                            make_comparable=True)
    if len(names) == 1:
        res = {names[0]: res}
    return {m: float(res[n]) for m, n in zip(metrics, names, strict=True)}


def check_ranx(truth: Rows, preds: Rows) -> None:
    want = ranx_eval(truth, preds, RANX_METRICS)
    got = receval_run(truth, preds, list(RANX_METRICS), "ranx").summary
    for m in RANX_METRICS:
        assert_close(got[m], want[m], TOL, f"ranx {m}")
    burges = {f"nDCG@{k}": f"ndcg_burges@{k}" for k in KS}
    want = ranx_eval(truth, preds, burges)
    got = receval_run(truth, preds, list(burges), "ranx", gain="exponential").summary
    for m in burges:
        assert_close(got[m], want[m], TOL, f"ranx burges {m}")
    levels = {"P@5": "precision@5", "AP@10": "map@10", "nDCG@10": "ndcg@10",
              "Rprec": "r-precision"}
    want = ranx_eval(truth, preds, levels, rel_lvl=2)
    got = receval_run(truth, preds, list(levels), "ranx", relevance_threshold=2).summary
    for m in levels:
        assert_close(got[m], want[m], TOL, f"ranx -l2 {m}")


@SETTINGS
@given(datasets())
def test_ranx_random(data: tuple[Rows, Rows]) -> None:
    check_ranx(*data)


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_ranx_adversarial(case: str) -> None:
    check_ranx(*ADVERSARIAL[case])


def popularity_frames(seed: int = 7, n_users: int = 240, n_extra: int = 30, n_items: int = 400,
                      k: int = 100) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A popularity model on recommender data, as ranx is usually fed: integer counts as
    scores (a few distinct values, so long runs of ties), top ``k`` unseen items per user, in a
    shuffled row order; ``n_extra`` users of the run have no truth (``make_comparable`` drops
    them) and some truth users have no list."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 12, n_items)  # popularity: 400 items, 12 distinct counts
    items = np.array([f"i{j}" for j in range(n_items)], dtype=object)
    truth_rows, run_rows = [], []
    for u in range(n_users + n_extra):
        user = f"u{u}"
        if u < n_users:
            liked = rng.choice(n_items, int(rng.integers(1, 25)), replace=False)
            truth_rows += [(user, items[j], int(rng.integers(1, 3))) for j in liked]
        if u % 17 == 5:  # a truth user without a list
            continue
        seen = rng.choice(n_items, 40, replace=False)
        unseen = np.setdiff1d(np.arange(n_items), seen)
        top = unseen[np.argsort(-counts[unseen], kind="stable")[:k]]
        top = rng.permutation(top)  # the model's output order is not the score order
        run_rows += [(user, items[j], float(counts[j])) for j in top]
    truth = pd.DataFrame(truth_rows, columns=["user", "item", "rating"])
    run = pd.DataFrame(run_rows, columns=["user", "item", "score"])
    return truth, run.sample(frac=1.0, random_state=seed).reset_index(drop=True)


RANX_TIED = {**{f"P@{k}": f"precision@{k}" for k in (1, 5, 10, 20, 50)},
             **{f"R@{k}": f"recall@{k}" for k in (5, 10, 20, 50)},
             **{f"AP@{k}": f"map@{k}" for k in (10, 50)},
             **{f"nDCG@{k}": f"ndcg@{k}" for k in (5, 10, 50)},
             **{f"Hit@{k}": f"hit_rate@{k}" for k in (1, 10)}, "RR": "mrr", "AP": "map"}


def ranx_from_df(truth: pd.DataFrame, run: pd.DataFrame, metrics: dict[str, str],
                 make_comparable: bool = True) -> dict[str, dict[str, float]]:
    """ranx as usually called on recommender frames: Qrels.from_df, Run.from_df, evaluate;
    per user."""
    ranx = pytest.importorskip("ranx")
    ids = {"user": object, "item": object}  # ranx asserts object columns (pandas 3: str)
    truth, run = truth.astype(ids), run.astype(ids)
    qrels = ranx.Qrels.from_df(truth, q_id_col="user", doc_id_col="item", score_col="rating")
    r = ranx.Run.from_df(run, q_id_col="user", doc_id_col="item", score_col="score")
    if not make_comparable:  # ranx then wants the same queries on both sides
        qrels = ranx.Qrels.from_df(truth[truth.user.isin(run.user)], q_id_col="user",
                                   doc_id_col="item", score_col="rating")
        r = ranx.Run.from_df(run[run.user.isin(truth.user)], q_id_col="user",
                             doc_id_col="item", score_col="score")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx.evaluate(qrels, r, list(metrics.values()), make_comparable=make_comparable)
    return {m: dict(r.scores[name]) for m, name in metrics.items()}


def test_ranx_tied_popularity_run_number_for_number() -> None:
    """ranx orders tied scores with numba's unstable quicksort, twice: ties='ranx' gives its
    numbers per user and on average, to the last bit of the mean."""
    truth, run = popularity_frames()
    want = ranx_from_df(truth, run, RANX_TIED)
    got = receval_run(list(truth.itertuples(index=False)), list(run.itertuples(index=False)),
                      list(RANX_TIED), "ranx")
    frame = got.per_user.set_index("user")
    assert sorted(frame.index) == sorted(want["P@10"])  # the truth's users, run-only dropped
    for m in RANX_TIED:
        for user, value in want[m].items():
            assert_close(frame.loc[user, m], value, TOL, f"ranx {m} user {user}")
        assert_close(got.summary[m], float(np.mean(list(want[m].values()))), TOL, m)
    # the ties matter: input order (ties='stable') gives other numbers
    stable = receval_run(list(truth.itertuples(index=False)),
                         list(run.itertuples(index=False)), ["R@10", "nDCG@10"], "ranx",
                         ties="stable").summary
    assert abs(stable["R@10"] - got.summary["R@10"]) > 1e-4


def test_ranx_without_make_comparable_orders_ties_otherwise() -> None:
    """What docs/profiles.md says: ranx itself gives other numbers on ties without
    make_comparable (one sort instead of two), so ties='ranx' follows make_comparable=True."""
    truth, run = popularity_frames()
    metrics = {"R@10": "recall@10", "nDCG@10": "ndcg@10"}
    once = ranx_from_df(truth, run, metrics, make_comparable=False)
    twice = ranx_from_df(truth, run, metrics)
    common = sorted(once["R@10"])
    assert any(once["R@10"][u] != twice["R@10"][u] for u in common)


# --- torchmetrics 1.9.0 ----------------------------------------------------------------------

def torchmetrics_eval(truth: Rows, preds: Rows, k_metrics: dict[str, Callable[..., Any]],
                      **kwargs: Any) -> dict[str, float]:
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    rating = {(u, i): r for u, i, r in truth}
    codes = {u: c for c, u in enumerate(users_of(preds))}
    idx = torch.tensor([codes[u] for u, _, _ in preds], dtype=torch.long)
    scores = torch.tensor([s for _, _, s in preds], dtype=torch.float32)
    graded = [rating.get((u, i), 0.0) for u, i, _ in preds]
    binary = torch.tensor([g >= 1 for g in graded], dtype=torch.long)
    gains = torch.tensor([int(g) if g >= 1 else 0 for g in graded], dtype=torch.long)
    out = {}
    for name, make in k_metrics.items():
        metric = make(**kwargs)
        target = gains if name.startswith("nDCG") else binary
        out[name] = float(metric(scores, target, indexes=idx))
    return out


def tm_metrics() -> dict[str, Callable[..., Any]]:
    tr = pytest.importorskip("torchmetrics.retrieval")

    def at(cls: Any, k: int | None) -> Callable[..., Any]:
        return lambda **kw: cls(top_k=k, **kw)

    out: dict[str, Callable[..., Any]] = {}
    for k in KS:
        out[f"P@{k}"] = at(tr.RetrievalPrecision, k)
        out[f"R@{k}"] = at(tr.RetrievalRecall, k)
        out[f"AP@{k}"] = at(tr.RetrievalMAP, k)
        out[f"RR@{k}"] = at(tr.RetrievalMRR, k)
        out[f"nDCG@{k}"] = at(tr.RetrievalNormalizedDCG, k)
        out[f"Hit@{k}"] = at(tr.RetrievalHitRate, k)
    out["AP"] = at(tr.RetrievalMAP, None)
    out["RR"] = at(tr.RetrievalMRR, None)
    out["nDCG"] = at(tr.RetrievalNormalizedDCG, None)
    out["Rprec"] = lambda **kw: tr.RetrievalRPrecision(**kw)
    return out


def check_torchmetrics(truth: Rows, preds: Rows, only: Sequence[str] | None = None,
                       **options: Any) -> None:
    metrics = tm_metrics()
    if only is not None:
        metrics = {m: f for m, f in metrics.items() if m.split("@")[0] in only}
    action = {"zero": "neg", "one": "pos", "skip": "skip"}
    for empty in ("zero", "one", "skip"):
        want = torchmetrics_eval(truth, preds, metrics, empty_target_action=action[empty])
        got = receval_run(truth, preds, list(metrics), "torchmetrics", empty=empty,
                          **options).summary
        for m in metrics:
            # every group skipped: torchmetrics returns tensor(0.0) (base.py compute), as
            # the profile's all_skipped="zero" does
            assert_close(got[m], want[m], TOL32, f"torchmetrics {m} ({empty})")


def distinct_float32(preds: Rows) -> bool:
    per: dict[Any, set[float]] = defaultdict(set)
    for u, _, s in preds:
        v = float(np.float32(s))
        if v in per[u]:
            return False
        per[u].add(v)
    return True


@SETTINGS
@given(datasets(ties=False))
def test_torchmetrics_random(data: tuple[Rows, Rows]) -> None:
    # tie-free: torch.topk / argsort order ties in an unspecified way
    check_torchmetrics(*data)


@SETTINGS
@given(datasets(ties=True))
def test_torchmetrics_random_ties_ndcg(data: tuple[Rows, Rows]) -> None:
    # nDCG averages over tied groups (_tie_average_dcg), so ties are fair game
    check_torchmetrics(*data, only=["nDCG"])


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_torchmetrics_adversarial(case: str) -> None:
    truth, preds = ADVERSARIAL[case]
    check_torchmetrics(truth, preds, only=["nDCG"])
    if distinct_float32(preds):
        check_torchmetrics(truth, preds)


def test_torchmetrics_adaptive_k() -> None:
    tr = pytest.importorskip("torchmetrics.retrieval")
    for truth, preds in ADVERSARIAL.values():
        if not distinct_float32(preds):
            continue
        for k in KS:
            want = torchmetrics_eval(
                truth, preds, {f"P@{k}": lambda k=k, **kw: tr.RetrievalPrecision(
                    top_k=k, adaptive_k=True, **kw)})
            got = receval_run(truth, preds, [f"P@{k}"], "torchmetrics",
                              precision_denominator="returned").summary
            assert_close(got[f"P@{k}"], want[f"P@{k}"], TOL32, f"adaptive P@{k}")


# --- scikit-learn ndcg_score (the torchmetrics definition, in float64) -----------------------

@SETTINGS
@given(datasets(ties=True))
def test_sklearn_ndcg_score(data: tuple[Rows, Rows]) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    truth, preds = data
    rating = {(u, i): r for u, i, r in truth}
    by_user: dict[Any, list[tuple[float, float]]] = defaultdict(list)
    for u, i, s in preds:
        by_user[u].append((rating.get((u, i), 0.0), s))
    assume(any(len(v) >= 2 for v in by_user.values()))
    names = [f"nDCG@{k}" for k in KS]
    got = per_user(receval_run(truth, preds, names, "torchmetrics", score_dtype="float64"))
    for u, rows in by_user.items():
        if len(rows) < 2:  # ndcg_score needs two documents
            continue
        y_true = np.array([[r if r >= 1 else 0.0 for r, _ in rows]])
        y_score = np.array([[s for _, s in rows]])
        for k in KS:
            want = metrics.ndcg_score(y_true, y_score, k=k)
            assert_close(got[u][f"nDCG@{k}"], want, TOL, f"sklearn ndcg@{k} user {u}")


# --- Microsoft Recommenders 1.2.1 python_evaluation ------------------------------------------

REC_KS = (1, 3, 5, 10, 20)


def recommenders_eval(truth: Rows, preds: Rows) -> dict[str, float]:
    pe = pytest.importorskip("recommenders.evaluation.python_evaluation")
    t = pd.DataFrame(truth, columns=["userID", "itemID", "rating"])
    p = pd.DataFrame(preds, columns=["userID", "itemID", "prediction"])
    kw = {"col_user": "userID", "col_item": "itemID", "col_rating": "rating",
          "col_prediction": "prediction"}
    out: dict[str, float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in REC_KS:
            out[f"P@{k}"] = pe.precision_at_k(t, p, k=k, **kw)
            out[f"R@{k}"] = pe.recall_at_k(t, p, k=k, **kw)
            out[f"AP@{k}"] = pe.map_at_k(t, p, k=k, **kw)
            out[f"map@{k}"] = pe.map(t, p, k=k, **kw)
            for score_type in ("binary", "raw", "exp"):
                out[f"nDCG@{k}/{score_type}"] = pe.ndcg_at_k(t, p, k=k, score_type=score_type,
                                                             **kw)
        if set(zip(t.userID, t.itemID, strict=True)) & set(zip(p.userID, p.itemID, strict=True)):
            out["RMSE"] = pe.rmse(t, p, **kw)
            out["MAE"] = pe.mae(t, p, **kw)
    return out


def check_recommenders(truth: Rows, preds: Rows) -> None:
    if not set(users_of(truth)) & set(users_of(preds)):
        return  # recommenders divides by 0 users; receval raises (tested below)
    want = recommenders_eval(truth, preds)
    main = [f"{f}@{k}" for k in REC_KS for f in ("P", "R", "AP", "nDCG")]
    main += [m for m in ("RMSE", "MAE") if m in want]
    got = receval_run(truth, preds, main, "recommenders").summary
    for m in main:
        key = f"{m}/binary" if m.startswith("nDCG") else m
        assert_close(got[m], want[key], TOL, f"recommenders {m}")
    maps = [f"AP@{k}" for k in REC_KS]
    got = receval_run(truth, preds, maps, "recommenders", ap_normalizer="relevant").summary
    for k in REC_KS:
        assert_close(got[f"AP@{k}"], want[f"map@{k}"], TOL, f"recommenders map k={k}")
    for gain, score_type in (("linear", "raw"), ("exponential", "exp")):
        names = [f"nDCG@{k}" for k in REC_KS]
        got = receval_run(truth, preds, names, "recommenders", gain=gain).summary
        for m in names:
            assert_close(got[m], want[f"{m}/{score_type}"], TOL, f"recommenders {m} {gain}")


@SETTINGS
@given(datasets(ratings=(1, 2, 3, 4, 5)))
def test_recommenders_random(data: tuple[Rows, Rows]) -> None:
    check_recommenders(*data)


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_recommenders_adversarial(case: str) -> None:
    truth, preds = ADVERSARIAL[case]
    truth = [(u, i, r + 1.0) for u, i, r in truth]  # recommenders ratings are 1-5 stars
    check_recommenders(truth, preds)


def test_recommenders_no_common_user() -> None:
    truth, preds = [("u1", "a", 1.0)], [("u2", "a", 1.0)]
    with pytest.raises(receval.ReceValError, match="no user"):
        receval_run(truth, preds, ["P@5"], "recommenders")


# --- Kaggle apk / mapk (ml_metrics 0.1.4) ----------------------------------------------------

def kaggle_eval(truth: Rows, preds: Rows, k: int) -> tuple[dict[Any, float], float]:
    ml_metrics = pytest.importorskip("ml_metrics")
    actual: dict[Any, list[Any]] = defaultdict(list)
    for u, i, _ in truth:
        actual[u].append(i)
    ranked: dict[Any, list[tuple[float, Any]]] = defaultdict(list)
    for u, i, s in preds:
        ranked[u].append((s, i))
    users = list(actual)
    predicted = {u: [i for _, i in sorted(ranked[u], key=lambda x: -x[0])] for u in users}
    per = {u: ml_metrics.apk(actual[u], predicted[u], k) for u in users}
    mean = ml_metrics.mapk([actual[u] for u in users], [predicted[u] for u in users], k)
    return per, float(mean)


def check_kaggle(truth: Rows, preds: Rows) -> None:
    names = [f"AP@{k}" for k in KS]
    got = receval_run(truth, preds, names, "kaggle")
    got_users = per_user(got)
    for k in KS:
        per, mean = kaggle_eval(truth, preds, k)
        assert set(got_users) == set(per)
        for u, v in per.items():
            assert_close(got_users[u][f"AP@{k}"], v, TOL, f"apk@{k} user {u}")
        assert_close(got.summary[f"AP@{k}"], mean, TOL, f"mapk@{k}")


@SETTINGS
@given(datasets(graded=False, duplicates=True))
def test_kaggle_random_with_duplicates(data: tuple[Rows, Rows]) -> None:
    check_kaggle(*data)


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_kaggle_adversarial(case: str) -> None:
    check_kaggle(*ADVERSARIAL[case])


def test_kaggle_empty_actual_is_one() -> None:
    ml_metrics = pytest.importorskip("ml_metrics")
    # a truth user with nothing relevant under a threshold is an empty `actual`
    truth = [("u1", "a", 1.0), ("u2", "b", 1.0), ("u2", "c", 5.0)]
    preds = [("u1", "a", 1.0), ("u2", "c", 1.0)]
    got = receval_run(truth, preds, ["AP@5"], "kaggle", relevance_threshold=3).summary
    want = ml_metrics.mapk([[], ["c"]], [["a"], ["c"]], 5)
    assert_close(got["AP@5"], float(want), TOL, "mapk with an empty actual")


# --- Surprise FAQ precision_recall_at_k ------------------------------------------------------
# Reproduced from the documented source: https://surprise.readthedocs.io/en/stable/FAQ.html
# ("How to compute precision@k and recall@k"), examples/precision_recall_at_k.py of
# NicolasHug/Surprise (v1.1.1+, where an undefined value is 0, PR #349).

def precision_recall_at_k(predictions: list[tuple[Any, Any, float, float, Any]], k: int = 10,
                          threshold: float = 3.5) -> tuple[dict[Any, float], dict[Any, float]]:
    """Return precision and recall at k metrics for each user"""
    # First map the predictions to each user.
    user_est_true = defaultdict(list)
    for uid, _, true_r, est, _ in predictions:
        user_est_true[uid].append((est, true_r))

    precisions = dict()
    recalls = dict()
    for uid, user_ratings in user_est_true.items():

        # Sort user ratings by estimated value
        user_ratings.sort(key=lambda x: x[0], reverse=True)

        # Number of relevant items
        n_rel = sum((true_r >= threshold) for (_, true_r) in user_ratings)

        # Number of recommended items in top k
        n_rec_k = sum((est >= threshold) for (est, _) in user_ratings[:k])

        # Number of relevant and recommended items in top k
        n_rel_and_rec_k = sum(
            ((true_r >= threshold) and (est >= threshold))
            for (est, true_r) in user_ratings[:k]
        )

        # Precision@K: Proportion of recommended items that are relevant
        # When n_rec_k is 0, Precision is undefined. We here set it to 0.

        precisions[uid] = n_rel_and_rec_k / n_rec_k if n_rec_k != 0 else 0

        # Recall@K: Proportion of relevant items that are recommended
        # When n_rel is 0, Recall is undefined. We here set it to 0.

        recalls[uid] = n_rel_and_rec_k / n_rel if n_rel != 0 else 0

    return precisions, recalls


@st.composite
def surprise_sets(draw: st.DrawFn) -> tuple[Rows, Rows]:
    """Test-set predictions, each with its true rating (1-5 in half stars), est with ties."""
    n = draw(st.integers(1, 25))
    rows = draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 9)), min_size=n,
                         max_size=n, unique=True))
    stars = st.sampled_from([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0])
    est = st.sampled_from([1.0, 2.3, 3.4, 3.5, 3.6, 4.1, 4.5, 4.9, 5.0])
    truth = [(f"u{u}", f"i{i}", draw(stars)) for u, i in rows]
    preds = [(u, i, draw(est)) for u, i, _ in truth]
    return truth, preds


def check_surprise(truth: Rows, preds: Rows) -> None:
    true_r = {(u, i): r for u, i, r in truth}
    predictions = [(u, i, true_r[(u, i)], s, {}) for u, i, s in preds]
    names = [f"{f}@{k}" for k in KS for f in ("P", "R")]
    got = receval_run(truth, preds, [*names, "RMSE", "MAE"], "surprise")
    got_users = per_user(got)
    for k in KS:
        precisions, recalls = precision_recall_at_k(predictions, k=k, threshold=3.5)
        assert set(got_users) == set(precisions)
        for u in precisions:
            assert_close(got_users[u][f"P@{k}"], precisions[u], TOL, f"surprise P@{k} {u}")
            assert_close(got_users[u][f"R@{k}"], recalls[u], TOL, f"surprise R@{k} {u}")
        assert_close(got.summary[f"P@{k}"], float(np.mean(list(precisions.values()))), TOL,
                     f"P@{k}")
        assert_close(got.summary[f"R@{k}"], float(np.mean(list(recalls.values()))), TOL,
                     f"R@{k}")
    errors = np.array([est - true for _, _, true, est, _ in predictions])
    # surprise.accuracy.rmse / mae
    assert_close(got.summary["RMSE"], float(np.sqrt(np.mean(errors**2))), TOL, "RMSE")
    assert_close(got.summary["MAE"], float(np.mean(np.abs(errors))), TOL, "MAE")


@SETTINGS
@given(surprise_sets())
def test_surprise_random(data: tuple[Rows, Rows]) -> None:
    check_surprise(*data)


def test_surprise_adversarial() -> None:
    truth = [("u1", "a", 5.0), ("u1", "b", 2.0), ("u2", "a", 1.0), ("u2", "b", 2.0),
             ("u3", "a", 4.0), ("u3", "b", 4.0)]
    preds = [("u1", "a", 3.5), ("u1", "b", 3.5), ("u2", "a", 1.0), ("u2", "b", 4.0),
             ("u3", "a", 2.0), ("u3", "b", 1.0)]
    check_surprise(truth, preds)
