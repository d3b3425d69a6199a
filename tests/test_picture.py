"""The numba engine writes a Picture: each prefix quantity sampled at the cutoffs the metrics
need (0 = the whole list, a cutoff past the list holds the value at its end), only the fields
they read, and ``ap_over_hits`` where average ties put a cutoff inside a tie group. Expected
values are worked out by hand (or by brute force over the orders of a tie group)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from torch_device import TORCH_DEVICE

from receval.engines.numba_engine import run_kernel
from receval.engines.request import EngineRequest, Lists
from receval.measures.registry import cutoffs_needed, needs, top_k_needed
from receval.measures.spec import parse_metrics
from receval.options import Options

pytestmark = pytest.mark.torch_device


def _picture(truth: list[list[int]], preds: list[list[tuple[int, float]]], metrics: list[str],
             **opts):
    """The picture of every user of two tiny CSRs (truth ratings 1, predictions scored)."""
    t_indptr = np.cumsum([0] + [len(t) for t in truth]).astype(np.int64)
    t_items = np.array([i for t in truth for i in t], dtype=np.int64)
    t_values = np.ones(len(t_items))
    p_indptr = np.cumsum([0] + [len(p) for p in preds]).astype(np.int64)
    p_items = np.array([i for p in preds for i, _ in p], dtype=np.int64)
    p_scores = np.array([s for p in preds for _, s in p], dtype=np.float64)
    specs, options = parse_metrics(metrics), Options(**opts)
    users = np.arange(len(truth), dtype=np.int64)
    lists = Lists(users, t_indptr, t_items, t_values, p_indptr, p_items, p_scores)
    return run_kernel(EngineRequest.plan(lists, options, np.array(cutoffs_needed(specs, options)),
                                         needs(specs, options),
                                         top_k=top_k_needed(specs, options)))


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


# --- top_items: each user's ranked top K item codes ----------------------------------------


def _random_csrs(seed: int, n_users: int = 40):
    rng = np.random.default_rng(seed)
    p_len = rng.integers(0, 12, n_users)
    t_len = rng.integers(0, 8, n_users)
    p_items = np.concatenate([rng.choice(30, n, replace=False) for n in p_len]).astype(np.int64)
    t_items = np.concatenate([rng.choice(30, n, replace=False) for n in t_len]).astype(np.int64)
    p_scores = rng.integers(0, 4, len(p_items)).astype(np.float64)  # many ties
    t_values = rng.integers(0, 5, len(t_items)).astype(np.float64)
    return (np.concatenate([[0], np.cumsum(t_len)]).astype(np.int64), t_items, t_values,
            np.concatenate([[0], np.cumsum(p_len)]).astype(np.int64), p_items, p_scores)


def _top_oracle(csrs, ties: str, k: int, threshold: float) -> list[list[int]]:
    """Sort each user's list by the tie policy's keys (tests/reference/oracle.py's rank)."""
    t_indptr, t_items, t_values, p_indptr, p_items, p_scores = csrs
    out = []
    for u in range(len(t_indptr) - 1):
        rating = dict(zip(t_items[t_indptr[u]:t_indptr[u + 1]].tolist(),
                          t_values[t_indptr[u]:t_indptr[u + 1]].tolist(), strict=True))
        entries = []
        for pos in range(p_indptr[u], p_indptr[u + 1]):
            item, score = int(p_items[pos]), float(p_scores[pos])
            rel = float(rating.get(item, -1.0) >= threshold)
            # every policy but stable breaks what is left of a tie by item id descending
            key = {"stable": (), "average": (-item,), "item": (-item,),
                   "pessimistic": (rel, -item), "optimistic": (-rel, -item)}[ties]
            entries.append(((-score, *key, pos), item))
        ranked = [item for _, item in sorted(entries)][:k]
        out.append(ranked + [-1] * (k - len(ranked)))
    return out


@pytest.mark.parametrize("ties", ["stable", "item", "pessimistic", "optimistic", "average"])
@pytest.mark.parametrize("engine", ["numba", "torch"])
def test_top_items_in_rank_order(ties: str, engine: str):
    csrs = _random_csrs(3)
    options = Options(ties=ties, relevance_threshold=2)
    cutoffs = np.array([3], dtype=np.int64)
    fields = {"hits", "top_items"}
    users = np.arange(len(csrs[0]) - 1)
    request = EngineRequest.plan(Lists(users, *csrs), options, cutoffs, fields, top_k=5)
    if engine == "torch":
        torch_engine = pytest.importorskip("receval.engines.torch_engine")
        pic, _ = torch_engine.run_kernel(request, device=TORCH_DEVICE)
    else:
        pic, _ = run_kernel(request)
    assert pic.top_items.dtype == np.int64
    assert pic.top_items.tolist() == _top_oracle(csrs, ties, 5, 2.0)
    # the K of top_items is not a cutoff: the prefix sums are as without it
    plain, _ = run_kernel(EngineRequest.plan(Lists(users, *csrs), options, cutoffs, {"hits"},
                                             top_k=5))
    assert plain.top_items is None
    np.testing.assert_array_equal(pic.hits, plain.hits)


def test_top_items_written_only_when_asked_and_taken_with_the_users(monkeypatch):
    from dataclasses import replace

    from receval.dispatch import engine_request, run
    from receval.engines.numba_engine import KernelOutput
    from receval.measures import registry
    from receval.measures.family import Family
    from receval.shaping import prepare

    assert registry.top_k_needed(parse_metrics(["P@10", "hits@3"]), Options()) == 0
    # a family that reads the list (the beyond-accuracy ones do): K is its largest cutoff
    monkeypatch.setitem(registry.ENTRIES, Family.HITS,
                        replace(registry.ENTRIES[Family.HITS], reads=("hits", "top_items")))
    specs = parse_metrics(["P@10", "hits@3", "hits@2"])
    assert registry.top_k_needed(specs, Options()) == 3
    from receval.data.columns import read_sides

    t, p = read_sides({"user": ["a", "b"], "item": ["x", "y"]},
                      {"user": ["a", "a", "b"], "item": ["z", "x", "y"],
                       "score": [0.1, 0.9, 0.5]},
                      user_col="user", item_col="item", rating_col="rating",
                      score_col="score", truth_columns=None, prediction_columns=None,
                      rating_required=False)
    prepared = prepare(t, p, Options())
    request = engine_request(prepared, np.arange(2), specs, Options())
    assert "top_items" in request.fields and request.top_k == 3
    out = run(request, specs, Options())
    assert isinstance(out, KernelOutput)
    assert out.top_items.shape == (2, 3)
    length = np.minimum(out.n_list, 3)
    ids = [prepared.items.decode(row[:n]).tolist() for row, n in zip(out.top_items, length,
                                                                       strict=True)]
    assert ids == [["x", "z"], ["y"]]
    assert out.take(np.array([False, True])).top_items.tolist() == [out.top_items[1].tolist()]


def test_judged_items_in_rank_order_cut_by_max_list():
    # truth {1: 1.0, 2: 1.0, 3: 1.0}; list 5, 1, 9, 2 (items 1 and 2 judged and relevant)
    pic, _ = _picture(TRUTH, PREDS, ["bpref"])
    assert pic.judged_ranks.tolist() == [[2, 4]]  # trimmed to the longest judged part
    assert pic.judged_rel.tolist() == [[1.0, 1.0]]
    assert pic.judged_rating.tolist() == [[1.0, 1.0]]
    assert pic.n_judged.tolist() == [3] and pic.max_rel_rating.tolist() == [1.0]
    cut, _ = _picture(TRUTH, PREDS, ["bpref", "P@3"], max_list=3)
    assert cut.judged_ranks.tolist() == [[2]] and cut.n_list.tolist() == [3]
    assert cut.hits[0].tolist() == [1.0]
    plain, _ = _picture(TRUTH, PREDS, ["P@3"])
    assert plain.judged_ranks is None
