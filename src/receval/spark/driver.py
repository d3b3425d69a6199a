"""The Spark engine's driver: ``evaluate(..., engine="spark")`` from the inputs to the
:class:`~receval.spark.result.SparkResult`.

It reads and checks both sides (:mod:`receval.spark.schema`), plans the one evaluation job
(:mod:`receval.spark.job`: one shuffle by user, :class:`receval.spark.task._Task` on each
partition), merges the partitions' counts and exact sums (:mod:`receval.partitions`) and
finishes them once, as the local plan does: summary, warnings, the training audit, the
recorded plan and the beyond-accuracy metrics (:mod:`receval.spark.beyond_finish`).
See :mod:`receval.spark` for the design and docs/spark.md for running it on a cluster.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

import numpy as np

from receval import checks
from receval._version import __version__
from receval.accumulate import Accumulator
from receval.audit import no_user_error
from receval.beyond.attach import recorded as recorded_beyond
from receval.beyond.settings import resolve as resolve_beyond
from receval.exceptions import ReceValError
from receval.finalize import (
    Described,
    canonical_names,
    check_inputs,
    finish,
    record_profile,
    recorded_inputs,
)
from receval.io.wanted import Wanted
from receval.measures.spec import RATING, parse_metrics
from receval.partitions import PartitionFn, PartitionMode, merge, merge_strata, rating_range
from receval.profiles import resolve
from receval.result import Counts, RecordedOptions
from receval.spark import beyond as spark_beyond
from receval.spark.beyond_finish import _catalogue, _finish_beyond, _popularity
from receval.spark.failures import Stage, log_level, spark_call
from receval.spark.footers import read_footers
from receval.spark.job import _run
from receval.spark.result import SparkResult, _quiet_pyspark
from receval.spark.schema import (
    _arrow_schema,
    _as_frame,
    _check_columns,
    _common_type,
    _is_frame,
    _out_schema,
    _union,
)
from receval.spark.session import get_session
from receval.spark.settings import _spark_options, auto_partitions
from receval.spark.task import _null_free, _Task
from receval.spark.training import SparkTrain
from receval.spark.training import record as record_train
from receval.strata import as_mapping
from receval.strata import complete as complete_strata

#: options under which the rows' order changes nothing (no order column is shuffled)
_ORDER_FREE_TIES = frozenset({"item", "item_ascending", "pessimistic", "optimistic", "average"})


def evaluate_spark(
    truth: Any,
    predictions: Any,
    metrics: str | Iterable[str],
    partition_fn: PartitionFn,
    *,
    profile: Any,
    explicit: Mapping[str, Any],
    silence: Any,
    spark_options: Mapping[str, Any] | None,
    columns: Mapping[str, Any],
    strata: Any = None,
    train: Mapping[str, Any] | None = None,
    beyond: Mapping[str, Any] | None = None,
) -> SparkResult:
    """``receval.evaluate(..., engine="spark")``: see :mod:`receval.spark`.

    ``partition_fn`` runs the local plan on one partition (from :mod:`receval.evaluation`);
    ``explicit`` are the options passed, ``columns`` the column arguments of ``evaluate``;
    ``strata`` the user -> group mapping (:func:`receval.strata.as_mapping`, or a Spark
    DataFrame of it), each partition's groups' exact sums merged on the driver; ``train`` the
    training arguments of ``evaluate`` (``train``, ``exclude_train``, ``train_columns``,
    ``timestamp_col``), audited and excluded by Spark joins (:mod:`receval.spark.training`);
    ``beyond`` the beyond-accuracy request (``specs``, ``requested``, ``item_features``,
    ``item_groups``, ``beyond``, ``item_features_columns``: :mod:`receval.spark.beyond`).

    Example:
        >>> from receval.evaluation import evaluate_partition
        >>> evaluate_spark(None, None, ["P@1"], evaluate_partition, profile=None, explicit={},
        ...     silence=None, spark_options={"nope": 1}, columns={})
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: unknown spark_options key 'nope'; known: partitions, order_by, per_user, master, log_level
    """  # noqa: E501
    # Spark's failures as one line naming the step (the trace chained, for --debug); its log
    # quiet while the call runs (set in _evaluate_spark once the session is known)
    stage = Stage("starting Spark")
    with _quiet_pyspark(), contextlib.ExitStack() as stack, spark_call(stage):
        return _evaluate_spark(
            truth,
            predictions,
            metrics,
            partition_fn,
            profile=profile,
            explicit=explicit,
            silence=silence,
            spark_options=spark_options,
            columns=columns,
            stage=stage,
            stack=stack,
            strata=strata,
            train=train,
            beyond=beyond,
        )


def _evaluate_spark(
    truth: Any,
    predictions: Any,
    metrics: str | Iterable[str],
    partition_fn: PartitionFn,
    *,
    profile: Any,
    explicit: Mapping[str, Any],
    silence: Any,
    spark_options: Mapping[str, Any] | None,
    columns: Mapping[str, Any],
    stage: Stage,
    stack: contextlib.ExitStack,
    strata: Any = None,
    train: Mapping[str, Any] | None = None,
    beyond: Mapping[str, Any] | None = None,
) -> SparkResult:
    sopts = _spark_options(spark_options)
    resolved = resolve(profile, explicit)
    options = resolved.options
    metric_list = [metrics] if isinstance(metrics, str) else list(metrics)
    specs = parse_metrics(metric_list) if metric_list or not beyond else []
    per_spec = [resolved.options_for(s.family) for s in specs]
    b_specs = [] if beyond is None else list(beyond["specs"])
    b_opts = resolve_beyond(resolved.name, None if beyond is None else beyond["beyond"])
    spark_beyond.check(b_specs, b_opts)  # before any Spark job
    if beyond is not None:  # the partitions compute every name; catalogue ones as counts
        metric_list = list(beyond["requested"])
    per_user_names = [
        n
        for n in metric_list
        if n in {s.name for s in specs}
        or n in {b.name for b in b_specs if b.entry.reduction == "user"}
    ]
    with checks.silence(silence):  # unknown codes are an error before any Spark job
        pass
    spark = next((x.sparkSession for x in (truth, predictions) if _is_frame(x)), None)
    if spark is None:
        spark = get_session(sopts["master"])
    stack.enter_context(log_level(spark, sopts["log_level"]))
    stage.name = "reading the truth and predictions"
    # local Parquet paths: their footers give the rows, the columns without nulls and the
    # schema (no counting job, no per-row null check in the shuffle, no inference by Spark)
    found = (read_footers(truth), read_footers(predictions))
    truth_df = _as_frame(truth, spark, "truth", found[0])
    pred_df = _as_frame(predictions, spark, "predictions", found[1])
    wt, wp = Wanted.sides(columns)
    rating_needed = (
        explicit.get("relevance_threshold") is not None
        or explicit.get("gain", "binary") != "binary"
        or resolved.requires_rating
        or any(s.family in RATING for s in specs)
    )
    _check_columns(truth_df, wt, rating_needed)
    _check_columns(pred_df, wp, False)
    trained, read_preds = None, pred_df
    if train is not None:  # the exclusion: an anti-join before the shuffle
        trained = SparkTrain.read(
            train["train"],
            lambda source, side: _as_frame(source, spark, side, read_footers(source)),
            user_col=wt.user,
            item_col=wt.item,
            timestamp_col=train["timestamp_col"],
            columns=train["train_columns"],
            exclude=train["exclude_train"],
            truth_timestamp=(columns.get("truth_columns") or {}).get(
                "timestamp", train["timestamp_col"]
            ),
        )
        if trained.exclude:
            pred_df = trained.kept(pred_df, wp)
    lean = trained is not None and not sopts["per_user"]
    sopts["per_user"] = sopts["per_user"] or lean  # the audit counts the evaluated users
    # with train=, rows are excluded and joined: counted and checked by Spark
    feet = found if train is None else (None, None)
    if sopts["partitions"] == "auto":  # two counts (cheap: Parquet footers, local frames)
        rows = (
            feet[0].rows + feet[1].rows
            if feet[0] is not None and feet[1] is not None
            else truth_df.count() + pred_df.count()
        )
        sopts["partitions"] = auto_partitions(rows, spark.sparkContext.defaultParallelism)
    elif sopts["partitions"] == "spark":
        sopts["partitions"] = None
    ordered = sopts["order_by"] is not None or not all(
        o.ties in _ORDER_FREE_TIES and o.duplicates == "error" for o in [options, *per_spec]
    )
    # ties="stable" orders only a user's tied scores by the rows' order: without ties the
    # order changes nothing, so the order column is shuffled only when a partition finds one
    tie_check = (
        ordered
        and sopts["order_by"] is None
        and all(
            o.ties in _ORDER_FREE_TIES | {"stable"} and o.duplicates == "error"
            for o in [options, *per_spec]
        )
    )
    kwargs = {"profile": profile, **explicit, **{k: v for k, v in columns.items()}}
    mapping = None
    if strata is not None:  # sent with the plan: each partition stratifies its own users
        mapping = as_mapping(
            strata.toPandas() if _is_frame(strata) else strata,
            user_col=columns.get("user_col", "user"),
        )
        kwargs["strata"] = mapping
    if beyond is not None:  # the item-level inputs, whole, to every partition
        kwargs.update(
            {
                k: beyond[k]
                for k in ("item_features", "item_groups", "beyond", "item_features_columns")
            }
        )

    # each user's training items with the user's rows: the calibration metrics read them, and
    # the popularity metrics' partitions need train= (its counts replaced by the driver's)
    popularity = catalogue = None  # the whole data's, sent to every partition when asked
    history = (
        trained.frame
        if trained is not None
        and any(spark_beyond.reads(b_specs, b_opts, r) for r in ("history", "popularity"))
        else None
    )
    if history is not None and spark_beyond.reads(b_specs, b_opts, "popularity"):
        stage.name = "the training popularity (training rows counted per item)"
        popularity = _popularity(
            trained,
            b_specs,
            b_opts,
            _common_type(
                truth_df.schema[wt.item].dataType, pred_df.schema[wp.item].dataType, "item"
            ),
        )
    if beyond is not None and spark_beyond.needs_catalogue(b_specs, b_opts):  # to every part
        stage.name = "the catalogue (its items collected)"
        catalogue = _catalogue(
            beyond,
            b_opts,
            truth_df,
            trained,
            wt,
            _common_type(
                truth_df.schema[wt.item].dataType, pred_df.schema[wp.item].dataType, "item"
            ),
            {},
        )

    def plan(with_order: bool) -> tuple[Any, _Task]:
        union, task = _union(
            truth_df,
            pred_df,
            wt,
            wp,
            sopts["order_by"] if with_order else None,
            with_order,
            history,
        )
        task = dataclasses.replace(
            task,
            fn=partition_fn,
            metrics=metric_list,
            kwargs=kwargs,
            null_free=_null_free(feet, task, sopts["order_by"] if with_order else None),
            n_metrics=len(per_user_names),
            row_firsts=frozenset(s.name for s in specs),
            per_user=sopts["per_user"],
            partitions=sopts["partitions"],
            tie_check=tie_check and not with_order,
            mode=PartitionMode(popularity=popularity, catalogue=catalogue),
            entries=tuple({s.metric: s.entry for s in b_specs}.values()),
        )
        return union, task

    stage.name = "the evaluation job (rows shuffled by user, each partition evaluated)"
    union, task = plan(ordered and not (tie_check and _has_score(wp, pred_df)))
    user_type = union.schema["u"].dataType
    out_schema = _out_schema(user_type, len(per_user_names))
    task = dataclasses.replace(task, out_schema=_arrow_schema(out_schema))
    metas, per_user, cached, shuffles = _run(
        spark, union, task, out_schema, per_user_names, sopts, _MODE
    )
    for retry in ("order", "struct"):
        if not any(json.loads(row[0]).get("retry") for row in metas):
            break
        # a partition found tied scores (the order column is needed), or a null id, score or
        # order value that would shift the packed lists: again with the order column, then
        # as structs (nulls kept) for the local engine's own answer (its error)
        if cached is not None:
            cached.unpersist()
        mode = "struct"
        if retry == "order" and task.tie_check:
            union, task = plan(True)
            task = dataclasses.replace(task, out_schema=_arrow_schema(out_schema))
            mode = _MODE
        metas, per_user, cached, shuffles = _run(
            spark, union, task, out_schema, per_user_names, sopts, mode
        )
        if mode == "struct":
            break
    try:
        counts, merged = merge([json.loads(row[0]) for row in metas])
        names = {s.name for s in specs}
        sums = Accumulator(tuple(m for m in merged.metrics if m.name in names))
        with checks.silence(silence):  # the local plan's finish, on the merged counts
            summary = finish(specs, per_spec, counts, sums)
        if not specs and counts["users"]["evaluated"] == 0:  # beyond-accuracy metrics only
            raise no_user_error(
                options.users,
                relevant_only=options.users == "relevant" and bool(counts["users"]["in_truth"]),
            )
        groups = (
            None
            if mapping is None
            else merge_strata([json.loads(row[0]) for row in metas], specs, per_spec, mapping)
        )
    except ReceValError:
        if cached is not None:
            cached.unpersist()
        raise
    tasks = sorted((json.loads(row[0])["task"] for row in metas), key=lambda t: t["partition"])
    record = options.to_dict()
    record.update(version=__version__, engine="spark", metrics={s.name: s.canonical for s in specs})
    out = SparkResult(
        summary=summary,
        per_user=per_user,
        counts=cast(Counts, counts),
        options=cast(RecordedOptions, record),
        metrics=[s.name for s in specs],
        sums=sums,
        strata=None if groups is None else groups.table,
        strata_sums=None if groups is None else groups.sums,
        _cached=cached,
        tasks=tasks,
        _log_level=sopts["log_level"],
        shuffles=shuffles,
    )
    ratings = rating_range([json.loads(row[0]) for row in metas])
    with checks.silence(silence):
        check_inputs(
            counts,
            options,
            ratings=None if ratings is None else np.array(ratings),
            column=wt.value,
            threshold_given="relevance_threshold" in explicit,
            item_overlap=lambda: _item_overlap(truth_df, pred_df, wt, wp),
        )
        if trained is not None:
            stage.name = "the training audit (joins with train)"
            audit, n_preds, n_truth = trained.audit(
                truth_df, read_preds, wt, wp, out.per_user.select("user")
            )
            record_train(
                out, audit, predictions=n_preds, truth=n_truth, exclude_train=trained.exclude
            )
            if trained.exclude:  # lists the exclusion emptied, counted as the local plan does
                from receval.training.leakage import count_emptied

                count_emptied(out, trained.emptied(read_preds, wp, out.per_user.select("user")))
    # what the plan records (once): a Spark train frame described by the audit's counts
    record_profile(
        out,
        specs,
        per_spec,
        options,
        resolved.name,
        inputs=recorded_inputs(
            train=None if train is None else _train_source(train["train"], out),
            exclude_train=trained is not None and trained.exclude,
            strata=None if strata is None else _source(strata),
            item_features=None if beyond is None else _source(beyond.get("item_features")),
            item_groups=None if beyond is None else _source(beyond.get("item_groups")),
            beyond=None
            if beyond is None
            else recorded_beyond(b_specs, options, beyond["beyond"], resolved.name),
        ),
        metrics=None if beyond is None else canonical_names(specs, b_specs, beyond["requested"]),
    )
    if beyond is not None:
        stage.name = "the beyond-accuracy metrics (exposure counts merged)"
        _finish_beyond(
            out,
            beyond,
            b_opts,
            merged,
            metas,
            options,
            truth_df,
            trained,
            wt,
            union.schema["i"].dataType,
        )
    if mapping is not None:  # the groups' per-user beyond metrics from their merged sums
        complete_strata(out, [] if beyond is None else beyond["specs"])
    if lean:
        out.unpersist()
        out.per_user = None
    return out


#: how the rows reach the partitions: ``columns`` packs each user's rows into one row of
#: lists, one list per column (Arrow moves lists of numbers far faster than lists of structs);
#: ``struct`` packs them as one list of row structs, which keeps nulls (the fallback when a
#: null id, score or order value would shift the column lists). Shuffling the rows
#: themselves (``repartition`` by user) measured twice as slow as either: not offered.
_MODE = "columns"


def _has_score(wanted: Wanted, frame: Any) -> bool:
    """Whether the predictions have a score or rank column (the tie check compares it)."""
    return wanted.value in frame.columns or (
        wanted.rank is not None and wanted.rank in frame.columns
    )


def _item_overlap(truth: Any, preds: Any, wt: Wanted, wp: Wanted) -> float:
    """The share of distinct predicted items found anywhere in the truth (two Spark jobs, run
    only when most users have no hit)."""
    from pyspark.sql import functions as F

    predicted = preds.select(F.col(wp.item).alias("i")).distinct()
    known = truth.select(F.col(wt.item).alias("i")).distinct()
    n = predicted.count()
    return predicted.join(known, "i", "left_semi").count() / n if n else 1.0


def _train_source(data: Any, out: SparkResult) -> Any:
    """``train=`` as :func:`receval.finalize.recorded_inputs` takes it: a Spark frame as the
    rows and users the training audit counted (as a local table is described), a path as
    given."""
    if not _is_frame(data):
        return data
    audit = out.counts.get("train") or {}
    return Described(rows=audit.get("rows"), users=audit.get("users"))


def _source(data: Any) -> Any:
    """An input as :func:`receval.finalize.recorded_inputs` takes it: a Spark frame as its
    kind (never collected to count it), anything else as it is."""
    return "a Spark DataFrame" if _is_frame(data) else data
