"""Novelty: how unfamiliar the recommended items are, -log of their training popularity.

novelty@k of user u = mean over i in S_u,k of -log_b p(i) (Castells, Vargas & Wang, ECIR
2011, eqs. 1 and 6), with p(i) = interactions(i) / training rows (Microsoft Recommenders
``historical_item_novelty``) or users(i) / training users (RecTools ``MeanInvUserFreq``).
A cold item (absent from training) adds 0 (Microsoft Recommenders), counts as one user
(RecTools) or is skipped (Evidently). The summary is the mean over users (RecTools) or over
every recommendation slot (Microsoft Recommenders ``novelty``).
"""

from __future__ import annotations

import math

import numpy as np

from receval.beyond._lists import row_means, row_sums


def item_novelty(popularity: np.ndarray, total: int, *, base: float = 2.0,
                 cold: str = "zero") -> np.ndarray:
    """``-log_base(popularity / total)`` per item code; cold items (popularity 0) get 0
    (``"zero"``), ``-log(1 / total)`` (``"one"``) or NaN (``"skip"``). Without training data
    (``total`` 0) every item is cold and there is no one to count: 0 (NaN for ``"skip"``), as
    RecTools' ``MeanInvUserFreq`` gives on an empty training frame.

    Example:
        >>> item_novelty(np.array([2, 1, 0]), 4).tolist()
        [1.0, 2.0, 0.0]
        >>> item_novelty(np.array([2, 1, 0]), 4, cold="one").tolist()
        [1.0, 2.0, 2.0]
        >>> item_novelty(np.array([0, 0]), 0, cold="one").tolist()
        [0.0, 0.0]
    """
    pop = np.asarray(popularity, dtype=np.float64)
    if total <= 0:
        return np.full(len(pop), np.nan if cold == "skip" else 0.0)
    if cold == "one":
        pop = np.where(pop > 0, pop, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        nov = -np.log(pop / total) / math.log(base) + 0.0
    if cold == "zero":
        nov = np.where(pop > 0, nov, 0.0)
    elif cold == "skip":
        nov = np.where(pop > 0, nov, np.nan)
    return nov


def novelty(top: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per user, the mean item novelty (``values`` from :func:`item_novelty`) of the list;
    NaN for an empty list (or one of skipped cold items only).

    Example:
        >>> novelty(np.array([[0, 1], [2, -1]]), np.array([1.0, 2.0, np.nan])).tolist()
        [1.5, nan]
    """
    return row_means(top, values)


def novelty_slots(top: np.ndarray, values: np.ndarray) -> float:
    """The mean item novelty over every recommendation slot of every list (Microsoft
    Recommenders ``novelty``: sum / number of recommendations); NaN without a slot.

    Example:
        >>> novelty_slots(np.array([[0, 1], [0, -1]]), np.array([1.0, 4.0]))
        2.0
    """
    s, c = row_sums(top, values)
    n = int(c.sum())
    # math.fsum: one correctly rounded total, whatever the order of the rows
    return math.fsum(s.tolist()) / n if n else math.nan
