"""Expected exposure over every order of tied scores (``beyond={"ee_ties": "permute"}``).

A list with tied scores is a stochastic ranking: each order of a block of tied items is as
likely as any other. :mod:`receval.beyond.expected_exposure` scores the one order the
evaluation used (``ee_ties="list"``, default); here each item's exposure is its expectation
over every order of the tied blocks, computed exactly, without enumerating or sampling
orders. A block of ``b`` tied items at ranks ``s .. s + b - 1`` (0-based) holding ``r``
relevant items, below ``R0`` relevant items: an item of the block lands at each offset ``j``
with probability ``1/b``, and the number ``H`` of relevant items among the ``j`` tied items
above it is hypergeometric (the block's ``b - 1`` others, ``r`` or ``r - 1`` of them relevant,
``j`` drawn), so its expected exposure is

    ``(1/b) sum_{j < min(b, k - s)} p^(s + j) (1 - u)^R0 E[(1 - u)^H]``  (gerr),
    ``(1/b) sum_{j < min(b, k - s)} p^(s + j)``  (rbp),

the ranks at or past the cutoff ``k`` exposing nothing: an item tied with the last listed one
but outside the top k shares its chance of being listed. With no tie this is the list's own
exposure, so the metrics equal ``ee_ties="list"``'s. The metrics (EE-D, EE-R, EE-L and their
normalised forms) are then those of expeval's stochastic-ranking case
(:func:`receval.beyond.expected_exposure.expected_exposure_sampled` with every order as a
sample gives the same numbers: tests/test_fairness_doors.py checks it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np

from receval.beyond.expected_exposure import COLUMNS, ee_finish_row, ee_target
from receval.exceptions import ReceValError
from receval.parallel import block_bounds, run_blocks

_MIN_BLOCK_ROWS = 8_192


def needs_scores(specs: Sequence[Any], ee_ties: str) -> bool:
    """Whether the expected-exposure metrics of ``specs`` read the predictions' scores.

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> needs_scores([parse_beyond("EE_L@5")], "permute"), needs_scores([], "permute")
        (True, False)
    """
    return ee_ties == "permute" and any(str(s.metric).startswith("EE_")
                                        and not str(s.metric).endswith("_group") for s in specs)


def check_ranking_options(options: Any) -> None:
    """``ee_ties="permute"`` ranks each user's scored rows itself: one line for the options that
    change which rows are ranked.

    Example:
        >>> from receval.options import Options
        >>> check_ranking_options(Options())
        >>> check_ranking_options(Options(max_list=5))
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: beyond ee_ties='permute' ranks every scored row of a \
user: it does not take max_list=5 (leave it out, or use ee_ties='list')
    """
    for name, plain in (("max_list", None), ("score_threshold", None), ("protocol", "full"),
                        ("nonpositive_scores", "rank")):
        value = getattr(options, name)
        if value != plain:
            raise ReceValError(f"beyond ee_ties='permute' ranks every scored row of a user: it "
                               f"does not take {name}={value!r} (leave it out, or use "
                               "ee_ties='list')")


def user_rows(indptr: np.ndarray, items: np.ndarray, values: np.ndarray,
              rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CSR of the ``rows`` (user codes) of a per-user CSR, with its values.

    Example:
        >>> p, i, v = user_rows(np.array([0, 2, 3]), np.array([5, 6, 7]),
        ...                     np.array([.1, .2, .3]), np.array([1, 0]))
        >>> p.tolist(), i.tolist(), v.tolist()
        ([0, 1, 3], [7, 5, 6], [0.3, 0.1, 0.2])
    """
    starts, stops = indptr[rows], indptr[rows + 1]
    lens = stops - starts
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    take = np.repeat(starts - ptr[:-1], lens) + np.arange(ptr[-1])
    return ptr, np.asarray(items, dtype=np.int64)[take], np.asarray(values,
                                                                    dtype=np.float64)[take]


def tied_scores(specs: Sequence[Any], beyond: Any, profile: str | None, prepared: Any,
                selected: np.ndarray, options: Any
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The ``selected`` users' scored rows (engine codes) when an expected-exposure metric of
    ``specs`` averages over tied orders (``beyond={"ee_ties": "permute"}``), else ``None``."""
    from receval.beyond.settings import resolve

    if not needs_scores(specs, resolve(profile, beyond).ee_ties):
        return None
    check_ranking_options(options)
    p = prepared.predictions
    return user_rows(p.indptr, p.items, p.values, selected)


@numba.njit(cache=True, nogil=True)
def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1.0) - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0)


@numba.njit(cache=True, nogil=True)
def _hyper_mean_power(others: int, relevant: int, drawn: int, q: float) -> float:
    """E[q^H], H ~ Hypergeometric(population ``others``, ``relevant`` successes, ``drawn``)."""
    if relevant == 0 or drawn == 0:
        return 1.0
    lo = max(0, drawn - (others - relevant))
    hi = min(drawn, relevant)
    total = _log_choose(others, drawn)
    out = 0.0
    for h in range(lo, hi + 1):
        weight = math.exp(_log_choose(relevant, h) + _log_choose(others - relevant, drawn - h)
                          - total)
        out += weight * q ** h
    return out


@numba.njit(cache=True, nogil=True)
def _ee_tied_block(block: int, lo: int, hi: int, p_ptr: np.ndarray, p_items: np.ndarray,
                   p_scores: np.ndarray, t_ptr: np.ndarray, t_items: np.ndarray, n_items: int,
                   k: int, gerr: bool, p: float, u: float, out: np.ndarray) -> None:
    mark = np.full(n_items, -1, dtype=np.int64)
    for r in range(lo, hi):
        m = 0
        for t in range(t_ptr[r], t_ptr[r + 1]):
            if mark[t_items[t]] != r:
                mark[t_items[t]] = r
                m += 1
        a0, a1 = p_ptr[r], p_ptr[r + 1]
        order = np.argsort(-p_scores[a0:a1], kind="mergesort") + a0
        n_rows = a1 - a0
        target = ee_target(m, p, u, gerr) if m > 0 else 0.0
        disparity = 0.0
        relevance = 0.0
        loss = 0.0
        hits = 0
        exposed = 0
        above = 0  # relevant items in the blocks above
        s = 0
        while s < n_rows and s < k:
            e = s + 1
            while e < n_rows and p_scores[order[e]] == p_scores[order[s]]:
                e += 1
            b = e - s
            rel = 0
            for x in range(s, e):
                if mark[p_items[order[x]]] == r:
                    rel += 1
            e_rel = 0.0
            e_non = 0.0
            for j in range(min(b, k - s)):
                w = p ** (s + j) * ((1.0 - u) ** above if gerr else 1.0)
                if gerr:
                    if rel > 0:
                        e_rel += w * _hyper_mean_power(b - 1, rel - 1, j, 1.0 - u)
                    if rel < b:
                        e_non += w * _hyper_mean_power(b - 1, rel, j, 1.0 - u)
                else:
                    e_rel += w
                    e_non += w
            e_rel /= b
            e_non /= b
            for x in range(s, e):
                exposed += 1
                if mark[p_items[order[x]]] == r:
                    disparity += e_rel * e_rel
                    relevance += target * e_rel
                    loss += (target - e_rel) * (target - e_rel)
                    hits += 1
                else:
                    disparity += e_non * e_non
                    loss += e_non * e_non
            above += rel
            s = e
        if m == 0 or exposed == 0:
            out[r, :] = np.nan
            continue
        ee_finish_row(out, r, disparity, relevance, loss, hits, m, target, p, u, gerr)


def expected_exposure_tied(scored: tuple[np.ndarray, np.ndarray, np.ndarray],
                           truth: tuple[np.ndarray, np.ndarray], n_items: int, k: int, *,
                           model: str = "gerr", patience: float = 0.5, utility: float = 0.5
                           ) -> np.ndarray:
    """``(U, 6)`` as :func:`receval.beyond.expected_exposure.expected_exposure` (columns
    :data:`~receval.beyond.expected_exposure.COLUMNS`), each item's exposure its expectation
    over every order of the tied scores of its row. ``scored``: per row ``(indptr, item codes,
    scores)`` of every scored item (any order, no item twice); ``truth``: per row the relevant
    item codes; ``k``: the cutoff.

    Example:
        >>> scored = (np.array([0, 3]), np.array([0, 1, 2]), np.array([1.0, 1.0, 0.5]))
        >>> truth = (np.array([0, 1]), np.array([0]))
        >>> expected_exposure_tied(scored, truth, 3, 2).round(6).tolist()
        [[0.953125, 0.75, 0.453125, 0.714844, 0.75, 0.194196]]
    """
    if model not in ("gerr", "rbp"):
        raise ReceValError(f"ee_model={model!r} is not 'gerr' or 'rbp'")
    ptr, items, scores = scored
    n_rows = len(ptr) - 1
    out = np.empty((n_rows, len(COLUMNS)))
    run_blocks(_ee_tied_block, block_bounds(n_rows, _MIN_BLOCK_ROWS),
               np.ascontiguousarray(ptr, dtype=np.int64),
               np.ascontiguousarray(items, dtype=np.int64),
               np.ascontiguousarray(scores, dtype=np.float64),
               np.ascontiguousarray(truth[0], dtype=np.int64),
               np.ascontiguousarray(truth[1], dtype=np.int64), int(n_items), int(k),
               model == "gerr", float(patience), float(utility), out)
    return out


def tied_columns(specs: Sequence[Any], scored: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
                 truth: tuple[np.ndarray, np.ndarray], options: Any) -> dict[str, np.ndarray]:
    """Each expected-exposure metric of ``specs`` (``EE_L@k``...) per row, over the tied
    orders of ``scored`` (``options``: the :class:`~receval.beyond.settings.BeyondOptions`).

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> from receval.beyond.settings import BeyondOptions
        >>> scored = (np.array([0, 3]), np.array([0, 1, 2]), np.array([1.0, 1.0, 0.5]))
        >>> out = tied_columns([parse_beyond("EE_R@2")], scored,
        ...                    (np.array([0, 1]), np.array([0])), BeyondOptions())
        >>> out["EE_R@2"].tolist()
        [0.75]
    """
    if scored is None:
        raise ReceValError("beyond ee_ties='permute' reads the scores of every scored item: "
                           "use receval.evaluate (receval evaluate) for it")
    items = scored[1]
    n_items = int(max(items.max(initial=-1), np.asarray(truth[1]).max(initial=-1))) + 1
    out: dict[str, np.ndarray] = {}
    by_k: dict[int, np.ndarray] = {}
    for spec in specs:
        if spec.k not in by_k:
            by_k[spec.k] = expected_exposure_tied(
                scored, truth, n_items, spec.k, model=options.ee_model,
                patience=options.ee_patience, utility=options.ee_utility)
        out[spec.name] = np.ascontiguousarray(by_k[spec.k][:, COLUMNS.index(spec.metric)])
    return out
