"""Expected exposure (Diaz, Mitra, Ekstrand, Biega & Carterette, CIKM 2020) of deterministic
lists: each item's exposure under a browsing model against the target exposure of an ideal
stochastic ranking that shuffles items of equal relevance, as ``diazf/expeval`` computes it
(``exposure.py``, ``metrics.py``) in its default retrieval setting (relevance binary: the
user's relevant items).

For one list (ranks ``i = 0, 1, ...``), ``m`` relevant items:

- run exposure ``e_i = p^i`` (``"rbp"``) or ``p^i (1 - u)^(relevant items above i)``
  (``"gerr"``, expeval's default, ``p = u = 0.5``);
- target exposure of each relevant item ``t = (1 - pp^m) / (m (1 - pp))`` with
  ``pp = p (1 - u)`` (gerr) or ``p`` (rbp); 0 for the others;
- EE-D (disparity) ``sum_d e_d^2``, EE-R (relevance) ``sum_d t_d e_d``, EE-L (difference,
  the loss) ``sum_d (t_d - e_d)^2`` over the listed and relevant items;
- normalised as expeval prints them: EE-D / (1 / (1 - p^2)), EE-L / (m t^2 + 1 / (1 - p'))
  with ``p' = p u`` (gerr) or ``p`` (rbp), and EE-R / (m t^2). Where receval differs:
  expeval prints EE-R = 1 for every query whose judged items share one relevance level
  (always under binary relevance: its bounds collapse to 0 and it falls back to its
  default); receval divides by the upper bound expeval computes before that fallback.
"""

from __future__ import annotations

import numba
import numpy as np

from receval.exceptions import ReceValError
from receval.parallel import block_bounds, run_blocks

_MIN_BLOCK_ROWS = 8_192
#: output columns of :func:`expected_exposure`
COLUMNS = ("EE_D", "EE_R", "EE_L", "EE_D_norm", "EE_R_norm", "EE_L_norm")


def expected_exposure(top: np.ndarray, truth: tuple[np.ndarray, np.ndarray], n_items: int, *,
                      model: str = "gerr", patience: float = 0.5, utility: float = 0.5
                      ) -> np.ndarray:
    """``(U, 6)``: per row EE-D, EE-R, EE-L raw, then normalised (:data:`COLUMNS`); NaN
    without relevant or listed items.

    Example:
        >>> ee = expected_exposure(np.array([[0, 1]]), (np.array([0, 1]), np.array([0])), 2)
        >>> ee.round(6).tolist()
        [[1.0625, 1.0, 0.0625, 0.796875, 1.0, 0.026786]]
    """
    # one list per user is the sampled case with one sample: one kernel, one definition
    return expected_exposure_sampled(np.asarray(top)[:, None, :], truth, n_items, model=model,
                                     patience=patience, utility=utility)


@numba.njit(cache=True, nogil=True)
def ee_target(m: int, p: float, u: float, gerr: bool) -> float:
    """Each of ``m`` relevant items' exposure under the ideal ranker (all relevant first, in
    every order alike): the mean of the first ``m`` positions' exposures."""
    pp = p * (1.0 - u) if gerr else p
    return (1.0 - pp ** m) / (m * (1.0 - pp))


@numba.njit(cache=True, nogil=True)
def ee_finish_row(out: np.ndarray, r: int, disparity: float, relevance: float, loss: float,
                  hits: int, m: int, target: float, p: float, u: float, gerr: bool) -> None:
    """Row ``r`` of :data:`COLUMNS` from the sums over the exposed items (``hits`` of them
    relevant): the relevant items never exposed add ``target^2`` each to the loss; then the
    three raw values and their normalised forms."""
    loss += (m - hits) * target * target
    ideal = m * target * target
    out[r, 0] = disparity
    out[r, 1] = relevance
    out[r, 2] = loss
    out[r, 3] = disparity * (1.0 - p * p)
    out[r, 4] = relevance / ideal
    out[r, 5] = loss / (ideal + 1.0 / (1.0 - (p * u if gerr else p)))


@numba.njit(cache=True, nogil=True)
def _ee_sampled_block(block: int, lo: int, hi: int, tops: np.ndarray, t_ptr: np.ndarray,
                      t_items: np.ndarray, n_items: int, gerr: bool, p: float, u: float,
                      out: np.ndarray) -> None:
    mark = np.full(n_items, -1, dtype=np.int64)
    n_samples, width = tops.shape[1], tops.shape[2]
    codes = np.empty(n_samples * width, dtype=np.int64)
    expo = np.empty(n_samples * width)
    for r in range(lo, hi):
        m = 0
        for t in range(t_ptr[r], t_ptr[r + 1]):
            if mark[t_items[t]] != r:
                mark[t_items[t]] = r
                m += 1
        n = 0
        for s in range(n_samples):  # each sampled ranking's exposures, averaged below
            relret = 0
            i = 0
            for j in range(width):
                code = tops[r, s, j]
                if code < 0:
                    continue
                codes[n] = code
                expo[n] = (p ** i * (1.0 - u) ** relret if gerr else p ** i) / n_samples
                if mark[code] == r:
                    relret += 1
                i += 1
                n += 1
        if m == 0 or n == 0:
            out[r, :] = np.nan
            continue
        order = np.argsort(codes[:n], kind="mergesort")
        target = ee_target(m, p, u, gerr)
        disparity = 0.0
        relevance = 0.0
        loss = 0.0
        hits = 0
        a = 0
        while a < n:  # one item: its exposure summed over the samples
            code = codes[order[a]]
            e = 0.0
            while a < n and codes[order[a]] == code:
                e += expo[order[a]]
                a += 1
            disparity += e * e
            if mark[code] == r:
                relevance += target * e
                loss += (target - e) * (target - e)
                hits += 1
            else:
                loss += e * e
        ee_finish_row(out, r, disparity, relevance, loss, hits, m, target, p, u, gerr)


def expected_exposure_sampled(tops: np.ndarray, truth: tuple[np.ndarray, np.ndarray],
                              n_items: int, *, model: str = "gerr", patience: float = 0.5,
                              utility: float = 0.5) -> np.ndarray:
    """As :func:`expected_exposure` for a stochastic ranker: ``tops`` is ``(U, S, K)``, ``S``
    sampled rankings per user (``-1`` past a ranking's end); each item's exposure is its mean
    over the samples (expeval's ``exposure.expected``). ``S = 1`` is the deterministic case.
    A sample of ``-1`` only counts as a ranking that exposes nothing (expeval's run file
    cannot hold one).

    Example:
        >>> tops = np.array([[[0, 1], [1, 0]]])
        >>> expected_exposure_sampled(tops, (np.array([0, 1]), np.array([0])), 2).round(6).tolist()
        [[0.953125, 0.75, 0.453125, 0.714844, 0.75, 0.194196]]
    """
    if model not in ("gerr", "rbp"):
        raise ReceValError(f"ee_model={model!r} is not 'gerr' or 'rbp'")
    if not 0.0 < patience < 1.0 or not 0.0 <= utility < 1.0:
        raise ReceValError(f"ee_patience={patience!r} must be in (0, 1) and ee_utility="
                           f"{utility!r} in [0, 1)")
    arr = np.ascontiguousarray(tops, dtype=np.int64)
    if arr.ndim != 3:
        raise ReceValError(f"sampled rankings must be a 3-d array (users, samples, k); got "
                           f"{arr.ndim} dims")
    out = np.empty((arr.shape[0], len(COLUMNS)))
    run_blocks(_ee_sampled_block, block_bounds(arr.shape[0], _MIN_BLOCK_ROWS), arr,
               np.ascontiguousarray(truth[0], dtype=np.int64),
               np.ascontiguousarray(truth[1], dtype=np.int64), n_items, model == "gerr",
               float(patience), float(utility), out)
    return out


#: output columns of :func:`group_expected_exposure`
GROUP_COLUMNS = ("EE_D_group", "EE_R_group", "EE_L_group")


@numba.njit(cache=True, nogil=True)
def _ee_group_block(block: int, lo: int, hi: int, top: np.ndarray, t_ptr: np.ndarray,
                    t_items: np.ndarray, groups: np.ndarray, gerr: bool, p: float, u: float,
                    out: np.ndarray) -> None:
    n_items, n_groups = groups.shape
    mark = np.full(n_items, -1, dtype=np.int64)
    run = np.empty(n_groups)
    tgt = np.empty(n_groups)
    for r in range(lo, hi):
        m = 0
        for t in range(t_ptr[r], t_ptr[r + 1]):
            if mark[t_items[t]] != r:
                mark[t_items[t]] = r
                m += 1
        run[:] = 0.0
        tgt[:] = 0.0
        n = 0
        relret = 0
        for j in range(top.shape[1]):
            code = top[r, j]
            if code < 0:
                continue
            e = p ** n * (1.0 - u) ** relret if gerr else p ** n
            for g in range(n_groups):
                run[g] += e * groups[code, g]
            if mark[code] == r:
                relret += 1
            n += 1
        if m == 0 or n == 0:
            out[r, :] = np.nan
            continue
        pp = p * (1.0 - u) if gerr else p
        target = (1.0 - pp ** m) / (m * (1.0 - pp))
        for t in range(t_ptr[r], t_ptr[r + 1]):
            code = t_items[t]
            if mark[code] == r:
                mark[code] = -2 - r  # each relevant item once
                for g in range(n_groups):
                    tgt[g] += target * groups[code, g]
        disparity = 0.0
        relevance = 0.0
        loss = 0.0
        for g in range(n_groups):
            disparity += run[g] * run[g]
            relevance += tgt[g] * run[g]
            loss += (tgt[g] - run[g]) * (tgt[g] - run[g])
        out[r, 0] = disparity
        out[r, 1] = relevance
        out[r, 2] = loss


def group_expected_exposure(top: np.ndarray, truth: tuple[np.ndarray, np.ndarray],
                            groups: np.ndarray, *, model: str = "gerr", patience: float = 0.5,
                            utility: float = 0.5) -> np.ndarray:
    """``(U, 3)``: per row the group EE-D, EE-R and EE-L (:data:`GROUP_COLUMNS`) of Diaz et
    al. 2020's group setting: each item group's exposure ``sum_d a(d, g) e_d`` and target
    ``sum_d a(d, g) t_d`` (``groups``: the ``(n_items, G)`` alignment; an item of no group
    counts nowhere), then ``sum_g e_g^2``, ``sum_g t_g e_g`` and ``sum_g (t_g - e_g)^2``;
    NaN without relevant or listed items.

    Example:
        >>> groups = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        >>> ee = group_expected_exposure(np.array([[2, 0]]), (np.array([0, 1]), np.array([0])),
        ...                              groups)
        >>> ee.round(6).tolist()
        [[1.25, 0.5, 1.25]]
    """
    if model not in ("gerr", "rbp"):
        raise ReceValError(f"ee_model={model!r} is not 'gerr' or 'rbp'")
    arr = np.ascontiguousarray(top, dtype=np.int64)
    out = np.empty((arr.shape[0], len(GROUP_COLUMNS)))
    run_blocks(_ee_group_block, block_bounds(arr.shape[0], _MIN_BLOCK_ROWS), arr,
               np.ascontiguousarray(truth[0], dtype=np.int64),
               np.ascontiguousarray(truth[1], dtype=np.int64),
               np.ascontiguousarray(groups, dtype=np.float64), model == "gerr",
               float(patience), float(utility), out)
    return out
