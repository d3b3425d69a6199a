"""Exposure fairness and calibration (receval.beyond.fairness, .calibration) against the
plain-Python oracles of tests/reference/fairness.py on random and adversarial lists, and
against the peers' code reproduced in tests/peers_fairness.py (TREC Fair 2022, RADio, the
copied snippet, ir_measures)."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

import receval
from receval.beyond import calibration as cal
from receval.beyond import fairness as fair
from receval.beyond.compute import compute
from receval.beyond.context import context
from receval.beyond.frames import beyond_metrics
from receval.beyond.groups import read_groups
from receval.beyond.names import parse_beyond
from receval.beyond.settings import BeyondOptions
from receval.exceptions import ReceValError

try:
    from tests import peers_fairness as peers
    from tests.reference import fairness as oracle
except ImportError:  # pytest run from elsewhere: tests/ itself is on sys.path
    import peers_fairness as peers  # type: ignore[no-redef]
    from reference import fairness as oracle  # type: ignore[no-redef]

N_ITEMS = 14
NAMES = ("g0", "g1", "g2", "g3")


def _case(seed: int, n_users: int = 30, k: int = 8):
    """Lists (some empty or short), per-item groups (some none, some several), training rows
    and truth, as codes."""
    rng = np.random.default_rng(seed)
    top = np.full((n_users, k), -1, dtype=np.int64)
    for u in range(n_users):
        m = int(rng.integers(0, k + 1))
        top[u, :m] = rng.choice(N_ITEMS, size=m, replace=False)
    item_groups = {}
    for i in range(N_ITEMS):
        m = int(rng.choice([0, 1, 1, 1, 2, 3]))
        item_groups[i] = sorted(rng.choice(NAMES, size=m, replace=False).tolist())
    tu = rng.integers(0, n_users, 90)
    ti = rng.integers(0, N_ITEMS, 90)
    truth = [sorted(set(rng.choice(N_ITEMS, size=int(rng.integers(0, 4))).tolist()))
             for _ in range(n_users)]
    return top, item_groups, tu, ti, truth


def _ctx(top, item_groups, tu, ti, truth):
    ptr = np.zeros(len(truth) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(t) for t in truth])
    items = np.array([i for t in truth for i in t], dtype=np.int64)
    ctx = context(tu, ti, N_ITEMS, row_users=np.arange(top.shape[0]), truth=(ptr, items))
    ids, align, names = read_groups({i: g for i, g in item_groups.items()})
    ctx.groups = np.zeros((N_ITEMS, len(names)))
    ctx.groups[ids.astype(np.int64)] = align
    ctx.group_names = names
    return ctx


def _lists(top):
    return [[int(c) for c in row if c >= 0] for row in top]


def _close(got, want, tol=1e-12):
    got = np.asarray(got, dtype=float)
    want = np.asarray(want, dtype=float)
    assert got.shape == want.shape
    both_nan = np.isnan(got) & np.isnan(want)
    assert (np.isnan(got) == np.isnan(want)).all(), (got, want)
    assert np.allclose(got[~both_nan], want[~both_nan], rtol=tol, atol=tol), (got, want)


def _run(names, top, ctx, **switches):
    return compute([parse_beyond(n) for n in names], top, ctx, BeyondOptions(**switches))


# --- against the oracles --------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("disc", ["trec", "log2", "rbp", "reciprocal", "uniform"])
def test_awrf_and_group_exposure_match_the_oracle(seed, disc):
    top, groups, tu, ti, truth = _case(seed)
    ctx = _ctx(top, groups, tu, ti, truth)
    names = list(ctx.group_names)
    cat_items = [i for i in range(N_ITEMS) if ctx.catalogue[i]]
    for tgt_kind in ("uniform", "catalogue", {names[0]: 2.0, names[-1]: 1.0}):
        tables: dict = {}
        per_user, summary = compute(
            [parse_beyond("AWRF@6"), parse_beyond("group_exposure@6"),
             parse_beyond("nDCG_AWRF@6")], top, ctx,
            BeyondOptions(exposure_discount=disc, rbp_patience=0.7, fairness_target=tgt_kind),
            tables=tables)
        tgt = oracle.target(tgt_kind, groups, cat_items, names)
        lists = [row[:6] for row in _lists(top)]
        _close(per_user["AWRF@6"], [oracle.awrf(r, groups, names, tgt, disc, 0.7)
                                   for r in lists])
        _close(per_user["nDCG_AWRF@6"],
               [oracle.trec_ndcg(r, set(t)) * oracle.awrf(r, groups, names, tgt, disc, 0.7)
                for r, t in zip(lists, truth, strict=True)])
        shares = oracle.group_exposure(lists, groups, names, disc, 0.7)
        _close(tables["group_exposure@6"]["exposure"], shares)
        _close(tables["group_exposure@6"]["target"], tgt)
        _close(summary["group_exposure@6"], oracle.exposure_gap(shares, tgt))


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("kind", ["rND", "rKL", "rRD"])
def test_ranked_fairness_matches_the_enumerating_oracle(seed, kind):
    top, groups, tu, ti, truth = _case(seed, k=9)
    ctx = _ctx(top, groups, tu, ti, truth)
    for step in (1, 2, 3, 10):
        for population in ("list", "catalogue"):
            for protected in (None, "g1"):
                per_user, _ = _run([f"{kind}@9"], top, ctx, fairness_step=step,
                                   fairness_population=population, protected_group=protected)
                pg = protected or _smallest_group(groups, ctx)
                share = None
                if population == "catalogue":
                    cat = [i for i in range(N_ITEMS) if ctx.catalogue[i]]
                    share = sum(pg in groups[i] for i in cat) / len(cat)
                want = [oracle.ranked_fairness(kind, [pg in groups[i] for i in r], step, share)
                        for r in _lists(top)]
                _close(per_user[f"{kind}@9"], want, 1e-11)


def _smallest_group(groups, ctx):
    counts = {g: sum(g in groups[i] for i in range(N_ITEMS) if ctx.catalogue[i]) for g in NAMES}
    present = sorted((c, g) for g, c in counts.items() if c > 0)
    return present[0][1]


@pytest.mark.parametrize("n", range(2, 11))
def test_rrd_maximum_is_not_always_at_the_extremes_and_the_dp_finds_it(n):
    # every (N, P): the DP's maximum equals the enumeration's, and for some the protected
    # items all first or all last are not the worst arrangement
    beaten = 0
    for p in range(n + 1):
        for kind in ("rND", "rKL", "rRD"):
            best = max((oracle._ranked_sum(kind, [i in pos for i in range(n)], 1, None)
                        for pos in combinations(range(n), p)), default=0.0)
            got = fair._max_unfairness(fair._KINDS[kind], n, p, 1, -1.0)
            assert got == pytest.approx(best, rel=1e-12, abs=1e-15)
            ends = max(oracle._ranked_sum(kind, [i < p for i in range(n)], 1, None),
                       oracle._ranked_sum(kind, [i >= n - p for i in range(n)], 1, None))
            beaten += kind == "rRD" and best > ends + 1e-12
    if n >= 7:  # e.g. N = 7, P = 2: 2.063 against 1.863 at either extreme
        assert beaten > 0


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("smooth", ["list", "both", "none"])
@pytest.mark.parametrize("discount", ["none", "reciprocal", "radio"])
def test_calibration_matches_the_oracle(seed, smooth, discount):
    top, groups, tu, ti, truth = _case(seed)
    ctx = _ctx(top, groups, tu, ti, truth)
    names = list(ctx.group_names)
    for base, js, history in ((math.e, "divergence", "rows"), (2.0, "distance", "items"),
                              (2.0, "divergence", "rows"), (math.e, "distance", "items")):
        if history == "rows":  # every training row, a repeated one again
            hist = [ti[tu == u].tolist() for u in range(top.shape[0])]
        else:
            hist = [sorted(set(ti[tu == u].tolist())) for u in range(top.shape[0])]
        per_user, _ = _run(["calibration@7", "calibration_js@7"], top, ctx,
                           calibration_alpha=0.05, calibration_smooth=smooth,
                           calibration_discount=discount, calibration_base=base,
                           calibration_js=js, calibration_history=history)
        lists = [r[:7] for r in _lists(top)]
        kw = {"alpha": 0.05, "smooth": smooth, "list_weights": discount, "base": base}
        _close(per_user["calibration@7"],
               [oracle.calibration(h, r, groups, names, **kw)
                for h, r in zip(hist, lists, strict=True)], 1e-11)
        _close(per_user["calibration_js@7"],
               [oracle.calibration(h, r, groups, names, js=js, **kw)
                for h, r in zip(hist, lists, strict=True)], 1e-11)


def test_adversarial_lists():
    align = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    top = np.array([[-1, -1, -1], [2, 2, -1], [0, 1, 2], [2, 0, -1]])
    got = fair.awrf(top, align, fair.discounts("trec", 3), np.array([0.5, 0.5]))
    assert math.isnan(got[0]) and math.isnan(got[1])  # nothing / only ungrouped items
    assert got[2] == 1.0  # ranks 1 and 2 weigh the same under the track's discount
    # an ungrouped item keeps its rank: item 0 at rank 2 weighs 1/log2(2) = 1
    assert got[3] == pytest.approx(1 - oracle.js_divergence([1.0, 0.0], [0.5, 0.5]), abs=0)
    flags = np.array([1, 0, 0])
    rnd = fair.ranked_fairness("rND", np.array([[0, 0, 0], [1, 2, 1], [0, -1, -1]]),
                               np.array([1, 0, 0]), step=1)
    assert np.isnan(rnd).all()  # all protected, none protected, one item: max 0
    assert flags.sum() == 1
    kl, _ = cal.calibration(np.array([[0, 0]]), (np.array([0, 1]), np.array([1])), align,
                            smooth="none")
    assert kl[0] == math.inf  # the list misses the history's group and nothing smooths


# --- against the peers' code ------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_trec2022_awrf_and_ndcg_as_the_track_scripts(seed):
    rng = np.random.default_rng(seed)
    n_items, n_groups = 40, 5
    align = rng.dirichlet(np.ones(n_groups), size=n_items)  # the track's alignments
    align[rng.random(n_items) < 0.2] = 0.0  # unknown pages: skipped by the track too
    known = {i: align[i] for i in range(n_items) if align[i].sum() > 0}
    k = int(rng.integers(1, 30))
    run = rng.choice(n_items, size=k, replace=False)
    qrels = rng.choice(n_items, size=int(rng.integers(1, 25)), replace=False)
    tgt = rng.dirichlet(np.ones(n_groups))
    want_awrf = peers.trec_qr_awrf(list(run), known, tgt) if any(
        int(i) in known for i in run) else math.nan
    got = fair.awrf(run[None, :], align, fair.discounts("trec", k), tgt)[0]
    # the track's discounts are float32 ('f4'); receval's float64 (pinned): 1e-6 apart
    if math.isnan(want_awrf):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(want_awrf, abs=2e-6)
    got_ndcg = fair.trec_ndcg(run[None, :], (np.array([0, len(qrels)]), qrels), n_items)[0]
    assert got_ndcg == pytest.approx(peers.trec_qr_ndcg(list(run), list(qrels)), abs=2e-6)


def test_trec2022_awrf_exactly_with_the_discount_in_float64(monkeypatch):
    rng = np.random.default_rng(5)
    align = rng.dirichlet(np.ones(4), size=20)
    run = rng.choice(20, size=12, replace=False)
    tgt = rng.dirichlet(np.ones(4))
    monkeypatch.setattr(peers, "trec_discount", lambda n: fair.discounts("trec", n))
    want = peers.trec_qr_awrf(list(run), {i: align[i] for i in range(20)}, tgt)
    got = fair.awrf(run[None, :], align, fair.discounts("trec", 12), tgt)[0]
    assert got == pytest.approx(want, abs=1e-12)


def _radio_weights(n):
    h = peers.radio_harmonic_number(n)
    return [1 / (r + 1) / h for r in range(n)]


@pytest.mark.parametrize("seed", range(30))
def test_radio_topic_divergence_to_1e12(seed):
    rng = np.random.default_rng(seed)
    cats = ["news", "sports", "finance", "lifestyle", "health", "weather"]
    history = rng.choice(cats[:int(rng.integers(1, 7))], size=int(rng.integers(1, 40))).tolist()
    rec = rng.choice(cats, size=int(rng.integers(1, 11))).tolist()
    (kl_d, js_d), (kl_u, js_u) = peers.radio_topic_divergence(history, rec)
    items = {c: i for i, c in enumerate(cats)}
    align = np.eye(len(cats))
    h_items = np.array([items[c] for c in history])
    top = np.array([[items[c] for c in rec]])
    ptr = np.array([0, len(h_items)])
    kl, js = cal.calibration(top, (ptr, h_items), align, alpha=0.001, smooth="both",
                             discount="radio", base=2,
                             history_weights=np.array(_radio_weights(len(history))))
    assert abs(kl[0] - kl_d) < 1e-12 and abs(math.sqrt(abs(js[0])) - js_d) < 1e-12
    kl, js = cal.calibration(top, (ptr, h_items), align, alpha=0.001, smooth="both",
                             discount="none", base=2)
    assert abs(kl[0] - kl_u) < 1e-12 and abs(math.sqrt(abs(js[0])) - js_u) < 1e-12


@pytest.mark.parametrize("seed", range(40))
def test_the_copied_snippet_exactly(seed):
    rng = np.random.default_rng(seed)
    genres = ["Action", "Comedy", "Drama", "Horror", "Romance", "Sci-Fi", "War"]
    n_items = 25
    item_genres = [sorted(rng.choice(genres, size=int(rng.integers(1, 4)),
                                     replace=False).tolist()) for _ in range(n_items)]
    hist = rng.choice(n_items, size=int(rng.integers(1, n_items)), replace=False)
    rec = rng.choice(n_items, size=int(rng.integers(1, 11)), replace=False)
    p = peers.snippet_compute_genre_distr([item_genres[i] for i in hist])
    q = peers.snippet_compute_genre_distr([item_genres[i] for i in rec])
    with np.errstate(all="ignore"):
        want = peers.snippet_compute_kl_divergence(p, q)
    _, align, _ = read_groups({i: g for i, g in enumerate(item_genres)})
    got = cal.calibration_snippet(rec[None, :], (np.array([0, len(hist)]), hist), align)[0]
    if math.isnan(want):
        assert math.isnan(got)
    else:  # the same sums and rounding; the KL's terms are added in another order
        assert abs(got - want) <= 1e-12


def test_ir_measures_rnd_differs_as_documented():
    # ir_measures divides the i-item prefix by i + 1 and skips the full prefix; its
    # population is the qrels' groups. On a list of 4 with one protected item at rank 1,
    # Yang & Stoyanovich's rND (step 1, the list as population) is 0.742..., ir_measures'
    # value differs
    ranking = ("p", "n", "n", "n")
    theirs = peers.ir_measures_rnd(ranking, ranking, "p")
    ours = fair.ranked_fairness("rND", np.array([[0, 1, 2, 3]]), np.array([1, 0, 0, 0]),
                                step=1)[0]
    assert ours == pytest.approx(oracle.ranked_fairness("rND", [True, False, False, False], 1))
    assert abs(theirs - ours) > 0.05


# --- the doors ------------------------------------------------------------------------------


def _frames():
    train = pd.DataFrame({"user": [1, 1, 2, 3, 3, 3], "item": ["a", "b", "a", "a", "c", "e"]})
    truth = pd.DataFrame({"user": [1, 2, 3], "item": ["c", "b", "b"]})
    preds = pd.DataFrame({"user": [1, 1, 1, 2, 2, 3, 3],
                          "item": ["c", "d", "e", "b", "c", "b", "d"],
                          "score": [0.9, 0.8, 0.1, 0.7, 0.6, 0.9, 0.1]})
    genres = {"a": ["drama"], "b": ["comedy"], "c": ["drama", "comedy"], "d": ["horror"],
              "e": []}
    return train, truth, preds, genres


def test_evaluate_door_matches_the_oracle():
    train, truth, preds, genres = _frames()
    r = receval.evaluate(truth, preds, ["AWRF@3", "nDCG_AWRF@3", "group_exposure@3",
                                        "calibration@3", "rND@3"],
                         train=train, item_groups=genres,
                         beyond={"fairness_step": 1, "protected_group": "horror"})
    names = ["comedy", "drama", "horror"]
    tgt = [1 / 3] * 3
    lists = {1: ["c", "d", "e"], 2: ["b", "c"], 3: ["b", "d"]}
    per = r.per_user.set_index("user")
    for u, ranked in lists.items():
        assert per.loc[u, "AWRF@3"] == pytest.approx(oracle.awrf(ranked, genres, names, tgt),
                                                      abs=1e-12)
        hist = sorted(set(train.item[train.user == u]))
        assert per.loc[u, "calibration@3"] == pytest.approx(
            oracle.calibration(hist, ranked, genres, names), abs=1e-12)
        rel = set(truth.item[truth.user == u])
        assert per.loc[u, "nDCG_AWRF@3"] == pytest.approx(
            oracle.ndcg_awrf(ranked, rel, genres, names, tgt), abs=1e-12)
        want = oracle.ranked_fairness("rND", [g == "d" for g in ranked], 1)
        # undefined (Z = 0) stays NaN: a 0 would read as perfectly fair, so it is left out
        assert per.loc[u, "rND@3"] == pytest.approx(want, abs=1e-12, nan_ok=True)
    shares = oracle.group_exposure(list(lists.values()), genres, names)
    assert r.summary["group_exposure@3"] == pytest.approx(oracle.exposure_gap(shares, tgt),
                                                          abs=1e-12)
    table = r.counts["group_exposure"]["group_exposure@3"]
    assert table["group"] == names and table["exposure"] == pytest.approx(shares, abs=1e-12)
    assert r.options["beyond"]["exposure_discount"] == "trec"
    # the same from item_features= (its categories) and from a column of a features frame
    r2 = receval.evaluate(truth, preds, ["AWRF@3"], item_features=genres)
    assert r2.summary["AWRF@3"] == r.summary["AWRF@3"]
    frame = pd.DataFrame({"item": list(genres), "genre": list(genres.values()),
                          "year": [1990, 1991, 1992, 1993, 1994]})
    r3 = receval.evaluate(truth, preds, ["AWRF@3"], item_features=frame, item_groups="genre")
    assert r3.summary["AWRF@3"] == r.summary["AWRF@3"]
    s, _ = beyond_metrics(preds, ["AWRF@3"], item_groups=genres)
    assert s["AWRF@3"] == pytest.approx(r.summary["AWRF@3"], abs=1e-12)


def test_missing_or_bad_groups_are_one_line_errors():
    _train, truth, preds, genres = _frames()
    with pytest.raises(ReceValError, match="needs item groups: pass item_groups="):
        receval.evaluate(truth, preds, ["AWRF@3"])
    with pytest.raises(ReceValError, match="needs the training data"):
        receval.evaluate(truth, preds, ["calibration@3"], item_groups=genres)
    with pytest.raises(ReceValError, match="protected_group='sci-fi' is no item's group"):
        receval.evaluate(truth, preds, ["rND@3"], item_groups=genres,
                         beyond={"protected_group": "sci-fi"})
    with pytest.raises(ReceValError, match="fairness_target names group 'x'"):
        receval.evaluate(truth, preds, ["AWRF@3"], item_groups=genres,
                         beyond={"fairness_target": {"x": 1}})
    with pytest.raises(ReceValError, match="names no column of item_features"):
        receval.evaluate(truth, preds, ["AWRF@3"], item_groups="genre",
                         item_features=pd.DataFrame({"item": ["a"], "g": ["x"]}))
    with pytest.raises(ReceValError, match="fairness_step"):
        BeyondOptions(fairness_step=0)
    # Spark computes every fairness metric (docs/spark.md); one reading the catalogue
    # "recommended" in the partitions it refuses (known only once every list is ranked)
    with pytest.raises(ReceValError, match=r"^metric 'AWRF@3' is not available with "
                       r"engine='spark': .*catalogue='recommended'"):
        receval.evaluate(truth, preds, ["AWRF@3"], item_groups=genres, engine="spark",
                         beyond={"fairness_target": "catalogue", "catalogue": "recommended"})


def test_cli_awrf_with_item_features(tmp_path):
    from click.testing import CliRunner

    from receval.cli import main

    train, truth, preds, genres = _frames()
    truth.to_csv(tmp_path / "truth.csv", index=False)
    preds.to_csv(tmp_path / "preds.csv", index=False)
    train.to_csv(tmp_path / "train.csv", index=False)
    pd.DataFrame({"item": list(genres), "genres": ["|".join(g) + "|" for g in genres.values()]}
                 ).to_csv(tmp_path / "items.csv", index=False)
    out = CliRunner().invoke(main, ["evaluate", "-t", str(tmp_path / "truth.csv"),
                                    "-p", str(tmp_path / "preds.csv"), "-m", "awrf@3",
                                    "-m", "calibration@3", "--train", str(tmp_path / "train.csv"),
                                    "--item-features", str(tmp_path / "items.csv"),
                                    "-f", "json"])
    assert out.exit_code == 0, out.output
    want = receval.evaluate(truth, preds, ["awrf@3", "calibration@3"], train=train,
                            item_groups=genres).summary
    import json

    got = json.loads(out.output)["summary"]
    assert got == pytest.approx(want, abs=1e-12)
    out = CliRunner().invoke(main, ["evaluate", "-t", str(tmp_path / "truth.csv"),
                                    "-p", str(tmp_path / "preds.csv"), "-m", "awrf@3"])
    assert out.exit_code == 2
    assert "needs item groups: pass --item-features FILE (categories)" in out.output
    # the per-user metrics pair between models in receval compare
    out = CliRunner().invoke(main, ["compare", "-t", str(tmp_path / "truth.csv"),
                                    "-p", str(tmp_path / "preds.csv"),
                                    "-p", str(tmp_path / "preds.csv"), "-m", "awrf@3",
                                    "--item-features", str(tmp_path / "items.csv"),
                                    "-f", "json"])
    assert out.exit_code == 0, out.output
    assert "awrf@3" in out.output


# --- expected exposure ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("model", ["gerr", "rbp"])
def test_expected_exposure_matches_the_oracle_and_expeval(seed, model):
    top, groups, tu, ti, truth = _case(seed)
    ctx = _ctx(top, groups, tu, ti, truth)
    names = [f"EE_{x}{n}@7" for x in "DRL" for n in ("", "_norm")]
    per_user, _ = _run(names, top, ctx, ee_model=model, ee_patience=0.6, ee_utility=0.3)
    lists = [r[:7] for r in _lists(top)]
    for u, (ranked, rel) in enumerate(zip(lists, truth, strict=True)):
        want = oracle.expected_exposure(ranked, set(rel), model, 0.6, 0.3)
        for n in names:
            _close(per_user[n][u], want[n[:-2]])
        if not rel or not ranked:
            continue
        theirs = peers.expeval_query([ranked], dict.fromkeys(rel, 1), model, 0.6, 0.3)
        for ours, key in (("EE_D", "disparity"), ("EE_R", "relevance"), ("EE_L", "difference")):
            _close(per_user[f"{ours}@7"][u], theirs[key][0])
            if ours == "EE_R":
                # expeval prints 1 for every query under binary relevance (one level: its
                # bounds collapse to 0); receval divides by the bound it computed first
                assert theirs[key][1] == 1.0
                _close(per_user["EE_R_norm@7"][u],
                       theirs[key][0] / theirs["relevance_upper_bound"])
            else:
                _close(per_user[f"{ours}_norm@7"][u], theirs[key][1])


def test_expected_exposure_through_evaluate():
    _train, truth, preds, _genres = _frames()
    r = receval.evaluate(truth, preds, ["EE-L@3", "ee_r_norm@3"], empty="skip")
    lists = {1: ["c", "d", "e"], 2: ["b", "c"], 3: ["b", "d"]}
    want = [oracle.expected_exposure(v, set(truth.item[truth.user == u]))
            for u, v in lists.items()]
    assert r.summary["EE-L@3"] == pytest.approx(np.mean([w["EE_L"] for w in want]), abs=1e-12)
    assert r.options["metrics"]["ee_r_norm@3"] == "EE_R_norm@3"


def test_every_group_and_exposure_entry_has_an_oracle():
    from receval.beyond.fair_compute import CALIBRATION, EXPOSURE, FAIRNESS
    from receval.beyond.names import ENTRIES

    mine = {*FAIRNESS, *CALIBRATION, *EXPOSURE}
    assert mine <= set(ENTRIES)
    assert mine == {n for n, e in ENTRIES.items() if "groups" in e.needs or n.startswith("EE_")}
    assert mine <= set(oracle.ORACLES)


def test_docs_fairness_examples_run():
    import doctest
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "fairness.md"
    failed, attempted = doctest.testfile(
        str(path), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
    assert attempted > 10 and failed == 0


def test_same_numbers_whatever_the_thread_count():
    import numba

    rng = np.random.default_rng(9)
    n_users, k = 40_000, 8
    top = np.full((n_users, k), -1, dtype=np.int64)
    for j in range(k):  # distinct items per row: a row-wise shift of a random start
        top[:, j] = (rng.integers(0, 60, n_users) + 7 * j) % 60
    top[rng.random(n_users) < 0.1, 4:] = -1
    ctx = context(rng.integers(0, 500, 3000), rng.integers(0, 60, 3000), 60,
                  row_users=np.arange(n_users) % 500,
                  truth=(np.arange(n_users + 1, dtype=np.int64), rng.integers(0, 60, n_users)))
    member = (rng.random((60, 5)) < 0.4).astype(float)
    member[member.sum(axis=1) == 0, 0] = 1.0
    ctx.groups = member / member.sum(axis=1, keepdims=True)
    ctx.group_names = ("a", "b", "c", "d", "e")
    specs = [parse_beyond(f"{n}@8") for n in ("group_exposure", "AWRF", "nDCG_AWRF", "rND",
                                              "rKL", "rRD", "calibration", "calibration_js",
                                              "EE_L", "EE_R_norm")]
    options = BeyondOptions(fairness_step=1)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = compute(specs, top, ctx, options)
        numba.set_num_threads(max(2, before))
        many = compute(specs, top, ctx, options)
    finally:
        numba.set_num_threads(before)
    assert len(one[0]) == 9
    for name in one[0]:
        assert np.array_equal(one[0][name], many[0][name], equal_nan=True)
    assert one[1] == many[1]


def test_snippet_nan_where_a_history_share_rounds_to_zero_as_the_snippet():
    item_genres = [["Drama"]] * 2999 + [["Western"]]
    hist = np.arange(3000)
    p = peers.snippet_compute_genre_distr([item_genres[i] for i in hist])
    assert p["Western"] == 0.0
    _, align, _ = read_groups({i: g for i, g in enumerate(item_genres)})
    ptr = np.array([0, 3000])
    # the list shows a Western: the snippet's 0 * log2(0) is nan
    q = peers.snippet_compute_genre_distr([item_genres[2999]])
    with np.errstate(all="ignore"):
        assert math.isnan(peers.snippet_compute_kl_divergence(p, q))
    assert math.isnan(cal.calibration_snippet(np.array([[2999]]), (ptr, hist), align)[0])
    # the list shows no Western: the snippet divides 0.0 by 0.0 and raises; receval: nan
    q = peers.snippet_compute_genre_distr([item_genres[0]])
    with pytest.raises(ZeroDivisionError):
        peers.snippet_compute_kl_divergence(p, q)
    assert math.isnan(cal.calibration_snippet(np.array([[0]]), (ptr, hist), align)[0])
    exact, _ = cal.calibration(np.array([[0]]), (ptr, hist), align)
    assert exact[0] > 0  # the exact form keeps the rare genre


def test_track_ndcg_beyond_500_items_and_with_more_than_500_relevant():
    # the track's script refuses runs over 500 items; receval computes them, its ideal list
    # still min(500, |R|) long
    rng = np.random.default_rng(3)
    run = rng.permutation(2000)[:700]
    rel = set(rng.choice(2000, 800, replace=False).tolist())
    ptr, items = np.array([0, len(rel)]), np.array(sorted(rel))
    got = fair.trec_ndcg(run[None, :], (ptr, items), 2000)[0]
    assert got == pytest.approx(oracle.trec_ndcg(run.tolist(), rel), rel=1e-12)
    with pytest.raises(ValueError, match="too many documents"):
        peers.trec_qr_ndcg(run.tolist(), sorted(rel))


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("model", ["gerr", "rbp"])
def test_expected_exposure_over_sampled_rankings_as_expeval(seed, model):
    from receval.beyond.expected_exposure import (
        COLUMNS,
        expected_exposure,
        expected_exposure_sampled,
    )

    rng = np.random.default_rng(seed)
    n_users, n_samples, k, n_items = 12, 5, 6, 15
    tops = np.full((n_users, n_samples, k), -1, dtype=np.int64)
    truth = []
    for u in range(n_users):
        pool = rng.choice(n_items, size=9, replace=False)  # a stochastic ranker's pool
        for s in range(n_samples):
            m = int(rng.integers(0 if u == 0 else 1, k + 1))
            tops[u, s, :m] = rng.permutation(pool)[:m]
        truth.append(sorted(set(rng.choice(n_items, size=int(rng.integers(0, 4))).tolist())))
    ptr = np.zeros(n_users + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(t) for t in truth])
    items = np.array([i for t in truth for i in t], dtype=np.int64)
    got = expected_exposure_sampled(tops, (ptr, items), n_items, model=model, patience=0.7,
                                    utility=0.4)
    for u in range(n_users):
        samples = [[int(c) for c in tops[u, s] if c >= 0] for s in range(n_samples)]
        want = oracle.expected_exposure([], set(truth[u]), model, 0.7, 0.4, samples=samples)
        _close(got[u], [want[c] for c in COLUMNS])
        if truth[u] and any(samples):
            theirs = peers.expeval_query(samples, dict.fromkeys(truth[u], 1), model, 0.7, 0.4)
            _close(got[u, :3], [theirs["disparity"][0], theirs["relevance"][0],
                                theirs["difference"][0]])
            _close(got[u, [3, 5]], [theirs["disparity"][1], theirs["difference"][1]])
    # one sample is the deterministic case
    one = expected_exposure_sampled(tops[:, :1], (ptr, items), n_items, model=model)
    _close(one, expected_exposure(tops[:, 0], (ptr, items), n_items, model=model))
