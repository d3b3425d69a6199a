"""The peers' fairness and calibration code, reproduced from their source for the cross-checks
of tests/test_fairness.py (none of them is pip-installable here). Each function follows the
cited file line for line, with the data structures simplified (dicts and lists instead of
xarray / pandas rows); the arithmetic is theirs.

- TREC Fair Ranking 2022: fair-trec/trec2022-fair-public @6fd105f2b69d616c88a3bc276409773a8493927d,
  wptrec/metrics/awrf.py (``AWRFMetric.qr_ndcg``, ``qr_awrf``) and wptrec/metrics/common.py
  (``discount``, float32 as there); one fairness dimension, so ``agg_alignments(..., 'mean',
  disc)`` is the disc-weighted mean of the alignments.
- RADio: svrijenhoek/RADio @f1ce0d8bb0d7235f0c48b1745a8a81060683846a, dart/metrics/calibration.py
  (``Calibration.compute_distr``), dart/external/kl_divergence.py (``compute_kl_divergence``,
  ``JSD``), dart/external/discount.py (``harmonic_number``).
- The copied snippet: ethen8181's calibrated-recommendation notebook as copied in many
  repositories (``compute_genre_distr``, ``compute_kl_divergence(interacted_distr,
  reco_distr, alpha=0.01)``).
- ir_measures: terrierteam/ir_measures @487e02a3540bb06663026beda0e92b519d0ded02,
  ir_measures/measures/fairness.py (``_NormalizedDiscountedDifference.unfairness``).
"""

from __future__ import annotations

import math
from itertools import permutations

import numpy as np
from numpy.linalg import norm
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy

# --- TREC Fair 2022 -------------------------------------------------------------------------


def trec_discount(n: int) -> np.ndarray:
    ranks = np.arange(1, n + 1, dtype="f4")
    ranks = np.maximum(ranks, 2)
    return np.reciprocal(np.log2(ranks))


def trec_qr_ndcg(qrun: list, qrels: list, target_len: int = 500) -> float:
    if len(qrun) > target_len:
        raise ValueError("too many documents in query run")
    n = len(qrun)
    rel_n = min(target_len, len(qrels))
    util = np.isin(qrun, qrels).astype("f4")
    disc = trec_discount(target_len)
    return float(np.sum(util * disc[:n]) / np.sum(disc[:rel_n]))


def trec_qr_awrf(qrun: list, page_align: dict, qtgt: np.ndarray) -> float:
    n = len(qrun)
    disc = trec_discount(n)
    is_known = np.array([p in page_align for p in qrun], dtype=bool)
    disc = disc[is_known]
    aligns = np.array([page_align[p] for p in qrun if p in page_align], dtype="float64")
    # agg_alignments([aligns], 'mean', disc) with one dimension: the weighted mean
    ralign = (aligns * disc[:, None]).sum(axis=0) / len(aligns)
    dist = jensenshannon(ralign.ravel(), qtgt.ravel())
    return float(1 - dist * dist)


# --- RADio ----------------------------------------------------------------------------------


def radio_harmonic_number(n: int) -> float:
    gamma = 0.57721566490153286060651209008240243104215933593992
    return gamma + math.log(n) + 0.5 / n - 1. / (12 * n ** 2) + 1. / (120 * n ** 4)


def radio_compute_distr(categories: list, adjusted: bool = False) -> dict:
    n = len(categories)
    sum_one_over_ranks = radio_harmonic_number(n)
    count = 0
    distr: dict = {}
    for category in categories:
        count += 1  # noqa: SIM113 - as RADio writes it
        topic_freq = distr.get(category, 0.)
        distr[category] = (topic_freq + 1 * 1 / count / sum_one_over_ranks if adjusted
                           else topic_freq + 1 * 1 / n)
    return distr


def _opt_merge_max_mappings(dict1: dict, dict2: dict) -> dict:
    merged, other = (dict1, dict2) if len(dict1) > len(dict2) else (dict2, dict1)
    merged = dict(merged)
    for key in other:
        if key not in merged or other[key] > merged[key]:
            merged[key] = other[key]
    return merged


def radio_JSD(P: list, Q: list) -> float:
    _P = P / norm(P, ord=1)
    _Q = Q / norm(Q, ord=1)
    _M = 0.5 * (_P + _Q)
    return math.sqrt(abs(0.5 * (entropy(_P, _M, base=2) + entropy(_Q, _M, base=2))))


def radio_compute_kl_divergence(s: dict, q: dict, alpha: float = 0.001) -> list:
    ss = []
    qq = []
    merged_dic = _opt_merge_max_mappings(s, q)
    for key in sorted(merged_dic.keys()):
        q_score = q.get(key, 0.)
        s_score = s.get(key, 0.)
        ss.append((1 - alpha) * s_score + alpha * q_score)
        qq.append((1 - alpha) * q_score + alpha * s_score)
    return [entropy(ss, qq, base=2), radio_JSD(ss, qq)]


def radio_topic_divergence(history: list, recommendation: list) -> list:
    """[[KL, JS] with the rank discount, [KL, JS] without] as Calibration.topic_divergence."""
    with_discount = radio_compute_kl_divergence(radio_compute_distr(history, True),
                                                radio_compute_distr(recommendation, True))
    without = radio_compute_kl_divergence(radio_compute_distr(history, False),
                                          radio_compute_distr(recommendation, False))
    return [with_discount, without]


# --- the copied snippet -----------------------------------------------------------------------


def snippet_compute_genre_distr(items_genres: list[list]) -> dict:
    distr: dict = {}
    for genres in items_genres:
        for genre in genres:  # item.genres = {genre: 1 / len(genres)}
            score = 1 / len(genres)
            genre_score = distr.get(genre, 0.)
            distr[genre] = genre_score + score
    for item, genre_score in distr.items():
        distr[item] = round(genre_score / len(items_genres), 3)
    return distr


def snippet_compute_kl_divergence(interacted_distr: dict, reco_distr: dict,
                                  alpha: float = 0.01) -> float:
    kl_div = 0.
    for genre, score in interacted_distr.items():
        reco_score = reco_distr.get(genre, 0.)
        reco_score = (1 - alpha) * reco_score + alpha * score
        kl_div += score * np.log2(score / reco_score)
    return float(kl_div)


# --- ir_measures (its rND, for the documented differences) -----------------------------------


def ir_measures_rnd(ranking: tuple, qrel_groups: tuple, protected) -> float:
    def unfairness(r: tuple) -> float:
        n = len(qrel_groups)
        s_plus = sum(1 for g in qrel_groups if g == protected)
        metric = 0.0
        for i in range(1, len(r)):
            s_plus_i = sum(1 for g in r[:i] if g == protected)
            metric += (1 / math.log(i + 1, 2)) * abs(abs(s_plus_i / (i + 1)) - abs(s_plus / n))
        return metric
    worst = max(unfairness(p) for p in set(permutations(ranking)))
    return 0 if worst == 0 else unfairness(ranking) / worst


# --- expeval (diazf/expeval @69ab070f9e3fb186910412c1c0d98ec35cb933bc: exposure.py,
# metrics.py, util.py), one query in its default retrieval setting (complete=False) --------


def _l2(x: dict) -> float:
    if len(x) == 0:
        return math.inf
    retval = 0.0
    for v in x.values():
        retval = retval + v * v
    return math.inf if retval <= 0 else retval


def _distance(x: dict, y: dict) -> float:
    retval = 0.0
    for k in set(x) | set(y):
        d = x.get(k, 0.0) - y.get(k, 0.0)
        retval = retval + d * d
    return retval


def _dot(x: dict, y: dict) -> float:
    return sum(x[k] * y[k] for k in set(x) & set(y))


def _geometric_series(p: float, n: float) -> float:
    return 1.0 / (1.0 - p) if n == math.inf else (1.0 - pow(p, n)) / (1.0 - p)


def expeval_query(permutations_: list[list], qrels: dict, um_type: str = "gerr",
                  p: float = 0.5, u: float = 0.5) -> dict:
    """{name: (raw, normalised)} of disparity, relevance, difference as expeval prints."""
    # exposure.expected
    num_samples = len(permutations_)
    run: dict = {}
    for permutation in permutations_:
        relret = 0
        for i, did in enumerate(permutation):
            run.setdefault(did, 0.0)
            e_i = p ** i if um_type == "rbp" else p ** i * (1.0 - u) ** relret
            run[did] += e_i / num_samples
            if did in qrels and qrels[did] > 0:
                relret = relret + 1
    # exposure.target
    acc: dict = {}
    for rel in qrels.values():
        acc[rel] = acc.get(rel, 0) + 1
    levels = sorted(([k, v] for k, v in acc.items()), reverse=True)
    b = 0
    per_level = {}
    for g, m in levels:
        if um_type == "rbp":
            te = (p ** b - p ** (b + m)) / (m * (1.0 - p))
        else:
            pp = p * (1.0 - u)
            te = ((pp ** b - pp ** (b + m)) / (m * (1.0 - pp)) if g > 0 else
                  ((1.0 - u) ** b * (p ** b - p ** (b + m))) / (m * (1.0 - p)))
        per_level[g] = te
        b = b + m
    target = {did: per_level[rel] for did, rel in qrels.items()}
    n = math.inf
    # metrics.Relevance / Disparity / Difference (n = inf)
    rel_ub, rel_lb = _l2(target), 0.0
    if len(levels) <= 1:
        rel_ub = rel_lb = 0.0
    disp_ub, disp_lb = _geometric_series(p * p, n), 0.0
    pp = p if um_type == "rbp" else p * u
    diff_ub = sum(e * e for e in target.values()) + _geometric_series(pp, n)
    values = {"disparity": (_l2(run), disp_lb, disp_ub, 0.0),
              "relevance": (_dot(target, run), rel_lb, rel_ub, 1.0),
              "difference": (_distance(target, run), 0.0, diff_ub, 0.0)}
    out = {}
    for name, (v, lb, ub, default) in values.items():
        norm = default if lb == ub else (v - lb) / (ub - lb)
        out[name] = (v, norm)
    out["relevance_upper_bound"] = _l2(target)
    return out
