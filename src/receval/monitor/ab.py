"""Variant comparisons of :func:`receval.monitor` with the user as the unit of analysis.

- **Per window** (:func:`compare_window`): each variant against the baseline on the window's
  closed and open counted lists. ``unit="user"`` (default: an A/B test randomises users):
  a variant's value is the mean over its lists (the window's number, unchanged) read as the
  ratio ``sum over users of s_u / sum of n_u`` (``s_u``: the sum of a user's per-list values,
  ``n_u`` their number); Welch's t on the delta-method variances
  (:func:`receval.stats.sequential.ratio_estimate`) and its interval (the t quantile at the
  Welch-Satterthwaite degrees of freedom: the interval excludes 0 exactly when p < alpha).
  A bootstrap over users was measured too: the users' sums take many distinct values, so each
  resample costs O(users) (0.10 s per 1,000 resamples of 15,000 users: about 28% more for a
  monitor run of 9M impressions); the delta method is its large-sample equivalent.
  ``unit="list"``: every list its own unit (only when the lists are what was randomised):
  Welch's t and the bootstrap over lists.
- **Cumulative** (:class:`Sequence`): at the end of every closed window (a *look*) the closed
  lists of every window so far, summed per (variant, user) exactly, give the difference of
  each variant with the baseline, its confidence sequence and the always-valid p-value
  (:mod:`receval.stats.sequential`); ``p_always_valid`` is the running minimum over the looks,
  the interval the running intersection. The sums live in the state file, so incremental runs
  give the same bits as one run over every log.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.randomness import stream
from receval.stats.intervals import bootstrap_means, percentile_interval
from receval.stats.sequential import (
    METHOD,
    cuped,
    half_width,
    mixing,
    p_value,
    ratio_estimate,
    t_interval,
    t_p_value,
    welch_df,
)
from receval.stats.unpaired import welch_p_value

#: the units a comparison may take
UNITS = ("user", "list")
#: the columns of :attr:`receval.monitor.core.Monitor.decisions` (the first nine pinned)
DECISION_COLUMNS = (
    "variant",
    "baseline",
    "metric",
    "delta",
    "cs_low",
    "cs_high",
    "p_always_valid",
    "users",
    "baseline_users",
    "lists",
    "baseline_lists",
    "looks",
    "last_look",
    "decision",
    "delta_unadjusted",
    "variance_reduction",
)


def check_unit(unit: Any) -> str:
    """``unit`` checked: ``"user"`` or ``"list"``.

    Example:
        >>> check_unit("user")
        'user'
        >>> check_unit("session")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: unit must be 'user' or 'list', got 'session'
    """
    if unit not in UNITS:
        raise ReceValError(f"unit must be 'user' or 'list', got {unit!r}")
    return str(unit)


def ordered(values: pd.DataFrame) -> pd.DataFrame:
    """Per-list values in one order whatever order they were gathered in: by ``served``, then
    ``user`` (a list is one (user, served)), so sums over them give the same bits.

    Example:
        >>> v = pd.DataFrame({"user": [2, 1, 1], "served": [5, 5, 3], "P@1": [1.0, 0.0, 1.0]})
        >>> ordered(v)["user"].tolist()
        [1, 1, 2]
    """
    if not len(values):
        return values
    if pd.api.types.is_integer_dtype(values["user"]):
        from receval.monitor.kernels import by_time_then_user

        order = by_time_then_user(
            values["served"].to_numpy(dtype=np.int64), values["user"].to_numpy(dtype=np.int64)
        )
        return values.take(order).reset_index(drop=True)
    return values.sort_values(["served", "user"], kind="stable", ignore_index=True)


def user_sums(values: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Per user (index, sorted): ``s:<metric>`` the sum of its lists' values and ``n:<metric>``
    how many of its lists have one (NaN values left out), summed in the order of ``values``.

    Example:
        >>> v = pd.DataFrame({"user": [2, 1, 2], "served": [1, 1, 2], "P@1": [1.0, 0.0, 0.5]})
        >>> user_sums(v, ["P@1"]).reset_index().values.tolist()
        [[1.0, 0.0, 1.0], [2.0, 1.5, 2.0]]
    """
    codes, users = pd.factorize(values["user"], sort=True)
    k = len(users)
    out: dict[str, np.ndarray] = {}
    for name in names:
        v = values[name].to_numpy(dtype=np.float64)
        has = ~np.isnan(v)
        out[f"s:{name}"] = np.bincount(codes, weights=np.where(has, v, 0.0), minlength=k)
        out[f"n:{name}"] = np.bincount(codes, weights=has.astype(np.float64), minlength=k)
    frame = pd.DataFrame(out, index=pd.Index(users, name="user"))
    return frame


def compare_window(
    start: int,
    groups: dict[Any, tuple[Any, pd.DataFrame]],
    names: list[str],
    baseline: Any,
    unit: str,
    n_resamples: int,
    alpha: float,
    seed: int,
) -> list[dict[str, Any]]:
    """Each variant against the baseline in one window (see the module text): rows of
    :data:`receval.monitor.core.COMPARISON_COLUMNS` less ``p_adjusted``.

    Example:
        >>> v = pd.DataFrame({"user": [1, 1, 2, 2], "served": [1, 2, 1, 2],
        ...                   "P@1": [1.0, 1.0, 0.0, 0.0]})
        >>> w = pd.DataFrame({"user": [3, 4, 5], "served": [1, 1, 1], "P@1": [1.0, 1.0, 0.0]})
        >>> row = compare_window(0, {"a": (None, v), "b": (None, w)}, ["P@1"], None, "user",
        ...                      0, 0.05, 0)[0]
        >>> row["delta"], row["n"], row["baseline_n"], row["lists"], row["baseline_lists"]
        (0.16666666666666663, 3, 2, 3, 4)
    """
    variants = sorted(groups, key=repr)
    base = baseline if baseline is not None else (variants[0] if variants else None)
    if base not in groups:
        return []
    out = []
    codes: dict[Any, tuple[np.ndarray, int]] = {}  # each variant's users, coded once
    for variant in variants:
        if variant == base:
            continue
        for name in names:
            a_frame, b_frame = groups[base][1], groups[variant][1]
            a = a_frame[name].to_numpy(dtype=np.float64)
            b = b_frame[name].to_numpy(dtype=np.float64)
            a_has, b_has = ~np.isnan(a), ~np.isnan(b)
            a, b = a[a_has], b[b_has]
            nan = math.nan
            ma = float(a.mean()) if a.size else nan
            mb = float(b.mean()) if b.size else nan
            low = high = nan
            if unit == "list":
                p = welch_p_value(b, a)
                if n_resamples and a.size and b.size:
                    rng = stream(seed, f"{start}:{variant!r}", repr(base), name)
                    diff = bootstrap_means(b, n_resamples, rng) - bootstrap_means(
                        a, n_resamples, rng
                    )
                    low, high = percentile_interval(diff, alpha)
                users = (int(b.size), int(a.size))
            else:
                ea = _estimate(codes, base, a_frame, name, a_has, ma)
                eb = _estimate(codes, variant, b_frame, name, b_has, mb)
                se = math.sqrt(ea.variance + eb.variance)
                df = welch_df(ea.variance, ea.users, eb.variance, eb.users)
                p = t_p_value(mb - ma, se, df)
                low, high = t_interval(mb - ma, se, df, alpha)
                users = (eb.users, ea.users)
            out.append(
                {
                    "window_start": start,
                    "variant": variant,
                    "baseline": base,
                    "metric": name,
                    "mean": mb,
                    "baseline_mean": ma,
                    "delta": mb - ma,
                    "ci_low": low,
                    "ci_high": high,
                    "p_value": p,
                    "n": users[0],
                    "baseline_n": users[1],
                    "lists": int(b.size),
                    "baseline_lists": int(a.size),
                }
            )
    return out


def _estimate(
    codes: dict[Any, tuple[np.ndarray, int]],
    key: Any,
    frame: pd.DataFrame,
    name: str,
    has: np.ndarray,
    value: float,
) -> Any:
    """One variant's ratio over its users in a window (users coded once per variant)."""
    if key not in codes:
        found, users = pd.factorize(frame["user"])
        codes[key] = (found, len(users))
    code, k = codes[key]
    v = frame[name].to_numpy(dtype=np.float64)
    if not has.all():
        code, v = code[has], v[has]
    s = np.bincount(code, weights=v, minlength=k)
    n = np.bincount(code, minlength=k).astype(np.float64)
    return ratio_estimate(s, n, value)


def _to_b64(frame: pd.DataFrame) -> str:
    import pyarrow as pa

    from receval.monitor.state import to_ipc

    return base64.b64encode(
        to_ipc(pa.Table.from_pandas(frame.reset_index(), preserve_index=False))
    ).decode()


def _from_b64(text: str) -> pd.DataFrame:
    from receval.monitor.state import from_ipc

    return from_ipc(base64.b64decode(text)).to_pandas().set_index("user")


class Sequence:
    """The cumulative comparison: per (variant, user) sums of the closed lists of every
    window looked at so far, and per (variant, metric) the reading at the last look with the
    running minimum p-value and running intersection of the confidence sequence.

    Example:
        >>> seq = Sequence(["P@1"], planned_users=100, alpha=0.05)
        >>> v = pd.DataFrame({"user": [1, 2, 3, 4], "served": [0, 0, 0, 0],
        ...                   "P@1": [1.0, 0.0, 1.0, 1.0]})
        >>> seq.fold("a", v.iloc[:2]); seq.fold("b", v.iloc[2:])
        >>> seq.look(10, None)
        >>> d = seq.frame()
        >>> d[["variant", "baseline", "delta", "users", "baseline_users", "looks"]].values.tolist()
        [['b', 'a', 0.5, 2, 2, 1]]
    """

    def __init__(
        self,
        names: list[str],
        planned_users: float,
        alpha: float,
        covariate: pd.DataFrame | None = None,
        frontier: int | None = None,
    ):
        self.names, self.planned_users, self.alpha = list(names), planned_users, alpha
        self.rho = mixing(planned_users, alpha)
        self.covariate = covariate
        self.frontier = frontier  # the last look: the lists served before it are folded
        self.totals: dict[Any, pd.DataFrame] = {}
        self.readings: dict[tuple[Any, str], dict[str, Any]] = {}

    # --- sums ----------------------------------------------------------------------------

    def fold(self, variant: Any, values: pd.DataFrame) -> None:
        """Add one bucket's per-list values (``user``, ``served``, metrics) to the totals."""
        if not len(values):
            return
        new = user_sums(ordered(values), self.names)
        old = self.totals.get(variant)
        if old is None:
            self.totals[variant] = new
            return
        if old.index.dtype != new.index.dtype:  # ids turned to text (receval.io's policy)
            old.index = old.index.astype(str).astype(object)
            new.index = new.index.astype(str).astype(object)
        self.totals[variant] = old.add(new, fill_value=0.0).sort_index()

    # --- a look --------------------------------------------------------------------------

    def look(self, end: int, baseline: Any) -> None:
        """A look at ``end`` (a closed window's end): each variant against the baseline on the
        totals, the running p-value and interval updated."""
        variants = sorted(self.totals, key=repr)
        base = baseline if baseline is not None else (variants[0] if variants else None)
        self.frontier = end
        if base not in self.totals:
            return
        a_tab = self.totals[base]
        for variant in variants:
            if variant == base:
                continue
            b_tab = self.totals[variant]
            for name in self.names:
                self._read(end, variant, base, name, a_tab, b_tab)

    def _read(
        self, end: int, variant: Any, base: Any, name: str, a_tab: pd.DataFrame, b_tab: pd.DataFrame
    ) -> None:
        sa, na = a_tab[f"s:{name}"].to_numpy(), a_tab[f"n:{name}"].to_numpy()
        sb, nb = b_tab[f"s:{name}"].to_numpy(), b_tab[f"n:{name}"].to_numpy()
        ea, eb = ratio_estimate(sa, na), ratio_estimate(sb, nb)
        delta = eb.value - ea.value
        var_a, var_b = ea.variance, eb.variance
        plain_delta, reduction = delta, math.nan
        if self.covariate is not None and ea.users > 1 and eb.users > 1:
            xa = self._covariate(a_tab.index[na > 0], name)
            xb = self._covariate(b_tab.index[nb > 0], name)
            adj = cuped(ea, xa, eb, xb)
            delta, var_a, var_b, reduction = delta + adj.shift, adj.var_a, adj.var_b, adj.reduction
        t = ea.users + eb.users
        se = math.sqrt(var_a + var_b)
        if math.isfinite(se) and t > 0:
            w = float(half_width(se, t, self.rho, self.alpha))
            low, high, p = delta - w, delta + w, p_value(delta, se, t, self.rho)
        else:
            low = high = p = math.nan
        key = (variant, name)
        old = self.readings.get(key)
        looks = 1 if old is None else old["looks"] + 1
        if old is not None and not math.isnan(old["p_always_valid"]):
            p = old["p_always_valid"] if math.isnan(p) else min(p, old["p_always_valid"])
            if not math.isnan(low):
                low, high = max(low, old["cs_low"]), min(high, old["cs_high"])
            else:
                low, high = old["cs_low"], old["cs_high"]
        self.readings[key] = {
            "variant": variant,
            "baseline": base,
            "metric": name,
            "delta": delta,
            "cs_low": low,
            "cs_high": high,
            "p_always_valid": p,
            "users": eb.users,
            "baseline_users": ea.users,
            "lists": int(eb.lists),
            "baseline_lists": int(ea.lists),
            "looks": looks,
            "last_look": end,
            "decision": "stop" if p <= self.alpha else "continue",
            "delta_unadjusted": plain_delta,
            "variance_reduction": reduction,
        }

    def _covariate(self, users: pd.Index, name: str) -> np.ndarray:
        """Each user's pre-period value for ``name`` (its own column, else ``covariate``); a
        user without one gets the mean of those with one (no adjustment for that user)."""
        cov = self.covariate
        assert cov is not None
        col = name if name in cov.columns else "covariate"
        series = cov[col]
        if cov.index.dtype != users.dtype:
            series = series.set_axis(cov.index.astype(str))
            users = users.astype(str)
        x = series.reindex(users).to_numpy(dtype=np.float64, copy=True)
        missing = np.isnan(x)
        if missing.all():
            return np.zeros(len(x))
        x[missing] = float(np.nanmean(x))
        return x

    # --- out -----------------------------------------------------------------------------

    def frame(self) -> pd.DataFrame:
        """The readings at the last look, one row per (variant, metric)
        (:data:`DECISION_COLUMNS`, ``last_look`` a UTC time)."""
        rows = sorted(
            self.readings.values(),
            key=lambda r: (repr(r["variant"]), self.names.index(r["metric"])),
        )
        frame = pd.DataFrame(rows, columns=list(DECISION_COLUMNS))
        for col in ("users", "baseline_users", "lists", "baseline_lists", "looks"):
            frame[col] = frame[col].astype(np.int64)
        frame["last_look"] = pd.to_datetime(
            frame["last_look"].astype(np.int64), unit="ns", utc=True
        )
        return frame

    def to_json(self) -> dict[str, Any]:
        """The sequence as JSON values for the state file (floats as exact hex text)."""
        from receval.monitor.state import hex_floats

        return {
            "frontier": self.frontier,
            "totals": [{"variant": v, "table": _to_b64(t)} for v, t in self.totals.items()],
            "readings": [hex_floats(r) for r in self.readings.values()],
        }

    def load(self, data: dict[str, Any]) -> None:
        """Restore :meth:`to_json`'s values (a state file's ``sequence``)."""
        from receval.monitor.state import unhex_floats

        if not data:
            return
        self.frontier = data.get("frontier")
        self.totals = {t["variant"]: _from_b64(t["table"]) for t in data.get("totals", [])}
        for r in data.get("readings", []):
            r = unhex_floats(r)
            self.readings[(r["variant"], r["metric"])] = r


def describe(planned_users: float, confidence: float) -> str:
    """The one line naming the decisions' method and its tuning (printed under the table).

    Example:
        >>> "95%, tuned for 10,000 users (planned_users=)" in describe(10_000, 0.95)
        True
    """
    return (
        f"decisions: {METHOD}, {confidence:.0%}, tuned for {planned_users:,.0f} users "
        "(planned_users=); stop when p_always_valid <= 1 - confidence"
    )


def reading(row: Any) -> str:
    """A decision as people read it: ``continue``, or ``stop`` with the direction the
    confidence sequence shows (``stop: higher`` when it lies above 0, ``stop: lower``).

    Example:
        >>> reading({"decision": "stop", "cs_low": 0.01, "cs_high": 0.03})
        'stop: higher'
        >>> reading({"decision": "continue", "cs_low": -0.01, "cs_high": 0.03})
        'continue'
    """
    if row["decision"] != "stop":
        return str(row["decision"])
    if row["cs_low"] > 0:
        return "stop: higher"
    return "stop: lower" if row["cs_high"] < 0 else "stop"
