"""The rank-discount, ideal and ERR-scale options against the tools that define them.

- ``discount="log2_max2"``: LensKit's ``NDCG``/``DCG`` (``LogRankWeight``: ``1/log2(max(r, 2))``),
  checked on the expected values of LensKit's own tests (lenskit/lkpy @ 3bd1c175,
  ``tests/eval/test_rank_ndcg.py``, ``tests/eval/test_rank_dcg.py``; LensKit is not installed
  here) and on the worked examples of peer-semantics.md (E1 0.6199, E3 0.3537).
- ``ideal="k"``: RecTools' ``NDCG(k)`` default (``divide_by_achievable=False``), run in its own
  environment (``.ci/rectools.sh``) on random inputs.
- ``err_max_grade=4``: gdeval's and ir_measures' ``ERR@k`` (Chapelle et al. 2009, grades
  0..4), by hand on a worked example.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.exceptions import ReceValError

RECTOOLS_PYTHON = Path(os.environ.get("RECTOOLS_VENV", "/tmp/rectools-venv")) / "bin" / "python"
SILENCE = ["ties", "undefined", "no-threshold", "no-match"]


def _one(truth_items, rec_items, metric, ratings=None, **options) -> float:
    truth = {"user": ["u"] * len(truth_items), "item": list(truth_items)}
    if ratings is not None:
        truth["rating"] = list(ratings)
    preds = {"user": ["u"] * len(rec_items), "item": list(rec_items),
             "score": [float(len(rec_items) - i) for i in range(len(rec_items))]}
    return receval.evaluate(truth, preds, [metric], silence=SILENCE, **options).summary[metric]


# --- LensKit's discount ----------------------------------------------------------------------

LOG2_MAX2 = {"discount": "log2_max2"}


def test_lenskit_worked_examples_of_peer_semantics() -> None:
    """E1 (hits at ranks 1, 3) and E3 (ranks 4, 5), relevant {a, c, f}: LensKit 0.6199 and
    0.3537 where the log2(r + 1) discount gives 0.7039 and 0.3836."""
    for ranking, lenskit, default in (("abcde", 0.6199, 0.7039), ("bdeac", 0.3537, 0.3836)):
        assert round(_one("acf", ranking, "nDCG@10", **LOG2_MAX2), 4) == lenskit
        assert round(_one("acf", ranking, "nDCG@10"), 4) == default


def test_lenskit_dcg_tests() -> None:
    """test_rank_dcg.py: test_dcg_perfect (sum 1/log2([2, 2, 3])), test_dcg_perfect_k_short
    (2.0), test_array_dcg_single (a hit at rank 3 weighs 1/log2(3)), test_array_dcg_mult
    (ranks 1 and 4: 1 + 1/log2(4))."""
    assert _one([1, 2, 3], [2, 3, 1], "DCG", **LOG2_MAX2) == pytest.approx(
        1 + 1 + 1 / math.log2(3), rel=1e-15)
    assert _one([1, 2, 3], [2, 3, 1], "DCG@2", **LOG2_MAX2) == 2.0
    assert _one([9], [7, 8, 9], "DCG", **LOG2_MAX2) == pytest.approx(1 / math.log2(3),
                                                                      rel=1e-15)
    assert _one([9], [8, 9], "DCG", **LOG2_MAX2) == 1.0  # rank 2 weighs as rank 1
    assert _one([6, 9], [6, 7, 8, 9], "DCG", **LOG2_MAX2) == 1.5


def test_lenskit_ndcg_tests() -> None:
    """test_rank_ndcg.py: test_ndcg_shorter_not_best (binary: fixed_dcg(2) / fixed_dcg(3);
    graded: array_dcg([3, 5]) / array_dcg([5, 4, 3])), test_ndcg_almost_perfect_k_gain,
    test_ndcg_perfect_k_norate, test_ndcg_no_match, and test_ndcg_negative_gains (0.5982:
    LensKit clips negative gains to 0, receval leaves them out as not relevant)."""
    truth, ratings = [1, 2, 3], [3.0, 5.0, 4.0]
    fixed = {n: sum(1 / math.log2(max(r, 2)) for r in range(1, n + 1)) for n in (2, 3)}
    assert _one(truth, [1, 2], "nDCG", **LOG2_MAX2) == pytest.approx(fixed[2] / fixed[3],
                                                                     rel=1e-15)
    assert _one(truth, [1, 2], "nDCG@2", **LOG2_MAX2) == 1.0
    graded = {"gain": "linear", **LOG2_MAX2}
    want = (3 + 5) / (5 + 4 + 3 / math.log2(3))
    assert _one(truth, [1, 2], "nDCG", ratings, **graded) == pytest.approx(want, rel=1e-15)
    assert _one(truth, [1, 3], "nDCG@2", ratings, **graded) == pytest.approx(
        (3 + 4) / (5 + 4), rel=1e-15)
    assert _one(truth, [1, 3], "nDCG@2", **LOG2_MAX2) == 1.0
    assert _one(truth, [4], "nDCG", **LOG2_MAX2) == 0.0
    mixed = _one([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], "nDCG", [-6, -2, 3, 1, -3],
                 relevance_threshold=0, **graded)
    assert mixed == pytest.approx(0.5982, rel=1e-3)


# --- RecTools' ideal over k ranks ------------------------------------------------------------

_RECTOOLS_NDCG = r"""
import json, sys
import pandas as pd
from rectools import Columns
from rectools.metrics import NDCG
d = sys.argv[1]
ren = {"user": Columns.User, "item": Columns.Item, "rank": Columns.Rank}
reco = pd.read_csv(d + "/reco.csv").rename(columns=ren)
truth = pd.read_csv(d + "/truth.csv").rename(columns=ren)
out = {}
for k in (1, 3, 5, 10):
    for achievable in (False, True):
        m = NDCG(k=k, divide_by_achievable=achievable)
        out[f"{k}-{achievable}"] = {str(u): v for u, v in
                                    m.calc_per_user(reco, truth).to_dict().items()}
print(json.dumps(out))
"""


def _rectools_case(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Up to 12 users, lists of 0..8 of 15 items with distinct scores; users on one side
    only (RecTools averages over the truth's users: a truth user without a list scores 0)."""
    rng = np.random.default_rng(seed)
    truth_rows, pred_rows = [], []
    for u in range(12):
        if u != 11:  # user 11 has a list and no truth
            for i in rng.choice(15, int(rng.integers(1, 7)), replace=False):
                truth_rows.append((u, int(i)))
        if u != 10:  # user 10 has truth and no list
            items = rng.choice(15, int(rng.integers(0, 9)), replace=False)
            for rank, i in enumerate(items, start=1):
                pred_rows.append((u, int(i), rank))
    return (pd.DataFrame(truth_rows, columns=["user", "item"]),
            pd.DataFrame(pred_rows, columns=["user", "item", "rank"]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rectools_ndcg_ideal_over_k(tmp_path: Path, seed: int) -> None:
    if not RECTOOLS_PYTHON.exists():
        pytest.skip(f"no RecTools environment at {RECTOOLS_PYTHON.parent.parent}: run "
                    "bash .ci/rectools.sh")
    truth, reco = _rectools_case(seed)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    reco.to_csv(tmp_path / "reco.csv", index=False)
    script = tmp_path / "ndcg.py"
    script.write_text(_RECTOOLS_NDCG)
    done = subprocess.run([str(RECTOOLS_PYTHON), str(script), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    want = json.loads(done.stdout.strip().splitlines()[-1])
    preds = reco.assign(score=-reco["rank"].astype(float)).drop(columns="rank")
    differ = 0
    for k in (1, 3, 5, 10):
        for achievable in (False, True):
            ideal = "achievable" if achievable else "k"
            r = receval.evaluate(truth, preds, [f"nDCG@{k}"], ideal=ideal, silence=SILENCE)
            got = {str(u): v for u, v in zip(r.per_user["user"], r.per_user[f"nDCG@{k}"],
                                             strict=True)}
            assert got == pytest.approx(want[f"{k}-{achievable}"], rel=1e-12, abs=1e-15)
            differ += sum(v != pytest.approx(want[f"{k}-{not achievable}"][u], rel=1e-12)
                          for u, v in got.items())
    assert differ > 0  # the two ideals do differ on these inputs


def test_ideal_k_worked_examples() -> None:
    """peer-semantics.md E1 / E3: RecTools' NDCG@10 0.3301 / 0.1799."""
    assert round(_one("acf", "abcde", "nDCG@10", ideal="k"), 4) == 0.3301
    assert round(_one("acf", "bdeac", "nDCG@10", ideal="k"), 4) == 0.1799
    # no cutoff: there is no k, the ideal is the achievable one
    assert _one("acf", "abcde", "nDCG", ideal="k") == _one("acf", "abcde", "nDCG")


def test_ideal_k_needs_binary_gains() -> None:
    with pytest.raises(ReceValError, match=r"ideal='k'.*gain='binary'"):
        receval.Options(ideal="k", gain="linear")


# --- ERR on a fixed grade scale --------------------------------------------------------------


def test_err_fixed_grade_scale() -> None:
    """Grades 3, 0 (not judged), 1 at ranks 1..3 on gdeval's 0..4 scale:
    R = (2^g - 1) / 16, ERR@3 = R1 + (1 - R1) R3 / 3; with the user's own top grade (3)
    g_max = 3; a grade above g_max stops with (2^g_max - 1) / 2^g_max."""
    truth, ratings, ranking = ["a", "c"], [3.0, 1.0], "abc"
    r1, r3 = 7 / 16, 1 / 16
    assert _one(truth, ranking, "ERR@3", ratings, err_max_grade=4) == pytest.approx(
        r1 + (1 - r1) * r3 / 3, rel=1e-15)
    r1, r3 = 7 / 8, 1 / 8
    assert _one(truth, ranking, "ERR@3", ratings) == pytest.approx(r1 + (1 - r1) * r3 / 3,
                                                                 rel=1e-15)
    assert _one(truth, ranking, "ERR@3", ratings, err_max_grade="user") == _one(
        truth, ranking, "ERR@3", ratings)
    r1, r3 = 3 / 4, 1 / 4  # grade 3 clipped to g_max = 2
    assert _one(truth, ranking, "ERR@3", ratings, err_max_grade=2) == pytest.approx(
        r1 + (1 - r1) * r3 / 3, rel=1e-15)


@pytest.mark.parametrize("bad", [-1, "max", math.inf, True])
def test_err_max_grade_refused(bad: object) -> None:
    with pytest.raises(ReceValError, match="err_max_grade"):
        receval.Options(err_max_grade=bad)


def test_options_are_recorded() -> None:
    r = receval.evaluate({"user": ["u"], "item": ["a"]},
                         {"user": ["u"], "item": ["a"], "score": [1.0]}, ["nDCG@2"],
                         discount="log2_max2", ideal="k", err_max_grade="4")
    assert (r.options["discount"], r.options["ideal"], r.options["err_max_grade"]) == (
        "log2_max2", "k", 4.0)


# --- an unknown profile is an error at every entry point -------------------------------------


def test_unknown_profile_is_refused_at_every_door(tmp_path: Path) -> None:
    """evaluate, evaluate_scores, compare, explain, monitor, beyond_metrics and the command
    line: one line naming the profile (beyond_metrics took any name and ignored it)."""
    from click.testing import CliRunner

    from receval.beyond import beyond_metrics
    from receval.cli import main
    from receval.explain import explain

    truth = pd.DataFrame({"user": [1, 1], "item": [10, 11]})
    preds = pd.DataFrame({"user": [1, 1], "item": [10, 12], "score": [2.0, 1.0]})
    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    impressions = preds.assign(served_at=t0)
    feedback = truth.assign(at=t0 + pd.Timedelta("1h"), value=1.0)
    doors = {
        "evaluate": lambda: receval.evaluate(truth, preds, ["P@1"], profile="nope"),
        "evaluate_scores": lambda: receval.evaluate_scores(
            truth, np.array([[1.0, 0.5]]), ["P@1"], user_ids=[1], item_ids=[10, 11],
            profile="nope"),
        "compare": lambda: receval.compare(truth, {"a": preds, "b": preds}, ["P@1"],
                                           profile="nope"),
        "explain": lambda: explain("nope", "ranx", truth, preds, ["P@1"]),
        "monitor": lambda: receval.monitor(impressions, feedback, ["P@1"], profile="nope"),
        "beyond_metrics": lambda: beyond_metrics(preds, ["coverage@2"], train=truth,
                                                 profile="nope"),
    }
    for door, call in doors.items():
        with pytest.raises(ReceValError, match="'nope'") as err:
            call()
        assert "\n" not in str(err.value), door
    # a profile without beyond-accuracy switches changes nothing there: refused too
    with pytest.raises(ReceValError, match="no beyond-accuracy switches"):
        beyond_metrics(preds, ["coverage@2"], train=truth, profile="trec_eval")
    assert beyond_metrics(preds, ["coverage@2"], train=truth, profile="rectools")[0]
    truth.to_csv(tmp_path / "t.csv", index=False)
    preds.to_csv(tmp_path / "p.csv", index=False)
    out = CliRunner().invoke(main, ["evaluate", "-t", str(tmp_path / "t.csv"), "-p",
                                    str(tmp_path / "p.csv"), "-m", "P@1", "--profile", "nope"])
    assert out.exit_code == 2 and "nope" in out.output


# --- profile="lenskit": the expected values of LensKit's own tests ----------------------------

#: (recommended items in rank order, test items, n or None, LensKit metric, its expected value)
#: from lenskit/lkpy @ 3bd1c175 tests/eval/test_rank_{precision,recall,map,ndcg}.py
LENSKIT_CASES = [
    ([1, 3], [1, 3], None, "Precision", 1.0),
    ([1], [1, 3], None, "Precision", 1.0),
    ([1, 2, 3, 4], [1, 3], None, "Precision", 0.5),
    ([1, 2, 3, 4], [1, 3, 5], None, "Precision", 0.5),
    ([1, 2, 3, 4], range(5, 10), None, "Precision", 0.0),
    ([1, 2, 3, 4], range(4, 10), None, "Precision", 0.25),
    ([1, 0, 150, 3, 10], range(100), 5, "Precision", 0.8),
    ([1, 0, 150, 3, 10, 30, 120, 4, 17], range(100), 5, "Precision", 0.8),
    ([1, 0, 150], range(100), 5, "Precision", 2 / 3),  # divided by the 3 returned
    ([1, 3], [1, 3], None, "Recall", 1.0),
    ([1], [1, 3], None, "Recall", 0.5),
    ([1, 2, 3, 4], [1, 3], None, "Recall", 1.0),
    ([1, 2, 3, 4], [1, 3, 5], None, "Recall", 2 / 3),
    ([1, 2, 3, 4], range(5, 10), None, "Recall", 0.0),
    ([1, 2, 3, 4], range(4, 9), None, "Recall", 0.2),
    ([1, 0, 150, 3, 10], range(100), 5, "Recall", 0.8),  # divided by min(n, |test|)
    ([1, 0, 150, 3, 10, 30, 120, 4, 17], range(100), 5, "Recall", 0.8),
    ([1, 0, 150, 3, 10], range(100), 10, "Recall", 0.4),
    ([1, 3, 5], [1, 3, 5], None, "AveragePrecision", 1.0),
    ([1, 2, 3], [1, 3], None, "AveragePrecision", (1.0 + 2 / 3) / 2),
    ([1, 2, 3], [2, 4], None, "AveragePrecision", 0.25),
    ([1, 2, 3, 4, 5], [1, 3, 5], 3, "AveragePrecision", (1.0 + 2 / 3) / 3),
    ([1, 2, 3, 4, 5], [4, 5, 6], 2, "AveragePrecision", 0.0),
    ([10, 20, 30], [1, 2, 3], None, "AveragePrecision", 0.0),
    ([2, 3, 1], [1, 2, 3], None, "NDCG", 1.0),
    ([2, 3, 1], [1, 2, 3], 2, "NDCG", 1.0),
    ([4], [1, 2, 3], None, "NDCG", 0.0),
    ([1, 3], [1, 2, 3], 2, "NDCG", 1.0),
    ([1, 2], [1, 2, 3], None, "NDCG", 2 / (2 + 1 / math.log2(3))),  # fixed_dcg(2) / (3)
]
_RECEVAL = {"Precision": "P", "Recall": "R", "AveragePrecision": "AP", "NDCG": "nDCG"}


@pytest.mark.parametrize(("items", "test", "n", "metric", "want"), LENSKIT_CASES)
def test_lenskit_profile_gives_lenskits_test_values(items, test, n, metric, want) -> None:
    name = _RECEVAL[metric] + ("@1000" if n is None and metric == "Precision" else
                               "" if n is None else f"@{n}")
    got = _one(list(test), list(items), name, profile="lenskit")
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_lenskit_profile_worked_examples_and_ap_denominator() -> None:
    """peer-semantics.md E1 (LensKit: P@10 0.4 over the 5 returned, R@10 0.6667, AP@10
    0.5556, nDCG@10 0.6199) and E3 (AP@10 0.2167, nDCG@10 0.3537); AP over min(L, returned):
    3 relevant items, a list of 2 with one hit at rank 2: (1/2) / 2, where min(k, L) gives
    (1/2) / 3."""
    r = receval.evaluate({"user": ["u"] * 3, "item": list("acf")},
                         {"user": ["u"] * 5, "item": list("abcde"),
                          "score": [5.0, 4, 3, 2, 1]},
                         ["P@10", "R@10", "AP@10", "nDCG@10"], profile="lenskit")
    assert {m: round(v, 4) for m, v in r.summary.items()} == {
        "P@10": 0.4, "R@10": 0.6667, "AP@10": 0.5556, "nDCG@10": 0.6199}
    assert round(_one("acf", "bdeac", "AP@10", profile="lenskit"), 4) == 0.2167
    assert round(_one("acf", "bdeac", "nDCG@10", profile="lenskit"), 4) == 0.3537
    assert _one("acf", "ba", "AP@10", profile="lenskit") == 0.25
    assert _one("acf", "ba", "AP@10") == pytest.approx(0.5 / 3, rel=1e-15)


# --- all_skipped: torchmetrics' empty_target_action="skip" when every query is skipped ---------


def test_all_skipped_zero_is_torchmetrics_skip_with_nothing_left() -> None:
    """No query has a positive target: torchmetrics' RetrievalMAP(empty_target_action="skip")
    gives 0.0 (base.py compute: an empty list of values), receval NaN by default; the
    torchmetrics profile sets all_skipped="zero". Where some value is left it changes
    nothing."""
    tr = pytest.importorskip("torchmetrics.retrieval")
    torch = pytest.importorskip("torch")
    scores = torch.tensor([0.9, 0.5, 0.7])
    target = torch.tensor([0, 0, 0])
    indexes = torch.tensor([0, 0, 1])
    want = float(tr.RetrievalMAP(top_k=2, empty_target_action="skip")(scores, target,
                                                                      indexes=indexes))
    assert want == 0.0
    truth = {"user": [0, 1], "item": ["x", "y"], "rating": [0.0, 0.0]}
    preds = {"user": [0, 0, 1], "item": ["a", "b", "c"], "score": [0.9, 0.5, 0.7]}
    kw = {"silence": [*SILENCE, "undefined"]}
    got = receval.evaluate(truth, preds, ["AP@2"], profile="torchmetrics", empty="skip", **kw)
    assert got["AP@2"] == want
    plain = receval.evaluate(truth, preds, ["AP@2"], relevance_threshold=1, empty="skip", **kw)
    assert math.isnan(plain["AP@2"])
    zero = receval.evaluate(truth, preds, ["AP@2"], relevance_threshold=1, empty="skip",
                            all_skipped="zero", **kw)
    assert zero["AP@2"] == 0.0 and zero.options["all_skipped"] == "zero"
    truth = {"user": [0, 1], "item": ["x", "c"], "rating": [0.0, 1.0]}  # user 1: AP 1
    some = receval.evaluate(truth, preds, ["AP@2"], relevance_threshold=1, empty="skip",
                            all_skipped="zero", **kw)
    assert some["AP@2"] == 1.0


def test_geometric_discount_is_rbps_user() -> None:
    """discount="geometric": the gain at rank r weighs p^(r - 1) (RBP's browsing model);
    hits at ranks 1 and 3 of 3 relevant items, p = 0.5: DCG 1 + 1/4, ideal 1 + 1/2 + 1/4."""
    geo = {"discount": "geometric", "persistence": 0.5}
    assert _one("acf", "abcde", "DCG@10", **geo) == 1.25
    assert _one("acf", "abcde", "nDCG@10", **geo) == pytest.approx(1.25 / 1.75, rel=1e-15)
    assert _one("acf", "abcde", "nDCG@10", ideal="k", **geo) == pytest.approx(
        1.25 / sum(0.5**j for j in range(10)), rel=1e-15)
    with pytest.raises(ReceValError, match="persistence"):
        receval.Options(discount="geometric", persistence=1.0)


# --- LensKit's RBP(normalize=...) and MeanPopRank ----------------------------------------------


def test_lenskit_rbp_is_geometric_dcg() -> None:
    """LensKit RBP(n=k, patience=p) = (1 - p) x DCG@k with discount='geometric' and
    RBP(normalize=True) = nDCG@k under the same discount (the ideal over min(|test|, k) ranks).
    Expected values of lenskit/lkpy tests/eval/test_rank_rbp.py (3bd1c175): one match at rank 1
    of 3 test items, p = 0.85: 0.15 (test_rbp_one_match); items 1, 2 of 1, 2, 3, p = 0.5: 0.75
    (test_rbp_missing); a perfect list normalised: 1.0 (test_rbp_perfect_k_norm)."""
    geo = {"discount": "geometric"}
    assert (1 - 0.85) * _one([1, 2, 3], [1], "DCG@10", persistence=0.85, **geo) == \
        pytest.approx(0.15, abs=1e-15)
    assert (1 - 0.5) * _one([1, 2, 3], [1, 2], "DCG@2", persistence=0.5, **geo) == 0.75
    for k in (1, 3, 7):
        assert _one(list(range(1, 8)), list(range(1, 8)), f"nDCG@{k}", persistence=0.3,
                    **geo) == pytest.approx(1.0, abs=1e-15)
    # a miss at rank 1, hits at 2 and 3 of 3 test items, p = 0.5, k = 3:
    # (0.5 + 0.25) / (1 + 0.5 + 0.25)
    assert _one([1, 2, 3], [9, 1, 2], "nDCG@3", persistence=0.5, **geo) == \
        pytest.approx(0.75 / 1.75, abs=1e-15)


def test_mean_pop_rank_is_lenskits() -> None:
    """LensKit MeanPopRank (src/lenskit/metrics/ranking/_pop.py): q(i) = the ascending average
    rank of i's popularity among the trained items over their number (1 the most popular, 0
    an item absent from training), averaged over the list; count='users' by default, which
    the lenskit profile sets. LensKit's own tests (tests/eval/test_rank_popularity.py) use
    MovieLens; their checks are restated here: the most popular item alone gives 1, with an
    untrained item 0.5, and any list the mean of pandas' rank(method='average') / n."""
    train = pd.DataFrame({"user": ["a", "a", "b", "b", "c", "c", "c", "c", "c", "d"],
                          "item": ["x", "x", "x", "y", "y", "z", "w", "w", "w", "x"]})
    truth = pd.DataFrame({"user": ["u"], "item": ["x"]})

    def mpr(items: list[str], **kw: object) -> float:
        preds = pd.DataFrame({"user": ["u"] * len(items), "item": items,
                              "score": [float(len(items) - j) for j in range(len(items))]})
        return receval.evaluate(truth, preds, ["MeanPopRank@10"], train=train,
                                silence=SILENCE, **kw)["MeanPopRank@10"]

    assert mpr(["x"]) == 1.0
    assert mpr(["cold", "x"]) == 0.5
    for counting, beyond in (("count", None), ("user_count", {"popularity": "users"})):
        if counting == "count":
            counts = train.groupby("item").size()
        else:
            counts = train.drop_duplicates().groupby("item")["user"].nunique()
        q = counts.rank(method="average") / len(counts)
        want = float(q.reindex(["w", "y", "cold", "z"], fill_value=0.0).mean())
        kw = {} if beyond is None else {"beyond": beyond}
        assert mpr(["w", "y", "cold", "z"], **kw) == pytest.approx(want, abs=1e-15)
    # rows: x 4, w 3, y 2, z 1; distinct users (the lenskit profile): x 3, y 2, w 1, z 1
    assert mpr(["w"]) == 3 / 4
    assert mpr(["w"], profile="lenskit") == 1.5 / 4
