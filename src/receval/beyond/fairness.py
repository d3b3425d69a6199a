"""Exposure fairness over item groups: group exposure under a browsing model, AWRF and
nDCG x AWRF (TREC Fair Ranking 2022), and rND / rKL / rRD (Yang & Stoyanovich, SSDBM 2017)
with exact normalisers.

Items carry an *alignment* (:mod:`receval.beyond.groups`): a distribution over the groups, a
zero row for an item of no known group (it adds no exposure, as the track's script skips
unknown pages, but keeps its rank). docs/fairness.md gives every formula and how the peer
code differs.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from receval.exceptions import ReceValError
from receval.parallel import block_bounds, run_blocks

_MIN_BLOCK_ROWS = 8_192
#: the track's maximum ranking length (its nDCG's ideal list is min(500, |R|) long)
TREC_DEPTH = 500


def discounts(kind: str, k: int, patience: float = 0.5) -> np.ndarray:
    """The weight of ranks ``1 .. k`` under a browsing model: ``"trec"`` 1/log2(max(r, 2))
    (TREC Fair 2022 ``common.discount``, here in float64), ``"log2"`` 1/log2(r + 1) (DCG),
    ``"rbp"`` patience^(r - 1) (Moffat & Zobel), ``"reciprocal"`` 1/r, ``"uniform"`` 1.

    Example:
        >>> discounts("trec", 3).tolist()
        [1.0, 1.0, 0.6309297535714575]
        >>> discounts("rbp", 3, 0.5).tolist()
        [1.0, 0.5, 0.25]
    """
    r = np.arange(1, k + 1, dtype=np.float64)
    if kind == "trec":
        return 1.0 / np.log2(np.maximum(r, 2.0))
    if kind == "log2":
        return 1.0 / np.log2(r + 1.0)
    if kind == "rbp":
        return np.power(float(patience), r - 1.0)
    if kind == "reciprocal":
        return 1.0 / r
    if kind == "uniform":
        return np.ones(k, dtype=np.float64)
    raise ReceValError(f"unknown exposure discount {kind!r}; known: 'trec', 'log2', 'rbp', "
                       f"'reciprocal', 'uniform'")


def target_shares(target: object, align: np.ndarray, catalogue: np.ndarray,
                  names: tuple[object, ...]) -> np.ndarray:
    """The target distribution over the groups: ``"uniform"``, ``"catalogue"`` (the groups'
    shares of the catalogue's alignment mass) or given weights (a dict or pairs group ->
    weight; groups left out get 0), normalised to sum 1.

    Example:
        >>> align = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
        >>> target_shares("catalogue", align, np.array([True, True, False]), ("a", "b")).tolist()
        [0.75, 0.25]
        >>> target_shares({"b": 3, "a": 1}, align, np.ones(3, bool), ("a", "b")).tolist()
        [0.25, 0.75]
    """
    g = len(names)
    if g == 0:
        raise ReceValError("no item has a group: check item_groups= / item_features=")
    if isinstance(target, str):
        if target == "uniform":
            return np.full(g, 1.0 / g)
        if target == "catalogue":
            # summed per distinct alignment value (integer counts, correctly rounded): the
            # same bits whatever the items' order (a Spark partition's item space)
            chosen = align[np.asarray(catalogue, dtype=bool)]
            mass = np.array([math.fsum(float(a) * int((column == a).sum())
                                       for a in np.unique(column[column > 0]))
                             for column in chosen.T])
            total = math.fsum(mass.tolist())
            if total <= 0:
                raise ReceValError("fairness_target='catalogue': no catalogue item has a group")
            return mass / total
        raise ReceValError(f"fairness_target={target!r} is not 'uniform', 'catalogue' or a dict "
                           f"group -> weight")
    pairs = dict(target.items()) if hasattr(target, "items") else dict(target)  # type: ignore
    unknown = [k for k in pairs if k not in names]
    if unknown:
        raise ReceValError(f"fairness_target names group {unknown[0]!r}, which no item has "
                           f"({len(unknown)} unknown groups)")
    w = np.array([float(pairs.get(n, 0.0)) for n in names])
    if not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ReceValError("fairness_target weights must be finite, >= 0, not all 0")
    return w / w.sum()


# --- AWRF and the track's nDCG ----------------------------------------------------------------


@numba.njit(cache=True, nogil=True)
def _awrf_block(block: int, lo: int, hi: int, top: np.ndarray, align: np.ndarray,
                disc: np.ndarray, target: np.ndarray, out: np.ndarray) -> None:
    g = align.shape[1]
    e = np.zeros(g)
    for r in range(lo, hi):
        e[:] = 0.0
        for j in range(top.shape[1]):
            code = top[r, j]
            if code < 0:
                continue
            for c in range(g):
                e[c] += disc[j] * align[code, c]
        s = e.sum()
        if s <= 0.0:
            out[r] = np.nan
            continue
        js = 0.0
        for c in range(g):
            p = e[c] / s
            t = target[c]
            m = 0.5 * (p + t)
            if p > 0.0:
                js += p * math.log(p / m)
            if t > 0.0:
                js += t * math.log(t / m)
        out[r] = 1.0 - 0.5 * js


def awrf(top: np.ndarray, align: np.ndarray, disc: np.ndarray, target: np.ndarray
         ) -> np.ndarray:
    """Per row, AWRF = 1 - JSD(p, t): ``p`` the row's discounted group exposure
    ``sum_r disc[r] align[item_r]`` normalised, ``t`` the target, JSD the Jensen-Shannon
    divergence with natural logarithms (the track's ``1 - jensenshannon(p, t) ** 2``). NaN:
    no listed item has a group.

    Example:
        >>> align = np.array([[1.0, 0.0], [0.0, 1.0]])
        >>> awrf(np.array([[0, 1], [0, 0], [-1, -1]]), align, discounts("trec", 2),
        ...      np.array([0.5, 0.5])).tolist()
        [1.0, 0.7842384456611644, nan]
    """
    out = np.empty(top.shape[0])
    run_blocks(_awrf_block, block_bounds(top.shape[0], _MIN_BLOCK_ROWS), top,
               np.ascontiguousarray(align), np.ascontiguousarray(disc[:top.shape[1]]),
               np.ascontiguousarray(target, dtype=np.float64), out)
    return out


@numba.njit(cache=True, nogil=True)
def _ndcg_block(block: int, lo: int, hi: int, top: np.ndarray, t_ptr: np.ndarray,
                t_items: np.ndarray, disc: np.ndarray, n_items: int, depth: int,
                out: np.ndarray) -> None:
    mark = np.full(n_items, -1, dtype=np.int64)
    for r in range(lo, hi):
        n_rel = 0
        for t in range(t_ptr[r], t_ptr[r + 1]):
            if mark[t_items[t]] != r:
                mark[t_items[t]] = r
                n_rel += 1
        if n_rel == 0:
            out[r] = np.nan
            continue
        dcg = 0.0
        for j in range(top.shape[1]):
            code = top[r, j]
            if code >= 0 and mark[code] == r:
                dcg += disc[j]
        ideal = 0.0
        for j in range(min(n_rel, depth)):
            ideal += disc[j]
        out[r] = dcg / ideal


def trec_ndcg(top: np.ndarray, truth: tuple[np.ndarray, np.ndarray], n_items: int
              ) -> np.ndarray:
    """The track's nDCG per row: binary gain, discount 1/log2(max(r, 2)), the ideal DCG over
    ``min(500, |R|)`` ranks whatever the list's length (so a top-10 list of a user with 50
    relevant items stays below 1); NaN without relevant items.

    Example:
        >>> trec_ndcg(np.array([[0, 1], [1, -1]]), (np.array([0, 1, 3]), np.array([1, 0, 2])),
        ...           3).tolist()
        [1.0, 0.0]
    """
    width = max(top.shape[1], TREC_DEPTH)
    disc = discounts("trec", width)
    out = np.empty(top.shape[0])
    run_blocks(_ndcg_block, block_bounds(top.shape[0], _MIN_BLOCK_ROWS), top,
               truth[0], truth[1], disc, n_items, TREC_DEPTH, out)
    return out


# --- group exposure pooled over the lists ------------------------------------------------------


@numba.njit(cache=True)
def _rank_counts(top: np.ndarray, out: np.ndarray) -> None:
    # integers: one pass, no temporary the size of the lists
    for r in range(top.shape[0]):
        for j in range(top.shape[1]):
            code = top[r, j]
            if code >= 0:
                out[code, j] += 1


def rank_counts(top: np.ndarray, n_items: int) -> np.ndarray:
    """``(n_items, K)`` int64: how many lists hold each item at each rank (integers: counts
    of lists split anywhere add up to the same matrix).

    Example:
        >>> rank_counts(np.array([[0, 1], [1, -1]]), 3).tolist()
        [[1, 0], [1, 1], [0, 0]]
    """
    arr = np.ascontiguousarray(top, dtype=np.int64)
    out = np.zeros((n_items, arr.shape[1]), dtype=np.int64)
    _rank_counts(arr, out)
    return out


def group_exposure_from_counts(counts: np.ndarray, align: np.ndarray,
                               disc: np.ndarray) -> np.ndarray:
    """Each group's share of all exposure from the lists' ``counts`` per item and rank
    (:func:`rank_counts`): for each group and each distinct alignment value ``a`` (ascending),
    the integer count of slots per rank of items aligned ``a``, times the discounts, times
    ``a``, added by :func:`math.fsum` (correctly rounded): the same bits whatever the items'
    order or the lists' split, so a merge of partitions' counts gives the local number.

    Example:
        >>> group_exposure_from_counts(np.array([[1, 0], [1, 1]]),
        ...                            np.array([[1.0, 0.0], [0.5, 0.5]]),
        ...                            np.array([1.0, 0.5])).tolist()
        [0.7, 0.3]
    """
    counts = np.asarray(counts, dtype=np.int64)
    d = np.asarray(disc, dtype=np.float64)[:counts.shape[1]]
    mass = np.zeros(align.shape[1])
    for g in range(align.shape[1]):
        column = align[:, g]
        terms = []
        for a in np.unique(column[column > 0]):
            per_rank = counts[column == a].sum(axis=0)  # int64: exact
            terms.append(float(a) * math.fsum((per_rank * d[:len(per_rank)]).tolist()))
        mass[g] = math.fsum(terms)
    total = math.fsum(mass.tolist())
    return mass / total if total > 0 else np.full(align.shape[1], np.nan)


def group_exposure(top: np.ndarray, align: np.ndarray, disc: np.ndarray) -> np.ndarray:
    """Each group's share of all exposure: ``sum_i exposure(i) align[i, g]``, normalised
    (NaN when no listed item has a group); through :func:`group_exposure_from_counts`, the
    same bits as the merged counts of any split of the lists.

    Example:
        >>> group_exposure(np.array([[0, 1], [1, -1]]), np.array([[1.0, 0.0], [0.5, 0.5]]),
        ...                np.array([1.0, 0.5])).tolist()
        [0.7, 0.3]
    """
    return group_exposure_from_counts(rank_counts(top, align.shape[0]), align, disc)


def exposure_gap(shares: np.ndarray, target: np.ndarray) -> float:
    """Total variation distance ``1/2 sum_g |share_g - target_g|`` (0: exposure as the
    target; 1: disjoint).

    Example:
        >>> round(exposure_gap(np.array([0.7, 0.3]), np.array([0.5, 0.5])), 12)
        0.2
    """
    return float(0.5 * np.abs(shares - target).sum())


# --- rND, rKL, rRD --------------------------------------------------------------------------

_KINDS = {"rND": 0, "rKL": 1, "rRD": 2}


@numba.njit(cache=True)
def _term(kind: int, i: int, c: int, q: float, ratio: float) -> float:
    # the prefix term of the top-i items holding c protected ones, before the 1/log2(i)
    if kind == 0:
        return abs(c / i - q)
    if kind == 1:
        p = c / i
        s = 0.0
        if p > 0.0:
            s += p * math.log(p / q)
        if p < 1.0:
            s += (1.0 - p) * math.log((1.0 - p) / (1.0 - q))
        return s
    frac = 0.0 if c == 0 or c == i else c / (i - c)
    return abs(frac - ratio)


@numba.njit(cache=True)
def _targets(kind: int, n: int, p: int, share: float) -> tuple[float, float]:
    # (q, ratio): share < 0 means the population is the list itself
    q = p / n if share < 0.0 else share
    ratio = (0.0 if p == 0 or p == n else p / (n - p)) if share < 0.0 else share / (1.0 - share)
    return q, ratio


@numba.njit(cache=True)
def _max_unfairness(kind: int, n: int, p: int, step: int, share: float) -> float:
    # exact maximum over every arrangement of p protected among n ranks: a dynamic
    # programme over (rank, protected so far); each arrangement is a lattice path
    q, ratio = _targets(kind, n, p, share)
    neg = -1.0
    best = np.full(p + 1, neg)
    best[0] = 0.0
    for i in range(1, n + 1):
        lo = max(0, p - (n - i))
        hi = min(i, p)
        new = np.full(p + 1, neg)
        for c in range(lo, hi + 1):
            v = best[c] if best[c] >= 0.0 else neg
            if c > 0 and best[c - 1] > v:
                v = best[c - 1]
            if v < 0.0:
                continue
            if i % step == 0 and i >= 2:
                v += _term(kind, i, c, q, ratio) * (1.0 / math.log2(i))
            new[c] = v
        best = new
    return best[p]


@numba.njit(cache=True, nogil=True)
def _count_block(block: int, lo: int, hi: int, top: np.ndarray, flag: np.ndarray,
                 out: np.ndarray) -> None:
    for r in range(lo, hi):
        n = 0
        p = 0
        for j in range(top.shape[1]):
            code = top[r, j]
            if code >= 0:
                n += 1
                p += flag[code]
        out[r] = n * (top.shape[1] + 1) + p


@numba.njit(cache=True, nogil=True)
def _rank_block(block: int, lo: int, hi: int, kind: int, top: np.ndarray, flag: np.ndarray,
                counts: np.ndarray, step: int, share: float, z: np.ndarray,
                inv_log: np.ndarray, out: np.ndarray) -> None:
    for r in range(lo, hi):
        n, p = divmod(counts[r], top.shape[1] + 1)  # _count_block's key of the row
        zz = z[n, p]
        if not zz > 0.0:
            out[r] = np.nan
            continue
        q, ratio = _targets(kind, n, p, share)
        c = 0
        i = 0
        s = 0.0
        for j in range(top.shape[1]):
            code = top[r, j]
            if code < 0:
                continue
            i += 1
            c += flag[code]
            if i % step == 0 and i >= 2:
                s += _term(kind, i, c, q, ratio) * inv_log[i]
        out[r] = s / zz


def ranked_fairness(kind: str, top: np.ndarray, protected: np.ndarray, *, step: int = 10,
                    share: float | None = None) -> np.ndarray:
    """rND, rKL or rRD per row (Yang & Stoyanovich 2017): over the cut points ``i`` = step,
    2 step, ... up to the list's length ``N`` (``i >= 2``),
    ``sum_i f(i) / log2(i)`` divided by its maximum over every arrangement of the list's
    items (exact, by dynamic programming, O(N^2) per distinct (N, protected count)). ``f``:
    rND ``|c_i/i - q|``, rKL ``KL((c_i/i, 1 - c_i/i) || (q, 1 - q))`` (natural log), rRD
    ``|c_i/(i - c_i) - P/(N - P)|`` (a ratio with a zero side is 0), with ``c_i`` the
    protected items in the top ``i``; ``q`` is the list's protected share ``P/N`` or the
    given population ``share``. NaN where the maximum is 0.

    Example:
        >>> flag = np.array([1, 0, 0, 0])
        >>> ranked_fairness("rND", np.array([[0, 1, 2, 3], [1, 2, 3, 0]]), flag, step=1).tolist()
        [0.7420981285103057, 1.0]
    """
    if kind not in _KINDS:
        raise ReceValError(f"unknown ranked fairness measure {kind!r}")
    if step < 1:
        raise ReceValError(f"fairness_step must be a positive integer; got {step}")
    s = -1.0 if share is None else float(share)
    if share is not None and not 0.0 < s < 1.0:
        raise ReceValError(f"the protected group's population share is {s}; rND/rKL/rRD "
                           f"need it in (0, 1)")
    flag = np.ascontiguousarray(protected, dtype=np.int64)
    top = np.ascontiguousarray(top, dtype=np.int64)
    width = top.shape[1]
    counts = np.empty(top.shape[0], dtype=np.int64)  # n (width + 1) + p per row
    run_blocks(_count_block, block_bounds(top.shape[0], _MIN_BLOCK_ROWS), top, flag, counts)
    z = np.zeros((width + 1, width + 1))
    for key in np.unique(counts).tolist():
        nn, pp = divmod(key, width + 1)
        if nn == 0:  # an empty list: undefined
            continue
        z[nn, pp] = _max_unfairness(_KINDS[kind], nn, pp, step, s)
    inv_log = np.zeros(width + 1)
    inv_log[2:] = 1.0 / np.log2(np.arange(2, width + 1, dtype=np.float64))
    out = np.empty(top.shape[0])
    run_blocks(_rank_block, block_bounds(top.shape[0], _MIN_BLOCK_ROWS), _KINDS[kind],
               top, flag, counts, step, s, z, inv_log, out)
    return out
