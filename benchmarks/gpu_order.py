"""Which sums change their last bit on a GPU: the device's own scans against rank order.

Run on a CUDA machine (``python benchmarks/gpu_order.py --out order.json``). Two parts:

1. The primitives on realistic rows (AP and DCG terms of 20,000 lists of 100 ranks, graded
   gains): ``torch.cumsum``/``torch.cumprod`` on the device against the CPU's running sums,
   and ``scatter_add_`` twice on the same input (atomics: run to run). Counted: entries
   whose bits differ, and the largest relative difference.
2. ``receval.evaluate_scores`` on the device with the device's own scans (``IN_ORDER_DEVICES``
   naming cuda: the engine as it was before rank-order sums) and as shipped, each against the
   numba engine on the same lists: which metrics differ, for how many users.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
import torch

import receval
import receval.measures._arrays as arrays


def primitives(device: torch.device, n: int = 20_000, k: int = 100) -> dict[str, object]:
    rng = np.random.default_rng(0)
    rel = (rng.random((n, k)) < 0.2).astype(np.float64)
    gain = rel * (2.0 ** rng.integers(1, 6, (n, k)) - 1.0)
    rank = np.arange(1, k + 1, dtype=np.float64)
    hits = np.cumsum(rel, axis=1)
    terms = {"ap terms (r * hits / rank)": rel * hits / rank,
             "dcg terms (gain / log2(rank + 1))": gain / np.log2(rank + 1),
             "survival factors (cumprod)": 1.0 - rng.random((n, k)) * 0.3}
    out: dict[str, object] = {}
    for name, x in terms.items():
        op = "prod" if "cumprod" in name else "sum"
        cpu = np.cumsum(x, axis=1) if op == "sum" else np.cumprod(x, axis=1)
        t = torch.from_numpy(x).to(device)
        native = (torch.cumsum(t, 1) if op == "sum" else torch.cumprod(t, 1)).cpu().numpy()
        ordered = arrays.ordered_scan(t, op).cpu().numpy()
        differ = native != cpu
        out[name] = {
            "native_entries_differing": int(differ.sum()), "entries": int(cpu.size),
            "native_rows_differing": int(differ.any(1).sum()),
            "native_max_rel_diff": float(np.max(np.abs(native - cpu) / np.maximum(
                np.abs(cpu), 1e-300))),
            "ordered_entries_differing": int((ordered != cpu).sum())}
    gid = torch.from_numpy(np.sort(rng.integers(0, k // 4, (n, k)), axis=1)).to(device)
    g = torch.from_numpy(gain).to(device)
    runs = [torch.zeros_like(g).scatter_add_(1, gid, g).cpu().numpy() for _ in range(5)]
    cpu_sa = torch.zeros_like(g.cpu()).scatter_add_(1, gid.cpu(), g.cpu()).numpy()
    out["scatter_add_ (tie-group gain sums)"] = {
        "runs_differing_from_first": sum(int((r != runs[0]).any()) for r in runs[1:]),
        "entries_differing_from_cpu": int(max((r != cpu_sa).sum() for r in runs))}
    return out


def engine(device: torch.device, n_users: int = 20_000, n_items: int = 2_000) -> dict:
    rng = np.random.default_rng(1)
    # 8 score levels: ties everywhere, so the tie groups' sums run too
    scores = rng.integers(0, 8, (n_users, n_items)).astype(np.float32)
    r, c = np.nonzero(rng.random((n_users, n_items)) < 0.02)
    truth = pd.DataFrame({"user": r, "item": c,
                          "rating": rng.integers(1, 6, len(r)).astype(np.float64)})
    long = pd.DataFrame({"user": np.repeat(np.arange(n_users), n_items),
                         "item": np.tile(np.arange(n_items), n_users),
                         "score": scores.ravel().astype(np.float64)})
    metrics = ["P@10", "AP@10", "AP@100", "nDCG@10", "nDCG@100", "DCG@100", "RR@100",
               "ERR@20", "RBP", "bpref", "NCRR@20", "MAP", "nDCG"]
    silence = ["ties", "undefined", "no-threshold"]
    out = {}
    for ties in ("stable", "pessimistic", "average"):
        ms = [m for m in metrics if ties != "average" or not m.startswith(
            ("ERR", "RBP", "bpref", "NCRR"))]
        kw = {"ties": ties, "gain": "exponential", "relevance_threshold": 3}
        ref = receval.evaluate(truth, long, ms, silence=silence, **kw).per_user
        ref = ref.sort_values("user").reset_index(drop=True)
        row = {}
        for label, in_order in (("device scans", frozenset({"cpu", device.type})),
                                ("rank order", frozenset({"cpu"}))):
            arrays.IN_ORDER_DEVICES = in_order
            start = time.perf_counter()
            got = receval.evaluate_scores(truth, scores, ms, device=device,
                                          user_ids=np.arange(n_users),
                                          item_ids=np.arange(n_items), silence=silence,
                                          **kw).per_user
            if device.type == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            got = got.sort_values("user").reset_index(drop=True)
            row[label] = {"seconds": seconds, "users_differing": {
                m: int((got[m].to_numpy() != ref[m].to_numpy()).sum()) for m in ms}}
        arrays.IN_ORDER_DEVICES = frozenset({"cpu"})
        out[ties] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    device = torch.device("cuda")
    report = {"device": torch.cuda.get_device_name(device), "torch": torch.__version__,
              "primitives": primitives(device), "engine": engine(device)}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
