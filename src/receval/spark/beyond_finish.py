"""The beyond-accuracy metrics on the Spark driver: the partitions' merged sums and exposure
counts finished (:func:`receval.spark.beyond.finish`), with what needs the whole data
collected by Spark: the catalogue's items and the training popularity."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from receval.accumulate import Accumulator
from receval.io.wanted import Wanted
from receval.options import Options
from receval.spark import beyond as spark_beyond
from receval.spark.result import SparkResult
from receval.spark.training import SparkTrain


def _finish_beyond(
    out: SparkResult,
    beyond: Mapping[str, Any],
    b_opts: Any,
    merged: Accumulator,
    metas: list[Any],
    options: Options,
    truth_df: Any,
    trained: SparkTrain | None,
    wt: Wanted,
    item_type: Any,
) -> None:
    """The beyond-accuracy metrics from the partitions' merged sums and exposure counts
    (:func:`receval.spark.beyond.finish`); the catalogue's items collected by Spark."""

    names = {s.name for s in beyond["specs"] if s.entry.reduction == "user"}
    sums = Accumulator(tuple(m for m in merged.metrics if m.name in names))
    exposures = spark_beyond.merge_exposure(
        [e for e in (json.loads(row[0]).get("exposure") for row in metas) if e]
    )

    whole = any(s.entry.reduction == "catalogue" for s in beyond["specs"])
    catalogue = (
        []
        if not whole
        else _catalogue(
            beyond,
            b_opts,
            truth_df,
            trained,
            wt,
            item_type,
            exposures.get(spark_beyond.WHOLE, ({}, 0))[0],
        )
    )
    groups = None
    # a catalogue metric that reads the item groups (group_exposure): read as the plan does
    if spark_beyond.reads(beyond["specs"], b_opts, "groups", "catalogue"):
        from receval.beyond.frames import feature_groups
        from receval.beyond.groups import read_groups

        groups = (
            feature_groups(
                beyond["item_features"], wt.item, columns=beyond["item_features_columns"]
            )
            if beyond["item_groups"] is None and beyond["item_features"] is not None
            else read_groups(beyond["item_groups"], beyond["item_features"], wt.item)
        )
    chosen = {json.loads(row[0]).get("protected_group") for row in metas} - {None}
    recorded = out.options.get("beyond")
    if len(chosen) == 1 and recorded is not None:  # as the local plan records it
        out.options["beyond"] = {**recorded, "protected_group": chosen.pop()}
    spark_beyond.finish(
        out,
        beyond["specs"],
        beyond["requested"],
        sums,
        exposures,
        catalogue,
        options,
        b_opts,
        groups,
    )


def _catalogue(
    beyond: Mapping[str, Any],
    b_opts: Any,
    truth_df: Any,
    trained: SparkTrain | None,
    wt: Wanted,
    item_type: Any,
    listed: Mapping[Any, int],
) -> list[Any]:
    """The catalogue's item ids as the local plan builds it, collected by Spark
    (:func:`receval.spark.beyond.catalogue_items`; ``listed``: the lists' items)."""
    from pyspark.sql import functions as F

    def items(frame: Any, column: str) -> list[Any]:
        rows = frame.select(F.col(column).cast(item_type).alias("i")).distinct().collect()
        return [row[0] for row in rows]

    def truth_items() -> list[Any]:
        rated = truth_df
        if wt.value in truth_df.columns:  # rows without a rating are dropped when read
            value = F.col(wt.value)
            rated = truth_df.filter(value.isNotNull() & ~F.isnan(value.cast("double")))
        return items(rated, wt.item)

    return spark_beyond.catalogue_items(
        b_opts,
        truth=truth_items,
        train=None if trained is None else (lambda: items(trained.frame, "i")),
        item_features=beyond["item_features"],
        features_columns=beyond["item_features_columns"],
        item_col=wt.item,
        listed=listed,
    )


def _popularity(trained: SparkTrain | None, specs: list[Any], options: Any, item_type: Any) -> Any:
    """The whole training data's item popularity, counted by Spark and collected (one row
    per item): :func:`receval.spark.beyond.popularity`."""
    from pyspark.sql import functions as F

    assert trained is not None
    frame = trained.frame.select("u", F.col("i").cast(item_type).alias("i"))
    rows = (
        frame.groupBy("i")
        .agg(F.count(F.lit(1)).alias("n"), F.countDistinct("u").alias("d"))
        .collect()
    )
    n_users = frame.select("u").distinct().count()
    return spark_beyond.popularity(
        [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], n_users, specs, options
    )
