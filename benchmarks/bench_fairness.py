"""Speed of the fairness and calibration metrics (receval.beyond.fairness, .calibration,
.expected_exposure) on top-k item codes: seconds per metric at ``--users`` users x top
``--k`` with ``--groups`` item groups (issue 23's target: 1M users x top-100, 20 groups,
every metric under 10 s on 2 cores).

Lists are random codes over ``--items`` items with Zipf-like popularity, 5% of the users with
half a list; each item has one to three groups; each user ``--history`` training items and
one to five relevant items. The array layer is timed (``compute`` on a prebuilt context, its
kernels compiled on a tiny input first); building the context is reported apart. Also timed:
expected exposure over every order of tied scores (``ee_ties="permute"``: each list's scores
in tied pairs, the kernel of receval.beyond.tied_exposure) and the user-side disparity of
calibration between two halves of the users (receval.stats.unpaired: Welch, and the
permutation test with 1,000 relabellings and bootstrap resamples).

    python benchmarks/bench_fairness.py --users 1000000 --k 100 --out /tmp/bench_fairness.json
    python benchmarks/bench_fairness.py --users 20000 --k 20      # a quick check
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numba
import numpy as np
from bench_beyond import zipf_lists

from receval.beyond.compute import compute
from receval.beyond.context import Context, context
from receval.beyond.names import BeyondSpec, parse_beyond
from receval.beyond.settings import BeyondOptions

METRICS = ["group_exposure", "AWRF", "nDCG_AWRF", "rND", "rKL", "rRD", "calibration",
           "calibration_js", "EE_L", "EE_D_norm"]


def spec_of(name: str) -> BeyondSpec:
    """The parsed beyond-accuracy name."""
    spec = parse_beyond(name)
    assert spec is not None
    return spec


def make(users: int, k: int, items: int, groups: int, history: int, seed: int = 0
         ) -> tuple[np.ndarray, Context]:
    """Lists ``(users, k)`` and a context with training rows, truth and groups."""
    rng = np.random.default_rng(seed)
    top, weights = zipf_lists(rng, users, k, items)  # the lists of bench_beyond.py
    tu = np.repeat(np.arange(users), history)
    ti = rng.choice(items, size=users * history, p=weights)
    n_rel = rng.integers(1, 6, users)
    t_ptr = np.zeros(users + 1, dtype=np.int64)
    np.cumsum(n_rel, out=t_ptr[1:])
    t_items = rng.integers(0, items, int(t_ptr[-1]))
    ctx = context(tu, ti, items, row_users=np.arange(users), truth=(t_ptr, t_items))
    member = np.zeros((items, groups))
    for extra in range(3):
        pick = rng.random(items) < (1.0 if extra == 0 else 0.3)
        member[np.flatnonzero(pick), rng.integers(0, groups, int(pick.sum()))] = 1.0
    ctx.groups = member / member.sum(axis=1, keepdims=True)
    ctx.group_names = tuple(f"g{g}" for g in range(groups))
    return top, ctx


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--items", type=int, default=50_000)
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--history", type=int, default=20)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    top, ctx = make(args.users, args.k, args.items, args.groups, args.history)
    build = time.perf_counter() - t0
    k = args.k
    tiny_top, tiny = make(50, k, args.items, args.groups, 3, seed=1)
    options = BeyondOptions(fairness_step=1)
    compute([spec_of(f"{n}@{k}") for n in METRICS], tiny_top, tiny, options)
    rows = []
    for n in METRICS:
        spec = spec_of(f"{n}@{k}")
        t0 = time.perf_counter()
        compute([spec], top, ctx, options)
        rows.append({"metric": spec.name, "users": args.users,
                     "seconds": round(time.perf_counter() - t0, 3)})
    rows += extra_rows(top, ctx, k, args.users)
    result = {"users": args.users, "k": k, "items": args.items, "groups": args.groups,
              "history": args.history, "data_and_context_seconds": round(build, 3),
              "fairness_step": 1, "metrics": rows, "threads": numba.get_num_threads(),
              "python": platform.python_version(), "numpy": np.__version__,
              "numba": numba.__version__}
    print(json.dumps(result, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


def extra_rows(top: np.ndarray, ctx: Context, k: int, users: int) -> list[dict[str, object]]:
    """``EE_L`` over tied orders, and the gap in calibration between two user groups."""
    from receval.beyond.tied_exposure import tied_columns
    from receval.stats.unpaired import unpaired

    listed = top >= 0
    ptr = np.zeros(users + 1, dtype=np.int64)
    np.cumsum(listed.sum(axis=1), out=ptr[1:])
    ranks = np.broadcast_to(np.arange(k), top.shape)[listed]
    scored = (ptr, top[listed], (k - ranks // 2).astype(np.float64))  # ties in pairs
    truth = (ctx.truth_indptr, ctx.truth_items)
    assert truth[0] is not None and truth[1] is not None
    tiny = (ptr[:3] - ptr[0], scored[1][:ptr[2]], scored[2][:ptr[2]])
    spec = spec_of(f"EE_L@{k}")
    tied_columns([spec], tiny, (truth[0][:3], truth[1][:truth[0][2]]), BeyondOptions())
    rows: list[dict[str, object]] = []
    t0 = time.perf_counter()
    tied_columns([spec], scored, (truth[0], truth[1]), BeyondOptions())
    rows.append({"metric": f"EE_L@{k} ee_ties=permute", "users": users,
                 "seconds": round(time.perf_counter() - t0, 3)})
    values = compute([spec_of(f"calibration@{k}")], top, ctx, BeyondOptions())[0][
        f"calibration@{k}"]
    half = np.arange(users) % 2 == 0
    for test, resamples in (("welch", 0), ("permutation", 1000)):
        t0 = time.perf_counter()
        unpaired(values[half], values[~half], test=test, alpha=0.05, n_resamples=resamples,
                 rng=np.random.default_rng(0))
        rows.append({"metric": f"disparity calibration@{k} {test}"
                     + (f" ({resamples} resamples)" if resamples else ""), "users": users,
                     "seconds": round(time.perf_counter() - t0, 3)})
    return rows


if __name__ == "__main__":
    main()
