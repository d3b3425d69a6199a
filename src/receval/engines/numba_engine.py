"""The CPU engine: one parallel pass over users, arrays in, arrays out.

For each user the kernel judges the user's predictions against the truth, ranks them once,
builds the picture (:mod:`receval.measures.picture`) and reads every requested metric at
every cutoff from it. It has no global state and takes plain arrays, so it runs unchanged on
one partition of users (Spark ``mapInArrow``) and on pictures built elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from receval.measures.ap import average_precision
from receval.measures.fbeta import fbeta
from receval.measures.ndcg import gain_of, ndcg
from receval.measures.picture import TIES_AVERAGE, build_picture, ideal_dcg, rank_order
from receval.measures.precision import precision
from receval.measures.rating import mae, rmse
from receval.measures.recall import recall
from receval.measures.rprec import r_precision
from receval.measures.rr import hit, reciprocal_rank
from receval.measures.spec import Family

# integer options, by position in ``iopts``
I_TIES, I_KNOWN, I_HAS_SCORE_THR, I_THR_MODE, I_GAIN = 0, 1, 2, 3, 4
I_PREC_RETURNED, I_RECALL_CAPPED, I_AP_NORM, I_NEED_ALL, I_KMAX, I_NEED_RPREC = 5, 6, 7, 8, 9, 10
N_IOPTS = 11
# float options, by position in ``fopts``
F_SCORE_THR, F_REL_THR = 0, 1

THR_NONE, THR_GLOBAL, THR_USER_MEAN = 0, 1, 2

_P, _R, _F, _AP = int(Family.PRECISION), int(Family.RECALL), int(Family.FBETA), int(Family.AP)
_RPREC, _NDCG, _RR, _HIT = int(Family.RPREC), int(Family.NDCG), int(Family.RR), int(Family.HIT)
_RMSE, _MAE = int(Family.RMSE), int(Family.MAE)


@dataclass
class KernelOutput:
    """Per evaluated user (rows) and metric (columns): value (NaN = undefined), num, den.

    ``den2`` is recall's denominator for F-beta columns (micro F needs micro P and R).
    ``dup_truth`` / ``dup_predictions``: CSR position of the first repeated item, or -1.
    ``tie_at_cut[u, c]``: ranks ``cut_ks[c]`` and ``cut_ks[c] + 1`` hold tied scores.
    """

    value: np.ndarray
    num: np.ndarray
    den: np.ndarray
    den2: np.ndarray
    n_relevant: np.ndarray
    n_list: np.ndarray
    n_predicted: np.ndarray
    n_without_truth: np.ndarray
    n_below_score_threshold: np.ndarray
    dup_truth: np.ndarray
    dup_predictions: np.ndarray
    tie_at_cut: np.ndarray


def run_kernel(
    users: np.ndarray,
    t_indptr: np.ndarray,
    t_items: np.ndarray,
    t_values: np.ndarray,
    p_indptr: np.ndarray,
    p_items: np.ndarray,
    p_scores: np.ndarray,
    families: np.ndarray,
    ks: np.ndarray,
    betas: np.ndarray,
    cut_ks: np.ndarray,
    iopts: np.ndarray,
    fopts: np.ndarray,
) -> KernelOutput:
    """Evaluate ``users`` (codes into both CSRs); see :func:`_kernel` for the arrays."""
    return KernelOutput(
        *_kernel(users, t_indptr, t_items, t_values, p_indptr, p_items, p_scores,
                 families, ks, betas, cut_ks, iopts, fopts)
    )


@numba.njit(cache=True, parallel=True)
def _kernel(users, t_indptr, t_items, t_values, p_indptr, p_items, p_scores,  # type: ignore[no-untyped-def]
            families, ks, betas, cut_ks, iopts, fopts):
    n_users = len(users)
    n_metrics = len(families)
    value = np.full((n_users, n_metrics), np.nan)
    num = np.zeros((n_users, n_metrics))
    den = np.zeros((n_users, n_metrics))
    den2 = np.zeros((n_users, n_metrics))
    n_relevant = np.zeros(n_users, dtype=np.int64)
    n_list_out = np.zeros(n_users, dtype=np.int64)
    n_predicted = np.zeros(n_users, dtype=np.int64)
    n_without_truth = np.zeros(n_users, dtype=np.int64)
    n_below = np.zeros(n_users, dtype=np.int64)
    dup_truth = np.full(n_users, -1, dtype=np.int64)
    dup_pred = np.full(n_users, -1, dtype=np.int64)
    tie_at_cut = np.zeros((n_users, len(cut_ks)), dtype=np.bool_)

    ties = iopts[I_TIES]
    average_ties = ties == TIES_AVERAGE
    known = iopts[I_KNOWN] != 0
    has_score_thr = iopts[I_HAS_SCORE_THR] != 0
    thr_mode = iopts[I_THR_MODE]
    gain_scheme = iopts[I_GAIN]
    prec_returned = iopts[I_PREC_RETURNED] != 0
    recall_capped = iopts[I_RECALL_CAPPED] != 0
    ap_norm = iopts[I_AP_NORM]
    need_all = iopts[I_NEED_ALL] != 0
    kmax = iopts[I_KMAX]
    need_rprec = iopts[I_NEED_RPREC] != 0
    score_thr = fopts[F_SCORE_THR]
    rel_thr = fopts[F_REL_THR]

    for row in numba.prange(n_users):
        u = users[row]
        # --- the user's truth, sorted by item for lookups --------------------------------
        t0 = t_indptr[u]
        t1 = t_indptr[u + 1]
        m = t1 - t0
        t_order = np.argsort(t_items[t0:t1])
        t_keys = t_items[t0:t1][t_order]
        t_vals = t_values[t0:t1][t_order]
        for i in range(1, m):
            if t_keys[i] == t_keys[i - 1]:
                dup_truth[row] = t0 + t_order[i]
                break
        thr = -np.inf
        if thr_mode == THR_GLOBAL:
            thr = rel_thr
        elif thr_mode == THR_USER_MEAN and m > 0:
            thr = t_vals.mean()
        t_rel = t_vals >= thr
        n_rel = 0
        for i in range(m):
            n_rel += int(t_rel[i])
        rel_gains = np.empty(n_rel)
        j = 0
        for i in range(m):
            if t_rel[i]:
                rel_gains[j] = gain_of(t_vals[i], True, gain_scheme)
                j += 1
        idcg = np.empty(n_rel + 1)
        ideal_dcg(rel_gains, idcg)
        n_relevant[row] = n_rel

        # --- the user's predictions: judge, filter, rank ---------------------------------
        p0 = p_indptr[u]
        p1 = p_indptr[u + 1]
        n = p1 - p0
        n_predicted[row] = n
        items = p_items[p0:p1]
        scores = p_scores[p0:p1]
        keep = np.empty(n, dtype=np.int64)
        rel = np.zeros(n)
        gain = np.zeros(n)
        n_keep = 0
        sq_err = 0.0
        abs_err = 0.0
        n_pairs = 0
        for i in range(n):
            pos = np.searchsorted(t_keys, items[i])
            found = pos < m and t_keys[pos] == items[i]
            if found:
                err = scores[i] - t_vals[pos]
                sq_err += err * err
                abs_err += abs(err)
                n_pairs += 1
                if t_rel[pos]:
                    rel[i] = 1.0
                    gain[i] = gain_of(t_vals[pos], True, gain_scheme)
            else:
                n_without_truth[row] += 1
                if known:
                    continue
            if has_score_thr and scores[i] < score_thr:
                n_below[row] += 1
                continue
            keep[n_keep] = i
            n_keep += 1
        if n > 1:
            by_item = np.argsort(items)
            for i in range(1, n):
                if items[by_item[i]] == items[by_item[i - 1]]:
                    dup_pred[row] = p0 + max(by_item[i], by_item[i - 1])
                    break
        keep = keep[:n_keep]
        order = keep[rank_order(scores[keep], items[keep], rel[keep], gain[keep], ties)]
        s_scores = scores[order]
        n_list = n_keep
        n_list_out[row] = n_list
        for c in range(len(cut_ks)):
            kc = cut_ks[c]
            if kc < n_list and s_scores[kc - 1] == s_scores[kc]:
                tie_at_cut[row, c] = True

        need = n_list if need_all else max(kmax, n_rel if need_rprec else 0)
        n_ranks = min(n_list, need)
        hits_ = np.empty(n_ranks + 1)
        ap_sum = np.empty(n_ranks + 1)
        dcg = np.empty(n_ranks + 1)
        first = np.empty(n_ranks + 1)
        rr_sum = np.empty(n_ranks + 1)
        g_start = np.empty(n_ranks, dtype=np.int64)
        g_size = np.empty(n_ranks, dtype=np.int64)
        g_rel = np.empty(n_ranks, dtype=np.int64)
        g_before = np.empty(n_ranks, dtype=np.int64)
        build_picture(s_scores, rel[order], gain[order], n_ranks, average_ties, hits_, ap_sum,
                      dcg, first, rr_sum, g_start, g_size, g_rel, g_before)

        # --- every metric at every cutoff, read off the picture --------------------------
        for c in range(n_metrics):
            fam = families[c]
            k = ks[c]
            if fam == _P:
                v, a, b = precision(hits_, n_ranks, n_list, k, prec_returned)
            elif fam == _R:
                v, a, b = recall(hits_, n_ranks, n_rel, k, recall_capped)
            elif fam == _F:
                pv, a, b = precision(hits_, n_ranks, n_list, k, prec_returned)
                rv, _, b2 = recall(hits_, n_ranks, n_rel, k, recall_capped)
                v = fbeta(pv, rv, betas[c])
                den2[row, c] = b2
            elif fam == _AP:
                v, a, b = average_precision(ap_sum, hits_, n_ranks, n_list, n_rel, k, ap_norm,
                                            average_ties, g_start, g_size, g_rel, g_before)
            elif fam == _RPREC:
                v, a, b = r_precision(hits_, n_ranks, n_rel)
            elif fam == _NDCG:
                v, a, b = ndcg(dcg, idcg, n_ranks, n_rel, k)
            elif fam == _RR:
                v, a, b = reciprocal_rank(rr_sum, n_ranks, n_rel, k)
            elif fam == _HIT:
                v, a, b = hit(first, n_ranks, n_rel, k)
            elif fam == _RMSE:
                v, a, b = rmse(sq_err, n_pairs)
            else:
                v, a, b = mae(abs_err, n_pairs)
            value[row, c] = v
            num[row, c] = a
            den[row, c] = b
    return (value, num, den, den2, n_relevant, n_list_out, n_predicted, n_without_truth,
            n_below, dup_truth, dup_pred, tie_at_cut)
