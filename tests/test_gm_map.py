"""gm_map: AP under the geometric mean (trec_eval's ``gm_map``), reduced exactly."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest

import receval
from receval.accumulate import Accumulator
from receval.options import Options

pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec_eval is the reference")


def _random_case(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(rng.randint(5, 40)):
        qrels[f"q{q}"] = {f"d{d}": rng.choice([0, 1, 2])
                          for d in rng.sample(range(20), rng.randint(1, 6))}
        run[f"q{q}"] = {f"d{d}": rng.choice([0.1, 0.2, 0.5, rng.random()])
                        for d in rng.sample(range(20), rng.randint(1, 10))}
    return qrels, run


def _long(nested: dict[str, dict[str, float]], value: str) -> dict[str, list[object]]:
    rows = [(q, d, v) for q, docs in nested.items() for d, v in docs.items()]
    return {"user": [r[0] for r in rows], "item": [r[1] for r in rows],
            value: [r[2] for r in rows]}


@pytest.mark.parametrize("seed", range(8))
def test_gm_map_is_trec_evals(seed: int) -> None:
    qrels, run = _random_case(seed)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"gm_map"}).evaluate(run)
    # pytrec_eval reports each query's log(max(AP, 1e-5)); trec_eval's summary is exp(mean)
    logs = [m["gm_map"] for m in per_query.values()]
    expected = math.exp(math.fsum(logs) / len(logs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = receval.evaluate(_long(qrels, "rating"), _long(run, "score"), ["gm_map", "map"],
                             profile="trec_eval")
    assert r.summary["gm_map"] == pytest.approx(expected, rel=1e-12, abs=0)
    # per user it is AP
    assert r.per_user["gm_map"].tolist() == r.per_user["map"].tolist()


def test_gm_map_by_hand_and_its_floor() -> None:
    truth = {"user": [1, 2, 3], "item": [10, 20, 30]}
    preds = {"user": [1, 1, 2, 2, 3], "item": [11, 10, 20, 21, 31],
             "score": [0.9, 0.8, 0.9, 0.8, 0.9]}
    r = receval.evaluate(truth, preds, ["gm_map", "AP"])
    # AP: 1/2, 1, 0 -> exp((log 0.5 + log 1 + log 1e-5) / 3)
    assert r.summary["gm_map"] == pytest.approx(
        math.exp((math.log(0.5) + 0.0 + math.log(1e-5)) / 3), rel=1e-15)
    assert r.summary["AP"] == pytest.approx(0.5)


def test_geometric_sums_merge_exactly_and_follow_the_empty_policy() -> None:
    rng = np.random.default_rng(0)
    values = rng.random((1000, 1))
    values[::7] = np.nan
    values[::11] = 0.0
    whole = Accumulator.from_arrays(["g"], values.copy(), kinds=["geometric"])
    parts = [Accumulator.from_arrays(["g"], values[i:i + 137].copy(), kinds=["geometric"])
             for i in range(0, 1000, 137)]
    merged = parts[0]
    for part in reversed(parts[1:]):
        merged = merged.merge(part)
    defined = values[~np.isnan(values)]
    logs = np.log(np.maximum(defined, 1e-5))
    n_undefined = int(np.isnan(values).sum())
    for empty, extra in (("skip", []), ("one", [0.0] * n_undefined),
                         ("zero", [math.log(1e-5)] * n_undefined)):
        got = merged.finalize(Options(empty=empty))["g"]
        assert got == whole.finalize(Options(empty=empty))["g"]
        all_logs = [*logs.tolist(), *extra]
        assert got == pytest.approx(math.exp(math.fsum(all_logs) / len(all_logs)), rel=1e-14)
    assert math.isnan(merged.finalize(Options(empty="nan"))["g"])
