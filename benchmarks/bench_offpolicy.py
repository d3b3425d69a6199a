"""Speed of receval.offpolicy against Open Bandit Pipeline 0.5.7: a served log of ``--lists``
lists of 10 over ``--items`` items (5% of the shown items clicked), three target policies given
as scores over 15 candidates a list (the 10 shown and 5 others): top-k, 0.1-greedy and a
softmax; a user-blind reward model (one prediction per item). receval computes every estimator
(ips, snips, dm, dr, sndr, switch_dr, dros, iips, sips, rips, sn_sips, sn_rips, pi) with its
bootstrap interval (``--resamples``) and the normal one. ``--impressions N`` is ``--lists``
N / 10.

OBP needs the targets' dense ``action_dist`` (rounds x items x positions, float64) and runs its
bandit estimators on the rows as rounds; ``--obp-rounds`` sets its size, found by the largest
array that fits (``--obp-max-gb``). It runs in its own venv (.ci/obp.sh), timed for IPW, SNIPW,
DM, DR, SNDR and Switch-DR of one target, point estimates only and one bootstrap interval
(``n_bootstrap_samples`` = ``--resamples``).

    python benchmarks/bench_offpolicy.py --impressions 10000000 --out /tmp/bench_offpolicy.json
    python benchmarks/bench_offpolicy.py --lists 20000          # a quick check
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
import pandas as pd

from receval.offpolicy import Policy, estimate

ALL = ["ips", "snips", "dm", "dr", "sndr", "switch_dr", "dros", "iips", "sips", "rips",
       "sn_sips", "sn_rips", "pi"]
#: dros' lambda
SHRINKAGE = 5.0
L = 10


def make(lists: int, items: int, seed: int = 0) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n = lists * L
    # 15 distinct candidates a list: a random start and steps over a permutation of the items
    perm = rng.permutation(items)
    start = rng.integers(0, items, lists)
    steps = np.cumsum(rng.integers(1, 4, size=(lists, 15)), axis=1)
    cand = perm[(start[:, None] + steps) % items]
    shown = cand[:, :L]
    mu = rng.uniform(0.05, 1.0, n)
    prefix = np.cumprod(mu.reshape(lists, L), axis=1)
    log = pd.DataFrame({"request": np.repeat(np.arange(lists), L), "item": shown.ravel(),
                        "position": np.tile(np.arange(1, L + 1), lists),
                        "reward": (rng.uniform(size=n) < 0.05).astype(np.float64),
                        "propensity": mu, "propensity_prefix": prefix.ravel(),
                        "propensity_slate": np.repeat(prefix[:, -1], L)})
    req = np.repeat(np.arange(lists), 15)
    targets = {}
    for name, rule, kw in (("topk", "topk", {}),
                           ("greedy", "epsilon_greedy", {"epsilon": 0.1}),
                           ("softmax", "softmax", {"temperature": 0.5})):
        scores = pd.DataFrame({"request": req, "item": cand.ravel(),
                               "score": rng.normal(size=req.size)})
        targets[name] = Policy(scores, rule, **kw)
    model = pd.DataFrame({"item": np.arange(items), "prediction": rng.uniform(0, 0.1, items)})
    return log, targets, model


OBP_SCRIPT = r'''
import sys, time, json, warnings
warnings.filterwarnings("ignore")
import numpy as np
from obp.ope import (InverseProbabilityWeighting as IPW,
    SelfNormalizedInverseProbabilityWeighting as SNIPW, DirectMethod as DM, DoublyRobust as DR,
    SelfNormalizedDoublyRobust as SNDR, SwitchDoublyRobust as SwitchDR)
rounds, items, resamples = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
t0 = time.perf_counter()
action = rng.integers(0, items, rounds)
reward = (rng.uniform(size=rounds) < 0.05).astype(float)
pscore = rng.uniform(0.05, 1.0, rounds)
position = rng.integers(0, 10, rounds)
action_dist = np.zeros((rounds, items, 10))
q_hat = np.zeros((rounds, items, 10))
q_hat += rng.uniform(0, 0.1, (1, items, 1))
# a 0.1-greedy target over 15 candidates a round (its mass spread over positions)
cand = np.argsort(rng.uniform(size=(rounds, items)), axis=1)[:, :15]  # 15 distinct
for k in range(10):
    action_dist[np.arange(rounds)[:, None], cand, k] += 0.1 / 15
    action_dist[np.arange(rounds), cand[:, k], k] += 0.9
build = time.perf_counter() - t0
out = {"rounds": rounds, "items": items, "build_s": build,
       "dense_gb": 2 * action_dist.nbytes / 1e9}
kw = dict(reward=reward, action=action, action_dist=action_dist, pscore=pscore,
          position=position)
t0 = time.perf_counter()
IPW().estimate_policy_value(**kw); SNIPW().estimate_policy_value(**kw)
DM().estimate_policy_value(action_dist=action_dist, estimated_rewards_by_reg_model=q_hat,
                           position=position)
for e in (DR(), SNDR(), SwitchDR(lambda_=10.0)):
    e.estimate_policy_value(**kw, estimated_rewards_by_reg_model=q_hat)
out["six_estimates_s"] = time.perf_counter() - t0
t0 = time.perf_counter()
IPW().estimate_interval(**kw, n_bootstrap_samples=resamples, random_state=0)
out["ipw_interval_s"] = time.perf_counter() - t0
print(json.dumps(out))
'''


def run_obp(rounds: int, items: int, resamples: int) -> dict:
    python = Path(os.environ.get("OBP_VENV", "/tmp/obp-venv")) / "bin" / "python"
    if not python.exists():
        return {"skipped": f"no OBP venv at {python.parent.parent}"}
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(OBP_SCRIPT)
    done = subprocess.run([str(python), fh.name, str(rounds), str(items), str(resamples)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return {"failed": done.stderr.strip().splitlines()[-1:]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lists", type=int, default=100_000)
    parser.add_argument("--impressions", type=int, default=None,
                        help="shown items in all (lists of 10): sets --lists to a tenth")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--obp-rounds", type=int, default=0,
                        help="rounds of the OBP run (0: none)")
    parser.add_argument("--obp-items", type=int, default=None,
                        help="OBP's catalogue (default: --items)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.impressions is not None:
        args.lists = max(1, args.impressions // L)
    t0 = time.perf_counter()
    log, targets, model = make(args.lists, args.items)
    made = time.perf_counter() - t0
    estimate(log.head(200), {"t": targets["topk"]}, estimators=ALL, reward_model=model,
             n_resamples=10, shrinkage=SHRINKAGE, silence="weights")  # compile outside the timing
    t0, c0 = time.perf_counter(), time.process_time()
    result = estimate(log, targets, estimators=ALL, reward_model=model,
                      n_resamples=args.resamples, shrinkage=SHRINKAGE, silence="weights")
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    estimate(log, targets, estimators=ALL, reward_model=model, n_resamples=0,
             shrinkage=SHRINKAGE, silence="weights")
    point = time.perf_counter() - t0
    report = {"lists": args.lists, "impressions": len(log), "items": args.items,
              "targets": len(targets), "estimators": ALL, "resamples": args.resamples,
              "make_s": made, "receval_s": seconds, "receval_cpu_s": cpu,
              "receval_no_bootstrap_s": point, "load_average": os.getloadavg(),
              "receval_us_per_impression": 1e6 * seconds / len(log),
              "threads": numba.get_num_threads(), "python": sys.version.split()[0],
              "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
              "machine": platform.machine(), "cpus": os.cpu_count()}
    if args.obp_rounds:
        obp = run_obp(args.obp_rounds, args.obp_items or args.items, args.resamples)
        report["obp"] = obp
    print(result.table[["target", "estimator", "value", "ci_low", "ci_high", "ess"]]
          .to_string(index=False))
    print(json.dumps(report, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
