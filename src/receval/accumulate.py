"""Exact, mergeable, serialisable accumulators: from per-user values to one number per metric.

An :class:`Accumulator` holds, per metric, the *exact* sum of the defined per-user values (an
integer count of 2^-1074, the smallest float: every float is a whole number of them), the
numbers of defined and undefined users, the exact sums of the numerators and denominators that
micro averages and pooled RMSE/MAE need, and the first undefined user (for
``empty="error"``). Sums of integers are exact, so :meth:`Accumulator.merge` is exact and
associative: any split of the users (threads, Spark partitions, time windows, strata), merged
in any order or tree shape, gives the same accumulator, and :meth:`Accumulator.finalize` the
same summary bit for bit. A summary is the exactly rounded result: the mean is the exact sum
divided by the count, rounded once; a micro average the exact ratio of the exact sums, rounded
once; a pooled RMSE the correctly rounded square root of the exact pooled mean.

The hot loop (:func:`_block_sums`, numba, one pass, in parallel blocks of rows) adds each
float's 53-bit integer significand into a slot per binary exponent (at most 1,024 rows a slot
between flushes, so an int64 cannot overflow), then flushes the used slots into 32-bit digits
of a fixed-point number that spans the whole float range: no rounding anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numba
import numpy as np

from receval.exceptions import UndefinedMetricError
from receval.options import Options
from receval.parallel import block_bounds, run_blocks
from receval.scalars import plain

#: a sum's unit is 2^-UNIT_BITS (the smallest subnormal float)
UNIT_BITS = 1074
#: the reductions a metric can have: the mean of its per-user values (micro: num / den),
#: F-beta (micro: from micro precision num/den and micro recall num/den2), pooled RMSE/MAE
KINDS = ("mean", "fbeta", "rmse", "mae", "geometric", "sum")
#: the floor of a value under the geometric mean (trec_eval's ``MIN_GEO_MEAN``): log(0) is -inf
GEOMETRIC_FLOOR = 1e-5

_DIGIT_BITS = 32
_N_DIGITS = 70  # 2046 slots + 94 bits of a flushed slot, in 32-bit digits, plus headroom
_N_SLOTS = 2046  # binary exponents of finite floats (subnormals share the first)
_FLUSH_ROWS = 1024  # 1024 significands below 2^53 sum below 2^63
_MIN_BLOCK_ROWS = 16_384


@dataclass(frozen=True)
class ExactSum:
    """An exact sum of floats: ``units * 2^-1074`` plus counts of infinities and NaNs.

    Example:
        >>> s = ExactSum.of([0.1, 0.2, -0.3])
        >>> s.to_float(), ExactSum.of([1e308, 1e308, -1e308]).to_float()
        (2.7755575615628914e-17, 1e+308)
    """

    units: int = 0
    pos_inf: int = 0
    neg_inf: int = 0
    nan: int = 0

    @classmethod
    def of(cls, values: Sequence[float]) -> ExactSum:
        """The exact sum of ``values`` (plain Python; the arrays go through numba).

        Example:
            >>> ExactSum.of([2.0**-1074, 1.0]).units == 2**1074 + 1
            True
        """
        total = cls()
        for v in values:
            total = total + cls._one(float(v))
        return total

    @classmethod
    def _one(cls, v: float) -> ExactSum:
        if math.isnan(v):
            return cls(nan=1)
        if math.isinf(v):
            return cls(pos_inf=1) if v > 0 else cls(neg_inf=1)
        n, d = v.as_integer_ratio()
        return cls(units=n * ((1 << UNIT_BITS) // d))

    def __add__(self, other: ExactSum) -> ExactSum:
        return ExactSum(self.units + other.units, self.pos_inf + other.pos_inf,
                        self.neg_inf + other.neg_inf, self.nan + other.nan)

    @property
    def finite(self) -> bool:
        """No infinity and no NaN was added.

        Example:
            >>> ExactSum.of([1.0]).finite, ExactSum.of([math.inf]).finite
            (True, False)
        """
        return not (self.pos_inf or self.neg_inf or self.nan)

    def _special(self) -> float:
        if self.nan or (self.pos_inf and self.neg_inf):
            return math.nan
        return math.inf if self.pos_inf else -math.inf

    def to_float(self) -> float:
        """The sum, rounded once (``inf`` if it is beyond the float range).

        Example:
            >>> ExactSum.of([1.0, 2.0**-60]).to_float()
            1.0
        """
        return self.divided_by(1)

    def divided_by(self, count: int) -> float:
        """The sum over a positive whole ``count``, rounded once: the exactly rounded mean.

        Example:
            >>> ExactSum.of([0.1] * 10).divided_by(10)
            0.1
        """
        if not self.finite:
            return self._special()
        return _ratio(self.units, count << UNIT_BITS)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the units as a hexadecimal string (lossless).

        Example:
            >>> ExactSum.of([1.5]).to_json()["units"] == hex(3 << 1073)
            True
        """
        return {"units": hex(self.units), "pos_inf": self.pos_inf, "neg_inf": self.neg_inf,
                "nan": self.nan}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExactSum:
        """The inverse of :meth:`to_json`.

        Example:
            >>> s = ExactSum.of([0.1, math.inf]); ExactSum.from_json(s.to_json()) == s
            True
        """
        return cls(int(data["units"], 16), int(data["pos_inf"]), int(data["neg_inf"]),
                   int(data["nan"]))


def _ratio(a: int, b: int) -> float:
    """``a / b`` of whole numbers, rounded once (Python's int division is correctly rounded);
    ``inf`` beyond the float range, NaN for 0 / 0."""
    if b == 0:
        return math.nan if a == 0 else (math.inf if a > 0 else -math.inf)
    try:
        return a / b
    except OverflowError:
        return math.inf if (a > 0) == (b > 0) else -math.inf


def _sqrt_ratio(a: int, b: int) -> float:
    """``sqrt(a / b)`` of whole numbers ``a >= 0``, ``b > 0``, rounded once.

    The integer square root is taken with at least 62 bits and a sticky last bit (set when the
    root is inexact), so the one rounding to 53 bits is the correct one.

    Example:
        >>> _sqrt_ratio(2, 1) == math.sqrt(2), _sqrt_ratio(9, 4)
        (True, 1.5)
    """
    if a == 0:
        return 0.0
    shift = 124 - (a.bit_length() - b.bit_length())
    shift += shift & 1  # even: the root scales by half of it
    n, d = (a << shift, b) if shift >= 0 else (a, b << -shift)
    x, rem = divmod(n, d)
    q = math.isqrt(x)
    q = 2 * q + (0 if rem == 0 and q * q == x else 1)
    return _ratio(q, 1 << (shift // 2 + 1)) if shift // 2 + 1 >= 0 \
        else _ratio(q << -(shift // 2 + 1), 1)


def _fbeta(p: float, r: float, beta: float) -> float:
    """F-beta from a precision and a recall (as :func:`receval.measures.fbeta.fbeta`).

    Example:
        >>> round(_fbeta(0.5, 1.0, 1.0), 4), _fbeta(0.0, 0.0, 1.0)
        (0.6667, 0.0)
    """
    if math.isnan(p) or math.isnan(r):
        return math.nan
    if p + r == 0.0:
        return 0.0
    b2 = beta * beta
    return (1.0 + b2) * p * r / (b2 * p + r)


def _quotient(num: ExactSum, den: ExactSum) -> float:
    if num.finite and den.finite:
        return _ratio(num.units, den.units)
    with np.errstate(all="ignore"):
        return float(np.float64(num.to_float()) / np.float64(den.to_float()))


@dataclass(frozen=True)
class MetricSums:
    """What one metric's summary is computed from (see :class:`Accumulator`).

    ``total`` sums the defined values; ``num``/``den``/``den2`` the micro (or pooled) parts;
    ``first_undefined`` names the first user without a value (a row or an id; ``None``).

    Example:
        >>> MetricSums("P@1").n_users
        0
    """

    name: str
    kind: str = "mean"
    beta: float = 1.0
    total: ExactSum = field(default_factory=ExactSum)
    n_defined: int = 0
    n_undefined: int = 0
    num: ExactSum = field(default_factory=ExactSum)
    den: ExactSum = field(default_factory=ExactSum)
    den2: ExactSum = field(default_factory=ExactSum)
    first_undefined: Any = None

    @property
    def n_users(self) -> int:
        """Users seen, with a value or not."""
        return self.n_defined + self.n_undefined

    def merge(self, other: MetricSums) -> MetricSums:
        """Both sets of users; ``self``'s first undefined user comes first.

        Example:
            >>> a = MetricSums("P@1", n_defined=2, first_undefined=None)
            >>> b = MetricSums("P@1", n_undefined=1, first_undefined="u7")
            >>> m = a.merge(b); (m.n_users, m.first_undefined)
            (3, 'u7')
        """
        if (self.name, self.kind, self.beta) != (other.name, other.kind, other.beta):
            raise ValueError(f"cannot merge the sums of {self.name} ({self.kind}) with those of "
                             f"{other.name} ({other.kind})")
        return replace(
            self, total=self.total + other.total, n_defined=self.n_defined + other.n_defined,
            n_undefined=self.n_undefined + other.n_undefined, num=self.num + other.num,
            den=self.den + other.den, den2=self.den2 + other.den2,
            first_undefined=(self.first_undefined if self.first_undefined is not None
                             else other.first_undefined))

    def finalize(self, empty: str = "zero", average: str = "macro",
                 all_skipped: str = "nan") -> float:
        """The summary under the ``empty`` policy and ``average`` (see
        :meth:`Accumulator.finalize`); ``all_skipped="zero"``: 0 where ``empty="skip"``
        leaves no value.

        Example:
            >>> s = MetricSums("R@5", total=ExactSum.of([1.0, 0.5]), n_defined=2, n_undefined=2)
            >>> [s.finalize(e) for e in ("zero", "one", "skip", "nan")]
            [0.375, 0.875, 0.75, nan]
        """
        if self.kind in ("rmse", "mae"):
            return self._pooled()
        if self.n_undefined and empty == "error":
            raise UndefinedMetricError(
                f"{self.name} is undefined for user {self.first_undefined!r}; "
                "choose empty='zero', 'one' or 'skip'")
        if self.kind == "geometric":
            return self._geometric(empty)
        if self.kind == "sum":  # a count defined for every user, summed (trec_eval's "all")
            return self.total.to_float() if self.n_users else math.nan
        if average == "micro":
            if self.kind == "fbeta":
                return _fbeta(_quotient(self.num, self.den), _quotient(self.num, self.den2),
                              self.beta)
            return _quotient(self.num, self.den)
        if empty == "nan" and self.n_undefined:
            return math.nan
        if empty in ("skip", "nan", "error"):
            if not self.n_defined:
                return 0.0 if empty == "skip" and all_skipped == "zero" else math.nan
            return self.total.divided_by(self.n_defined)
        if not self.n_users:
            return math.nan
        filled = self.total
        if empty == "one":
            filled = filled + ExactSum(units=self.n_undefined << UNIT_BITS)
        return filled.divided_by(self.n_users)

    def _geometric(self, empty: str) -> float:
        """exp of the mean of log(max(value, floor)), the mean exact and rounded once (``num``
        holds the defined users' logs); an undefined user counts as 0 (the floor) or 1 (log 0)
        under ``empty="zero"``/``"one"``."""
        if empty == "nan" and self.n_undefined:
            return math.nan
        logs, n = self.num, self.n_defined
        if empty in ("zero", "one"):
            n = self.n_users
            if empty == "zero" and self.n_undefined:
                floor = ExactSum.of([math.log(GEOMETRIC_FLOOR)])
                logs = logs + ExactSum(units=floor.units * self.n_undefined)
        return math.exp(logs.divided_by(n)) if n else math.nan

    def _pooled(self) -> float:
        """sqrt(sum of squared errors / pairs) or sum of absolute errors / pairs, rounded once."""
        if not self.den.finite or not self.num.finite:
            return _quotient(self.num, self.den)
        if self.den.units == 0:
            return math.nan
        if self.kind == "mae":
            return _ratio(self.num.units, self.den.units)
        return _sqrt_ratio(self.num.units, self.den.units)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready and lossless (``first_undefined`` must be JSON-ready itself).

        Example:
            >>> s = MetricSums("P@1", total=ExactSum.of([0.5]), n_defined=1)
            >>> MetricSums.from_json(s.to_json()) == s
            True
        """
        return {"name": self.name, "kind": self.kind, "beta": self.beta.hex(),
                "total": self.total.to_json(), "n_defined": self.n_defined,
                "n_undefined": self.n_undefined, "num": self.num.to_json(),
                "den": self.den.to_json(), "den2": self.den2.to_json(),
                "first_undefined": self.first_undefined}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MetricSums:
        """The inverse of :meth:`to_json`."""
        return cls(str(data["name"]), str(data["kind"]), float.fromhex(data["beta"]),
                   ExactSum.from_json(data["total"]), int(data["n_defined"]),
                   int(data["n_undefined"]), ExactSum.from_json(data["num"]),
                   ExactSum.from_json(data["den"]), ExactSum.from_json(data["den2"]),
                   data["first_undefined"])


@dataclass(frozen=True)
class Accumulator:
    """Exact per-metric sums over a set of users: merge, serialise, finalize.

    Example:
        >>> values = np.array([[0.1, 1.0], [0.2, np.nan], [0.3, 0.5]])
        >>> acc = Accumulator.from_arrays(["a", "b"], values)
        >>> left = Accumulator.from_arrays(["a", "b"], values[:1])
        >>> right = Accumulator.from_arrays(["a", "b"], values[1:], first_row=1)
        >>> left.merge(right) == acc
        True
        >>> acc.finalize(Options(empty="skip"))
        {'a': 0.2, 'b': 0.75}
        >>> Accumulator.from_dict(acc.to_dict()) == acc
        True
        >>> acc.metrics[1].first_undefined
        1
    """

    metrics: tuple[MetricSums, ...]

    @property
    def names(self) -> list[str]:
        """The metrics' names, in order."""
        return [m.name for m in self.metrics]

    @classmethod
    def empty(cls, names: Sequence[str], kinds: Sequence[str] | None = None,
              betas: Sequence[float] | None = None) -> Accumulator:
        """No user yet: the identity of :meth:`merge`.

        Example:
            >>> acc = Accumulator.from_arrays(["a"], np.array([[0.5]]))
            >>> Accumulator.empty(["a"]).merge(acc) == acc
            True
        """
        kinds = list(kinds) if kinds is not None else ["mean"] * len(names)
        betas = list(betas) if betas is not None else [1.0] * len(names)
        for kind in kinds:
            if kind not in KINDS:
                raise ValueError(f"unknown reduction {kind!r}; choose one of {KINDS}")
        return cls(tuple(MetricSums(n, k, float(b)) for n, k, b in zip(names, kinds, betas,
                                                                         strict=True)))

    @classmethod
    def from_arrays(
        cls,
        names: Sequence[str],
        value: np.ndarray,
        num: np.ndarray | None = None,
        den: np.ndarray | None = None,
        den2: np.ndarray | None = None,
        *,
        kinds: Sequence[str] | None = None,
        betas: Sequence[float] | None = None,
        parts: Sequence[bool] | np.ndarray | None = None,
        scale_exp: np.ndarray | None = None,
        scaled: Sequence[bool] | np.ndarray | None = None,
        first_row: int = 0,
        ids: Sequence[Any] | None = None,
        fill: float | None = None,
        fillable: Sequence[bool] | np.ndarray | None = None,
    ) -> Accumulator:
        """The sums of the users in the rows of ``value`` (``(U, M)``, NaN = undefined).

        ``num``/``den`` (and ``den2``, F-beta's recall denominator) are summed for the columns
        ``parts`` selects (default: all of them when given). Columns of kind ``rmse``/``mae``
        read ``num`` as the user's sum of squared / absolute errors and ``den`` as its pairs;
        where ``num`` overflowed to ``inf`` it counts ``value**2 * den`` (``value * den``)
        exactly instead. ``scale_exp`` (``(U,)``, whole numbers ``>= 0``) marks rows whose
        ``num``/``den`` of the ``scaled`` columns are stored times ``2^-scale_exp``: they
        count at full size (nDCG's gain shift). The first undefined user is a row number
        (``first_row`` + row) or, with ``ids``, its id. With ``fill``, the NaN values of the
        ``fillable`` columns are overwritten with it in ``value`` (the per-user values after
        an ``empty`` policy); the sums still count them as undefined.

        Example:
            >>> acc = Accumulator.from_arrays(["P"], np.array([[0.5], [1.0]]),
            ...                               np.array([[1.0], [2.0]]), np.array([[2.0], [2.0]]))
            >>> acc.finalize(Options(average="micro"))
            {'P': 0.75}
        """
        value = np.ascontiguousarray(value, dtype=np.float64)
        n_rows, m = value.shape
        acc = cls.empty(names, kinds, betas)
        fill_cols = np.zeros(m, dtype=np.bool_)
        if fill is not None and fillable is not None and not math.isnan(fill):
            fill_cols = np.asarray(fillable, dtype=np.bool_)
        # the geometric mean's logs, taken before the empty policy fills the undefined values
        geometric_logs = {
            col: ExactSum.of(np.log(np.maximum(value[:, col][~np.isnan(value[:, col])],
                                               GEOMETRIC_FLOOR)).tolist())
            for col, ms in enumerate(acc.metrics) if ms.kind == "geometric"}
        tot, missing, first = _column_sums(value, np.arange(m), fill_cols,
                                           0.0 if fill is None else float(fill))
        use_parts = np.ones(m, np.bool_) if parts is None else np.asarray(parts, np.bool_)
        kind_of = [ms.kind for ms in acc.metrics]
        part_sums: dict[str, list[ExactSum]] = {}
        for label, arr in (("num", num), ("den", den), ("den2", den2)):
            part_sums[label] = [ExactSum()] * m
            if arr is None or len(arr) == 0:
                continue
            only = {"num": [k not in ("rmse", "mae") for k in kind_of],  # see _pooled_num
                    "den": [True] * m, "den2": [k == "fbeta" for k in kind_of]}[label]
            cols = np.flatnonzero(use_parts & np.array(only, dtype=np.bool_))
            if not len(cols):
                continue
            part_sums[label] = _part_sums(np.asarray(arr, np.float64), cols, m, scale_exp,
                                          None if scaled is None else np.asarray(scaled, bool))
        for col, kind in enumerate(kind_of):
            if kind == "geometric":
                part_sums["num"][col] = geometric_logs[col]
            if kind in ("rmse", "mae") and num is not None and len(num):
                part_sums["num"][col] = _pooled_num(value[:, col], num[:, col],
                                                    num[:, col] if den is None else den[:, col],
                                                    kind == "rmse")
        metrics = []
        for c, ms in enumerate(acc.metrics):
            f = int(first[c])
            first_user: Any = None
            if f >= 0:
                first_user = plain(ids[f]) if ids is not None else first_row + f
            metrics.append(replace(
                ms, total=tot[c], n_defined=n_rows - int(missing[c]),
                n_undefined=int(missing[c]), num=part_sums["num"][c], den=part_sums["den"][c],
                den2=part_sums["den2"][c], first_undefined=first_user))
        return cls(tuple(metrics))

    def merge(self, other: Accumulator) -> Accumulator:
        """The sums over both sets of users: exact, so associative and (but for which
        undefined user comes first: ``self``'s) commutative.

        Example:
            >>> a = Accumulator.from_arrays(["x"], np.array([[1e16], [1.0]]))
            >>> b = Accumulator.from_arrays(["x"], np.array([[-1e16], [1.0]]))
            >>> a.merge(b).finalize(Options())  # (1e16 + 1 - 1e16 + 1) / 4, exactly
            {'x': 0.5}
        """
        if self.names != other.names:
            raise ValueError(f"cannot merge the sums of metrics {self.names} with those of "
                             f"{other.names}")
        return Accumulator(tuple(a.merge(b) for a, b in zip(self.metrics, other.metrics,
                                                            strict=True)))

    def finalize(self, options: Options | None = None) -> dict[str, float]:
        """One number per metric, rounded once.

        ``options.empty`` decides the undefined users of a mean: ``zero``/``one`` count them as
        0/1, ``skip`` leaves them out, ``nan`` makes the summary NaN, ``error`` raises
        :class:`~receval.exceptions.UndefinedMetricError` naming the first. Under
        ``options.average="micro"`` the summary is ``sum(num) / sum(den)`` (F-beta from micro
        precision and recall). RMSE/MAE pool every pair whatever the options.

        Example:
            >>> acc = Accumulator.from_arrays(["R"], np.array([[1.0], [np.nan]]), ids=["a", "b"])
            >>> acc.finalize(Options(empty="one"))
            {'R': 1.0}
            >>> acc.finalize(Options(empty="error"))
            Traceback (most recent call last):
            ...
            receval.exceptions.UndefinedMetricError: R is undefined for user 'b'; choose empty='zero', 'one' or 'skip'
        """  # noqa: E501
        options = options or Options()
        return {m.name: m.finalize(options.empty, options.average, options.all_skipped)
                for m in self.metrics}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (exact: sums as hexadecimal integers).

        Example:
            >>> import json
            >>> acc = Accumulator.from_arrays(["a"], np.array([[0.1], [0.7]]))
            >>> Accumulator.from_dict(json.loads(json.dumps(acc.to_dict()))) == acc
            True
        """
        return {"format": "receval.accumulator", "version": 1,
                "metrics": [m.to_json() for m in self.metrics]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Accumulator:
        """The inverse of :meth:`to_dict`."""
        if data.get("format") != "receval.accumulator" or data.get("version") != 1:
            raise ValueError("not a receval accumulator (format 'receval.accumulator', "
                             f"version 1): format={data.get('format')!r}, "
                             f"version={data.get('version')!r}")
        return cls(tuple(MetricSums.from_json(m) for m in data["metrics"]))


def _pooled_num(value: np.ndarray, num: np.ndarray, den: np.ndarray,
                squared: bool) -> ExactSum:
    """The exact sum of the errors; a user whose sum overflowed counts ``value^2 * pairs``
    (``value * pairs``) exactly: its RMSE (MAE) is finite, and that product is a whole
    number of units (it is above 2^1024)."""
    finite = np.isfinite(num)
    total = _column_sums(np.where(finite, num, 0.0).reshape(-1, 1), np.zeros(1, np.int64),
                         np.zeros(1, np.bool_), 0.0)[0][0]
    for row in np.flatnonzero(~finite & (den > 0)):
        v, n = float(value[row]), int(den[row])
        if not math.isfinite(v):
            total = total + ExactSum._one(v)
            continue
        exact = Fraction(v) ** 2 * n if squared else Fraction(v) * n
        total = total + ExactSum(units=int(exact * (1 << UNIT_BITS)))
    return total


def _part_sums(arr: np.ndarray, cols: np.ndarray, m: int, scale_exp: np.ndarray | None,
               scaled: np.ndarray | None) -> list[ExactSum]:
    """Exact sums of the columns ``cols`` of ``arr`` (NaN counted as NaN), others empty."""
    out = [ExactSum()] * m
    groups: list[tuple[int, np.ndarray | None]] = [(0, None)]
    if scale_exp is not None and scaled is not None and len(scale_exp) and \
            np.any(scale_exp[:len(arr)] != 0):
        exps = np.asarray(scale_exp, dtype=np.int64)
        if exps.min() < 0:
            raise ValueError("scale_exp must be >= 0")
        groups = [(int(e), np.flatnonzero(exps == e)) for e in np.unique(exps)]
    for exp, rows in groups:
        sub = np.ascontiguousarray(arr if rows is None else arr[rows])
        sums, nans, _ = _column_sums(sub, cols, np.zeros(len(cols), np.bool_), 0.0)
        for j, c in enumerate(cols):
            s = replace(sums[j], nan=int(nans[j]))
            if exp and scaled is not None and scaled[c]:
                s = replace(s, units=s.units << exp)
            out[c] = out[c] + s
    return out


def _column_sums(values: np.ndarray, cols: np.ndarray, fill_cols: np.ndarray,
                 fill: float) -> tuple[list[ExactSum], np.ndarray, np.ndarray]:
    """Per selected column: the exact sum of the non-NaN values, the NaN count and the first
    NaN row (-1 if none); one numba pass in parallel blocks of rows (any split: exact)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    n = values.shape[0]
    cols = np.asarray(cols, dtype=np.int64)
    k = len(cols)
    bounds = block_bounds(n, min_size=_MIN_BLOCK_ROWS) or [(0, 0)]
    nb = len(bounds)
    missing = np.zeros((nb, k), np.int64)
    first = np.full((nb, k), -1, np.int64)
    infs = np.zeros((nb, k, 2), np.int64)
    digits = np.zeros((nb, k, _N_DIGITS), np.int64)
    fill_sel = np.ascontiguousarray(fill_cols[cols] if len(fill_cols) == values.shape[1]
                                    else fill_cols, dtype=np.bool_)
    run_blocks(_block_sums, bounds, values, values.view(np.int64), cols, fill_sel, fill,
               missing, first, infs, digits)
    total_digits = digits.sum(axis=0)  # normalised digits below 2^32 each: no overflow
    inf_counts = infs.sum(axis=0)
    sums = []
    for j in range(k):
        units = 0
        for i in range(_N_DIGITS - 1, -1, -1):
            units = (units << _DIGIT_BITS) + int(total_digits[j, i])
        sums.append(ExactSum(units, int(inf_counts[j, 0]), int(inf_counts[j, 1])))
    firsts = np.full(k, -1, np.int64)
    for j in range(k):
        hit = np.flatnonzero(first[:, j] >= 0)
        if len(hit):
            firsts[j] = first[hit[0], j]
    return sums, missing.sum(axis=0), firsts


@numba.njit(cache=True, nogil=True)
def _flush(slots: np.ndarray, lo: np.ndarray, hi: np.ndarray, digits: np.ndarray) -> None:
    """Add every used slot (a sum of significands at one exponent) into the digits."""
    for j in range(slots.shape[0]):
        for p in range(lo[j], hi[j] + 1):
            s = slots[j, p]
            if s == 0:
                continue
            slots[j, p] = 0
            idx = p >> 5
            sh = p & 31
            low = 32 - sh
            digits[j, idx] += (s & ((np.int64(1) << low) - 1)) << sh
            a1 = s >> low
            digits[j, idx + 1] += a1 & 0xFFFFFFFF
            digits[j, idx + 2] += a1 >> 32
        lo[j] = _N_SLOTS
        hi[j] = -1


@numba.njit(cache=True, nogil=True)
def _block_sums(block: int, lo: int, hi: int, values: np.ndarray, bits: np.ndarray,
                cols: np.ndarray, fill_cols: np.ndarray, fill: float, missing: np.ndarray,
                first: np.ndarray, infs: np.ndarray, digits: np.ndarray) -> None:
    k = cols.shape[0]
    slots = np.zeros((k, _N_SLOTS), np.int64)
    slot_lo = np.full(k, _N_SLOTS, np.int64)
    slot_hi = np.full(k, -1, np.int64)
    acc = np.zeros((k, _N_DIGITS), np.int64)
    mant_mask = (np.int64(1) << 52) - 1
    hidden = np.int64(1) << 52
    rows = 0
    for row in range(lo, hi):
        for j in range(k):
            c = cols[j]
            b = bits[row, c]
            e = (b >> 52) & 0x7FF
            mant = b & mant_mask
            if e == 0x7FF:
                if mant != 0:  # NaN: undefined
                    if first[block, j] < 0:
                        first[block, j] = row
                    missing[block, j] += 1
                    if fill_cols[j]:
                        values[row, c] = fill
                elif b < 0:
                    infs[block, j, 1] += 1
                else:
                    infs[block, j, 0] += 1
                continue
            if e == 0:
                if mant == 0:
                    continue
                p = 0
            else:
                mant |= hidden
                p = e - 1
            if b < 0:
                mant = -mant
            slots[j, p] += mant
            if p < slot_lo[j]:
                slot_lo[j] = p
            if p > slot_hi[j]:
                slot_hi[j] = p
        rows += 1
        if rows == _FLUSH_ROWS:
            _flush(slots, slot_lo, slot_hi, acc)
            rows = 0
    _flush(slots, slot_lo, slot_hi, acc)
    for j in range(k):  # carry: every digit but the top one in [0, 2^32)
        for i in range(_N_DIGITS - 1):
            carry = acc[j, i] >> 32
            acc[j, i] -= carry << 32
            acc[j, i + 1] += carry
        for i in range(_N_DIGITS):
            digits[block, j, i] = acc[j, i]
