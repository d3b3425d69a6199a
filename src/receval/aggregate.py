"""From per-user values to one number per metric: the zero-denominator policy, then macro or
micro averaging. Every user a policy touched is counted.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from receval.engines.numba_engine import KernelOutput
from receval.engines.threads import block_bounds, run_blocks
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
    values = out.value  # filled in place: the per-user values are the policy's
    is_rating = np.array([spec.family in RATING for spec in specs], dtype=np.bool_)
    fill = {"zero": 0.0, "one": 1.0}.get(options.empty, math.nan)
    n_missing_of, sums = _missing_and_sums(values, ~is_rating, fill)
    n_users = values.shape[0]
    summary: dict[str, float] = {}
    undefined: dict[str, int] = {}
    used: dict[str, int] = {}
    for c, spec in enumerate(specs):
        n_missing = int(n_missing_of[c])
        undefined[spec.name] = n_missing
        if spec.family in RATING:
            # a user without rated pairs has no error to pool: not a policy matter
            used[spec.name] = n_users - n_missing
            summary[spec.name] = _pooled(spec, out.num[:, c], out.den[:, c])
            continue
        if n_missing and options.empty == "error":
            first = int(np.argmax(np.isnan(values[:, c])))
            raise UndefinedMetricError(
                f"{spec.name} is undefined for user {user_name(first)!r} "
                f"({_why(spec, out, first, options)}); choose empty='zero', 'one' or 'skip'"
            )
        used[spec.name] = n_users - (n_missing if options.empty == "skip" else 0)
        if options.average == "micro":
            summary[spec.name] = _micro(spec, out, c)
        elif options.empty == "nan" and n_missing:
            summary[spec.name] = math.nan
        else:
            summary[spec.name] = math.fsum(sums[:, c]) / used[spec.name] if used[spec.name] \
                else math.nan
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


def _missing_and_sums(
    values: np.ndarray, fillable: np.ndarray, fill: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per column: how many values are NaN, and partial sums of the rest (one row per block).

    NaN values of ``fillable`` columns become ``fill`` (unless ``fill`` is NaN) and count in
    the sums. One pass over the rows, in parallel blocks; each block sums with Neumaier's
    compensation, so the mean is as exact as ``math.fsum`` of the blocks' sums makes it.
    """
    bounds = block_bounds(values.shape[0], min_size=4096)
    missing = np.zeros((max(1, len(bounds)), values.shape[1]), dtype=np.int64)
    sums = np.zeros(missing.shape)
    run_blocks(_block_missing_and_sums, bounds, values, fillable, fill, missing, sums)
    return missing.sum(axis=0), sums


@numba.njit(cache=True, nogil=True)
def _block_missing_and_sums(block: int, lo: int, hi: int, values: np.ndarray,
                            fillable: np.ndarray, fill: float, missing: np.ndarray,
                            sums: np.ndarray) -> None:
    m = values.shape[1]
    do_fill = not np.isnan(fill)
    total = np.zeros(m)
    carry = np.zeros(m)
    for row in range(lo, hi):
        for c in range(m):
            v = values[row, c]
            if np.isnan(v):
                missing[block, c] += 1
                if not (do_fill and fillable[c]):
                    continue
                v = fill
                values[row, c] = v
            t = total[c] + v
            if abs(total[c]) >= abs(v):
                carry[c] += (total[c] - t) + v
            else:
                carry[c] += (v - t) + total[c]
            total[c] = t
    for c in range(m):
        sums[block, c] = total[c] + carry[c]


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
