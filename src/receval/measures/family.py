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
    # 12-21: the IR measures trec_eval and ir_measures have (issue 14)
    BPREF = 12
    RBP = 13
    RBP_RESID = 14
    ERR = 15
    JUDGED = 16
    IPREC = 17
    IPREC_11PT = 18
    RPREC_MULT = 19
    NUM_REL = 20
    NUM_RET = 21
    GM_AP = 22  # AP under the geometric mean (trec_eval's gm_map)
    NUM_REL_RET = 23  # relevant items retrieved, summed over users (trec_eval's num_rel_ret)
    NCRR = 24  # normalised cumulative reciprocal rank (Cornac's NCRR)
