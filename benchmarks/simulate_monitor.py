"""A simulated month of monitoring with a drop in week 3, run one day at a time.

2,000 users get a top-10 list every day (Monday 2024-01-01 to Sunday 2024-02-04, five weeks);
a user clicks the item at rank r with probability 0.30 / r, except in week 3 (2024-01-15 to
2024-01-21), when a bad model release halves every probability; a click arrives 0 to 48 hours
after the serving. ``receval.monitor`` runs once a day on that day's logs with a state file, as
a nightly job would; the last run prints the weekly windows and the drift view against week 1.

    python benchmarks/simulate_monitor.py [--plot drift.png] [--report monitor.html]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import receval

T0 = pd.Timestamp("2024-01-01", tz="UTC")
DAY = pd.Timedelta("1D")


def simulate(users: int = 2000, days: int = 35, k: int = 10,
             seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    imp, fb = [], []
    for day in range(days):
        served = (T0 + day * DAY).value + rng.integers(0, 86_400, users) * 10**9  # ns
        items = (rng.integers(0, 5_000, (users, 1)) + np.arange(k) * 499) % 5_000  # distinct
        rank = np.arange(1, k + 1)
        p = 0.30 / rank * (0.5 if 14 <= day < 21 else 1.0)
        clicked = rng.random((users, k)) < p
        user = np.repeat(np.arange(users), k)
        when = np.repeat(served, k)
        imp.append(pd.DataFrame({"user": user, "item": items.ravel(),
                                 "rank": np.tile(rank, users),
                                 "served_at": pd.to_datetime(when, utc=True)}))
        delay = rng.integers(0, 48 * 3600, clicked.sum()) * 10**9
        fb.append(pd.DataFrame({"user": user[clicked.ravel()],
                                "item": items.ravel()[clicked.ravel()], "value": 1.0,
                                "at": pd.to_datetime(when[clicked.ravel()] + delay,
                                                     utc=True)}))
    return pd.concat(imp, ignore_index=True), pd.concat(fb, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plot", help="write the drift plot (.png or .svg)")
    parser.add_argument("--report", help="write the HTML report")
    args = parser.parse_args()
    imp, fb = simulate()
    kw = {"window": "W", "attribution": "3D", "n_resamples": 1000, "seed": 0}
    metrics = ["P@10", "MRR"]
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state.sqlite"
        for day in range(37):  # two more days: the last clicks of the month arrive
            lo, hi = T0 + day * DAY, T0 + (day + 1) * DAY
            result = receval.monitor(imp[(imp["served_at"] >= lo) & (imp["served_at"] < hi)],
                                     fb[(fb["at"] >= lo) & (fb["at"] < hi)], metrics,
                                     state=state, **kw)
    batch = receval.monitor(imp, fb, metrics, **kw)
    pd.testing.assert_frame_equal(result.windows, batch.windows, check_exact=True)
    pd.set_option("display.width", 200)
    columns = ["window_start", "P@10", "P@10_ci_low", "P@10_ci_high", "MRR",
               "users_evaluated", "users_waiting", "users_unjudged", "closed"]
    print(result.windows[columns].to_string(index=False, float_format="{:.4f}".format))
    print()
    drift = result.drift()
    print(drift[["window_start", "metric", "value", "band_low", "band_high", "flag"]]
          .to_string(index=False, float_format="{:.4f}".format))
    print()
    print("37 daily runs with a state file == one batch run: bit for bit")
    flagged = drift[drift["flag"]]
    print("flagged:", ", ".join(f"{m} in the week of {w.date()}" for w, m in
                                zip(flagged["window_start"], flagged["metric"], strict=True)))
    if args.plot:
        result.plot(path=args.plot)
    if args.report:
        result.to_html(args.report)


if __name__ == "__main__":
    main()
