"""A beyond-accuracy metric is one declaration (issue 32, item 1): an entry added to
:data:`receval.beyond.names.ENTRIES` (name, aliases, reduction, bounds, direction, undefined,
options, its compute function) is parsed, computed and checked by every door with no other
edit: each local engine of ``evaluate``, ``compare``, ``strata``, the CLI (the doors of the
generated suite, tests/test_no_quiet_number.py, which picks its metrics from the registry) and
the monitor's windows.

The planted metrics are written here from their definitions and their values checked against
an oracle computed from the input frames: ``filled@k``, the share of a list's k slots that
hold an item (per user; undefined for a user without a list), and ``distinct@k``, the number
of distinct listed items over the number of listed slots (one number over the catalogue).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
import test_no_quiet_number as suite

import receval
from receval.beyond import names
from receval.beyond.compute import Job

K = suite.K


def _filled(job: Job) -> np.ndarray:
    listed = (job.lists >= 0).sum(axis=1).astype(np.float64)
    return np.where(listed > 0, listed / job.spec.k, np.nan)


def _distinct(job: Job) -> float:
    items = job.lists[job.lists >= 0]
    return float(len(np.unique(items)) / len(items)) if len(items) else math.nan


FILLED = names.BeyondEntry(
    "filled",
    ("filled", "slots_filled"),
    "user",
    (),
    bounds=(0.0, 1.0),
    undefined="no list",
    compute=_filled,
    per_list=True,
)
DISTINCT = names.BeyondEntry(
    "distinct",
    ("distinct",),
    "catalogue",
    (),
    bounds=(0.0, 1.0),
    undefined="no list holds an item",
    compute=_distinct,
)


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> Any:
    for entry in (FILLED, DISTINCT):
        monkeypatch.setitem(names.ENTRIES, entry.name, entry)
        monkeypatch.setitem(suite.METRICS, f"{entry.name}@{K}", ("beyond", entry))
    suite.run.cache_clear()
    yield
    suite.run.cache_clear()


def _oracle(case: str) -> tuple[dict[Any, float], float]:
    """filled@K per user of the truth (NaN: no list), and distinct@K, from the case's
    predictions (the lists of the users in the truth: the others are not evaluated)."""
    c = suite.CASES[case]()
    top = c.predictions[c.predictions["user"].isin(c.truth["user"])]
    top = top.sort_values(["user", "score", "item"], ascending=[True, False, True])
    top = top.groupby("user").head(K)
    sizes = (top.groupby("user").size() / K).to_dict()
    filled = {u: sizes.get(u, math.nan) for u in c.truth["user"].unique()}
    return filled, top["item"].nunique() / len(top)


def test_the_planted_entries_are_parsed_and_declared(planted: Any) -> None:
    assert names.parse_beyond("slots_filled@3").metric == "filled"
    assert names.direction("filled@3") == "higher" and names.catalogue_level("distinct@3")
    assert names.split_metrics(["P@3", "filled@2,3"])[2] == ["P@3", "filled@2", "filled@3"]


def _cells() -> list[Any]:
    """Every (case, door); a cell of a defect the generated suite still lists for the per-user
    beyond metrics (its ``DEFECTS``, e.g. strata) is a strict xfail, as there."""
    out = []
    for case in ("plain", "short_lists"):
        for door in suite.DOORS:
            if door == "renamed":  # the items renamed: accuracy metrics only, by design
                continue
            reason = suite._defect(case, door, f"AWRF@{K}")
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(case, door, marks=marks, id=f"{case}-{door}"))
    return out


@pytest.mark.parametrize(("case", "door"), _cells())
def test_a_planted_entry_is_computed_by_every_door(planted: Any, case: str, door: str) -> None:
    filled, distinct = _oracle(case)
    for metric in (f"filled@{K}", f"distinct@{K}"):
        suite.check_door(case, door, metric)  # bounds, counted and warned, equal to numba
    out, refused = suite.run(case, door)
    assert out is not None and f"filled@{K}" not in refused
    if door == "compare":  # a catalogue metric has no per-user values to pair: one line
        assert "catalogue level" in refused[f"distinct@{K}"]
    else:
        assert out.summary[f"distinct@{K}"] == pytest.approx(distinct, abs=1e-12)
    mean = float(np.mean(list(filled.values())))  # empty="nan": an undefined user makes NaN
    got = out.summary[f"filled@{K}"]
    assert (math.isnan(got) and math.isnan(mean)) or got == pytest.approx(mean, abs=1e-12)
    if out.per_user is not None:
        values = out.per_user.set_index("user")[f"filled@{K}"]
        for user, value in values.items():
            want = filled.get(user, math.nan)
            assert (math.isnan(value) and math.isnan(want)) or value == pytest.approx(want)


def test_a_planted_per_list_entry_is_computed_in_the_monitor_windows(planted: Any) -> None:
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    lengths = {0: 1, 1: 2, 2: 3, 3: 3}  # served list lengths, one week
    imp = pd.DataFrame(
        [
            (u, f"i{r}", r, t0 + pd.Timedelta(hours=u))
            for u, n in lengths.items()
            for r in range(1, n + 1)
        ],
        columns=["user", "item", "rank", "served_at"],
    )
    fb = pd.DataFrame(
        {"user": list(lengths), "item": "i1", "value": 1.0, "at": t0 + pd.Timedelta(hours=5)}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = receval.monitor(
            imp, fb, [f"filled@{K}", "P@1"], window="W", relevance_threshold=1, n_resamples=0
        )
    assert m.windows[f"filled@{K}"].tolist() == pytest.approx(
        [np.mean([n / K for n in lengths.values()])], abs=1e-12
    )
    assert m.drift()["direction"].tolist() == ["higher", "higher"]
