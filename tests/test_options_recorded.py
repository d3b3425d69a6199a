"""The inputs besides the options (train, exclude_train, item_features, item_groups, strata,
beyond) are recorded in Result.options as part of the plan, once, at every door (issue 21,
point 3): short descriptions, never the tables; the training audit adds counts, never options."""

from __future__ import annotations

import dataclasses
import types
import typing
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pytest

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
        return receval.evaluate(TRUTH, PREDS, ["P@1"], **kwargs)


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
    assert r.options["train"] is None and r.options["strata"] is None  # every key, always


INPUTS = ("train", "exclude_train", "item_features", "item_groups", "strata", "beyond")


def test_evaluate_records_exclude_train_with_the_plan() -> None:
    assert _evaluate().options["exclude_train"] is False
    assert _evaluate(train=TRAIN).options["exclude_train"] is False
    excluded = _evaluate(train=TRAIN, exclude_train=True)
    assert excluded.options["exclude_train"] is True
    assert excluded.summary["P@1"] == 1.0  # 13 and 14 are training items: 10 and 12 lead


def test_evaluate_records_every_input_as_a_short_description(tmp_path: object) -> None:
    plain = _evaluate().options
    assert {k: plain[k] for k in INPUTS} == {
        "train": None, "exclude_train": False, "item_features": None, "item_groups": None,
        "strata": None, "beyond": None}
    r = _evaluate(train=TRAIN, strata={1: "a", 2: "b", 3: "a"})
    assert r.options["train"] == {"rows": 2, "users": 2}
    assert r.options["strata"] == {"users": 3, "groups": 2}
    assert _evaluate(train=TRAIN, strata="activity").options["strata"] == "activity"
    renamed = TRAIN.rename(columns={"user": "uid"})
    r = _evaluate(train=renamed, train_columns={"user": "uid", "item": "item"})
    assert r.options["train"] == {"rows": 2, "users": 2}  # as read, whatever the column names
    features = pd.DataFrame({"item": [10, 11, 12, 13, 14], "genres": ["a", "b", "a|b", "c", "c"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = receval.evaluate(TRUTH, PREDS, ["P@1", "coverage@2", "diversity@2"], train=TRAIN,
                             item_features=features, item_groups={10: "x", 13: "y"})
    assert r.options["item_features"] == {"rows": 5}
    assert r.options["item_groups"] == {"items": 2, "groups": 2}
    assert r.options["beyond"]["catalogue_metrics"] == ["coverage@2"]
    assert list(r.options["metrics"]) == ["P@1", "coverage@2", "diversity@2"]
    import json

    json.dumps(r.to_dict())  # descriptions, never the tables


def test_the_options_are_written_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """After record_profile nothing writes the options: a read-only view stays in place
    (the beyond-accuracy metrics used to replace the dict after they were computed)."""
    from receval import evaluation, finalize

    def once(result: Result, *args: object, **kwargs: object) -> None:
        finalize.record_profile(result, *args, **kwargs)
        result.options = types.MappingProxyType(result.options)

    monkeypatch.setattr(evaluation, "record_profile", once)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = receval.evaluate(TRUTH, PREDS, ["P@1", "coverage@2", "novelty@2"], train=TRAIN,
                             exclude_train=True)
    assert isinstance(r.options, types.MappingProxyType)
    assert r.options["beyond"]["catalogue_metrics"] == ["coverage@2"]
    assert r.options["exclude_train"] is True


def test_evaluate_scores_records_the_same_inputs() -> None:
    scores = np.array([[0.9, 0.1, 0.8], [0.2, 0.7, 0.3]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = receval.evaluate_scores({"user": [0, 1], "item": [0, 1]}, scores, ["P@1"],
                                    train={"user": [0, 0, 1], "item": [2, 1, 0]},
                                    exclude_train=True, device="cpu")
    assert {k: r.options[k] for k in INPUTS} == {
        "train": {"rows": 3, "users": 2}, "exclude_train": True, "item_features": None,
        "item_groups": None, "strata": None, "beyond": None}


def test_compare_records_the_inputs_and_each_model_too() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = receval.compare(TRUTH, {"a": PREDS, "b": PREDS}, ["P@1"], train=TRAIN,
                            exclude_train=True, strata="activity", n_resamples=10)
    assert c.options["train"] == {"rows": 2, "users": 2}
    assert c.options["exclude_train"] is True and c.options["strata"] == "activity"
    for result in c.results.values():
        assert result.options["train"] == {"rows": 2, "users": 2}
        assert result.options["exclude_train"] is True


# typed: Result.counts and Result.options have a declared schema --------------------------------


def test_the_recorded_options_type_each_option_as_options_does() -> None:
    from receval.result import RecordedOptions

    declared = typing.get_type_hints(RecordedOptions)
    fields = typing.get_type_hints(Options)
    for field in dataclasses.fields(Options):
        assert declared[field.name] == fields[field.name], field.name


def _undeclared(value: Mapping[str, object], schema: type) -> set[str]:
    """The keys of ``value`` that the TypedDict ``schema`` does not declare."""
    return set(value) - set(typing.get_type_hints(schema))


def test_every_key_a_door_writes_is_declared() -> None:
    from receval.result import Counts, RecordedOptions

    features = pd.DataFrame({"item": [10, 11, 12, 13, 14], "genres": ["a", "b", "a|b", "c", "c"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = [
            receval.evaluate(TRUTH, PREDS, ["P@1", "coverage@2", "diversity@2"], train=TRAIN,
                             exclude_train=True, item_features=features, strata="activity"),
            receval.evaluate(TRUTH, PREDS, ["P@1", "AP@2"], profile="torchmetrics"),
            receval.evaluate(TRUTH, PREDS, ["P@1"], debias="ips", propensity="uniform"),
            receval.evaluate_scores({"user": [0, 1], "item": [0, 1]},
                                    np.array([[0.9, 0.1], [0.2, 0.7]]), ["P@1"],
                                    train={"user": [0], "item": [1]}, device="cpu"),
        ]
    for r in results:
        assert _undeclared(r.counts, Counts) == set()
        assert _undeclared(r.options, RecordedOptions) == set()


def test_the_strata_sums_are_typed_on_the_result() -> None:
    r = _evaluate(strata={1: "a", 2: "b"})
    assert sorted(r.strata_sums) == ["a", "b"] and not r.strata.attrs
    merged = r.strata_sums["a"].merge(r.strata_sums["b"])
    assert merged.finalize(Options()) == r.summary
