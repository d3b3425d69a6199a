"""The monitor's drift flag reads each metric's declared direction (issue 32, item 1): a
window outside the reference band on the better side (a drop of rND, a lower-is-better
metric) is an improvement, not an alarm; on the worse side it is flagged. Before the direction
was read, the drop of rND from 1.0 to 0.15 was flagged like a fall of P@k.

The oracle is written from the definition of rND (Yang and Stoyanovich 2017) with a cut point
at every rank from 2: rND = (1/Z) sum_{i=2..N} |P_i / i - P / N| / log2(i), P_i the protected
items in the top i, Z the largest such sum over the arrangements of the list (enumerated).
"""

from __future__ import annotations

import math
import warnings
from itertools import permutations

import pandas as pd
import pytest

import receval

DAY = pd.Timedelta("1D")
T0 = pd.Timestamp("2024-01-01", tz="UTC")  # a Monday
FAIR = [1, 100, 2, 101, 3, 102]  # the protected items (>= 100) alternate
UNFAIR = [1, 2, 3, 100, 101, 102]  # the protected items last
GROUPS = {i: ("p" if i >= 100 else "q") for i in (*range(1, 4), *range(100, 103))}


def _rnd(items: list[int]) -> float:
    """rND of one list, straight from the formula (cut points 1..n, Z by enumeration)."""

    def raw(order: tuple[int, ...]) -> float:
        n, p = len(order), sum(GROUPS[i] == "p" for i in order)
        return sum(
            abs(sum(GROUPS[j] == "p" for j in order[:i]) / i - p / n) / math.log2(i)
            for i in range(2, n + 1)
        )

    return raw(tuple(items)) / max(raw(o) for o in permutations(items))


def _logs(weeks: list[list[int]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    imp, fb = [], []
    for week, items in enumerate(weeks):
        for u in range(8):
            s = T0 + week * 7 * DAY + pd.Timedelta(hours=u)
            imp += [(u, it, r, s) for r, it in enumerate(items, 1)]
            fb.append((u, items[0], 1.0, s + pd.Timedelta(hours=1)))
    return (
        pd.DataFrame(imp, columns=["user", "item", "rank", "served_at"]),
        pd.DataFrame(fb, columns=["user", "item", "value", "at"]),
    )


def _drift(weeks: list[list[int]]) -> pd.DataFrame:
    imp, fb = _logs(weeks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = receval.monitor(
            imp,
            fb,
            ["rND@6", "P@1"],
            window="W",
            relevance_threshold=1,
            n_resamples=50,
            item_groups=GROUPS,
            beyond={"protected_group": "p", "fairness_step": 1},
        )
        d = m.drift()
    return d[d["metric"] == "rND@6"].reset_index(drop=True)


def test_the_oracle_tells_the_fair_list_from_the_unfair_one() -> None:
    assert _rnd(UNFAIR) == 1.0 and 0 < _rnd(FAIR) < 0.5


def test_a_drop_of_a_lower_is_better_metric_is_no_alarm() -> None:
    d = _drift([UNFAIR, FAIR])
    assert d["value"].tolist() == pytest.approx([_rnd(UNFAIR), _rnd(FAIR)], abs=1e-12)
    assert d["flag"].tolist() == [False, False]  # flagged [False, True] before (1dce6b9)
    assert d["direction"].tolist() == ["lower", "lower"]
    assert d["change"].tolist() == ["", "better"]


def test_a_rise_of_a_lower_is_better_metric_is_flagged() -> None:
    d = _drift([FAIR, UNFAIR])
    assert d["value"].tolist() == pytest.approx([_rnd(FAIR), _rnd(UNFAIR)], abs=1e-12)
    assert d["flag"].tolist() == [False, True]
    assert d["change"].tolist() == ["", "worse"]
