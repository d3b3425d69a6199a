"""A plain-Python reference for the debiased (IPS / SNIPS) metrics, from the formulas of
docs/debiased-metrics.md ("The formulas"; Yang et al., RecSys 2018).

Nothing here imports receval. One user at a time: rank the user's predictions by score
(descending; the inputs have distinct scores), weigh each relevant truth item ``i`` by
``w_i = min(1 / p_i, clip)`` and sum its contribution over the ranked list::

    N = |S*| (IPS) or sum_{i in S*} w_i (SNIPS)
    P@k    = sum_{rank(i) <= k} w_i / k
    R@k    = sum_{rank(i) <= k} w_i / N
    nDCG@k = sum_{rank(i) <= k} w_i / log2(rank(i) + 1)  /  IDCG(min(k, N)),
             IDCG(x) = sum_{r=1}^{floor x} 1/log2(r + 1) + (x - floor x) / log2(floor x + 2)
    AP@k   = sum_{rank(i) <= k} w_i (1 + sum_{j relevant, rank(j) < rank(i)} w_j) / rank(i)
             / min(k, N)
    RBP@p  = (1 - p) sum_i w_i p^(rank(i) - 1)
    HR@k   = w of the best ranked relevant item within the top k (0 when none)

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
    n_rel = sum(weight.values()) if snips else len(weight)
    hits = [(r + 1, weight[item]) for r, item in enumerate(ranked) if item in weight]
    cut = [(r, w) for r, w in hits if k is None or r <= k]
    if metric == "P":
        value = sum(w for _, w in cut) / k
    elif metric == "R":
        value = sum(w for _, w in cut) / n_rel
    elif metric == "nDCG":
        dcg = sum(w / math.log2(r + 1) for r, w in cut)
        x = min(k, n_rel)
        whole = math.floor(x)
        ideal = sum(1 / math.log2(r + 1) for r in range(1, whole + 1))
        ideal += (x - whole) / math.log2(whole + 2)
        value = dcg / ideal
    elif metric == "AP":
        total = 0.0
        for r, w in cut:
            above = sum(w2 for r2, w2 in cut if r2 < r)
            total += w * (1 + above) / r
        value = total / min(k, n_rel)
    elif metric == "RBP":
        value = (1 - param) * sum(w * param ** (r - 1) for r, w in hits)
    elif metric == "HR":
        value = cut[0][1] if cut else 0.0
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
