"""exclude_train is recorded in Result.options with the options, once (issue 21, point 3):
the training audit adds counts, never options."""

from __future__ import annotations

import warnings

import pandas as pd

import receval
from receval import training
from receval.data.columns import read_sides
from receval.finalize import record_profile
from receval.measures.spec import parse_metrics
from receval.options import Options
from receval.result import Result

TRUTH = pd.DataFrame({"user": [1, 1, 2], "item": [10, 11, 12]})
PREDS = pd.DataFrame({"user": [1, 1, 2, 2], "item": [10, 13, 12, 14],
                      "score": [0.9, 0.8, 0.7, 0.6]})
TRAIN = pd.DataFrame({"user": [1, 2], "item": [13, 14]})


def _evaluate(**kwargs: object) -> Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(TRUTH, PREDS, ["P@1"], **kwargs)  # type: ignore[arg-type]


def test_the_audit_writes_counts_not_options() -> None:
    t, p = read_sides(TRUTH, PREDS)
    leak = training.Leakage.of(TRAIN, TRUTH, t, p, exclude_train=True)
    result = Result(summary={"P@1": 1.0}, per_user=pd.DataFrame({"user": [1, 2]}),
                    counts={"rows": {}}, options={"ties": "stable"}, metrics=["P@1"])
    leak.record(result)
    assert result.options == {"ties": "stable"}
    assert result.counts["train"]["predictions_in_train"] == 2


def test_record_profile_records_the_inputs_with_the_options() -> None:
    r = Result(summary={}, per_user=pd.DataFrame(), counts={}, options={}, metrics=[])
    record_profile(r, parse_metrics(["P@1"]), [Options()], Options(), None,
                   inputs={"exclude_train": True})
    assert r.options["exclude_train"] is True
    assert list(r.options)[-1] == "exclude_train"  # after the options and the profile


def test_evaluate_records_exclude_train_as_before() -> None:
    assert "exclude_train" not in _evaluate().options
    assert _evaluate(train=TRAIN).options["exclude_train"] is False
    excluded = _evaluate(train=TRAIN, exclude_train=True)
    assert excluded.options["exclude_train"] is True
    assert excluded.summary["P@1"] == 1.0  # 13 and 14 are training items: 10 and 12 lead
    assert list(excluded.options)[-1] == "exclude_train"
