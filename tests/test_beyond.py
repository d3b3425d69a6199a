"""Beyond-accuracy metrics (receval.beyond) against independent oracles written here from
each formula with plain Python loops, on random and adversarial lists."""

from __future__ import annotations

import math
from itertools import combinations

import numba
import numpy as np
import pandas as pd
import pytest

import receval
from receval.beyond import catalogue as cat
from receval.beyond import diversity as div
from receval.beyond import novelty as nov
from receval.beyond import popularity as pop
from receval.beyond import serendipity as ser
from receval.beyond.compute import compute
from receval.beyond.context import context
from receval.beyond.frames import beyond_metrics, read_features
from receval.beyond.names import parse_beyond, split_metrics
from receval.beyond.report_data import coverage_novelty, long_tail_exposure, most_recommended
from receval.beyond.settings import BeyondOptions
from receval.beyond.similarity import SimArrays
from receval.exceptions import ReceValError

N_ITEMS = 12


def _random_case(seed: int, n_users: int = 25, k: int = 6, n_feat: int = 4):
    """Lists (some empty, some short), training rows, truth and features, as codes."""
    rng = np.random.default_rng(seed)
    top = np.full((n_users, k), -1, dtype=np.int64)
    for u in range(n_users):
        m = int(rng.integers(0, k + 1))
        top[u, :m] = rng.choice(N_ITEMS, size=m, replace=False)
    n_train = 80
    tu = rng.integers(0, n_users + 5, n_train)
    ti = rng.integers(0, N_ITEMS - 2, n_train)  # the last two items are cold
    truth = [sorted(set(rng.choice(N_ITEMS, size=int(rng.integers(0, 4))).tolist()))
             for _ in range(n_users)]
    feats = rng.integers(0, 2, (N_ITEMS, n_feat)).astype(float)
    feats[3] = 0.0  # an item without features
    return top, tu, ti, truth, feats


def _lists(top: np.ndarray) -> list[list[int]]:
    return [[int(c) for c in row if c >= 0] for row in top]


def _ctx(top, tu, ti, truth, feats, catalogue=None):
    ptr = np.zeros(len(truth) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(t) for t in truth])
    items = np.array([i for t in truth for i in t], dtype=np.int64)
    return context(tu, ti, N_ITEMS, row_users=np.arange(top.shape[0]), truth=(ptr, items),
                   features=feats, catalogue=catalogue)


def _train_sets(tu, ti, n_users):
    sets = [set() for _ in range(n_users)]
    for u, i in zip(tu.tolist(), ti.tolist(), strict=True):
        if u < n_users:
            sets[u].add(i)
    return sets


def _close(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == pytest.approx(b, rel=1e-12, abs=1e-12)


def _close_arrays(got, want):
    assert len(got) == len(want)
    for g, w in zip(np.asarray(got).tolist(), want, strict=True):
        assert _close(g, w), (got, want)


SEEDS = [0, 1, 2, 3]


# --- catalogue metrics ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_coverage_matches_set_oracle(seed):
    top, tu, ti, truth, feats = _random_case(seed)
    ctx = _ctx(top, tu, ti, truth, feats)
    catalogue = set(ti.tolist()) | {i for t in truth for i in t}
    for k in (1, 3, 6):
        shown = {i for row in _lists(top[:, :k]) for i in row}
        assert _close(cat.coverage(top[:, :k], ctx.catalogue),
                      len(shown & catalogue) / len(catalogue))
        assert _close(cat.coverage(top[:, :k], ctx.catalogue, outside="count"),
                      len(shown) / len(catalogue))
        assert cat.coverage(top[:, :k], ctx.catalogue, count=True) == len(shown & catalogue)


@pytest.mark.parametrize("seed", SEEDS)
def test_distributional_coverage_matches_entropy_oracle(seed):
    top, *_ = _random_case(seed)
    for k in (2, 6):
        slots = [i for row in _lists(top[:, :k]) for i in row]
        counts = pd.Series(slots).value_counts()
        p = counts / len(slots)
        want = -sum(q * math.log2(q) for q in p)
        assert _close(cat.distributional_coverage(top[:, :k], N_ITEMS), want)
        want_e = -sum(q * math.log(q) for q in p) / len(counts)  # RecBole: ln, / distinct
        assert _close(cat.distributional_coverage(top[:, :k], N_ITEMS, base=math.e,
                                                  normalize="distinct"), want_e)


def _gini_oracle(x):
    x = sorted(x)
    n = len(x)
    return sum((2 * (i + 1) - n - 1) * v for i, v in enumerate(x)) / (n * sum(x)), n


@pytest.mark.parametrize("seed", SEEDS)
def test_gini_matches_sorted_oracle_every_switch(seed):
    top, tu, ti, truth, feats = _random_case(seed)
    ctx = _ctx(top, tu, ti, truth, feats)
    slots = [i for row in _lists(top) for i in row]
    expo = {i: slots.count(i) for i in range(N_ITEMS)}
    all_items = [i for i in range(N_ITEMS) if ctx.catalogue[i] or expo[i] > 0]
    g, n = _gini_oracle([expo[i] for i in all_items])
    assert _close(cat.gini(top, ctx.catalogue), g)
    assert _close(cat.gini(top, ctx.catalogue, denominator="n-1"), g * n / (n - 1))
    assert _close(cat.gini(top, ctx.catalogue, form="1-G"), 1 - g)
    rec = [expo[i] for i in range(N_ITEMS) if expo[i] > 0]
    g2, n2 = _gini_oracle(rec)
    assert _close(cat.gini(top, ctx.catalogue, scope="recommended", denominator="n-1"),
                  g2 * n2 / (n2 - 1))


@pytest.mark.parametrize("seed", SEEDS)
def test_personalization_matches_pairwise_oracle(seed):
    top, *_ = _random_case(seed, n_users=15)
    for k in (2, 6):
        lists = [set(r) for r in _lists(top[:, :k]) if r]
        pairs = list(combinations(lists, 2))
        want = 1 - sum(len(a & b) / k for a, b in pairs) / len(pairs)
        assert _close(div.personalization(top[:, :k], N_ITEMS, k), want)


# --- per-user metrics ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_novelty_matches_log_oracle_every_switch(seed):
    top, tu, ti, _truth, _feats = _random_case(seed)
    rows = len(ti)
    inter = {i: int((ti == i).sum()) for i in range(N_ITEMS)}
    pairs = set(zip(tu.tolist(), ti.tolist(), strict=True))
    users_of = {i: len({u for u, j in pairs if j == i}) for i in range(N_ITEMS)}
    n_users = len(set(tu.tolist()))
    lists = _lists(top)
    # Microsoft Recommenders: interactions, cold items add 0 but count, pooled over slots
    vals = [-math.log2(inter[i] / rows) if inter[i] else 0.0 for r in lists for i in r]
    item_n = nov.item_novelty(np.array([inter[i] for i in range(N_ITEMS)]), rows)
    assert _close(nov.novelty_slots(top, item_n), sum(vals) / len(vals))
    # RecTools: users, cold = 1 user, mean per user
    want = []
    for r in lists:
        v = [-math.log2(max(users_of[i], 1) / n_users) for i in r]
        want.append(sum(v) / len(v) if v else math.nan)
    item_u = nov.item_novelty(np.array([users_of[i] for i in range(N_ITEMS)]), n_users,
                              cold="one")
    _close_arrays(nov.novelty(top, item_u), want)
    # Evidently: cold items skipped; base 10
    want = []
    for r in lists:
        v = [-math.log10(users_of[i] / n_users) for i in r if users_of[i]]
        want.append(sum(v) / len(v) if v else math.nan)
    item_s = nov.item_novelty(np.array([users_of[i] for i in range(N_ITEMS)]), n_users,
                              base=10, cold="skip")
    _close_arrays(nov.novelty(top, item_s), want)


def _cos(a, b):
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else 0.0


def _cooc_oracle(tu, ti):
    users = {}
    for u, i in zip(tu.tolist(), ti.tolist(), strict=True):
        users.setdefault(i, set()).add(u)

    def sim(i, j):
        a, b = users.get(i, set()), users.get(j, set())
        return len(a & b) / math.sqrt(len(a) * len(b)) if a and b else 0.0
    return sim


@pytest.mark.parametrize("seed", SEEDS)
def test_diversity_matches_pairwise_oracle(seed):
    top, tu, ti, truth, feats = _random_case(seed)
    ctx = _ctx(top, tu, ti, truth, feats)
    co = _cooc_oracle(tu, ti)
    for kind, sim in (("features", lambda i, j: _cos(feats[i], feats[j])), ("cooccurrence", co)):
        want_nan, want_zero = [], []
        for r in _lists(top):
            pairs = list(combinations(r, 2))
            v = 1 - sum(sim(i, j) for i, j in pairs) / len(pairs) if pairs else math.nan
            want_nan.append(v)
            want_zero.append(v if pairs else 0.0)
        _close_arrays(div.diversity(top, SimArrays(ctx, kind)), want_nan)
        _close_arrays(div.diversity(top, SimArrays(ctx, kind), short="zero"), want_zero)


@pytest.mark.parametrize("seed", SEEDS)
def test_hamming_diversity_is_the_mean_pair_distance(seed):
    top, tu, ti, truth, _ = _random_case(seed)
    raw = np.random.default_rng(seed).integers(0, 3, (N_ITEMS, 5)).astype(float)
    ctx = context(tu, ti, N_ITEMS, features=raw)
    want = []
    for r in _lists(top):
        pairs = list(combinations(r, 2))
        want.append(sum(int((raw[i] != raw[j]).sum()) for i, j in pairs) / len(pairs)
                    if pairs else 0.0)
    _close_arrays(div.diversity(top, SimArrays(ctx, "hamming"), short="zero"), want)
    with pytest.raises(ReceValError, match="diversity only"):
        compute([parse_beyond("serendipity@3")], top, _ctx(top, tu, ti, truth, raw),
                BeyondOptions(similarity="hamming"))


@pytest.mark.parametrize("seed", SEEDS)
def test_serendipity_matches_each_definition(seed):
    top, tu, ti, truth, feats = _random_case(seed)
    ctx = _ctx(top, tu, ti, truth, feats)
    n_users = top.shape[0]
    train = _train_sets(tu, ti, n_users)
    rel_csr = (ctx.truth_indptr, ctx.truth_items)
    tr_csr = (ctx.train_indptr, ctx.train_items)
    for kind, sim in (("features", lambda i, j: _cos(feats[i], feats[j])),
                      ("cooccurrence", _cooc_oracle(tu, ti))):
        sims = SimArrays(ctx, kind)
        for all_rel in (False, True):
            want = []
            for u, r in enumerate(_lists(top)):
                if not train[u] or not r:
                    want.append(math.nan)
                    continue
                vals = [(1 - sum(sim(i, j) for j in train[u]) / len(train[u]))
                        * (1.0 if all_rel or i in truth[u] else 0.0) for i in r]
                want.append(sum(vals) / len(vals))
            _close_arrays(ser.serendipity(top, kind="auralist", relevant=rel_csr, train=tr_csr,
                                          sim=sims, interactions=ctx.interactions,
                                          n_catalogue=9, all_relevant=all_rel), want)
        want = []
        for u, r in enumerate(_lists(top)):
            if not train[u] or not set(r) & set(truth[u]):  # Evidently leaves them out
                want.append(math.nan)
                continue
            s = sum(sim(i, j) for j in train[u] for i in r if i in truth[u])
            want.append(1 - s / len(train[u]))
        _close_arrays(ser.serendipity(top, kind="evidently", relevant=rel_csr, train=tr_csr,
                                      sim=sims, interactions=ctx.interactions,
                                      n_catalogue=9), want)
    # RecTools: dense popularity rank of interaction counts, p(rank) - p(pop rank)
    counts = pd.Series(ti).value_counts()
    distinct = sorted(set(counts.tolist()), reverse=True)
    prank = {i: distinct.index(c) + 1 for i, c in counts.items()}
    n = int(ctx.catalogue.sum())
    want = []
    for u, r in enumerate(_lists(top)):
        vals = []
        for pos, i in enumerate(r, start=1):
            pu = (n + 1 - prank[i]) / n if i in prank else 0.0
            vals.append(max((n + 1 - pos) / n - pu, 0.0) * (i in truth[u]))
        want.append(sum(vals) / len(vals) if vals else math.nan)
    _close_arrays(ser.serendipity(top, kind="rectools", relevant=rel_csr, train=None, sim=None,
                                  interactions=ctx.interactions, n_catalogue=n), want)


def _head_oracle(popularity, share):
    order = sorted(range(len(popularity)), key=lambda i: (-popularity[i], i))
    total, cum, head = sum(popularity), 0, set()
    for i in order:
        if total == 0 or cum >= share * total:
            break
        head.add(i)
        cum += popularity[i]
    return head


@pytest.mark.parametrize("seed", SEEDS)
def test_popularity_bias_matches_loops(seed):
    top, tu, ti, truth, feats = _random_case(seed)
    ctx = _ctx(top, tu, ti, truth, feats)
    popularity = [int((ti == i).sum()) for i in range(N_ITEMS)]
    for share in (0.5, 0.8, 1.0):
        head = _head_oracle(popularity, share)
        assert set(np.flatnonzero(pop.short_head(np.array(popularity), share))) == head
    head = _head_oracle(popularity, 0.8)
    tail = np.array([i not in head for i in range(N_ITEMS)])
    lists = _lists(top)
    _close_arrays(pop.arp(top, np.array(popularity)),
                  [sum(popularity[i] for i in r) / len(r) if r else math.nan for r in lists])
    _close_arrays(pop.arp(top, np.array(popularity), normalize_by=len(ti)),
                  [sum(popularity[i] / len(ti) for i in r) / len(r) if r else math.nan
                   for r in lists])
    # Evidently: cold items skipped, divided by the largest popularity
    _close_arrays(pop.arp(top, np.array(popularity), normalize_by=max(popularity), cold="skip"),
                  [sum(popularity[i] / max(popularity) for i in r if popularity[i])
                   / sum(1 for i in r if popularity[i]) if any(popularity[i] for i in r)
                   else math.nan for r in lists])
    _close_arrays(pop.aplt(top, tail),
                  [sum(i not in head for i in r) / len(r) if r else math.nan for r in lists])
    _close_arrays(pop.aclt(top, tail), [float(sum(i not in head for i in r)) for r in lists])
    # PopRSP and PopREO (Elliot): std / mean over {head, tail}
    train = _train_sets(tu, ti, top.shape[0])
    catalogue = [i for i in range(N_ITEMS) if ctx.catalogue[i]]
    rates = []
    for group in (head, set(range(N_ITEMS)) - head):
        num = sum(len(set(r) & group) for r in lists)
        den = sum(len({i for i in catalogue if i in group} - train[u])
                  for u in range(len(lists)))
        rates.append(num / den)
    want = float(np.std(rates) / np.mean(rates))
    got = pop.pop_rsp(top, ~tail, ctx.catalogue, (ctx.train_indptr, ctx.train_items))
    assert _close(got, want)
    rates = []
    for group in (head, set(range(N_ITEMS)) - head):
        num = sum(len(set(r) & group & set(truth[u])) for u, r in enumerate(lists))
        den = sum(len((group & set(truth[u])) - train[u]) for u in range(len(lists)))
        rates.append(num / den if den else math.nan)
    want = float(np.std(rates) / np.mean(rates)) if not any(map(math.isnan, rates)) \
        else math.nan
    got = pop.pop_reo(top, ~tail, (ctx.truth_indptr, ctx.truth_items),
                      (ctx.train_indptr, ctx.train_items))
    assert _close(got, want)


# --- adversarial lists ---------------------------------------------------------------------


def test_adversarial_lists_empty_single_same_item():
    empty = np.full((3, 4), -1, dtype=np.int64)
    ctx = context(np.array([0, 1]), np.array([0, 0]), 3, row_users=np.arange(3),
                  features=np.eye(3))
    assert math.isnan(cat.distributional_coverage(empty, 3))
    assert cat.coverage(empty, ctx.catalogue) == 0.0
    assert math.isnan(cat.gini(empty, ctx.catalogue))
    assert math.isnan(div.personalization(empty, 3, 4))
    assert np.isnan(nov.novelty(empty, np.ones(3))).all()
    assert np.isnan(div.diversity(empty, SimArrays(ctx, "features"))).all()
    # every user gets the same single item: no diversity, no personalization, Gini of one
    same = np.array([[2, -1], [2, -1], [2, -1]])
    assert np.isnan(div.diversity(same, SimArrays(ctx, "features"))).all()
    assert div.diversity(same, SimArrays(ctx, "features"), short="zero").tolist() == [0.0] * 3
    assert div.personalization(same, 3, 2) == pytest.approx(0.5)  # overlap 1 of k = 2
    assert cat.distributional_coverage(same, 3) == 0.0
    assert cat.gini(same, np.ones(3, bool), scope="recommended") == 0.0
    assert cat.gini(same, np.ones(3, bool)) == pytest.approx(2 / 3)
    # identical feature vectors: diversity 0 (the sum identity loses nothing here)
    twin = context(None, None, 2, features=np.array([[1.0, 1.0], [2.0, 2.0]]))
    assert div.diversity(np.array([[0, 1]]), SimArrays(twin, "features"))[0] == \
        pytest.approx(0.0, abs=1e-15)


def test_ties_in_popularity_break_by_code_and_rank_densely():
    popularity = np.array([3, 3, 3, 1])
    assert pop.short_head(popularity, 0.5).tolist() == [True, True, False, False]
    assert ser.popularity_rank(np.array([3, 3, 1, 0])).tolist() == [1, 1, 2, 0]


def test_bad_lists_raise_one_line_errors():
    from receval.beyond._lists import cut
    with pytest.raises(ReceValError, match="item code -2 < -1 at row 1"):
        cut(np.array([[0], [-2]]), 1)
    with pytest.raises(ReceValError, match="outside the 3 items at row 0"):
        cut(np.array([[5]]), 1, 3)
    with pytest.raises(ReceValError, match="2-d"):
        cut(np.array([1, 2]), 1)
    with pytest.raises(ReceValError, match="novelty_cold='x'"):
        BeyondOptions(novelty_cold="x")


def test_same_numbers_whatever_the_thread_count():
    rng = np.random.default_rng(5)
    n_users, k = 40_000, 8
    top = rng.integers(-1, 50, (n_users, k))
    feats = rng.normal(size=(50, 3))
    ctx = context(rng.integers(0, 500, 3000), rng.integers(0, 50, 3000), 50,
                  row_users=np.arange(n_users) % 500, features=feats)
    specs = [parse_beyond(n) for n in ("novelty@8", "diversity@8", "ARP@8", "PopRSP@8",
                                       "gini@8")]
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = compute(specs, top, ctx)
        numba.set_num_threads(max(2, before))
        many = compute(specs, top, ctx)
    finally:
        numba.set_num_threads(before)
    for name in one[0]:
        assert np.array_equal(one[0][name], many[0][name], equal_nan=True)
    assert one[1] == many[1]


# --- names, evaluate integration -----------------------------------------------------------


def test_names_parse_aliases_and_comma_lists():
    assert parse_beyond("Catalog_Coverage@10").metric == "coverage"
    assert parse_beyond("MIUF@5").metric == "novelty"
    assert parse_beyond("P@10") is None
    acc, specs, order = split_metrics("P@5,10,coverage@5,20")
    assert acc == ["P@5", "P@10"]
    assert [s.name for s in specs] == ["coverage@5", "coverage@20"]
    assert order == ["P@5", "P@10", "coverage@5", "coverage@20"]
    with pytest.raises(ReceValError, match="needs a cutoff"):
        parse_beyond("gini")
    with pytest.raises(ReceValError, match="requested twice"):
        split_metrics(["ARP@5", "ARP@5"])


pytestmark = pytest.mark.filterwarnings("ignore::receval.checks.TrainItemsWarning")


def _frames():
    truth = pd.DataFrame({"user": ["a", "a", "b", "c"], "item": ["x", "y", "x", "w"]})
    preds = pd.DataFrame({"user": ["a", "a", "a", "b", "b", "c"],
                          "item": ["x", "z", "v", "z", "x", "x"],
                          "score": [0.9, 0.8, 0.1, 0.7, 0.1, 0.5]})
    train = pd.DataFrame({"user": ["a", "b", "c", "c", "d"],
                          "item": ["w", "y", "x", "y", "x"]})
    return truth, preds, train


def test_evaluate_computes_beyond_metrics_from_the_engine_lists():
    truth, preds, train = _frames()
    feats = {"x": ["drama"], "y": ["drama", "comedy"], "z": ["comedy"], "v": ["horror"],
             "w": ["drama"]}
    r = receval.evaluate(truth, preds, ["P@2", "coverage@2", "novelty@2", "diversity@2",
                                        "personalization@2"], train=train, item_features=feats)
    # lists at 2: a [x, z], b [z, x], c [x]; catalogue = train ∪ truth = {w, x, y}
    assert r.summary["coverage@2"] == pytest.approx(1 / 3)
    # novelty: x has 2 of 5 training rows, z is cold (adds 0): a, b = (-log2 0.4 + 0) / 2
    nx = -math.log2(2 / 5)
    assert r.per_user.set_index("user")["novelty@2"].to_dict() == pytest.approx(
        {"a": nx / 2, "b": nx / 2, "c": nx})
    # diversity: x (drama) vs z (comedy) cosine 0 -> 1; c has one item: undefined -> 0
    assert r.per_user["diversity@2"].tolist() == [1.0, 1.0, 0.0]
    assert r.summary["diversity@2"] == pytest.approx(2 / 3)
    # personalization: overlaps a-b 2, a-c 1, b-c 1 -> 1 - (4 / 2) / 3
    assert r.summary["personalization@2"] == pytest.approx(1 - (4 / 2) / 3)
    assert r.metrics == ["P@2", "coverage@2", "novelty@2", "diversity@2", "personalization@2"]
    assert list(r.summary) == r.metrics
    assert r.per_user.columns.tolist() == ["user", "P@2", "novelty@2", "diversity@2"]
    assert r.options["beyond"]["catalogue_metrics"] == ["coverage@2", "personalization@2"]
    assert set(r.sums.names) == {"P@2", "novelty@2", "diversity@2"}


def test_evaluate_beyond_only_and_empty_skip():
    truth, preds, train = _frames()
    r = receval.evaluate(truth, preds, ["diversity@2", "ARP@1"], train=train,
                         item_features={"x": [1.0, 0.0], "z": [1.0, 1.0], "v": [0.0, 1.0]},
                         empty="skip")
    assert r.summary["diversity@2"] == pytest.approx(1 - 1 / math.sqrt(2))
    assert math.isnan(r.per_user["diversity@2"].tolist()[2])
    # ARP@1: a x (2 rows), b z (0), c x (2)
    assert r.summary["ARP@1"] == pytest.approx(4 / 3)


def test_evaluate_switches_and_profile():
    truth, preds, train = _frames()
    r = receval.evaluate(truth, preds, ["coverage@2"], train=train,
                         beyond={"coverage": "count", "coverage_outside": "count"})
    assert r.summary["coverage@2"] == 2.0
    r = receval.evaluate(truth, preds, ["coverage@2"], train=train, beyond="rectools")
    assert r.summary["coverage@2"] == 2.0  # RecTools: distinct recommended items, x and z
    assert r.options["beyond"]["coverage"] == "count"


def test_missing_inputs_name_the_option():
    truth, preds, train = _frames()
    with pytest.raises(ReceValError, match="needs the training data: pass train="):
        receval.evaluate(truth, preds, ["novelty@2"])
    with pytest.raises(ReceValError, match="needs item features: pass item_features="):
        receval.evaluate(truth, preds, ["diversity@2"], train=train)
    with pytest.raises(ReceValError, match="unknown beyond option 'colour'"):
        receval.evaluate(truth, preds, ["gini@2"], beyond={"colour": 1})
    with pytest.raises(ReceValError, match="unknown metric 'coverag@2'"):
        receval.evaluate(truth, preds, ["coverag@2"])


def test_cooccurrence_similarity_from_train_only():
    truth, preds, train = _frames()
    r = receval.evaluate(truth, preds, ["diversity@2"], train=train,
                         beyond={"similarity": "cooccurrence"})
    # x and z: z has no training user -> similarity 0 -> diversity 1 for a and b
    assert r.per_user["diversity@2"].tolist()[:2] == [1.0, 1.0]


# --- frames, features, report data ---------------------------------------------------------


def test_read_features_forms():
    ids, m = read_features(pd.DataFrame({"item": [1, 1, 2], "genre": ["a", "b", "a"]}))
    assert ids.tolist() == [1, 2] and m.tolist() == [[1.0, 1.0], [1.0, 0.0]]
    ids, m = read_features(pd.DataFrame({"item": ["p"], "vec": [np.array([0.5, 2.0])]}))
    assert m.tolist() == [[0.5, 2.0]]
    with pytest.raises(ReceValError, match="two embedding rows"):
        read_features(pd.DataFrame({"item": [1, 1], "f": [0.1, 0.2], "g": [1.0, 2.0]}))
    with pytest.raises(ReceValError, match="no column 'item'"):
        read_features(pd.DataFrame({"id": [1], "f": [1.0]}))


def test_beyond_metrics_from_a_frame_matches_evaluate():
    truth, preds, train = _frames()
    names = ["coverage@2", "novelty@2", "ARP@2", "gini@2"]
    summary, _per_user = beyond_metrics(preds, names, train=train, truth=truth)
    r = receval.evaluate(truth, preds, names, train=train, empty="skip")
    assert summary == pytest.approx(r.summary)


def test_report_tables():
    _, preds, train = _frames()
    pop_model = preds.assign(item="x")
    pop_model = pop_model.drop_duplicates(["user", "item"])
    table = coverage_novelty({"pop": pop_model, "model": preds}, train, k=2)
    assert table.loc["pop", "coverage@2"] == pytest.approx(1 / 3)
    assert table.loc["model", "coverage@2"] == pytest.approx(1 / 3)
    tail = long_tail_exposure({"model": preds}, train, k=2, bins=3)
    # train popularity: w 1, y 2, x 2 -> ranks y1 x2 (tie: y seen first) w3; slots x, z, z,
    # x, x: x (bin 2) 3/5, z unseen 2/5
    assert tail["share"].tolist() == pytest.approx([0.0, 0.6, 0.0, 0.4])
    assert tail["cumulative"].iloc[-1] == pytest.approx(1.0)
    top = most_recommended({"model": preds}, k=1, titles={"x": "Heat"})
    assert top.iloc[0][["item", "title", "lists"]].tolist() == ["x", "Heat", 2]


@pytest.mark.parametrize("offset", [0, 10**12])
def test_integer_ids_dense_sparse_and_minus_one_are_items(offset):
    """Integer ids are the engine's codes: far-apart ids take the sorted path, small ones
    the table, and -1 is a real item (not padding)."""
    truth = pd.DataFrame({"user": [1, 1, 2], "item": [-1, 5, 5]})
    preds = pd.DataFrame({"user": [1, 1, 2, 2], "item": [-1, 7, 5, 7],
                          "score": [0.9, 0.5, 0.8, 0.1]})
    train = pd.DataFrame({"user": [3, 3, 4], "item": [-1, 5, 9]})
    for frame in (truth, preds, train):
        frame["item"] = frame["item"] + np.where(frame["item"] > 0, offset, 0)
    r = receval.evaluate(truth, preds, ["coverage@2", "ARP@1", "ACLT@2"], train=train,
                         beyond={"coverage": "count", "coverage_outside": "count"})
    assert r.summary["coverage@2"] == 3.0  # -1, 7 and 5
    assert r.per_user["ARP@1"].tolist() == [1.0, 1.0]  # -1 and 5: one training row each
    # head at 0.8 of 3 rows: -1, 5, 9 (all tie at 1, lower code first) -> 7 is the tail
    assert r.per_user["ACLT@2"].tolist() == [1.0, 1.0]
