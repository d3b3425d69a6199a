"""The estimators, each written straight from its formula, as per-request terms.

Every estimate is the expected total reward of one served list (the sum over its positions;
for one-slot logs, the expected reward of a round) and has the form

    V = mean_i c_i + sum_j mean_i(a_ij) * mean_i(m_ij) / mean_i(b_ij)

over the n requests i: ``c`` its linear part, the ``(a, b, m)`` triples its self-normalised
parts (one per position). That form is what the bootstrap resamples and what the delta
method differentiates (:mod:`receval.offpolicy.intervals`).

Notation: on the row of request i at position k, r = reward, mu = the logger's propensity
(``propensity``), pi = the target's probability of the same item at the same position,
w = pi / mu, q = the reward model's prediction for the logged item, and
DM_i = sum_k sum_a pi(a at k | i) q(i, a, k).

Conventions are those of Open Bandit Pipeline 0.5.7 (``obp.ope``); where they differ, it says.

Example (every estimator on two lists of two; by hand: ips = (1.6 * 1) / 2 = 0.8, the target
putting 0.8 on the logged a at the top of list 1 and nothing on list 2's logged items;
dm = 0.8 * 0.5 + 0.8 * 0.25 = 0.6 a list; pi = ((1)(1 - 2 + 3.2) + (1)(1 - 2 + 0)) / 2 = 0.6;
dros = 0.6 + (4 * 1.6 / (1.6^2 + 4)) * (0.5 - 0.25) / 2 = 0.722;
pbm weighs list 1's a by (1 * 0.8) / (1 * 0.5 + 0.5 * 0.5) and list 2's by 0.8 / 0.75):

    >>> import pandas as pd
    >>> from receval.offpolicy import estimate, ESTIMATORS
    >>> log = pd.DataFrame({"request": [1, 1, 2, 2], "item": ["a", "b", "b", "a"],
    ...     "position": [1, 2, 1, 2], "reward": [1.0, 0.0, 0.0, 1.0], "propensity": 0.5,
    ...     "propensity_prefix": [0.5, 0.25, 0.5, 0.25], "propensity_slate": 0.25})
    >>> target = pd.DataFrame({"request": [1, 1, 2, 2], "item": ["a", "b", "a", "b"],
    ...     "position": [1, 2, 1, 2], "probability": 0.8,
    ...     "probability_prefix": [0.8, 0.6, 0.8, 0.6], "probability_slate": 0.6})
    >>> model = pd.DataFrame({"item": ["a", "b"], "prediction": [0.5, 0.25]})
    >>> logger = target[["request", "item"]].merge(pd.DataFrame({"position": [1, 2]}),
    ...                                            how="cross").assign(probability=0.5)
    >>> every = [e for e in ESTIMATORS if e != "cascade_dr"]  # cascade_dr: scores, see it
    >>> r = estimate(log, {"t": target}, estimators=every, reward_model=model,
    ...              n_resamples=0, examination=[1.0, 0.5], logger=logger, shrinkage=4.0,
    ...              silence="weights")
    >>> dict(zip(r.table["estimator"], r.table["value"].round(4)))  # doctest: +NORMALIZE_WHITESPACE
    {'ips': 0.8, 'snips': 1.0, 'dm': 0.6, 'dr': 0.8, 'sndr': 0.85, 'switch_dr': 0.8,
     'dros': 0.722, 'iips': 0.8, 'sips': 1.2, 'rips': 0.8, 'sn_sips': 1.0, 'sn_rips': 1.0,
     'pi': 0.6, 'pbm': 1.0667}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from receval.exceptions import ReceValError
from receval.offpolicy.logs import Log
from receval.offpolicy.policies import Resolved


@dataclass
class Terms:
    """One estimator on one target: the linear part ``c`` (per request), the self-normalised
    triples, and the importance weights its diagnostics describe (None for the DM)."""

    c: np.ndarray
    ratios: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    weights: np.ndarray | None = None

    def value(self) -> float:
        """The estimate; NaN when a self-normalised part has no weight at all (0 / 0)."""
        v = float(np.mean(self.c))
        for a, b, m in self.ratios:
            bb = float(np.mean(b))
            v = v + float(np.mean(a)) * float(np.mean(m)) / bb if bb != 0 else float("nan")
        return v


@dataclass
class Context:
    """What the estimators read: the log, the target, the options, and (lazily) the reward
    model's predictions on the logged rows (``q``) and DM_i (``dm``)."""

    log: Log
    target: Resolved
    clip: float | None
    switch_threshold: float
    q_fn: Callable[[], np.ndarray] | None
    dm_fn: Callable[[], np.ndarray] | None
    pbm_fn: Callable[[], np.ndarray] | None
    shrinkage: float | None = None
    next_fn: Callable[[], np.ndarray] | None = None
    _memo: dict[tuple[str, bool], np.ndarray] = field(default_factory=dict)
    _split: dict[int, list[tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)
    _kept: list[np.ndarray] = field(default_factory=list)

    def per_request(self, x: np.ndarray) -> np.ndarray:
        return np.add.reduceat(x, self.log.starts[:-1]) if x.size else np.zeros(0)

    def mu(self, estimator: str) -> np.ndarray:
        if self.log.propensity is None:
            raise ReceValError(f"estimator {estimator!r} needs the log's 'propensity' column "
                               "(the logger's probability of the item at its position)")
        return self.log.propensity

    def w(self, estimator: str, clipped: bool = True) -> np.ndarray:
        """pi / mu on the logged rows (clipped when asked); one array shared by the
        estimators, so their bootstrap columns are shared too."""
        if ("w", clipped) not in self._memo:
            w = self.target.need("p", estimator) / self.mu(estimator)
            self._memo[("w", clipped)] = (np.minimum(w, self.clip)
                                          if clipped and self.clip is not None else w)
        return self._memo[("w", clipped)]

    def q(self, estimator: str) -> np.ndarray:
        if self.q_fn is None:
            raise ReceValError(f"estimator {estimator!r} needs reward_model= (request, item, "
                               "position, prediction)")
        return self.q_fn()

    def dm(self, estimator: str) -> np.ndarray:
        if self.dm_fn is None:
            raise ReceValError(f"estimator {estimator!r} needs reward_model= (request, item, "
                               "position, prediction)")
        return self.dm_fn()

    def by_position(self, x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per position k: (x on the row of each request at k, 0 where absent; indicator).
        The same arrays for the same x, and one indicator per position for all x."""
        if id(x) in self._split:
            return self._split[id(x)]
        log = self.log
        out = []
        for k, rows, m in log.positions():
            if rows is None:  # every request holds 1..L: a column of the (n, L) view
                v = np.ascontiguousarray(x.reshape(log.n_requests, -1)[:, k - 1])
            else:
                v = np.zeros(log.n_requests)
                v[log.request[rows]] = x[rows]
            out.append((v, m))
        self._split[id(x)] = out
        self._kept.append(x)  # x stays alive, so its id stays its own
        return out


def ips(ctx: Context) -> Terms:
    """Inverse propensity scoring (Horvitz & Thompson 1952; Precup et al. 2000; Li et al.
    2011), position-wise: V = (1/n) sum_i sum_k w_ik r_ik, with w = min(pi / mu, clip) when
    ``clip=`` is given (Strehl et al. 2010; OBP's ``lambda_``).

    Assumes the logged propensities are right and mu > 0 wherever pi > 0 (common support),
    and that a row's reward depends only on the item at its position (with one slot: always).
    Unbiased then (clipping adds a downward bias for rewards >= 0); its variance grows with
    the weights. Equals OBP's ``InverseProbabilityWeighting`` on one-slot logs; with several
    positions OBP averages over rows where this sums over a request's positions."""
    w = ctx.w("ips")
    return Terms(ctx.per_request(w * ctx.log.reward), weights=w)


def iips(ctx: Context) -> Terms:
    """Independent-item IPS (Li et al. 2018, "Offline evaluation of ranking policies with
    click models"; OBP ``SlateIndependentIPS``): V = (1/n) sum_i sum_k r_ik pi(a_ik at k) /
    mu(a_ik at k). The same sum as :func:`ips` (both weigh each position by its item-position
    marginals), named for the slate literature.

    Assumes the reward at a position depends only on the item there (no interaction between
    positions). Unbiased then, with common support of the item-position marginals."""
    return ips(ctx)


def snips(ctx: Context) -> Terms:
    """Self-normalised IPS (Swaminathan & Joachims 2015): per position k,
    V = sum_k (sum_i w_ik r_ik / sum_i w_ik) * n_k / n (n_k the requests showing position k).

    Same assumptions as IPS; biased (the bias vanishes as 1/n), usually far less variable,
    and invariant to a constant factor in the propensities. Equals OBP's
    ``SelfNormalizedInverseProbabilityWeighting`` on one-slot logs and its
    ``SelfNormalizedSlateIndependentIPS`` on slates (both normalise per position). With
    ``clip=`` the weights are clipped first (OBP's SNIPW ignores ``lambda_``)."""
    w = ctx.w("snips")
    wr = w * ctx.log.reward
    ratios = [(a, b, m) for (a, m), (b, _) in zip(ctx.by_position(wr), ctx.by_position(w),
                                                  strict=True)]
    return Terms(np.zeros(ctx.log.n_requests), ratios, weights=w)


def dm(ctx: Context) -> Terms:
    """Direct method (Beygelzimer & Langford 2009; OBP ``DirectMethod``):
    V = (1/n) sum_i sum_k sum_a pi(a at k | i) q(i, a, k).

    Needs no propensity; unbiased only when the reward model is (q = E[r | i, a, k] wherever
    the target puts mass). Its error is the model's bias, which no interval here shows."""
    return Terms(ctx.dm("dm"))


def dr(ctx: Context) -> Terms:
    """Doubly robust (Dudik, Langford & Li 2011; OBP ``DoublyRobust``):
    V = (1/n) sum_i [DM_i + sum_k w_ik (r_ik - q_ik)], w clipped by ``clip=`` when given.

    Unbiased when either the propensities or the reward model are right (with common
    support); with a good model its variance is below IPS's."""
    w = ctx.w("dr")
    return Terms(ctx.dm("dr") + ctx.per_request(w * (ctx.log.reward - ctx.q("dr"))), weights=w)


def sndr(ctx: Context) -> Terms:
    """Self-normalised doubly robust (OBP ``SelfNormalizedDoublyRobust``; Kallus & Uehara
    2019): V = (1/n) sum_i DM_i + sum_k (sum_i w_ik (r_ik - q_ik) / sum_i w_ik) n_k / n.

    Consistent under DR's conditions, biased in small samples like SNIPS; bounded by the
    rewards' range when the model is. With several positions it normalises per position (OBP
    normalises over all rows)."""
    w = ctx.w("sndr")
    resid = w * (ctx.log.reward - ctx.q("sndr"))
    ratios = [(a, b, m) for (a, m), (b, _) in zip(ctx.by_position(resid), ctx.by_position(w),
                                                  strict=True)]
    return Terms(ctx.dm("sndr"), ratios, weights=w)


def switch_dr(ctx: Context) -> Terms:
    """Switch doubly robust (Wang, Agarwal & Dudik 2017; OBP ``SwitchDoublyRobust``):
    V = (1/n) sum_i [DM_i + sum_k 1{w_ik <= tau} w_ik (r_ik - q_ik)] with
    tau = ``switch_threshold=`` (default 10; OBP's default, infinity, is plain DR).

    Rows whose weight exceeds tau fall back on the reward model: biased by the model's error
    there, unbiased (as DR) when no weight exceeds tau."""
    w = ctx.w("switch_dr", clipped=False)
    keep = (w <= ctx.switch_threshold).astype(np.float64)
    q = ctx.q("switch_dr")
    return Terms(ctx.dm("switch_dr") + ctx.per_request(keep * w * (ctx.log.reward - q)),
                 weights=keep * w)


def dros(ctx: Context) -> Terms:
    """Doubly robust with optimistic shrinkage (Su, Dimakopoulou, Krishnamurthy & Dudik 2020;
    OBP ``DoublyRobustWithShrinkage``): V = (1/n) sum_i [DM_i + sum_k w'_ik (r_ik - q_ik)]
    with the shrunk weight w' = lambda w / (w^2 + lambda), lambda = ``shrinkage=`` (> 0;
    infinity is DR).

    Shrinking bounds every weight by sqrt(lambda) / 2, trading DR's unbiasedness for a
    smaller mean squared error: biased unless the reward model is right (then unbiased for
    any lambda, as the DM is)."""
    lam = ctx.shrinkage
    if lam is None or not lam > 0:
        raise ReceValError("estimator 'dros' needs shrinkage= (lambda > 0: the weights w become "
                           "lambda w / (w^2 + lambda); inf is dr)")
    w = ctx.w("dros", clipped=False)
    shrunk = w if np.isinf(lam) else lam * w / (w * w + lam)
    q = ctx.q("dros")
    return Terms(ctx.dm("dros") + ctx.per_request(shrunk * (ctx.log.reward - q)),
                 weights=shrunk)


def sips(ctx: Context) -> Terms:
    """Standard slate IPS (OBP ``SlateStandardIPS``; Swaminathan et al. 2017):
    V = (1/n) sum_i W_i sum_k r_ik with W_i = pi(slate_i) / mu(slate_i) (``propensity_slate``).

    Assumes nothing about how rewards arise, only common support of whole slates: unbiased,
    with weights that explode with the slate length."""
    mu = _column(ctx.log.propensity_slate, "sips", "propensity_slate")
    w = ctx.target.need("slate", "sips") / mu
    w = np.minimum(w, ctx.clip) if ctx.clip is not None else w
    return Terms(ctx.per_request(w * ctx.log.reward), weights=w[ctx.log.starts[:-1]])


def rips(ctx: Context) -> Terms:
    """Reward-interaction IPS (McInerney et al. 2020; OBP ``SlateRewardInteractionIPS``):
    V = (1/n) sum_i sum_k r_ik pi(a_i1..a_ik) / mu(a_i1..a_ik) (``propensity_prefix``).

    Assumes a cascade: the reward at position k depends only on the items at positions 1..k.
    Unbiased then, with common support of the prefixes; weights between IIPS's and SIPS's."""
    mu = _column(ctx.log.propensity_prefix, "rips", "propensity_prefix")
    w = ctx.target.need("prefix", "rips") / mu
    w = np.minimum(w, ctx.clip) if ctx.clip is not None else w
    return Terms(ctx.per_request(w * ctx.log.reward), weights=w)


def cascade_dr(ctx: Context) -> Terms:
    """Cascade doubly robust (Kiyohara et al. 2022, "Doubly robust off-policy evaluation for
    ranking policies under the cascade behavior model"; OBP ``SlateCascadeDoublyRobust``):
    V = (1/n) sum_i sum_k [W_1..k (r_ik - q_ik) + W_1..k-1 sum_a pi(a at k | a_i1..a_ik-1)
    q(i, a, k)], W_1..k = pi(a_i1..a_ik) / mu(a_i1..a_ik) (``propensity_prefix``; W_1..0 = 1)
    and q(i, a, k) the reward model's prediction for item a at position k below the logged
    items of request i (a ``reward_model`` by request, item and position).

    Assumes RIPS's cascade (the reward at k depends on the items at 1..k only); unbiased when
    either the prefix propensities or the reward model are right, with less variance than
    RIPS when the model is good. Needs the target's choice at each position given the items
    above: a score table with rule ``plackett_luce``, ``softmax`` or ``topk``."""
    mu = _column(ctx.log.propensity_prefix, "cascade_dr", "propensity_prefix")
    w = ctx.target.need("prefix", "cascade_dr") / mu
    w = np.minimum(w, ctx.clip) if ctx.clip is not None else w
    before = np.ones_like(w)
    inner = np.ones(w.size, dtype=bool)
    inner[ctx.log.starts[:-1]] = False
    before[inner] = w[np.flatnonzero(inner) - 1]
    if ctx.next_fn is None:
        raise ReceValError("estimator 'cascade_dr' needs reward_model= (request, item, "
                           "position, prediction for every candidate at every position)")
    expected = ctx.next_fn()
    q = ctx.q("cascade_dr")
    return Terms(ctx.per_request(w * (ctx.log.reward - q) + before * expected), weights=w)


def sn_sips(ctx: Context) -> Terms:
    """Self-normalised standard slate IPS (OBP ``SelfNormalizedSlateStandardIPS``):
    V = sum_i W_i sum_k r_ik / sum_i W_i. Consistent under SIPS's conditions, biased in small
    samples, far less variable. OBP divides by the mean of W over rows; here over requests
    (the same when every list has the same length)."""
    t = sips(ctx)
    w = t.weights
    assert w is not None
    ones = np.ones(ctx.log.n_requests)
    return Terms(np.zeros(ctx.log.n_requests), [(t.c, w, ones)], weights=w)


def sn_rips(ctx: Context) -> Terms:
    """Self-normalised RIPS (OBP ``SelfNormalizedSlateRewardInteractionIPS``): per position
    k, sum_i W_i(1..k) r_ik / sum_i W_i(1..k), times n_k / n. Consistent under RIPS's
    conditions, biased in small samples."""
    w = rips(ctx).weights
    assert w is not None
    wr = w * ctx.log.reward
    ratios = [(a, b, m) for (a, m), (b, _) in zip(ctx.by_position(wr), ctx.by_position(w),
                                                  strict=True)]
    return Terms(np.zeros(ctx.log.n_requests), ratios, weights=w)


def pi(ctx: Context) -> Terms:
    """Pseudo-inverse estimator (Swaminathan et al. 2017, "Off-policy evaluation for slate
    recommendation"; VW estimators ``slates/pseudo_inverse.py``):
    V = (1/n) sum_i (sum_k r_ik) (1 - L_i + sum_k w_ik).

    Assumes additive rewards (the list's reward is a sum of per-position terms, which need
    not be observed separately) and a logger whose slots are drawn independently (the form of
    the pseudo-inverse used here); unbiased then. Weights may be negative."""
    w = ctx.w("pi", clipped=False)
    gamma = 1.0 - ctx.log.length + ctx.per_request(w)
    return Terms(gamma * ctx.per_request(ctx.log.reward), weights=gamma)


def pbm(ctx: Context) -> Terms:
    """Position-based model estimator (Li et al. 2018, "Offline evaluation of ranking
    policies with click models"): V = (1/n) sum_i sum_k r_ik
    sum_j theta_j pi(a_ik at j) / sum_j theta_j mu(a_ik at j), with theta = ``examination=``
    (the probability that each position is looked at) and mu from ``logger=``.

    Assumes the position-based click model (P(click) = theta_k * attraction(item)) with theta
    known; unbiased then, and an item keeps its weight wherever it is shown, so the weights
    are far smaller than IIPS's."""
    if ctx.pbm_fn is None:
        raise ReceValError("estimator 'pbm' needs examination= (the examination probability "
                           "of positions 1..L) and logger= (the logging policy, as a target is "
                           "given)")
    w = ctx.pbm_fn()
    w = np.minimum(w, ctx.clip) if ctx.clip is not None else w
    return Terms(ctx.per_request(w * ctx.log.reward), weights=w)


def _column(values: np.ndarray | None, estimator: str, column: str) -> np.ndarray:
    if values is None:
        raise ReceValError(f"estimator {estimator!r} needs the log's {column!r} column")
    return values


#: the estimators by name
ESTIMATORS: dict[str, Callable[[Context], Terms]] = {
    "ips": ips, "snips": snips, "dm": dm, "dr": dr, "sndr": sndr, "switch_dr": switch_dr,
    "dros": dros, "iips": iips, "sips": sips, "rips": rips, "sn_sips": sn_sips,
    "sn_rips": sn_rips, "cascade_dr": cascade_dr, "pi": pi, "pbm": pbm,
}
