"""Monitoring benchmark (issue 15): windows over served lists and delayed feedback.

Workload: ``--days`` days x ``--users`` users x a top-``--k`` list each per day (1M impressions
a day at the defaults), integer ids, one list per user per day served at a random second of
the day; ``--feedback`` (5%) of the impressions get one feedback row (value 1..5) arriving
uniformly within ``--attribution-days`` (7) of the serving. Metrics P@10, nDCG@10 and MRR,
relevance threshold 4, weekly ("7D") windows, 7-day attribution.

Measured (seconds, one run each, after a warm-up run on tiny data so numba is compiled):

- ``batch``: ``receval.monitor`` over all days at once (no state);
- ``offline join``: the join of the two logs in pandas (a merge on (user, item), the
  attribution filter, the largest value), as a user evaluating offline would write it;
- ``offline``: ``receval.evaluate`` on the same joined rows (each list one user: every
  impression of a list with feedback as the predictions, the judged ones as the truth), the
  floor the batch run is compared with (target: batch within 3x);
- ``state``: the state after all days but the last (one monitor run with ``state=``, untimed),
  then ``daily update``: the last day's impressions and the feedback dated that day, added
  to the state (target: seconds). The update's windows are checked equal, bit for bit, to the
  batch run's.

``--resamples`` sets the bootstrap of the intervals (the daily update redoes the open windows'
intervals; the closed windows' are stored in the state). ``--repeat N``: the batch run and the
offline evaluate alternate N times, and the ratio is that of their fastest runs (one run of
each is at the mercy of whatever else the machine does in those seconds); ``--skip-state``
leaves out the state and the daily update.

    python benchmarks/bench_monitor.py                       # the full size (30 x 1M rows)
    python benchmarks/bench_monitor.py --users 2000 --days 10  # a quick check
    python benchmarks/bench_monitor.py --users 30000 --skip-state  # the batch ratio only
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import receval

DAY_NS = 86_400 * 10**9
T0 = pd.Timestamp("2024-01-01", tz="UTC").value


def make_logs(users: int, days: int, k: int, feedback: float, attribution_days: int,
              seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seeded logs: impressions (user, item, rank, served_at) and feedback (user, item, value,
    at); times as int64 ns in datetime64 columns (UTC)."""
    rng = np.random.default_rng(seed)
    n = users * days * k
    user = np.tile(np.repeat(np.arange(users, dtype=np.int64), k), days)
    day = np.repeat(np.arange(days, dtype=np.int64), users * k)
    second = np.repeat(rng.integers(0, 86_400, users * days), k)
    served = T0 + day * DAY_NS + second * 10**9
    # k distinct items per list: a random offset and stride into a catalogue of 50k items
    base = np.repeat(rng.integers(0, 50_000, users * days), k)
    item = (base + np.tile(np.arange(k), users * days) * 4_999) % 50_000
    rank = np.tile(np.arange(1, k + 1, dtype=np.int64), users * days)
    imp = pd.DataFrame({"user": user, "item": item, "rank": rank,
                        "served_at": pd.to_datetime(served, utc=True)})
    chosen = np.flatnonzero(rng.random(n) < feedback)
    delay = rng.integers(0, attribution_days * DAY_NS, len(chosen))
    fb = pd.DataFrame({"user": user[chosen], "item": item[chosen],
                       "value": rng.integers(1, 6, len(chosen)).astype(np.float64),
                       "at": pd.to_datetime(served[chosen] + delay, utc=True)})
    return imp, fb.sort_values("at", kind="stable", ignore_index=True)


def offline_rows(imp: pd.DataFrame, fb: pd.DataFrame,
                 span: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The joined rows an offline evaluation reads: each list (user, served) one user."""
    served = ns(imp["served_at"])
    lists = imp["user"].to_numpy() * 10**8 + (served - T0) // 10**9  # unique per list
    left = pd.DataFrame({"user": imp["user"].to_numpy(), "item": imp["item"].to_numpy(),
                         "row": np.arange(len(imp)), "served": served})
    right = pd.DataFrame({"user": fb["user"].to_numpy(), "item": fb["item"].to_numpy(),
                          "value": fb["value"].to_numpy(),
                          "at": ns(fb["at"])})
    pairs = left.merge(right, on=["user", "item"])
    pairs = pairs[(pairs["served"] <= pairs["at"]) & (pairs["at"] < pairs["served"] + span)]
    best = pairs.groupby("row")["value"].max()
    judged_lists = np.unique(lists[best.index.to_numpy()])
    keep = np.isin(lists, judged_lists)
    preds = pd.DataFrame({"user": lists[keep], "item": imp["item"].to_numpy()[keep],
                          "rank": imp["rank"].to_numpy()[keep]})
    truth = pd.DataFrame({"user": lists[best.index.to_numpy()],
                          "item": imp["item"].to_numpy()[best.index.to_numpy()],
                          "rating": best.to_numpy()})
    return truth, preds


def ns(series: pd.Series) -> np.ndarray:
    """int64 ns since the epoch of a UTC datetime column."""
    return series.dt.tz_convert(None).to_numpy(dtype="datetime64[ns]").astype(np.int64)


def timed(function, *args, **kwargs):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = function(*args, **kwargs)
    return out, time.perf_counter() - start


def variants(args: argparse.Namespace) -> None:
    """The batch run with a variant column (users split by parity), the time spent in the
    comparisons (per window: :func:`receval.monitor.ab.compare_window`; the decisions:
    the cumulative sequence) measured inside it, for ``unit="user"`` and ``unit="list"``."""
    from receval.monitor import core

    metrics = ["P@10", "nDCG@10", "MRR"]
    kw = {"window": args.window, "attribution": f"{args.attribution_days}D",
          "relevance_threshold": 4, "n_resamples": args.resamples, "variant_col": "variant"}
    spent = {"compare": 0.0, "sequence": 0.0}
    originals = {"compare": core._Run._compare, "sequence": core._Run._sequence}

    def clocked(name):  # type: ignore[no-untyped-def]
        def wrapper(self, *a, **k):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return originals[name](self, *a, **k)
            finally:
                spent[name] += time.perf_counter() - start
        return wrapper

    core._Run._compare = clocked("compare")  # type: ignore[method-assign]
    core._Run._sequence = clocked("sequence")  # type: ignore[method-assign]
    tiny_imp, tiny_fb = make_logs(50, 3, args.k, 0.2, args.attribution_days, 1)
    tiny_imp["variant"] = np.where(tiny_imp["user"] % 2, "B", "A")
    receval.monitor(tiny_imp, tiny_fb, metrics, **kw)  # warm-up
    imp, fb = make_logs(args.users, args.days, args.k, args.feedback, args.attribution_days,
                        args.seed)
    imp["variant"] = np.where(imp["user"].to_numpy() % 2, "B", "A")
    print(f"{len(imp):,} impressions, {len(fb):,} feedback rows, {args.days} days, windows "
          f"{args.window}, {args.resamples} resamples, two variants")
    results = {}
    for unit in args.units.split(",") * max(1, args.repeat):
        for k in spent:
            spent[k] = 0.0
        out, total = timed(receval.monitor, imp, fb, metrics, unit=unit, **kw)
        extra = spent["compare"] + spent["sequence"]
        rest = total - extra
        print(f"unit={unit}: run {total:.2f} s, of which comparisons per window "
              f"{spent['compare']:.2f} s and decisions {spent['sequence']:.2f} s: they add "
              f"{extra / rest:.1%} to the rest of the run ({rest:.2f} s); "
              f"{len(out.comparisons)} comparison rows, {int(out.decisions['looks'].max())} "
              "looks")
        best = results.get(unit)
        if best is None or total < best["run_s"]:
            results[unit] = {"run_s": total, "compare_s": spent["compare"],
                             "decisions_s": spent["sequence"], "added": extra / rest}
    print(json.dumps(results, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--feedback", type=float, default=0.05)
    parser.add_argument("--attribution-days", type=int, default=7)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3,
                        help="batch and offline evaluate alternated this many times (min)")
    parser.add_argument("--skip-state", action="store_true",
                        help="no state and no daily update (the batch ratio only)")
    parser.add_argument("--out", help="write the numbers here as JSON")
    parser.add_argument("--variants", action="store_true",
                        help="two variants (users split by parity): time the variant "
                             "comparisons (per window and the decisions) inside the batch run")
    parser.add_argument("--window", default="7D", help="the windows (and the decisions' looks)")
    parser.add_argument("--units", default="user,list",
                        help="with --variants: the comparison units timed, comma-separated")
    args = parser.parse_args()
    if args.variants:
        variants(args)
        return

    metrics = ["P@10", "nDCG@10", "MRR"]
    # ratings, not clicks: a list counts once it has feedback (min_feedback=1), as the
    # offline evaluation of the joined rows below counts the users of the truth
    kw = {"window": "7D", "attribution": f"{args.attribution_days}D",
          "relevance_threshold": 4, "n_resamples": args.resamples, "min_feedback": 1}
    tiny_imp, tiny_fb = make_logs(50, 3, args.k, 0.2, args.attribution_days, 1)
    receval.monitor(tiny_imp, tiny_fb, metrics, **kw)  # warm-up: numba compiled or loaded

    imp, fb = make_logs(args.users, args.days, args.k, args.feedback, args.attribution_days,
                        args.seed)
    print(f"{len(imp):,} impressions, {len(fb):,} feedback rows, {args.days} days")
    (truth, preds), t_join = timed(offline_rows, imp, fb, args.attribution_days * DAY_NS)
    print(f"offline join (pandas merge, as a user would write it): {t_join:.2f} s")
    batch_runs, offline_runs, batch_cpu, offline_cpu = [], [], [], []
    batch_user, offline_user = [], []  # user CPU: no page faults (system time) in it
    for _ in range(max(1, args.repeat)):  # alternated: both see the same machine
        cpu, user = time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_utime
        batch, t = timed(receval.monitor, imp, fb, metrics, **kw)
        batch_runs.append(t)
        batch_cpu.append(time.process_time() - cpu)
        batch_user.append(resource.getrusage(resource.RUSAGE_SELF).ru_utime - user)
        cpu, user = time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_utime
        offline, t = timed(receval.evaluate, truth, preds, metrics, relevance_threshold=4,
                           silence=["undefined"])
        offline_runs.append(t)
        offline_cpu.append(time.process_time() - cpu)
        offline_user.append(resource.getrusage(resource.RUSAGE_SELF).ru_utime - user)
    t_batch, t_offline = min(batch_runs), min(offline_runs)
    print(f"batch run: {t_batch:.2f} s (runs: {', '.join(f'{t:.2f}' for t in batch_runs)})")
    print(f"offline evaluate on the joined rows ({len(preds):,} predictions, {len(truth):,} "
          f"truth rows): {t_offline:.2f} s (runs: "
          f"{', '.join(f'{t:.2f}' for t in offline_runs)})")
    print(f"batch / offline evaluate: {t_batch / t_offline:.2f} (CPU seconds of the process, "
          f"all threads, fastest: {min(batch_cpu):.2f} / {min(offline_cpu):.2f}; user CPU "
          f"only: {min(batch_user):.2f} / {min(offline_user):.2f})")
    # every list with feedback is evaluated once, in one window or another
    assert int(batch.windows["users_evaluated"].sum()) == offline.counts["users"]["evaluated"]
    t_state = t_update = size = math.nan
    if not args.skip_state:
        last = T0 + (args.days - 1) * DAY_NS
        served = ns(imp["served_at"])
        at = ns(fb["at"])
        with tempfile.TemporaryDirectory() as tmp:
            state = Path(tmp) / "state.sqlite"
            _, t_state = timed(receval.monitor, imp[served < last], fb[at < last], metrics,
                               state=state, **kw)
            size = state.stat().st_size
            print(f"state after {args.days - 1} days: {t_state:.2f} s to build, "
                  f"{size / 2**20:.1f} MiB")
            update, t_update = timed(receval.monitor, imp[served >= last], fb[at >= last],
                                     metrics, state=state, **kw)
        print(f"daily update (day {args.days}): {t_update:.2f} s")
        pd.testing.assert_frame_equal(update.windows, batch.windows, check_exact=True)
        print("daily update == batch run: bit for bit")
    print(batch.windows[["window_start", *metrics, "users_evaluated", "users_waiting",
                         "users_unjudged", "closed"]].to_string(index=False))
    results = {
        "impressions": len(imp), "feedback": len(fb), "users": args.users, "days": args.days,
        "resamples": args.resamples, "batch_s": t_batch, "offline_evaluate_s": t_offline,
        "batch_runs_s": batch_runs, "offline_evaluate_runs_s": offline_runs,
        "batch_cpu_s": batch_cpu, "offline_evaluate_cpu_s": offline_cpu,
        "batch_user_cpu_s": batch_user, "offline_evaluate_user_cpu_s": offline_user,
        "batch_over_offline": t_batch / t_offline, "offline_join_s": t_join,
        "batch_over_join_and_offline": t_batch / (t_join + t_offline), "state_build_s": t_state,
        "state_mib": size / 2**20, "daily_update_s": t_update,
        "offline_predictions": len(preds), "offline_truth": len(truth),
    }
    print(json.dumps(results, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
