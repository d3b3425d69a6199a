"""Exact, mergeable sums of one estimator on one target over a set of requests.

Every estimate has the form ``V = mean_i c_i + sum_j mean_i(a_ij) mean_i(m_ij) / mean_i(b_ij)``
(:mod:`receval.offpolicy.estimators`), so the exact sums of ``c``, ``a``, ``b``, ``m`` over the
requests and their number determine it; the weights' diagnostics need the exact sums of
``w``, ``w^2`` and ``|w|``, their number and the largest ``w`` and ``|w|``. The sums are
integers (:class:`receval.accumulate.ExactSum`), so :meth:`EstimateSums.merge` is exact and
associative: days, time windows, variants or Spark partitions of one log, merged in any order,
give the sums of the whole log, and :meth:`EstimateSums.value` (the exact quotient, rounded
once) the estimate of the whole bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from receval.accumulate import (
    _DIGIT_BITS,
    _MIN_BLOCK_ROWS,
    _N_DIGITS,
    UNIT_BITS,
    ExactSum,
    _block_sums,
)
from receval.parallel import block_bounds, run_blocks

_ONE = 1 << UNIT_BITS  # the unit of an ExactSum is 2^-1074


#: columns summed in one pass (stacked side by side: one call, one set of threads)
CHUNK = 16


def exact_sums(columns: list[np.ndarray]) -> list[ExactSum]:
    """The exact sum of each array (arrays of one length stacked, CHUNK at a time, and
    summed in one numba pass).

    Example:
        >>> [s.to_float() for s in exact_sums([np.array([0.1, 0.2, -0.3]), np.ones(3)])]
        [2.7755575615628914e-17, 3.0]
    """
    out: list[ExactSum | None] = [None] * len(columns)
    by_size: dict[int, list[int]] = {}
    for j, x in enumerate(columns):
        by_size.setdefault(int(np.asarray(x).size), []).append(j)
    for where in by_size.values():
        for lo in range(0, len(where), CHUNK):
            part = where[lo:lo + CHUNK]
            # (k, n): each column copied whole (a fast copy); the kernel reads it transposed
            block = np.stack([np.asarray(columns[j], dtype=np.float64).ravel() for j in part])
            for j, total in zip(part, _sums_of_rows(block), strict=True):
                out[j] = total
    return [s if s is not None else ExactSum() for s in out]


def _sums_of_rows(block: np.ndarray) -> list[ExactSum]:
    """The exact sum of each row of ``block`` (k, n): accumulate's kernel over the (n, k)
    transposed view, in parallel blocks of columns of the view (any split: exact)."""
    k, n = block.shape
    values = block.T
    bounds = block_bounds(n, min_size=_MIN_BLOCK_ROWS) or [(0, 0)]
    nb = len(bounds)
    missing = np.zeros((nb, k), np.int64)
    first = np.full((nb, k), -1, np.int64)
    infs = np.zeros((nb, k, 2), np.int64)
    digits = np.zeros((nb, k, _N_DIGITS), np.int64)
    run_blocks(_block_sums, bounds, values, values.view(np.int64), np.arange(k, dtype=np.int64),
               np.zeros(k, np.bool_), 0.0, missing, first, infs, digits)
    total_digits = digits.sum(axis=0)
    inf_counts = infs.sum(axis=0)
    nans = missing.sum(axis=0)
    out = []
    for j in range(k):
        units = 0
        for i in range(_N_DIGITS - 1, -1, -1):
            units = (units << _DIGIT_BITS) + int(total_digits[j, i])
        out.append(ExactSum(units, int(inf_counts[j, 0]), int(inf_counts[j, 1]), int(nans[j])))
    return out


def _finite(*sums: ExactSum) -> bool:
    return all(s.finite for s in sums)


@dataclass(frozen=True)
class EstimateSums:
    """The exact sums of one (target, estimator) over ``n`` requests (see the module).

    Example:
        >>> one = EstimateSums.of(2, [np.array([1.0, 0.0])], [], np.array([2.0, 0.5]), 0, 2)
        >>> two = EstimateSums.of(1, [np.array([0.5])], [], np.array([1.0]), 1, 1)
        >>> both = one.merge(two)
        >>> both.value(), both.n, both.support_missing, both.diagnostics()["max_weight"]
        (0.5, 3, 1, 2.0)
    """

    n: int
    rows: int
    c: ExactSum
    ratios: tuple[tuple[ExactSum, ExactSum, ExactSum], ...]
    w_n: int
    w_sum: ExactSum
    w_sq: ExactSum
    w_abs: ExactSum
    w_max: float
    w_absmax: float
    support_missing: int

    @classmethod
    def of(cls, n: int, c: list[np.ndarray], ratios: list[tuple[ExactSum, ExactSum, ExactSum]],
           weights: np.ndarray | None, support_missing: int, rows: int,
           c_sum: ExactSum | None = None,
           weight_sums: tuple[ExactSum, ExactSum, ExactSum] | None = None) -> EstimateSums:
        """From the per-request ``c`` (an array in a list, or its exact sum ``c_sum``), the
        exact sums of the ratios' parts and the weights (or their exact sums)."""
        c_total = c_sum if c_sum is not None else exact_sums(c)[0]
        if weights is None or weights.size == 0:
            return cls(n, rows, c_total, tuple(ratios), 0, ExactSum(), ExactSum(), ExactSum(),
                       -math.inf, 0.0, support_missing)
        w_sum, w_sq, w_abs = weight_sums if weight_sums is not None else exact_sums(
            [weights, weights * weights, np.abs(weights)])
        return cls(n, rows, c_total, tuple(ratios), int(weights.size), w_sum, w_sq, w_abs,
                   float(np.max(weights)), float(np.max(np.abs(weights))), support_missing)

    def merge(self, other: EstimateSums) -> EstimateSums:
        """The sums over both sets of requests (exact: associative and commutative)."""
        if len(self.ratios) != len(other.ratios):
            raise ValueError("merging the sums of different estimators")
        ratios = tuple((a1 + a2, b1 + b2, m1 + m2) for (a1, b1, m1), (a2, b2, m2)
                       in zip(self.ratios, other.ratios, strict=True))
        return EstimateSums(self.n + other.n, self.rows + other.rows, self.c + other.c, ratios,
                            self.w_n + other.w_n, self.w_sum + other.w_sum,
                            self.w_sq + other.w_sq, self.w_abs + other.w_abs,
                            max(self.w_max, other.w_max), max(self.w_absmax, other.w_absmax),
                            self.support_missing + other.support_missing)

    def value(self) -> float:
        """The estimate: (sum c + sum_j sum a_j sum m_j / sum b_j) / n, exact, rounded once;
        NaN when a self-normalised part has no weight (0 / 0) or nothing was summed."""
        parts = [self.c, *(s for r in self.ratios for s in r)]
        if self.n == 0 or not _finite(*parts):
            return math.nan
        total = Fraction(self.c.units)
        for a, b, m in self.ratios:
            if b.units == 0:
                return math.nan
            total += Fraction(a.units * m.units, b.units)
        return float(total / (self.n * _ONE))

    def diagnostics(self) -> dict[str, float]:
        """``ess`` = (sum w)^2 / sum w^2, ``max_weight``, ``max_weight_share`` = max |w| /
        sum |w|, ``mean_weight``: each exact, rounded once (NaN without weights)."""
        nan = math.nan
        if self.w_n == 0 or not _finite(self.w_sum, self.w_sq, self.w_abs):
            return {"ess": nan, "max_weight": nan, "max_weight_share": nan, "mean_weight": nan}
        s, q, a = self.w_sum.units, self.w_sq.units, self.w_abs.units
        return {"ess": float(Fraction(s * s, q * _ONE)) if q else nan,
                "max_weight": self.w_max,
                "max_weight_share": float(Fraction(self.w_absmax) * _ONE / a) if a else nan,
                "mean_weight": float(Fraction(s, self.w_n * _ONE))}

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the sums as hexadecimal integers: lossless).

        Example:
            >>> s = EstimateSums.of(1, [np.array([0.1])], [], np.array([3.0]), 0, 1)
            >>> EstimateSums.from_json(s.to_json()) == s
            True
        """
        return {"n": self.n, "rows": self.rows, "c": self.c.to_json(),
                "ratios": [[x.to_json() for x in r] for r in self.ratios],
                "w_n": self.w_n, "w_sum": self.w_sum.to_json(), "w_sq": self.w_sq.to_json(),
                "w_abs": self.w_abs.to_json(),
                "w_max": None if math.isinf(self.w_max) else self.w_max,
                "w_absmax": self.w_absmax, "support_missing": self.support_missing}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EstimateSums:
        """The inverse of :meth:`to_json`."""
        ratios = tuple(tuple(ExactSum.from_json(x) for x in r) for r in data["ratios"])
        return cls(int(data["n"]), int(data["rows"]), ExactSum.from_json(data["c"]),
                   ratios,  # type: ignore[arg-type]
                   int(data["w_n"]), ExactSum.from_json(data["w_sum"]),
                   ExactSum.from_json(data["w_sq"]), ExactSum.from_json(data["w_abs"]),
                   -math.inf if data["w_max"] is None else float(data["w_max"]),
                   float(data["w_absmax"]), int(data["support_missing"]))
