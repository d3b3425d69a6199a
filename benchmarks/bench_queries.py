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

Every tool's per-user values (the CLI's means) are checked equal to receval's to 1e-12; the
script exits 1 if not. Times are medians of ``--repeat`` runs.

    python benchmarks/bench_queries.py --users 100000 --repeat 3 --out /tmp/queries.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

K = 10
METRICS = [f"P@{K}", f"R@{K}", f"nDCG@{K}", f"MAP@{K}"]
TOLERANCE = 1e-12
N_ITEMS = 1_000_003  # prime: user u's pool (start + j * STEP) % N_ITEMS has distinct items
STEP = 7919


def generate(n_users: int, items: int, relevant: int, seed: int) -> tuple[pd.DataFrame,
                                                                           pd.DataFrame]:
    """Shuffled long tables: user u draws ``2 * items`` distinct items; its predictions are the
    first ``items`` of them with random (tie-free) scores, its truth ``relevant`` of the pool."""
    rng = np.random.default_rng(seed)
    users = np.arange(n_users, dtype=np.int64)
    pool = (rng.integers(0, N_ITEMS, n_users)[:, None]
            + np.arange(2 * items, dtype=np.int64)[None, :] * STEP) % N_ITEMS
    pick = np.argpartition(rng.random((n_users, 2 * items)), relevant - 1, axis=1)[:, :relevant]
    pred = pd.DataFrame({"user": np.repeat(users, items), "item": pool[:, :items].ravel(),
                         "score": rng.random(n_users * items)})
    truth = pd.DataFrame({"user": np.repeat(users, relevant),
                          "item": np.take_along_axis(pool, pick, axis=1).ravel()})
    if len(np.unique(pred["score"])) != len(pred):
        raise SystemExit("tied scores: rerun with another --seed")
    pred = pred.iloc[rng.permutation(len(pred))].reset_index(drop=True)
    truth = truth.iloc[rng.permutation(len(truth))].reset_index(drop=True)
    return truth, pred


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return times, out


# --- receval -------------------------------------------------------------------------------

def receval_frames(truth: pd.DataFrame, pred: pd.DataFrame) -> pd.DataFrame:
    import receval

    return receval.evaluate(truth, pred, METRICS).per_user


def receval_parquet(truth_path: Path, pred_path: Path) -> pd.DataFrame:
    import receval

    return receval.evaluate(str(truth_path), str(pred_path), METRICS).per_user


def receval_cli(truth_path: Path, pred_path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "receval.cli", "evaluate", "-t", str(truth_path),
         "-p", str(pred_path), "-m", ",".join(METRICS), "--format", "json"],
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


def duckdb_frames(truth: pd.DataFrame, pred: pd.DataFrame) -> pd.DataFrame:
    import duckdb

    con = duckdb.connect()
    con.register("pred", pred)
    con.register("truth", truth)
    return con.sql(duckdb_sql("pred", "truth")).df()


def duckdb_parquet(truth_path: Path, pred_path: Path) -> pd.DataFrame:
    import duckdb

    con = duckdb.connect()
    return con.sql(duckdb_sql(f"read_parquet('{pred_path}')",
                              f"read_parquet('{truth_path}')")).df()


# --- Polars --------------------------------------------------------------------------------

def polars_query(pred: Any, truth: Any) -> Any:
    """The lazy query as a user writes it, from two LazyFrames."""
    import polars as pl

    top = (pred.group_by("user")
           .agg(pl.col("item").top_k_by("score", K), pl.col("score").top_k_by("score", K))
           .explode("item", "score")
           .with_columns(r=pl.col("score").rank("ordinal", descending=True).over("user"))
           .join(truth.with_columns(h=pl.lit(1)), on=["user", "item"], how="left")
           .with_columns(h=pl.col("h").fill_null(0))
           .sort("user", "r")
           .with_columns(hits_so_far=pl.col("h").cum_sum().over("user")))
    per_user = top.group_by("user").agg(
        hits=pl.col("h").sum(),
        dcg=(pl.col("h") / (pl.col("r") + 1).log(2)).sum(),
        ap_sum=(pl.col("h") * pl.col("hits_so_far") / pl.col("r")).sum())
    ideal = pl.LazyFrame({"m": np.arange(1, K + 1)}).with_columns(
        idcg=(1 / (pl.col("m") + 1).log(2)).cum_sum())
    relevant = truth.group_by("user").agg(n=pl.len()).with_columns(
        m=pl.min_horizontal(pl.col("n"), pl.lit(K)).cast(pl.Int64))
    return (relevant.join(per_user, on="user", how="left").join(ideal, on="m")
            .select("user",
                    (pl.col("hits").fill_null(0) / K).alias(f"P@{K}"),
                    (pl.col("hits").fill_null(0) / pl.col("n")).alias(f"R@{K}"),
                    (pl.col("dcg").fill_null(0) / pl.col("idcg")).alias(f"nDCG@{K}"),
                    (pl.col("ap_sum").fill_null(0) / pl.col("m")).alias(f"MAP@{K}"))
            .sort("user"))


def polars_frames(truth: pd.DataFrame, pred: pd.DataFrame) -> pd.DataFrame:
    import polars as pl

    return polars_query(pl.from_pandas(pred).lazy(),
                        pl.from_pandas(truth).lazy()).collect().to_pandas()


def polars_parquet(truth_path: Path, pred_path: Path) -> pd.DataFrame:
    import polars as pl

    return polars_query(pl.scan_parquet(pred_path),
                        pl.scan_parquet(truth_path)).collect().to_pandas()


# --- agreement -----------------------------------------------------------------------------

def largest_difference(reference: pd.DataFrame, other: pd.DataFrame | dict[str, float]) -> float:
    """Largest absolute difference per user (a frame) or in the means (a dict)."""
    if isinstance(other, dict):
        means = reference[METRICS].mean()
        return max(abs(float(means[m]) - float(other[m])) for m in METRICS)
    ref = reference.sort_values("user").reset_index(drop=True)
    oth = other.sort_values("user").reset_index(drop=True)
    if not np.array_equal(ref["user"].to_numpy(), oth["user"].to_numpy()):
        return float("inf")
    return max(float(np.max(np.abs(ref[m].to_numpy(float) - oth[m].to_numpy(float))))
               for m in METRICS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--items", type=int, default=100, help="predictions per user")
    parser.add_argument("--relevant", type=int, default=20, help="truth items per user")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tools", default="receval,cli,duckdb,polars",
                        help="comma-separated subset of receval,cli,duckdb,polars")
    parser.add_argument("--data-dir", default=None, help="where the Parquet files go (temp dir)")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    tools = set(args.tools.split(","))

    truth, pred = generate(args.users, args.items, args.relevant, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(args.data_dir or tmp)
        data.mkdir(parents=True, exist_ok=True)
        truth_path, pred_path = data / "truth.parquet", data / "preds.parquet"
        truth.to_parquet(truth_path, index=False)
        pred.to_parquet(pred_path, index=False)

        # compile receval's kernels (and load every library) on a tiny input before timing
        small_t, small_p = generate(50, args.items, args.relevant, args.seed + 1)
        receval_frames(small_t, small_p)
        runs: list[tuple[str, str, Callable[[], Any]]] = [
            ("receval", "receval.evaluate from pandas", lambda: receval_frames(truth, pred)),
            ("receval", "receval.evaluate from Parquet (paths)",
             lambda: receval_parquet(truth_path, pred_path)),
            ("cli", "receval evaluate CLI from Parquet (subprocess)",
             lambda: receval_cli(truth_path, pred_path)),
            ("duckdb", "DuckDB SQL from pandas", lambda: duckdb_frames(truth, pred)),
            ("duckdb", "DuckDB SQL from Parquet", lambda: duckdb_parquet(truth_path, pred_path)),
            ("polars", "Polars lazy from pandas", lambda: polars_frames(truth, pred)),
            ("polars", "Polars lazy from Parquet (scan_parquet)",
             lambda: polars_parquet(truth_path, pred_path)),
        ]
        reference = receval_frames(truth, pred)
        rows: list[dict[str, Any]] = []
        for tool, name, fn in runs:
            if tool not in tools:
                continue
            times, values = timed(fn, args.repeat)
            diff = largest_difference(reference, values)
            rows.append({"tool": tool, "what": name, "median_s": statistics.median(times),
                         "times_s": times, "largest_difference": diff,
                         "checked": "means" if isinstance(values, dict) else "per user",
                         "agree": diff <= TOLERANCE})
            print(f"{name:<48} {statistics.median(times):8.3f} s   max |diff| {diff:.1e}",
                  flush=True)

    base = next((r["median_s"] for r in rows if r["what"].startswith("receval.evaluate")), None)
    for row in rows:
        row["ratio_vs_receval"] = row["median_s"] / base if base else None
    results = {
        "users": args.users, "items_per_user": args.items, "relevant_per_user": args.relevant,
        "prediction_rows": len(pred), "truth_rows": len(truth), "metrics": METRICS,
        "repeat": args.repeat, "tolerance": TOLERANCE, "rows": rows,
        "means": {m: float(reference[m].mean()) for m in METRICS},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average": os.getloadavg()},
    }
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    agree = all(row["agree"] for row in rows)
    if not agree:
        print("VALUES DISAGREE", file=sys.stderr)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
