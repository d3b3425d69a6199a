"""What an engine is asked for: one typed request, built once by the plan.

The plan (:mod:`receval.dispatch`, called by :mod:`receval.evaluation`) resolves the options
and the metrics into an :class:`EngineRequest`: the evaluated users' lists (:class:`Lists`,
codes into both sides' CSR arrays), the picture to fill (cutoffs, fields, the length of the
top-item lists) and how to judge and rank (relevance, gains, ties, filters), each under its
own name. Every engine reads the same request: the numba engine packs what its jitted loop
needs into a few named tuples (:func:`receval.engines.numba_engine.run_kernel`), the torch
engine reads the names (:func:`receval.engines.torch_engine.run_kernel`); neither decodes
integer option codes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, NamedTuple, cast

import numpy as np

from receval.options import Discount, Gain, Options
from receval.picture import NO_CUTOFF

#: the tie policies an engine ranks with: ``item_ascending`` and ``ranx`` are orders of the
#: rows that :func:`receval.shaping.prepare` applies, then ranked ``stable``
RankTies = Literal["stable", "item", "pessimistic", "optimistic", "average"]

_NO_CUTOFFS = np.zeros(0, dtype=np.int64)


class Lists(NamedTuple):
    """The users to evaluate and both sides grouped per user (CSR: user ``u``'s rows are
    ``indptr[u]:indptr[u + 1]``); ``users`` are codes into both. A named tuple of arrays, so
    the numba engine passes it to its jitted loop as one argument."""

    users: np.ndarray  # int64 user codes, in the order of the outputs
    t_indptr: np.ndarray
    t_items: np.ndarray  # int64 item codes
    t_values: np.ndarray  # float64 ratings
    p_indptr: np.ndarray
    p_items: np.ndarray
    p_scores: np.ndarray  # float64 scores, higher first


@dataclass(frozen=True)
class EngineRequest:
    """One engine pass: fill the picture (:class:`receval.picture.Picture`) of ``lists``.

    Attributes:
        lists: the users and their truth and predictions.
        cutoffs: the picture's cutoffs (int64; ``0``: the whole list).
        cut_ks: the cutoffs where a tie across rank ``k`` / ``k + 1`` is flagged.
        fields: the picture's fields to write (``hits``, ``dcg``, ``top_items``, ...).
        top_k: the length of each ``top_items`` list (0 unless ``"top_items"`` in ``fields``).
        ties: the tie policy the ranking applies.
        known_only: predictions without a truth row are dropped (``protocol="known"``).
        score_threshold: predictions scored below it are dropped (``None``: none is).
        relevance_threshold: a truth row is relevant when its rating is at least this,
            ``"user_mean"`` (the user's mean rating) or ``None`` (every row).
        gain: the nDCG gain of a relevant item (``binary``, ``linear``, ``exponential``).
        discount: the DCG discount; ``persistence``: its ``p`` when ``geometric``.
        max_list: each ranked list cut to its top ``max_list`` (``None``: whole lists).

    Example:
        >>> from receval.options import Options
        >>> one = np.array([0])
        >>> lists = Lists(one, np.array([0, 1]), one, np.ones(1), np.array([0, 1]), one, np.ones(1))
        >>> r = EngineRequest.plan(lists, Options(ties="ranx", relevance_threshold=3),
        ...                        np.array([0, 5]), {"hits"})
        >>> r.ties, r.relevance_threshold, r.need_all, r.kmax, r.top_k
        ('stable', 3.0, True, 5, 0)
    """

    lists: Lists
    cutoffs: np.ndarray
    cut_ks: np.ndarray
    fields: frozenset[str]
    top_k: int
    ties: RankTies
    known_only: bool
    score_threshold: float | None
    relevance_threshold: float | Literal["user_mean"] | None
    gain: Gain
    discount: Discount
    persistence: float
    max_list: int | None

    @classmethod
    def plan(cls, lists: Lists, options: Options, cutoffs: np.ndarray,
             fields: set[str] | frozenset[str], *, top_k: int = 0,
             cut_ks: np.ndarray | None = None) -> EngineRequest:
        """The request for a picture at ``cutoffs`` holding ``fields`` under ``options``;
        ties flagged at ``cut_ks`` (default: the cutoffs other than the whole list);
        ``top_k`` kept only when ``"top_items"`` is asked for."""
        cutoffs = np.asarray(cutoffs, dtype=np.int64)
        rt = options.relevance_threshold
        relevance: float | Literal["user_mean"] | None = (
            None if rt is None else "user_mean" if rt == "user_mean" else float(rt))
        # item_ascending and ranx reorder the rows in prepare(), then rank stably
        ties = cast(RankTies, "stable" if options.ties in ("item_ascending", "ranx")
                    else options.ties)
        return cls(
            lists=lists, cutoffs=cutoffs,
            cut_ks=cutoffs[cutoffs > 0] if cut_ks is None else np.asarray(cut_ks, np.int64),
            fields=frozenset(fields), top_k=top_k if "top_items" in fields else 0,
            ties=ties,
            known_only=options.protocol == "known",
            score_threshold=(None if options.score_threshold is None
                             else float(options.score_threshold)),
            relevance_threshold=relevance,
            gain=options.gain, discount=options.discount,
            persistence=float(options.persistence), max_list=options.max_list or None,
        )

    def on(self, lists: Lists) -> EngineRequest:
        """The same request over other lists (duplicates dropped, other users).

        Example:
            >>> users = np.array([0, 1])
            >>> r = EngineRequest.plan(Lists(*[users] * 7), Options(), np.array([5]), {"hits"})
            >>> r.on(Lists(users[1:], *[users] * 6)).lists.users.tolist()
            [1]
        """
        return dataclasses.replace(self, lists=lists)

    def judging_only(self) -> EngineRequest:
        """The request with no picture asked for: the lists are judged and audited only
        (duplicates, rows without truth, per-user counts and rating errors).

        Example:
            >>> users = np.array([0])
            >>> r = EngineRequest.plan(Lists(*[users] * 7), Options(), np.array([0, 5]), {"hits"})
            >>> j = r.judging_only()
            >>> j.cutoffs.tolist(), j.fields, j.ties
            ([], frozenset(), 'stable')
        """
        return dataclasses.replace(self, cutoffs=_NO_CUTOFFS, cut_ks=_NO_CUTOFFS,
                                   fields=frozenset(), top_k=0)

    @property
    def need_all(self) -> bool:
        """Whether the whole list is a cutoff (every rank is needed)."""
        return bool((self.cutoffs == NO_CUTOFF).any())

    @property
    def kmax(self) -> int:
        """The largest cutoff (0: none)."""
        return int(self.cutoffs.max(initial=0))

    @property
    def need_rprec(self) -> bool:
        """Whether hits in the top R (R-precision) are asked for."""
        return "hits_at_r" in self.fields

    @property
    def want_top(self) -> bool:
        return "top_items" in self.fields
