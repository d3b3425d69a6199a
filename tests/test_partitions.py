"""One partition of users through the local plan (:mod:`receval.partitions`), shared by the
Spark executor task and the streamed batches: the partition mode is passed explicitly (no
global state), and the streaming path does not load the Spark engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import receval
from receval.evaluation import evaluate_partition
from receval.exceptions import ReceValError
from receval.partitions import (
    LocalPlan,
    PartitionMode,
    describe,
    finite_range,
    merge,
    rating_range,
)

SRC = Path(receval.__file__).parent

TRUTH = {"user": [1, 2], "item": [5, 6]}
PREDS = {"user": [3], "item": [5], "score": [1.0]}  # no user in both: none selected


def test_the_partition_mode_is_an_argument_not_global_state() -> None:
    """The same call selects no user: an error on its own, not on a partition (the driver
    raises when no partition selects one); and no partition mode stays set after it."""
    with pytest.raises(ReceValError, match="no user"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], users="both")
    part = evaluate_partition(TRUTH, PREDS, ["P@1"], {"users": "both"})
    assert part.counts["users"]["evaluated"] == 0
    with pytest.raises(ReceValError, match="no user"):  # nothing left behind by the partition
        receval.evaluate(TRUTH, PREDS, ["P@1"], users="both")
    explicit = receval.evaluate(TRUTH, PREDS, ["P@1"], users="both", _partition=PartitionMode())
    assert explicit.counts["users"]["evaluated"] == 0
    source = (SRC / "evaluation.py").read_text()
    assert "contextvars" not in source and "ContextVar" not in source


def test_a_partition_with_one_side_empty_counts_as_its_users_do() -> None:
    """Dummy users on the empty side are taken out of the counts by difference: the users
    and rows are the partition's own (oracle: counted by hand)."""
    plan = LocalPlan(
        ("user", "item", None, "user", "item", "score"), evaluate_partition, ["P@1"], {}
    )
    truth = pa.table({"user": [1, 1, 2], "item": [5, 6, 6]})
    preds = pa.table(
        {
            "user": pa.array([], pa.int64()),
            "item": pa.array([], pa.int64()),
            "score": pa.array([], pa.float64()),
        }
    )
    counts = plan.evaluate(truth, preds).counts
    assert counts["rows"]["truth"] == 3 and counts["rows"]["predictions"] == 0
    assert counts["users"]["in_truth"] == 2 and counts["users"]["evaluated"] == 2


def test_merged_counts_add_up_and_the_rating_range_spans_every_partition() -> None:
    plan = LocalPlan(
        ("user", "item", "rating", "user", "item", "score"),
        evaluate_partition,
        ["P@1"],
        {"relevance_threshold": 3},
    )
    sides = [
        ({"user": [1], "item": [5], "rating": [4.0]}, {"user": [1], "item": [5], "score": [1.0]}),
        (
            {"user": [2, 2], "item": [5, 6], "rating": [1.0, 5.0]},
            {"user": [2], "item": [7], "score": [1.0]},
        ),
    ]
    metas = []
    for part, (t, p) in enumerate(sides):
        truth, preds = pa.table(t), pa.table(p)
        meta = {"partition": part, "rating_range": finite_range(truth, "rating")}
        meta.update(describe(plan.evaluate(truth, preds), plan.row_firsts))
        metas.append(meta)
    assert rating_range(metas) == [1.0, 5.0]
    counts, sums = merge(metas)
    assert counts["rows"]["truth"] == 3 and counts["rows"]["predictions"] == 2
    assert counts["users"]["evaluated"] == 2
    assert [m.name for m in sums.metrics] == ["P@1"]


def test_the_streaming_path_does_not_load_the_spark_engine() -> None:
    code = (
        "import sys, receval.streaming.plan, receval.partitions; "
        "print(sorted(m for m in sys.modules if m.startswith('receval.spark')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert "receval.spark" not in (SRC / "streaming" / "plan.py").read_text()
