"""rND/rKL/rRD and calibration: an undefined value is counted with its reason and warned,
never averaged in as a perfect 0; the protected group used is recorded in ``Result.options``
and a group in no list is warned naming ``protected_group=``. Expected values are worked by
hand from the formulas in docs/fairness.md."""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest

import receval
from receval.checks import ProtectedGroupWarning
from receval.exceptions import UndefinedMetricWarning

# x: 3 items, y: 2 items, z: 1 item (the default protected group: fewest items) in no list
GROUPS = {"a": "x", "b": "x", "e": "x", "c": "y", "f": "y", "g": "z"}
TRUTH = pd.DataFrame({"user": [1, 2], "item": ["a", "b"]})
PREDS = pd.DataFrame(
    {
        "user": [1, 1, 1, 2, 2, 2],
        "item": ["c", "a", "b", "a", "b", "e"],
        "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0],
    }
)


def _evaluate(metrics, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = receval.evaluate(TRUTH, PREDS, metrics, item_groups=GROUPS, **kw)
    return r, caught


def test_default_protected_group_in_no_list_is_recorded_warned_and_not_zero():
    """The catalogue (train + truth) holds x 3 items, y 2, z 1: z is the default group, and
    no list holds g, its item (as "(no genres listed)" on MovieLens)."""
    train = pd.DataFrame({"user": [9] * 6, "item": ["a", "b", "e", "c", "f", "g"]})
    r, caught = _evaluate(["rND@3", "rKL@3", "rRD@3"], beyond={"fairness_step": 1}, train=train)
    assert r.options["beyond"]["protected_group"] == "z"
    groups = [w for w in caught if issubclass(w.category, ProtectedGroupWarning)]
    assert len(groups) == 1 and "protected_group=" in str(groups[0].message)
    for name in ("rND@3", "rKL@3", "rRD@3"):
        assert math.isnan(r.summary[name])  # never a silent 0.0
        assert r.counts["undefined"]["users"][name] == 2
        assert r.counts["undefined"]["reasons"][name] == {
            "no item of the protected group 'z' in the list": 2
        }
        assert r.counts["summary_null"][name] == "undefined for every user"
    assert any(issubclass(w.category, UndefinedMetricWarning) for w in caught)


def test_list_without_a_protected_item_is_left_out_of_the_mean():
    """protected y, step 1. User 1's list c, a, b: N = 3, P = 1, q = 1/3; cut points 2, 3:
    i = 2 holds c = 1: |1/2 - 1/3| / log2(2) = 1/6; i = 3: |1/3 - 1/3| = 0; Z, the worst
    arrangement (the protected item last: |0 - 1/3| at i = 2), is 1/3: rND = 0.5. User 2's
    list a, b, e holds no y item: Z = 0, undefined. The mean is 0.5 (not (0.5 + 0) / 2)."""
    r, caught = _evaluate(["rND@3"], beyond={"fairness_step": 1, "protected_group": "y"})
    assert r.summary["rND@3"] == pytest.approx((1 / 6) / (1 / 3), abs=1e-15)
    assert r.options["beyond"]["protected_group"] == "y"
    assert r.counts["undefined"]["users"]["rND@3"] == 1
    assert r.counts["undefined"]["reasons"]["rND@3"] == {
        "no item of the protected group 'y' in the list": 1
    }
    assert r.counts["averaged"]["rND@3"] == 1
    per_user = r.per_user.set_index("user")["rND@3"]
    assert per_user[1] == pytest.approx(0.5, abs=1e-15) and math.isnan(per_user[2])
    assert not any(issubclass(w.category, ProtectedGroupWarning) for w in caught)
    undefined = [str(w.message) for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    assert len(undefined) == 1 and "rND@3 undefined for 1 user(s)" in undefined[0]


def test_calibration_without_history_is_undefined_counted_and_warned():
    """User 1 has training rows a (x) and c (y): p = (1/2, 1/2); its list c, a, b: q = (2/3,
    1/3) over (x, y), smoothed q~ = 0.99 q + 0.01 p; C_KL = sum p log(p / q~). User 2 has no
    training row: undefined (docs/fairness.md), not a perfectly calibrated 0."""
    train = pd.DataFrame({"user": [1, 1], "item": ["a", "c"]})
    r, caught = _evaluate(["calibration@3"], train=train)
    p = [0.5, 0.5]
    q = [0.99 * (2 / 3) + 0.01 * 0.5, 0.99 * (1 / 3) + 0.01 * 0.5]
    want = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True))
    assert r.summary["calibration@3"] == pytest.approx(want, rel=1e-12)
    assert r.counts["undefined"]["users"]["calibration@3"] == 1
    assert r.counts["undefined"]["reasons"]["calibration@3"] == {"no training history (train=)": 1}
    assert any(
        issubclass(w.category, UndefinedMetricWarning) and "calibration@3" in str(w.message)
        for w in caught
    )


def test_skip_chosen_by_the_user_counts_without_a_warning():
    """empty='skip' (as the accuracy metrics): counted, no undefined-value warning."""
    r, caught = _evaluate(
        ["rND@3"], beyond={"fairness_step": 1, "protected_group": "y"}, empty="skip"
    )
    assert r.counts["undefined"]["users"]["rND@3"] == 1
    assert not any(issubclass(w.category, UndefinedMetricWarning) for w in caught)
