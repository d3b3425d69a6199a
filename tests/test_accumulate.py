"""Exact, mergeable accumulators: any split of the users, merged in any order or tree shape,
gives the exactly rounded summary, checked against exact rational arithmetic (``Fraction``).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from receval import accumulate as acc_module
from receval import parallel
from receval.accumulate import Accumulator, ExactSum
from receval.aggregate import aggregate
from receval.exceptions import UndefinedMetricError
from receval.measures.spec import parse_metrics
from receval.options import Options

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# every magnitude: subnormals, ordinary values, values near the top of the float range
finite = st.floats(allow_nan=False, allow_infinity=False)
small = st.floats(min_value=-1e-300, max_value=1e-300, allow_nan=False) | st.sampled_from(
    [5e-324, -5e-324, 2.0**-1022, 1e-310])
value = finite | small | st.floats(0, 1) | st.just(math.nan)


@st.composite
def columns(draw: st.DrawFn) -> np.ndarray:
    """A column of per-user values with NaN (undefined) and many cancellations."""
    xs = draw(st.lists(value, min_size=0, max_size=60))
    negated = draw(st.lists(st.sampled_from(xs), max_size=20)) if xs else []
    xs = xs + [-x for x in negated]
    perm = draw(st.permutations(range(len(xs))))
    return np.array([xs[i] for i in perm], dtype=np.float64)


@st.composite
def splits(draw: st.DrawFn, n: int) -> list[tuple[int, int]]:
    """1 to 10 contiguous parts of ``range(n)`` (empty parts allowed)."""
    parts = draw(st.integers(1, 10))
    cuts = sorted(draw(st.lists(st.integers(0, n), min_size=parts - 1, max_size=parts - 1)))
    bounds = [0, *cuts, n]
    return list(itertools.pairwise(bounds))


def _merge_in_some_shape(draw: Callable[..., Any], accs: list[Accumulator]) -> Accumulator:
    """Merge neighbours in a random tree shape (order of the users kept)."""
    accs = list(accs)
    while len(accs) > 1:
        i = draw(st.integers(0, len(accs) - 2))
        accs[i:i + 2] = [accs[i].merge(accs[i + 1])]
    return accs[0]


def _exact_mean(xs: np.ndarray, n: int | None = None) -> float:
    defined = [Fraction(float(x)) for x in xs if not math.isnan(x)]
    count = len(defined) if n is None else n
    return float(sum(defined, Fraction(0)) / count) if count else math.nan


def _parts(column: np.ndarray, bounds: list[tuple[int, int]]) -> list[Accumulator]:
    return [Accumulator.from_arrays(["m"], column[lo:hi].reshape(-1, 1), first_row=lo)
            for lo, hi in bounds]


@SETTINGS
@given(data=st.data(), column=columns())
def test_any_split_merged_in_any_shape_gives_the_exactly_rounded_mean(
        data: st.DataObject, column: np.ndarray) -> None:
    whole = Accumulator.from_arrays(["m"], column.reshape(-1, 1))
    bounds = data.draw(splits(len(column)))
    merged = _merge_in_some_shape(data.draw, _parts(column, bounds))
    assert merged == whole
    summary = merged.finalize(Options(empty="skip"))["m"]
    expected = _exact_mean(column)
    assert summary == expected or (math.isnan(summary) and math.isnan(expected))


@SETTINGS
@given(data=st.data(), column=columns())
def test_merging_in_any_order_gives_the_same_sums(data: st.DataObject,
                                                  column: np.ndarray) -> None:
    """Shuffled parts: the sums and counts are the same (only the first undefined user, kept
    from the left operand, may differ)."""
    parts = _parts(column, data.draw(splits(len(column))))
    order = data.draw(st.permutations(range(len(parts))))
    shuffled = _merge_in_some_shape(data.draw, [parts[i] for i in order])
    whole = Accumulator.from_arrays(["m"], column.reshape(-1, 1))
    a, b = shuffled.metrics[0], whole.metrics[0]
    assert (a.total, a.n_defined, a.n_undefined) == (b.total, b.n_defined, b.n_undefined)
    for empty in ("zero", "one", "skip", "nan"):
        x, y = shuffled.finalize(Options(empty=empty)), whole.finalize(Options(empty=empty))
        assert x == y or (math.isnan(x["m"]) and math.isnan(y["m"]))


@SETTINGS
@given(column=columns())
def test_every_empty_policy_against_exact_arithmetic(column: np.ndarray) -> None:
    acc = Accumulator.from_arrays(["m"], column.reshape(-1, 1), ids=[f"u{i}" for i in
                                                                        range(len(column))])
    undefined = np.flatnonzero(np.isnan(column))
    n = len(column)
    defined = Fraction(0)
    for x in column[~np.isnan(column)]:
        defined += Fraction(float(x))
    expected = {
        "zero": float(defined / n) if n else math.nan,
        "one": float((defined + len(undefined)) / n) if n else math.nan,
        "skip": float(defined / (n - len(undefined))) if n > len(undefined) else math.nan,
        "nan": math.nan if len(undefined) or n == 0 else float(defined / n),
    }
    for empty, want in expected.items():
        got = acc.finalize(Options(empty=empty))["m"]
        assert got == want or (math.isnan(got) and math.isnan(want)), empty
    if len(undefined):
        with pytest.raises(UndefinedMetricError, match=f"user 'u{undefined[0]}'"):
            acc.finalize(Options(empty="error"))
    else:
        assert acc.finalize(Options(empty="error")) == acc.finalize(Options(empty="skip"))


def test_a_sum_whose_last_bit_compensated_summation_loses() -> None:
    """Neumaier's carry rounds 1 + 2^-53 to 1 (a tie, to even) and then drops 2^-80, so a
    compensated sum gives 1/8; the exact sum 1 + 2^-53 + 2^-80 is just above the tie and its
    mean rounds up to (1 + 2^-52) / 8."""
    column = np.array([2.0**100, 1.0, 2.0**-53, 2.0**-80, -(2.0**100), 0.0, 0.0, 0.0])
    exact = (Fraction(1) + Fraction(2) ** -53 + Fraction(2) ** -80) / 8
    assert float(exact) == (1.0 + 2.0**-52) / 8
    out = SimpleNamespace(value=column.reshape(-1, 1), num=np.zeros((0, 1)),
                          den=np.zeros((0, 1)), den2=np.zeros((0, 1)),
                          n_relevant=np.ones(8, np.int64), gain_shift=np.zeros(8))
    assert aggregate(parse_metrics(["nDCG"]), out, Options(), str).summary == \
        {"nDCG": float(exact)}


def test_first_undefined_user_is_the_first_in_merge_order() -> None:
    column = np.array([1.0, 0.5, np.nan, 0.25, np.nan])
    parts = _parts(column, [(0, 2), (2, 3), (3, 5)])
    merged = parts[0].merge(parts[1].merge(parts[2]))
    assert merged.metrics[0].first_undefined == 2
    assert merged.metrics[0].n_undefined == 2
    with pytest.raises(UndefinedMetricError, match="user 2"):
        merged.finalize(Options(empty="error"))


@st.composite
def micro_parts(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 40))
    num = draw(st.lists(st.floats(0, 1e6) | st.floats(0, 1e-200), min_size=n, max_size=n))
    den = draw(st.lists(st.floats(1e-300, 1e6), min_size=n, max_size=n))
    den2 = draw(st.lists(st.floats(1e-300, 1e6), min_size=n, max_size=n))
    return np.array(num), np.array(den), np.array(den2)


@SETTINGS
@given(data=st.data(), parts=micro_parts(), beta=st.sampled_from([0.5, 1.0, 2.0]))
def test_micro_averages_are_the_exact_ratio_rounded_once(
        data: st.DataObject, parts: tuple[np.ndarray, np.ndarray, np.ndarray],
        beta: float) -> None:
    num, den, den2 = parts
    n = len(num)
    value = np.full((n, 2), 0.5)
    two = np.stack([num, num], axis=1), np.stack([den, den], axis=1)
    extra = np.stack([den2, den2], axis=1)
    bounds = data.draw(splits(n))
    accs = [Accumulator.from_arrays(["P", "F"], value[lo:hi], two[0][lo:hi], two[1][lo:hi],
                                    extra[lo:hi], kinds=["mean", "fbeta"], betas=[1.0, beta])
            for lo, hi in bounds]
    got = _merge_in_some_shape(data.draw, accs).finalize(Options(average="micro"))
    n_sum = sum((Fraction(float(x)) for x in num), Fraction(0))
    d_sum = sum((Fraction(float(x)) for x in den), Fraction(0))
    d2_sum = sum((Fraction(float(x)) for x in den2), Fraction(0))
    assert got["P"] == float(n_sum / d_sum)
    p, r = float(n_sum / d_sum), float(n_sum / d2_sum)
    b2 = beta * beta
    expected_f = 0.0 if p + r == 0 else (1.0 + b2) * p * r / (b2 * p + r)
    assert got["F"] == expected_f


def _is_correctly_rounded_sqrt(x: float, exact_square: Fraction) -> bool:
    """``x`` is the float nearest to ``sqrt(exact_square)`` (half an ulp either side)."""
    half = Fraction(math.ulp(x)) / 2
    lo, hi = max(Fraction(0), Fraction(x) - half), Fraction(x) + half
    return lo * lo <= exact_square <= hi * hi


@SETTINGS
@given(data=st.data(), n=st.integers(1, 30))
def test_pooled_rmse_and_mae_are_exact_and_correctly_rounded(data: st.DataObject,
                                                             n: int) -> None:
    sq = np.array(data.draw(st.lists(st.floats(0, 1e300) | st.floats(0, 1e-300),
                                     min_size=n, max_size=n)))
    pairs = np.array(data.draw(st.lists(st.integers(0, 50), min_size=n, max_size=n)), float)
    sq[pairs == 0] = 0.0
    value = np.where(pairs > 0, np.sqrt(sq / np.maximum(pairs, 1)), np.nan).reshape(-1, 1)
    bounds = data.draw(splits(n))
    for kind in ("rmse", "mae"):
        accs = [Accumulator.from_arrays([kind], value[lo:hi], sq[lo:hi, None],
                                        pairs[lo:hi, None], kinds=[kind])
                for lo, hi in bounds]
        got = _merge_in_some_shape(data.draw, accs).finalize(Options(empty="error"))[kind]
        total = sum((Fraction(float(x)) for x in sq), Fraction(0))
        count = int(pairs.sum())
        if count == 0:
            assert math.isnan(got)
        elif kind == "mae":
            assert got == float(total / count)
        else:
            assert _is_correctly_rounded_sqrt(got, total / count), (got, total / count)


def test_pooled_rmse_of_overflowed_users_counts_value_squared_times_pairs() -> None:
    """Users whose sum of squared errors overflowed (``inf``) count ``value^2 * pairs``."""
    value = np.array([[1e200], [3e200], [2.0]])
    sq = np.array([[np.inf], [np.inf], [8.0]])
    pairs = np.array([[1.0], [1.0], [2.0]])
    got = Accumulator.from_arrays(["RMSE"], value, sq, pairs, kinds=["rmse"]).finalize()
    exact = (Fraction(1e200) ** 2 + Fraction(3e200) ** 2 + 8) / 4
    assert _is_correctly_rounded_sqrt(got["RMSE"], exact)
    assert got["RMSE"] == pytest.approx(math.sqrt(10 / 4) * 1e200, rel=1e-15)


def test_micro_ndcg_counts_scaled_users_at_full_size() -> None:
    """nDCG's huge graded gains come scaled by 2^-shift per user: the micro ratio unscales
    them exactly."""
    dcg = np.array([[1.0], [0.75], [0.5]])
    idcg = np.array([[2.0], [1.0], [1.0]])
    shift = np.array([0, 2000, 1])
    acc = Accumulator.from_arrays(["nDCG"], dcg / idcg, dcg, idcg, scale_exp=shift,
                                  scaled=[True])
    expected = (Fraction(1) + Fraction(3, 4) * 2**2000 + Fraction(1, 2) * 2) / \
        (Fraction(2) + 2**2000 + 2)
    assert acc.finalize(Options(average="micro"))["nDCG"] == float(expected)


@SETTINGS
@given(column=columns(), micro=micro_parts())
def test_to_dict_from_dict_is_lossless(column: np.ndarray,
                                       micro: tuple[np.ndarray, np.ndarray, np.ndarray]
                                       ) -> None:
    n = min(len(column), len(micro[0]))
    value = column[:n].reshape(-1, 1)
    acc = Accumulator.from_arrays(["F2"], value, micro[0][:n, None], micro[1][:n, None],
                                  micro[2][:n, None], kinds=["fbeta"], betas=[2.0],
                                  ids=[f"user {i}" for i in range(n)])
    back = Accumulator.from_dict(json.loads(json.dumps(acc.to_dict())))
    assert back == acc
    for options in (Options(), Options(average="micro"), Options(empty="skip")):
        x, y = back.finalize(options)["F2"], acc.finalize(options)["F2"]
        assert x == y or (math.isnan(x) and math.isnan(y))


def test_infinite_values() -> None:
    inf = math.inf
    assert Accumulator.from_arrays(["m"], np.array([[1.0], [inf]])).finalize() == {"m": inf}
    both = Accumulator.from_arrays(["m"], np.array([[-inf], [inf]])).finalize()
    assert math.isnan(both["m"])
    assert ExactSum.of([1e308, 1e308]).to_float() == inf
    assert ExactSum.of([1e308, 1e308]).divided_by(2) == 1e308


def test_fill_sets_the_per_user_values_and_still_counts_them_undefined() -> None:
    values = np.array([[np.nan, np.nan], [0.5, 1.0]])
    acc = Accumulator.from_arrays(["a", "b"], values, fill=1.0, fillable=[True, False])
    assert values[0, 0] == 1.0 and math.isnan(values[0, 1])
    assert [m.n_undefined for m in acc.metrics] == [1, 1]
    assert acc.finalize(Options(empty="one")) == {"a": 0.75, "b": 1.0}


@pytest.mark.parametrize("n_threads", [1, 2, 3, 7])
def test_blocks_on_any_thread_count_give_the_same_accumulator(
        monkeypatch: pytest.MonkeyPatch, n_threads: int) -> None:
    rng = np.random.default_rng(4)
    values = rng.standard_normal((5_000, 3)) * 10.0 ** rng.integers(-300, 300, (5_000, 3))
    values[rng.random(values.shape) < 0.1] = np.nan
    monkeypatch.setattr(acc_module, "_MIN_BLOCK_ROWS", 1)
    monkeypatch.setattr(parallel, "n_threads", lambda: 1)
    one = Accumulator.from_arrays(["a", "b", "c"], values)
    monkeypatch.setattr(parallel, "n_threads", lambda: n_threads)
    assert len(parallel.block_bounds(5_000, min_size=1)) == (1 if n_threads == 1 else
                                                              8 * n_threads)
    assert Accumulator.from_arrays(["a", "b", "c"], values) == one
    for c in range(3):
        column = values[:, c]
        assert one.metrics[c].total.units == sum(
            (Fraction(float(x)) for x in column[~np.isnan(column)]), Fraction(0)) * 2**1074


def test_mismatched_accumulators_and_foreign_dicts_are_refused() -> None:
    a = Accumulator.from_arrays(["a"], np.array([[1.0]]))
    b = Accumulator.from_arrays(["b"], np.array([[1.0]]))
    with pytest.raises(ValueError, match="cannot merge"):
        a.merge(b)
    with pytest.raises(ValueError, match="not a receval accumulator"):
        Accumulator.from_dict({"metrics": []})
    with pytest.raises(ValueError, match="unknown reduction"):
        Accumulator.empty(["a"], kinds=["median"])
