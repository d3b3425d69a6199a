"""The torch engine: pictures of blocks of users from dense rows of scores, on any torch device.

A block is ``B`` users' lists as dense ``(B, W)`` rows (:class:`Rows`): scores, which entries are
in the list, their relevance and gain. One ``topk`` with ``K`` the largest cutoff finds the
candidates; the order among tied scores is then fixed exactly as the CPU engine fixes it
(the oracle's ``rank`` in tests/reference/oracle.py): stable sorts by (score descending, the tie
policy's keys, column ascending), the whole tie group at the ``K`` boundary chosen by the same
keys over the full row. Cumulative sums over the ``K`` ranks give the picture
(:class:`receval.picture.Picture`) at every cutoff. Under ``ties="average"`` each tie group's
size and relevant count come from the ranks inside the top ``K`` and, for the group that
straddles rank ``K``, from masked sums over the full row.

Every quantity follows :func:`receval.engines.fill_picture.build_picture` operation by operation,
so the numbers are the numba engine's, bit for bit, on every device: sums over ranks are added
in rank order (:func:`~receval.measures._arrays.ordered_scan`), never by a device's tree scan
or atomics, whose order changes the last bit.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import torch

from receval.engines.judge import relevant_rows, row_gains
from receval.engines.request import EngineRequest
from receval.exceptions import ReceValError
from receval.measures._arrays import adds_in_order, ordered_scan
from receval.measures.discounts import DISCOUNT_CODES, ideal_dcg, log2_ranks
from receval.options import Ties
from receval.picture import NO_CUTOFF, Picture

#: the tie policies this engine orders itself (``ranx`` needs numba's quicksort order)
TIE_POLICIES = tuple(t for t in typing.get_args(Ties) if t != "ranx")

F64 = torch.float64


@dataclass
class Rows:
    """``B`` users' lists as dense ``(B, W)`` rows on one device.

    Attributes:
        scores: ``(B, W)`` floating scores, finite where ``valid``.
        valid: ``(B, W)`` bool: the entry is in the user's list.
        rel: ``(B, W)`` float64, 1.0 for a relevant entry of the list, else 0.0.
        gain: ``(B, W)`` float64 nDCG gain (0.0 unless relevant and in the list).
        n_relevant: ``(B,)`` int64, L: relevant items of the user's truth (also those no
            column holds).
        ideal_gains: ``(B, G)`` float64 gains of the user's relevant truth items, padded with
            0.0, or ``None`` for binary gains.
        item_key: ``(W,)`` or ``(B, W)`` int64 keys ordering the items for ``ties="item"`` /
            ``"item_ascending"`` (``None``: the column order).
        gain_shift: ``(B,)`` float64 whole numbers, the exponent of the user's gain scale
            (gains are ``2**-gain_shift`` times their value), or ``None`` (all 0).
        n_list: ``(B,)`` int64, each row's count of ``valid`` entries where the caller knows
            it (``None``: counted from ``valid``).
    """

    scores: torch.Tensor
    valid: torch.Tensor
    rel: torch.Tensor
    gain: torch.Tensor
    n_relevant: torch.Tensor
    ideal_gains: torch.Tensor | None = None
    item_key: torch.Tensor | None = None
    gain_shift: torch.Tensor | None = None
    n_list: torch.Tensor | None = None


@dataclass
class BlockPicture:
    """A block's picture plus what only the engine sees: ties at the cutoffs."""

    picture: Picture
    #: ``(B, C)`` bool: ranks ``k`` and ``k + 1`` of the list hold equal scores
    tie_at_cut: torch.Tensor


def picture_of_rows(
    rows: Rows,
    cutoffs: list[int],
    ties: str = "stable",
    *,
    need_rprec: bool = False,
    top_items: bool = False,
    ap_over_hits: bool = False,
    top_k: int | None = None,
    discount: str = "log2",
    persistence: float = 0.9,
) -> BlockPicture:
    """The picture of a block of users at ``cutoffs`` (``0``: the whole list).

    ``top_items``: the picture's ``top_items`` holds each row's top columns in rank order
    (``-1`` past the list), ``top_k`` of them (default: as many as the largest cutoff needs);
    a ``top_k`` beyond the cutoffs ranks that far (the prefix sums are the same).

    Example:
        >>> import torch
        >>> rows = Rows(scores=torch.tensor([[0.5, 0.9, 0.5]]),
        ...             valid=torch.ones(1, 3, dtype=torch.bool),
        ...             rel=torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64),
        ...             gain=torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64),
        ...             n_relevant=torch.tensor([1]))
        >>> picture_of_rows(rows, [1, 2, 3]).picture.hits.tolist()
        [[0.0, 0.0, 1.0]]
        >>> picture_of_rows(rows, [2], "average").picture.hits.tolist()
        [[0.5]]
    """
    if ties not in TIE_POLICIES:
        raise ReceValError(
            f"option ties={ties!r} is not supported by the torch engine (one of "
            f"{', '.join(map(repr, TIE_POLICIES))}); use engine='numba'")
    scores, valid = rows.scores, rows.valid
    n_users, width = scores.shape
    device = scores.device
    n_rel = rows.n_relevant.to(device=device, dtype=torch.int64)
    s = torch.where(valid, scores, torch.tensor(-torch.inf, dtype=scores.dtype,
                                                device=device))
    n_list = valid.sum(dim=1) if rows.n_list is None else rows.n_list.to(device)
    want = max(cutoffs, default=0)
    if need_rprec and n_users:
        want = max(want, int(n_rel.max()))
    if top_k is not None:
        want = max(want, top_k)
    k_top = width if NO_CUTOFF in cutoffs else min(want, width)
    # the list itself is asked for: under average ties too, the group at rank K is cut in
    # the CPU engine's order (score, then column), not topk's arbitrary one
    exact = top_items or top_k is not None
    order, n_gt, n_eq = _top_order(s, rows, k_top, ties, exact=exact)
    ss = s.gather(1, order)
    r = rows.rel.gather(1, order)
    g = rows.gain.gather(1, order)
    log2_rank = _log2_table(k_top, str(device), discount, persistence).to(device)
    rank = torch.arange(1, k_top + 1, device=device, dtype=F64)
    groups = None
    if ties == "average":
        sums, groups = _average_sums(s, rows, ss, r, g, n_eq, log2_rank, rank)
    else:
        sums = _plain_sums(r, g, log2_rank, rank)
    # sample the prefix sums: index min(k, K), the whole list at K (nothing accrues past it)
    cols = torch.tensor([k_top if k == NO_CUTOFF else min(k, k_top) for k in cutoffs],
                        device=device, dtype=torch.int64)
    hits, ap_sum, dcg, first, rr_sum = (x.index_select(1, cols) for x in sums)
    at_r = torch.clamp(n_rel, max=k_top).unsqueeze(1)
    hits_at_r = sums[0].gather(1, at_r).squeeze(1)
    idcg = _ideal_dcg(rows, n_rel, cutoffs, device, discount, persistence)
    zeros = torch.zeros(n_users, dtype=F64, device=device)
    ones = torch.ones(n_users, dtype=F64, device=device)
    shift = (torch.zeros(n_users, dtype=F64, device=device)
             if rows.gain_shift is None else rows.gain_shift.to(device=device, dtype=F64))
    top = None
    if top_items or top_k is not None:
        inside = torch.arange(k_top, device=device).unsqueeze(0) < n_list.unsqueeze(1)
        listed = order
        if ties == "average":  # which tied items the list holds: by item key, not column
            listed = _top_order(s, rows, k_top, "item", exact=True)[0]
        top = torch.where(inside, listed, torch.full_like(listed, -1))
        if top_k is not None:  # exactly top_k columns: cut, or padded past a short row
            top = torch.nn.functional.pad(top[:, :top_k], (0, max(0, top_k - k_top)),
                                          value=-1)
    picture = Picture(
        cutoffs=torch.tensor(cutoffs, dtype=torch.int64, device=device),
        hits=hits, ap_sum=ap_sum, dcg=dcg, idcg=idcg, first=first, rr_sum=rr_sum,
        n_relevant=n_rel, n_list=n_list.to(torch.int64), hits_at_r=hits_at_r,
        sq_err=zeros, sq_scale=ones, abs_err=zeros.clone(), abs_scale=ones.clone(),
        n_pairs=torch.zeros(n_users, dtype=torch.int64, device=device), gain_shift=shift,
        top_items=top,
        ap_over_hits=(_ap_over_hits(sums[1], groups, cutoffs, k_top, n_list)
                      if ap_over_hits and groups is not None else None),
    )
    tie = _ties_at_cuts(ss, n_list, n_gt, n_eq, cutoffs, k_top, width)
    return BlockPicture(picture=picture, tie_at_cut=tie)


# --- the top K in the CPU engine's order ------------------------------------------------------


def _tie_keys(rows: Rows, ties: str, width: int) -> list[torch.Tensor]:
    """The keys after the score, most significant first, each sorted ascending (then the
    column), as the oracle's ``rank`` (tests/reference/oracle.py): under every policy but
    ``stable`` the last key is the item key (descending, ``item_ascending``: ascending), so
    that no other policy reads the column (input) order."""
    if ties in ("stable", "average"):
        return []  # the column order (average: the sums' order; its lists: _listed)
    key = rows.item_key
    if key is None:
        key = torch.arange(width, device=rows.scores.device)
    key = key.to(rows.scores.device).expand(rows.scores.shape)
    if ties == "item_ascending":
        return [key]
    if ties == "pessimistic":
        return [rows.rel, rows.gain, -key]
    if ties == "optimistic":
        return [-rows.rel, -rows.gain, -key]
    return [-key]  # item


def _lex_order(score: torch.Tensor, keys: list[torch.Tensor], col: torch.Tensor) -> torch.Tensor:
    """Positions of ``score`` sorted by (score descending, ``keys`` ascending, ``col``
    ascending), by stable sorts from the least significant key up."""
    # -0.0 + 0.0 is 0.0: the two zeros tie, as they compare equal (a radix sort would not)
    score = score + 0.0
    perm = torch.sort(col, dim=1, stable=True).indices
    for key in reversed(keys):
        perm = perm.gather(1, torch.sort(key.gather(1, perm), dim=1, stable=True).indices)
    return perm.gather(1, torch.sort(score.gather(1, perm), dim=1, stable=True,
                                     descending=True).indices)


def _top_order(
    s: torch.Tensor, rows: Rows, k_top: int, ties: str, *, exact: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The columns of each row's top ``k_top`` in rank order, plus how many scores are above
    the ``k_top``-th (``n_gt``) and equal to it (``n_eq``), over the full row (``exact``: the
    boundary group cut in order under ``average`` ties too)."""
    n_users, width = s.shape
    device = s.device
    keys = _tie_keys(rows, ties, width)
    if k_top == 0:
        empty = torch.zeros((n_users, 0), dtype=torch.int64, device=device)
        zero = torch.zeros(n_users, dtype=torch.int64, device=device)
        return empty, zero, zero
    if k_top == width:
        col = torch.arange(width, device=device).expand(n_users, width)
        order = _lex_order(s, keys, col)
        kth = s.gather(1, order[:, -1:])
        return order, (s > kth).sum(1), (s == kth).sum(1)
    # the top K + 1: where the (K + 1)-th score is below the K-th, the tie group at rank K
    # lies inside the top K and is counted there; only rows where it goes on past rank K
    # are counted over the full row
    vals, cand = torch.topk(s, k_top + 1, dim=1, sorted=True)
    kth, after = vals[:, k_top - 1 : k_top], vals[:, k_top]
    vals, cand = vals[:, :k_top], cand[:, :k_top]
    n_gt = (vals > kth).sum(1)  # every score above the K-th is in the top K
    n_eq = (vals == kth).sum(1)
    past = (after == kth.squeeze(1)).nonzero().squeeze(1)
    if past.numel():
        n_eq[past] = (s.index_select(0, past) >= kth.index_select(0, past)).sum(1) - n_gt[past]
    # topk returns arbitrary members of the tie group at the boundary: where the group does
    # not fit whole (and its members are not interchangeable), choose them over the full row
    spill = (n_gt + n_eq > k_top).nonzero().squeeze(1)
    if (ties != "average" or exact) and spill.numel():
        sub = s.index_select(0, spill)
        col = torch.arange(width, device=device).expand(len(spill), width)
        full = _lex_order(sub, [k.index_select(0, spill) for k in keys], col)
        cand = cand.index_copy(0, spill, full[:, :k_top])
    order = cand.gather(1, _lex_order(s.gather(1, cand), [k.gather(1, cand) for k in keys],
                                      cand))
    return order, n_gt, n_eq


# --- prefix sums ---------------------------------------------------------------------------------


def _prefix(x: torch.Tensor, *, exact: bool = False) -> torch.Tensor:
    """Cumulative sums along ranks (the last axis) with a leading 0 (index ``j``: the first
    ``j`` ranks), added in rank order on every device
    (:func:`~receval.measures._arrays.ordered_scan`); ``exact``: whole numbers, or one
    nonzero per row, which any order sums to the same bits."""
    total = torch.cumsum(x, dim=-1) if exact else ordered_scan(x)
    return torch.nn.functional.pad(total, (1, 0))


def _plain_sums(r: torch.Tensor, g: torch.Tensor, log2_rank: torch.Tensor,
                rank: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """hits, ap_sum, dcg, first, rr_sum of lists in rank order (every group one item)."""
    h = torch.cumsum(r, dim=1)
    first_hit = torch.where((r != 0) & (h == 1.0), 1.0, 0.0).to(F64)
    ap, dcg = _prefix(torch.stack([r * h / rank, g / log2_rank]))  # one scan for both
    return (
        torch.nn.functional.pad(h, (1, 0)),
        ap,
        dcg,
        _prefix(first_hit, exact=True),
        _prefix(first_hit * (1.0 / rank), exact=True),
    )


def _average_sums(s: torch.Tensor, rows: Rows, ss: torch.Tensor, r: torch.Tensor,
                  g: torch.Tensor, n_eq: torch.Tensor, log2_rank: torch.Tensor,
                  rank: torch.Tensor) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
    """The prefix sums' expectations over the orders of tied items (``build_picture``)."""
    n_users, k_top = ss.shape
    device = ss.device
    if k_top == 0:
        zero = torch.zeros((n_users, 1), dtype=F64, device=device)
        none = torch.zeros((n_users, 0), dtype=torch.int64, device=device)
        return (zero,) * 5, (none,) * 4
    pos = torch.arange(k_top, device=device).expand(n_users, k_top)
    new = torch.ones_like(ss, dtype=torch.bool)
    new[:, 1:] = ss[:, 1:] != ss[:, :-1]
    gid = torch.cumsum(new.to(torch.int64), dim=1) - 1
    start = torch.cummax(torch.where(new, pos, torch.zeros_like(pos)), dim=1).values
    # group size, relevant count and gain sum from the ranks inside the top K ...
    size = torch.zeros_like(pos).scatter_add_(1, gid, torch.ones_like(pos))
    n_rel = torch.zeros_like(pos).scatter_add_(1, gid, r.to(torch.int64))
    n, rr = size.gather(1, gid), n_rel.gather(1, gid)
    gs = _group_sums(g, new, start, n)
    # ... and for the group that straddles rank K, over the full row
    if k_top < s.shape[1]:
        last = ss[:, -1:]
        in_last = ss == last
        members = s == last
        n = torch.where(in_last, n_eq.unsqueeze(1), n)
        rr = torch.where(in_last, (rows.rel * members).sum(1, keepdim=True).to(torch.int64), rr)
        gs = torch.where(in_last, _members_sum(rows.gain, members), gs)
    crel = torch.nn.functional.pad(torch.cumsum(r, dim=1), (1, 0))  # integers: exact
    before = crel.gather(1, start)
    t = (pos - start).to(F64)
    nf, rf = n.to(F64), rr.to(F64)
    p_rel = rf / nf
    inner = torch.where(n > 1, t * (rf - 1.0) / (nf - 1.0).clamp(min=1.0), 0.0)
    term = torch.where(rr > 0, p_rel * (before + 1.0 + inner), 0.0)
    mean_gain = gs / nf
    in_first = (before == 0) & (rr > 0)
    factor = torch.where(in_first, (nf - rf - t) / (nf - t), 1.0)
    survive = torch.nn.functional.pad(ordered_scan(factor, "prod")[:, :-1], (1, 0), value=1.0)
    p_first = torch.where(in_first, survive * rf / (nf - t), 0.0)
    sums = (
        _prefix(p_rel),
        _prefix(term / rank),
        _prefix(mean_gain / log2_rank),
        _prefix(p_first),
        _prefix(p_first / rank),
    )
    return sums, (start, n, rr, before.to(torch.int64))


def _group_sums(g: torch.Tensor, new: torch.Tensor, start: torch.Tensor,
                size: torch.Tensor) -> torch.Tensor:
    """At each rank, the sum of ``g`` over its tie group (ranks ``start .. start + size - 1``),
    added in rank order: what ``scatter_add_`` gives on the CPU (index order); on a device
    its atomics add in any order, so there a segmented scan runs column by column."""
    if adds_in_order(g):
        gid = torch.cumsum(new.to(torch.int64), dim=1) - 1
        return torch.zeros_like(g).scatter_add_(1, gid, g).gather(1, gid)
    cols, flags = g.t().contiguous(), new.t().contiguous()
    run = torch.empty_like(cols)
    run[0] = cols[0]
    for j in range(1, cols.shape[0]):
        torch.where(flags[j], cols[j], run[j - 1] + cols[j], out=run[j])
    return run.t().gather(1, start + size - 1)


def _members_sum(values: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
    """``(B, 1)``: each row's sum of ``values`` over ``members``, added in column order (the
    CPU engine's); on a device the members are packed to the left first, so that the ordered
    scan runs over the widest group, not the whole row."""
    if adds_in_order(values):
        return torch.cumsum(values * members, dim=1)[:, -1:]
    count = members.sum(1)
    width = max(1, int(count.max()))
    row, col = members.nonzero(as_tuple=True)  # row-major: column order within a row
    slot = torch.arange(len(row), device=row.device) - (torch.cumsum(count, 0) - count)[row]
    packed = torch.zeros((values.shape[0], width), dtype=values.dtype, device=values.device)
    packed[row, slot] = values[row, col]
    return ordered_scan(packed)[:, -1:]


def _ap_over_hits(ap_sum: torch.Tensor, groups: tuple[torch.Tensor, ...], cutoffs: list[int],
                  k_top: int, n_list: torch.Tensor) -> torch.Tensor:
    """``(B, C)`` E[ap_sum / hits] where a cut falls inside a tie group (NaN elsewhere).

    The few cells inside a group go through the CPU engine's own
    :func:`~receval.engines.fill_picture.expected_ap_over_hits` (a sum over the hypergeometric
    law of the relevant items inside the cut), on the host.
    """
    from receval.engines.fill_picture import expected_ap_over_hits

    start, size, n_rel, before = groups
    n_users = ap_sum.shape[0]
    out = torch.full((n_users, len(cutoffs)), torch.nan, dtype=F64, device=ap_sum.device)
    if k_top == 0 or n_users == 0:
        return out
    ks = torch.tensor([k_top if k == NO_CUTOFF else min(k, k_top) for k in cutoffs],
                      device=ap_sum.device).unsqueeze(0)
    cut = torch.minimum(ks, n_list.unsqueeze(1))  # the CPU engine's cut: within the list
    at = (cut - 1).clamp(min=0)
    inside = (cut > 0) & (start.gather(1, at) + size.gather(1, at) > cut)
    cells = inside.nonzero().tolist()
    if not cells:
        return out
    host = [x.gather(1, at).cpu().numpy() for x in (start, size, n_rel, before)]
    prefix = ap_sum.cpu().numpy()
    cut_h = cut.expand(n_users, -1).cpu().numpy()
    for u, c in cells:
        out[u, c] = expected_ap_over_hits(prefix[u], int(cut_h[u, c]), int(host[0][u, c]),
                                          int(host[1][u, c]), int(host[2][u, c]),
                                          int(host[3][u, c]))
    return out


# --- the rest of the picture -------------------------------------------------------------------


@lru_cache(maxsize=32)
def _log2_table(n: int, device: str, discount: str = "log2",
                persistence: float = 0.9) -> torch.Tensor:
    """The discount's denominators (``log2(j + 2)`` for ranks ``j + 1 = 1..n`` by default):
    the CPU engine's own table (same bits)."""
    table = log2_ranks(max(n, 1), DISCOUNT_CODES[discount], persistence)
    return torch.from_numpy(table[:n].copy())


@lru_cache(maxsize=32)
def _binary_ideal(n: int, discount: str = "log2", persistence: float = 0.9) -> torch.Tensor:
    """Prefix sums of the ideal DCG of ``n`` relevant items of gain 1 (the CPU engine's)."""
    out = np.empty(n + 1)
    ideal_dcg(np.ones(n), log2_ranks(max(n, 1), DISCOUNT_CODES[discount], persistence), out)
    return torch.from_numpy(out)


def _ideal_dcg(rows: Rows, n_rel: torch.Tensor, cutoffs: list[int],
               device: torch.device, discount: str = "log2",
               persistence: float = 0.9) -> torch.Tensor:
    """``(B, C)`` ideal DCG at ``min(k, L)`` (``L`` for the whole list)."""
    n_users = n_rel.shape[0]
    if n_users == 0:
        return torch.zeros((0, len(cutoffs)), dtype=F64, device=device)
    ks = torch.tensor(cutoffs, dtype=torch.int64, device=device).unsqueeze(0)
    l_col = n_rel.unsqueeze(1)
    at = torch.where(ks == NO_CUTOFF, l_col, torch.minimum(ks, l_col))
    if rows.ideal_gains is None:
        table = _binary_ideal(int(n_rel.max()), discount, persistence).to(device)
        return table[at]
    gains = rows.ideal_gains.to(device=device, dtype=F64)
    ordered = torch.sort(gains, dim=1, descending=True).values
    width = ordered.shape[1]
    prefix = _prefix(ordered / _log2_table(width, str(device), discount,
                                           persistence).to(device))
    return prefix.gather(1, at.clamp(max=width))


def _ties_at_cuts(ss: torch.Tensor, n_list: torch.Tensor, n_gt: torch.Tensor,
                  n_eq: torch.Tensor, cutoffs: list[int], k_top: int,
                  width: int) -> torch.Tensor:
    """``(B, C)``: ranks ``k`` and ``k + 1`` of the list hold equal scores (``k < n_list``)."""
    n_users = ss.shape[0]
    out = torch.zeros((n_users, len(cutoffs)), dtype=torch.bool, device=ss.device)
    for c, k in enumerate(cutoffs):
        if k == NO_CUTOFF or k >= width:
            continue
        # k == K: the group at rank K goes on past it
        tied = ss[:, k - 1] == ss[:, k] if k < k_top else n_gt + n_eq > k_top
        out[:, c] = tied & (n_list > k)
    return out


def torch_device(device: Any = None) -> torch.device:
    """The device to run on: ``device`` as given, else CUDA when there is one, else the CPU.

    Example:
        >>> torch_device("cpu").type
        'cpu'
        >>> torch_device("gpu0")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: device 'gpu0' is not a torch device (e.g. 'cpu', \
'cuda', 'cuda:1')
    """
    if device is not None:
        try:
            return torch.device(device)
        except (RuntimeError, TypeError):
            raise ReceValError(f"device {device!r} is not a torch device (e.g. 'cpu', 'cuda', "
                               "'cuda:1')") from None
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


# --- long tables (``receval.evaluate(..., engine="torch")``) -----------------------------------

#: device bytes per entry of a block of lists (see :data:`receval.scores.BYTES_PER_ENTRY`)
BYTES_PER_ENTRY = 64
#: the memory budget of a block on the CPU (on CUDA: a quarter of the free memory)
CPU_BUDGET = 1 << 30


def run_kernel(request: EngineRequest, device: Any = None) -> tuple[Picture, Any]:
    """:func:`receval.engines.numba_engine.run_kernel` with the ranking on torch: the same
    request, the same picture (numpy arrays, on the host) and audit.

    The numba kernel judges the lists with no cutoff (the audit: duplicates, rows without
    truth, the per-user sums); the lists go to ``device`` as dense rows in blocks, where
    they are ranked and summed (:func:`picture_of_rows`).

    Example:
        >>> import numpy as np
        >>> from receval.engines.request import EngineRequest, Lists
        >>> from receval.options import Options
        >>> lists = Lists(np.array([0]), np.array([0, 1]), np.array([7]), np.array([1.0]),
        ...               np.array([0, 2]), np.array([5, 7]), np.array([0.9, 0.8]))
        >>> request = EngineRequest.plan(lists, Options(), np.array([1, 2]), {"hits"})
        >>> pic, audit = run_kernel(request, device="cpu")
        >>> pic.hits.tolist(), audit.n_predicted.tolist()
        ([[0.0, 1.0]], [2])
    """
    from receval.engines import numba_engine as ne

    base, audit = ne.run_kernel(request.judging_only())
    gain, discount, persistence = request.gain, request.discount, request.persistence
    fields, cutoffs, cut_ks = request.fields, request.cutoffs, request.cut_ks
    if (audit.dup_truth >= 0).any() or (audit.dup_predictions >= 0).any():
        # the caller raises, or drops the repeats and runs again: numba's picture will do
        return ne.run_kernel(request)
    if (base.gain_shift != 0).any():
        raise ReceValError("ratings this large (their gains overflow) need engine='numba', "
                           "which rescales the gains")
    where = torch_device(device)
    lists = _judge_lists(request)
    cut_list = [int(k) for k in cutoffs]
    n_users = len(request.lists.users)
    width = int(lists["lengths"].max(initial=0))
    budget = torch.cuda.mem_get_info(where)[0] // 4 if where.type == "cuda" else CPU_BUDGET
    step = max(1, budget // (BYTES_PER_ENTRY * max(width, 1)))
    per_cut: dict[str, list[np.ndarray]] = {name: [] for name in
                                            ("hits", "ap_sum", "dcg", "idcg", "first",
                                             "rr_sum", "ap_over_hits")}
    hits_at_r, n_list, tie_parts, top_parts = [], [], [], []
    judged_parts: list[tuple[np.ndarray, ...]] = []
    want_top = "top_items" in fields
    want_judged = any(name in fields for name in ne.JUDGED_FIELDS)
    top_k, max_list, tie_policy = request.top_k, request.max_list, request.ties
    for lo in range(0, n_users, step):
        hi = min(lo + step, n_users)
        rows = _list_rows(lists, lo, hi, where, gain)
        if max_list:
            rows = cut_rows(rows, max_list, tie_policy)
        # the judged items need the whole order of the list
        width_b = rows.scores.shape[1]
        block = picture_of_rows(rows, cut_list, tie_policy,
                                need_rprec=request.need_rprec,
                                ap_over_hits="ap_over_hits" in fields,
                                top_k=width_b if want_judged else top_k if want_top else None,
                                discount=discount, persistence=persistence)
        pic = block.picture
        if want_judged:
            judged_parts.append(_judged_in_order(pic.top_items, rows, lists, lo, hi, where))
            if want_top:
                pic.top_items = torch.nn.functional.pad(
                    pic.top_items[:, :top_k], (0, max(0, top_k - width_b)), value=-1)
        if want_top:  # columns are list positions: their item codes
            cols = pic.top_items
            assert rows.item_key is not None  # _list_rows always sets it
            codes = rows.item_key.gather(1, cols.clamp(min=0)) if cols.shape[1] else cols
            top_parts.append(torch.where(cols >= 0, codes, -1).cpu().numpy())
        for name in per_cut:
            value = getattr(pic, name)
            if value is not None:
                per_cut[name].append(value.cpu().numpy())
        hits_at_r.append(pic.hits_at_r.cpu().numpy())
        n_list.append(pic.n_list.cpu().numpy())
        tie_parts.append(block.tie_at_cut.cpu().numpy())
    cut_cols = [cut_list.index(int(k)) for k in cut_ks]
    n_cut = len(cut_list)
    named = {name: (np.concatenate(parts).reshape(n_users, n_cut)
                    if parts and name in fields else None)
             for name, parts in per_cut.items()}
    picture = Picture(
        cutoffs=np.asarray(cutoffs, dtype=np.int64), n_relevant=lists["n_relevant"],
        n_list=np.concatenate(n_list) if n_list else np.zeros(0, np.int64),
        hits_at_r=np.concatenate(hits_at_r) if hits_at_r else np.zeros(0),
        sq_err=base.sq_err, sq_scale=base.sq_scale, abs_err=base.abs_err,
        abs_scale=base.abs_scale, n_pairs=base.n_pairs, gain_shift=base.gain_shift,
        top_items=(np.concatenate(top_parts).reshape(n_users, top_k) if top_parts
                   else np.zeros((0, top_k), np.int64)) if want_top else None,
        n_judged=lists["n_truth"], **named)
    if want_judged:
        used = max((part[0].shape[1] for part in judged_parts), default=0)
        for name, j in zip(ne.JUDGED_FIELDS, range(3), strict=True):
            parts = [np.pad(part[j], ((0, 0), (0, used - part[j].shape[1])))
                     for part in judged_parts]
            setattr(picture, name, np.concatenate(parts) if parts
                    else np.zeros((0, used), np.int64 if j == 0 else np.float64))
        picture.max_rel_rating = lists["max_rel"]
    ties_at = (np.concatenate(tie_parts)[:, cut_cols] if tie_parts
               else np.zeros((0, len(cut_cols)), bool))
    audit.tie_at_cut = ties_at
    return picture, audit


def cut_rows(rows: Rows, max_list: int, ties: str) -> Rows:
    """The rows with each list cut to its top ``max_list`` (trec_eval ``-M``), in the order
    the picture ranks them."""
    if rows.scores.shape[1] <= max_list:
        return rows
    # average: the sums read the cut in column order, as the CPU engine cuts its list
    top = picture_of_rows(rows, [max_list], "stable" if ties == "average" else ties,
                          top_k=max_list).picture.top_items
    marks = torch.zeros(rows.valid.shape, dtype=torch.int8, device=rows.valid.device)
    marks.scatter_reduce_(1, top.clamp(min=0), (top >= 0).to(torch.int8), reduce="amax")
    keep = (marks > 0) & rows.valid
    return Rows(scores=rows.scores, valid=keep, rel=rows.rel * keep, gain=rows.gain * keep,
                n_relevant=rows.n_relevant, ideal_gains=rows.ideal_gains,
                item_key=rows.item_key, gain_shift=rows.gain_shift)


def _judged_in_order(order: torch.Tensor, rows: Rows, lists: dict[str, np.ndarray], lo: int,
                     hi: int, device: torch.device) -> tuple[np.ndarray, ...]:
    """:func:`judged_in_order` of a block of a long table's lists (host arrays)."""
    a, b = int(lists["starts"][lo]), int(lists["starts"][hi])
    width = rows.scores.shape[1]
    rating = torch.full((hi - lo, width), torch.nan, dtype=F64, device=device)
    owner = torch.from_numpy(lists["owner"][a:b] - lo).to(device)
    col = torch.from_numpy(np.arange(b - a) - (lists["starts"][lists["owner"][a:b]] - a))
    rating[owner, col.to(device)] = torch.from_numpy(lists["rating"][a:b]).to(device)
    return tuple(x.cpu().numpy() for x in judged_in_order(order, rows, rating))


def judged_in_order(order: torch.Tensor, rows: Rows,
                    rating: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Ranks (from 1), relevance and rating of the judged items of each list, in rank order
    (``Picture.judged_*``), from the columns of the whole list in rank order (``order``) and
    each column's truth rating (``rating``, NaN: not judged). Shared by long tables and score
    matrices.

    Example:
        >>> rows = Rows(scores=torch.tensor([[0.5, 0.9, 0.1]]),
        ...             valid=torch.ones(1, 3, dtype=torch.bool),
        ...             rel=torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64),
        ...             gain=torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64),
        ...             n_relevant=torch.tensor([1]))
        >>> rating = torch.tensor([[2.0, float("nan"), 5.0]], dtype=torch.float64)
        >>> [x.tolist() for x in judged_in_order(torch.tensor([[1, 0, 2]]), rows, rating)]
        [[[2, 3]], [[0.0, 1.0]], [[2.0, 5.0]]]
    """
    inside = order >= 0
    at = order.clamp(min=0)
    r = rating.gather(1, at)
    judged = inside & ~torch.isnan(r)
    # judged entries first, each part in rank order (a stable sort of the flags)
    pick = torch.sort((~judged).to(torch.int8), dim=1, stable=True).indices
    kept = judged.gather(1, pick)
    used = int(kept.sum(1).max()) if kept.numel() else 0
    pick, kept = pick[:, :used], kept[:, :used]
    ranks = torch.where(kept, pick + 1, 0)
    rel = torch.where(kept, rows.rel.gather(1, at).gather(1, pick), 0.0)
    rat = torch.where(kept, r.gather(1, pick), 0.0)
    return ranks, rel, rat


def _judge_lists(request: EngineRequest) -> dict[str, np.ndarray]:
    """Each user's kept list (flat, in input order) with relevance and gain; their truth's
    relevant count and gains (host arrays, no repeated (user, item) left)."""
    import pandas as pd

    users, t_indptr, t_items, t_values, p_indptr, p_items, p_scores = request.lists
    t_owner, t_pos = _slices(t_indptr[users], t_indptr[users + 1])
    p_owner, p_pos = _slices(p_indptr[users], p_indptr[users + 1])
    ti, tv = t_items[t_pos], t_values[t_pos]
    pi, ps = p_items[p_pos], p_scores[p_pos]
    relevant = relevant_rows(t_owner, tv, request.relevance_threshold, len(users))
    gains = row_gains(tv, relevant, request.gain)
    truth_index = pd.MultiIndex.from_arrays([t_owner, ti])
    at = truth_index.get_indexer(pd.MultiIndex.from_arrays([p_owner, pi]))
    keep = np.ones(len(pi), bool)
    if request.known_only:
        keep &= at >= 0
    if request.score_threshold is not None:
        keep &= ps >= np.float64(request.score_threshold)
    p_owner, pi, ps, at = p_owner[keep], pi[keep], ps[keep], at[keep]
    found = at >= 0
    rel = np.where(found, relevant[np.maximum(at, 0)], False).astype(np.float64)
    gain_of = np.where(found, gains[np.maximum(at, 0)], 0.0)
    lengths = np.bincount(p_owner, minlength=len(users))
    g_order = np.argsort(t_owner[relevant], kind="stable")
    max_rel = np.full(len(users), -np.inf)
    np.maximum.at(max_rel, t_owner[relevant], tv[relevant])
    return {
        "owner": p_owner, "items": pi, "scores": ps, "rel": rel, "gain": gain_of,
        # the judged items (a truth row) and their rating; NaN: not judged
        "rating": np.where(found, tv[np.maximum(at, 0)], np.nan),
        "n_truth": np.bincount(t_owner, minlength=len(users)).astype(np.int64),
        "max_rel": max_rel,
        "lengths": lengths, "starts": np.concatenate([[0], np.cumsum(lengths)]),
        "n_relevant": np.bincount(t_owner, weights=relevant.astype(np.float64),
                                  minlength=len(users)).astype(np.int64),
        "g_owner": t_owner[relevant][g_order], "g_values": gains[relevant][g_order],
    }


def _slices(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For CSR slices ``starts[i]:ends[i]``: each element's slice and position."""
    lengths = ends - starts
    owner = np.repeat(np.arange(len(starts)), lengths)
    offsets = np.cumsum(lengths) - lengths
    pos = np.arange(int(lengths.sum())) - np.repeat(offsets - starts, lengths)
    return owner, pos


def _list_rows(lists: dict[str, np.ndarray], lo: int, hi: int, device: torch.device,
               gain: str) -> Rows:
    """Users ``lo:hi``'s lists as dense rows (position in the list = column)."""
    a, b = int(lists["starts"][lo]), int(lists["starts"][hi])
    n = hi - lo
    width = max(1, int(lists["lengths"][lo:hi].max(initial=0)))
    owner = lists["owner"][a:b] - lo
    col = np.arange(b - a) - (lists["starts"][lists["owner"][a:b]] - a)
    ui = torch.from_numpy(owner).to(device)
    ci = torch.from_numpy(col).to(device)

    def dense(values: np.ndarray, dtype: torch.dtype, fill: float = 0.0) -> torch.Tensor:
        out = torch.full((n, width), fill, dtype=dtype, device=device)
        out[ui, ci] = torch.from_numpy(values[a:b]).to(device=device, dtype=dtype)
        return out

    valid = torch.zeros((n, width), dtype=torch.bool, device=device)
    valid[ui, ci] = True
    rel = dense(lists["rel"], F64)
    ideal = None
    if gain != "binary":
        g_owner = lists["g_owner"]
        sel = (g_owner >= lo) & (g_owner < hi)
        go = g_owner[sel] - lo
        g_start = np.searchsorted(go, np.arange(n))
        slot = np.arange(len(go)) - g_start[go]
        ideal = torch.zeros((n, max(1, int(slot.max(initial=-1)) + 1)), dtype=F64,
                            device=device)
        ideal[torch.from_numpy(go).to(device), torch.from_numpy(slot).to(device)] = (
            torch.from_numpy(lists["g_values"][sel]).to(device))
    return Rows(scores=dense(lists["scores"], F64), valid=valid, rel=rel,
                gain=rel if gain == "binary" else dense(lists["gain"], F64),
                n_relevant=torch.from_numpy(lists["n_relevant"][lo:hi]).to(device),
                ideal_gains=ideal, item_key=dense(lists["items"], torch.int64))
