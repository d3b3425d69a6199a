"""The typed engine request: the plan resolves the options once, under their names, and every
engine reads the same request (numba packs it, torch reads the names); the host judging the
torch engine and score matrices share gives the numba kernel's relevance, bit for bit."""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from torch_device import TORCH_DEVICE

from receval.engines.judge import relevant_rows, row_gains
from receval.engines.numba_engine import run_kernel
from receval.engines.request import EngineRequest, Lists
from receval.options import Options

pytestmark = pytest.mark.torch_device

FIELDS = frozenset({"hits", "ap_sum", "dcg", "idcg", "first", "rr_sum", "hits_at_r", "n_list",
                    "top_items", "judged_ranks", "judged_rel", "judged_rating"})


def _lists(seed: int, n_users: int = 60) -> Lists:
    """Random CSRs: heavy score ties, ratings 0..4 (ties with the user's mean), users with an
    empty list or an empty truth."""
    rng = np.random.default_rng(seed)
    p_len = rng.integers(0, 12, n_users)
    t_len = rng.integers(0, 8, n_users)
    p_items = np.concatenate([rng.choice(30, n, replace=False) for n in p_len]).astype(np.int64)
    t_items = np.concatenate([rng.choice(30, n, replace=False) for n in t_len]).astype(np.int64)
    return Lists(np.arange(n_users, dtype=np.int64),
                 np.concatenate([[0], np.cumsum(t_len)]).astype(np.int64), t_items,
                 rng.integers(0, 5, len(t_items)).astype(np.float64),
                 np.concatenate([[0], np.cumsum(p_len)]).astype(np.int64), p_items,
                 rng.integers(0, 4, len(p_items)).astype(np.float64))


def test_the_plan_names_every_option_the_engines_read():
    lists = _lists(0)
    r = EngineRequest.plan(lists, Options(ties="item_ascending", relevance_threshold=3,
                                          protocol="known", score_threshold=1, max_list=5,
                                          gain="exponential", discount="geometric",
                                          persistence=0.5),
                           np.array([0, 3]), {"hits", "top_items"}, top_k=4)
    assert (r.ties, r.relevance_threshold, r.known_only, r.score_threshold) == (
        "stable", 3.0, True, 1.0)
    assert (r.gain, r.discount, r.persistence, r.max_list, r.top_k) == (
        "exponential", "geometric", 0.5, 5, 4)
    assert r.cut_ks.tolist() == [3] and r.need_all and r.kmax == 3 and not r.need_rprec
    user_mean = EngineRequest.plan(lists, Options(relevance_threshold="user_mean"),
                                   np.array([3]), {"hits"}, top_k=4)
    assert user_mean.relevance_threshold == "user_mean"
    assert user_mean.top_k == 0  # no top_items asked for
    assert user_mean.max_list is None and user_mean.score_threshold is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        user_mean.ties = "average"  # type: ignore[misc]
    judged = r.judging_only()
    assert judged.cutoffs.size == 0 and judged.fields == frozenset() and judged.ties == "stable"


OPTION_SETS = [
    {},
    {"relevance_threshold": 2},
    {"relevance_threshold": "user_mean", "gain": "linear"},
    {"relevance_threshold": 1, "gain": "exponential", "discount": "log2_max2"},
    {"protocol": "known", "ties": "pessimistic"},
    {"score_threshold": 1.5, "ties": "optimistic"},
    {"max_list": 4, "ties": "item", "relevance_threshold": 3},
    {"ties": "average", "relevance_threshold": "user_mean"},
    {"discount": "geometric", "persistence": 0.7, "relevance_threshold": 2},
]


@pytest.mark.parametrize("opts", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}"
                                                                         for k, v in o.items()))
def test_numba_and_torch_read_the_same_request(opts):
    torch_engine = pytest.importorskip("receval.engines.torch_engine")
    request = EngineRequest.plan(_lists(1), Options(**opts), np.array([0, 1, 3, 5]), FIELDS,
                                 top_k=5)
    numba_pic, numba_audit = run_kernel(request)
    torch_pic, torch_audit = torch_engine.run_kernel(request, device=TORCH_DEVICE)
    for name in ("n_relevant", "n_list", "hits", "ap_sum", "dcg", "idcg", "first", "rr_sum",
                 "hits_at_r", "top_items", "judged_ranks", "judged_rel", "judged_rating",
                 "max_rel_rating", "n_judged"):
        np.testing.assert_array_equal(getattr(torch_pic, name), getattr(numba_pic, name),
                                      err_msg=name)
    for name in ("n_predicted", "n_without_truth", "n_below_score_threshold", "tie_at_cut"):
        np.testing.assert_array_equal(getattr(torch_audit, name), getattr(numba_audit, name),
                                      err_msg=name)


@pytest.mark.parametrize(("threshold", "seed"),
                         itertools.product([None, 0, 2.5, 4, "user_mean"], [2, 3]))
def test_shared_judging_counts_the_kernels_relevant_items(threshold, seed):
    """relevant_rows (the torch engine's and score matrices' judging) relevant where the
    numba kernel is: its n_relevant per user, user_mean included (the mean's sum order)."""
    lists = _lists(seed)
    t_len = np.diff(lists.t_indptr)
    owner = np.repeat(np.arange(len(t_len)), t_len)
    pic, _ = run_kernel(EngineRequest.plan(lists, Options(relevance_threshold=threshold),
                                           np.array([1]), {"hits"}))
    relevant = relevant_rows(owner, lists.t_values, threshold, len(t_len))
    counts = np.bincount(owner, weights=relevant, minlength=len(t_len)).astype(np.int64)
    np.testing.assert_array_equal(counts, pic.n_relevant)


def test_user_mean_is_exact_whatever_the_order_or_the_names():
    """0.1 + 0.2 + 0.3 is 0.6000000000000001 in a running float sum and 0.6 the other way:
    the mean is the exact sum (math.fsum, correctly rounded) over the count, so it does not
    depend on the row order nor on the item names (item keys play no part)."""
    from receval.engines.judge import user_means

    fsum_mean = math.fsum([0.1, 0.2, 0.3]) / 3  # the formula, by hand: 0.6 / 3
    assert fsum_mean == 0.6 / 3 == 0.19999999999999998
    assert (0.1 + 0.2 + 0.3) / 3 == 0.20000000000000004  # the old item-order sum
    owner = np.zeros(3, dtype=np.int64)
    for ratings in itertools.permutations([0.1, 0.2, 0.3]):
        r = np.array(ratings)
        assert user_means(owner, r, 1).tolist() == [fsum_mean]
        # 0.2 >= 0.19999999999999998: relevant in every order (the old sum said no in one)
        assert relevant_rows(owner, r, "user_mean", 1).tolist() == [x >= 0.2 for x in ratings]


def test_exact_sums_are_math_fsum():
    """The jitted exact sum (both judges') is math.fsum bit for bit, on sums that a running
    sum gets wrong (cancellation, magnitudes 1e-3..1e3, halfway cases)."""
    from receval.engines.exact_sum import user_sums

    rng = np.random.default_rng(6)
    n_users = 300
    owner = rng.integers(0, n_users, 5000)
    ratings = rng.random(5000) * 10.0 ** rng.integers(-3, 4, 5000) * rng.choice([-1, 1], 5000)
    got = user_sums(owner, ratings, n_users)
    want = np.array([math.fsum(ratings[owner == u].tolist()) for u in range(n_users)])
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
    for hard in ([1e16, 1.0, 1e-16], [1.0, 1e100, 1.0, -1e100], [2.0**53, 1.0, 1e-300],
                 [0.1] * 10, [1e308, -1e308, 0.5], [2.0**53, 1.0, -(2.0**-30)]):
        got1 = user_sums(np.zeros(len(hard), np.int64), np.array(hard), 1)[0]
        assert got1 == math.fsum(hard), hard


def test_user_mean_the_kernel_judges_as_the_host_in_every_order():
    """Each user rates three items 0.1, 0.2 and 0.3 in a random assignment and row order:
    the exact mean makes 0.2 relevant for every user (two relevant items each), in the numba
    kernel and on the host alike."""
    rng = np.random.default_rng(5)
    n_users = 200
    t_items = np.concatenate([rng.permutation(3) for _ in range(n_users)]).astype(np.int64)
    t_values = np.concatenate([rng.permutation([0.1, 0.2, 0.3]) for _ in range(n_users)])
    t_indptr = np.arange(0, 3 * n_users + 1, 3, dtype=np.int64)
    p_indptr = np.zeros(n_users + 1, dtype=np.int64)
    lists = Lists(np.arange(n_users, dtype=np.int64), t_indptr, t_items, t_values, p_indptr,
                  np.zeros(0, np.int64), np.zeros(0))
    pic, _ = run_kernel(EngineRequest.plan(lists, Options(relevance_threshold="user_mean"),
                                           np.array([1]), {"hits"}))
    owner = np.repeat(np.arange(n_users), 3)
    relevant = relevant_rows(owner, t_values, "user_mean", n_users)
    counts = np.bincount(owner, weights=relevant, minlength=n_users).astype(np.int64)
    assert set(pic.n_relevant.tolist()) == {2}  # 0.2 and 0.3, whatever the order
    np.testing.assert_array_equal(counts, pic.n_relevant)


def test_gains():
    ratings = np.array([3.0, 2.0, 5000.0])
    relevant = np.array([True, False, True])
    assert row_gains(ratings, relevant, "binary").tolist() == [1.0, 0.0, 1.0]
    assert row_gains(ratings, relevant, "linear").tolist() == [3.0, 0.0, 5000.0]
    assert row_gains(ratings, relevant, "exponential").tolist() == [7.0, 0.0, np.inf]


def test_engine_kernels_live_under_engines():
    """The compiled kernels are the engines' (engines/fill_picture.py, engines/gains.py); the
    metric definitions under measures/ compile only the DCG discount they share with them."""
    measures = Path(__file__).parents[1] / "src" / "receval" / "measures"
    compiled = sorted(p.name for p in measures.glob("*.py") if "numba.njit" in p.read_text())
    assert compiled == ["discounts.py"]
