"""Anytime-valid comparison of two variants' ratio metrics, with the user as the unit.

The pure math behind :attr:`receval.monitor.core.Monitor.decisions` and the per-window
comparisons of :func:`receval.monitor` (docs/monitoring.md, "Variants").

- **Ratio metric over users** (Deng, Knoblich and Lu, "Applying the Delta Method in Metric
  Analytics", KDD 2018): a variant's value is ``r = sum(s_u) / sum(n_u)`` over its users,
  ``s_u`` the sum of a user's per-list values and ``n_u`` their number (the mean over lists);
  its variance by the delta method is ``sum((s_u - r n_u)^2) / ((m - 1) m nbar^2)`` over the
  ``m`` users (``nbar`` the mean ``n_u``): the variance of the mean of the linearised values
  ``(s_u - r n_u) / nbar``. With one list per user it is Welch's variance of a mean.
- **Confidence sequence** (Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric,
  nonasymptotic confidence sequences", Annals of Statistics 49(2), 2021, the two-sided normal
  mixture; used in its asymptotic form of Waudby-Smith, Arbour, Sinha, Kennedy and Ramdas,
  "Time-uniform central limit theory and asymptotic confidence sequences", Annals of Statistics
  2024): after ``t`` users (both variants) the difference ``delta`` with standard error ``se``
  gives the standardised sum ``S = sqrt(t) delta / se`` with intrinsic time ``v = t``; the
  mixture martingale ``M = sqrt(rho / (t + rho)) exp(S^2 / (2 (t + rho)))`` exceeds ``1/alpha``
  at some look with probability at most ``alpha`` (Ville's inequality), so
  ``delta +- se / sqrt(t) * sqrt((t + rho) (log(1 + t / rho) + 2 log(1 / alpha)))`` covers the
  true difference at every look at once, and ``min(1, 1 / M)`` is an always-valid p-value.
  This is also the mixture SPRT of Johari, Koomen, Pekelis and Walsh ("Always Valid Inference",
  Operations Research 2022) with a normal mixing distribution.
- **Mixing parameter** ``rho``: fixed before the data, tightest at ``planned_users`` users
  (``rho = v / (2 log(1/alpha) + log(1 + 2 log(1/alpha)))`` with ``v = planned_users``: the
  ``best_rho`` of Howard's ``confseq`` package). Any value keeps the guarantee; a value far
  from the users the test will see costs power. Default :data:`DEFAULT_PLANNED_USERS`.
- **CUPED** (Deng, Xu, Kohavi and Walker, WSDM 2013): with a pre-period covariate ``x_u`` per
  user, each user's linearised value ``y_u`` becomes ``y_u - theta (x_u - xbar)`` with
  ``theta = cov(y, x) / var(x)`` pooled over both variants; the difference is adjusted by
  ``-theta (xbar_b - xbar_a)`` and its variance reduced by about ``corr(y, x)^2``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: the users the default mixing parameter is tuned for (``planned_users=``)
DEFAULT_PLANNED_USERS = 10_000
#: the decisions' method, as it is named in the output
METHOD = (
    "normal-mixture confidence sequence over users (Howard et al. 2021; asymptotic, "
    "Waudby-Smith et al. 2024)"
)


@dataclass(frozen=True)
class RatioEstimate:
    """One variant's ratio metric over its users: ``value`` (sum of values / lists),
    ``variance`` of it (delta method), ``users`` and ``lists``, and each user's linearised
    value ``(s_u - value n_u) / nbar`` (mean 0; its variance over ``users`` is ``variance``)."""

    value: float
    variance: float
    users: int
    lists: float
    linear: np.ndarray


def ratio_estimate(s: np.ndarray, n: np.ndarray, value: float | None = None) -> RatioEstimate:
    """The ratio ``sum(s) / sum(n)`` over users and its delta-method variance (``value``:
    the ratio when the caller computed it already, e.g. as the mean over lists).

    Users with ``n_u = 0`` carry no list and are left out. With fewer than two users the
    variance is NaN (undefined).

    Example:
        >>> e = ratio_estimate(np.array([1.0, 0.0, 2.0]), np.array([1.0, 1.0, 2.0]))
        >>> e.value, e.users, e.lists
        (0.75, 3, 4.0)
        >>> round(e.variance, 6)  # (.25^2 + .75^2 + .5^2) / (2 * 3 * (4/3)^2) = .875 * 9 / 96
        0.082031
        >>> ratio_estimate(np.array([1.0]), np.array([1.0])).variance
        nan
    """
    s = np.asarray(s, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    keep = n > 0
    if not keep.all():
        s, n = s[keep], n[keep]
    m = int(s.size)
    if m == 0:
        return RatioEstimate(math.nan, math.nan, 0, 0.0, np.array([], np.float64))
    lists = float(n.sum())
    r = float(s.sum() / lists) if value is None else float(value)
    nbar = lists / m
    linear = (s - r * n) / nbar
    variance = float((linear * linear).sum() / ((m - 1) * m)) if m > 1 else math.nan
    return RatioEstimate(r, variance, m, lists, linear)


def welch_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    """Welch-Satterthwaite degrees of freedom of a difference of two means whose variances
    (of the means) are ``var_a`` and ``var_b`` over ``n_a`` and ``n_b`` units.

    Example:
        >>> welch_df(0.1, 11, 0.1, 11)
        20.0
    """
    num = (var_a + var_b) ** 2
    den = (var_a**2 / (n_a - 1) if n_a > 1 else 0.0) + (var_b**2 / (n_b - 1) if n_b > 1 else 0.0)
    return num / den if den > 0 else math.nan


def t_p_value(delta: float, se: float, df: float) -> float:
    """The two-sided p-value of ``delta / se`` under Student's t with ``df`` degrees of
    freedom (NaN when undefined; 1.0 for a zero difference of constant samples).

    Example:
        >>> round(t_p_value(1.96, 1.0, 1e9), 4)
        0.05
        >>> t_p_value(0.0, 0.0, math.nan)
        1.0
    """
    if not math.isfinite(delta):
        return math.nan
    if se == 0:
        return 1.0 if delta == 0 else 0.0
    if not (math.isfinite(se) and math.isfinite(df)):
        return math.nan
    from scipy.stats import t as student

    return float(2 * student.sf(abs(delta) / se, df))


def t_interval(delta: float, se: float, df: float, alpha: float) -> tuple[float, float]:
    """The ``1 - alpha`` interval ``delta +- t_{df, 1 - alpha/2} se`` (NaN where undefined).

    Example:
        >>> low, high = t_interval(1.0, 0.5, 1e9, 0.05)
        >>> round(low, 4), round(high, 4)
        (0.02, 1.98)
    """
    if not (math.isfinite(delta) and math.isfinite(se)):
        return (math.nan, math.nan)
    if se == 0:
        return (delta, delta)
    if not math.isfinite(df):
        return (math.nan, math.nan)
    from scipy.stats import t as student

    w = float(student.ppf(1 - alpha / 2, df)) * se
    return (delta - w, delta + w)


def mixing(planned_users: float, alpha: float) -> float:
    """The mixing parameter ``rho`` of the normal mixture, tightest at ``planned_users``
    (Howard et al. 2021; ``best_rho`` of the ``confseq`` package, two-sided).

    Example:
        >>> round(mixing(10_000, 0.05), 2)  # 10000 / (5.99146 + log(6.99146)) = 10000 / 7.93611
        1260.06
    """
    if not planned_users > 0 or not 0 < alpha < 1:
        raise ValueError(
            f"planned_users must be > 0 and alpha in (0, 1); got {planned_users!r}, {alpha!r}"
        )
    k = 2 * math.log(1 / alpha)
    return planned_users / (k + math.log(1 + k))


def boundary(t: float | np.ndarray, rho: float, alpha: float) -> float | np.ndarray:
    """The two-sided normal-mixture boundary on a standardised sum at intrinsic time ``t``:
    ``sqrt((t + rho) (log(1 + t / rho) + 2 log(1 / alpha)))`` (confseq's
    ``normal_mixture_bound`` with ``is_one_sided=False``).

    Example:
        >>> round(float(boundary(1000.0, 1000.0, 0.05)), 2)  # sqrt(2000 (.69315 + 5.99146))
        115.63
    """
    t = np.asarray(t, dtype=np.float64)
    out = np.sqrt((t + rho) * (np.log1p(t / rho) + 2 * math.log(1 / alpha)))
    return float(out) if out.ndim == 0 else out


def half_width(
    se: float | np.ndarray, t: float | np.ndarray, rho: float, alpha: float
) -> float | np.ndarray:
    """The confidence sequence's half-width for a difference with standard error ``se``
    after ``t`` users: ``se / sqrt(t) * boundary(t)``.

    Example:
        >>> # 0.01 / 100 * sqrt(11260.06 (log(1 + 7.93611) + 5.99146)) = 1e-4 * 303.52
        >>> round(float(half_width(0.01, 10_000, mixing(10_000, 0.05), 0.05)), 4)
        0.0304
    """
    t_arr = np.asarray(t, dtype=np.float64)
    out = np.asarray(se, dtype=np.float64) / np.sqrt(t_arr) * boundary(t_arr, rho, alpha)
    return float(out) if out.ndim == 0 else out


def log_mixture(
    delta: float | np.ndarray, se: float | np.ndarray, t: float | np.ndarray, rho: float
) -> float | np.ndarray:
    """``log M``: the log of the normal-mixture martingale at a look, for the null of no
    difference (``S = sqrt(t) delta / se``); confseq's ``normal_log_mixture``.

    Example:
        >>> round(float(log_mixture(0.0, 1.0, 100.0, 100.0)), 6)  # log sqrt(1/2)
        -0.346574
    """
    t_arr = np.asarray(t, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        s2 = t_arr * (np.asarray(delta, np.float64) / np.asarray(se, np.float64)) ** 2
    out = 0.5 * np.log(rho / (t_arr + rho)) + s2 / (2 * (t_arr + rho))
    return float(out) if out.ndim == 0 else out


def p_value(delta: float, se: float, t: float, rho: float) -> float:
    """The always-valid p-value of one look: ``min(1, 1 / M)`` (its running minimum over the
    looks is still valid). NaN where the standard error is undefined.

    Example:
        >>> p_value(0.0, 1.0, 100.0, 100.0)
        1.0
        >>> # S^2 = 400 * 25 = 10000; log M = log(100/500) / 2 + 10000 / 1000 = 9.19528
        >>> round(p_value(0.5, 0.1, 400.0, 100.0), 7)
        0.0001015
    """
    if not (math.isfinite(delta) and math.isfinite(se)) or t <= 0:
        return math.nan
    if se == 0:
        return 1.0 if delta == 0 else 0.0
    return float(min(1.0, math.exp(-float(log_mixture(delta, se, t, rho)))))


@dataclass(frozen=True)
class Adjusted:
    """CUPED: the adjusted difference's shift (added to the plain one), the adjusted
    variances of each variant's value, ``theta`` and the variance reduction
    (``1 - adjusted / plain`` variance of the difference)."""

    shift: float
    var_a: float
    var_b: float
    theta: float
    reduction: float


def cuped(a: RatioEstimate, x_a: np.ndarray, b: RatioEstimate, x_b: np.ndarray) -> Adjusted:
    """CUPED over users: ``x_a``, ``x_b`` the pre-period covariate of the users behind ``a``
    and ``b`` (in the order of their ``linear`` values); ``theta`` pooled over both.

    Example:
        >>> a = ratio_estimate(np.array([1.0, 2.0, 3.0, 4.0]), np.ones(4))
        >>> b = ratio_estimate(np.array([2.0, 3.0, 4.0, 5.0]), np.ones(4))
        >>> adj = cuped(a, np.array([1.0, 2.0, 3.0, 4.0]), b, np.array([1.0, 2.0, 3.0, 4.0]))
        >>> adj.theta, abs(adj.shift), adj.var_a, adj.reduction
        (1.0, 0.0, 0.0, 1.0)
    """
    y = np.concatenate([a.linear, b.linear])
    x = np.concatenate([np.asarray(x_a, np.float64), np.asarray(x_b, np.float64)])
    xc = x - x.mean()
    var_x = float((xc * xc).sum())  # not np.dot: BLAS threads cost more than they save here
    theta = float(((y - y.mean()) * xc).sum() / var_x) if var_x > 0 else 0.0
    out = []
    for est, xs in ((a, x_a), (b, x_b)):
        m = est.users
        adj = est.linear - theta * (np.asarray(xs, np.float64) - float(np.mean(xs)))
        out.append(float(np.var(adj, ddof=1) / m) if m > 1 else math.nan)
    shift = -theta * (float(np.mean(x_b)) - float(np.mean(x_a)))
    plain = a.variance + b.variance
    reduction = 1 - (out[0] + out[1]) / plain if plain > 0 else math.nan
    return Adjusted(shift, out[0], out[1], theta, reduction)
