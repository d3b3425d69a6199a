"""Work split over threads gives the numbers of one thread, bit for bit.

The pool is forced to 4 threads (whatever the machine has, so that CI on one core runs the
threaded path too) and compared with 1 thread: grouping by user, encoding, the kernel (with
ties and duplicates under every policy) and the aggregation.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import receval
from receval import accumulate
from receval import parallel as threads
from receval.aggregate import aggregate
from receval.data.csr import group_by_user
from receval.engines.numba_engine import MIN_BLOCK_USERS
from receval.measures.spec import parse_metrics
from receval.options import Options

METRICS = ["P@1", "P@5", "R@10", "F1@5", "AP@10", "MAP", "nDCG@5", "nDCG", "MRR", "Hit@3",
           "Rprec", "RMSE"]


@pytest.fixture()
def four_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "n_threads", lambda: 4)


def _frames(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n_t, n_p = 30_000, 120_000
    truth = pd.DataFrame({"user": rng.integers(0, 3_000, n_t), "item": rng.integers(0, 500, n_t),
                          "rating": rng.integers(1, 6, n_t).astype(float)})
    preds = pd.DataFrame({"user": rng.integers(0, 3_000, n_p), "item": rng.integers(0, 500, n_p),
                          "score": rng.integers(0, 20, n_p) / 20})  # many ties
    return truth, preds


def _run(truth: pd.DataFrame, preds: pd.DataFrame, **options: object) -> receval.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(truth, preds, METRICS, duplicates="max", **options)


@pytest.mark.parametrize("ties", ["stable", "item", "average"])
@pytest.mark.parametrize("average", ["macro", "micro"])
def test_threads_give_the_numbers_of_one_thread(monkeypatch: pytest.MonkeyPatch, ties: str,
                                                average: str) -> None:
    truth, preds = _frames(3)
    monkeypatch.setattr(threads, "n_threads", lambda: 1)
    one = _run(truth, preds, ties=ties, average=average, relevance_threshold=3)
    monkeypatch.setattr(threads, "n_threads", lambda: 4)
    blocks = threads.block_bounds(3_000, min_size=MIN_BLOCK_USERS)
    assert len(blocks) > 1  # the kernel's users really go to several threads
    four = _run(truth, preds, ties=ties, average=average, relevance_threshold=3)
    pd.testing.assert_frame_equal(one.per_user, four.per_user, check_exact=True)
    assert one.counts == four.counts
    assert one.summary == four.summary  # bit for bit: the sums are exact


@pytest.mark.parametrize("average", ["macro", "micro"])
def test_summary_is_the_same_bit_for_bit_on_any_number_of_threads(
        monkeypatch: pytest.MonkeyPatch, average: str) -> None:
    """Enough users (40,000) that the summary sums span many blocks; real-valued metrics, so
    the order of the additions shows in the last bits."""
    rng = np.random.default_rng(11)
    n_t, n_p = 120_000, 200_000
    truth = pd.DataFrame({"user": rng.integers(0, 40_000, n_t), "item": rng.integers(0, 300, n_t),
                          "rating": rng.integers(1, 6, n_t).astype(float)})
    preds = pd.DataFrame({"user": rng.integers(0, 40_000, n_p), "item": rng.integers(0, 300, n_p),
                          "score": rng.random(n_p)})
    metrics = ["nDCG@3", "nDCG", "MAP", "MRR", "R@5", "RMSE", "MAE"]
    summaries = []
    per_user = []
    for n in (1, 2, 3, 7):
        monkeypatch.setattr(threads, "n_threads", lambda n=n: n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = receval.evaluate(truth, preds, metrics, duplicates="first",
                                      gain="linear", average=average)
        summaries.append(result.summary)
        per_user.append(result.per_user)
    assert all(s == summaries[0] for s in summaries), summaries
    for frame in per_user[1:]:
        pd.testing.assert_frame_equal(frame, per_user[0], check_exact=True)


def test_grouping_by_user_in_chunks_is_stable(four_threads: None) -> None:
    rng = np.random.default_rng(5)
    n, n_users = 450_000, 70_000  # 4 chunks of input, buckets of users sorted in 32 blocks
    codes = rng.integers(0, n_users, n).astype(np.int32)
    items, values = rng.integers(0, 10**9, n), rng.random(n)
    csr = group_by_user(codes, n_users, items, values)
    order = np.argsort(codes, kind="stable")
    assert np.array_equal(csr.items, items[order])
    assert np.array_equal(csr.values, values[order])
    assert np.array_equal(csr.indptr[1:], np.cumsum(np.bincount(codes, minlength=n_users)))


def test_an_error_in_a_block_reaches_the_caller(four_threads: None) -> None:
    def fail_on_third(i: int, lo: int, hi: int) -> None:
        if i == 2:
            raise ValueError(f"block {i} ({lo}:{hi}) failed")

    with pytest.raises(ValueError, match="block 2"):
        threads.run_blocks(fail_on_third, threads.block_bounds(100))


def test_summary_sums_do_not_depend_on_how_the_threads_split_the_users(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A mean whose last bit depends on where the sums are split: 1 + 4 * 2^-54 is exact in
    one sum (1 + 2^-52), but split as (1 + 2 * 2^-54) + 2 * 2^-54 each half rounds to even
    and gives 1. The sums are exact, so any split gives the exactly rounded mean."""
    n = 16_384
    column = np.zeros(n)
    column[[0]] = 1.0
    column[[1, 2, 4096, 4097]] = 2.0**-54
    exact = (1.0 + 2.0**-52) / n  # the sum is exact in floats: so is the mean (a power of 2)
    specs = parse_metrics(["nDCG"])
    for n_threads in (1, 2, 3, 7):
        monkeypatch.setattr(threads, "n_threads", lambda n_threads=n_threads: n_threads)
        monkeypatch.setattr(accumulate, "_MIN_BLOCK_ROWS", 64)  # many blocks
        out = SimpleNamespace(value=column.reshape(-1, 1).copy(), num=np.zeros((0, 1)),
                              den=np.zeros((0, 1)), den2=np.zeros((0, 1)),
                              n_relevant=np.ones(n, np.int64), gain_shift=np.zeros(n))
        summary = aggregate(specs, out, Options(), str).summary
        assert summary["nDCG"] == exact, n_threads


def test_summary_is_the_exactly_rounded_mean_of_the_per_user_values(
        monkeypatch: pytest.MonkeyPatch) -> None:
    truth, preds = _frames(8)
    monkeypatch.setattr(threads, "n_threads", lambda: 3)
    result = _run(truth, preds, empty="skip", average="macro")
    for name in ("nDCG@5", "MAP", "MRR", "R@10"):
        values = result.per_user[name].dropna()
        exact = sum((Fraction(float(v)) for v in values), Fraction(0)) / len(values)
        assert result.summary[name] == float(exact), name
