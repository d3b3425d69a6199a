"""The torch engine's pictures against a slow reference written from the definitions
(docs/semantics.md, ``receval.engines.fill_picture``): a plain Python sort per user, and under
``ties="average"`` the mean over every order of the tied items, enumerated."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch engine needs torch")

from receval.engines.torch_engine import TIE_POLICIES, Rows, picture_of_rows  # noqa: E402
from receval.exceptions import ReceValError  # noqa: E402

FIELDS = ("hits", "ap_sum", "dcg", "first", "rr_sum")


def _sums_of_order(rel: list[float], gain: list[float]) -> dict[str, list[float]]:
    """Prefix sums (index j: first j ranks) of one fully ordered list."""
    out: dict[str, list[float]] = {f: [0.0] for f in FIELDS}
    h = ap = d = f = rr = 0.0
    for j, (r, g) in enumerate(zip(rel, gain, strict=True)):
        rank = j + 1
        if r:
            h += 1
            ap += h / rank
            d += g / math.log2(rank + 1)
            if h == 1:
                f, rr = 1.0, 1.0 / rank
        for name, value in zip(FIELDS, (h, ap, d, f, rr), strict=True):
            out[name].append(value)
    return out


def _tie_key(ties: str, rel: float, gain: float, key: int) -> tuple[float, ...]:
    # every policy but stable breaks what is left of a tie by item key descending (average:
    # the order of the top items; its sums average over every order)
    return {"stable": (), "average": (-key,), "item": (-key,), "item_ascending": (key,),
            "pessimistic": (rel, gain, -key), "optimistic": (-rel, -gain, -key)}[ties]


def _reference(scores, valid, rel, gain, keys, ties, cutoffs, n_relevant, width):
    """Per user: the picture at ``cutoffs`` and the top items."""
    out = []
    for u in range(len(scores)):
        entries = [j for j in range(width) if valid[u][j]]
        order = sorted(entries, key=lambda j: (-scores[u][j], *_tie_key(
            ties, rel[u][j], gain[u][j], keys[j]), j))
        if ties == "average":
            groups = [list(g) for _, g in itertools.groupby(order, key=lambda j: scores[u][j])]
            total: dict[str, np.ndarray] = {f: np.zeros(len(order) + 1) for f in FIELDS}
            count = 0
            for perm in itertools.product(*(itertools.permutations(g) for g in groups)):
                flat = [j for g in perm for j in g]
                sums = _sums_of_order([rel[u][j] for j in flat], [gain[u][j] for j in flat])
                for f in FIELDS:
                    total[f] += sums[f]
                count += 1
            sums = {f: list(total[f] / count) for f in FIELDS}
        else:
            sums = _sums_of_order([rel[u][j] for j in order], [gain[u][j] for j in order])
        n = len(order)
        at = [n if k == 0 else min(k, n) for k in cutoffs]
        pic = {f: [sums[f][a] for a in at] for f in FIELDS}
        pic["hits_at_r"] = sums["hits"][min(n_relevant[u], n)]
        pic["top"] = order
        ties_at = []
        for k in cutoffs:
            ties_at.append(bool(k and k < n and scores[u][order[k - 1]] == scores[u][order[k]]))
        pic["tie_at_cut"] = ties_at
        out.append(pic)
    return out


def _random_rows(seed: int, n_users: int, width: int, levels: int):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, levels, (n_users, width)).astype(np.float32) / 2
    valid = rng.random((n_users, width)) < 0.8
    valid[0] = False  # a user with an empty list
    rel = (rng.random((n_users, width)) < 0.4) & valid
    rel[1] = False  # a user with nothing relevant in the list
    gain = np.where(rel, rng.integers(1, 4, (n_users, width)), 0).astype(np.float64)
    keys = rng.permutation(width)
    n_relevant = rel.sum(1) + rng.integers(0, 3, n_users)  # some relevant items never listed
    return scores, valid, rel.astype(np.float64), gain, keys, n_relevant


def _rows(scores, valid, rel, gain, keys, n_relevant) -> Rows:
    return Rows(scores=torch.from_numpy(scores), valid=torch.from_numpy(valid),
                rel=torch.from_numpy(rel), gain=torch.from_numpy(gain),
                n_relevant=torch.from_numpy(n_relevant), item_key=torch.from_numpy(keys))


@pytest.mark.parametrize("ties", TIE_POLICIES)
@pytest.mark.parametrize("cutoffs", [[1, 2, 3, 5, 0], [2], [1, 3], [9]])
def test_picture_equals_reference(ties: str, cutoffs: list[int]) -> None:
    width = 6
    scores, valid, rel, gain, keys, n_rel = _random_rows(7, 40, width, levels=3)
    got = picture_of_rows(_rows(scores, valid, rel, gain, keys, n_rel), cutoffs, ties,
                          need_rprec=True, top_items=True)
    pic = got.picture
    ref = _reference(scores.tolist(), valid, rel.tolist(), gain.tolist(), keys.tolist(), ties,
                     cutoffs, n_rel.tolist(), width)
    for f in FIELDS:
        expected = np.array([r[f] for r in ref])
        np.testing.assert_allclose(getattr(pic, f).numpy(), expected, rtol=1e-12, atol=1e-14,
                                   err_msg=f)
    np.testing.assert_allclose(pic.hits_at_r.numpy(), [r["hits_at_r"] for r in ref],
                               rtol=1e-12)
    assert got.tie_at_cut.tolist() == [r["tie_at_cut"] for r in ref]
    assert pic.n_list.tolist() == valid.sum(1).tolist()
    for u, r in enumerate(ref):  # the order itself
        top = [j for j in pic.top_items[u].tolist() if j >= 0]
        k_top = pic.top_items.shape[1]
        assert top == r["top"][:k_top], u


@pytest.mark.parametrize("ties", ["stable", "item", "item_ascending", "pessimistic",
                                  "optimistic"])
def test_boundary_tie_group_chosen_by_the_tie_order(ties: str) -> None:
    # every score equal: topk's pick of the group at rank K is arbitrary, the answer is not
    width = 300
    rng = np.random.default_rng(3)
    scores = np.zeros((4, width), dtype=np.float32)
    scores[:, ::7] = 1.0
    valid = np.ones((4, width), dtype=bool)
    rel = (rng.random((4, width)) < 0.3).astype(np.float64)
    gain = rel * rng.integers(1, 4, (4, width))
    keys = rng.permutation(width)
    n_rel = rel.sum(1).astype(np.int64)
    cutoffs = [10, 50, 100]
    got = picture_of_rows(_rows(scores, valid, rel, gain, keys, n_rel), cutoffs, ties,
                          top_items=True)
    ref = _reference(scores.tolist(), valid, rel.tolist(), gain.tolist(), keys.tolist(), ties,
                     cutoffs, n_rel.tolist(), width)
    assert got.picture.top_items.tolist() == [r["top"][:100] for r in ref]
    for f in FIELDS:
        np.testing.assert_allclose(getattr(got.picture, f).numpy(),
                                   np.array([r[f] for r in ref]), rtol=1e-12, err_msg=f)


def test_average_boundary_group_counted_over_the_full_row() -> None:
    # 2 relevant among 6 tied items, cut at 2: E[hits@2] = 2 * 2/6 whatever topk returns
    scores = np.zeros((1, 6), dtype=np.float32)
    rel = np.array([[0, 0, 0, 0, 1, 1]], dtype=np.float64)
    got = picture_of_rows(_rows(scores, np.ones((1, 6), bool), rel, rel, np.arange(6),
                                np.array([2])), [2], "average")
    assert got.picture.hits.tolist() == [[2 * (2 / 6)]]
    # P(first relevant at 1) = 2/6, at 2 = 4/6 * 2/5
    assert got.picture.first.item() == pytest.approx(2 / 6 + 4 / 6 * 2 / 5, rel=1e-15)


def test_graded_ideal_dcg() -> None:
    scores = np.array([[0.3, 0.2]], dtype=np.float64)
    rel = np.array([[1.0, 0.0]])
    gain = np.array([[1.0, 0.0]])
    rows = _rows(scores, np.ones((1, 2), bool), rel, gain, np.arange(2), np.array([2]))
    rows.ideal_gains = torch.tensor([[1.0, 3.0]], dtype=torch.float64)
    pic = picture_of_rows(rows, [1, 2, 0]).picture
    assert pic.idcg.tolist() == [[3.0, 3.0 + 1.0 / math.log2(3), 3.0 + 1.0 / math.log2(3)]]


def test_ranx_ties_refused() -> None:
    rows = _rows(np.zeros((1, 2)), np.ones((1, 2), bool), np.zeros((1, 2)), np.zeros((1, 2)),
                 np.arange(2), np.array([0]))
    with pytest.raises(ReceValError, match="ties='ranx'"):
        picture_of_rows(rows, [1], "ranx")
