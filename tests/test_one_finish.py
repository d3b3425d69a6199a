"""One finish behind the local plan and the Spark driver (issue 21, "one finish"): the summary,
``counts["summary_null"]``, the "no user" errors and the warnings come from
:func:`receval.finalize.finish`, whether the counts and sums are one engine run's or the merge
of several partitions'. No Spark needed: the partitions are the Spark partition step
(:func:`receval.evaluation.evaluate_partition`) on disjoint users, merged by the driver's merge.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.evaluation import evaluate_partition
from receval.exceptions import ReceValError
from receval.finalize import finish
from receval.measures.spec import parse_metrics
from receval.profiles import resolve
from receval.scalars import plain

SRC = Path(receval.__file__).parent
METRICS = ["P@3", "R@3", "nDCG@3", "MRR", "RMSE"]


def _frames(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    t = pd.DataFrame({"user": rng.integers(0, 30, 150), "item": rng.integers(0, 20, 150),
                      "rating": rng.integers(0, 6, 150).astype(float)})
    p = pd.DataFrame({"user": rng.integers(3, 34, 300), "item": rng.integers(0, 24, 300),
                      "score": rng.integers(0, 6, 300) / 2.0})
    return (t.drop_duplicates(["user", "item"]).reset_index(drop=True),
            p.drop_duplicates(["user", "item"]).reset_index(drop=True))


def _driver(truth: pd.DataFrame, preds: pd.DataFrame, options: dict[str, Any]
            ) -> tuple[dict[str, float], dict[str, Any], list[str]]:
    """Two partitions (users split by parity) through the Spark partition step, merged as the
    driver merges them (JSON, as they travel), then the one finish."""
    from receval.partitions import merge, with_first_ids

    metas = []
    for part in (0, 1):
        t, p = truth[truth["user"] % 2 == part], preds[preds["user"] % 2 == part]
        r = evaluate_partition(t, p, METRICS, dict(options))
        names = frozenset(r.metrics)
        metas.append(json.loads(json.dumps(
            {"partition": part, "counts": r.counts,
             "sums": with_first_ids(r, names).to_dict()}, default=plain)))
    counts, sums = merge(metas)
    resolved = resolve(options.get("profile"), {k: v for k, v in options.items()
                                                if k != "profile"})
    specs = parse_metrics(METRICS)
    per_spec = [resolved.options_for(s.family) for s in specs]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = finish(specs, per_spec, counts, sums)
    return summary, counts, [str(w.message) for w in caught]


@pytest.mark.parametrize("options", [
    {"relevance_threshold": 3},
    {"relevance_threshold": 4, "empty": "nan"},
    {"relevance_threshold": 3, "empty": "skip", "users": "union", "average": "micro"},
    {"profile": "recommenders"},
])
def test_partitions_merged_then_finished_equal_the_whole(options: dict) -> None:
    truth, preds = _frames(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        whole = receval.evaluate(truth, preds, METRICS, silence=["no-threshold", "no-match"],
                                 **options)
    summary, counts, said = _driver(truth, preds, options)
    assert list(summary) == list(whole.summary)
    np.testing.assert_array_equal(np.array(list(summary.values())),
                                  np.array(list(whole.summary.values())))
    assert counts["summary_null"] == whole.counts["summary_null"]
    assert counts == whole.counts
    # the finish's warnings (undefined values, ties) are the local plan's, in its order
    local = [str(w.message) for w in caught if "threshold" not in str(w.message)]
    assert said == local
    assert said or options.get("empty") == "skip"  # undefined values, ties: said once


def test_no_user_errors_from_the_one_finish() -> None:
    truth, preds = _frames(2)
    options = {"users": "relevant", "relevance_threshold": 9}
    with pytest.raises(ReceValError) as local:
        receval.evaluate(truth, preds, METRICS, **options)
    with pytest.raises(ReceValError) as merged:
        _driver(truth, preds, options)
    assert str(merged.value) == str(local.value)
    assert str(local.value).startswith("no user to evaluate with users='relevant'")


def test_the_spark_driver_has_no_finish_of_its_own() -> None:
    """The Spark driver's copy (its own "no user" errors, summary_null and warnings) is gone:
    both doors call receval.finalize."""
    spark = "".join(p.read_text() for p in sorted((SRC / "spark").glob("*.py")))
    engine = (SRC / "spark" / "driver.py").read_text()
    for copy in ("no user to evaluate", "null_reasons", "UndefinedMetricWarning",
                 "check_relevance_threshold", "check_ties"):
        assert copy not in spark, copy
    for door in (engine, (SRC / "evaluation.py").read_text()):
        assert "finish(" in door and "check_inputs(" in door
