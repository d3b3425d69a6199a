"""Sums over ranks are added left to right on every device.

A float sum depends on its order; CUDA's scans and atomics add in a tree or any order, so the
torch engine adds in rank order where the device does not (``ordered_scan``, the tie groups'
sums). These tests run those device paths on the CPU, by declaring that the CPU does not add
in order (``IN_ORDER_DEVICES`` empty), and check that they give the numba engine's bits.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch engine needs torch")

from test_engine_conformance import METRICS, TIES, _both, _case, _compare  # noqa: E402

import receval.measures._arrays as arrays  # noqa: E402
from receval.measures._arrays import ordered_scan, row_sum  # noqa: E402


@pytest.fixture
def device_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every device, the CPU included, takes the paths of a device that adds in any order."""
    monkeypatch.setattr(arrays, "IN_ORDER_DEVICES", frozenset())


def test_order_changes_the_last_bit() -> None:
    # the test below can fail: a pairwise sum of these rounds differently from a running one
    x = np.array([1.0] + [1e-16] * 15)
    running = 0.0
    for v in x:
        running += v
    assert running == 1.0
    assert np.sum(x) != running  # numpy adds eight running sums, then pairs them
    assert row_sum(x[None, :], np).tolist() == [running]
    assert row_sum(torch.from_numpy(x)[None, :], torch).tolist() == [running]


@pytest.mark.usefixtures("device_order")
@pytest.mark.parametrize("op", ["sum", "prod"])
@pytest.mark.parametrize("width", [1, 2, 3, 17, 300])
def test_ordered_scan_is_the_running_one(op: str, width: int,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(width)
    x = rng.random((50, width)) * 2.0 + 0.1
    expected = np.cumsum(x, axis=1) if op == "sum" else np.cumprod(x, axis=1)
    np.testing.assert_array_equal(ordered_scan(torch.from_numpy(x), op).numpy(), expected)
    monkeypatch.setattr(arrays, "DEVICE_SEQUENTIAL_MAX", 8)  # wide rows: added on the host
    np.testing.assert_array_equal(ordered_scan(torch.from_numpy(x), op).numpy(), expected)


@pytest.mark.usefixtures("device_order")
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_device_paths_give_the_numba_engine_bits(ties: str, seed: int) -> None:
    # ERR, RBP, bpref and NCRR read the judged ranks, which average ties do not fix
    metrics = METRICS + ([] if ties == "average" else ["ERR@3", "RBP", "bpref", "NCRR@3"])
    _compare(*_both("torch", seed, metrics, ties=ties, relevance_threshold=2,
                    gain="exponential"))


@pytest.mark.usefixtures("device_order")
def test_device_paths_on_wide_tied_rows() -> None:
    """Graded gains, ties at every cutoff over 600 columns: the straddling group's gains are
    packed and added in column order."""
    import receval

    truth, scores, long, exclude, _, user_ids, item_ids = _case(6, n_rows=8, n_items=600,
                                                                levels=2)
    silence = ["ties", "undefined", "no-threshold"]
    metrics = ["P@3", "nDCG@3", "nDCG@25", "DCG@25", "AP@25", "RR@2", "Hit@3"]  # a cut: K < W
    for ties in TIES:
        ref = receval.evaluate(truth, long, metrics, ties=ties, gain="exponential",
                               relevance_threshold=1, silence=silence)
        got = receval.evaluate_scores(truth, scores, metrics, exclude=exclude,
                                      user_ids=user_ids, item_ids=item_ids, ties=ties,
                                      gain="exponential", relevance_threshold=1,
                                      device="cpu", silence=silence)
        _compare(ref, got)


@pytest.mark.parametrize("seed", [0, 1])
def test_powers_are_libm_on_every_door(seed: int) -> None:
    """RBP's weights p^(rank-1) deep in long lists and ERR's 2^g of fractional grades: torch's
    own pow differs from libm's in the last bit for some of them (RBP: 22 of 300 users of
    benchmarks/gpu_order.py's case, on the CPU), so every door takes numpy's."""
    import receval

    truth, scores, long, exclude, _, user_ids, item_ids = _case(seed, n_rows=60, n_items=200,
                                                                levels=50)
    truth["rating"] = truth["rating"] * 0.75 + 0.3  # fractional grades
    silence = ["ties", "undefined", "no-threshold"]
    metrics = ["RBP", "RBP@0.95", "RBP_resid@0.9", "ERR@100", "ERR"]
    kw = {"relevance_threshold": 1, "err_max_grade": 5}
    ref = receval.evaluate(truth, long, metrics, silence=silence, **kw)
    got = receval.evaluate_scores(truth, scores, metrics, exclude=exclude, user_ids=user_ids,
                                  item_ids=item_ids, device="cpu", silence=silence, **kw)
    _compare(ref, got)
