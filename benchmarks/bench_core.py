"""Speed benchmark of receval's core against floors and peer tools, side by side, in one run.

The workload: ``--users`` users, each with ``--items-per-user`` scored predictions and
``--relevant`` relevant items (about half of them predicted), integer ids, as long-format pandas
DataFrames with shuffled rows. Metrics: P, R, AP, nDCG, RR, Hit and F1 at every cutoff of
``--cutoffs``, plus R-precision.

Measured, each in a fresh subprocess (so that its peak memory is its own):

- ``numpy pass``: one numpy reduction over every input array (a floor for reading the input);
- ``numba floor``: a plain parallel numba loop over users computing P, R, AP and nDCG at every
  cutoff, given CSR arrays (predictions grouped by user, truth sorted by item);
- ``argsort CSR``: grouping the shuffled predictions by user with ``numpy.argsort``;
- ``receval``: ``receval.evaluate`` end to end from the DataFrames, then its phases (ingest:
  read, encode and group; compute: ``evaluate_prepared``; kernel: the numba pass alone);
- peers, where they are installed: ranx and pytrec_eval at ``--peer-users`` users, Microsoft
  Recommenders at ``--recommenders-users`` users (k=10 only), each with receval at the same size.

Times are medians over ``--repeat`` runs (peers: ``--peer-repeat``). Peak memory is the
subprocess's peak resident set size (``ru_maxrss``), compared with the bytes of the input
arrays. Values are checked against each peer where the definitions coincide.

Example:
    python benchmarks/bench_core.py --users 1000000 --out benchmarks/results.json
    python benchmarks/bench_core.py --users 20000 --peer-users 20000 --peers none  # quick
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

N_ITEMS = 1_000_003  # prime: base + j * STEP (mod N_ITEMS) is distinct for j < N_ITEMS
STEP = 7919
FAMILIES = ["P", "R", "AP", "nDCG", "RR", "Hit", "F1"]
PEERS = ("ranx", "pytrec_eval", "recommenders")


# --- data ------------------------------------------------------------------------------------


def data_path(args: argparse.Namespace, n_users: int) -> Path:
    """Where the arrays for ``n_users`` users live (generated once, then reused)."""
    name = f"u{n_users}_k{args.items_per_user}_r{args.relevant}_s{args.seed}"
    return Path(args.data_dir) / name


def generate(path: Path, n_users: int, k: int, rel: int, seed: int) -> None:
    """Write the shuffled long tables (``pu pi ps tu ti``) and grouped copies for the floor.

    User ``u`` gets ``2k`` distinct items; its predictions are the first ``k`` of them with
    random (tie-free) scores, its relevant items ``rel`` random ones of the ``2k``.
    """
    if (path / "done").exists():
        return
    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    n_p, n_t = n_users * k, n_users * rel
    g = {name: np.empty(n, dtype) for name, n, dtype in [
        ("pu", n_p, np.int64), ("pi", n_p, np.int64), ("ps", n_p, np.float64),
        ("tu", n_t, np.int64), ("ti", n_t, np.int64)]}
    chunk = 100_000
    for a in range(0, n_users, chunk):
        b = min(n_users, a + chunk)
        users = np.arange(a, b, dtype=np.int64)
        pool = (rng.integers(0, N_ITEMS, b - a)[:, None]
                + np.arange(2 * k, dtype=np.int64)[None, :] * STEP) % N_ITEMS
        pick = np.argpartition(rng.random((b - a, 2 * k)), rel - 1, axis=1)[:, :rel]
        g["pu"][a * k : b * k] = np.repeat(users, k)
        g["pi"][a * k : b * k] = pool[:, :k].ravel()
        g["ps"][a * k : b * k] = rng.random((b - a) * k)
        g["tu"][a * rel : b * rel] = np.repeat(users, rel)
        g["ti"][a * rel : b * rel] = np.sort(np.take_along_axis(pool, pick, axis=1), axis=1).ravel()
    for name, arr in g.items():  # grouped by user (truth sorted by item): the floor's CSR
        np.save(path / f"grouped_{name}.npy", arr)
    for side, names in (("p", ("pu", "pi", "ps")), ("t", ("tu", "ti"))):
        perm = rng.permutation(n_p if side == "p" else n_t)
        for name in names:
            np.save(path / f"{name}.npy", g[name][perm])
        del perm
    (path / "done").write_text("ok")


def load_frames(path: Path) -> tuple[Any, Any, int]:
    """The shuffled truth and predictions DataFrames, and the bytes of their arrays."""
    import pandas as pd

    arrays = {name: np.load(path / f"{name}.npy") for name in ("tu", "ti", "pu", "pi", "ps")}
    nbytes = sum(a.nbytes for a in arrays.values())
    truth = pd.DataFrame({"user": arrays.pop("tu"), "item": arrays.pop("ti")}, copy=False)
    pred = pd.DataFrame({"user": arrays.pop("pu"), "item": arrays.pop("pi"),
                         "score": arrays.pop("ps")}, copy=False)
    return truth, pred, nbytes


def metric_names(cutoffs: list[int]) -> list[str]:
    return [f"{f}@{k}" for f in FAMILIES for k in cutoffs] + ["Rprec"]


# --- timing helpers --------------------------------------------------------------------------


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time of ``repeat`` calls, and the last call's result."""
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


# --- workers (each runs in its own subprocess) -----------------------------------------------


def work_numpy(path: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    truth, pred, _ = load_frames(path)
    arrays = [truth[c].to_numpy() for c in truth] + [pred[c].to_numpy() for c in pred]
    secs, _ = timed(lambda: [a.sum() for a in arrays], cfg["repeat"])
    return {"seconds": secs}


def work_argsort_csr(path: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    _, pred, _ = load_frames(path)
    users, items, scores = (pred[c].to_numpy() for c in ("user", "item", "score"))
    n_users = cfg["n_users"]

    def build() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        order = np.argsort(users, kind="stable")
        indptr = np.zeros(n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(users, minlength=n_users), out=indptr[1:])
        return indptr, items[order], scores[order]

    secs, _ = timed(build, cfg["repeat"])
    return {"seconds": secs}


def work_numba_floor(path: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    """The floor: P, R, AP (over min(k, L)) and nDCG at every cutoff, one plain numba loop.

    Given CSR arrays. ``ranked``: each user's predictions already in rank order, so the loop
    only looks items up (in a dense array marking the user's truth items) and accumulates.
    ``argsort``: the loop ranks each user's predictions with ``np.argsort`` first, as the
    engine must.
    """
    import numba

    g = {name: np.load(path / f"grouped_{name}.npy") for name in ("pi", "ps", "ti")}
    n_users, k, rel = cfg["n_users"], cfg["k"], cfg["rel"]
    p_indptr = np.arange(n_users + 1, dtype=np.int64) * k
    t_indptr = np.arange(n_users + 1, dtype=np.int64) * rel
    ks = np.array(cfg["cutoffs"], dtype=np.int64)
    kmax = int(ks.max())
    discount = 1.0 / np.log2(np.arange(kmax, dtype=np.float64) + 2.0)
    ideal = np.cumsum(discount)

    n_items = int(max(g["pi"].max(), g["ti"].max())) + 1

    @numba.njit(parallel=True)
    def floor(t_indptr, t_items, p_indptr, p_items, p_scores, ks, discount, ideal, identity,  # type: ignore[no-untyped-def]
              rank, out):
        n = len(p_indptr) - 1
        n_blocks = 64
        for block in numba.prange(n_blocks):
            # truth lookups: a dense per-block array marks the user's items (ids are small)
            mark = np.zeros(n_items, dtype=np.int64)
            for u in range(block * n // n_blocks, (block + 1) * n // n_blocks):
                a = p_indptr[u]
                m = p_indptr[u + 1] - a
                n_rel = t_indptr[u + 1] - t_indptr[u]
                for i in range(t_indptr[u], t_indptr[u + 1]):
                    mark[t_items[i]] = u + 1
                order = np.argsort(-p_scores[a : a + m]) if rank else identity[:m]
                h = ap = dcg = 0.0
                c = 0
                for j in range(min(kmax, m)):
                    if mark[p_items[a + order[j]]] == u + 1:
                        h += 1.0
                        ap += h / (j + 1.0)
                        dcg += discount[j]
                    while c < len(ks) and j + 1 == ks[c]:
                        if n_rel:
                            out[u, 4 * c] = h / ks[c]
                            out[u, 4 * c + 1] = h / n_rel
                            out[u, 4 * c + 2] = ap / min(ks[c], n_rel)
                            out[u, 4 * c + 3] = dcg / ideal[min(ks[c], n_rel) - 1]
                        c += 1

    out: dict[str, Any] = {}
    for variant in ("argsort", "ranked"):
        items, scores = g["pi"], g["ps"]
        if variant == "ranked":  # rank outside the timing
            order = np.argsort(-scores.reshape(n_users, k), axis=1)
            items = np.take_along_axis(items.reshape(n_users, k), order, axis=1).ravel()
            del order
        res = np.zeros((n_users, 4 * len(ks)))
        args = (t_indptr, g["ti"], p_indptr, items, scores, ks, discount, ideal,
                np.arange(k, dtype=np.int64), variant == "argsort", res)
        floor(t_indptr[:2], g["ti"], p_indptr[:2], *args[3:-1], res[:1])  # compile
        secs, _ = timed(lambda args=args: floor(*args), cfg["repeat"])
        means = res.mean(axis=0)
        values = {f"{name}@{kc}": float(means[4 * c + f])
                  for c, kc in enumerate(cfg["cutoffs"])
                  for f, name in enumerate(("P", "R", "AP", "nDCG"))}
        out[variant] = {"seconds": secs, "values": values}
    return {"seconds": out["ranked"]["seconds"], "argsort_seconds": out["argsort"]["seconds"],
            "values": out["ranked"]["values"], "argsort_values": out["argsort"]["values"]}


def work_receval(path: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    import warnings

    import receval
    from receval.data.columns import read_columns
    from receval.measures.spec import parse_metrics
    from receval.options import Options

    try:  # the module was receval/evaluate.py before it was renamed receval/evaluation.py
        ev = importlib.import_module("receval.evaluation")
    except ImportError:
        ev = importlib.import_module("receval.evaluate")
    # since issue 10 evaluation.py is split: shaping (prepare), audit (users), dispatch (engine)
    shaping = _module_or("receval.shaping", ev)
    audit = _module_or("receval.audit", ev)
    dispatch = _module_or("receval.dispatch", ev)
    metrics = metric_names(cfg["cutoffs"])
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)  # shuffled rows, so that every path of the ingest runs
    warm = {"user": rng.permutation(np.repeat(np.arange(500), 4)),
            "item": rng.permutation(2000), "score": rng.random(2000)}
    receval.evaluate({"user": warm["user"], "item": warm["item"]}, warm, metrics)
    # (that loaded the compiled kernels from numba's cache, or compiled them)
    base = rss_bytes()
    truth, pred, nbytes = load_frames(path)
    loaded = rss_bytes()
    out: dict[str, Any] = {"input_bytes": nbytes, "rss_before_data": base,
                           "rss_with_data": loaded}
    e2e, result = timed(lambda: receval.evaluate(truth, pred, metrics), cfg["repeat"])
    out["seconds"] = e2e
    out["peak_rss"] = peak_bytes()
    out["values"] = dict(result.summary)
    del result
    options = Options()
    specs = parse_metrics(metrics)

    def ingest() -> Any:
        t = read_columns(truth, side="truth", user_col="user", item_col="item",
                         value_col="rating", value_required=False)
        p = read_columns(pred, side="predictions", user_col="user", item_col="item",
                         value_col="score", value_required=True, fallback_rank_col="rank")
        return shaping.prepare(t, p, options)

    out["ingest"], prepared = timed(ingest, cfg["repeat"])
    out["compute"], _ = timed(lambda: ev.evaluate_prepared(prepared, specs, options),
                              cfg["repeat"])
    try:  # the numba pass alone (private helpers: skipped if they change)
        select = getattr(audit, "select_users", None) or ev._select_users
        run = getattr(dispatch, "run", None) or ev._run
        selected = select(prepared, options)
        if hasattr(dispatch, "engine_request"):  # the typed request (issue 21)
            request = dispatch.engine_request(prepared, selected, specs, options)
            out["kernel"], _ = timed(lambda: run(request, specs, options), cfg["repeat"])
        elif len(args := dispatch.kernel_arguments(specs, options)) == 5:  # the picture
            out["kernel"], _ = timed(lambda: run(prepared, selected, specs, options,
                                                 *args[2:], *args[:2]), cfg["repeat"])
        else:
            iopts, fopts, families, ks, betas, cut_ks = args
            out["kernel"], _ = timed(lambda: ev._run(prepared, selected, families, ks, betas,
                                                     cut_ks, iopts, fopts), cfg["repeat"])
    except (AttributeError, TypeError) as err:
        out["kernel_error"] = repr(err)
    rated = truth.assign(rating=1.0)  # the peers' profiles read relevance from a rating
    for profile in cfg.get("profiles", []):  # the peer's own definitions (untimed)
        try:
            same = receval.evaluate(rated, pred, [*metrics, "MRR"], profile=profile)
        except TypeError:  # no profiles in this receval: the definitions most peers share
            same = receval.evaluate(rated, pred, [*metrics, "MRR"], ap_normalizer="relevant")
        out.setdefault("values_by_profile", {})[profile] = dict(same.summary)
    return out


def work_ranx(path: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    import ranx

    truth, pred, _ = load_frames(path)
    ks = cfg["cutoffs"]
    metrics = ([f"{m}@{k}" for m in ("precision", "recall", "map", "ndcg", "hit_rate", "f1")
                for k in ks] + ["mrr", "r-precision"])

    def convert() -> tuple[Any, Any]:
        nonlocal truth, pred
        # ranx wants object (Python str) id columns and int relevance; pandas 3 infers `str`
        t = truth.assign(user=truth["user"].astype(str).astype(object),
                         item=truth["item"].astype(str).astype(object),
                         rel=np.ones(len(truth), dtype=np.int64))
        p = pred.assign(user=pred["user"].astype(str).astype(object),
                        item=pred["item"].astype(str).astype(object))
        return (ranx.Qrels.from_df(t, q_id_col="user", doc_id_col="item", score_col="rel"),
                ranx.Run.from_df(p, q_id_col="user", doc_id_col="item", score_col="score"))

    # compile ranx's numba code on a tiny input first (receval's is compiled and cached too)
    full_truth, full_pred = truth, pred
    truth, pred = truth.head(50), pred.head(200)
    ranx.evaluate(*convert(), metrics, make_comparable=True)
    truth, pred = full_truth, full_pred
    conv, (qrels, run) = timed(convert, cfg["peer_repeat"])
    comp, scores = timed(lambda: ranx.evaluate(qrels, run, metrics), cfg["peer_repeat"])
    names = {"precision": "P", "recall": "R", "map": "AP", "ndcg": "nDCG",
             "hit_rate": "Hit", "f1": "F1"}
    values = {}
    for key, v in scores.items():
        if key == "mrr":
            values["MRR"] = float(v)
        elif key == "r-precision":
            values["Rprec"] = float(v)
        else:
            m, k = key.split("@")
            values[f"{names[m]}@{k}"] = float(v)
    return {"seconds": conv + comp, "convert": conv, "compute": comp, "values": values,
            "peak_rss": peak_bytes()}


def work_pytrec_eval(path: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    import pytrec_eval

    truth, pred, _ = load_frames(path)
    cut = ",".join(map(str, cfg["cutoffs"]))
    measures = {f"P.{cut}", f"recall.{cut}", f"ndcg_cut.{cut}", f"map_cut.{cut}",
                f"success.{cut}", "recip_rank", "Rprec"}

    def convert() -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
        qrel: dict[str, dict[str, int]] = {}
        for u, i in zip(truth["user"].astype(str).tolist(), truth["item"].astype(str).tolist(),
                        strict=True):
            qrel.setdefault(u, {})[i] = 1
        run: dict[str, dict[str, float]] = {}
        for u, i, s in zip(pred["user"].astype(str).tolist(), pred["item"].astype(str).tolist(),
                           pred["score"].tolist(), strict=True):
            run.setdefault(u, {})[i] = s
        return qrel, run

    conv, (qrel, run) = timed(convert, cfg["peer_repeat"])
    comp, per_query = timed(
        lambda: pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run), cfg["peer_repeat"]
    )
    names = {"P": "P", "recall": "R", "ndcg_cut": "nDCG", "map_cut": "AP", "success": "Hit"}
    values: dict[str, float] = {}
    first = next(iter(per_query.values()))
    for key in first:
        column = [q[key] for q in per_query.values()]
        mean = float(np.mean(column))
        if key == "recip_rank":
            values["MRR"] = mean
        elif key == "Rprec":
            values["Rprec"] = mean
        else:
            base, _, k = key.rpartition("_")
            if base in names:
                values[f"{names[base]}@{k}"] = mean
    return {"seconds": conv + comp, "convert": conv, "compute": comp, "values": values,
            "peak_rss": peak_bytes()}


def work_recommenders(path: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    import warnings

    warnings.simplefilter("ignore")
    from recommenders.evaluation import python_evaluation as pe

    truth, pred, _ = load_frames(path)
    true = truth.rename(columns={"user": "userID", "item": "itemID"}).assign(rating=1.0)
    rated = pred.rename(columns={"user": "userID", "item": "itemID", "score": "prediction"})
    funcs = {"P@10": pe.precision_at_k, "R@10": pe.recall_at_k, "nDCG@10": pe.ndcg_at_k,
             "AP@10": pe.map_at_k}

    def run() -> dict[str, float]:
        return {name: float(f(true, rated, k=10)) for name, f in funcs.items()}

    secs, values = timed(run, cfg["peer_repeat"])
    return {"seconds": secs, "values": values, "peak_rss": peak_bytes()}


WORKERS = {
    "numpy": work_numpy, "argsort_csr": work_argsort_csr, "numba_floor": work_numba_floor,
    "receval": work_receval, "ranx": work_ranx, "pytrec_eval": work_pytrec_eval,
    "recommenders": work_recommenders,
}


def run_worker(tool: str, path: Path, cfg: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run one tool in a fresh interpreter; its last stdout line is its JSON result."""
    cmd = [sys.executable, __file__, "--worker", tool, "--worker-path", str(path),
           "--worker-config", json.dumps(cfg)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": tail[:300]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_seconds"] = time.perf_counter() - t0
    return out


# --- comparison and report -------------------------------------------------------------------


def _module_or(name: str, fallback: Any) -> Any:
    """``name`` imported, or ``fallback`` on an older receval that does not have it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return fallback


def agreement(receval_values: dict[str, float], peer: dict[str, float],
              tol: float = 1e-9) -> dict[str, Any]:
    """Largest absolute difference over the metrics both report (AP: receval over L)."""
    common = sorted(set(receval_values) & set(peer))
    diffs = {m: abs(receval_values[m] - peer[m]) for m in common}
    worst = max(diffs, key=lambda m: diffs[m]) if diffs else None
    return {"metrics": len(common), "max_abs_diff": diffs[worst] if worst else None,
            "worst": worst, "agree": bool(diffs) and diffs[worst] <= tol}


def machine() -> dict[str, Any]:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if "model name" in line)
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    import numba
    import pandas as pd

    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gib": round(mem / 2**30, 1),
            "python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "pandas": pd.__version__,
            "platform": platform.platform()}


def fmt_s(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def report(res: dict[str, Any]) -> str:
    """A plain-text (Markdown) table of seconds and ratios."""
    lines = []
    big = res["sizes"]["main"]
    rows = [("numpy pass over the input arrays", big, res.get("numpy", {}).get("seconds")),
            ("numba floor: P,R,AP,nDCG, CSR given ranked", big,
             res.get("numba_floor", {}).get("seconds")),
            ("numba floor: same, ranking each user by np.argsort", big,
             res.get("numba_floor", {}).get("argsort_seconds")),
            ("numpy argsort CSR build (predictions)", big,
             res.get("argsort_csr", {}).get("seconds"))]
    rv = res.get("receval", {})
    rows += [("receval end to end (from DataFrames)", big, rv.get("seconds")),
             ("  receval ingest (read, encode, group)", big, rv.get("ingest")),
             ("  receval compute (evaluate_prepared)", big, rv.get("compute")),
             ("  receval kernel (the numba pass)", big, rv.get("kernel"))]
    for peer, size_key in (("ranx", "peer"), ("pytrec_eval", "peer"),
                           ("recommenders", "recommenders")):
        r = res.get(peer)
        if not r:
            continue
        n = res["sizes"][size_key]
        rv_small = res.get(f"receval_{size_key}", {})
        if "error" in r:
            rows.append((f"{peer}: {r['error']}", n, None))
            continue
        label = f"{peer} end to end" + (" (k=10 only)" if peer == "recommenders" else "")
        rows.append((label, n, r.get("seconds")))
        if "convert" in r:
            rows.append((f"  {peer} convert from DataFrames", n, r["convert"]))
            rows.append((f"  {peer} compute", n, r["compute"]))
        rows.append(("receval end to end, same size", n, rv_small.get("seconds")))
    lines.append("| measurement | users | seconds |")
    lines.append("|---|---:|---:|")
    for label, n, secs in rows:
        lines.append(f"| {label} | {n:,} | {fmt_s(secs)} |")
    lines.append("")
    lines.append("| ratio | value | target |")
    lines.append("|---|---:|---|")
    for label, value, target in res["ratios"]:
        lines.append(f"| {label} | {value} | {target} |")
    lines.append("")
    lines.append("| peer | metrics compared | max abs difference | agree |")
    lines.append("|---|---:|---:|---|")
    for peer, a in res.get("agreement", {}).items():
        diff = "n/a" if a["max_abs_diff"] is None else f"{a['max_abs_diff']:.1e}"
        lines.append(f"| {peer} | {a['metrics']} | {diff} ({a['worst']}) | {a['agree']} |")
    return "\n".join(lines)


def ratios(res: dict[str, Any]) -> list[tuple[str, str, str]]:
    def ratio(a: float | None, b: float | None) -> str:
        return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}x"

    rv = res.get("receval", {})
    floor = res.get("numba_floor", {}).get("seconds")
    floor_sort = res.get("numba_floor", {}).get("argsort_seconds")
    out = [
        ("receval kernel / numba floor (ranked)", ratio(rv.get("kernel"), floor), "<= 2x"),
        ("receval compute / numba floor (ranked)", ratio(rv.get("compute"), floor), "<= 2x"),
        ("receval kernel / numba floor (argsort)", ratio(rv.get("kernel"), floor_sort), ""),
        ("receval compute / numba floor (argsort)", ratio(rv.get("compute"), floor_sort), ""),
        ("receval end to end (s)", fmt_s(rv.get("seconds")), "< 10 s at 1M users"),
        ("argsort CSR build / receval ingest", ratio(res.get("argsort_csr", {}).get("seconds"),
                                                     rv.get("ingest")), "(speed-up)"),
    ]
    if rv.get("peak_rss") and rv.get("input_bytes"):
        extra = rv["peak_rss"] - rv["rss_before_data"]
        out.append(("receval peak RSS / input arrays",
                    f"{rv['peak_rss'] / rv['input_bytes']:.2f}x "
                    f"({rv['peak_rss'] / 2**30:.1f} GiB; data+work {extra / 2**30:.1f} GiB = "
                    f"{extra / rv['input_bytes']:.2f}x)", "< 3x"))
    for peer, size_key in (("ranx", "peer"), ("pytrec_eval", "peer"),
                           ("recommenders", "recommenders")):
        r = res.get(peer, {})
        small = res.get(f"receval_{size_key}", {}).get("seconds")
        if r.get("seconds"):
            target = ">= 20x" if peer == "ranx" else ""
            out.append((f"{peer} / receval, end to end at {res['sizes'][size_key]:,} users",
                        ratio(r["seconds"], small), target))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--items-per-user", type=int, default=100)
    parser.add_argument("--relevant", type=int, default=20)
    parser.add_argument("--cutoffs", default="1,5,10,20,50,100")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (median)")
    parser.add_argument("--peer-repeat", type=int, default=1)
    parser.add_argument("--peers", default="all",
                        help="comma list of ranx,pytrec_eval,recommenders; 'all' or 'none'")
    parser.add_argument("--peer-users", type=int, default=100_000)
    parser.add_argument("--recommenders-users", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default="/tmp/receval-bench")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per tool")
    parser.add_argument("--out", help="write every number here as JSON")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-path", help=argparse.SUPPRESS)
    parser.add_argument("--worker-config", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        result = WORKERS[args.worker](Path(args.worker_path), json.loads(args.worker_config))
        print(json.dumps(result))
        return

    cutoffs = [int(c) for c in args.cutoffs.split(",")]
    peers = [] if args.peers == "none" else list(PEERS) if args.peers == "all" else [
        p.strip() for p in args.peers.split(",")]
    sizes = {"main": args.users, "peer": args.peer_users,
             "recommenders": args.recommenders_users}
    res: dict[str, Any] = {"machine": machine(), "args": vars(args), "sizes": sizes,
                           "load_before": os.getloadavg()}

    def cfg(n: int, **extra: Any) -> dict[str, Any]:
        return {"n_users": n, "k": args.items_per_user, "rel": args.relevant,
                "cutoffs": cutoffs, "repeat": args.repeat, "peer_repeat": args.peer_repeat,
                **extra}

    def step(key: str, tool: str, n: int, **extra: Any) -> None:
        path = data_path(args, n)
        t0 = time.perf_counter()
        generate(path, n, args.items_per_user, args.relevant, args.seed)
        print(f"[{time.strftime('%H:%M:%S')}] {key}: {tool} at {n:,} users "
              f"(data ready in {time.perf_counter() - t0:.0f} s)", flush=True)
        res[key] = run_worker(tool, path, cfg(n, **extra), args.timeout)
        brief = {k: v for k, v in res[key].items() if isinstance(v, float | str)}
        print(f"    {json.dumps(brief)}", flush=True)

    for tool in ("numpy", "numba_floor", "argsort_csr", "receval"):
        step(tool, tool, args.users)
    if any(p in peers for p in ("ranx", "pytrec_eval")):
        step("receval_peer", "receval", args.peer_users, profiles=["ranx", "trec_eval"])
    for peer in ("ranx", "pytrec_eval"):
        if peer in peers:
            step(peer, peer, args.peer_users)
    if "recommenders" in peers:
        step("receval_recommenders", "receval", args.recommenders_users,
             profiles=["recommenders"])
        step("recommenders", "recommenders", args.recommenders_users)

    res["agreement"] = {}
    main_rv = res["receval"].get("values", {})
    if res.get("numba_floor", {}).get("values"):
        res["agreement"]["numba floor"] = agreement(main_rv, res["numba_floor"]["values"])
        res["agreement"]["numba floor (argsort)"] = agreement(
            main_rv, res["numba_floor"]["argsort_values"])
    profile_of = {"ranx": "ranx", "pytrec_eval": "trec_eval", "recommenders": "recommenders"}
    for peer, size_key in (("ranx", "peer"), ("pytrec_eval", "peer"),
                           ("recommenders", "recommenders")):
        if res.get(peer, {}).get("values"):
            # receval with the peer's profile (its definitions: AP over L for ranx and
            # trec_eval, trec_eval's float32 scores and item-id tie order, ...)
            small = res.get(f"receval_{size_key}", {})
            mine = small.get("values_by_profile", {}).get(profile_of[peer], {})
            res["agreement"][peer] = agreement(mine, res[peer]["values"])
    res["load_after"] = os.getloadavg()
    res["ratios"] = ratios(res)
    text = report(res)
    res["table"] = text
    print()
    print(f"machine: {res['machine']['cpu']}, {res['machine']['cores']} cores, "
          f"{res['machine']['ram_gib']} GiB; load average before/after: "
          f"{res['load_before'][0]:.1f} / {res['load_after'][0]:.1f}")
    print(text)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=2, default=str))


if __name__ == "__main__":
    main()
