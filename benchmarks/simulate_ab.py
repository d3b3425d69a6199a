"""A/A and A/B simulation of the monitor's variant decisions (issue 34).

Each experiment: ``--users`` users split at random (probability 1/2) between A and B; user u
has a click propensity p_u ~ Beta(0.5, 2) (heterogeneous users); on each of ``--days`` days a
user is active with probability ``--active`` and then served 1 + Poisson(``--extra``) lists
(at most 4) of 5 items, each item clicked with probability p_u (B's p_u times 1 + ``--lift``
in an A/B); the metric is P@5 per list. Daily windows, a look at the end of each day.

False-positive rates under A/A (``--lift 0``), over ``--experiments`` experiments:

- (a) the per-window test as it was: Welch's t over the lists of one window (the rate per
  window, and the rate of "some window of the 30 reads p < alpha");
- (b) the user-unit test (ratio over users, delta method, Welch df) at the horizon, once;
- (c) the same test looked at daily on the cumulative data, stopping at the first p < alpha;
- (d) the anytime-valid decision (receval.stats.sequential: the normal-mixture confidence
  sequence tuned for ``--users``) looked at daily: some day's p <= alpha.

With ``--lift`` > 0, the power of (b) and (d) (and of both with CUPED: a pre-period of
``--pre-days`` days of the same process per user as the covariate); the CUPED variance
reduction is reported as 1 - var(adjusted) / var(plain) of the difference at the horizon.

Everything is computed from exact per-(user, day) sums (lists, sum of values, sum of squared
values), vectorised over experiments; tests/test_monitor_ab.py checks that the sequence here
equals receval.monitor's on the same logs (:func:`logs`).

``--through-monitor N`` also runs the issue's A/A through ``receval.monitor`` itself (300
users, 7 daily lists of 5, one weekly window) N times per unit (list, user).

    python benchmarks/simulate_ab.py                         # 2000 A/A experiments
    python benchmarks/simulate_ab.py --lift 0.1              # power at a 10% lift
    python benchmarks/simulate_ab.py --experiments 200 --users 200   # a quick look
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from receval.randomness import stream
from receval.stats import sequential

K = 5  # items per list
MAX_LISTS = 4


@dataclass
class Sums:
    """Per (experiment, user, day): lists, sum of P@5 values, sum of squared values; the
    arm (1 = B) per (experiment, user); the pre-period per-list mean per (experiment, user)."""

    n: np.ndarray
    s: np.ndarray
    q: np.ndarray
    arm: np.ndarray
    pre: np.ndarray


def simulate(
    experiments: int,
    users: int,
    days: int,
    *,
    active: float = 0.6,
    extra: float = 1.0,
    lift: float = 0.0,
    pre_days: int = 14,
    seed: int = 0,
    chunk: int = 0,
) -> Sums:
    """The per-(experiment, user, day) sums of one batch of experiments (``chunk`` keys its
    random stream: ``stream(seed, "simulate_ab", lift, chunk)``).

    Example:
        >>> s = simulate(2, 10, 3)
        >>> s.n.shape, bool((s.s <= s.n).all()), bool((s.q <= s.s + 1e-12).all())
        ((2, 10, 3), True, True)
    """
    rng = stream(seed, "simulate_ab", repr(float(lift)), str(chunk))
    shape = (experiments, users)
    prop = rng.beta(0.5, 2.0, shape)
    arm = (rng.random(shape) < 0.5).astype(np.int8)
    p = np.minimum(1.0, prop * np.where(arm == 1, 1.0 + lift, 1.0))

    def period(d: int, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        on = rng.random((*shape, d)) < active
        n = np.where(on, np.minimum(1 + rng.poisson(extra, (*shape, d)), MAX_LISTS), 0)
        clicks = rng.binomial(K, np.broadcast_to(p[..., None, None], (*shape, d, MAX_LISTS)))
        used = np.arange(MAX_LISTS) < n[..., None]
        v = np.where(used, clicks / K, 0.0)
        return n.astype(np.float64), v.sum(-1), (v * v).sum(-1)

    # the pre-period comes before the experiment: no lift in it
    pre_n, pre_s, _ = period(pre_days, prop) if pre_days else (None, None, None)
    n, s, q = period(days, p)
    if pre_n is not None:
        tot_n, tot_s = pre_n.sum(-1), pre_s.sum(-1)
        pre = np.where(tot_n > 0, tot_s / np.maximum(tot_n, 1), np.nan)
    else:
        pre = np.full(shape, np.nan)
    return Sums(n, s, q, arm, pre)


def _ratio(S: np.ndarray, N: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per experiment: the ratio over users (``mask``: the arm's users with lists), its
    delta-method variance, the users and the linearised values (0 outside the mask)."""
    m = mask.sum(1).astype(np.float64)
    tot_n = np.where(mask, N, 0).sum(1)
    r = np.where(mask, S, 0).sum(1) / np.maximum(tot_n, 1e-300)
    nbar = tot_n / np.maximum(m, 1)
    lin = np.where(mask, (S - r[:, None] * N) / np.maximum(nbar, 1e-300)[:, None], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = (lin * lin).sum(1) / ((m - 1) * m)
    return r, var, m, lin


def user_test(
    S: np.ndarray, N: np.ndarray, arm: np.ndarray, x: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """B against A on users, per experiment, from cumulative per-user sums ``S``, ``N``
    (experiments x users): delta, its variance (CUPED-adjusted with ``x``), users, Welch df
    and p-value; with ``x``, also the plain variance.

    Example:
        >>> S = np.array([[1.0, 0.0, 2.0, 1.0]]); N = np.array([[1.0, 1.0, 2.0, 2.0]])
        >>> out = user_test(S, N, np.array([[0, 0, 1, 1]]))
        >>> float(out["delta"][0]), int(out["t"][0])
        (0.25, 4)
    """
    has = N > 0
    ra, va, ma, la = _ratio(S, N, has & (arm == 0))
    rb, vb, mb, lb = _ratio(S, N, has & (arm == 1))
    delta = rb - ra
    plain = va + vb
    if x is not None:
        inside = has & ~np.isnan(x)
        fill = np.nanmean(np.where(has, x, np.nan), axis=1, keepdims=True)
        xx = np.where(np.isnan(x), fill, x)
        y = la + lb  # each user's linearised value (0 where absent)
        cnt = has.sum(1)
        xm = np.where(has, xx, 0).sum(1) / cnt
        xc = np.where(has, xx - xm[:, None], 0.0)
        theta = (y * xc).sum(1) / (xc * xc).sum(1)
        out_v = []
        xmeans = []
        for lin, mask, m in ((la, has & (arm == 0), ma), (lb, has & (arm == 1), mb)):
            xa = np.where(mask, xx, 0).sum(1) / m
            adj = np.where(mask, lin - theta[:, None] * (xx - xa[:, None]), 0.0)
            mean = adj.sum(1) / m
            out_v.append((np.where(mask, adj - mean[:, None], 0) ** 2).sum(1) / ((m - 1) * m))
            xmeans.append(xa)
        delta = delta - theta * (xmeans[1] - xmeans[0])
        va, vb = out_v
        del inside
    se = np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (ma - 1) + vb**2 / (mb - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * stats.t.sf(np.abs(delta) / se, df)
    return {
        "delta": delta,
        "se": se,
        "t": ma + mb,
        "p": p,
        "plain_var": plain,
        "var": va + vb,
        "users": (mb, ma),
    }


def list_test(n: np.ndarray, s: np.ndarray, q: np.ndarray, arm: np.ndarray) -> np.ndarray:
    """Welch's t over the lists of each window (experiments x days p-values), from the sums
    of one day's lists per arm.

    Example:
        >>> n = np.ones((1, 4, 1)); s = np.array([[[1.0], [0.0], [1.0], [0.0]]])
        >>> float(list_test(n, s, s * s, np.array([[0, 0, 1, 1]]))[0, 0])
        1.0
    """
    out = []
    for a in (0, 1):
        mask = (arm == a)[..., None]
        cnt = np.where(mask, n, 0).sum(1)
        tot = np.where(mask, s, 0).sum(1)
        sq = np.where(mask, q, 0).sum(1)
        mean = tot / cnt
        var = (sq - cnt * mean * mean) / (cnt - 1)
        out.append((cnt, mean, var / cnt))
    (na, ma_, va), (nb, mb_, vb) = out
    se = np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mb_ - ma_) / se
        p = 2 * stats.t.sf(np.abs(t), df)
    return np.where((mb_ == ma_) & (se == 0), 1.0, p)


def sequence(sums: Sums, planned: int, alpha: float, cuped: bool = False) -> dict[str, Any]:
    """Per experiment and day: the user-unit test on the cumulative data and the
    anytime-valid p-value (running minimum) and interval (running intersection)."""
    rho = sequential.mixing(planned, alpha)
    days = sums.n.shape[2]
    S, N = np.cumsum(sums.s, axis=2), np.cumsum(sums.n, axis=2)
    p_fixed, p_av, low, high, delta = [], [], [], [], []
    run_p = np.ones(S.shape[0])
    run_low = np.full(S.shape[0], -np.inf)
    run_high = np.full(S.shape[0], np.inf)
    for d in range(days):
        out = user_test(S[..., d], N[..., d], sums.arm, sums.pre if cuped else None)
        p_fixed.append(out["p"])
        log_m = sequential.log_mixture(out["delta"], out["se"], out["t"], rho)
        p_now = np.minimum(1.0, np.exp(-np.asarray(log_m)))
        run_p = np.minimum(run_p, np.where(np.isnan(p_now), 1.0, p_now))
        w = np.asarray(sequential.half_width(out["se"], out["t"], rho, alpha))
        run_low = np.maximum(run_low, out["delta"] - w)
        run_high = np.minimum(run_high, out["delta"] + w)
        p_av.append(run_p.copy())
        low.append(run_low.copy())
        high.append(run_high.copy())
        delta.append(out["delta"])
    return {
        "p_fixed": np.stack(p_fixed, 1),
        "p_always_valid": np.stack(p_av, 1),
        "cs_low": np.stack(low, 1),
        "cs_high": np.stack(high, 1),
        "delta": np.stack(delta, 1),
        "last": out,
    }


def run(
    experiments: int,
    users: int,
    days: int,
    lift: float,
    alpha: float,
    seed: int,
    batch: int = 100,
    **kwargs: Any,
) -> dict[str, Any]:
    """The rates over ``experiments`` (in batches of ``batch``)."""
    counts = {k: 0 for k in ("a_window", "a_any", "b", "c", "d", "b_cuped", "d_cuped")}
    windows = 0
    reductions = []
    done = 0
    chunk = 0
    while done < experiments:
        e = min(batch, experiments - done)
        sums = simulate(e, users, days, lift=lift, seed=seed, chunk=chunk, **kwargs)
        p_list = list_test(sums.n, sums.s, sums.q, sums.arm)
        counts["a_window"] += int((p_list < alpha).sum())
        windows += p_list.size
        counts["a_any"] += int((p_list < alpha).any(1).sum())
        plain = sequence(sums, users, alpha)
        adj = sequence(sums, users, alpha, cuped=True)
        counts["b"] += int((plain["p_fixed"][:, -1] < alpha).sum())
        counts["c"] += int((plain["p_fixed"] < alpha).any(1).sum())
        counts["d"] += int((plain["p_always_valid"][:, -1] <= alpha).sum())
        counts["b_cuped"] += int((adj["p_fixed"][:, -1] < alpha).sum())
        counts["d_cuped"] += int((adj["p_always_valid"][:, -1] <= alpha).sum())
        reductions.append(1 - adj["last"]["var"] / adj["last"]["plain_var"])
        done += e
        chunk += 1
    rates = {k: v / (windows if k == "a_window" else experiments) for k, v in counts.items()}
    se = {
        k: math.sqrt(alpha * (1 - alpha) / (windows if k == "a_window" else experiments))
        for k in counts
    }
    return {
        "rates": rates,
        "counts": counts,
        "experiments": experiments,
        "windows": windows,
        "alpha": alpha,
        "se_at_alpha": se,
        "cuped_variance_reduction": float(np.nanmedian(np.concatenate(reductions))),
    }


def logs(sums: Sums, e: int, start: str = "2024-01-01") -> tuple[Any, Any]:
    """Experiment ``e``'s served lists and clicks as monitor logs (impressions: user, item,
    rank, served_at, variant; feedback: user, item, value, at), one list's clicks on its first
    items, every list closed by a last feedback row. Lists need more than the sums: their
    values are rebuilt from the day's sum by giving each list its share (the sums, which are
    all the sequence reads, are the simulation's exactly)."""
    import pandas as pd

    t0 = pd.Timestamp(start, tz="UTC")
    n, s = sums.n[e], sums.s[e]
    imp, fb = [], []
    for u in range(n.shape[0]):
        for d in range(n.shape[1]):
            lists = int(n[u, d])
            clicks = round(float(s[u, d]) * K)
            for j in range(lists):
                c = clicks // lists + (1 if j < clicks % lists else 0)
                served = t0 + pd.Timedelta(days=d, hours=1 + 4 * j)
                for r in range(K):
                    item = d * 100 + j * 10 + r
                    imp.append((u, item, r + 1, served, "AB"[int(sums.arm[e, u])]))
                    if r < c:
                        fb.append((u, item, 1.0, served + pd.Timedelta(minutes=30)))
    fb.append((-1, -1, 1.0, t0 + pd.Timedelta(days=n.shape[1] + 3)))
    return (
        pd.DataFrame(imp, columns=["user", "item", "rank", "served_at", "variant"]),
        pd.DataFrame(fb, columns=["user", "item", "value", "at"]),
    )


def through_monitor(runs: int, seed: int = 0) -> dict[str, int]:
    """The issue's A/A through receval.monitor: 300 users at random in A or B, 7 daily lists
    of 5 in one week, propensity Beta(0.5, 2); p < 0.05 counted per unit."""
    import warnings

    import pandas as pd

    import receval

    out = {"list": 0, "user": 0}
    for r in range(runs):
        rng = stream(seed, "simulate_ab", "through monitor", str(r))
        variant = np.where(rng.random(300) < 0.5, "A", "B")
        prop = rng.beta(0.5, 2, 300)
        u = np.repeat(np.arange(300), 7 * K)
        d = np.tile(np.repeat(np.arange(7), K), 300)
        rank = np.tile(np.arange(1, K + 1), 300 * 7)
        served = pd.Timestamp("2024-01-01") + pd.to_timedelta(d, "D") + pd.Timedelta("10h")
        item = d * 100 + rank
        imp = pd.DataFrame(
            {"user": u, "item": item, "rank": rank, "served_at": served, "variant": variant[u]}
        )
        click = rng.random(u.size) < prop[u]
        fb = pd.DataFrame(
            {
                "user": u[click],
                "item": item[click],
                "value": 1.0,
                "at": served[click] + pd.Timedelta("1h"),
            }
        )
        for unit in out:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = receval.monitor(
                    imp,
                    fb,
                    "P@5",
                    window="W",
                    attribution="1D",
                    variant_col="variant",
                    n_resamples=0,
                    unit=unit,
                )
            out[unit] += int(m.comparisons["p_value"].iloc[0] < 0.05)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=2000)
    ap.add_argument("--users", type=int, default=400)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--lift", type=float, default=0.0)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--through-monitor", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    out = run(args.experiments, args.users, args.days, args.lift, args.alpha, args.seed)
    out["seconds"] = round(time.perf_counter() - t, 1)
    out["setup"] = {
        "users": args.users,
        "days": args.days,
        "lift": args.lift,
        "planned_users": args.users,
    }
    if args.through_monitor:
        out["through_monitor"] = {
            "runs": args.through_monitor,
            "p_below_0.05": through_monitor(args.through_monitor),
        }
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    r, se = out["rates"], out["se_at_alpha"]
    what = "false-positive rate" if args.lift == 0 else f"rejection rate (lift {args.lift:g})"
    print(
        f"{args.experiments} experiments x {args.users} users x {args.days} days, "
        f"alpha {args.alpha}: {what} ({out['seconds']} s)"
    )
    labels = {
        "a_window": "(a) per-window Welch over lists, per window",
        "a_any": "(a) per-window Welch over lists, some window of the days",
        "b": "(b) users, fixed horizon, one look",
        "c": "(c) users, fixed-horizon test looked at daily",
        "d": "(d) users, anytime-valid, looked at daily",
        "b_cuped": "(b) with CUPED",
        "d_cuped": "(d) with CUPED",
    }
    for k, label in labels.items():
        print(f"  {label:58s} {r[k]:.4f}   (alpha + 2 se = {args.alpha + 2 * se[k]:.4f})")
    print(
        f"  CUPED variance reduction (median over experiments): "
        f"{out['cuped_variance_reduction']:.1%}"
    )
    if args.through_monitor:
        tm = out["through_monitor"]["p_below_0.05"]
        print(
            f"  through receval.monitor ({args.through_monitor} A/A runs, one weekly window): "
            f"p < 0.05 in {tm['list']} (unit='list') and {tm['user']} (unit='user')"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
