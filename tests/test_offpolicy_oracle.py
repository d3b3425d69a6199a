"""receval.offpolicy against the plain-loop oracle (tests/reference/offpolicy_oracle.py) on
random logs: lists of 1 to 3 positions drawn by a Plackett-Luce logger from 3 to 5 candidates,
targets as score rules (distributions enumerated ranking by ranking in the oracle) or as
probability tables, a reward model with or without positions."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.exceptions import ReceValError
from receval.offpolicy import Policy, estimate

sys.path.insert(0, str(Path(__file__).parent / "reference"))
import offpolicy_oracle as oracle

TOL = 1e-10
ITEMS = [f"i{j}" for j in range(8)]


def _world(seed: int, n_requests: int = 30) -> dict:
    rng = np.random.default_rng(seed)
    requests = []
    for r in range(n_requests):
        n = int(rng.integers(3, 6))
        cands = sorted(rng.choice(ITEMS, size=n, replace=False).tolist())
        length = int(rng.integers(1, min(3, n) + 1))
        logger_scores = {a: float(rng.normal()) for a in cands}
        dist = oracle.rankings(cands, logger_scores, "plackett_luce", length)
        seqs = list(dist)
        seq = seqs[int(rng.choice(len(seqs), p=np.array([dist[s] for s in seqs])))]
        logger = oracle.from_rankings(dist)
        rows = []
        for k, a in enumerate(seq, start=1):
            rows.append(oracle.Row(a, k, float(rng.integers(0, 2) * rng.uniform(0.5, 1.5)),
                                   logger.marginal(a, k), logger.prefix(list(seq[:k])),
                                   logger.prefix(list(seq))))
        # the target scores only some of the logger's candidates in a third of the requests:
        # a logged item it never shows has probability 0 everywhere
        target_cands = cands[1:] if r % 3 == 0 and len(cands) > length else cands
        requests.append({"id": f"q{r:02d}", "cands": target_cands, "length": length,
                         "rows": rows, "logger": logger, "logger_cands": cands,
                         "target_scores": {a: float(rng.normal()) for a in target_cands},
                         "q": {(a, k): float(rng.uniform()) for a in cands
                               for k in range(1, length + 1)},
                         "q_item": {a: float(rng.uniform()) for a in cands}})
    rng.shuffle(requests)  # the log's row order must not matter
    return {"requests": requests, "theta": [1.0, 0.6, 0.3]}


def _log(world: dict) -> pd.DataFrame:
    rows = [{"request": q["id"], "item": r.item, "position": r.position, "reward": r.reward,
             "propensity": r.mu, "propensity_prefix": r.mu_prefix, "propensity_slate": r.mu_slate}
            for q in world["requests"] for r in q["rows"]]
    return pd.DataFrame(rows).iloc[::-1].reset_index(drop=True)


def _sorted(world: dict) -> list[dict]:
    return sorted(world["requests"], key=lambda q: q["id"])


def _scores(world: dict) -> pd.DataFrame:
    return pd.DataFrame([{"request": q["id"], "item": a, "score": s}
                         for q in world["requests"] for a, s in q["target_scores"].items()])


def _model(world: dict, by_position: bool) -> pd.DataFrame:
    if by_position:
        return pd.DataFrame([{"request": q["id"], "item": a, "position": k, "prediction": v}
                             for q in world["requests"] for (a, k), v in q["q"].items()])
    return pd.DataFrame([{"request": q["id"], "item": a, "prediction": v}
                         for q in world["requests"] for a, v in q["q_item"].items()])


def _oracle_target(reqs: list[dict], rule: str, **kw: float) -> list[oracle.TargetOnRequest]:
    return [oracle.from_rankings(oracle.rankings(q["cands"], q["target_scores"], rule,
                                                 q["length"], **kw)) for q in reqs]


def _q_and_dm(reqs: list[dict], target: list[oracle.TargetOnRequest], by_position: bool
              ) -> tuple[list[list[float]], list[float]]:
    def pred(q: dict, a: str, k: int) -> float:
        return q["q"][(a, k)] if by_position else q["q_item"][a]

    qs = [[pred(q, r.item, r.position) for r in q["rows"]] for q in reqs]
    dm = [sum(t.marginal(a, k) * pred(q, a, k) for a in q["cands"]
              for k in range(1, q["length"] + 1)) for q, t in zip(reqs, target, strict=True)]
    return qs, dm


RULES = [("topk", {}), ("epsilon_greedy", {"epsilon": 0.3}), ("softmax", {"temperature": 0.7})]
ALL = ["ips", "iips", "snips", "dm", "dr", "sndr", "switch_dr", "dros", "sips", "sn_sips", "rips",
       "sn_rips", "pi"]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("rule", "params"), RULES)
@pytest.mark.parametrize("by_position", [True, False])
def test_score_rules_match_oracle(seed: int, rule: str, params: dict, by_position: bool) -> None:
    world = _world(seed)
    reqs = _sorted(world)
    target = _oracle_target(reqs, rule, **params)
    qs, dm = _q_and_dm(reqs, target, by_position)
    expected = oracle.estimators([q["rows"] for q in reqs], target, q=qs, dm=dm, tau=2.0)
    policy = Policy(_scores(world), rule, params.get("epsilon"), params.get("temperature"))
    got = estimate(_log(world), {"t": policy}, estimators=ALL,
                   reward_model=_model(world, by_position), n_resamples=0, switch_threshold=2.0,
                   shrinkage=4.0, silence="weights").table
    for name, value in zip(got["estimator"], got["value"], strict=True):
        assert value == pytest.approx(expected[name], abs=TOL, rel=0, nan_ok=True), name


@pytest.mark.parametrize("seed", [4, 5])
def test_plackett_luce_prefix_estimators_match_oracle(seed: int) -> None:
    world = _world(seed)
    reqs = _sorted(world)
    target = _oracle_target(reqs, "plackett_luce", temperature=1.3)
    expected = oracle.estimators([q["rows"] for q in reqs], target)
    names = ["sips", "sn_sips", "rips", "sn_rips"]
    got = estimate(_log(world), {"t": Policy(_scores(world), "plackett_luce", temperature=1.3)},
                   estimators=names, n_resamples=0, silence="weights").table
    for name, value in zip(got["estimator"], got["value"], strict=True):
        assert value == pytest.approx(expected[name], abs=TOL, rel=0, nan_ok=True), name


@pytest.mark.parametrize("seed", [6, 7])
@pytest.mark.parametrize("clip", [None, 1.5])
def test_probability_table_matches_oracle(seed: int, clip: float | None) -> None:
    """A target given as probabilities (absent rows 0, rows on items never logged), with
    prefix and slate probabilities on the logged rows."""
    world = _world(seed)
    reqs = _sorted(world)
    rng = np.random.default_rng(seed + 100)
    table, marg = [], []
    for q in reqs:
        probs = {}
        for k in range(1, q["length"] + 1):
            mass = rng.dirichlet(np.ones(len(q["cands"])))
            for a, p in zip(q["cands"], mass, strict=True):
                if rng.uniform() < 0.8:  # some rows absent: probability 0
                    probs[(a, k)] = float(p)
        prefix = {r.position: float(rng.uniform(0.01, 1)) for r in q["rows"]}
        for (a, k), p in probs.items():
            on_log = [r for r in q["rows"] if r.item == a and r.position == k]
            row = {"request": q["id"], "item": a, "position": k, "probability": p}
            if on_log:
                row["probability_prefix"] = prefix[k]
                row["probability_slate"] = prefix[q["length"]]
            table.append(row)
        # a logged row the table leaves out has prefix 0 as well: mirror that
        logged = {(r.item, r.position) for r in q["rows"]}
        present = {k for (a, k) in probs if (a, k) in logged}
        marg.append(oracle.TargetOnRequest(
            lambda a, k, probs=probs: probs.get((a, k), 0.0),
            lambda items, prefix=prefix, present=present, q=q: (
                prefix[len(items)] if len(items) in present
                and (len(items) < q["length"] or q["length"] in present) else 0.0)))
    frame = pd.DataFrame(table)
    # probability_slate is read on the last logged row of each request
    qs, dm = _q_and_dm(reqs, marg, True)
    expected = oracle.estimators([q["rows"] for q in reqs], marg, q=qs, dm=dm, clip=clip)
    names = ["ips", "snips", "dm", "dr", "sndr", "sips", "sn_sips", "rips", "sn_rips", "pi"]
    got = estimate(_log(world), {"t": frame}, estimators=names, reward_model=_model(world, True),
                   n_resamples=0, clip=clip, silence="weights").table
    for name, value in zip(got["estimator"], got["value"], strict=True):
        assert value == pytest.approx(expected[name], abs=TOL, rel=0, nan_ok=True), name


@pytest.mark.parametrize("seed", [8, 9])
def test_pbm_matches_oracle(seed: int) -> None:
    world = _world(seed)
    reqs = _sorted(world)
    theta = world["theta"]
    target = _oracle_target(reqs, "epsilon_greedy", epsilon=0.4)
    weights = []
    logger_rows = []
    for q, t in zip(reqs, target, strict=True):
        ks = range(1, q["length"] + 1)
        weights.append([sum(theta[k - 1] * t.marginal(r.item, k) for k in ks)
                        / sum(theta[k - 1] * q["logger"].marginal(r.item, k) for k in ks)
                        for r in q["rows"]])
        logger_rows += [{"request": q["id"], "item": a, "position": k,
                         "probability": q["logger"].marginal(a, k)} for a in q["logger_cands"]
                        for k in ks]
    expected = oracle.estimators([q["rows"] for q in reqs], target, pbm_weight=weights)
    got = estimate(_log(world), {"t": Policy(_scores(world), "epsilon_greedy", epsilon=0.4)},
                   estimators=["pbm"], n_resamples=0, examination=theta,
                   logger=pd.DataFrame(logger_rows), silence="weights").table
    assert got["value"].iloc[0] == pytest.approx(expected["pbm"], abs=TOL, rel=0, nan_ok=True)


def test_normal_interval_of_snips_matches_the_delta_method() -> None:
    rng = np.random.default_rng(3)
    n = 500
    mu = rng.uniform(0.1, 0.9, n)
    reward = rng.integers(0, 2, n).astype(float)
    p = rng.uniform(0, 1, n)
    log = pd.DataFrame({"request": np.arange(n), "item": "a", "position": 1, "reward": reward,
                        "propensity": mu})
    target = log[["request", "item", "position"]].assign(probability=p)
    rows = [[oracle.Row("a", 1, float(r), float(m))] for r, m in zip(reward, mu, strict=True)]
    tgt = [oracle.TargetOnRequest(lambda a, k, v=float(v): v, lambda items: 0.0) for v in p]
    se = oracle.normal_se_snips_one_slot(rows, tgt)
    got = estimate(log, {"t": target}, estimators=["snips"], n_resamples=0).table.iloc[0]
    assert got["se"] == pytest.approx(se, rel=1e-12)
    assert got["normal_high"] - got["value"] == pytest.approx(1.959963984540054 * se, rel=1e-12)


def test_bootstrap_intervals_match_a_plain_loop_over_the_same_draws() -> None:
    """Every resample recomputed from scratch in Python from the documented stream: the
    kernel's sums (dense block, CSR, constant columns) and the ratios it rebuilds agree."""
    from receval.stats.paired import stream

    world = _world(11, n_requests=25)
    reqs = _sorted(world)
    target = _oracle_target(reqs, "epsilon_greedy", epsilon=0.3)
    n, n_res = len(reqs), 40
    key = int(stream(0, "offpolicy", "requests").integers(0, 2**63, dtype=np.int64))
    counts = oracle.bootstrap_counts(key, n_res, n)
    ips_v, snips_v, pi_v = [], [], []
    for c in counts:
        log_b = [q["rows"] for q, k in zip(reqs, c, strict=True) for _ in range(k)]
        tgt_b = [t for t, k in zip(target, c, strict=True) for _ in range(k)]
        est = oracle.estimators(log_b, tgt_b)
        ips_v.append(est["ips"])
        snips_v.append(est["snips"])
        pi_v.append(est["pi"])
    got = estimate(_log(world), {"t": Policy(_scores(world), "epsilon_greedy", epsilon=0.3)},
                   estimators=["ips", "snips", "pi"], n_resamples=n_res, seed=0,
                   silence="weights").table.set_index("estimator")
    for name, values in (("ips", ips_v), ("snips", snips_v), ("pi", pi_v)):
        assert got.loc[name, "ci_low"] == pytest.approx(oracle.percentile(values, 0.025),
                                                        abs=1e-12), name
        assert got.loc[name, "ci_high"] == pytest.approx(oracle.percentile(values, 0.975),
                                                         abs=1e-12), name


def test_cascade_dr_by_hand_for_a_topk_target() -> None:
    """One list (a, b), prefix propensities 0.5 and 0.25; the target ranks a, b, c: W = 2, 4.
    Position 1: 2 (1 - q(a,1)) + q(a,1) = 2 * 0.4 + 0.6; position 2: 4 (0 - q(b,2)) + 2 q(b,2)
    = -0.8 + 0.4; in all 1.0 (rips: 2 * 1 + 4 * 0 = 2)."""
    log = pd.DataFrame({"request": [1, 1], "item": ["a", "b"], "position": [1, 2],
                        "reward": [1.0, 0.0], "propensity": [0.5, 0.5],
                        "propensity_prefix": [0.5, 0.25]})
    scores = pd.DataFrame({"request": 1, "item": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    model = pd.DataFrame({"request": 1, "item": ["a", "b", "c"] * 2,
                          "position": [1, 1, 1, 2, 2, 2],
                          "prediction": [0.6, 0.3, 0.1, 0.5, 0.2, 0.4]})
    got = estimate(log, {"t": Policy(scores, "topk")}, estimators=["cascade_dr", "rips"],
                   reward_model=model, n_resamples=0, silence="weights").table
    assert got["value"].tolist() == pytest.approx([1.0, 2.0], abs=1e-15)
    with pytest.raises(ReceValError, match="as scores with rule"):
        estimate(log, {"t": log[["request", "item", "position"]].assign(probability=1.0,
                                                                          probability_prefix=1.0)},
                 estimators=["cascade_dr"], reward_model=model, n_resamples=0)
