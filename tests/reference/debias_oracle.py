"""A plain-Python reference for the debiased (IPS / SNIPS) metrics, from the formulas of
docs/debiased-metrics.md ("The formulas"; Yang et al., RecSys 2018).

Nothing here imports receval. One user at a time: rank the user's predictions by score
(descending; the inputs have distinct scores), weigh each relevant truth item ``i`` by
``w_i = min(1 / p_i, clip)``, ``m = |S*|`` the user's relevant items, ``w_(1) >= w_(2) >= ...``
their weights heaviest first, ``top(j) = w_(1) + ... + w_(j)``::

    IPS                                         SNIPS
    P@k    = sum_hits w / k                     sum_hits w / top(j) * j / k,  j = min(k, m)
    R@k    = sum_hits w / m                     sum_hits w / sum_i w_i
    nDCG@k = sum_hits w / log2(r + 1)           the same over
             over IDCG(min(k, m))               sum_{r <= min(k, m)} w_(r) / log2(r + 1)
    AP@k   = sum_hits w (1 + w above) / r       AP_w / AP*_w(j) * j / min(k, m),  j = min(k, m),
             / min(k, m)                        AP_w = sum_hits w (w + w above) / r,
                                                AP*_w(j) = sum_{r <= j} w_(r) top(r) / r
    RBP@p  = (1 - p) sum_hits w p^(r - 1)       RBP_w / RBP*_w * (1 - p^m),
                                                RBP*_w = (1 - p) sum_{r <= m} w_(r) p^(r - 1)
    HR@k   = w of the first hit in the top k    that over w_(1)

Users: every user of the truth (every truth row relevant); a user without predictions scores
0; the summary is the mean over those users.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable


def popularity_propensity(train_items: Iterable[object], gamma: float) -> dict[object, float]:
    """Yang et al. eq. 15: ``(n_i / max n)^((gamma + 1) / 2)`` per trained item."""
    counts = Counter(train_items)
    top = max(counts.values())
    return {item: (n / top) ** ((gamma + 1) / 2) for item, n in counts.items()}


def user_value(metric: str, k: int | None, param: float, ranked: list[object],
               weight: dict[object, float], snips: bool) -> float:
    """One user's debiased value; ``weight``: relevant item -> w."""
    m = len(weight)
    heaviest = sorted(weight.values(), reverse=True)
    hits = [(r + 1, weight[item]) for r, item in enumerate(ranked) if item in weight]
    cut = [(r, w) for r, w in hits if k is None or r <= k]
    if metric == "P":
        j = min(k, m)
        value = sum(w for _, w in cut) / k
        if snips:
            value = sum(w for _, w in cut) / sum(heaviest[:j]) * j / k
    elif metric == "R":
        value = sum(w for _, w in cut) / (sum(heaviest) if snips else m)
    elif metric == "nDCG":
        dcg = sum(w / math.log2(r + 1) for r, w in cut)
        gains = heaviest if snips else [1.0] * m
        ideal = sum(g / math.log2(r + 1) for r, g in enumerate(gains[:min(k, m)], start=1))
        value = dcg / ideal
    elif metric == "AP":
        total = 0.0
        for r, w in cut:
            above = sum(w2 for r2, w2 in cut if r2 < r)
            total += w * ((w if snips else 1) + above) / r
        value = total / min(k, m)
        if snips:
            j = min(k, m)
            best = sum(heaviest[r - 1] * sum(heaviest[:r]) / r for r in range(1, j + 1))
            value = total / best * j / min(k, m)
    elif metric == "RBP":
        value = (1 - param) * sum(w * param ** (r - 1) for r, w in hits)
        if snips:
            best = (1 - param) * sum(w * param ** r for r, w in enumerate(heaviest))
            value = value / best * (1 - param ** m)
    elif metric == "HR":
        value = cut[0][1] if cut else 0.0
        if snips:
            value /= heaviest[0]
    else:
        raise ValueError(metric)
    return value


def evaluate(truth: list[tuple[object, object, float]],
             predictions: list[tuple[object, object, float]],
             metrics: list[tuple[str, int | None, float]], *, snips: bool,
             clip: float | None = None) -> dict[tuple[str, int | None, float], float]:
    """``truth``: (user, item, propensity) rows; ``predictions``: (user, item, score) rows;
    ``metrics``: (family, k, RBP persistence). The mean over the truth's users."""
    users = sorted({u for u, _, _ in truth})
    out = {}
    for spec in metrics:
        values = []
        for user in users:
            weight = {}
            for u, item, p in truth:
                if u == user:
                    w = 1.0 / p
                    weight[item] = w if clip is None else min(w, clip)
            mine = [(s, item) for u, item, s in predictions if u == user]
            ranked = [item for _, item in sorted(mine, key=lambda x: -x[0])]
            values.append(user_value(spec[0], spec[1], spec[2], ranked, weight, snips))
        out[spec] = sum(values) / len(values)
    return out
