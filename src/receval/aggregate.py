"""From per-user values to one number per metric: the zero-denominator policy, then macro or
micro averaging. Every user a policy touched is counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from receval import checks
from receval.engines.numba_engine import KernelOutput
from receval.engines.threads import run_blocks
from receval.exceptions import UndefinedMetricError, UndefinedMetricWarning
from receval.measures.fbeta import fbeta
from receval.measures.rating import pooled
from receval.measures.spec import RATING, Family, MetricSpec
from receval.options import Options

#: rows per block of the summary sums: fixed, so that no number depends on the thread count
SUM_BLOCK = 8192


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
            summary[spec.name] = pooled(spec.family is Family.RMSE, out.num[:, c],
                                        out.den[:, c], values[:, c])
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
        checks.warn(
            UndefinedMetricWarning,
            f"{len(touched)} metric(s) undefined for some users (up to {touched[worst]} users, "
            f"for {worst}) were set by empty={options.empty!r}; "
            "Result.counts['undefined'] has the count per metric",
        )
    return Aggregated(summary, values, undefined, used)


def _missing_and_sums(
    values: np.ndarray, fillable: np.ndarray, fill: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per column: how many values are NaN, and partial sums of the rest (one row per block).

    NaN values of ``fillable`` columns become ``fill`` (unless ``fill`` is NaN) and count in
    the sums. One pass over the rows, in parallel blocks; each block sums with Neumaier's
    compensation, so the mean is as exact as ``math.fsum`` of the blocks' sums makes it.
    The blocks are fixed runs of :data:`SUM_BLOCK` rows, whatever the thread count, so the
    sums (and the summary) are the same bit for bit on any number of threads.
    """
    n = values.shape[0]
    bounds = [(lo, min(lo + SUM_BLOCK, n)) for lo in range(0, n, SUM_BLOCK)]
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


def _micro(spec: MetricSpec, out: KernelOutput, c: int) -> float:
    num_u, den_u = out.num[:, c], out.den[:, c]
    if spec.family is Family.NDCG and len(out.gain_shift) and out.gain_shift.any():
        # users' DCG and IDCG come scaled by 2^-shift (huge graded gains): bring them to
        # the largest shift, one scale for all (the smaller users' sums vanish next to it)
        rescale = (out.gain_shift - out.gain_shift.max()).astype(np.int64)
        num_u, den_u = np.ldexp(num_u, rescale), np.ldexp(den_u, rescale)
    num = float(num_u.sum())
    den = float(den_u.sum())
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
