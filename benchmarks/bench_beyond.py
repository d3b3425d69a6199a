"""Speed of the beyond-accuracy metrics (receval.beyond) on top-k item codes, as the engines
produce them: seconds per metric at ``--users`` users x top ``--k``.

The lists are random codes over ``--items`` items with Zipf-like popularity, 5% of the users
with a shorter list; training data of ``--train-rows`` rows; item features of ``--features``
dimensions. The array layer is timed (``compute`` on a prebuilt context), plus building the
context once. Co-occurrence diversity (O(k^2 log d) a user) runs at ``--cooc-users`` users.

    python benchmarks/bench_beyond.py --users 1000000 --k 100 --out /tmp/bench_beyond.json
    python benchmarks/bench_beyond.py --users 20000 --k 20      # a quick check
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numba
import numpy as np

from receval.beyond.compute import compute
from receval.beyond.context import context
from receval.beyond.names import parse_beyond
from receval.beyond.settings import BeyondOptions


def zipf_lists(rng: np.random.Generator, users: int, k: int,
               items: int) -> tuple[np.ndarray, np.ndarray]:
    """Lists ``(users, k)`` of distinct item codes over ``items`` items with Zipf-like
    popularity, 5% of the users with half a list (-1 past it), and the items' popularity
    weights (the lists of bench_beyond.py and bench_fairness.py)."""
    weights = 1.0 / np.arange(1, items + 1) ** 0.8
    weights /= weights.sum()
    # distinct items per row: a random offset walk over a permutation keeps rows unique
    perm = rng.permutation(items)
    start = rng.choice(items, size=users, p=weights)
    steps = np.cumsum(rng.integers(1, 4, size=(users, k)), axis=1)
    top = perm[(start[:, None] + steps) % items].astype(np.int64)
    short = rng.random(users) < 0.05
    top[short, k // 2:] = -1
    return top, weights


def make(users: int, k: int, items: int, train_rows: int, features: int, seed: int = 0
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Lists ``(users, k)`` (-1 past a shorter list), training users and items, per-row
    truth CSR items, features."""
    rng = np.random.default_rng(seed)
    top, weights = zipf_lists(rng, users, k, items)
    tu = rng.integers(0, users, train_rows)
    ti = rng.choice(items, size=train_rows, p=weights)
    feats = rng.normal(size=(items, features))
    return top, tu, ti, feats, rng.integers(0, items, users)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--items", type=int, default=50_000)
    ap.add_argument("--train-rows", type=int, default=5_000_000)
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--cooc-users", type=int, default=20_000)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    top, tu, ti, feats, truth_items = make(args.users, args.k, args.items, args.train_rows,
                                           args.features)
    truth = (np.arange(args.users + 1, dtype=np.int64), truth_items.astype(np.int64))
    t0 = time.perf_counter()
    ctx = context(tu, ti, args.items, row_users=np.arange(args.users), truth=truth,
                  features=feats)
    build = time.perf_counter() - t0
    k = args.k
    names = ["coverage", "distributional_coverage", "gini", "personalization", "novelty",
             "ARP", "APLT", "ACLT", "PopRSP", "PopREO", "diversity", "serendipity"]
    small = context(tu, ti, args.items, row_users=np.arange(args.users), truth=truth,
                    features=feats)
    # compile every kernel on a tiny input first (numba's cache makes later runs start fast)
    compute([parse_beyond(f"{n}@{k}") for n in names], top[:50], context(
        tu[:100], ti[:100], args.items, row_users=np.arange(50), features=feats,
        truth=(np.arange(51, dtype=np.int64), truth_items[:50].astype(np.int64))))
    rows = []
    for n in names:
        spec = parse_beyond(f"{n}@{k}")
        t0 = time.perf_counter()
        compute([spec], top, ctx)
        rows.append({"metric": spec.name, "users": args.users,
                     "seconds": round(time.perf_counter() - t0, 3)})
    cooc = BeyondOptions(similarity="cooccurrence")
    sub = top[: args.cooc_users]
    t0 = time.perf_counter()
    small.cooccurrence()
    cooc_build = time.perf_counter() - t0
    compute([parse_beyond(f"diversity@{k}")], sub[:10], small, cooc)
    t0 = time.perf_counter()
    compute([parse_beyond(f"diversity@{k}")], sub, small, cooc)
    rows.append({"metric": f"diversity@{k} (cooccurrence)", "users": len(sub),
                 "seconds": round(time.perf_counter() - t0, 3)})
    result = {"users": args.users, "k": k, "items": args.items, "train_rows": args.train_rows,
              "features": args.features, "context_seconds": round(build, 3),
              "cooccurrence_matrix_seconds": round(cooc_build, 3), "metrics": rows,
              "threads": numba.get_num_threads(), "python": platform.python_version(),
              "numpy": np.__version__, "numba": numba.__version__}
    print(json.dumps(result, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
