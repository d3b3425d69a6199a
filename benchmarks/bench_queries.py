"""receval against the query a data scientist writes instead (issue 24, part 1).

Side by side in one run, on the same long tables (users x ``--items`` shuffled predictions with
tie-free random scores, ``--relevant`` truth items per user, about half of them predicted):
P@10, R@10, nDCG@10 (binary gains, log2(r + 1) discount, ideal over min(|R|, 10)) and MAP@10
(receval's default AP@k denominator, ``ap_normalizer="min_k_relevant"``: min(k, |R|)).

- receval.evaluate from pandas frames and from the Parquet files (paths);
  ``receval evaluate -t truth.parquet -p preds.parquet`` (the CLI in a subprocess: interpreter
  start, imports and file reading included);
- DuckDB SQL as users write it (``row_number() OVER (PARTITION BY user ...)``, ``QUALIFY``,
  left join the truth, a window ``sum`` for AP, ``GROUP BY user``, join the ideal DCG), from the
  pandas frames and from the same Parquet files;
- Polars lazy (``group_by(user).agg(top_k_by(score, 10))``, explode, rank, join,
  ``cum_sum().over(user)``, ``group_by``), from the frames and from Parquet (``scan_parquet``).

- the floor (``--tools floor``): the cheapest pass that reads the columns, groups the rows by
  user (a parallel counting sort on the dense integer user ids, numba) and ranks each user's
  list (argsort by score), with the metrics read off the ranked lists; from the frames and
  from Parquet. It assumes what receval cannot: ids 0..n-1, no duplicates, no ties, no audit.

``--metrics all``: P, R, nDCG, AP, RR and Hit at k = 1, 5, 10, 20, 50, 100 (36 metrics): the
DuckDB and Polars queries grow a column per metric (written the way their users write such a
query: a filter on the rank per cutoff, one ideal-DCG join per cutoff); receval's call only
gets a longer list. ``--ids string``: user and item ids as text ('u17', '0004711').

Each tool runs in a process of its own (``--worker``, started by this script): its peak memory
(``ru_maxrss`` of that process, the inputs it holds included) is its own, and no tool pays for
another's garbage. The inputs are generated once, in blocks of users (memory stays low at 5M
users), into Parquet files; the "from pandas" tools read them into frames before the clock
starts. Every tool's per-user values (the CLI's means) are checked equal to receval's to
1e-12; the script exits 1 if not. Times are medians of ``--repeat`` runs.

    python benchmarks/bench_queries.py --users 100000 --repeat 3 --out /tmp/queries.json
    python benchmarks/bench_queries.py --users 1000000 --metrics all --repeat 1
    python benchmarks/bench_queries.py --users 5000000 --repeat 1 --tools receval,duckdb,floor
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

K = 10
METRICS = [f"P@{K}", f"R@{K}", f"nDCG@{K}", f"MAP@{K}"]
CUTOFFS = (1, 5, 10, 20, 50, 100)
FAMILIES = ("P", "R", "nDCG", "AP", "RR", "Hit")
ALL_METRICS = [f"{f}@{k}" for k in CUTOFFS for f in FAMILIES]
TOLERANCE = 1e-12
N_ITEMS = 1_000_003  # prime: user u's pool (start + j * STEP) % N_ITEMS has distinct items
STEP = 7919
BLOCK_USERS = 200_000  # users generated (and shuffled) at a time


def metric_list(mode: str) -> list[str]:
    return METRICS if mode == "four" else ALL_METRICS


def generate(n_users: int, items: int, relevant: int, seed: int,
             first_user: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Shuffled long tables: user u draws ``2 * items`` distinct items; its predictions are the
    first ``items`` of them with random scores (a tie within a user's 100 has probability
    ~5e-13), its truth ``relevant`` of the pool."""
    rng = np.random.default_rng([seed, first_user])
    users = np.arange(first_user, first_user + n_users, dtype=np.int64)
    pool = (rng.integers(0, N_ITEMS, n_users)[:, None]
            + np.arange(2 * items, dtype=np.int64)[None, :] * STEP) % N_ITEMS
    pick = np.argpartition(rng.random((n_users, 2 * items)), relevant - 1, axis=1)[:, :relevant]
    score = rng.random(n_users * items)
    # the rows shuffled before the frames are built: each frame built once, from its columns
    p_rows = rng.permutation(n_users * items)
    t_rows = rng.permutation(n_users * relevant)
    pred = pd.DataFrame({"user": np.repeat(users, items)[p_rows],
                         "item": pool[:, :items].ravel()[p_rows], "score": score[p_rows]},
                        copy=False)
    truth = pd.DataFrame({"user": np.repeat(users, relevant)[t_rows],
                          "item": np.take_along_axis(pool, pick, axis=1).ravel()[t_rows]},
                         copy=False)
    return truth, pred


def as_string_ids(frame: pd.DataFrame) -> pd.DataFrame:
    """'u17' users and zero-padded '0004711' items (exact text ids, '007' != '7')."""
    import pyarrow as pa
    import pyarrow.compute as pc

    user = pc.binary_join_element_wise("u", pc.cast(pa.array(frame["user"]), pa.string()), "")
    item = pc.utf8_lpad(pc.cast(pa.array(frame["item"]), pa.string()), 7, "0")
    return frame.assign(user=user.to_pandas(), item=item.to_pandas())  # the rest not copied


def write_inputs(data: Path, n_users: int, items: int, relevant: int, seed: int,
                 ids: str, order: str = "shuffled",
                 first_user: int = 0) -> tuple[Path, Path, int, int]:
    """truth.parquet and preds.parquet, generated and written a block of users at a time;
    ``order="by-user"``: rows sorted by user (each user's rows still in random order), as a
    job that writes its output sorted or partitioned by user leaves them. ``first_user`` (a
    multiple of ``BLOCK_USERS``) writes users ``first_user..first_user + n_users - 1``: the
    same rows as those users' blocks in the file of all users (a shard of it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    truth_path, pred_path = data / "truth.parquet", data / "preds.parquet"

    def block(first: int) -> list[tuple[str, Any, int]]:
        size = min(BLOCK_USERS, first_user + n_users - first)
        truth, pred = generate(size, items, relevant, seed, first)
        tables = []
        for name, frame in (("truth", truth), ("preds", pred)):
            if order == "by-user":  # blocks are consecutive users: sorted overall
                frame = frame.sort_values("user", kind="stable", ignore_index=True)
            if ids == "string":
                frame = as_string_ids(frame)
            tables.append((name, pa.Table.from_pandas(frame, preserve_index=False), len(frame)))
        return tables

    # blocks generated on threads (numpy and Arrow release the GIL), a few ahead of the
    # writer, and written in order: the same files as one block after another
    ahead = max(1, min(8, (os.cpu_count() or 1) - 1))
    if first_user % BLOCK_USERS:
        raise ValueError(f"first_user must be a multiple of {BLOCK_USERS}")
    starts = list(range(first_user, first_user + n_users, BLOCK_USERS))
    writers: dict[str, Any] = {}
    rows = {"truth": 0, "preds": 0}
    paths = {"truth": truth_path, "preds": pred_path}
    try:
        with ThreadPoolExecutor(ahead) as pool:
            pending = {i: pool.submit(block, starts[i]) for i in range(min(ahead, len(starts)))}
            for index in range(len(starts)):
                tables = pending.pop(index).result()  # popped: the block is freed once written
                if index + ahead < len(starts):
                    pending[index + ahead] = pool.submit(block, starts[index + ahead])
                for name, table, n_rows in tables:
                    if name not in writers:
                        writers[name] = pq.ParquetWriter(paths[name], table.schema)
                    writers[name].write_table(table, row_group_size=1 << 20)  # pandas' default
                    rows[name] += n_rows
    finally:
        for writer in writers.values():
            writer.close()
    return truth_path, pred_path, rows["truth"], rows["preds"]


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return times, out


# --- receval -------------------------------------------------------------------------------

def receval_frames(truth: Any, pred: Any, metrics: list[str]) -> pd.DataFrame:
    import receval

    return receval.evaluate(truth, pred, metrics).per_user


def receval_cli(truth_path: Path, pred_path: Path, metrics: list[str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "receval.cli", "evaluate", "-t", str(truth_path),
         "-p", str(pred_path), "-m", ",".join(metrics), "--format", "json"],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return dict(json.loads(done.stdout)["summary"])


# --- DuckDB --------------------------------------------------------------------------------

def duckdb_sql(pred: str, truth: str) -> str:
    """The query as a user writes it; ``pred`` and ``truth`` name a table or a read_parquet."""
    return f"""
    WITH ranked AS (
        SELECT "user", item,
               row_number() OVER (PARTITION BY "user" ORDER BY score DESC, item) AS r
        FROM {pred}
        QUALIFY r <= {K}
    ), hits AS (
        SELECT k."user", k.r, CASE WHEN t.item IS NULL THEN 0 ELSE 1 END AS h
        FROM ranked k LEFT JOIN {truth} t ON k."user" = t."user" AND k.item = t.item
    ), running AS (
        SELECT "user", r, h,
               sum(h) OVER (PARTITION BY "user" ORDER BY r
                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS hits_so_far
        FROM hits
    ), per_user AS (
        SELECT "user", sum(h) AS hits, sum(h / log2(r + 1)) AS dcg,
               sum(CASE WHEN h = 1 THEN hits_so_far / r ELSE 0 END) AS ap_sum
        FROM running GROUP BY "user"
    ), relevant AS (
        SELECT "user", count(*) AS n FROM {truth} GROUP BY "user"
    ), ideal AS (
        SELECT i AS m, sum(1 / log2(i + 1)) OVER (ORDER BY i) AS idcg FROM range(1, {K + 1}) t(i)
    )
    SELECT rel."user",
           coalesce(p.hits, 0) / {K} AS "P@{K}",
           coalesce(p.hits, 0) / rel.n AS "R@{K}",
           coalesce(p.dcg, 0) / ideal.idcg AS "nDCG@{K}",
           coalesce(p.ap_sum, 0) / least(rel.n, {K}) AS "MAP@{K}"
    FROM relevant rel
    LEFT JOIN per_user p ON p."user" = rel."user"
    JOIN ideal ON ideal.m = least(rel.n, {K})
    ORDER BY rel."user"
    """


def duckdb_sql_all(pred: str, truth: str) -> str:
    """P, R, nDCG, AP, RR and Hit at every cutoff: the same query, a filtered sum (or max) per
    metric and cutoff, and the ideal DCG joined once per cutoff."""
    top = max(CUTOFFS)
    sums = []
    for k in CUTOFFS:
        sums += [f"count(*) FILTER (WHERE h = 1 AND r <= {k}) AS hits_{k}",
                 f"sum(h / log2(r + 1)) FILTER (WHERE r <= {k}) AS dcg_{k}",
                 f"sum(hits_so_far / r) FILTER (WHERE h = 1 AND r <= {k}) AS ap_{k}",
                 f"max(1 / r) FILTER (WHERE h = 1 AND r <= {k}) AS rr_{k}"]
    cols, joins = [], []
    for k in CUTOFFS:
        cols += [f'coalesce(p.hits_{k}, 0) / {k} AS "P@{k}"',
                 f'coalesce(p.hits_{k}, 0) / rel.n AS "R@{k}"',
                 f'coalesce(p.dcg_{k}, 0) / i{k}.idcg AS "nDCG@{k}"',
                 f'coalesce(p.ap_{k}, 0) / least(rel.n, {k}) AS "AP@{k}"',
                 f'coalesce(p.rr_{k}, 0) AS "RR@{k}"',
                 f'CASE WHEN coalesce(p.hits_{k}, 0) > 0 THEN 1.0 ELSE 0.0 END AS "Hit@{k}"']
        joins.append(f"JOIN ideal i{k} ON i{k}.m = least(rel.n, {k})")
    sep = ",\n               "
    return f"""
    WITH ranked AS (
        SELECT "user", item,
               row_number() OVER (PARTITION BY "user" ORDER BY score DESC, item) AS r
        FROM {pred}
        QUALIFY r <= {top}
    ), hits AS (
        SELECT k."user", k.r, CASE WHEN t.item IS NULL THEN 0 ELSE 1 END AS h
        FROM ranked k LEFT JOIN {truth} t ON k."user" = t."user" AND k.item = t.item
    ), running AS (
        SELECT "user", r, h,
               sum(h) OVER (PARTITION BY "user" ORDER BY r
                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS hits_so_far
        FROM hits
    ), per_user AS (
        SELECT "user", {sep.join(sums)}
        FROM running GROUP BY "user"
    ), relevant AS (
        SELECT "user", count(*) AS n FROM {truth} GROUP BY "user"
    ), ideal AS (
        SELECT i AS m, sum(1 / log2(i + 1)) OVER (ORDER BY i) AS idcg
        FROM range(1, {top + 1}) t(i)
    )
    SELECT rel."user", {sep.join(cols)}
    FROM relevant rel
    LEFT JOIN per_user p ON p."user" = rel."user"
    {" ".join(joins)}
    ORDER BY rel."user"
    """


def duckdb_run(pred: str, truth: str, mode: str, frames: tuple[Any, Any] | None) -> pd.DataFrame:
    import duckdb

    con = duckdb.connect()
    if frames is not None:
        con.register("truth", frames[0])
        con.register("pred", frames[1])
    sql = duckdb_sql(pred, truth) if mode == "four" else duckdb_sql_all(pred, truth)
    return con.sql(sql).df()


# --- Polars --------------------------------------------------------------------------------

def polars_query(pred: Any, truth: Any, mode: str = "four") -> Any:
    """The lazy query as a user writes it, from two LazyFrames."""
    import polars as pl

    top_k = K if mode == "four" else max(CUTOFFS)
    top = (pred.group_by("user")
           .agg(pl.col("item").top_k_by("score", top_k), pl.col("score").top_k_by("score", top_k))
           .explode("item", "score")
           .with_columns(r=pl.col("score").rank("ordinal", descending=True).over("user"))
           .join(truth.with_columns(h=pl.lit(1)), on=["user", "item"], how="left")
           .with_columns(h=pl.col("h").fill_null(0))
           .sort("user", "r")
           .with_columns(hits_so_far=pl.col("h").cum_sum().over("user")))
    relevant = truth.group_by("user").agg(n=pl.len())
    ideal = pl.LazyFrame({"m": np.arange(1, top_k + 1)}).with_columns(
        idcg=(1 / (pl.col("m") + 1).log(2)).cum_sum())
    if mode == "four":
        per_user = top.group_by("user").agg(
            hits=pl.col("h").sum(),
            dcg=(pl.col("h") / (pl.col("r") + 1).log(2)).sum(),
            ap_sum=(pl.col("h") * pl.col("hits_so_far") / pl.col("r")).sum())
        relevant = relevant.with_columns(
            m=pl.min_horizontal(pl.col("n"), pl.lit(K)).cast(pl.Int64))
        return (relevant.join(per_user, on="user", how="left").join(ideal, on="m")
                .select("user",
                        (pl.col("hits").fill_null(0) / K).alias(f"P@{K}"),
                        (pl.col("hits").fill_null(0) / pl.col("n")).alias(f"R@{K}"),
                        (pl.col("dcg").fill_null(0) / pl.col("idcg")).alias(f"nDCG@{K}"),
                        (pl.col("ap_sum").fill_null(0) / pl.col("m")).alias(f"MAP@{K}"))
                .sort("user"))
    aggs, cols = [], []
    hit, r = pl.col("h") == 1, pl.col("r")
    for k in CUTOFFS:
        within = r <= k
        aggs += [pl.col("h").filter(within).sum().alias(f"hits_{k}"),
                 (pl.col("h") / (r + 1).log(2)).filter(within).sum().alias(f"dcg_{k}"),
                 (pl.col("hits_so_far") / r).filter(within & hit).sum().alias(f"ap_{k}"),
                 (1 / r).filter(within & hit).max().alias(f"rr_{k}")]
    per_user = top.group_by("user").agg(aggs)
    out = relevant.join(per_user, on="user", how="left").with_columns(
        [pl.min_horizontal(pl.col("n"), pl.lit(k)).cast(pl.Int64).alias(f"m_{k}")
         for k in CUTOFFS])
    for k in CUTOFFS:
        out = out.join(ideal.rename({"m": f"m_{k}", "idcg": f"idcg_{k}"}), on=f"m_{k}")
        hits = pl.col(f"hits_{k}").fill_null(0)
        cols += [(hits / k).alias(f"P@{k}"), (hits / pl.col("n")).alias(f"R@{k}"),
                 (pl.col(f"dcg_{k}").fill_null(0) / pl.col(f"idcg_{k}")).alias(f"nDCG@{k}"),
                 (pl.col(f"ap_{k}").fill_null(0) / pl.col(f"m_{k}")).alias(f"AP@{k}"),
                 pl.col(f"rr_{k}").fill_null(0.0).alias(f"RR@{k}"),
                 (hits > 0).cast(pl.Float64).alias(f"Hit@{k}")]
    return out.select("user", *cols).sort("user")


# --- the floor -----------------------------------------------------------------------------

@functools.cache  # defined once a process (each definition would load them from the cache)
def _floor_kernels() -> tuple[Callable[..., Any], Callable[..., Any]]:
    import numba

    @numba.njit(parallel=True, cache=True)
    def group(users: np.ndarray, n_users: int, n_chunks: int, items: np.ndarray,
              values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows by dense user id: per-chunk counts, offsets, then a parallel stable scatter
        of the items and values themselves (later passes read them in order)."""
        n = len(users)
        counts = np.zeros((n_chunks, n_users + 1), dtype=np.int64)
        for c in numba.prange(n_chunks):
            for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
                counts[c, users[i] + 1] += 1
        indptr = np.zeros(n_users + 1, dtype=np.int64)
        total = 0
        for u in range(n_users):
            indptr[u] = total
            for c in range(n_chunks):
                cnt = counts[c, u + 1]
                counts[c, u + 1] = total
                total += cnt
        indptr[n_users] = total
        out_items = np.empty(n, dtype=items.dtype)
        out_values = np.empty(len(values), dtype=values.dtype)
        for c in numba.prange(n_chunks):
            for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
                u = users[i] + 1
                pos = counts[c, u]
                out_items[pos] = items[i]
                if len(values):
                    out_values[pos] = values[i]
                counts[c, u] = pos + 1
        return indptr, out_items, out_values

    @numba.njit(parallel=True, cache=True)
    def metrics(p_ptr: np.ndarray, p_items: np.ndarray, scores: np.ndarray,
                t_ptr: np.ndarray, t_items: np.ndarray, cutoffs: np.ndarray,
                out: np.ndarray, n_blocks: int) -> None:
        """Per user: the top items by score (insertion into a top-k buffer, no allocation;
        an argsort of the list when the top is long),
        each looked up in the user's truth (sorted in place), P, R, nDCG, AP, RR, Hit read at
        each cutoff (columns in FAMILIES order)."""
        top = cutoffs.max()
        idcg = np.cumsum(1.0 / np.log2(np.arange(2, top + 2)))
        n_users = len(p_ptr) - 1
        for blk in numba.prange(n_blocks):
            top_items = np.empty(top, dtype=p_items.dtype)
            top_scores = np.empty(top, dtype=np.float64)
            for u in range(blk * n_users // n_blocks, (blk + 1) * n_users // n_blocks):
                m = 0
                if top > 16:  # a long top: sorting the list beats insertion (k^2 / 4 moves)
                    a = p_ptr[u]
                    order = np.argsort(-scores[a:p_ptr[u + 1]])
                    m = min(top, len(order))
                    for r in range(m):
                        top_items[r] = p_items[a + order[r]]
                for i in range(p_ptr[u], p_ptr[u + 1] if top <= 16 else p_ptr[u]):
                    s = scores[i]
                    if m < top:
                        pos = m
                        m += 1
                    elif s <= top_scores[m - 1]:
                        continue
                    else:
                        pos = m - 1
                    while pos > 0 and top_scores[pos - 1] < s:
                        top_scores[pos] = top_scores[pos - 1]
                        top_items[pos] = top_items[pos - 1]
                        pos -= 1
                    top_scores[pos] = s
                    top_items[pos] = p_items[i]
                truth = t_items[t_ptr[u]:t_ptr[u + 1]]
                truth.sort()
                n_rel = len(truth)
                hits = 0
                dcg = ap = rr = 0.0
                j = 0
                for r in range(top):
                    if r < m:
                        item = top_items[r]
                        pos = np.searchsorted(truth, item)
                        if pos < n_rel and truth[pos] == item:
                            hits += 1
                            dcg += 1.0 / np.log2(r + 2.0)
                            ap += hits / (r + 1.0)
                            if rr == 0.0:
                                rr = 1.0 / (r + 1.0)
                    while j < len(cutoffs) and cutoffs[j] == r + 1:
                        k = cutoffs[j]
                        col = j * 6
                        out[u, col] = hits / k
                        out[u, col + 1] = hits / n_rel
                        out[u, col + 2] = dcg / idcg[min(n_rel, k) - 1]
                        out[u, col + 3] = ap / min(n_rel, k)
                        out[u, col + 4] = rr
                        out[u, col + 5] = 1.0 if hits > 0 else 0.0
                        j += 1

    return group, metrics


def floor(truth: Any, pred: Any, mode: str) -> pd.DataFrame:
    """Read the columns (numpy views of the frames, or pyarrow from the Parquet files), group
    both sides by user, rank each list, read the metrics. Dense integer user ids 0..n-1."""
    import numba

    group, metrics = _floor_kernels()
    if isinstance(truth, Path):
        import pyarrow.parquet as pq

        t_src, p_src = pq.read_table(truth), pq.read_table(pred)
        # each row group's column is a zero-copy view: one copy into one array
        col: Callable[[Any, str], np.ndarray] = lambda t, c: np.concatenate(  # noqa: E731
            [chunk.to_numpy() for chunk in t.column(c).chunks])
    else:
        col = lambda t, c: t[c].to_numpy()  # noqa: E731
        t_src, p_src = truth, pred
    def ro(a: np.ndarray) -> np.ndarray:
        """Read-only views, as pandas 3 hands out: one numba specialisation for both sources
        (the warm-up compiled it; a writable array would compile another in the timed call)."""
        view = a.view()
        view.flags.writeable = False
        return view

    raw = col
    col = lambda t, c: ro(raw(t, c))  # noqa: E731
    t_users, p_users = col(t_src, "user"), col(p_src, "user")
    n_users = int(max(t_users.max(), p_users.max())) + 1
    chunks = numba.get_num_threads()
    t_ptr, t_items, _ = group(t_users, n_users, chunks, col(t_src, "item"), ro(np.empty(0)))
    p_ptr, p_items, scores = group(p_users, n_users, chunks, col(p_src, "item"),
                                   col(p_src, "score"))
    cutoffs = np.array([K] if mode == "four" else CUTOFFS, dtype=np.int64)
    out = np.empty((n_users, 6 * len(cutoffs)))
    metrics(p_ptr, p_items, scores, t_ptr, t_items, cutoffs, out, 64 * chunks)
    names = [f"{f}@{k}" for k in cutoffs for f in FAMILIES]
    frame = pd.DataFrame(out, columns=names)
    frame.insert(0, "user", np.arange(n_users))
    if mode == "four":
        frame = frame.rename(columns={f"AP@{K}": f"MAP@{K}"})[["user", *METRICS]]
    return frame


# --- the tools, each run in its own process -------------------------------------------------

TOOLS: dict[str, tuple[str, str]] = {  # name -> (group for --tools, what)
    "receval_frames": ("receval", "receval.evaluate from pandas"),
    "receval_parquet": ("receval", "receval.evaluate from Parquet (paths)"),
    "cli": ("cli", "receval evaluate CLI from Parquet (subprocess)"),
    "duckdb_frames": ("duckdb", "DuckDB SQL from pandas"),
    "duckdb_parquet": ("duckdb", "DuckDB SQL from Parquet"),
    "polars_frames": ("polars", "Polars lazy from pandas"),
    "polars_parquet": ("polars", "Polars lazy from Parquet (scan_parquet)"),
    "floor_frames": ("floor", "floor: group + rank + metrics, numba, from pandas"),
    "floor_parquet": ("floor", "floor: group + rank + metrics, numba, from Parquet"),
}


def worker(name: str, data: Path, mode: str, repeat: int) -> dict[str, Any]:
    """Run one tool ``repeat`` times in this process; its values go to a Parquet file."""
    metrics = metric_list(mode)
    truth_path, pred_path = data / "truth.parquet", data / "preds.parquet"
    frames = None
    if name.endswith("_frames"):
        frames = (pd.read_parquet(truth_path), pd.read_parquet(pred_path))
    rss_inputs = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    # compile (numba) or load each library on a tiny input before timing
    small = generate(50, 20, 5, 1)
    import pyarrow.parquet as pq

    if pq.read_schema(truth_path).field("user").type != "int64":  # --ids string
        small = (as_string_ids(small[0]), as_string_ids(small[1]))
    if name.startswith("receval"):
        receval_frames(*small, metrics)
    elif name.startswith("floor"):
        floor(*small, mode)
    import polars as pl

    runs: dict[str, Callable[[], Any]] = {
        "receval_frames": lambda: receval_frames(*frames, metrics),  # type: ignore[misc]
        "receval_parquet": lambda: receval_frames(str(truth_path), str(pred_path), metrics),
        "cli": lambda: receval_cli(truth_path, pred_path, metrics),
        "duckdb_frames": lambda: duckdb_run("pred", "truth", mode, frames),
        "duckdb_parquet": lambda: duckdb_run(f"read_parquet('{pred_path}')",
                                             f"read_parquet('{truth_path}')", mode, None),
        "polars_frames": lambda: polars_query(pl.from_pandas(frames[1]).lazy(),  # type: ignore[index]
                                              pl.from_pandas(frames[0]).lazy(),  # type: ignore[index]
                                              mode).collect().to_pandas(),
        "polars_parquet": lambda: polars_query(pl.scan_parquet(pred_path),
                                               pl.scan_parquet(truth_path),
                                               mode).collect().to_pandas(),
        "floor_frames": lambda: floor(*frames, mode),  # type: ignore[misc]
        "floor_parquet": lambda: floor(truth_path, pred_path, mode),
    }
    times, values = timed(runs[name], repeat)
    if isinstance(values, dict):
        (data / f"values_{name}.json").write_text(json.dumps(values))
    else:
        values.to_parquet(data / f"values_{name}.parquet", index=False)
    return {"times_s": times, "peak_rss_bytes": resource.getrusage(
        resource.RUSAGE_SELF).ru_maxrss * 1024, "inputs_rss_bytes": rss_inputs}


def run_worker(name: str, data: Path, mode: str, repeat: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--worker", name, "--data-dir", str(data),
         "--metrics", mode, "--repeat", str(repeat)],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def load_values(data: Path, name: str) -> pd.DataFrame | dict[str, float]:
    if (data / f"values_{name}.json").exists():
        return dict(json.loads((data / f"values_{name}.json").read_text()))
    return pd.read_parquet(data / f"values_{name}.parquet")


# --- agreement -----------------------------------------------------------------------------

def largest_difference(reference: pd.DataFrame, other: pd.DataFrame | dict[str, float],
                       metrics: list[str] | None = None) -> float:
    """Largest absolute difference per user (a frame) or in the means (a dict)."""
    metrics = metrics or METRICS
    if isinstance(other, dict):
        means = reference[metrics].mean()
        return max(abs(float(means[m]) - float(other[m])) for m in metrics)
    ref = reference.sort_values("user").reset_index(drop=True)
    oth = other.sort_values("user").reset_index(drop=True)
    if not np.array_equal(ref["user"].to_numpy(), oth["user"].to_numpy()):
        return float("inf")
    return max(float(np.max(np.abs(ref[m].to_numpy(float) - oth[m].to_numpy(float))))
               for m in metrics)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--items", type=int, default=100, help="predictions per user")
    parser.add_argument("--relevant", type=int, default=20, help="truth items per user")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--metrics", choices=("four", "all"), default="four",
                        help="four: P, R, nDCG, MAP at 10; all: P, R, nDCG, AP, RR, Hit at "
                             "1, 5, 10, 20, 50, 100")
    parser.add_argument("--ids", choices=("int", "string"), default="int")
    parser.add_argument("--order", choices=("shuffled", "by-user"), default="shuffled",
                        help="rows shuffled, or sorted by user (as a job writing by user)")
    parser.add_argument("--tools", default="receval,cli,duckdb,polars,floor",
                        help="comma-separated subset of receval,cli,duckdb,polars,floor")
    parser.add_argument("--data-dir", default=None, help="where the Parquet files go (temp dir)")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "generate":
        _, _, n_truth, n_pred = write_inputs(Path(args.data_dir), args.users, args.items,
                                             args.relevant, args.seed, args.ids, args.order)
        print(json.dumps([n_truth, n_pred]))
        return 0
    if args.worker:
        print(json.dumps(worker(args.worker, Path(args.data_dir), args.metrics, args.repeat)))
        return 0
    groups = set(args.tools.split(","))
    if args.ids == "string":
        groups.discard("floor")  # the floor needs dense integer user ids
    metrics = metric_list(args.metrics)

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(args.data_dir or tmp)
        data.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        # in a process of its own: a child's ru_maxrss starts at its parent's peak (Linux
        # keeps it across exec), so the parent must never hold the generated frames
        done = subprocess.run(
            [sys.executable, __file__, "--worker", "generate", "--data-dir", str(data),
             "--users", str(args.users), "--items", str(args.items), "--relevant",
             str(args.relevant), "--seed", str(args.seed), "--ids", args.ids,
             "--order", args.order],
            capture_output=True, text=True, check=True)
        n_truth, n_pred = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"inputs: {n_pred:,} prediction rows, {n_truth:,} truth rows "
              f"({time.perf_counter() - start:.1f} s)", flush=True)
        names = [n for n, (group, _) in TOOLS.items() if group in groups]
        if "receval_frames" not in names:
            names.insert(0, "receval_frames")  # the reference values
        rows: list[dict[str, Any]] = []
        reference = None
        for name in names:
            measured = run_worker(name, data, args.metrics, args.repeat)
            values = load_values(data, name)
            if name == "receval_frames":
                reference = values
            assert isinstance(reference, pd.DataFrame)
            diff = largest_difference(reference, values, metrics)
            group, what = TOOLS[name]
            rows.append({"tool": group, "name": name, "what": what,
                         "median_s": statistics.median(measured["times_s"]), **measured,
                         "largest_difference": diff,
                         "checked": "means" if isinstance(values, dict) else "per user",
                         "agree": diff <= TOLERANCE})
            print(f"{what:<52} {rows[-1]['median_s']:8.3f} s   peak "
                  f"{measured['peak_rss_bytes'] / 2**30:5.2f} GiB   max |diff| {diff:.1e}",
                  flush=True)
        means = {m: float(reference[m].mean()) for m in metrics} if reference is not None else {}

    base = {r["name"]: r["median_s"] for r in rows}
    floor_s = {"frames": base.get("floor_frames"), "parquet": base.get("floor_parquet")}
    for row in rows:
        row["ratio_vs_receval"] = row["median_s"] / base["receval_frames"]
        source = "parquet" if "parquet" in row["name"] or row["name"] == "cli" else "frames"
        if source == "parquet" and "receval_parquet" in base:
            row["ratio_vs_receval_same_source"] = row["median_s"] / base["receval_parquet"]
        if floor_s[source]:
            row["ratio_vs_floor"] = row["median_s"] / floor_s[source]
    results = {
        "users": args.users, "items_per_user": args.items, "relevant_per_user": args.relevant,
        "ids": args.ids, "order": args.order, "prediction_rows": n_pred, "truth_rows": n_truth,
        "metrics": metrics,
        "repeat": args.repeat, "tolerance": TOLERANCE, "rows": rows, "means": means,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average": os.getloadavg()},
    }
    if floor_s["frames"] or floor_s["parquet"]:
        for row in rows:
            if row["name"] in ("receval_frames", "receval_parquet") and "ratio_vs_floor" in row:
                print(f"{row['what']}: {row['ratio_vs_floor']:.2f}x the floor", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    agree = all(row["agree"] for row in rows)
    if not agree:
        print("VALUES DISAGREE", file=sys.stderr)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
