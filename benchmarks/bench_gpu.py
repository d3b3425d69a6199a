"""receval's torch engine on a score matrix against the floors of what any evaluation costs.

One command, on any CUDA machine (on a machine without one it runs on the CPU and says so):

    python benchmarks/bench_gpu.py --users 100000 --items 50000

The scores come from a dot-product model (``user_emb[rows] @ item_emb.T``, float32), so the
users x items matrix is never held whole: every contender gets the same blocks of rows. Each
user has ``--relevant`` relevant and ``--excluded`` excluded (training) items. Metrics: P, R,
AP, nDCG, RR and Hit at k in {1, 5, 10, 20, 50, 100}. Timed (device synchronised, best of
``--repeat``):

- ``scores``: the model's forward pass alone (every contender pays it);
- ``floor topk``: scores + ``torch.topk(k=100)``;
- ``floor pass``: scores + mask + topk + gather + cumsum: the 20-line evaluation with no tie
  handling, no options, no checks (:func:`floor_pass`);
- ``receval torch``: ``receval.evaluate_scores`` (exact ties, every option, the Result);
- ``receval numba (top-100 lists)``: ``receval.evaluate`` on the long table of each user's
  top 100 (the lists the floor pass found; building them is not timed);
- ``torchmetrics``: its retrieval metrics, if installed, on ``--torchmetrics-users`` users
  (scaled to all users in the ratio column).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch

import receval

KS = (1, 5, 10, 20, 50, 100)
FAMILIES = ("P", "R", "AP", "nDCG", "RR", "Hit")
METRICS = [f"{f}@{k}" for f in FAMILIES for k in KS]


def make_data(n_users: int, n_items: int, n_rel: int, n_excl: int, dim: int, seed: int,
              device: torch.device) -> dict[str, Any]:
    """The model's embeddings, and per user ``n_rel`` relevant and ``n_excl`` excluded items
    (distinct)."""
    rng = np.random.default_rng(seed)
    want = n_rel + n_excl
    draw = rng.integers(0, n_items, (n_users, 2 * want + 16))
    picked = np.empty((n_users, want), dtype=np.int64)
    for lo in range(0, n_users, 10_000):  # the first `want` distinct draws of each row
        block = draw[lo : lo + 10_000]
        order = np.argsort(block, axis=1, kind="stable")
        sorted_ = np.take_along_axis(block, order, axis=1)
        repeat = np.zeros_like(block, dtype=bool)
        repeat_sorted = np.zeros_like(sorted_, dtype=bool)
        repeat_sorted[:, 1:] = sorted_[:, 1:] == sorted_[:, :-1]
        np.put_along_axis(repeat, order, repeat_sorted, axis=1)
        keep = np.argsort(repeat, axis=1, kind="stable")[:, :want]
        picked[lo : lo + 10_000] = np.take_along_axis(block, keep, axis=1)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    users = torch.randn(n_users, dim, generator=gen).to(device)
    items = torch.randn(n_items, dim, generator=gen).to(device)
    return {"users": users, "items": items, "rel": picked[:, :n_rel],
            "excl": picked[:, n_rel:]}


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], Any], device: torch.device, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        sync(device)
        start = time.perf_counter()
        out = fn()
        sync(device)
        best = min(best, time.perf_counter() - start)
    return best, out


def blocks(n_users: int, batch: int):
    for lo in range(0, n_users, batch):
        yield lo, min(lo + batch, n_users)


def floor_pass(data: dict[str, Any], batch: int, device: torch.device,
               keep_lists: bool = False) -> Any:
    """Mask, top 100, gather relevance, cumulative sums: P/R/AP/nDCG/RR/Hit at every k."""
    n_users, n_items = data["users"].shape[0], data["items"].shape[0]
    rel_all = torch.from_numpy(data["rel"]).to(device)
    excl_all = torch.from_numpy(data["excl"]).to(device)
    kmax = max(KS)
    ks = torch.tensor(KS, device=device)
    disc = 1.0 / torch.log2(torch.arange(2, kmax + 2, device=device, dtype=torch.float64))
    idcg = torch.cumsum(disc, 0)
    n_rel = rel_all.shape[1]
    sums = torch.zeros(len(FAMILIES), len(KS), dtype=torch.float64, device=device)
    lists = []
    for lo, hi in blocks(n_users, batch):
        s = data["users"][lo:hi] @ data["items"].T
        s.scatter_(1, excl_all[lo:hi], -torch.inf)
        top = torch.topk(s, kmax, dim=1).indices
        rel = torch.zeros(hi - lo, n_items, dtype=torch.bool, device=device)
        rel.scatter_(1, rel_all[lo:hi], True)
        h = rel.gather(1, top).double()
        hits = torch.cumsum(h, 1)
        rank = torch.arange(1, kmax + 1, device=device, dtype=torch.float64)
        ap = torch.cumsum(h * hits / rank, 1)
        dcg = torch.cumsum(h * disc, 1)
        first = torch.where(h.any(1), h.argmax(1) + 1, kmax + 1).unsqueeze(1)
        at = ks - 1
        sums[0] += (hits[:, at] / ks).sum(0)
        sums[1] += (hits[:, at] / n_rel).sum(0)
        sums[2] += (ap[:, at] / ks.clamp(max=n_rel)).sum(0)
        sums[3] += (dcg[:, at] / idcg[(ks.clamp(max=n_rel) - 1)]).sum(0)
        sums[4] += torch.where(first <= ks, 1.0 / first, 0.0).sum(0)
        sums[5] += (first <= ks).double().sum(0)
        if keep_lists:
            lists.append(top.cpu())
    out = (sums / n_users).cpu()
    return (out, torch.cat(lists).numpy()) if keep_lists else out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--relevant", type=int, default=20)
    parser.add_argument("--excluded", type=int, default=50)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=None,
                        help="rows per block (default: receval's memory budget)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", default=None)
    parser.add_argument("--torchmetrics-users", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    parser.add_argument("--profile", default=None,
                        help="profile one receval call (torch.profiler): its op tables here")
    args = parser.parse_args(argv)

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type != "cuda":
        print("NOTE: no CUDA device: running on the CPU (timings are not GPU timings)")
    else:
        print(f"device: {torch.cuda.get_device_name(device)}")
    print(f"torch {torch.__version__}, receval {receval.__version__}; {args.users} users x "
          f"{args.items} items, {args.relevant} relevant and {args.excluded} excluded per user")
    data = make_data(args.users, args.items, args.relevant, args.excluded, args.dim,
                     args.seed, device)
    from receval.scores import batch_rows

    batch = args.batch_size or min(args.users, batch_rows(args.items, device, None, torch))
    print(f"rows per block: {batch}")
    n_users = args.users
    excl_all = torch.from_numpy(data["excl"]).to(device)

    def scores_only() -> None:
        for lo, hi in blocks(n_users, batch):
            data["users"][lo:hi] @ data["items"].T

    def topk_only() -> None:
        for lo, hi in blocks(n_users, batch):
            s = data["users"][lo:hi] @ data["items"].T
            torch.topk(s, max(KS), dim=1)

    truth = pd.DataFrame({"user": np.repeat(np.arange(n_users), args.relevant),
                          "item": data["rel"].ravel()})
    exclude = pd.DataFrame({"user": np.repeat(np.arange(n_users), args.excluded),
                            "item": data["excl"].ravel()})

    def model(rows: torch.Tensor) -> torch.Tensor:
        s = data["users"][rows] @ data["items"].T
        return s

    def receval_torch() -> receval.Result:
        return receval.evaluate_scores(truth, model, METRICS, exclude=exclude,
                                       user_ids=np.arange(n_users),
                                       item_ids=np.arange(args.items), device=device,
                                       batch_size=batch, silence=["ties"])

    def receval_blocks() -> Callable[[], Any]:
        """The engine's block loop alone: the truth and the exclusions read and judged
        before the clock (receval.scores' own steps, as evaluate_scores runs them)."""
        from receval import scores as rs
        from receval.measures.spec import parse_metrics
        from receval.options import Options

        opts = Options()
        specs = parse_metrics(METRICS)
        source = rs._ScoreSource.of(model, np.arange(n_users), np.arange(args.items), device,
                                    torch)
        table = rs._read_truth(truth, opts, specs, "user", "item", "rating")
        excluded = rs._read_exclude(exclude, source, "user", "item")
        judged = rs._judge_truth(table, source, excluded, opts, "rating")
        return lambda rows=batch: rs._run(judged, source, excluded, specs, opts, device,
                                          rows, None, torch)

    rows: list[tuple[str, float, str]] = []
    t_scores, _ = timed(scores_only, device, args.repeat)
    rows.append(("scores (model forward pass)", t_scores, ""))
    t_topk, _ = timed(topk_only, device, args.repeat)
    rows.append(("floor: scores + topk(100)", t_topk, ""))
    t_floor, (floor_values, lists) = timed(lambda: floor_pass(data, batch, device, True),
                                           device, args.repeat)
    rows.append(("floor: scores + mask/topk/gather/cumsum", t_floor, ""))
    t_rec, result = timed(receval_torch, device, args.repeat)
    rows.append(("receval torch engine (evaluate_scores)", t_rec, "from the long tables"))
    blocks_only = receval_blocks()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t_blocks, _ = timed(blocks_only, device, args.repeat)
    peak = ""
    if device.type == "cuda":  # the engine's own bytes per entry of a block, at its peak
        used = torch.cuda.max_memory_allocated(device) - torch.cuda.memory_allocated(device)
        per_entry = used / (batch * args.items)
        peak = f"peak {used / 2**30:.1f} GiB above the inputs = {per_entry:.1f} B/entry"
    rows.append(("receval torch engine, block loop alone", t_blocks, f"inputs judged; {peak}"))
    t_double, _ = timed(lambda: blocks_only(2 * batch), device, args.repeat)
    rows.append(("receval torch engine, block loop, 2x rows/block", t_double, ""))
    # the floor's numbers and receval's agree (no ties among float32 dot products here)
    recs = np.array([[result.summary[f"{f}@{k}"] for k in KS] for f in FAMILIES])
    gap = float(np.abs(recs - floor_values.numpy()).max())

    long = pd.DataFrame({"user": np.repeat(np.arange(n_users), lists.shape[1]),
                         "item": lists.ravel(),
                         "score": np.tile(-np.arange(lists.shape[1], dtype=np.float64),
                                          n_users)})
    t_numba, numba_result = timed(lambda: receval.evaluate(truth, long, METRICS), device,
                                  args.repeat)
    rows.append(("receval numba engine on the top-100 lists", t_numba, "lists given"))
    gap_numba = max(abs(numba_result.summary[m] - result.summary[m]) for m in METRICS)

    try:
        import torchmetrics.retrieval as tmr
    except ImportError:
        tmr = None
    if tmr is not None:
        n_small = min(args.torchmetrics_users, n_users)
        t_tm = _torchmetrics(tmr, data, n_small, excl_all, device, args.repeat)
        rows.append((f"torchmetrics retrieval ({n_small} users, scaled)",
                     t_tm * n_users / n_small, f"measured {t_tm:.3f} s"))

    print(f"\n{'':46s} {'seconds':>9s} {'x floor pass':>13s} {'users/s':>12s}")
    for name, t, note in rows:
        print(f"{name:46s} {t:9.3f} {t / t_floor:13.2f} {n_users / t:12.0f}  {note}")
    print(f"\nreceval torch vs the floor pass: largest summary difference {gap:.2e}; "
          f"vs the numba engine on the same top-100 lists: {gap_numba:.2e}")
    same_bits = all(numba_result.summary[m] == result.summary[m] for m in METRICS)
    print(f"summaries bit-identical to the numba engine's: {same_bits}")
    if args.profile:
        _profile(receval_torch, device, args.profile)
    if args.out:
        import json

        report = {"device": (torch.cuda.get_device_name(device) if device.type == "cuda"
                             else "cpu"),
                  "torch": torch.__version__, "users": n_users, "items": args.items,
                  "relevant": args.relevant, "excluded": args.excluded, "batch": batch,
                  "repeat": args.repeat, "metrics": METRICS,
                  "rows": [{"name": name, "seconds": t, "x_floor_pass": t / t_floor,
                            "note": note} for name, t, note in rows],
                  "max_diff_vs_floor": gap, "max_diff_vs_numba": gap_numba,
                  "bit_identical_to_numba": same_bits}
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)


def _profile(call: Callable[[], Any], device: torch.device, path: str) -> None:
    """One call under torch.profiler: the ops by device time and by host time."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        call()
        sync(device)
    table = prof.key_averages()
    by_device = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    import cProfile
    import io
    import pstats

    host = cProfile.Profile()  # the Python side: where the host waits or works
    host.enable()
    call()
    sync(device)
    host.disable()
    text = io.StringIO()
    pstats.Stats(host, stream=text).sort_stats("cumulative").print_stats(45)
    with open(path, "w") as f:
        f.write(table.table(sort_by=by_device, row_limit=40))
        f.write("\n\n")
        f.write(table.table(sort_by="self_cpu_time_total", row_limit=25))
        f.write("\n\n")
        f.write(text.getvalue())


def _torchmetrics(tmr: Any, data: dict[str, Any], n_small: int, excl_all: torch.Tensor,
                  device: torch.device, repeat: int) -> float:
    """torchmetrics' retrieval metrics at every k on the first ``n_small`` users (scores and
    targets flattened over every item, excluded items dropped)."""
    n_items = data["items"].shape[0]
    s = data["users"][:n_small] @ data["items"].T
    keep = torch.ones_like(s, dtype=torch.bool)
    keep.scatter_(1, excl_all[:n_small], False)
    target = torch.zeros_like(s, dtype=torch.bool)
    target.scatter_(1, torch.from_numpy(data["rel"][:n_small]).to(device), True)
    index = torch.arange(n_small, device=device).unsqueeze(1).expand(n_small, n_items)
    preds, target, index = s[keep], target[keep], index[keep]
    makers = [tmr.RetrievalPrecision, tmr.RetrievalRecall, tmr.RetrievalMAP,
              tmr.RetrievalNormalizedDCG, tmr.RetrievalMRR, tmr.RetrievalHitRate]

    def run() -> None:
        for make in makers:
            for k in KS:
                metric = make(top_k=k).to(device)
                metric(preds, target, indexes=index)

    best, _ = timed(run, device, repeat)
    return best


if __name__ == "__main__":
    main()
