"""Warnings about common mistakes in the input, raised where the user's code called receval.

Each warning names the option that handles it and can be silenced by its code
(``evaluate(..., silence=["no-threshold"])``, ``--silence no-threshold`` on the command line):

==================  =====================================================================
``no-threshold``    the truth holds graded ratings but no ``relevance_threshold`` was given
``no-match``        no predicted (user, item) has a truth row (the training file as truth?)
``id-mismatch``     most users have no hit and the two sides barely share ids
``ties``            tied scores straddle a cutoff under an order-dependent tie policy
``undefined``       a metric was undefined for some users and ``empty=`` filled it in
``train-items``     many predictions are items of the user's training data (``exclude_train``)
``train-overlap``   many truth rows are training rows (is the truth the test set?)
``train-future``    many training rows are dated after their user's first test row
``empty-reference`` the drift view's reference window has no evaluated list (no band)
``weights``         off-policy importance weights blow up (snips, sndr, switch_dr, ``clip=``)
``debias``          debiased metrics: weights concentrated (``propensity_clip=``), IPS above range
``replayed-lists``  a monitor batch repeats served lists an earlier run applied (counted once)
``protected-group`` rND/rKL/rRD's protected group is in no list (``protected_group=``)
``emptied-lists``   ``exclude_train`` removed every item of some users' lists
``ranks-as-scores`` the score column is 1..n within every list: ranks read as scores?
``threshold-range`` the relevance threshold lies outside the ratings' observed range
``list-depths``     models' lists of different depths compared on a metric without a cutoff
``head-ties``       the short head (or RecBole's tail) cuts through items of equal popularity
==================  =====================================================================
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ParamSpec, TypeVar

import numpy as np

from receval.exceptions import (
    IdMismatchWarning,
    NoMatchWarning,
    ReceValError,
    ReceValWarning,
    RelevanceThresholdWarning,
    TiesWarning,
    UndefinedMetricWarning,
)


class TrainItemsWarning(ReceValWarning):
    """Many prediction rows are items of their user's training data (``exclude_train``)."""

    code = "train-items"


class TrainOverlapWarning(ReceValWarning):
    """Many truth rows are also training rows: the truth is not a held-out test set?"""

    code = "train-overlap"


class TrainFutureWarning(ReceValWarning):
    """Many training rows are dated after their user's first test row (a temporal leak)."""

    code = "train-future"


class EmptyReferenceWarning(ReceValWarning):
    """The drift view's reference window has no evaluated list, so no band (``reference=``)."""

    code = "empty-reference"


class OffPolicyWeightsWarning(ReceValWarning):
    """An off-policy estimator's importance weights blow up (``receval.offpolicy``): prefer a
    self-normalised estimator, switch_dr or ``clip=``."""

    code = "weights"


class DebiasWarning(ReceValWarning):
    """The debiased metrics' weights 1/propensity are concentrated (``propensity_clip=``), or
    an IPS value is above its metric's range (``receval.debias``)."""

    code = "debias"


class ReplayedListsWarning(ReceValWarning):
    """A monitor batch repeats served lists an earlier run applied (the same user, served time
    and variant): they are skipped, each list counted once."""

    code = "replayed-lists"


class ProtectedGroupWarning(ReceValWarning):
    """rND/rKL/rRD's protected group is in no list: every value is undefined
    (``protected_group=``)."""

    code = "protected-group"


class EmptiedListsWarning(ReceValWarning):
    """``exclude_train`` removed every item of some users' lists: they are evaluated with an
    empty list."""

    code = "emptied-lists"


class RanksAsScoresWarning(ReceValWarning):
    """The score column holds 1..n within every user's list: ranks passed as scores (a
    higher score ranks first; a rank column is read as ranks under its own name)."""

    code = "ranks-as-scores"


class ThresholdRangeWarning(ReceValWarning):
    """The relevance threshold lies outside the range of the ratings read: every or no
    rating passes it."""

    code = "threshold-range"


class ListDepthsWarning(ReceValWarning):
    """Models' lists of different depths compared on a metric without a cutoff (MRR, MAP,
    R-precision read the whole list)."""

    code = "list-depths"


class HeadTiesWarning(ReceValWarning):
    """The short head (``head_share=``) or RecBole's tail (``tail_ratio=``) cuts through items
    of equal training popularity: which of them count as popular follows the order in which
    the items first appear, so the popularity-bias metrics may change with the row order."""

    code = "head-ties"


WARNINGS: dict[str, type[UserWarning]] = {
    w.code: w
    for w in (RelevanceThresholdWarning, NoMatchWarning, IdMismatchWarning, TiesWarning,
              UndefinedMetricWarning, TrainItemsWarning, TrainOverlapWarning,
              TrainFutureWarning, EmptyReferenceWarning, OffPolicyWeightsWarning,
              DebiasWarning, ReplayedListsWarning,
              ProtectedGroupWarning, EmptiedListsWarning, RanksAsScoresWarning,
              ThresholdRangeWarning, ListDepthsWarning, HeadTiesWarning)
}
#: users with no hit at all above this share, with ids barely shared, suggest mismatched ids
NO_HIT_SHARE = 0.5
#: ... where fewer than this share of the predicted items occur anywhere in the truth
ITEM_OVERLAP = 0.5

_silenced: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "receval_silenced", default=frozenset()
)


@contextlib.contextmanager
def silence(codes: str | Iterable[str] | None) -> Iterator[None]:
    """Within the block, receval's warnings with these codes are not raised.

    Example:
        >>> with silence(["no-match"]):
        ...     warn(NoMatchWarning, "not shown")
        >>> silence(["nope"]).__enter__()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: unknown warning code 'nope' in silence=; known: ...
    """
    wanted = {codes} if isinstance(codes, str) else set(codes or ())
    unknown = sorted(wanted - set(WARNINGS))
    if unknown:
        raise ReceValError(f"unknown warning code {unknown[0]!r} in silence=; known: "
                           f"{', '.join(sorted(WARNINGS))}")
    token = _silenced.set(_silenced.get() | wanted)
    try:
        yield
    finally:
        _silenced.reset(token)


_recorders: contextvars.ContextVar[tuple[list[dict[str, str]], ...]] = contextvars.ContextVar(
    "receval_recorders", default=()
)


@contextlib.contextmanager
def recording() -> Iterator[list[dict[str, str]]]:
    """Within the block, every receval warning raised (not silenced) is also kept, once, as
    ``{"code": ..., "message": ...}`` in the list this yields, whatever the warnings filter
    does with it: the run's warnings that :attr:`receval.result.Result.warnings` and every
    output carry (:mod:`receval.report.audit`). Blocks nest: each keeps what was raised in it.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(), recording() as kept:
        ...     warnings.simplefilter("ignore")
        ...     warn(NoMatchWarning, "nothing matched")
        ...     warn(NoMatchWarning, "nothing matched")
        >>> [w["code"] for w in kept]
        ['no-match']
    """
    kept: list[dict[str, str]] = []
    token = _recorders.set((*_recorders.get(), kept))
    try:
        yield kept
    finally:
        _recorders.reset(token)


def keep(record: dict[str, str]) -> None:
    """Add one warning record (``code``, ``message``) to every active :func:`recording`,
    once; the command line's own warnings (``receval evaluate``'s undefined values) come
    here too."""
    for kept in _recorders.get():
        if record not in kept:
            kept.append(record)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def keeps_warnings(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """``func`` run inside :func:`recording`, its result's ``warnings`` set to the warnings
    raised meanwhile (the public doors: :func:`receval.evaluate`,
    :func:`receval.evaluate_scores`), so a result carries its run's warnings into every output.

    Example:
        >>> import warnings
        >>> class Out:
        ...     warnings: list = []
        >>> @keeps_warnings
        ... def run() -> Out:
        ...     warn(NoMatchWarning, "nothing matched")
        ...     return Out()
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     [w["code"] for w in run().warnings]
        ['no-match']
    """
    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with recording() as kept:
            out = func(*args, **kwargs)
        if hasattr(out, "warnings"):
            out.warnings = list(kept)
        return out

    return wrapper


def record_of(message: object, category: type[Warning] | None = None) -> dict[str, str]:
    """A warning as the outputs record it: its silence code (``""`` for a warning that is not
    receval's) and its text.

    Example:
        >>> record_of(NoMatchWarning("nothing matched"))
        {'code': 'no-match', 'message': 'nothing matched'}
    """
    kind = category or type(message)
    return {"code": str(getattr(kind, "code", "")), "message": str(message)}


def warn(category: type[UserWarning], message: str) -> None:
    """Raise a receval warning pointing at the first caller outside receval, unless silenced;
    the message ends by saying how to silence it.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn(NoMatchWarning, "nothing matched")
        >>> str(caught[0].message)
        "nothing matched (silence: silence=['no-match'] / --silence no-match)"
    """
    code = getattr(category, "code", "")
    if code in _silenced.get():
        return
    text = f"{message} (silence: silence=[{code!r}] / --silence {code})" if code else message
    keep(record_of(text, category))
    warnings.warn(text, category, stacklevel=_outside_receval())


def _outside_receval() -> int:
    """The ``stacklevel`` of the innermost frame that is not receval's (the user's call)."""
    frame = sys._getframe(2)  # the caller of warn()
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "receval":
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def check_relevance_threshold(ratings: np.ndarray | None, *, threshold_given: bool,
                              gain: str, column: str) -> None:
    """Warn when the truth's ratings vary and no relevance threshold says which are relevant.

    ``threshold_given``: a threshold was passed (``None`` too: every row relevant on purpose)
    or set by the profile. Graded gains (``gain`` other than ``"binary"``) read the ratings on
    purpose, a low rating being a low gain: no warning either.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     check_relevance_threshold(np.array([0.5, 3.0, 5.0]), threshold_given=False,
        ...                               gain="binary", column="rating")
        >>> print(str(caught[0].message).split(";")[0])
        truth column 'rating' holds graded ratings (0.5 to 5) but no relevance_threshold was given
    """
    if threshold_given or gain != "binary" or ratings is None or len(ratings) == 0:
        return
    finite = ratings[np.isfinite(ratings)]
    if len(finite) == 0:
        return
    low, high = float(finite.min()), float(finite.max())
    if low == high:
        return
    usual = suggested_threshold(low, high)
    warn(RelevanceThresholdWarning,
         f"truth column {column!r} holds graded ratings ({low:g} to {high:g}) but no "
         f"relevance_threshold was given; every rated item counts as relevant, the "
         f"{low:g}s too. Pass relevance_threshold={usual:g} (--relevance-threshold {usual:g}) "
         f"to count ratings >= {usual:g} as relevant, or relevance_threshold=None to keep "
         "every row relevant")


def check_threshold_range(ratings: np.ndarray | None, threshold: object, *,
                          column: str) -> None:
    """Warn when a numeric relevance ``threshold`` does not fit the ratings read: above every
    rating (nothing is relevant), at or below every one of graded ratings (everything is), or
    a share between 0 and 1 on a scale that runs past 1 from above 0 (0.8 on 0.5-5 stars:
    only the 0.5s fall below it). ``ratings``: the values, or their smallest and largest.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     check_threshold_range(np.array([0.5, 3.0, 5.0]), 0.8, column="rating")
        ...     check_threshold_range(np.array([0.5, 3.0, 5.0]), 4, column="rating")
        >>> len(caught), str(caught[0].message).split(";")[0]
        (1, "relevance_threshold=0.8 reads as a share of a 0-1 scale, but truth column 'rating' \
runs from 0.5 to 5: only ratings below 0.8 are not relevant")
    """
    if (threshold is None or isinstance(threshold, str) or ratings is None
            or len(ratings) == 0):
        return
    finite = ratings[np.isfinite(ratings)]
    if len(finite) == 0:
        return
    low, high, t = float(finite.min()), float(finite.max()), float(threshold)  # type: ignore[arg-type]
    scale = f"truth column {column!r} runs from {low:g} to {high:g}"
    if t > high:
        what = f"relevance_threshold={t:g} is above every rating ({scale}): nothing is relevant"
    elif t <= low < high:
        what = (f"relevance_threshold={t:g} is at or below every rating ({scale}): every "
                "rated row is relevant")
    elif 0 < low < t < 1 < high:
        what = (f"relevance_threshold={t:g} reads as a share of a 0-1 scale, but {scale}: "
                f"only ratings below {t:g} are not relevant")
    else:
        return
    usual = suggested_threshold(low, high)
    warn(ThresholdRangeWarning,
         f"{what}; give a threshold on the ratings' own scale (relevance_threshold={usual:g}, "
         f"--relevance-threshold {usual:g}), or relevance_threshold=None to keep every row")


#: the ranks-as-scores check needs a list at least this long: scores 2, 1 on two-item lists are
#: a common worked example, scores 1..n on every list of five or more are ranks
MIN_RANKED_LIST = 5


def check_ranks_as_scores(users: Any, scores: np.ndarray | None, *, column: str) -> None:
    """Warn when the score column holds 1..n within every user's list (one list at least
    :data:`MIN_RANKED_LIST` long): ranks passed as scores, read upside down (a higher score
    ranks first).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     check_ranks_as_scores(np.array([1] * 5 + [2]), np.array([2.0, 1, 3, 5, 4, 1]),
        ...                           column="score")
        ...     check_ranks_as_scores(np.array([1, 1]), np.array([0.9, 0.2]), column="score")
        >>> len(caught), str(caught[0].message).split("?")[0]
        (1, "predictions column 'score' holds 1..n within every user's list: ranks passed as scores")
    """  # noqa: E501
    if scores is None or len(scores) < 2:
        return
    v = np.asarray(scores, dtype=np.float64)
    if v.min() != 1.0 or not (v == np.floor(v)).all():  # real scores leave here at once
        return
    import pandas as pd

    if isinstance(users, np.ndarray):
        ids = users
    elif hasattr(users, "to_pandas"):  # an Arrow array or chunked array
        ids = users.to_pandas().to_numpy()
    else:
        ids = np.asarray(users)
    codes = pd.factorize(ids)[0]
    per = pd.DataFrame({"u": codes, "v": v}).groupby("u")["v"].agg(
        ["size", "min", "max", "nunique"])
    n = per["size"].to_numpy()
    if n.max() < MIN_RANKED_LIST or not (
            (per["min"] == 1) & (per["max"] == n) & (per["nunique"] == n)).all():
        return
    warn_ranks_as_scores(f"predictions column {column!r} holds",
                         "pass ranks as ranks: a column named 'rank' (or prediction_columns="
                         "{'rank': NAME}, --prediction-columns rank=NAME) is read with 1 = best "
                         "where there is no score column")


def warn_ranks_as_scores(held: str, remedy: str) -> None:
    """The ranks-as-scores warning of every door (:func:`check_ranks_as_scores` for long
    tables, :func:`receval.evaluate_scores` for score matrices): ``held`` names what holds
    1..n, ``remedy`` how to pass ranks there.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_ranks_as_scores("the score matrix holds", "negate them")
        >>> str(caught[0].message).split(":")[0]
        "the score matrix holds 1..n within every user's list"
    """
    warn(RanksAsScoresWarning,
         f"{held} 1..n within every user's list: ranks passed as scores? A higher score ranks "
         f"first, so each list is read upside down; {remedy}")


def suggested_threshold(low: float, high: float) -> float:
    """The usual threshold for a rating scale: 4 of 5 stars, 8 of 10, 1 for 0/1 labels, else
    the value at 75% of the range.

    Example:
        >>> suggested_threshold(0.5, 5.0), suggested_threshold(1, 10), suggested_threshold(0, 1)
        (4.0, 8.0, 1.0)
    """
    if high <= 1:
        return 1.0 if low < 1 else high
    if high <= 5:
        return 4.0
    if high <= 10:
        return 8.0
    return float(np.ceil(low + 0.75 * (high - low)))


def check_matches(*, predictions_without_truth: int, users: int, users_without_match: int,
                  predicted_item_overlap: Callable[[], float]) -> None:
    """Warn when the predictions never meet the truth, or most users miss because ids differ.

    ``users``: evaluated users with predictions; ``users_without_match``: those none of whose
    predicted items has a truth row; ``predictions_without_truth``: prediction rows whose
    (user, item) has no truth row; ``predicted_item_overlap()``: the share of distinct
    predicted items found anywhere in the truth (computed only when most users miss).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     check_matches(predictions_without_truth=6, users=2, users_without_match=2,
        ...                   predicted_item_overlap=lambda: 0.0)
        >>> print(str(caught[0].message).split(":")[0])
        none of the 6 predictions has a truth row (every metric is 0)
    """
    if users == 0:
        return
    if users_without_match == users:
        warn(NoMatchWarning,
             f"none of the {predictions_without_truth:,} predictions has a truth row (every "
             "metric is 0): check that the truth is the test set and not the training set, "
             "that ids have the same type and form on both sides, and the columns read "
             "(truth_columns= / prediction_columns=, --truth-columns / --prediction-columns)")
        return
    if users_without_match <= NO_HIT_SHARE * users:
        return
    overlap = predicted_item_overlap()
    if overlap < ITEM_OVERLAP:
        warn(IdMismatchWarning,
             f"{users_without_match:,} of {users:,} users ({users_without_match / users:.0%}) "
             f"have no predicted item in their truth, and only {overlap:.0%} of the predicted "
             "items occur anywhere in the truth: the item ids probably do not match (types, "
             "padding such as '007' and '7', the item column: truth_columns= / "
             "prediction_columns=)")


#: tie policies whose numbers depend on the input's row order when scores tie
ORDER_DEPENDENT_TIES = frozenset({"stable", "ranx"})


def check_ties(ties_at_cutoff: dict[int, int], ties: str) -> None:
    """One :class:`~receval.exceptions.TiesWarning` when tied scores straddle a cutoff under
    a tie policy that orders them by input row order: shuffled rows can change the numbers.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     check_ties({1: 2, 10: 0}, "stable")
        ...     check_ties({1: 2}, "average")
        >>> len(caught), str(caught[0].message)[:48]
        (1, 'tied scores straddle a cutoff for some users (2 ')
    """
    tied = {k: n for k, n in ties_at_cutoff.items() if n}
    if not tied or ties not in ORDER_DEPENDENT_TIES:
        return
    where = ", ".join(f"{n:,} at k={k}" for k, n in tied.items())
    warn(
        TiesWarning,
        f"tied scores straddle a cutoff for some users ({where}) and ties={ties!r} "
        "orders them by the input's row order, so shuffled rows can change the numbers; pass "
        "ties='average' (the exact expectation over every order of the tied items) or "
        "ties='item_ascending', 'item', 'pessimistic' or 'optimistic' (order-independent)",
    )
