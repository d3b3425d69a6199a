"""From per-user values to one number per metric: the zero-denominator policy, then macro or
micro averaging. Every user a policy touched is counted.

The sums are exact (:class:`~receval.accumulate.Accumulator`): a summary is the exactly
rounded mean (or micro ratio, or pooled RMSE/MAE) of the per-user values, so it is the same bit
for bit however the users are split (threads, blocks, partitions) and merged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from receval import checks
from receval.accumulate import Accumulator
from receval.exceptions import UndefinedMetricError, UndefinedMetricWarning
from receval.measures.spec import RATING, Family, MetricSpec
from receval.options import Options


class PerUserArrays(Protocol):
    """What :func:`aggregate` reads of an engine's output (``(U, M)`` arrays but the last two).

    ``value`` (NaN: undefined), ``num``/``den``/``den2`` (no rows unless micro averaging or
    RMSE/MAE asked for them), ``n_relevant`` ``(U,)`` and ``gain_shift`` ``(U,)``: nDCG's
    ``num``/``den`` are scaled by ``2^-gain_shift``.
    """

    value: np.ndarray
    num: np.ndarray
    den: np.ndarray
    den2: np.ndarray
    n_relevant: np.ndarray
    gain_shift: np.ndarray


@dataclass
class Aggregated:
    """The summary, per-user values after the policy, what the policy did per metric, and the
    exact sums the summary was finalised from (mergeable with other users' sums)."""

    summary: dict[str, float]
    per_user: np.ndarray
    undefined: dict[str, int]
    used: dict[str, int]
    sums: Accumulator | None = None


def reductions(specs: list[MetricSpec]) -> tuple[list[str], list[float]]:
    """Each metric's reduction (:data:`receval.accumulate.KINDS`) and F-beta's beta.

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> reductions(parse_metrics(["P@5", "F1@5", "RMSE"]))
        (['mean', 'fbeta', 'rmse'], [1.0, 1.0, 1.0])
    """
    kinds = {Family.RMSE: "rmse", Family.MAE: "mae", Family.FBETA: "fbeta",
             Family.GM_AP: "geometric", Family.NUM_REL_RET: "sum"}
    return ([kinds.get(s.family, "mean") for s in specs],
            [float(s.beta) if s.family is Family.FBETA else 1.0 for s in specs])


def accumulate(specs: list[MetricSpec], out: PerUserArrays, options: Options, *,
               values: np.ndarray | None = None, first_row: int = 0,
               ids: Any = None) -> Accumulator:
    """The exact sums of ``out``'s users (``values`` in place of ``out.value`` if given);
    under ``empty="zero"``/``"one"`` the undefined values (not RMSE/MAE) are set to 0/1 in
    place (the per-user values) when the array is C-contiguous float64 (else in a copy).
    The first undefined user is ``first_row`` + its row, or its id in ``ids``.

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> from types import SimpleNamespace
        >>> out = SimpleNamespace(value=np.array([[1.0], [np.nan]]), num=np.zeros((0, 1)),
        ...                       den=np.zeros((0, 1)), den2=np.zeros((0, 1)),
        ...                       n_relevant=np.array([1, 0]), gain_shift=np.zeros(2))
        >>> acc = accumulate(parse_metrics(["R@5"]), out, Options(empty="one"))
        >>> acc.finalize(Options(empty="one")), float(out.value[1, 0])
        ({'R@5': 1.0}, 1.0)
    """
    kinds, betas = reductions(specs)
    rating = np.array([s.family in RATING for s in specs], dtype=np.bool_)
    parts = np.ones(len(specs), np.bool_) if options.average == "micro" else rating
    ndcg = [s.family is Family.NDCG for s in specs]
    shift = None
    if options.average == "micro" and any(ndcg) and len(out.gain_shift) \
            and np.any(out.gain_shift):
        shift = np.asarray(out.gain_shift).astype(np.int64)
    return Accumulator.from_arrays(
        [s.name for s in specs], out.value if values is None else values, out.num, out.den,
        out.den2, kinds=kinds, betas=betas, parts=parts, scale_exp=shift, scaled=ndcg,
        first_row=first_row, ids=ids, fill={"zero": 0.0, "one": 1.0}.get(options.empty),
        fillable=~rating)


def aggregate(
    specs: list[MetricSpec],
    out: PerUserArrays,
    options: Options,
    user_name: Callable[[int], object],
    *,
    warn: bool = True,
) -> Aggregated:
    """Apply ``options.empty`` to undefined values, then average each metric (``warn``: the
    undefined-value warning, :func:`warn_undefined`, here; ``False`` where
    :func:`receval.finalize.finish` gives it).

    ``user_name(row)`` names a user for the ``error`` policy's message.

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> from types import SimpleNamespace
        >>> out = SimpleNamespace(value=np.array([[0.1], [0.2], [np.nan]]),
        ...                       num=np.zeros((0, 1)), den=np.zeros((0, 1)),
        ...                       den2=np.zeros((0, 1)), n_relevant=np.array([1, 1, 0]),
        ...                       gain_shift=np.zeros(3))
        >>> aggregate(parse_metrics(["R@5"]), out, Options(empty="skip"), str).summary
        {'R@5': 0.15000000000000002}
    """
    per_user = np.ascontiguousarray(out.value, dtype=np.float64)  # filled in place
    sums = accumulate(specs, out, options, values=per_user)
    n_users = per_user.shape[0]
    undefined: dict[str, int] = {}
    used: dict[str, int] = {}
    for spec, ms in zip(specs, sums.metrics, strict=True):
        undefined[spec.name] = ms.n_undefined
        if spec.family in RATING:
            # a user without rated pairs has no error to pool: not a policy matter
            used[spec.name] = n_users - ms.n_undefined
            continue
        if ms.n_undefined and options.empty == "error":
            first = int(ms.first_undefined)
            raise UndefinedMetricError(
                f"{spec.name} is undefined for user {user_name(first)!r} "
                f"({_why(spec, out, first)}); choose empty='zero', 'one' or 'skip'"
            )
        used[spec.name] = n_users - (ms.n_undefined if options.empty == "skip" else 0)
    summary = sums.finalize(options)
    if warn:
        warn_undefined(specs, options, undefined)
    return Aggregated(summary, per_user, undefined, used, sums)


def warn_undefined(specs: list[MetricSpec], options: Options, undefined: dict[str, int]) -> None:
    """The one warning that ``options.empty`` set undefined values (``undefined``: users per
    metric), whichever door the counts come from; and, for RMSE/MAE (pooled over the rated
    pairs, so no policy applies), the one warning that users without a rated prediction have
    no value and are left out of the pooled error.

    Example:
        >>> import warnings
        >>> from receval.measures.spec import parse_metrics
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_undefined(parse_metrics(["R@5"]), Options(), {"R@5": 2})
        >>> str(caught[0].message).split(";")[0]
        "1 metric(s) undefined for some users (up to 2 users, for R@5) were set by empty='zero'"
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_undefined(parse_metrics(["RMSE"]), Options(), {"RMSE": 3})
        >>> str(caught[0].message).split(":")[0]
        'RMSE undefined for 3 users without a rated prediction (a predicted item the truth rates)'
    """
    rating = {s.name for s in specs if s.family in RATING}
    unrated = {s.name: undefined[s.name] for s in specs
               if undefined.get(s.name) and s.name in rating}
    if unrated:  # whatever empty= says: a user without rated pairs has no error to pool
        names = ", ".join(unrated)
        checks.warn(
            UndefinedMetricWarning,
            f"{names} undefined for {max(unrated.values())} users without a rated prediction "
            f"(a predicted item the truth rates): left out of the pooled {names}; "
            "Result.counts['undefined'] has the count per metric",
        )
    touched = {s.name: undefined[s.name] for s in specs
               if undefined.get(s.name) and s.name not in rating}
    if touched and options.empty != "skip":
        worst = max(touched, key=lambda name: touched[name])
        checks.warn(
            UndefinedMetricWarning,
            f"{len(touched)} metric(s) undefined for some users (up to {touched[worst]} users, "
            f"for {worst}) were set by empty={options.empty!r}; "
            "Result.counts['undefined'] has the count per metric",
        )


def _why(spec: MetricSpec, out: PerUserArrays, row: int) -> str:
    if out.n_relevant[row] == 0 and spec.family is not Family.PRECISION:
        return "no relevant item"
    if spec.family is Family.NDCG:
        return "ideal DCG is 0: every relevant item has gain 0"
    return "nothing recommended"
