"""The metric families' integer codes (what engines and results see)."""

from __future__ import annotations

from enum import IntEnum


class Family(IntEnum):
    """The metric families; the integer codes are stable (they are what results record).

    Example:
        >>> Family.NDCG.name, int(Family.HITS)
        ('NDCG', 10)
    """

    PRECISION = 0
    RECALL = 1
    FBETA = 2
    AP = 3
    RPREC = 4
    NDCG = 5
    RR = 6
    HIT = 7
    RMSE = 8
    MAE = 9
    HITS = 10
    DCG = 11
