"""The Spark engine's plan: one shuffle by user, the local plan per partition, an exact merge.

See :mod:`receval.spark` for the design and docs/spark.md for running it on a cluster.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from receval import checks
from receval._version import __version__
from receval.accumulate import Accumulator
from receval.audit import no_user_error
from receval.beyond.attach import recorded as recorded_beyond
from receval.beyond.settings import resolve as resolve_beyond
from receval.data.columns import read_columns
from receval.data.encode import check_same_kind
from receval.exceptions import ReceValError, UndefinedMetricError
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
from receval.options import Options
from receval.profiles import get as get_profile
from receval.profiles import resolve
from receval.result import Counts, RecordedOptions, Result
from receval.scalars import plain
from receval.spark import beyond as spark_beyond
from receval.spark.failures import Stage, log_level, spark_call
from receval.spark.footers import Footers, read_footers, spark_schema
from receval.spark.session import get_session, session_conf
from receval.spark.training import ROW, SparkTrain
from receval.spark.training import record as record_train
from receval.strata import NONE, Strata, as_mapping, no_match_error, summarise
from receval.strata import complete as complete_strata

#: the keys of ``evaluate(..., spark_options=...)``
SPARK_OPTIONS = ("partitions", "order_by", "per_user", "master", "log_level")
#: Spark's log levels (``log_level``: Spark's level while receval's call runs)
LOG_LEVELS = ("ALL", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")

#: the per-partition plan :mod:`receval.evaluation` hands in: ``(truth, predictions, metrics,
#: kwargs) -> Result`` (:func:`receval.evaluation.evaluate_partition`)
PartitionFn = Callable[[Any, Any, list[str], dict[str, Any]], Result]

#: options under which the rows' order changes nothing (no order column is shuffled)
_ORDER_FREE_TIES = frozenset({"item", "item_ascending", "pessimistic", "optimistic", "average"})

#: a partition that holds rows of one side only is evaluated with a dummy user on the other
#: side; ``users`` is swapped for one that selects the same real users and not the dummy
_SWAP_USERS = {
    "predictions": {"truth": "truth", "relevant": "relevant", "both": "both",
                    "predictions": "both", "union": "truth"},
    "truth": {"truth": "both", "relevant": "both", "both": "both",
              "predictions": "predictions", "union": "predictions"},
}


@dataclass(repr=False)
class SparkResult(Result):
    """A :class:`~receval.result.Result` from the Spark engine.

    ``per_user`` is a *Spark* DataFrame (``user`` and one column per metric), computed in the
    same pass as the summary and persisted (memory and disk), never collected by receval:
    :meth:`per_user_pandas` collects it in the local engine's order (sorted by user) and
    :meth:`unpersist` frees it. It is ``None`` under ``spark_options={"per_user": False}``.
    Everything else (summary, counts, options, sums) is on the driver, as for the local
    engine; ``sums`` is the exact merge of the partitions' sums (``first_undefined`` is a
    user id).
    """

    _cached: Any = field(default=None, repr=False, compare=False)
    #: per partition: its id, the worker's pid, its rows, the seconds the local plan took,
    #: whether it was the worker's first (where the kernels load or compile), the seconds
    #: before it (unpacking), the Arrow batches it received, the threads it ran on and whether
    #: the shuffle counted its users' nulls (``null_check``: not where the footers say none)
    tasks: list[dict[str, Any]] = field(default_factory=list, repr=False, compare=False)
    #: Spark's log level while receval collects the per-user values (``log_level``)
    _log_level: str = field(default="ERROR", repr=False, compare=False)
    #: the shuffles (``Exchange`` nodes) in the evaluation job's physical plan: 1 for rows
    #: grouped by user by receval, 0 for inputs Spark knows are partitioned by user (both
    #: sides bucketed by it alike: docs/spark.md), more where the inputs' own plans shuffle
    shuffles: int = field(default=0, repr=False, compare=False)

    def __repr__(self) -> str:
        return Result.__repr__(self)

    def per_user_pandas(self) -> pd.DataFrame:
        """The per-user values collected to the driver, sorted by user (as the local engine).

        Example:
            >>> r = SparkResult({}, None, {}, {}, [])  # type: ignore[arg-type]
            >>> r.per_user_pandas()
            Traceback (most recent call last):
            ...
            receval.exceptions.ReceValError: no per-user values: evaluated with spark_options={'per_user': False}
        """  # noqa: E501
        if self.per_user is None:
            raise ReceValError("no per-user values: evaluated with spark_options="
                               "{'per_user': False}")
        with _quiet_pyspark(), spark_call(Stage("collecting the per-user values")):
            spark = self.per_user.sparkSession
            with log_level(spark, self._log_level):
                frame = self.per_user.toPandas()
        return frame.sort_values("user", kind="stable").reset_index(drop=True)

    def unpersist(self) -> None:
        """Free the cached per-user values (the Spark DataFrame cannot be used after).

        Example:
            >>> SparkResult({}, None, {}, {}, []).unpersist()  # type: ignore[arg-type]
        """
        if self._cached is not None:
            self._cached.unpersist()
            self._cached = None


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
        return _evaluate_spark(truth, predictions, metrics, partition_fn, profile=profile,
                               explicit=explicit, silence=silence,
                               spark_options=spark_options, columns=columns, stage=stage,
                               stack=stack, strata=strata, train=train, beyond=beyond)


@contextlib.contextmanager
def _quiet_pyspark() -> Iterator[None]:
    """pyspark's own warnings about the pandas version (it works: the engine moves Arrow
    batches) are not the user's concern; receval's warnings still show."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"pyspark\.")
        yield


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
    per_user_names = [n for n in metric_list if n in {s.name for s in specs}
                      or n in {b.name for b in b_specs if b.entry.reduction == "user"}]
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
    wt = Wanted.truth(user_col=columns.get("user_col", "user"),
                      item_col=columns.get("item_col", "item"),
                      rating_col=columns.get("rating_col", "rating"),
                      columns=columns.get("truth_columns"))
    wp = Wanted.predictions(user_col=columns.get("user_col", "user"),
                            item_col=columns.get("item_col", "item"),
                            score_col=columns.get("score_col", "score"),
                            columns=columns.get("prediction_columns"))
    rating_needed = (explicit.get("relevance_threshold") is not None
                     or explicit.get("gain", "binary") != "binary"
                     or resolved.requires_rating or any(s.family in RATING for s in specs))
    _check_columns(truth_df, wt, rating_needed)
    _check_columns(pred_df, wp, False)
    trained, read_preds = None, pred_df
    if train is not None:  # the exclusion: an anti-join before the shuffle
        trained = SparkTrain.read(
            train["train"],
            lambda source, side: _as_frame(source, spark, side, read_footers(source)),
            user_col=wt.user, item_col=wt.item, timestamp_col=train["timestamp_col"],
            columns=train["train_columns"], exclude=train["exclude_train"],
            truth_timestamp=(columns.get("truth_columns") or {}).get(
                "timestamp", train["timestamp_col"]))
        if trained.exclude:
            pred_df = trained.kept(pred_df, wp)
    lean = trained is not None and not sopts["per_user"]
    sopts["per_user"] = sopts["per_user"] or lean  # the audit counts the evaluated users
    # with train=, rows are excluded and joined: counted and checked by Spark
    feet = found if train is None else (None, None)
    if sopts["partitions"] == "auto":  # two counts (cheap: Parquet footers, local frames)
        rows = (feet[0].rows + feet[1].rows if feet[0] is not None and feet[1] is not None
                else truth_df.count() + pred_df.count())
        sopts["partitions"] = auto_partitions(rows, spark.sparkContext.defaultParallelism)
    elif sopts["partitions"] == "spark":
        sopts["partitions"] = None
    ordered = sopts["order_by"] is not None or not all(
        o.ties in _ORDER_FREE_TIES and o.duplicates == "error" for o in [options, *per_spec])
    # ties="stable" orders only a user's tied scores by the rows' order: without ties the
    # order changes nothing, so the order column is shuffled only when a partition finds one
    tie_check = ordered and sopts["order_by"] is None and all(
        o.ties in _ORDER_FREE_TIES | {"stable"} and o.duplicates == "error"
        for o in [options, *per_spec])
    kwargs = {"profile": profile, **explicit, **{k: v for k, v in columns.items()}}
    mapping = None
    if strata is not None:  # sent with the plan: each partition stratifies its own users
        mapping = as_mapping(strata.toPandas() if _is_frame(strata) else strata,
                             user_col=columns.get("user_col", "user"))
        kwargs["strata"] = mapping
    if beyond is not None:  # the item-level inputs, whole, to every partition
        kwargs.update({k: beyond[k] for k in ("item_features", "item_groups", "beyond",
                                              "item_features_columns")})

    # each user's training items with the user's rows: the calibration metrics read them, and
    # the popularity metrics' partitions need train= (its counts replaced by the driver's)
    history = (trained.frame if trained is not None and any(
        s.metric in spark_beyond.HISTORY + spark_beyond.POPULAR for s in b_specs) else None)
    if history is not None and any(s.metric in spark_beyond.POPULAR for s in b_specs):
        stage.name = "the training popularity (training rows counted per item)"
        kwargs["popularity"] = _popularity(trained, b_specs, b_opts, _common_type(
            truth_df.schema[wt.item].dataType, pred_df.schema[wp.item].dataType, "item"))
    if beyond is not None and spark_beyond.needs_catalogue(b_specs, b_opts):  # to every part
        stage.name = "the catalogue (its items collected)"
        kwargs["catalogue"] = _catalogue(beyond, b_opts, truth_df, trained, wt, _common_type(
            truth_df.schema[wt.item].dataType, pred_df.schema[wp.item].dataType, "item"), {})

    def plan(with_order: bool) -> tuple[Any, _Task]:
        union, task = _union(truth_df, pred_df, wt, wp,
                             sopts["order_by"] if with_order else None, with_order, history)
        task = dataclasses.replace(task, fn=partition_fn, metrics=metric_list, kwargs=kwargs,
                                   null_free=_null_free(feet, task, sopts["order_by"]
                                                        if with_order else None),
                                   n_metrics=len(per_user_names),
                                   row_firsts=frozenset(s.name for s in specs),
                                   per_user=sopts["per_user"],
                                   partitions=sopts["partitions"],
                                   tie_check=tie_check and not with_order)
        return union, task

    stage.name = "the evaluation job (rows shuffled by user, each partition evaluated)"
    union, task = plan(ordered and not (tie_check and _has_score(wp, pred_df)))
    user_type = union.schema["u"].dataType
    out_schema = _out_schema(user_type, len(per_user_names))
    task = dataclasses.replace(task, out_schema=_arrow_schema(out_schema))
    metas, per_user, cached, shuffles = _run(spark, union, task, out_schema, per_user_names,
                                             sopts, _MODE)
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
        metas, per_user, cached, shuffles = _run(spark, union, task, out_schema, per_user_names,
                                                 sopts, mode)
        if mode == "struct":
            break
    try:
        counts, merged = _merge([json.loads(row[0]) for row in metas])
        names = {s.name for s in specs}
        sums = Accumulator(tuple(m for m in merged.metrics if m.name in names))
        with checks.silence(silence):  # the local plan's finish, on the merged counts
            summary = finish(specs, per_spec, counts, sums)
        if not specs and counts["users"]["evaluated"] == 0:  # beyond-accuracy metrics only
            raise no_user_error(options.users, relevant_only=options.users == "relevant"
                                and bool(counts["users"]["in_truth"]))
        groups = None if mapping is None else _merge_strata(
            [json.loads(row[0]) for row in metas], specs, per_spec, mapping)
    except ReceValError:
        if cached is not None:
            cached.unpersist()
        raise
    tasks = sorted((json.loads(row[0])["task"] for row in metas), key=lambda t: t["partition"])
    record = options.to_dict()
    record.update(version=__version__, engine="spark",
                  metrics={s.name: s.canonical for s in specs})
    out = SparkResult(summary=summary, per_user=per_user, counts=cast(Counts, counts),
                      options=cast(RecordedOptions, record), metrics=[s.name for s in specs],
                      sums=sums, strata=None if groups is None else groups.table,
                      strata_sums=None if groups is None else groups.sums, _cached=cached,
                      tasks=tasks, _log_level=sopts["log_level"], shuffles=shuffles)
    rating_range = task.rating_range(metas)
    with checks.silence(silence):
        check_inputs(counts, options, ratings=None if rating_range is None
                     else np.array(rating_range), column=wt.value,
                     threshold_given="relevance_threshold" in explicit,
                     item_overlap=lambda: _item_overlap(truth_df, pred_df, wt, wp))
        if trained is not None:
            stage.name = "the training audit (joins with train)"
            audit, n_preds, n_truth = trained.audit(truth_df, read_preds, wt, wp,
                                                    out.per_user.select("user"))
            record_train(out, audit, predictions=n_preds, truth=n_truth,
                         exclude_train=trained.exclude)
            if trained.exclude:  # lists the exclusion emptied, counted as the local plan does
                from receval.training.leakage import count_emptied

                count_emptied(out, trained.emptied(read_preds, wp, out.per_user.select("user")))
    # what the plan records (once): a Spark train frame described by the audit's counts
    record_profile(out, specs, per_spec, options, resolved.name, inputs=recorded_inputs(
        train=None if train is None else _train_source(train["train"], out),
        exclude_train=trained is not None and trained.exclude,
        strata=None if strata is None else _source(strata),
        item_features=None if beyond is None else _source(beyond.get("item_features")),
        item_groups=None if beyond is None else _source(beyond.get("item_groups")),
        beyond=None if beyond is None else recorded_beyond(
            b_specs, options, beyond["beyond"], resolved.name)),
        metrics=None if beyond is None else canonical_names(specs, b_specs, beyond["requested"]))
    if beyond is not None:
        stage.name = "the beyond-accuracy metrics (exposure counts merged)"
        _finish_beyond(out, beyond, b_opts, merged, metas, options, truth_df, trained, wt,
                       union.schema["i"].dataType)
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
    return wanted.value in frame.columns or (wanted.rank is not None
                                             and wanted.rank in frame.columns)


def _run(spark: Any, union: Any, task: _Task, out_schema: Any, metric_names: list[str],
         sopts: Mapping[str, Any], mode: str) -> tuple[list[Any], Any, Any, int]:
    """The one Spark job: the rows to the partitions by user (``mode``), the local plan on
    each; the partitions' metas, the per-user frame (persisted) when asked, and the shuffles
    in the job's plan (:func:`count_shuffles`)."""
    from pyspark.sql import functions as F

    parts = sopts["partitions"]
    names = [c for c in union.columns if c != "u"]
    if mode == "struct":
        # one row per user before the shuffle (Spark's partial aggregation packs a user's
        # rows where they are together): far fewer rows through the exchange
        shuffled = union.groupBy("u").agg(F.collect_list(F.struct(*names)).alias("r"))
    else:
        # one list per side and column: ``l0_i`` the truth's items, ``l1_i`` the predictions',
        # ``l2_i`` the training rows' (a side flag list would cost a list element per row
        # through the aggregation and the Arrow transfer); collect_list skips nulls (``when``
        # is null on the other sides): the ids are collected as they are (``g`` counts the
        # nulls that would shift them: then the struct plan is run), the rating (maybe null on
        # truth rows) wrapped in one-item arrays
        side = F.col("s")
        shifting = F.col("i").isNull()
        flags = (0, 1, 2) if task.history else (0, 1)
        aggs = [F.collect_list(F.when(side == f, F.col("i"))).alias(f"l{f}_i") for f in flags]
        if "tv" in names:
            aggs.append(F.collect_list(F.when(side == 0, F.array("tv"))).alias("a_tv"))
        if "pv" in names:
            aggs.append(F.collect_list("pv").alias("l_pv"))
            shifting = shifting | ((side == 1) & F.col("pv").isNull())
        if "o" in names:
            aggs += [F.collect_list(F.when(side == f, F.col("o"))).alias(f"l{f}_o")
                     for f in flags]
            shifting = shifting | F.col("o").isNull()
        if not task.null_free:  # the footers do not say that no packed column has a null
            aggs.append(F.count_if(shifting).alias("g"))
        shuffled = union.groupBy("u").agg(*aggs)
    mapped = shuffled.mapInArrow(task, out_schema)
    cached = None
    with _shuffle_partitions(spark, parts), _arrow_batches(spark, ARROW_BATCH_USERS):
        shuffles = count_shuffles(mapped)
        if sopts["per_user"]:
            from pyspark import StorageLevel

            cached = mapped.persist(StorageLevel.MEMORY_AND_DISK)
            metas = cached.filter(F.col("k") == 1).select("meta").collect()
            per_user = cached.filter(F.col("k") == 0).select(
                F.col("u").alias("user"), *[F.col(f"m{j}").alias(name)
                                            for j, name in enumerate(metric_names)])
        else:
            metas = mapped.select("meta").collect()
            per_user = None
    return metas, per_user, cached, shuffles


def count_shuffles(frame: Any) -> int:
    """The ``Exchange`` nodes (shuffles) of ``frame``'s physical plan (as planned, before it
    runs). Rows grouped by user need one, unless Spark knows that each input is partitioned
    by the user already (both sides bucketed by it into as many buckets).

    Example:
        >>> count_shuffles(None)  # not a Spark frame: no plan
        0
    """
    if not _is_frame(frame):
        return 0
    plan = frame._jdf.queryExecution().executedPlan().toString()
    # "Exchange hashpartitioning(...)", "Exchange SinglePartition", ...; not a reused one
    return sum(1 for line in plan.splitlines()
               if line.lstrip(" :+-").startswith("Exchange "))


@contextlib.contextmanager
def _shuffle_partitions(spark: Any, parts: int | None) -> Iterator[None]:
    """``parts`` shuffle partitions, not coalesced, while the query is planned and run (the
    ``partitions`` option; the session's settings are restored after)."""
    if parts is None:
        yield
        return
    with session_conf(spark, {"spark.sql.shuffle.partitions": str(parts),
                               "spark.sql.adaptive.coalescePartitions.enabled": "false"}):
        yield


#: users (rows of packed lists) per Arrow batch sent to the partitions' Python workers
#: (``spark.sql.execution.arrow.maxRecordsPerBatch`` while the evaluation job runs): at 1M
#: users x 120 rows, 2,000 a batch took 5 to 8 CPU seconds less than 200,000 a batch (the
#: JVM writes each batch's lists into buffers that stay in cache; issue 24)
ARROW_BATCH_USERS = 2_000


@contextlib.contextmanager
def _arrow_batches(spark: Any, users: int) -> Iterator[None]:
    """``users`` rows per Arrow batch while the query runs (the session's setting restored
    after)."""
    with session_conf(spark, {"spark.sql.execution.arrow.maxRecordsPerBatch": str(users)}):
        yield


#: rows (truth + predictions) per shuffle partition above which ``partitions="auto"`` adds a
#: partition: the local plan holds a partition's rows in pandas/numpy at once (about 90 bytes
#: a row at its peak: 360 MB per Python worker), and each partition costs a Python task (at
#: 24M rows on local[2], 24 partitions took 14-15 CPU seconds, 6 partitions 11.6-12: issue 24)
ROWS_PER_PARTITION = 4_000_000
#: rows below which ``partitions="auto"`` does not split further to use another core: a task
#: costs a Python worker round trip (0.2 to 0.4 s measured on 61,000 rows, local[2]: 32
#: partitions took 15 s, 1 to 8 partitions 4 to 6 s), far more than evaluating these rows
MIN_ROWS_PER_CORE = 25_000


def auto_partitions(rows: int, cores: int) -> int:
    """The shuffle partitions ``partitions="auto"`` (the default) picks for ``rows`` rows
    (truth + predictions) on ``cores`` cores (Spark's default parallelism): one per core while
    each gets at least :data:`MIN_ROWS_PER_CORE` rows, and more when a partition would hold
    over :data:`ROWS_PER_PARTITION` rows. Spark's own default (200 shuffle partitions, not
    coalesced once the per-user frame is persisted) ran 61,000 rows far slower (docs/spark.md).

    Example:
        >>> auto_partitions(61_000, 2), auto_partitions(61_000, 16), auto_partitions(2_000, 8)
        (2, 2, 1)
        >>> auto_partitions(300_000, 16), auto_partitions(24_000_000, 2)
        (12, 6)
        >>> auto_partitions(50_000_000, 16), auto_partitions(120_000_000, 16)
        (16, 30)
    """
    by_cores = min(max(cores, 1), max(rows // MIN_ROWS_PER_CORE, 1))
    return max(by_cores, -(-rows // ROWS_PER_PARTITION))


def _spark_options(given: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"partitions": "auto", "order_by": None, "per_user": True,
                           "master": None, "log_level": "ERROR"}
    for key, value in (given or {}).items():
        if key not in SPARK_OPTIONS:
            raise ReceValError(f"unknown spark_options key {key!r}; known: "
                               f"{', '.join(SPARK_OPTIONS)}")
        out[key] = value
    parts = out["partitions"]
    if parts is None:
        out["partitions"] = parts = "auto"
    if parts not in ("auto", "spark") and (isinstance(parts, bool) or not isinstance(parts, int)
                                           or parts < 1):
        raise ReceValError(f"spark_options partitions={parts!r} must be a positive integer, "
                           "'auto' (from the number of rows) or 'spark' (the session's)")
    if str(out["log_level"]).upper() not in LOG_LEVELS:
        raise ReceValError(f"spark_options log_level={out['log_level']!r} must be one of "
                           f"{', '.join(LOG_LEVELS)}")
    out["log_level"] = str(out["log_level"]).upper()
    return out


def _is_frame(obj: Any) -> bool:
    return type(obj).__module__.startswith("pyspark.") and hasattr(obj, "mapInArrow")


def _as_frame(source: Any, spark: Any, side: str, footers: Footers | None = None) -> Any:
    """A Spark DataFrame: as given, a Parquet path read by Spark (with the schema its
    ``footers`` state, when they state one Spark would infer the same: :func:`spark_schema`),
    or a local frame sent."""
    if _is_frame(source):
        return source
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if not os.path.exists(path) and "://" not in path:
            raise ReceValError(f"{side} file not found: {path}")
        low = path.lower().rstrip("/")
        if os.path.isfile(path) and not low.endswith((".parquet", ".pq")):
            raise ReceValError(f"engine='spark' reads {side} from Parquet (a .parquet file or "
                               f"a folder of them); got {path!r}: convert it, or pass a Spark "
                               "DataFrame")
        schema = spark_schema(footers)
        return (spark.read if schema is None else spark.read.schema(schema)).parquet(path)
    if isinstance(source, pa.Table):
        source = source.to_pandas()
    if isinstance(source, dict):
        source = pd.DataFrame(source)
    if isinstance(source, pd.DataFrame):
        return spark.createDataFrame(source)
    raise ReceValError(f"engine='spark' takes {side} as a Spark DataFrame, a Parquet path or a "
                       f"pandas DataFrame; got {type(source).__name__}")


def _check_columns(frame: Any, wanted: Wanted, rating_required: bool) -> None:
    """The local engine's missing-column error, from the frame's schema (no Spark job)."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    for f in frame.schema.fields:
        try:
            fields.append(pa.field(f.name, to_arrow_type(f.dataType)))
        except Exception:  # a type Arrow cannot hold: not a column receval reads
            fields.append(pa.field(f.name, pa.null()))
    empty = pa.schema(fields).empty_table()
    try:
        read_columns(empty, side=wanted.side, user_col=wanted.user, item_col=wanted.item,
                     value_col=wanted.value,
                     value_required=wanted.value_required or rating_required,
                     fallback_rank_col=wanted.rank,
                     value_names={wanted.value_as: wanted.value, "rank": wanted.rank or "rank"})
    except ReceValError as exc:
        if str(exc) != f"{wanted.side} is empty (no rows)":
            raise


def _common_type(a: Any, b: Any, what: str) -> Any:
    """The one Spark type both sides' ``what`` ids are cast to (the same hash on both)."""
    from pyspark.sql import types as T

    if a == b:
        return a
    text = (T.StringType, T.VarcharType, T.CharType)
    if isinstance(a, text) and isinstance(b, text):
        return T.StringType()
    if isinstance(a, T.IntegralType) and isinstance(b, T.IntegralType):
        return T.LongType()
    if isinstance(a, T.NumericType) and isinstance(b, T.NumericType):
        return T.DoubleType()

    def sample(t: Any) -> Any:
        return pa.array(["x"]) if isinstance(t, text) else np.zeros(1)

    check_same_kind(sample(a), sample(b), what)
    raise ReceValError(f"{what} ids of types {a.simpleString()} (truth) and {b.simpleString()} "
                       "(predictions) cannot be compared; give both sides one type")


def _union(truth: Any, preds: Any, wt: Wanted, wp: Wanted, order_by: str | None,
           ordered: bool, history: Any = None) -> tuple[Any, _Task]:
    """Both sides' columns in one frame: ``s`` (0 truth, 1 predictions), ``u``, ``i``, ``tv``
    (rating), ``pv`` (score or rank) and ``o`` (the row order, when it matters); with
    ``history`` (training rows ``u``, ``i``), those rows too (``s`` 2: each user's training
    items reach the user's partition)."""
    from pyspark.sql import functions as F

    t_value = wt.value if wt.value in truth.columns else None
    p_value = wp.value if wp.value in preds.columns else (
        wp.rank if wp.rank is not None and wp.rank in preds.columns else None)
    u_type = _common_type(truth.schema[wt.user].dataType, preds.schema[wp.user].dataType,
                          "user")
    i_type = _common_type(truth.schema[wt.item].dataType, preds.schema[wp.item].dataType,
                          "item")
    tv_type = truth.schema[t_value].dataType if t_value else "double"
    pv_type = preds.schema[p_value].dataType if p_value else "double"
    o_type = "long"
    if order_by is not None:
        for name, frame in (("truth", truth), ("predictions", preds)):
            if order_by not in frame.columns:
                raise ReceValError(f"spark_options order_by={order_by!r}: {name} has no such "
                                   f"column (columns: {', '.join(frame.columns)})")
        o_type = _common_type(truth.schema[order_by].dataType, preds.schema[order_by].dataType,
                              "order_by")

    def one_side(frame: Any, flag: int, w: Wanted, tv: Any, pv: Any) -> Any:
        cols = [F.lit(flag).cast("byte").alias("s"), F.col(w.user).cast(u_type).alias("u"),
                F.col(w.item).cast(i_type).alias("i")]
        cols += [c.alias(name) for c, name in ((tv, "tv"), (pv, "pv")) if c is not None]
        if ordered:
            order = (F.col(order_by).cast(o_type) if order_by is not None
                     else F.col(ROW) if ROW in frame.columns  # numbered before a join
                     else F.monotonically_increasing_id())
            cols.append(order.alias("o"))
        return frame.select(*cols)

    # a value column neither side has is not shuffled at all
    none_t = F.lit(None).cast(tv_type) if t_value else None
    none_p = F.lit(None).cast(pv_type) if p_value else None
    t_side = one_side(truth, 0, wt, F.col(t_value) if t_value else None, none_p)
    p_side = one_side(preds, 1, wp, none_t, F.col(p_value) if p_value else None)
    task = _Task(names=(wt.user, wt.item, t_value, wp.user, wp.item, p_value), ordered=ordered,
                 history=history is not None,
                 packed=((wt.item,), tuple(c for c in (wp.item, p_value) if c is not None)))
    union = t_side.unionByName(p_side)
    if history is not None:
        cols = [F.lit(2).cast("byte").alias("s"), F.col("u").cast(u_type).alias("u"),
                F.col("i").cast(i_type).alias("i")]
        cols += [c.alias(name) for c, name in ((none_t, "tv"), (none_p, "pv")) if c is not None]
        if ordered:
            cols.append(F.monotonically_increasing_id().cast(o_type).alias("o"))
        seen = t_side.select("u").unionByName(p_side.select("u")).distinct()
        # only users with a truth or prediction row: no partition holds training rows alone
        union = union.unionByName(history.select(*cols).join(seen, "u", "left_semi"))
    return union, task


def _out_schema(user_type: Any, n_metrics: int) -> Any:
    from pyspark.sql import types as T

    return T.StructType([T.StructField("k", T.ByteType(), False),
                         T.StructField("u", user_type, True),
                         *[T.StructField(f"m{j}", T.DoubleType(), True)
                           for j in range(n_metrics)],
                         T.StructField("meta", T.StringType(), True)])


def _arrow_schema(schema: Any) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


@dataclass
class _Task:
    """The function ``mapInArrow`` runs on each partition (pickled with its settings)."""

    names: tuple[str | None, ...]
    ordered: bool
    fn: PartitionFn | None = None
    metrics: list[str] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    n_metrics: int = 0
    per_user: bool = True
    out_schema: pa.Schema | None = None
    #: the ``partitions`` option: part of the plan, so a cached result of the same query with
    #: other partitions is not taken for this one
    partitions: int | None = None
    #: no order column was shuffled (``ties="stable"``): a user's tied scores ask for it
    tie_check: bool = False
    #: training rows (``s`` 2) travel with each user's rows: the local plan gets them as
    #: ``train=`` (each user's training items: calibration)
    history: bool = False
    #: the metrics whose first undefined user is a row of the partition's per-user values
    #: (the accuracy metrics; the beyond-accuracy sums name the user already)
    row_firsts: frozenset[str] = frozenset()
    #: the inputs' Parquet footers say that no packed id, score or order column holds a null:
    #: the shuffle counts no nulls per user (``g``)
    null_free: bool = False
    #: the columns the packed lists read: item ids per side, the score (or rank), the order
    #: column (set by :func:`_union`)
    packed: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        got = [b for b in batches if b.num_rows]
        if not got:
            return
        import numba
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context else 0
        began = time.perf_counter()
        table = pa.Table.from_batches(got)
        if "r" not in table.column_names:  # columns mode
            if "g" in table.column_names and pc.sum(table.column("g")).as_py():
                yield self._meta_batch({"partition": partition, "retry": "nulls"})
                return
            sides, n_rows = _columns_sides(table)
        else:
            table = _unpacked(table)
            flags = table.column("s").to_numpy()
            sides = [table.filter(pa.array(flags == f)) for f in (0, 1, 2)]
            n_rows = table.num_rows
        if self.tie_check and _tied(table, sides[1]):
            yield self._meta_batch({"partition": partition, "retry": "ties"})
            return
        if self.ordered:
            sides = [s.take(pc.sort_indices(s.column("o"))) for s in sides]
        tu, ti, tv, pu, pi, pv = self.names
        t_cols = {tu: sides[0].column("u"), ti: sides[0].column("i")}
        if tv is not None:
            t_cols[tv] = sides[0].column("tv")
        p_cols = {pu: sides[1].column("u"), pi: sides[1].column("i")}
        if pv is not None:
            p_cols[pv] = sides[1].column("pv")
        truth, preds = pa.table(t_cols), pa.table(p_cols)
        meta: dict[str, Any] = {"partition": partition,
                                "rating_range": _finite_range(truth, tv)}
        per_user = None
        start = time.perf_counter()
        threads = None
        try:
            with _task_threads(context.cpus() if context else None):
                threads = int(numba.get_num_threads())
                result = self._evaluate(truth, preds,
                                        _history(sides[2]) if self.history else None)
            meta["exposure"] = result.counts.pop("exposure", None)
            meta["counts"] = result.counts
            # rND/rKL/rRD's protected group as the partition chose it (the driver records it)
            meta["protected_group"] = (result.options.get("beyond") or {}).get(
                "protected_group")
            meta["sums"] = _with_first_ids(result, self.row_firsts).to_dict()
            if result.strata is not None:  # each group's users and exact sums (ids: users)
                meta["strata"] = {label: [n, acc.to_dict()] for label, (n, acc) in zip(
                    result.strata["group"], zip(result.strata["users"],
                                                (result.strata_sums or {}).values(),
                                                strict=True), strict=True)}
                if len(result.per_user):
                    meta["first_user"] = result.per_user["user"].iloc[0]
            per_user = result.per_user
        except ReceValError as exc:
            meta["error"] = [type(exc).__name__, str(exc)]
        meta["task"] = {"partition": meta["partition"], "pid": os.getpid(),
                        "rows": n_rows, "seconds": time.perf_counter() - start,
                        "first_in_process": _first_in_process(),
                        "unpack_seconds": start - began, "batches": len(got),
                        "threads": threads, "null_check": "g" in table.column_names}
        if self.per_user and per_user is not None and len(per_user):
            yield self._rows(per_user)
        yield self._meta_batch(meta)

    def _meta_batch(self, meta: dict[str, Any]) -> pa.RecordBatch:
        """The partition's one ``k=1`` row: its meta as JSON."""
        assert self.out_schema is not None
        cols: list[Any] = [pa.array([1], pa.int8()), pa.nulls(1, self.out_schema.field("u").type)]
        cols += [pa.nulls(1, pa.float64())] * self.n_metrics
        cols.append(pa.array([json.dumps(meta, default=plain)]))
        return pa.RecordBatch.from_arrays(cols, schema=self.out_schema)

    def _rows(self, per_user: pd.DataFrame) -> pa.RecordBatch:
        assert self.out_schema is not None
        n = len(per_user)
        users = pa.array(per_user["user"].to_numpy()).cast(self.out_schema.field("u").type)
        cols: list[Any] = [pa.array(np.zeros(n, np.int8)), users]
        cols += [pa.array(per_user.iloc[:, 1 + j].to_numpy(np.float64))
                 for j in range(self.n_metrics)]
        cols.append(pa.nulls(n, pa.string()))
        return pa.RecordBatch.from_arrays(cols, schema=self.out_schema)

    def _evaluate(self, truth: pa.Table, preds: pa.Table,
                  history: pa.Table | None = None) -> Result:
        """The local plan on this partition; with one side empty, twice with dummy users on
        that side (one, then two), the dummies' counts taken out by difference. ``history``:
        the partition's training rows (``train=``; one row of a user no side has when there
        are none: the plan reads no empty training data)."""
        assert self.fn is not None
        base = self.kwargs
        if history is not None:
            if not history.num_rows:
                other = truth if truth.num_rows else preds
                history = pa.table({"u": _fresh_ids(other.column(0), 1).cast(
                    history.schema.field("u").type), "i": other.column(1).slice(0, 1)})
            base = {**base, "train": history, "train_columns": {"user": "u", "item": "i"}}
        if truth.num_rows and preds.num_rows:
            return self.fn(truth, preds, self.metrics, base)
        empty_side = "predictions" if truth.num_rows else "truth"
        kwargs = _swap_users(base, empty_side)
        runs = []
        for n in (1, 2):
            if empty_side == "truth":
                t, p = _pad(truth, preds, n, self.names[2]), preds
            else:
                t, p = truth, _pad(preds, truth, n, self.names[5])
            runs.append(self.fn(t, p, self.metrics, kwargs))
        one, two = runs
        one.counts = _affine(one.counts, two.counts)
        return one

    @staticmethod
    def rating_range(metas: list[Any]) -> tuple[float, float] | None:
        lows, highs = [], []
        for row in metas:
            found = json.loads(row[0]).get("rating_range")
            if found:
                lows.append(found[0])
                highs.append(found[1])
        return (min(lows), max(highs)) if lows else None


def _null_free(feet: tuple[Footers | None, Footers | None], task: _Task,
               order_by: str | None) -> bool:
    """Whether both inputs' footers say that no column the lists pack (the items, the score
    or rank, ``order_by``) holds a null; no training rows travel with the users' rows.

    Example:
        >>> f = Footers(rows=3, no_nulls=frozenset({"user", "item", "score"}))
        >>> task = _Task(names=(), ordered=False, packed=(("item",), ("item", "score")))
        >>> _null_free((f, f), task, None), _null_free((f, f), task, "t"), _null_free((f, None), task, None)
        (True, False, False)
    """  # noqa: E501
    truth, preds = feet
    if truth is None or preds is None or task.history:
        return False
    t_cols, p_cols = task.packed
    extra = () if order_by is None else (order_by,)
    return (set(t_cols + extra) <= truth.no_nulls) and (set(p_cols + extra) <= preds.no_nulls)


def _history(side: pa.Table) -> pa.Table:
    """The training rows of a partition (``s`` 2) as a ``u``, ``i`` table."""
    return pa.table({"u": side.column("u"), "i": side.column("i")})


def _tied(table: pa.Table, preds: pa.Table) -> bool:
    """Whether a user of the partition has two equal scores: from the packed score lists when
    every user's list has one length (top-N lists: a sort of each row), else
    :func:`_has_ties` on the unpacked rows (a sort of the partition's predictions)."""
    if "l_pv" in table.column_names:
        found = _list_ties(table.column("l_pv").combine_chunks())
        if found is not None:
            return found
    return _has_ties(preds)


def _list_ties(lists: pa.ListArray) -> bool | None:
    """Whether a list (one user's scores, nulls left out by ``collect_list``) holds two equal
    values; ``None`` when the non-empty lists differ in length (the caller then sorts the
    rows).

    Example:
        >>> _list_ties(pa.array([[0.5, 0.2, 0.9], [], [0.1, 0.3, 0.1]]))
        True
        >>> _list_ties(pa.array([[0.5, 0.2, 0.9], [0.1, 0.3, 0.2]]))
        False
        >>> _list_ties(pa.array([[0.5, 0.2], [0.1, 0.3, 0.1]])) is None
        True
    """
    lengths = pc.list_value_length(lists).to_numpy(zero_copy_only=False)
    full = lengths[lengths > 0]
    if not len(full) or bool((full != full[0]).any()):
        return None
    values = pc.list_flatten(lists).to_numpy(zero_copy_only=False)
    rows = np.sort(values.reshape(len(full), int(full[0])), axis=1)
    return bool((rows[:, 1:] == rows[:, :-1]).any())


def _has_ties(preds: pa.Table) -> bool:
    """Whether a user has two equal scores (or ranks) among the predictions."""
    if preds.num_rows < 2:
        return False
    pairs = pa.table({"u": preds.column("u"), "v": preds.column("pv")})
    order = pc.sort_indices(pairs, sort_keys=[("u", "ascending"), ("v", "ascending")])
    users = pairs.column("u").take(order).combine_chunks()
    values = pairs.column("v").take(order).combine_chunks()
    same = pc.and_(pc.equal(users.slice(1), users.slice(0, len(users) - 1)),
                   pc.equal(values.slice(1), values.slice(0, len(values) - 1)))
    return bool(pc.any(same).as_py())


def _columns_sides(table: pa.Table) -> tuple[list[pa.Table], int]:
    """The truth, prediction and training rows (``u``, ``i``, ``tv``/``pv``, ``o``) from one
    row per user of lists, one list per side and column (``columns`` mode: ``l0_i``, ``l1_i``,
    ``l2_i``, ``l0_o``, ...), each side in its rows' order; and the number of rows.

    Example:
        >>> packed = pa.table({"u": [7, 3], "l0_i": [[1], [2, 4]], "l1_i": [[5, 6], []],
        ...                    "l_pv": [[0.5, 0.25], []]})
        >>> sides, n = _columns_sides(packed)
        >>> sides[0].to_pydict(), sides[1].to_pydict(), sides[2].num_rows, n
        ({'u': [7, 3, 3], 'i': [1, 2, 4]}, {'u': [7, 7], 'i': [5, 6], 'pv': [0.5, 0.25]}, 0, 5)
    """
    lists = {c: table.column(c).combine_chunks() for c in table.column_names
             if c.startswith(("l", "a_"))}
    users = table.column("u").combine_chunks()
    sides = []
    for f in (0, 1, 2):
        items = lists.get(f"l{f}_i")
        if items is None:
            sides.append({"u": users.slice(0, 0), "i": lists["l0_i"].values.slice(0, 0)})
            if "l0_o" in lists:
                sides[-1]["o"] = lists["l0_o"].values.slice(0, 0)
            continue
        side = {"u": users.take(pc.list_parent_indices(items)), "i": pc.list_flatten(items)}
        if f"l{f}_o" in lists:
            side["o"] = pc.list_flatten(lists[f"l{f}_o"])
        sides.append(side)
    if "a_tv" in lists:
        sides[0]["tv"] = pc.list_flatten(pc.list_flatten(lists["a_tv"]))
    if "l_pv" in lists:
        sides[1]["pv"] = pc.list_flatten(lists["l_pv"])
    return [pa.table(side) for side in sides], sum(len(side["i"]) for side in sides)


def _unpacked(table: pa.Table) -> pa.Table:
    """One row per input row: ``u`` and the fields of the packed ``r`` lists (``struct``
    mode)."""
    lists = table.column("r").combine_chunks()
    flat = pc.list_flatten(lists)
    users = table.column("u").combine_chunks().take(pc.list_parent_indices(lists))
    names = [f.name for f in flat.type]
    return pa.table({"u": users, **dict(zip(names, flat.flatten(), strict=True))})


_SEEN: list[bool] = []


@contextlib.contextmanager
def _task_threads(cpus: int | None) -> Iterator[None]:
    """The local plan on the task's cores (``spark.task.cpus``, 1 by default), not every core
    of the machine: the executor runs a task on each of its cores at once.

    Example:
        >>> import numba
        >>> before = numba.get_num_threads()
        >>> with _task_threads(1):
        ...     numba.get_num_threads()
        1
        >>> numba.get_num_threads() == before
        True
    """
    import numba

    before = numba.get_num_threads()
    if cpus is None or cpus >= before:
        yield
        return
    numba.set_num_threads(max(int(cpus), 1))
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _first_in_process() -> bool:
    """Whether this is the first partition this Python worker evaluates (the numba kernels
    load, or compile, on the first)."""
    first = not _SEEN
    _SEEN.append(True)
    return first


def _finite_range(truth: pa.Table, name: str | None) -> list[float] | None:
    """The smallest and largest finite rating (the relevance-threshold warning's input)."""
    if name is None or truth.num_rows == 0:
        return None
    try:
        values = truth.column(name).cast(pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    finite = values[np.isfinite(values)]
    return [float(finite.min()), float(finite.max())] if len(finite) else None


def _with_first_ids(result: Result, rows: frozenset[str]) -> Accumulator:
    """The partition's sums with each first undefined user as its id (rows are partition-local;
    the driver keeps the smallest id)."""
    acc: Accumulator = result.sums
    single = "users_per_metric" not in result.counts
    users = result.per_user["user"].to_numpy() if single else None
    metrics = []
    for ms in acc.metrics:
        first = ms.first_undefined
        if first is not None and ms.name in rows:
            first = plain(users[int(first)]) if users is not None else None
        metrics.append(dataclasses.replace(ms, first_undefined=first))
    return Accumulator(tuple(metrics))


def _swap_users(kwargs: dict[str, Any], empty_side: str) -> dict[str, Any]:
    """``kwargs`` with every ``users`` option swapped (:data:`_SWAP_USERS`)."""
    swap = _SWAP_USERS[empty_side]
    out = dict(kwargs)
    prof = out.get("profile")
    if "users" in out:
        out["users"] = swap[out["users"]]
    elif prof is None:
        out["users"] = swap["truth"]
    if prof is not None:
        p = get_profile(prof)

        def mapped(opts: Mapping[str, Any]) -> dict[str, Any]:
            return {**opts, "users": swap[opts["users"]]} if "users" in opts else dict(opts)

        out["profile"] = dataclasses.replace(
            p, options={**p.options, "users": swap[p.options.get("users", "truth")]},
            per_family={f: mapped(o) for f, o in p.per_family.items()},
            pinned={f: mapped(o) for f, o in p.pinned.items()})
    return out


def _pad(empty: pa.Table, other: pa.Table, n: int, value_name: str | None) -> pa.Table:
    """``n`` rows of fresh users (ids no row uses) for the ``empty`` side, on ``other``'s first
    item, value 1."""
    names = empty.column_names
    ids = _fresh_ids(other.column(0), n).cast(empty.schema.field(0).type)
    cols: dict[str, Any] = {names[0]: ids,
                            names[1]: pa.concat_arrays([other.column(1).combine_chunks()
                                                        .slice(0, 1)] * n)}
    if value_name is not None:
        cols[value_name] = pa.array([1.0] * n).cast(empty.schema.field(value_name).type)
    return pa.table(cols, schema=empty.schema)


def _fresh_ids(users: pa.ChunkedArray, n: int) -> pa.Array:
    kind = users.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        top = pc.max(users).as_py()
        return pa.array([f"{top}\x00{j}" for j in range(1, n + 1)])
    low, high = pc.min(users).as_py(), pc.max(users).as_py()
    if pa.types.is_integer(kind):
        info = np.iinfo(kind.to_pandas_dtype())
        if high + n <= info.max:
            return pa.array([high + j for j in range(1, n + 1)])
        return pa.array([low - j for j in range(1, n + 1)])
    if pa.types.is_floating(kind):
        return pa.array([float(np.nextafter(high, np.inf)) + j for j in range(n)])
    raise ReceValError(f"user ids of type {kind} are not supported by engine='spark'")


def _affine(one: Any, two: Any) -> Any:
    """``2 * one - two`` over the numbers of nested count dicts (one dummy user taken out)."""
    if isinstance(one, dict):
        return {k: _affine(v, two.get(k, 0)) for k, v in one.items()}
    if isinstance(one, int) and not isinstance(one, bool):
        return 2 * one - two
    return one


def _add(total: Any, part: Any) -> Any:
    if isinstance(total, dict):
        keys = list(total) + [k for k in part if k not in total]
        return {k: _add(total.get(k, 0), part.get(k, 0)) for k in keys}
    if isinstance(total, int) and not isinstance(total, bool):
        return total + part
    return total


def _merge(metas: list[dict[str, Any]]) -> tuple[Counts, Accumulator]:
    """The counts and exact sums of every partition, merged (the partitions hold disjoint
    users: every count is additive); the first error of the lowest-numbered partition raised
    as it was raised there. :func:`receval.finalize.finish` finishes them."""
    metas.sort(key=lambda m: m["partition"])
    for meta in metas:
        if meta.get("error"):
            kind, message = meta["error"]
            raise (UndefinedMetricError if kind == "UndefinedMetricError" else
                   ReceValError)(message)
    if not metas:
        raise ReceValError("truth is empty (no rows)")
    counts: dict[str, Any] = {}
    sums: Accumulator | None = None
    for meta in metas:
        meta["counts"].pop("summary_null", None)  # not additive: the finish writes it
        counts = _add(counts, meta["counts"]) if counts else meta["counts"]
        acc = Accumulator.from_dict(meta["sums"])
        sums = acc if sums is None else sums.merge(acc)
    assert sums is not None
    for side in ("truth", "predictions"):
        if counts["rows"][side] == 0:
            raise ReceValError(f"{side} is empty (no rows)")
    counts["ties_at_cutoff"] = {int(k): v for k, v in counts["ties_at_cutoff"].items()}
    firsts: dict[str, list[Any]] = {}
    for meta in metas:
        for m in meta["sums"]["metrics"]:
            if m["first_undefined"] is not None:
                firsts.setdefault(m["name"], []).append(m["first_undefined"])
    sums = Accumulator(tuple(dataclasses.replace(ms, first_undefined=min(firsts[ms.name]))
                             if ms.name in firsts else ms for ms in sums.metrics))
    return cast(Counts, counts), sums


def _merge_strata(metas: list[dict[str, Any]], specs: list[Any], per_spec: list[Options],
                  mapping: pd.Series) -> Strata:
    """The strata from every partition's groups: users added, sums merged exactly (the
    first undefined user: the smallest id), finished as the local plan finishes them."""
    groups: dict[str, tuple[int, Accumulator]] = {}
    firsts: dict[tuple[str, str], list[Any]] = {}
    for meta in sorted(metas, key=lambda m: m["partition"]):
        for label, (n, data) in meta.get("strata", {}).items():
            acc = Accumulator.from_dict(data)
            for m in acc.metrics:
                if m.first_undefined is not None:
                    firsts.setdefault((label, m.name), []).append(m.first_undefined)
            if label in groups:
                acc = groups[label][1].merge(acc)
                n += groups[label][0]
            groups[label] = (n, acc)
    if set(groups) == {NONE}:  # as the local plan, naming the first evaluated user
        first = min(m["first_user"] for m in metas if "first_user" in m)
        raise no_match_error(first, pd.Index(mapping.index))
    groups = {label: (n, Accumulator(tuple(
        dataclasses.replace(m, first_undefined=min(firsts[(label, m.name)]))
        if (label, m.name) in firsts else m for m in acc.metrics)))
        for label, (n, acc) in groups.items()}
    return summarise(groups, specs, per_spec)


def _finish_beyond(out: SparkResult, beyond: Mapping[str, Any], b_opts: Any,
                   merged: Accumulator, metas: list[Any], options: Options, truth_df: Any,
                   trained: SparkTrain | None, wt: Wanted, item_type: Any) -> None:
    """The beyond-accuracy metrics from the partitions' merged sums and exposure counts
    (:func:`receval.spark.beyond.finish`); the catalogue's items collected by Spark."""

    names = {s.name for s in beyond["specs"] if s.entry.reduction == "user"}
    sums = Accumulator(tuple(m for m in merged.metrics if m.name in names))
    exposures = spark_beyond.merge_exposure([e for e in (json.loads(row[0]).get("exposure")
                                                         for row in metas) if e])

    whole = any(s.entry.reduction == "catalogue" for s in beyond["specs"])
    catalogue = [] if not whole else _catalogue(
        beyond, b_opts, truth_df, trained, wt, item_type,
        exposures.get(spark_beyond.WHOLE, ({}, 0))[0])
    groups = None
    if any(s.metric == "group_exposure" for s in beyond["specs"]):  # read as the plan does
        from receval.beyond.frames import feature_groups
        from receval.beyond.groups import read_groups

        groups = (feature_groups(beyond["item_features"], wt.item,
                                 columns=beyond["item_features_columns"])
                  if beyond["item_groups"] is None and beyond["item_features"] is not None
                  else read_groups(beyond["item_groups"], beyond["item_features"], wt.item))
    chosen = {json.loads(row[0]).get("protected_group") for row in metas} - {None}
    recorded = out.options.get("beyond")
    if len(chosen) == 1 and recorded is not None:  # as the local plan records it
        out.options["beyond"] = {**recorded, "protected_group": chosen.pop()}
    spark_beyond.finish(out, beyond["specs"], beyond["requested"], sums, exposures, catalogue,
                        options, b_opts, groups)


def _catalogue(beyond: Mapping[str, Any], b_opts: Any, truth_df: Any,
               trained: SparkTrain | None, wt: Wanted, item_type: Any,
               listed: Mapping[Any, int]) -> list[Any]:
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
        b_opts, truth=truth_items,
        train=None if trained is None else (lambda: items(trained.frame, "i")),
        item_features=beyond["item_features"],
        features_columns=beyond["item_features_columns"], item_col=wt.item, listed=listed)


def _popularity(trained: SparkTrain | None, specs: list[Any], options: Any,
                item_type: Any) -> Any:
    """The whole training data's item popularity, counted by Spark and collected (one row
    per item): :func:`receval.spark.beyond.popularity`."""
    from pyspark.sql import functions as F

    assert trained is not None
    frame = trained.frame.select("u", F.col("i").cast(item_type).alias("i"))
    rows = frame.groupBy("i").agg(F.count(F.lit(1)).alias("n"),
                                  F.countDistinct("u").alias("d")).collect()
    n_users = frame.select("u").distinct().count()
    return spark_beyond.popularity([r[0] for r in rows], [r[1] for r in rows],
                                   [r[2] for r in rows], n_users, specs, options)


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

