"""An independent oracle for receval.offpolicy: plain loops over requests and rows, straight
from each estimator's formula, and the score rules' distributions over rankings enumerated
ranking by ranking (no closed forms shared with the code under test).

A log is a list of requests, each a list of rows (item, position, reward, mu, mu_prefix,
mu_slate) sorted by position 1..L. A target is, per request, a function giving pi(a at k),
pi(prefix of length k) and pi(slate).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Row:
    item: object
    position: int
    reward: float
    mu: float
    mu_prefix: float = float("nan")
    mu_slate: float = float("nan")


@dataclass
class TargetOnRequest:
    marginal: Callable[[object, int], float]      # pi(item at position)
    prefix: Callable[[list[object]], float]       # pi(the list starts with these items)


def rankings(candidates: list[object], scores: dict[object, float], rule: str, length: int,
             epsilon: float = 0.0, temperature: float = 1.0) -> dict[tuple, float]:
    """The distribution over the lists of ``length`` slots, enumerated: every sequence and its
    probability under the rule (the definitions in the docs, not the code's formulas)."""
    n = len(candidates)
    L = min(length, n)
    order = sorted(candidates, key=lambda a: (-scores[a], a))
    out: dict[tuple, float] = {}
    if rule == "topk":
        return {tuple(order[:L]): 1.0}
    if rule == "epsilon_greedy":
        perms = list(itertools.permutations(candidates, L))
        for p in perms:
            out[p] = out.get(p, 0.0) + epsilon / len(perms)
        top = tuple(order[:L])
        out[top] = out.get(top, 0.0) + 1 - epsilon
        return out
    weights = {a: math.exp(scores[a] / temperature) for a in candidates}
    if rule == "softmax":  # independent draws with replacement
        total = sum(weights.values())
        for seq in itertools.product(candidates, repeat=length):
            out[seq] = math.prod(weights[a] / total for a in seq)
        return out
    if rule == "plackett_luce":
        for seq in itertools.permutations(candidates, L):
            p, left = 1.0, sum(weights.values())
            for a in seq:
                p *= weights[a] / left
                left -= weights[a]
            out[seq] = p
        return out
    raise ValueError(rule)


def from_rankings(dist: dict[tuple, float]) -> TargetOnRequest:
    def marginal(item: object, k: int) -> float:
        return sum(p for seq, p in dist.items() if len(seq) >= k and seq[k - 1] == item)

    def prefix(items: list[object]) -> float:
        m = len(items)
        return sum(p for seq, p in dist.items() if list(seq[:m]) == list(items))

    return TargetOnRequest(marginal, prefix)


def _ratio(a: float, b: float) -> float:
    """A self-normalised term with no weight at all is undefined: NaN."""
    return a / b if b != 0 else float("nan")


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def estimators(log: list[list[Row]], target: list[TargetOnRequest], *,
               q: list[list[float]] | None = None, dm: list[float] | None = None,
               clip: float | None = None, tau: float = 10.0, shrinkage: float = 4.0,
               pbm_weight: list[list[float]] | None = None) -> dict[str, float]:
    """Every estimator from its formula: per request i, rows k."""
    n = len(log)
    cl = (lambda w: min(w, clip)) if clip is not None else (lambda w: w)
    out: dict[str, float] = {}
    w = [[target[i].marginal(r.item, r.position) / r.mu for r in req] for i, req in
         enumerate(log)]
    out["ips"] = sum(cl(w[i][k]) * r.reward for i, req in enumerate(log)
                     for k, r in enumerate(req)) / n
    out["iips"] = out["ips"]
    positions = sorted({r.position for req in log for r in req})
    sn = 0.0
    for pos in positions:
        num = den = cnt = 0.0
        for i, req in enumerate(log):
            for k, r in enumerate(req):
                if r.position == pos:
                    num += cl(w[i][k]) * r.reward
                    den += cl(w[i][k])
                    cnt += 1
        sn += _ratio(num, den) * cnt / n
    out["snips"] = sn
    if q is not None and dm is not None:
        out["dm"] = sum(dm) / n
        out["dr"] = sum(dm[i] + sum(cl(w[i][k]) * (r.reward - q[i][k]) for k, r in enumerate(req))
                        for i, req in enumerate(log)) / n
        s = sum(dm) / n
        for pos in positions:
            num = den = cnt = 0.0
            for i, req in enumerate(log):
                for k, r in enumerate(req):
                    if r.position == pos:
                        num += cl(w[i][k]) * (r.reward - q[i][k])
                        den += cl(w[i][k])
                        cnt += 1
            s += _ratio(num, den) * cnt / n
        out["sndr"] = s
        out["switch_dr"] = sum(
            dm[i] + sum(w[i][k] * (r.reward - q[i][k]) for k, r in enumerate(req)
                        if w[i][k] <= tau) for i, req in enumerate(log)) / n
        lam = shrinkage  # DRos (Su et al. 2020): w -> lam w / (w^2 + lam), never clipped
        out["dros"] = sum(
            dm[i] + sum(lam * w[i][k] / (w[i][k] ** 2 + lam) * (r.reward - q[i][k])
                        for k, r in enumerate(req)) for i, req in enumerate(log)) / n
    # slate estimators (positions 1..L without gaps)
    sips = rips = 0.0
    sn_sips_num = sn_sips_den = 0.0
    rips_by_pos: dict[int, list[float]] = {}
    for i, req in enumerate(log):
        items = [r.item for r in req]
        W = cl(target[i].prefix(items) / req[-1].mu_slate) if not math.isnan(req[-1].mu_slate) \
            else float("nan")
        total = sum(r.reward for r in req)
        sips += W * total
        sn_sips_num += W * total
        sn_sips_den += W
        for k, r in enumerate(req):
            Wk = cl(target[i].prefix(items[:k + 1]) / r.mu_prefix)
            rips += Wk * r.reward
            acc = rips_by_pos.setdefault(r.position, [0.0, 0.0, 0.0])
            acc[0] += Wk * r.reward
            acc[1] += Wk
            acc[2] += 1
    out["sips"] = sips / n
    out["sn_sips"] = _ratio(sn_sips_num, sn_sips_den)
    out["rips"] = rips / n
    out["sn_rips"] = sum(_ratio(a, b) * c / n for a, b, c in rips_by_pos.values())
    out["pi"] = sum(sum(r.reward for r in req) * (1 - len(req) + sum(w[i]))
                    for i, req in enumerate(log)) / n
    if pbm_weight is not None:
        out["pbm"] = sum(cl(pbm_weight[i][k]) * r.reward for i, req in enumerate(log)
                         for k, r in enumerate(req)) / n
    return out


def normal_se_snips_one_slot(log: list[list[Row]], target: list[TargetOnRequest]) -> float:
    """The delta-method standard error of one-slot SNIPS: sqrt(sum (w (r - V))^2 /
    (n (n - 1) mean(w)^2))."""
    n = len(log)
    w = [target[i].marginal(req[0].item, 1) / req[0].mu for i, req in enumerate(log)]
    r = [req[0].reward for req in log]
    v = sum(a * b for a, b in zip(w, r, strict=True)) / sum(w)
    wbar = _mean(w)
    squares = sum((a * (b - v)) ** 2 for a, b in zip(w, r, strict=True))
    return math.sqrt(squares / (n * (n - 1) * wbar ** 2))


MASK = (1 << 64) - 1


def splitmix_uniforms(key: int, b: int, n: int) -> list[float]:
    """The n uniforms of resample b: SplitMix64 from key ^ (b * 0xD1B54A32D192ED03), each
    the top 53 bits over 2^53 (the stream receval.stats.resample documents)."""
    state = (key ^ (b * 0xD1B54A32D192ED03)) & MASK
    out = []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z ^= z >> 31
        out.append((z >> 11) * (1.0 / 9007199254740992.0))
    return out


def bootstrap_counts(key: int, n_resamples: int, n: int) -> list[list[int]]:
    """How many times each of the n requests is drawn in each resample."""
    counts = []
    for b in range(n_resamples):
        c = [0] * n
        for u in splitmix_uniforms(key, b, n):
            c[min(int(u * n), n - 1)] += 1
        counts.append(c)
    return counts


def percentile(values: list[float], q: float) -> float:
    """numpy's default (linear) quantile."""
    v = sorted(values)
    h = (len(v) - 1) * q
    lo = math.floor(h)
    return v[lo] + (h - lo) * (v[min(lo + 1, len(v) - 1)] - v[lo])
