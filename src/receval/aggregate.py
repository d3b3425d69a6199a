"""From per-user values to one number per metric: the zero-denominator policy, then macro or
micro averaging. Every user a policy touched is counted.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from receval.engines.numba_engine import KernelOutput
from receval.exceptions import UndefinedMetricError, UndefinedMetricWarning
from receval.measures.fbeta import fbeta
from receval.measures.spec import RATING, Family, MetricSpec
from receval.options import Options


@dataclass
class Aggregated:
    """The summary, per-user values after the policy, and what the policy did per metric."""

    summary: dict[str, float]
    per_user: np.ndarray
    undefined: dict[str, int]
    used: dict[str, int]


def aggregate(
    specs: list[MetricSpec],
    out: KernelOutput,
    options: Options,
    user_name: Callable[[int], object],
) -> Aggregated:
    """Apply ``options.empty`` to undefined values, then average each metric.

    ``user_name(row)`` names a user for the ``error`` policy's message.
    """
    values = out.value.copy()
    summary: dict[str, float] = {}
    undefined: dict[str, int] = {}
    used: dict[str, int] = {}
    for c, spec in enumerate(specs):
        column = values[:, c]
        missing = np.isnan(column)
        n_missing = int(missing.sum())
        if spec.family in RATING:
            # a user without rated pairs has no error to pool: not a policy matter
            undefined[spec.name] = n_missing
            used[spec.name] = int(len(column) - n_missing)
            summary[spec.name] = _pooled(spec, out.num[:, c], out.den[:, c])
            continue
        undefined[spec.name] = n_missing
        if n_missing and options.empty == "error":
            first = int(np.argmax(missing))
            raise UndefinedMetricError(
                f"{spec.name} is undefined for user {user_name(first)!r} "
                f"({_why(spec, out, first, options)}); choose empty='zero', 'one' or 'skip'"
            )
        if options.empty in ("zero", "one"):
            column[missing] = 0.0 if options.empty == "zero" else 1.0
        used[spec.name] = int(len(column) - (n_missing if options.empty == "skip" else 0))
        if options.average == "micro":
            summary[spec.name] = _micro(spec, out, c)
        else:
            summary[spec.name] = float(np.nanmean(column)) if used[spec.name] else math.nan
            if options.empty == "nan" and n_missing:
                summary[spec.name] = math.nan
    rating = {s.name for s in specs if s.family in RATING}
    touched = {name: n for name, n in undefined.items() if n and name not in rating}
    if touched and options.empty != "skip":
        worst = max(touched, key=lambda name: touched[name])
        warnings.warn(
            f"{len(touched)} metric(s) undefined for some users (up to {touched[worst]} users, "
            f"for {worst}) were set by empty={options.empty!r}; "
            "Result.counts['undefined'] has the count per metric",
            UndefinedMetricWarning,
            stacklevel=3,
        )
    return Aggregated(summary, values, undefined, used)


def _pooled(spec: MetricSpec, num: np.ndarray, den: np.ndarray) -> float:
    total = float(den.sum())
    if total == 0:
        return math.nan
    mean = float(num.sum()) / total
    return math.sqrt(mean) if spec.family is Family.RMSE else mean


def _micro(spec: MetricSpec, out: KernelOutput, c: int) -> float:
    num = float(out.num[:, c].sum())
    den = float(out.den[:, c].sum())
    if spec.family is Family.FBETA:
        den2 = float(out.den2[:, c].sum())
        p = num / den if den else math.nan
        r = num / den2 if den2 else math.nan
        return float(fbeta(p, r, spec.beta))
    return num / den if den else math.nan


def _why(spec: MetricSpec, out: KernelOutput, row: int, options: Options) -> str:
    if out.n_relevant[row] == 0 and spec.family is not Family.PRECISION:
        return "no relevant item"
    if spec.family is Family.NDCG:
        return "ideal DCG is 0: every relevant item has gain 0"
    return "nothing recommended"
