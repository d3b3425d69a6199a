"""The numba engine writes a Picture: each prefix quantity sampled at the cutoffs the metrics
need (0 = the whole list, a cutoff past the list holds the value at its end), only the fields
they read, and ``ap_over_hits`` where average ties put a cutoff inside a tie group. Expected
values are worked out by hand (or by brute force over the orders of a tie group)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from receval.dispatch import kernel_arguments
from receval.engines.numba_engine import run_kernel
from receval.measures.spec import parse_metrics
from receval.options import Options


def _picture(truth: list[list[int]], preds: list[list[tuple[int, float]]], metrics: list[str],
             **opts):
    """The picture of every user of two tiny CSRs (truth ratings 1, predictions scored)."""
    t_indptr = np.cumsum([0] + [len(t) for t in truth]).astype(np.int64)
    t_items = np.array([i for t in truth for i in t], dtype=np.int64)
    t_values = np.ones(len(t_items))
    p_indptr = np.cumsum([0] + [len(p) for p in preds]).astype(np.int64)
    p_items = np.array([i for p in preds for i, _ in p], dtype=np.int64)
    p_scores = np.array([s for p in preds for _, s in p], dtype=np.float64)
    iopts, fopts, cutoffs, cut_ks, fields = kernel_arguments(parse_metrics(metrics),
                                                             Options(**opts))
    users = np.arange(len(truth), dtype=np.int64)
    return run_kernel(users, t_indptr, t_items, t_values, p_indptr, p_items, p_scores,
                      cutoffs, cut_ks, fields, iopts, fopts)


# truth {1, 2, 3}; ranked list 5, 1, 9, 2: hits at ranks 2 and 4
TRUTH = [[1, 2, 3]]
PREDS = [[(5, 0.9), (1, 0.8), (9, 0.7), (2, 0.6)]]


def test_prefix_sums_at_each_cutoff_and_the_whole_list():
    pic, _ = _picture(TRUTH, PREDS, ["R@1", "MAP@3", "nDCG@10", "MRR", "Hit@3", "Rprec"])
    assert pic.cutoffs.tolist() == [0, 1, 3, 10]
    assert pic.hits[0].tolist() == [2.0, 0.0, 1.0, 2.0]  # k=10 past the list: its end
    assert pic.ap_sum[0].tolist() == [1 / 2 + 2 / 4, 0.0, 1 / 2, 1 / 2 + 2 / 4]
    assert pic.rr_sum[0].tolist() == [0.5, 0.0, 0.5, 0.5]
    assert pic.first[0].tolist() == [1.0, 0.0, 1.0, 1.0]
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    assert pic.dcg[0].tolist() == pytest.approx([dcg, 0.0, 1 / math.log2(3), dcg], abs=1e-15)
    ideal3 = 1 + 1 / math.log2(3) + 1 / 2  # L = 3: the ideal list stops there
    assert pic.idcg[0].tolist() == pytest.approx([ideal3, 1.0, ideal3, ideal3], abs=1e-15)
    assert pic.n_relevant.tolist() == [3] and pic.n_list.tolist() == [4]
    assert pic.hits_at_r.tolist() == [1.0]  # one hit in the top L = 3
    assert pic.ap_over_hits is None


def test_only_the_fields_the_metrics_read():
    pic, _ = _picture(TRUTH, PREDS, ["P@2"])
    assert pic.cutoffs.tolist() == [2]
    assert pic.hits[0].tolist() == [1.0]
    assert pic.ap_sum is None and pic.dcg is None and pic.idcg is None
    assert pic.first is None and pic.rr_sum is None
    assert pic.hits_at_r.tolist() == [0.0]  # no R-precision asked


def test_rating_errors_and_audit():
    truth = [[1, 2]]
    preds = [[(1, 3.0), (2, 0.0), (7, 1.0)]]  # errors 2 and -1 against ratings 1
    pic, audit = _picture(truth, preds, ["RMSE", "MAE"])
    assert pic.cutoffs.tolist() == []
    assert pic.sq_err.tolist() == [5.0] and pic.abs_err.tolist() == [3.0]
    assert pic.n_pairs.tolist() == [2] and pic.sq_scale.tolist() == [1.0]
    assert audit.n_predicted.tolist() == [3] and audit.n_without_truth.tolist() == [1]


def _brute_ap_over_hits(labels: list[int], k: int) -> float:
    """E[AP numerator / hits] over every order of one tie group (0 when no hit)."""
    total = 0.0
    orders = list(itertools.permutations(labels))
    for order in orders:
        hits = 0
        num = 0.0
        for j, rel in enumerate(order[:k], start=1):
            if rel:
                hits += 1
                num += hits / j
        total += num / hits if hits else 0.0
    return total / len(orders)


def test_ap_over_hits_inside_a_tie_group():
    truth = [[1, 2]]
    preds = [[(1, 0.5), (5, 0.5), (2, 0.5), (9, 0.5)]]  # one group of 4, 2 relevant
    pic, _ = _picture(truth, preds, ["AP@1", "AP@2", "AP@3", "AP@4"], ties="average",
                      ap_normalizer="hits")
    assert pic.cutoffs.tolist() == [1, 2, 3, 4]
    for c, k in enumerate([1, 2, 3]):
        assert pic.ap_over_hits[0, c] == pytest.approx(_brute_ap_over_hits([1, 0, 1, 0], k),
                                                       abs=1e-12)
    assert math.isnan(pic.ap_over_hits[0, 3])  # the cut ends the group: the ratio is exact
    same, _ = _picture(truth, preds, ["AP@2"], ties="average")
    assert same.ap_over_hits is None  # only AP over its hits under average ties reads it
