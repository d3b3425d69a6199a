"""Plain-Python oracles of the exposure-fairness and calibration metrics, typed in from the
papers' formulas (docs/fairness.md), one list at a time, without receval, numpy or numba.

An item's groups are a list of names; its alignment is 1/m in each of its m groups (0
everywhere when it has none). Lists are item ids best first. :data:`ORACLES` maps each
beyond-registry name to its oracle.

- TREC Fair Ranking 2022 (fair-trec/trec2022-fair-public, wptrec/metrics/awrf.py):
  AWRF = 1 - JS(p, t) with natural logs; nDCG with discount 1/log2(max(r, 2)) and the
  ideal over min(500, |R|) ranks.
- Yang & Stoyanovich, "Measuring Fairness in Ranked Outputs", SSDBM 2017: rND, rKL, rRD,
  normalised by the maximum over every arrangement, enumerated here as every choice of the
  protected positions (itertools.combinations).
- Steck, "Calibrated Recommendations", RecSys 2018: C_KL = KL(p || (1 - a) q + a p).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence


def discount(kind: str, rank: int, patience: float = 0.5) -> float:
    """The weight of 1-based ``rank``."""
    if kind == "trec":
        return 1.0 / math.log2(max(rank, 2))
    if kind == "log2":
        return 1.0 / math.log2(rank + 1)
    if kind == "rbp":
        return patience ** (rank - 1)
    if kind == "reciprocal":
        return 1.0 / rank
    if kind == "uniform":
        return 1.0
    raise ValueError(kind)


def alignment(groups: Sequence[object], names: Sequence[object]) -> list[float]:
    """1/m for each of an item's m groups."""
    return [(1.0 / len(groups) if n in groups else 0.0) for n in names]


def _normalise(v: Sequence[float]) -> list[float]:
    s = sum(v)
    return [x / s for x in v]


def js_divergence(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen-Shannon divergence, natural log."""
    total = 0.0
    for a, b in zip(p, q, strict=True):
        m = (a + b) / 2
        if a > 0:
            total += a * math.log(a / m) / 2
        if b > 0:
            total += b * math.log(b / m) / 2
    return total


def target(kind: object, item_groups: Mapping[object, Sequence[object]],
           catalogue: Sequence[object], names: Sequence[object]) -> list[float]:
    """uniform, catalogue (alignment mass of the catalogue items) or given weights."""
    if kind == "uniform":
        return [1.0 / len(names)] * len(names)
    if kind == "catalogue":
        mass = [0.0] * len(names)
        for item in catalogue:
            for g, a in enumerate(alignment(item_groups.get(item, []), names)):
                mass[g] += a
        return _normalise(mass)
    weights = dict(kind)  # type: ignore[call-overload]
    return _normalise([float(weights.get(n, 0.0)) for n in names])


def awrf(ranked: Sequence[object], item_groups: Mapping[object, Sequence[object]],
         names: Sequence[object], tgt: Sequence[float], disc: str = "trec",
         patience: float = 0.5) -> float:
    """1 - JS(discounted group exposure of the list, target); NaN: no grouped item."""
    e = [0.0] * len(names)
    for r, item in enumerate(ranked, start=1):
        for g, a in enumerate(alignment(item_groups.get(item, []), names)):
            e[g] += discount(disc, r, patience) * a
    if sum(e) <= 0:
        return math.nan
    return 1.0 - js_divergence(_normalise(e), tgt)


def trec_ndcg(ranked: Sequence[object], relevant: set[object]) -> float:
    """The track's nDCG: binary gain, 1/log2(max(r, 2)), ideal over min(500, |R|)."""
    if not relevant:
        return math.nan
    dcg = sum(discount("trec", r) for r, item in enumerate(ranked, start=1)
              if item in relevant)
    ideal = sum(discount("trec", r) for r in range(1, min(500, len(relevant)) + 1))
    return dcg / ideal


def ndcg_awrf(ranked: Sequence[object], relevant: set[object],
              item_groups: Mapping[object, Sequence[object]], names: Sequence[object],
              tgt: Sequence[float], disc: str = "trec") -> float:
    """The track's score: nDCG x AWRF."""
    return trec_ndcg(ranked, relevant) * awrf(ranked, item_groups, names, tgt, disc)


def group_exposure(lists: Sequence[Sequence[object]],
                   item_groups: Mapping[object, Sequence[object]], names: Sequence[object],
                   disc: str = "trec", patience: float = 0.5) -> list[float]:
    """Each group's share of the exposure summed over every list."""
    e = [0.0] * len(names)
    for ranked in lists:
        for r, item in enumerate(ranked, start=1):
            for g, a in enumerate(alignment(item_groups.get(item, []), names)):
                e[g] += discount(disc, r, patience) * a
    return _normalise(e) if sum(e) > 0 else [math.nan] * len(names)


def exposure_gap(shares: Sequence[float], tgt: Sequence[float]) -> float:
    """Total variation distance between the pooled shares and the target."""
    return sum(abs(a - b) for a, b in zip(shares, tgt, strict=True)) / 2


def _ratio(a: int, b: int) -> float:
    return 0.0 if a == 0 or b == 0 else a / b


def _ranked_sum(kind: str, flags: Sequence[bool], step: int, share: float | None) -> float:
    n = len(flags)
    p = sum(flags)
    q = p / n if share is None else share
    target_ratio = _ratio(p, n - p) if share is None else share / (1 - share)
    total = 0.0
    for i in range(1, n + 1):
        if i % step or i < 2:
            continue
        c = sum(flags[:i])
        if kind == "rND":
            term = abs(c / i - q)
        elif kind == "rKL":
            pi = c / i
            term = 0.0
            if pi > 0:
                term += pi * math.log(pi / q)
            if pi < 1:
                term += (1 - pi) * math.log((1 - pi) / (1 - q))
        else:
            term = abs(_ratio(c, i - c) - target_ratio)
        total += term / math.log2(i)
    return total


def ranked_fairness(kind: str, flags: Sequence[bool], step: int = 10,
                    share: float | None = None) -> float:
    """rND / rKL / rRD of one list (flags: is each ranked item protected), normalised by
    the maximum over every placement of its protected items; NaN when that is 0."""
    n, p = len(flags), sum(flags)
    if n == 0:
        return math.nan
    worst = 0.0
    for positions in itertools.combinations(range(n), p):
        arranged = [i in positions for i in range(n)]
        worst = max(worst, _ranked_sum(kind, arranged, step, share))
    if worst <= 0:
        return math.nan
    return _ranked_sum(kind, flags, step, share) / worst


def _distribution(items: Sequence[object], weights: Sequence[float],
                  item_groups: Mapping[object, Sequence[object]],
                  names: Sequence[object]) -> list[float]:
    d = [0.0] * len(names)
    for item, w in zip(items, weights, strict=True):
        for g, a in enumerate(alignment(item_groups.get(item, []), names)):
            d[g] += w * a
    return d


def calibration(history: Sequence[object], ranked: Sequence[object],
                item_groups: Mapping[object, Sequence[object]], names: Sequence[object], *,
                alpha: float = 0.01, smooth: str = "list", list_weights: str = "none",
                base: float = math.e, history_weights: Sequence[float] | None = None,
                js: str | None = None) -> float:
    """C_KL (``js=None``) or the JS divergence / distance of the smoothed distributions."""
    hw = list(history_weights) if history_weights is not None else [1.0] * len(history)
    n = len(ranked)
    if list_weights == "none":
        lw = [1.0] * n
    elif list_weights == "reciprocal":
        lw = [1.0 / r for r in range(1, n + 1)]
    else:  # RADio's 1/r / H~_n with its approximate harmonic number
        h = (0.57721566490153286060651209008240243104215933593992 + math.log(n) + 0.5 / n
             - 1.0 / (12 * n ** 2) + 1.0 / (120 * n ** 4)) if n else 1.0
        lw = [1.0 / r / h for r in range(1, n + 1)]
    p = _distribution(history, hw, item_groups, names)
    q = _distribution(ranked, lw, item_groups, names)
    if sum(p) <= 0 or sum(q) <= 0:
        return math.nan
    if list_weights != "radio":  # RADio smooths its unnormalised weights
        p, q = _normalise(p), _normalise(q)
    if smooth == "list":
        ps, qs = p, [(1 - alpha) * b + alpha * a for a, b in zip(p, q, strict=True)]
    elif smooth == "both":
        ps = [(1 - alpha) * a + alpha * b for a, b in zip(p, q, strict=True)]
        qs = [(1 - alpha) * b + alpha * a for a, b in zip(p, q, strict=True)]
    else:
        ps, qs = p, q
    ps, qs = _normalise(ps), _normalise(qs)
    if js is not None:
        d = js_divergence(ps, qs) / math.log(base)
        return math.sqrt(abs(d)) if js == "distance" else d
    kl = 0.0
    for a, b in zip(ps, qs, strict=True):
        if a > 0:
            kl += a * math.log(a / b) / math.log(base) if b > 0 else math.inf
    return kl


ORACLES: dict[str, Callable[..., object]] = {
    "group_exposure": group_exposure,
    "AWRF": awrf,
    "nDCG_AWRF": ndcg_awrf,
    "rND": lambda flags, step=10, share=None: ranked_fairness("rND", flags, step, share),
    "rKL": lambda flags, step=10, share=None: ranked_fairness("rKL", flags, step, share),
    "rRD": lambda flags, step=10, share=None: ranked_fairness("rRD", flags, step, share),
    "calibration": calibration,
    "calibration_js": lambda *a, **kw: calibration(*a, js=kw.pop("js", "divergence"), **kw),
}


def expected_exposure(ranked: Sequence[object], relevant: set[object], model: str = "gerr",
                      p: float = 0.5, u: float = 0.5,
                      samples: Sequence[Sequence[object]] | None = None) -> dict[str, float]:
    """EE-D, EE-R, EE-L of one deterministic list (or the mean exposure over ``samples``,
    several rankings) and their normalised forms (Diaz et al. 2020, binary relevance,
    retrieval setting): run exposure p^i (1 - u)^(relevant above), target
    (1 - pp^m) / (m (1 - pp)) per relevant item (pp = p (1 - u) for gerr, p for rbp)."""
    rankings = [list(ranked)] if samples is None else [list(x) for x in samples]
    m = len(relevant)
    if m == 0 or not any(rankings):
        return dict.fromkeys(("EE_D", "EE_R", "EE_L", "EE_D_norm", "EE_R_norm", "EE_L_norm"),
                             math.nan)
    run: dict[object, float] = {}
    for one in rankings:
        above = 0
        for i, item in enumerate(one):
            e = p ** i * ((1 - u) ** above if model == "gerr" else 1.0)
            run[item] = run.get(item, 0.0) + e / len(rankings)
            above += item in relevant
    pp = p * (1 - u) if model == "gerr" else p
    t = (1 - pp ** m) / (m * (1 - pp))
    tgt = dict.fromkeys(relevant, t)
    keys = set(run) | set(tgt)
    d = sum(e * e for e in run.values())
    r = sum(tgt.get(k, 0.0) * run.get(k, 0.0) for k in keys)
    loss = sum((tgt.get(k, 0.0) - run.get(k, 0.0)) ** 2 for k in keys)
    ideal = sum(x * x for x in tgt.values())
    worst = ideal + 1 / (1 - (p * u if model == "gerr" else p))
    return {"EE_D": d, "EE_R": r, "EE_L": loss, "EE_D_norm": d * (1 - p * p),
            "EE_R_norm": r / ideal, "EE_L_norm": loss / worst}


for _name in ("EE_D", "EE_R", "EE_L", "EE_D_norm", "EE_R_norm", "EE_L_norm"):
    ORACLES[_name] = (lambda key: lambda *a, **kw: expected_exposure(*a, **kw)[key])(_name)


def tie_orders(scores: Mapping[object, float], k: int) -> list[list[object]]:
    """Every ranking (cut to the top ``k``) that orders ``scores`` (item -> score) best first,
    tied items in every order: the samples of a ranker that shuffles ties uniformly."""
    values = sorted(set(scores.values()), reverse=True)
    blocks = [[item for item in scores if scores[item] == v] for v in values]
    orders = [list(itertools.chain.from_iterable(choice))
              for choice in itertools.product(*(itertools.permutations(b) for b in blocks))]
    return [order[:k] for order in orders]


def expected_exposure_group(ranked: Sequence[object], relevant: set[object],
                            item_groups: Mapping[object, Sequence[object]],
                            names: Sequence[object], model: str = "gerr", p: float = 0.5,
                            u: float = 0.5) -> dict[str, float]:
    """Group EE-D, EE-R, EE-L (Diaz et al. 2020, groups): each group's exposure and target are
    its items' exposures and targets weighted by the items' alignment (1/m in each of m
    groups), then sum e_g^2, sum t_g e_g and sum (t_g - e_g)^2 over the groups."""
    m = len(relevant)
    if m == 0 or not ranked:
        return dict.fromkeys(("EE_D_group", "EE_R_group", "EE_L_group"), math.nan)
    e = [0.0] * len(names)
    above = 0
    for i, item in enumerate(ranked):
        expo = p ** i * ((1 - u) ** above if model == "gerr" else 1.0)
        for g, a in enumerate(alignment(item_groups.get(item, []), names)):
            e[g] += expo * a
        above += item in relevant
    pp = p * (1 - u) if model == "gerr" else p
    t_item = (1 - pp ** m) / (m * (1 - pp))
    t = [0.0] * len(names)
    for item in relevant:
        for g, a in enumerate(alignment(item_groups.get(item, []), names)):
            t[g] += t_item * a
    return {"EE_D_group": sum(x * x for x in e),
            "EE_R_group": sum(a * b for a, b in zip(t, e, strict=True)),
            "EE_L_group": sum((a - b) ** 2 for a, b in zip(t, e, strict=True))}


for _name in ("EE_D_group", "EE_R_group", "EE_L_group"):
    ORACLES[_name] = (lambda key: lambda *a, **kw: expected_exposure_group(*a, **kw)[key])(_name)
