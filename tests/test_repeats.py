"""An item shown twice in one served list: one check (:mod:`receval.data.repeats`) for the
monitor's impressions and the off-policy log, one error text (the source, the item, the list,
the row, how many repeated rows, what to pass)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import receval
from receval.data.repeats import repeated
from receval.offpolicy import estimate

T0 = pd.Timestamp("2024-01-01", tz="UTC")
#: the shared text, with the parts that name the source and the list left open
TEXT = (
    r"^(impressions|log): item 5 served twice in one list \((.+)\) at row 2 "
    r"\(1 repeated rows in all\); a list shows each item once: pass .+$"
)


def _oracle(lists: list[int], items: list[object]) -> list[bool]:
    """A row repeats when an earlier row of its list holds the same item (a set per list)."""
    seen: dict[int, set[object]] = {}
    out = []
    for lst, item in zip(lists, items, strict=True):
        out.append(item in seen.setdefault(lst, set()))
        seen[lst].add(item)
    return out


@pytest.mark.parametrize(
    "items", [[5, 6, 5, 5, 7, 6], ["a", "007", "7", "a", "b", "007"], [2**40, 1, 2**40, -3, 1, -3]]
)
def test_repeated_marks_the_later_showings(items: list[object]) -> None:
    lists = [0, 0, 0, 1, 1, 1]
    got = repeated(
        np.array(lists), np.array(items, dtype=object if isinstance(items[0], str) else np.int64)
    )
    assert got.tolist() == _oracle(lists, items)


def test_the_monitor_and_the_offpolicy_log_refuse_with_one_text() -> None:
    imp = pd.DataFrame({"user": 1, "item": [5, 6, 5], "rank": [1, 2, 3], "served_at": T0})
    fb = pd.DataFrame({"user": [1], "item": [5], "value": [1.0], "at": [T0]})
    with pytest.raises(receval.ReceValError) as monitor_err:
        receval.monitor(imp, fb, "P@1")
    log = pd.DataFrame(
        {
            "request": 3,
            "item": [5, 6, 5],
            "position": [1, 2, 3],
            "reward": [1.0, 0.0, 0.0],
            "propensity": 0.5,
        }
    )
    target = log[["request", "item", "position"]].assign(probability=1.0)
    with pytest.raises(receval.ReceValError) as log_err:
        estimate(log, {"t": target}, n_resamples=0)
    first, second = str(monitor_err.value), str(log_err.value)
    assert re.match(TEXT, first) and re.match(TEXT, second), (first, second)
    assert "(user 1, served_at 2024-01-01T00:00:00+00:00)" in first
    assert "(request 3)" in second and "repeats='allow'" in second
    assert "duplicates='first'" in first
