"""Numeric edges (issue 9, points 8, 9 and 11): negative gains, huge exponential gains, errors
near the float range, JSON without NaN/Infinity tokens, and the warning for ties that straddle
a cutoff under an order-dependent tie policy.

Expected values come from the reference (tests/reference/oracle.py, exact fractions where
floats overflow) or are worked out by hand in the comments, never from receval.
"""

from __future__ import annotations

import json
import math
import warnings
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.cli import main
from receval.exceptions import TiesWarning
from receval.report.tables import counts_line, render

try:
    from tests.reference import oracle
except ImportError:  # pytest run from elsewhere: tests/ itself is on sys.path
    from reference import oracle


def evaluate(truth, preds, metrics, **opts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", receval.UndefinedMetricWarning)
        warnings.simplefilter("ignore", receval.exceptions.ReceValWarning)
        return receval.evaluate(pd.DataFrame(truth), pd.DataFrame(preds), metrics, **opts)


def _strict_json(text: str) -> object:
    """json.loads that refuses the NaN / Infinity tokens (not JSON, RFC 8259)."""
    def refuse(token: str) -> None:
        raise ValueError(f"non-JSON token {token}")
    return json.loads(text, parse_constant=refuse)


# --- 9.8: negative gains ---------------------------------------------------------------------


NEGATIVE = {"user": ["a", "a", "b", "b"], "item": [1, 2, 1, 3], "rating": [3.0, 1.0, -2.0, -1.0]}
LIST = {"user": ["a", "b"], "item": [1, 1], "score": [1.0, 1.0]}


@pytest.mark.parametrize("gain", ["linear", "exponential"])
def test_negative_ratings_as_gains_are_an_error_naming_the_option(gain: str) -> None:
    with pytest.raises(receval.ReceValError) as err:
        evaluate(NEGATIVE, LIST, ["nDCG@2"], gain=gain)
    message = str(err.value)
    assert f"gain={gain!r}" in message
    assert "holds -2 at row 2 (user 'b')" in message  # the first bad row of the frame
    assert "2 relevant row(s) in all" in message
    assert "relevance_threshold" in message
    assert "\n" not in message


def test_negative_ratings_below_the_threshold_are_not_gains() -> None:
    # a threshold >= 0 makes every negative rating non-relevant: gain 0, no error
    result = evaluate(NEGATIVE, LIST, ["nDCG@2"], gain="linear", relevance_threshold=1)
    # a: item 1 (gain 3) first of ideal [3, 1]: DCG 3, IDCG 3 + 1/log2(3); b: no relevant item
    assert result.per_user.set_index("user").loc["a", "nDCG@2"] == pytest.approx(
        3 / (3 + 1 / math.log2(3)), abs=1e-15)


def test_negative_ratings_relevant_by_a_negative_threshold_are_an_error() -> None:
    with pytest.raises(receval.ReceValError, match=r"holds -1 at row 3 .*1 relevant row"):
        evaluate(NEGATIVE, LIST, ["nDCG"], gain="exponential", relevance_threshold=-1.5)
    # user b's mean is -1.5: -1 is relevant under user_mean
    with pytest.raises(receval.ReceValError, match=r"holds -1 at row 3"):
        evaluate(NEGATIVE, LIST, ["nDCG"], gain="linear", relevance_threshold="user_mean")


def test_negative_ratings_with_binary_gains_are_fine() -> None:
    result = evaluate(NEGATIVE, LIST, ["nDCG@2"], relevance_threshold=-5)
    assert result.summary["nDCG@2"] == pytest.approx(
        (1 / (1 + 1 / math.log2(3)) + 1 / (1 + 1 / math.log2(3))) / 2, abs=1e-15)


# --- 9.8: huge exponential gains --------------------------------------------------------------


HUGE = [("u", "a", 1024.0), ("u", "b", 5000.0), ("u", "c", 3.0), ("u", "d", 1100.0),
        ("v", "a", 2.0), ("v", "b", 1.0), ("w", "x", 1023.0), ("w", "y", 1024.0)]
HUGE_LIST = [("u", "a", 0.9), ("u", "c", 0.8), ("u", "b", 0.7), ("u", "e", 0.6),
             ("v", "b", 0.5), ("v", "a", 0.4), ("w", "x", 0.3), ("w", "y", 0.2)]
NDCG = ["nDCG@1", "nDCG@2", "nDCG@3", "nDCG"]


def _frames(rows, columns):
    return pd.DataFrame(rows, columns=["user", "item", columns])


@pytest.mark.parametrize("average", ["macro", "micro"])
@pytest.mark.parametrize("ties", ["stable", "average"])
def test_exponential_gains_of_huge_ratings_match_exact_arithmetic(average: str,
                                                                   ties: str) -> None:
    want = oracle.evaluate(HUGE, HUGE_LIST, NDCG, gain="exponential", average=average,
                           ties=ties)
    got = evaluate(_frames(HUGE, "rating"), _frames(HUGE_LIST, "score"), NDCG,
                   gain="exponential", average=average, ties=ties)
    for name in NDCG:
        assert got.summary[name] == pytest.approx(want.summary[name], rel=1e-12), name
        assert 0 <= got.summary[name] <= 1
    for row in got.per_user.to_dict("records"):
        for name in NDCG:
            assert row[name] == pytest.approx(want.per_user[row["user"]][name], rel=1e-12)
    assert got.counts["undefined"]["users"] == dict.fromkeys(NDCG, 0)  # never inf/inf


def test_exponential_gain_of_5000_by_hand() -> None:
    # ideal order b (2^5000 - 1), a (2^1024 - 1): the list a, b puts the big gain second, so
    # nDCG@2 = (g_a + g_b / log2 3) / (g_b + g_a / log2 3), exactly 1/log2(3) to 1e-1000
    truth = {"user": ["u", "u"], "item": ["a", "b"], "rating": [1024.0, 5000.0]}
    preds = {"user": ["u", "u"], "item": ["a", "b"], "score": [2.0, 1.0]}
    result = evaluate(truth, preds, ["nDCG@2", "nDCG@1"], gain="exponential")
    assert result.summary["nDCG@2"] == pytest.approx(1 / math.log2(3), rel=1e-15)
    # nDCG@1: g_a / g_b = 2^-3976, below the smallest float: 0, and defined (not inf/inf)
    assert result.summary["nDCG@1"] == 0.0
    assert result.counts["undefined"]["users"]["nDCG@1"] == 0


def test_linear_gains_near_the_float_range_do_not_overflow() -> None:
    truth = {"user": ["u", "u"], "item": ["a", "b"], "rating": [1e308, 1.5e308]}
    preds = {"user": ["u", "u"], "item": ["a", "b"], "score": [2.0, 1.0]}
    result = evaluate(truth, preds, ["nDCG@2"], gain="linear")
    ideal = Fraction(1.5e308) + Fraction(1e308) / Fraction(math.log2(3))
    dcg = Fraction(1e308) + Fraction(1.5e308) / Fraction(math.log2(3))
    assert result.summary["nDCG@2"] == pytest.approx(float(dcg / ideal), rel=1e-14)


def test_ordinary_exponential_gains_are_unscaled_bit_for_bit() -> None:
    # ratings below 960 take no scaling: nDCG@1 is exactly (2^3 - 1) / (2^5 - 1)
    truth = {"user": ["u", "u"], "item": ["a", "b"], "rating": [3.0, 5.0]}
    preds = {"user": ["u", "u"], "item": ["a", "b"], "score": [2.0, 1.0]}
    assert evaluate(truth, preds, ["nDCG@1"], gain="exponential").summary["nDCG@1"] == 7 / 31


# --- 9.9: errors near the float range ----------------------------------------------------------


BIG_T = [("u", "a", 1e200), ("u", "b", -1e200), ("v", "a", 3e200), ("w", "a", 1.0)]
BIG_P = [("u", "a", -1e200), ("u", "b", 2e200), ("v", "a", 0.0), ("w", "a", 2.0)]


def test_rmse_and_mae_of_errors_near_1e200_are_right() -> None:
    want = oracle.evaluate(BIG_T, BIG_P, ["RMSE", "MAE"])
    got = evaluate(_frames(BIG_T, "rating"), _frames(BIG_P, "score"), ["RMSE", "MAE"])
    # errors 2e200, 3e200 (u), 3e200 (v), 1 (w): RMSE sqrt((4 + 9 + 9) / 4) * 1e200
    assert want.summary["RMSE"] == pytest.approx(math.sqrt(22 / 4) * 1e200, rel=1e-15)
    for name in ("RMSE", "MAE"):
        assert math.isfinite(got.summary[name])
        assert got.summary[name] == pytest.approx(want.summary[name], rel=1e-14), name
        for row in got.per_user.to_dict("records"):
            assert row[name] == pytest.approx(want.per_user[row["user"]][name], rel=1e-14)


def test_errors_whose_difference_overflows_are_right() -> None:
    # score 1.5e308 - rating (-1.5e308) = 3e308 does not fit in a float; the RMSE of it and an
    # error of 0 is 3e308 / sqrt(2) = 2.12e308, which does not fit either: inf, not a NaN
    truth = {"user": ["u", "u"], "item": ["a", "b"], "rating": [-1.5e308, 1.0]}
    preds = {"user": ["u", "u"], "item": ["a", "b"], "score": [1.5e308, 1.0]}
    result = evaluate(truth, preds, ["RMSE", "MAE"])
    assert result.summary["MAE"] == pytest.approx(1.5e308, rel=1e-15)  # 3e308 / 2
    assert result.summary["RMSE"] == math.inf
    assert result.counts["summary_null"] == {"RMSE": "too large for a float (> 1.8e308)"}
    assert _strict_json(result.to_json())["summary"] == {"RMSE": None, "MAE": 1.5e308}


def test_pooled_rmse_overflowing_only_across_users_is_right() -> None:
    # each user's square fits (1.44e308, 1.69e308), their sum (3.13e308) does not
    truth = {"user": ["u", "v"], "item": ["a", "a"], "rating": [0.0, 0.0]}
    preds = {"user": ["u", "v"], "item": ["a", "a"], "score": [1.2e154, 1.3e154]}
    result = evaluate(truth, preds, ["RMSE"])
    squares = Fraction(1.2e154) ** 2 + Fraction(1.3e154) ** 2
    assert result.summary["RMSE"] == pytest.approx(oracle.sqrt_of(squares / 2), rel=1e-15)


def test_json_output_never_holds_nan_or_infinity_tokens(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("user,item,rating\nu,a,-1.5e308\nu,b,1\nv,c,5\n")
    (tmp_path / "p.csv").write_text("user,item,score\nu,a,1.5e308\nu,b,1\nw,c,1\n")
    out = CliRunner().invoke(main, ["evaluate", "-t", str(tmp_path / "t.csv"), "-p",
                                    str(tmp_path / "p.csv"), "-m", "RMSE", "-m", "MAE", "-m",
                                    "R@1", "--relevance-threshold", "2", "--empty", "nan",
                                    "-f", "json"],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    data = _strict_json(out.stdout)
    assert data["summary"]["RMSE"] is None  # inf
    assert data["summary"]["R@1"] is None  # undefined for u (nothing relevant), empty='nan'
    # u's errors 3e308 and 0 (v has no prediction): MAE 1.5e308
    assert data["summary"]["MAE"] == pytest.approx(1.5e308, rel=1e-15)
    assert set(data["counts"]["summary_null"]) == {"RMSE", "R@1"}
    assert "empty='nan'" in data["counts"]["summary_null"]["R@1"]


def test_render_json_of_several_models_has_no_nan_token() -> None:
    truth = {"user": ["u", "v"], "item": ["a", "b"], "rating": [5.0, 1.0]}
    preds = {"user": ["u"], "item": ["a"], "score": [1.0]}
    result = evaluate(truth, preds, ["R@1"], empty="nan", relevance_threshold=3)
    data = _strict_json(render({"a": result, "b": result}, "json"))
    assert data["summary"] == {"a": {"R@1": None}, "b": {"R@1": None}}


# --- 9.11 + 8.13: ties across a cutoff ---------------------------------------------------------


TIED_T = {"user": ["u", "u", "v", "w"], "item": ["a", "b", "a", "a"]}
TIED_P = {"user": ["u", "u", "u", "v", "v", "w", "w"], "item": ["a", "b", "c", "a", "b", "a", "b"],
          "score": [0.5, 0.5, 0.1, 0.7, 0.7, 0.9, 0.8]}


def _ties_warnings(**opts: object) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        receval.evaluate(pd.DataFrame(TIED_T), pd.DataFrame(TIED_P), ["P@1", "R@2", "P@3"],
                         **opts)
    return [w for w in caught if issubclass(w.category, TiesWarning)]


def test_ties_across_a_cutoff_under_stable_ties_warn_once_at_the_callers_line() -> None:
    caught = _ties_warnings()
    assert len(caught) == 1
    message = str(caught[0].message)
    # u: a, b tied at ranks 1-2 (cut at 1); v: a, b tied at 1-2 (cut at 1); w: no tie
    assert "2 at k=1" in message and "k=2" not in message and "k=3" not in message
    assert "ties='average'" in message and "'item_ascending'" in message
    assert caught[0].filename == __file__  # the caller's line, not receval's


@pytest.mark.parametrize("ties", ["average", "item", "item_ascending", "pessimistic",
                                  "optimistic"])
def test_order_independent_tie_policies_do_not_warn(ties: str) -> None:
    assert _ties_warnings(ties=ties) == []


def test_no_warning_without_a_tie_at_a_cutoff() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        receval.evaluate(pd.DataFrame(TIED_T), pd.DataFrame(TIED_P), ["P@3", "MRR"])
    assert not [w for w in caught if issubclass(w.category, TiesWarning)]


def test_the_terminal_summary_mentions_ties_across_a_cutoff() -> None:
    result = evaluate(TIED_T, TIED_P, ["P@1", "R@2"])
    line = counts_line(result)
    assert "tied scores across a cutoff: 2 users at k=1" in line
    assert "ties='average'" in line
    untied = evaluate(TIED_T, TIED_P, ["P@3"])
    assert "tied" not in counts_line(untied)


# --- 8.14: whether the first run compiles --------------------------------------------------------


def test_kernels_cached_says_whether_the_next_run_compiles(tmp_path: Path) -> None:
    import subprocess
    import sys

    from receval.engines.numba_engine import kernels_cached

    evaluate({"user": [1], "item": [1]}, {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
    assert kernels_cached() is True  # compiled (or loaded) and saved by the line above
    # an empty cache directory: nothing compiled yet (the check itself compiles nothing)
    code = "from receval.engines.numba_engine import kernels_cached; print(kernels_cached())"
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
    assert not list(tmp_path.rglob("*.nbc"))


# --- huge cutoffs --------------------------------------------------------------------------------


def test_a_cutoff_beyond_int64_is_a_receval_error_not_an_overflow() -> None:
    truth, preds = {"user": [1], "item": [1]}, {"user": [1], "item": [1], "score": [1.0]}
    with pytest.raises(receval.ReceValError, match=r"cutoff 9223372036854775808 is too large"):
        receval.evaluate(truth, preds, ["P@9223372036854775808"])
    # the largest allowed cutoff runs (P@k over k: 1 / k)
    result = receval.evaluate(truth, preds, ["P@2147483647", "R@2147483647"])
    assert result.summary == {"P@2147483647": 1 / 2147483647, "R@2147483647": 1.0}


def test_the_terminal_summary_names_rows_of_users_not_evaluated() -> None:
    truth = {"user": [1], "item": [1]}
    preds = {"user": [1, 2, 2], "item": [1, 1, 2], "score": [1.0, 2.0, 1.0]}
    line = counts_line(evaluate(truth, preds, ["P@1"]))
    assert "predictions not evaluated 2" in line  # user 2 is not in the truth
