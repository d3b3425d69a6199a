"""One randomness rule (issue 21, point 5): every generator of receval is made by
receval.randomness and keyed by what it draws for, so the order of models, groups, targets or
users and the thread count change no bit."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import numba
import numpy as np
import pandas as pd
import pytest

import receval
from receval import randomness
from receval.baselines import random as random_baseline
from receval.report.bootstrap import metric_cis
from receval.sampled import sample_candidates
from receval.stats.resample import bootstrap_sums, sign_flip_sums

SRC = Path(receval.__file__).parent
#: calls that make a generator
MAKERS = {"default_rng", "SeedSequence", "RandomState", "Generator", "seed", "manual_seed"}
#: modules that may call them: the helper, and a public function handed a seed or a stream
ALLOWED = {"randomness.py": "the one helper",
           "report/bootstrap.py": "bootstrap_ci(values, seed=int | stream): its caller's seed"}


def _makers() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names]
                module = getattr(node, "module", None) or ""
                if "random" in names or module == "random":  # the stdlib's global stream
                    found.setdefault(str(path.relative_to(SRC)), []).append(node.lineno)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in MAKERS:
                owner = ast.unparse(node.func.value)
                if owner.endswith("random") or owner == "torch":
                    found.setdefault(str(path.relative_to(SRC)), []).append(node.lineno)
    return found


def test_every_generator_is_made_by_receval_randomness() -> None:
    outside = {f: lines for f, lines in _makers().items() if f not in ALLOWED}
    assert not outside, outside


def test_the_streams_table_names_every_door() -> None:
    for door in ("compare", "report interval", "monitor interval", "sampled negatives",
                 "split", "random baseline", "offpolicy", "gate"):
        assert door in randomness.STREAMS


def test_keyed_is_the_old_per_user_generators_bit_for_bit() -> None:
    # sampled.py and training.user_seed built these by hand: the same bits now
    for seed, keys in ((0, (5,)), (7, (1, 2**63 + 5)), (2**40, (0, 3))):
        old = np.random.default_rng([seed, *keys]).random(8)
        assert np.array_equal(randomness.keyed(seed, *keys).random(8), old)
    assert np.array_equal(randomness.keyed(7).random(8), np.random.default_rng(7).random(8))


# --- the order of what is drawn for changes nothing ------------------------------------------

USERS = [f"u{i}" for i in range(40)]


def _runs() -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    rng = np.random.default_rng(3)  # the test's data, not receval's
    truth = pd.DataFrame({"user": np.repeat(USERS, 3),
                          "item": rng.integers(0, 30, 120)}).drop_duplicates()
    runs = {}
    for name in ("a", "b", "c"):
        rows = [(u, i, float(s)) for u in USERS
                for i, s in zip(rng.choice(30, 10, replace=False), rng.random(10), strict=True)]
        runs[name] = pd.DataFrame(rows, columns=["user", "item", "score"])
    return truth, runs


def test_compare_is_the_same_whatever_the_order_of_models_and_metrics() -> None:
    truth, runs = _runs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = receval.compare(truth, runs, ["P@5", "nDCG@10"], test="bootstrap",
                              n_resamples=500, seed=4).table
        two = receval.compare(truth, dict(reversed(runs.items())), ["nDCG@10", "P@5"],
                              test="bootstrap", n_resamples=500, seed=4).table
    keys = ["model", "baseline", "metric"]
    one = one.set_index(keys).sort_index()
    two = two.set_index(keys).sort_index()[one.columns]
    pd.testing.assert_frame_equal(one, two, check_exact=True)


def test_report_intervals_are_the_same_whatever_the_order_of_models() -> None:
    truth, runs = _runs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = {n: receval.evaluate(truth, r, ["P@5"]) for n, r in runs.items()}
    one = metric_cis(results, ["P@5"], n_resamples=300, seed=2)
    two = metric_cis(dict(reversed(results.items())), ["P@5"], n_resamples=300, seed=2)
    assert one == two


def test_html_difference_intervals_are_keyed_by_the_pair() -> None:
    from receval.report import html

    truth, runs = _runs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = {n: receval.evaluate(truth, r, ["P@5"]) for n, r in runs.items()}
    base = results["a"]
    first = html._difference("a", base, "b", results["b"], "P@5", 1)
    html._difference("a", base, "c", results["c"], "P@5", 1)  # another pair drawn first
    assert html._difference("a", base, "b", results["b"], "P@5", 1) == first
    # the same differences under another name: another stream (before, every pair of the
    # report drew from the seed's one stream, so their intervals moved together)
    twin = html._difference("a", base, "b2", results["b"], "P@5", 1)
    assert twin["mean"] == first["mean"] and twin["ci"] != first["ci"]


def test_sampled_negatives_and_random_baseline_ignore_the_order_of_users() -> None:
    train = pd.DataFrame({"user": np.repeat(USERS, 2), "item": np.arange(80) % 30})
    test = pd.DataFrame({"user": USERS, "item": np.arange(40) % 30 + 1})
    one = sample_candidates(train, test, 5, items=range(60), seed=9)
    two = sample_candidates(train, test.iloc[::-1], 5, items=range(60), seed=9)
    key = ["user", "item"]
    pd.testing.assert_frame_equal(one.sort_values(key).reset_index(drop=True),
                                  two.sort_values(key).reset_index(drop=True))
    first = random_baseline(train, USERS, k=4, seed=5)
    second = random_baseline(train, USERS[::-1], k=4, seed=5)
    pd.testing.assert_frame_equal(first.sort_values(key).reset_index(drop=True),
                                  second.sort_values(key).reset_index(drop=True))


def test_offpolicy_intervals_ignore_the_order_of_targets() -> None:
    offpolicy = pytest.importorskip("receval.offpolicy")
    rng = np.random.default_rng(1)  # the test's data
    n = 300
    log = pd.DataFrame({"request": np.arange(n), "item": rng.integers(0, 4, n), "position": 1,
                        "propensity": np.full(n, 0.25), "reward": rng.integers(0, 2, n)})
    targets = {}
    for name in ("x", "y"):
        scores = rng.random((n, 4))
        targets[name] = pd.DataFrame({"request": np.repeat(np.arange(n), 4),
                                      "item": np.tile(np.arange(4), n),
                                      "score": scores.ravel()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = offpolicy.estimate(log, targets, n_resamples=200, seed=3).table
        two = offpolicy.estimate(log, dict(reversed(targets.items())), n_resamples=200,
                                 seed=3).table
    keys = [c for c in ("target", "estimator") if c in one.columns]
    pd.testing.assert_frame_equal(one.sort_values(keys).reset_index(drop=True),
                                  two.sort_values(keys).reset_index(drop=True)[one.columns],
                                  check_exact=True)


# --- the thread count changes nothing --------------------------------------------------------


@pytest.mark.parametrize("resample", [bootstrap_sums, sign_flip_sums])
def test_resamples_are_the_same_on_one_thread_and_on_all(resample: object) -> None:
    x = np.random.default_rng(0).normal(size=2000)  # the test's data
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = resample(x, 400, randomness.stream(5, "t"))  # type: ignore[operator]
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = resample(x, 400, randomness.stream(5, "t"))  # type: ignore[operator]
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one, many)


def test_monitor_intervals_ignore_the_order_of_rows_and_variants() -> None:
    rng = np.random.default_rng(6)  # the test's data
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    imp, fb = [], []
    for day in range(6):
        for u in range(20):
            s = t0 + pd.Timedelta(days=day, minutes=int(rng.integers(0, 1440)))
            for r, i in enumerate(rng.choice(15, 3, replace=False)):
                imp.append((u, int(i), r + 1, s, "A" if u % 2 else "B"))
                if rng.random() < 0.4:
                    fb.append((u, int(i), 1.0, s + pd.Timedelta(hours=2)))
    impressions = pd.DataFrame(imp, columns=["user", "item", "rank", "served_at", "variant"])
    feedback = pd.DataFrame(fb, columns=["user", "item", "value", "at"])
    kw = {"window": "2D", "attribution": "1D", "variant_col": "variant", "n_resamples": 200,
          "seed": 8, "min_feedback": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = receval.monitor(impressions, feedback, ["P@3"], **kw)
        two = receval.monitor(impressions.iloc[::-1], feedback.iloc[::-1], ["P@3"], **kw)
    for frame in ("windows", "comparisons"):
        a, b = getattr(one, frame), getattr(two, frame)
        keys = [c for c in a.columns if a[c].dtype == object or "start" in c]
        pd.testing.assert_frame_equal(a.sort_values(keys).reset_index(drop=True),
                                      b.sort_values(keys).reset_index(drop=True)[a.columns],
                                      check_exact=True)
