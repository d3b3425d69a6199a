"""Every evaluation option in one validated, immutable record.

Each option is a named variant of docs/semantics.md. The fields of :class:`Options` are the one
declaration of the options: their names, types, defaults and docs. The rest is derived from them
(the CLI's flags and their help, the choices, :func:`passed_options`) or held to them by
tests/test_declared_once.py (the keywords of :func:`receval.evaluate`, the README's table). An
:class:`Options` travels with every :class:`~receval.result.Result`, so a number never leaves
receval without its definition.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from receval.exceptions import ReceValError

Ties = Literal["stable", "item", "item_ascending", "pessimistic", "optimistic", "average", "ranx"]
Empty = Literal["zero", "one", "skip", "error", "nan"]
Average = Literal["macro", "micro"]
Users = Literal["truth", "both", "relevant", "predictions", "union"]
Protocol = Literal["full", "known"]
PrecisionDenominator = Literal["k", "returned"]
RecallDenominator = Literal["relevant", "capped"]
APNormalizer = Literal["min_k_relevant", "relevant", "hits", "k", "min_returned_relevant"]
Gain = Literal["binary", "linear", "exponential"]
Duplicates = Literal["error", "first", "max", "keep"]
ScoreDtype = Literal["float64", "float32"]
ItemOrder = Literal["native", "text"]
TruthScope = Literal["all", "predicted"]
NonpositiveScores = Literal["rank", "irrelevant"]
EmptyScope = Literal["undefined", "no_relevant"]
Discount = Literal["log2", "log2_max2", "geometric"]
Ideal = Literal["achievable", "k"]
AllSkipped = Literal["nan", "zero"]
IprecRounding = Literal["plus_0.9", "nearest"]
#: the tie policies that never read the order of the input rows (``stable`` and ``ranx`` do):
#: ``pessimistic``/``optimistic`` order a tie by relevance and gain, then, as ``item`` does,
#: by item id descending; ``average`` averages the metrics over the orders of each tie, and
#: its lists (the beyond-accuracy metrics) hold the tied items in ``item``'s order
ORDER_FREE_TIES: tuple[Ties, ...] = (
    "item",
    "item_ascending",
    "pessimistic",
    "optimistic",
    "average",
)


class _Unset:
    """The type of :data:`UNSET`: an option the caller did not pass."""

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


#: The default of every option keyword of :func:`receval.evaluate`: "not passed", so a
#: profile's value (or else the :class:`Options` default) applies.
UNSET: Any = _Unset()


@dataclass(frozen=True)
class Options:
    """The options that decide what every number means (docs/semantics.md sections 2-8).

    Attributes:
        relevance_threshold: a truth row is relevant when ``rating >= threshold``. ``None``
            (default): every truth row is relevant (implicit feedback). ``"user_mean"``: relevant
            when the rating is at least the user's own mean rating in the truth.
        score_threshold: ``None`` (default, top-k semantics): every item of the top k is
            recommended. A number ``s``: only predictions with ``score >= s`` are recommended,
            so a user's list is cut at the first score below ``s`` (rating-prediction semantics).
        protocol: ``"full"`` (default): a predicted item with no truth row is simply not
            relevant. ``"known"``: only predicted items that have a truth row are ranked
            (trec_eval ``-J``, judged documents only: a truth row is a judgement).
        ties: how tied scores are ordered. ``"stable"`` (default): input order; ``"item"``:
            item id descending (trec_eval's rule); ``"item_ascending"``: lower item id first
            (TensorFlow's ``top_k``); ``"pessimistic"`` / ``"optimistic"``: relevant
            (higher-gain) items last / first, then item id descending; ``"average"``: the exact
            expectation of each metric over all orderings of the tied items (a list, for the
            beyond-accuracy metrics, holds the tied items by item id descending); ``"ranx"``:
            the order a ranx ``Run`` gives under ``evaluate(..., make_comparable=True)``
            (numba's unstable quicksort of the input order, twice:
            :func:`receval.profiles.ranx_order`).
        precision_denominator: ``"k"`` (IR convention) or ``"returned"`` (``min(k, list
            length)``; with a score threshold this is the number recommended). ``None``
            (default) picks ``"returned"`` when ``score_threshold`` is set, else ``"k"``.
        recall_denominator: ``"relevant"`` (default, ``L``) or ``"capped"`` (``min(k, L)``).
        ap_normalizer: AP@k's divisor: ``"min_k_relevant"`` (default, ``min(k, L)``),
            ``"relevant"`` (``L``, trec_eval), ``"hits"`` (hits in the top k), ``"k"`` or
            ``"min_returned_relevant"`` (``min(L, items returned in the top k)``, LensKit's
            ``AveragePrecision``).
        gain: nDCG gain: ``"binary"`` (default, 1 for a relevant item), ``"linear"`` (the
            rating of a relevant item) or ``"exponential"`` (``2**rating - 1``).
        empty: what an undefined value gives (no relevant item; nothing returned with
            ``precision_denominator="returned"``): ``"zero"`` (default), ``"one"``, ``"skip"``
            (left out of that metric's mean), ``"error"`` or ``"nan"`` (left undefined, so the
            mean itself is NaN: TensorFlow's ``average_precision_at_k`` on a row with no label).
        empty_scope: which values ``empty`` decides. ``"undefined"`` (default): only the
            undefined ones above. ``"no_relevant"``: every ranking metric of a user with no
            relevant item, precision and hit rate included (torchmetrics'
            ``empty_target_action``: ``"pos"`` gives such a user P = 1).
        average: ``"macro"`` (default, mean of per-user values) or ``"micro"`` (sum numerators
            and denominators over users first). RMSE and MAE are always pooled over all pairs.
        users: which users are averaged: ``"truth"`` (default), ``"both"``, ``"relevant"``
            (truth users with at least one relevant item), ``"predictions"`` or ``"union"``.
            A selected user with no predictions has an empty list.
        duplicates: a repeated (user, item) row is an ``"error"`` (default), or keep the
            ``"first"`` row or the one with the ``"max"`` value, or ``"keep"`` every row as a
            list would (Kaggle's ``apk``): a repeated truth row is one more relevant item, which
            no prediction can retrieve; a repeated prediction keeps its rank but only its best
            ranked copy can be a hit.
        score_dtype: ``"float64"`` (default) or ``"float32"``: scores are rounded to single
            precision before anything else, so scores equal in float32 tie (trec_eval 9.x and
            pytrec_eval store scores as C ``float``; torchmetrics computes in float32).
        item_order: how item ids compare for ``ties="item"`` / ``"item_ascending"``:
            ``"native"`` (default; integers as numbers, strings byte-wise) or ``"text"``
            (integer ids compared as their decimal text, trec_eval's ``strcmp``: ``"9" > "10"``).
        truth_scope: ``"all"`` (default): every truth row counts, so a relevant item that is
            not predicted is a miss. ``"predicted"``: only truth rows of items the user's
            predictions hold exist (torchmetrics, scikit-learn and Surprise see only the scored
            candidates; recall is then relative to the relevant items among them).
        max_list: ``None`` (default): the whole ranked list. A positive integer ``M``: each
            user's list is cut to its top ``M`` after ranking, before anything is computed
            (trec_eval ``-M``; its list length, ``num_ret``, is then at most ``M``).
        nonpositive_scores: ``"rank"`` (default): a score is only an ordering. ``"irrelevant"``:
            a prediction with score ``<= 0`` keeps its rank but is never a hit, while the
            user's relevant count is unchanged (torchmetrics >= 1.8 for P, R, AP and MRR).
        discount: DCG's and nDCG's rank discount: ``"log2"`` (default, ``1/log2(r + 1)``),
            ``"log2_max2"`` (``1/log2(max(r, 2))``: ranks 1 and 2 both weigh 1, LensKit's
            ``NDCG``/``DCG``) or ``"geometric"`` (``p^(r - 1)``, RBP's browsing model, ``p``
            the ``persistence``).
        persistence: ``p`` of ``discount="geometric"``, in (0, 1) (default 0.9, RBP's).
        ideal: nDCG@k's ideal DCG: ``"achievable"`` (default, the user's relevant items in
            their best order, ``min(k, L)`` of them) or ``"k"`` (every one of the k ranks
            relevant, RecTools' ``NDCG(k)`` default, ``divide_by_achievable=False``; needs
            ``gain="binary"``; without a cutoff it is the achievable ideal).
        err_max_grade: ERR's top grade ``g_max`` in ``R = (2^g - 1) / 2^g_max``: ``"user"``
            (default, each user's highest relevant rating) or a number (``4``: gdeval's and
            ir_measures' ``ERR@k``, Chapelle et al. 2009's fixed scale; a rating above it is
            taken as ``g_max``).
        all_skipped: the summary when ``empty="skip"`` leaves out every user's value:
            ``"nan"`` (default: a mean of nothing) or ``"zero"`` (torchmetrics'
            ``empty_target_action="skip"`` when every query is skipped).
        iprec_rounding: how ``iprec@x`` and ``11pt_avg`` turn the recall level ``x`` into a
            count of relevant items: ``"plus_0.9"`` (default, ``floor(x R + 0.9)``, trec_eval
            9.x and pytrec_eval) or ``"nearest"`` (``x R`` rounded half away from zero,
            trec_eval 10.0's ``lround``).

    Example:
        >>> Options(ties="average").ties
        'average'
        >>> Options(score_threshold=3.5).effective_precision_denominator
        'returned'
    """

    relevance_threshold: float | str | None = None
    score_threshold: float | None = None
    protocol: Protocol = "full"
    ties: Ties = "stable"
    precision_denominator: PrecisionDenominator | None = None
    recall_denominator: RecallDenominator = "relevant"
    ap_normalizer: APNormalizer = "min_k_relevant"
    gain: Gain = "binary"
    empty: Empty = "zero"
    average: Average = "macro"
    users: Users = "truth"
    duplicates: Duplicates = "error"
    score_dtype: ScoreDtype = "float64"
    item_order: ItemOrder = "native"
    truth_scope: TruthScope = "all"
    nonpositive_scores: NonpositiveScores = "rank"
    empty_scope: EmptyScope = "undefined"
    max_list: int | None = None
    discount: Discount = "log2"
    ideal: Ideal = "achievable"
    err_max_grade: float | Literal["user"] = "user"
    all_skipped: AllSkipped = "nan"
    persistence: float = 0.9
    iprec_rounding: IprecRounding = "plus_0.9"

    def __post_init__(self) -> None:
        for name, choices in CHOICES.items():
            value = getattr(self, name)
            if value is None and name in _NULLABLE:  # e.g. precision_denominator=None
                continue
            if value not in choices:
                raise ReceValError(
                    f"option {name}={value!r} is not one of {', '.join(map(repr, choices))}"
                )
        rt = self.relevance_threshold
        if isinstance(rt, str):
            if rt != "user_mean":
                raise ReceValError(
                    f"option relevance_threshold={rt!r} must be a number, None or 'user_mean'"
                )
        elif rt is not None and (isinstance(rt, bool) or not _is_finite_number(rt)):
            raise ReceValError(f"option relevance_threshold={rt!r} must be a finite number")
        st = self.score_threshold
        if st is not None and (isinstance(st, bool) or not _is_finite_number(st)):
            raise ReceValError(f"option score_threshold={st!r} must be a finite number")
        ml = self.max_list
        if ml is not None and (
            isinstance(ml, bool) or not isinstance(ml, int | np.integer) or ml < 1
        ):
            raise ReceValError(f"option max_list={ml!r} must be a positive integer or None")
        if self.ideal == "k" and self.gain != "binary":
            raise ReceValError(
                f"option ideal='k' counts every one of the k ranks as relevant "
                f"(gain 1): it needs gain='binary', not {self.gain!r}"
            )
        object.__setattr__(self, "err_max_grade", _max_grade(self.err_max_grade))
        p = self.persistence
        if isinstance(p, bool) or not _is_finite_number(p) or not 0 < float(p) < 1:
            raise ReceValError(f"option persistence={p!r} must be a number in (0, 1)")

    @property
    def effective_precision_denominator(self) -> str:
        """The precision denominator in force once the default is resolved."""
        if self.precision_denominator is not None:
            return self.precision_denominator
        return "returned" if self.score_threshold is not None else "k"

    def replace(self, **changes: Any) -> Options:
        """A copy with some options changed (validated again).

        Example:
            >>> Options().replace(empty="skip").empty
            'skip'
        """
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The options as a plain dict, with the resolved precision denominator.

        Example:
            >>> Options().to_dict()["ties"]
            'stable'
        """
        out = dataclasses.asdict(self)
        out["precision_denominator"] = self.effective_precision_denominator
        return out


#: The option names, in the order of :class:`Options`.
OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Options))


def passed_options(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The options a caller passed: each field of :class:`Options` read by name from
    ``arguments`` (a function's keywords, ``locals()`` of :func:`receval.evaluate`), the ones
    left :data:`UNSET` dropped. A field the keywords lack is a ``KeyError`` here, so the
    keywords cannot fall behind the fields (tests/test_declared_once.py checks the rest).

    Example:
        >>> passed_options({**dict.fromkeys(OPTION_NAMES, UNSET), "ties": "item"})
        {'ties': 'item'}
    """
    return {name: arguments[name] for name in OPTION_NAMES if arguments[name] is not UNSET}


def _literal_choices(hint: Any) -> tuple[str, ...] | None:
    """The values of the ``Literal`` in an annotation (``Ties``, ``Gain | None``), or None:
    also for an open option whose ``Literal`` stands beside another type (``float |
    Literal["user"]``: a number or a name, validated by its own function)."""
    if typing.get_origin(hint) is Literal:
        return typing.get_args(hint)
    args = typing.get_args(hint)
    if any(a is not type(None) and typing.get_origin(a) is not Literal for a in args):
        return None
    inner = [_literal_choices(arg) for arg in args]
    return next((c for c in inner if c is not None), None)


#: Each named-choice option's choices, read from its ``Literal`` annotation: the one list that
#: validation, the CLI's ``click.Choice`` and the docs use.
CHOICES: dict[str, tuple[str, ...]] = {
    name: choices
    for name, hint in typing.get_type_hints(Options).items()
    if (choices := _literal_choices(hint)) is not None
}
#: The named-choice options that may also be None (``PrecisionDenominator | None``).
_NULLABLE: frozenset[str] = frozenset(
    name
    for name, hint in typing.get_type_hints(Options).items()
    if name in CHOICES and type(None) in typing.get_args(hint)
)


def _max_grade(value: object) -> float | str:
    """``err_max_grade`` validated: ``"user"`` or a finite number >= 0 (text from the command
    line read as one)."""
    if value == "user":
        return "user"
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)
    if isinstance(value, bool) or not _is_finite_number(value) or float(value) < 0:  # type: ignore[arg-type]
        raise ReceValError(f"option err_max_grade={value!r} must be 'user' or a finite number >= 0")
    return float(value)  # type: ignore[arg-type]


def _is_finite_number(value: object) -> bool:
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
