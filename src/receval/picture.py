"""The picture: the contract between engines and metric families.

An engine's only job is to produce, for a block of users, the quantities every metric reads,
sampled at the requested cutoffs. Metric families (:mod:`receval.measures`) are array functions
over a picture, written once and run on numpy (numba engine, Spark partitions) or torch
(torch engine) arrays alike. Nothing here imports an engine.

Shapes: ``U`` users in the block, ``C`` cutoffs. ``cutoffs[c] == 0`` (``NO_CUTOFF``) stands for
the user's whole ranked list (``MAP``, ``MRR``, ``nDCG`` without ``@k``). For a cutoff ``k``
beyond a user's list, every prefix quantity is the value at the end of the list (the list
does not grow), while the families still see ``k`` itself (``P@k`` divides by ``k``).

Under ``ties="average"`` every prefix quantity is the exact expectation over all orders of the
tied items (McSherry & Najork, ECIR 2008); under every other policy the engine has already
ordered the ties and the quantities are plain sums.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

#: ``cutoffs[c] == NO_CUTOFF``: the whole list
NO_CUTOFF = 0


@dataclass
class Picture:
    """What every metric of a block of users is computed from.

    Attributes:
        cutoffs: ``(C,)`` int64, the cutoffs sampled (``0``: the whole list).
        hits: ``(U, C)`` relevant items in the top k.
        ap_sum: ``(U, C)`` the AP numerator ``sum_{j<=k} h_j * hits@j / j``.
        dcg: ``(U, C)`` ``sum_{j<=k} gain_j / log2(j + 1)``, gains scaled by ``2**-gain_shift``.
        idcg: ``(U, C)`` the ideal DCG at ``min(k, L)`` on the same scale.
        first: ``(U, C)`` probability that the first relevant item is at rank ``<= k``.
        rr_sum: ``(U, C)`` ``sum_{j<=k} P(first relevant item at j) / j``.
        ap_over_hits: ``(U, C)`` or ``None``: ``E[ap_sum / hits]`` where ``ties="average"``
            puts a cutoff inside a tie group (NaN elsewhere: the plain ratio is exact); only
            when a metric asks for ``ap_normalizer="hits"`` under average ties.
        n_relevant: ``(U,)`` int64, L: relevant items in the user's truth.
        n_list: ``(U,)`` int64, the ranked list's length after filtering (``protocol="known"``,
            ``score_threshold``).
        hits_at_r: ``(U,)`` relevant items in the top L (R-precision).
        sq_err, abs_err: ``(U,)`` sums of squared and absolute rating errors, scaled by
            ``sq_scale`` / ``abs_scale`` (``(U,)``; 1 unless the plain sum overflows).
        n_pairs: ``(U,)`` int64, (user, item) pairs with a rating and a prediction.
        gain_shift: ``(U,)`` float64 holding whole numbers, the exponent of the per-user gain
            scale (huge ratings): DCG and IDCG are ``2**gain_shift`` times the fields.
        top_items: ``(U, K)`` int64 item codes of each user's ranked top K in rank order
            (``-1`` past the list), or ``None`` when no metric reads the list itself. ``K`` is
            the largest cutoff asked of a family whose entry reads ``"top_items"``
            (:func:`receval.measures.registry.top_k_needed`). Codes are those of the
            evaluation's item dictionary (``Prepared.items.decode(codes)`` gives the ids);
            integer ids are their own codes, so ``-1`` can be an id: a user's list is the
            first ``min(K, n_list)`` entries. Under ``ties="average"`` the order inside a
            tie group is the input order (the metrics take the expectation; the list is one
            of the orders).
        judged_ranks: ``(U, J)`` int64, the ranks (from 1, ascending) of the list's judged
            items (those with a truth row, whatever their rating), ``0`` past them; or
            ``None``. Not under ``ties="average"`` (a rank is not defined there).
        judged_rel: ``(U, J)`` float64, 1.0 where that judged item is relevant.
        judged_rating: ``(U, J)`` float64, its truth rating.
        max_rel_rating: ``(U,)`` float64, the highest rating of a relevant truth row (``-inf``
            without one), with the ``judged_*`` fields.
        n_judged: ``(U,)`` int64, the user's truth rows (judged items), or ``None`` from an
            engine that does not apply ``max_list`` (trec_eval ``-M``).

    A per-cutoff field no requested metric reads may be ``None``
    (:func:`receval.measures.registry.needs` lists the fields read).
    """

    cutoffs: Any
    hits: Any
    ap_sum: Any
    dcg: Any
    idcg: Any
    first: Any
    rr_sum: Any
    n_relevant: Any
    n_list: Any
    hits_at_r: Any
    sq_err: Any
    sq_scale: Any
    abs_err: Any
    abs_scale: Any
    n_pairs: Any
    gain_shift: Any
    ap_over_hits: Any = None
    top_items: Any = None
    judged_ranks: Any = None
    judged_rel: Any = None
    judged_rating: Any = None
    n_judged: Any = None
    max_rel_rating: Any = None

    @property
    def n_users(self) -> int:
        """Users in the block.

        Example:
            >>> import numpy as np
            >>> empty_picture(3, np.array([1, 5])).n_users
            3
        """
        return int(self.n_relevant.shape[0])

    def column(self, k: int) -> int:
        """The column of cutoff ``k``.

        Example:
            >>> import numpy as np
            >>> empty_picture(1, np.array([0, 5, 10])).column(10)
            2
        """
        matches = (self.cutoffs == k).nonzero()[0]
        if len(matches) == 0:
            raise KeyError(f"cutoff {k} is not in this picture ({self.cutoffs.tolist()})")
        return int(matches[0])


def empty_picture(n_users: int, cutoffs: Any, *, xp: Any = None) -> Picture:
    """A zero picture of ``n_users`` users at ``cutoffs`` (numpy by default, or any module with
    ``zeros(shape, dtype=...)``, such as torch), for engines to fill.

    Example:
        >>> import numpy as np
        >>> p = empty_picture(2, np.array([1, 3]))
        >>> p.hits.shape, p.n_relevant.dtype
        ((2, 2), dtype('int64'))
    """
    if xp is None:
        import numpy as xp
    n_cut = len(cutoffs)
    per_cut = ("hits", "ap_sum", "dcg", "idcg", "first", "rr_sum")
    counts = ("n_relevant", "n_list", "n_pairs")
    values: dict[str, Any] = {"cutoffs": cutoffs}
    for f in fields(Picture):
        if f.name in per_cut:
            values[f.name] = xp.zeros((n_users, n_cut), dtype=xp.float64)
        elif f.name in counts:
            values[f.name] = xp.zeros((n_users,), dtype=xp.int64)
        elif f.name in ("sq_scale", "abs_scale"):
            values[f.name] = xp.ones((n_users,), dtype=xp.float64)
        elif f.name not in values and f.name not in ("ap_over_hits", "top_items",
                                                     "judged_ranks", "judged_rel",
                                                     "judged_rating", "n_judged",
                                                     "max_rel_rating"):
            values[f.name] = xp.zeros((n_users,), dtype=xp.float64)
    return Picture(**values)
