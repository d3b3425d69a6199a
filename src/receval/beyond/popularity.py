"""Popularity bias: ARP, APLT, ACLT (per user) and PopREO, PopRSP (over all users).

Definitions (Abdollahpouri et al., "Managing popularity bias in recommender systems with
personalized re-ranking", FLAIRS 2019: ARP, APLT; "Controlling popularity bias in
learning-to-rank recommendation", RecSys 2017: ACLT; Zhu et al., "Measuring and mitigating
item under-recommendation bias", SIGIR 2021: RSP, REO; as implemented by Elliot):

- ARP@k (u) = mean over i in S_u,k of pop(i); APLT@k (u) = |S_u,k ∩ T| / |S_u,k|;
  ACLT@k (u) = |S_u,k ∩ T|; T the long tail. MeanPopRank@k (u) = mean over i in S_u,k of
  q(i), the popularity rank as a quantile (LensKit ``MeanPopRank``: 1 the most popular, 0 an
  item absent from training).
- The short head H: items by training popularity, descending (ties: lower code first), the
  shortest prefix holding ``share`` of all popularity; T = every other item (Elliot
  ``pop_ratio=0.8``).
- PopRSP@k = std / mean over g in {H, T} of P_g = Σ_u |S_u,k ∩ g| / Σ_u |(g ∩ I) \\ train_u|.
- PopREO@k = std / mean over g of P_g = Σ_u |S_u,k ∩ g ∩ R_u| / Σ_u |(g ∩ R_u) \\ train_u|,
  R_u the user's relevant items. std is the population standard deviation (numpy's).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from receval.beyond._lists import row_means, row_sums
from receval.parallel import block_bounds, run_blocks


def short_head(popularity: np.ndarray, share: float = 0.8) -> np.ndarray:
    """The short head as a bool mask: the most popular items, descending (ties by code),
    up to and including the first whose cumulative popularity reaches ``share`` of the total.

    Example:
        >>> short_head(np.array([1, 6, 3, 0])).tolist()
        [False, True, True, False]
    """
    pop = np.asarray(popularity, dtype=np.int64)
    order = np.lexsort((np.arange(len(pop)), -pop))
    cum = np.cumsum(pop[order])
    head = np.zeros(len(pop), dtype=bool)
    total = int(cum[-1]) if len(cum) else 0
    if total == 0:
        return head
    # integer comparison when share is a simple ratio avoids 0.8 * total rounding
    n_head = int(np.searchsorted(cum, share * total - 1e-9 * total, side="left")) + 1
    head[order[:n_head]] = True
    return head


def tie_across(popularity: np.ndarray, side: np.ndarray, rest: np.ndarray) -> int | None:
    """A popularity held by an item of ``side`` (the short head, or RecBole's tail) and by an
    item of ``rest`` (the items on the other side), or None: where the cut goes through items
    of equal popularity, which of them fall on each side follows their codes (the order in
    which the items first appear), not the data.

    Example:
        >>> pop = np.array([6, 2, 2])
        >>> head = short_head(pop)
        >>> head.tolist(), tie_across(pop, head, ~head)
        ([True, True, False], 2)
        >>> tie_across(np.array([6, 3, 1]), np.array([True, False, False]),
        ...            np.array([False, True, True])) is None
        True
    """
    pop = np.asarray(popularity, dtype=np.int64)
    chosen, other = pop[side], pop[rest]
    both = chosen[np.isin(chosen, other)]
    return int(both[0]) if len(both) else None


def tail_by_ratio(popularity: np.ndarray, ratio: float) -> np.ndarray:
    """RecBole's long tail (``TailPercentage``, ``tail_ratio``) as a bool mask over the items
    with training popularity > 0: above 1, those with popularity <= ``ratio``; in (0, 1],
    the ``max(floor(ratio n), 1)`` least popular of those n items (ties: lower code first).

    Example:
        >>> pop = np.array([5, 1, 0, 2, 1])
        >>> tail_by_ratio(pop, 2).tolist(), tail_by_ratio(pop, 0.5).tolist()
        ([False, True, False, True, True], [False, True, False, False, True])
    """
    pop = np.asarray(popularity, dtype=np.int64)
    trained = np.flatnonzero(pop > 0)
    tail = np.zeros(len(pop), dtype=bool)
    if ratio > 1:
        tail[trained] = pop[trained] <= ratio
        return tail
    order = trained[np.lexsort((trained, pop[trained]))]
    tail[order[:max(int(len(trained) * ratio), 1)]] = True
    return tail


def popularity_quantile(popularity: np.ndarray) -> np.ndarray:
    """Each item's popularity rank as a quantile (LensKit ``MeanPopRank``): among the items
    with popularity > 0, the average rank in ascending order (ties share it) over their
    number, so the most popular item is 1; an item absent from training is 0.

    Example:
        >>> popularity_quantile(np.array([5, 0, 2, 2])).tolist()
        [1.0, 0.0, 0.5, 0.5]
    """
    pop = np.asarray(popularity, dtype=np.int64)
    out = np.zeros(len(pop), dtype=np.float64)
    trained = pop > 0
    n = int(trained.sum())
    if n:
        from scipy.stats import rankdata  # scipy.stats takes ~0.4 s to import: on use

        out[trained] = rankdata(pop[trained], method="average") / n
    return out


def arp(top: np.ndarray, popularity: np.ndarray, *, normalize_by: int | None = None,
        cold: str = "zero") -> np.ndarray:
    """Per user, the mean training popularity of the listed items, divided by
    ``normalize_by`` when given (RecTools ``normalize=True``: training rows; Evidently: the
    largest popularity); cold items count 0 (``cold="zero"``) or are skipped (``"skip"``);
    NaN for an empty list.

    Example:
        >>> arp(np.array([[0, 1], [-1, -1]]), np.array([3, 0])).tolist()
        [1.5, nan]
    """
    values = np.asarray(popularity, dtype=np.float64)
    if normalize_by:
        values = values / normalize_by
    if cold == "skip":
        values = np.where(np.asarray(popularity) > 0, values, np.nan)
    return row_means(top, values)


def aplt(top: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """Per user, the share of listed items in the long tail; NaN for an empty list.

    Example:
        >>> aplt(np.array([[0, 1], [1, -1]]), np.array([False, True])).tolist()
        [0.5, 1.0]
    """
    return row_means(top, tail.astype(np.float64))


def aclt(top: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """Per user, the number of listed items in the long tail.

    Example:
        >>> aclt(np.array([[0, 1], [-1, -1]]), np.array([False, True])).tolist()
        [1.0, 0.0]
    """
    return row_sums(top, tail.astype(np.float64))[0]


@numba.njit(cache=True, nogil=True)
def _group_counts_block(block: int, lo: int, hi: int, top: np.ndarray, head: np.ndarray,
                        pool: np.ndarray, r_ptr: np.ndarray, r_items: np.ndarray,
                        t_ptr: np.ndarray, t_items: np.ndarray, use_truth: bool,
                        mark: np.ndarray, out: np.ndarray) -> None:
    # out[block] = (num_head, num_tail, den_head, den_tail) as integer counts
    n_items = head.shape[0]
    seen = np.zeros(n_items, dtype=np.int64)  # per block: row + 1 of the last marking
    for r in range(lo, hi):
        tag = r + 1
        # the relevant items of the row (REO) or nothing (RSP)
        if use_truth:
            for p in range(r_ptr[r], r_ptr[r + 1]):
                seen[r_items[p]] = tag
        for j in range(top.shape[1]):
            c = top[r, j]
            if c < 0:
                continue
            if use_truth and seen[c] != tag:
                continue
            if head[c]:
                out[block, 0] += 1
            else:
                out[block, 1] += 1
        # the denominator: pool items (RSP: the catalogue; REO: the relevant items) minus
        # the user's training items
        if use_truth:
            for p in range(r_ptr[r], r_ptr[r + 1]):
                mark[r_items[p]] = 0
            for p in range(t_ptr[r], t_ptr[r + 1]):
                mark[t_items[p]] = tag
            for p in range(r_ptr[r], r_ptr[r + 1]):
                c = r_items[p]
                if mark[c] == tag:
                    continue
                mark[c] = tag  # a relevant item listed twice counts once
                if head[c]:
                    out[block, 2] += 1
                else:
                    out[block, 3] += 1
        else:
            dh = 0
            dt = 0
            for p in range(t_ptr[r], t_ptr[r + 1]):
                c = t_items[p]
                if pool[c]:
                    if head[c]:
                        dh += 1
                    else:
                        dt += 1
            out[block, 2] -= dh
            out[block, 3] -= dt


def _std_over_mean(num: np.ndarray, den: np.ndarray) -> float:
    if (den <= 0).any():
        return math.nan
    p = num / den
    mean = float(p.mean())
    return float(p.std()) / mean if mean > 0 else math.nan


def _group_totals(top: np.ndarray, head: np.ndarray, pool: np.ndarray,
                  r: tuple[np.ndarray, np.ndarray], t: tuple[np.ndarray, np.ndarray],
                  use_truth: bool) -> np.ndarray:
    bounds = block_bounds(top.shape[0], 8_192)
    out = np.zeros((max(len(bounds), 1), 4), dtype=np.int64)
    marks = [np.zeros(len(head), dtype=np.int64) for _ in bounds]

    def one(block: int, lo: int, hi: int) -> None:
        _group_counts_block(block, lo, hi, top, head, pool, r[0], r[1], t[0], t[1], use_truth,
                            marks[block], out)

    run_blocks(one, bounds)
    return out.sum(axis=0)


def pop_rsp(top: np.ndarray, head: np.ndarray, catalogue: np.ndarray,
            train: tuple[np.ndarray, np.ndarray]) -> float:
    """PopRSP@k: std / mean over {head, tail} of recommendations of the group / the group's
    catalogue items the users have not interacted with. ``train`` is the per-row CSR of
    training items. 0 means equal rates; NaN when a group has no candidate.

    Example:
        >>> top = np.array([[0, 1], [0, 2]])
        >>> head = np.array([True, False, False])
        >>> train = (np.array([0, 0, 1]), np.array([2]))
        >>> round(pop_rsp(top, head, np.ones(3, bool), train), 6)
        0.2
    """
    n_rows = top.shape[0]
    tot = _group_totals(top, head, catalogue, (np.zeros(n_rows + 1, np.int64),
                                               np.zeros(0, np.int64)), train, False)
    pool_h = int((catalogue & head).sum())
    pool_t = int((catalogue & ~head).sum())
    den = np.array([pool_h * n_rows + tot[2], pool_t * n_rows + tot[3]], dtype=np.float64)
    return _std_over_mean(tot[:2].astype(np.float64), den)


def pop_reo(top: np.ndarray, head: np.ndarray, relevant: tuple[np.ndarray, np.ndarray],
            train: tuple[np.ndarray, np.ndarray]) -> float:
    """PopREO@k: std / mean over {head, tail} of relevant recommended items of the group /
    the group's relevant items not in the user's training items. NaN when a group has none.

    Example:
        >>> top = np.array([[0, 1], [0, 2]])
        >>> head = np.array([True, False, False])
        >>> rel = (np.array([0, 2, 4]), np.array([0, 1, 1, 2]))
        >>> no_train = (np.array([0, 0, 0]), np.zeros(0, dtype=np.int64))
        >>> round(pop_reo(top, head, rel, no_train), 6)
        0.2
    """
    tot = _group_totals(top, head, np.ones(len(head), bool), relevant, train, True)
    return _std_over_mean(tot[:2].astype(np.float64), tot[2:].astype(np.float64))
