"""``evaluate()``: truth and predictions in, a :class:`~receval.result.Result` out.

The plan, top to bottom: resolve the profile and the options, read both sides
(:mod:`receval.data.columns`), shape them (:mod:`receval.shaping`: encode ids, group rows per
user), run the engine over the selected users (:mod:`receval.dispatch`), audit what was read
and dropped (:mod:`receval.audit`), reduce per-user values exactly (:mod:`receval.aggregate`)
and merge the groups of a profile's per-metric options (:mod:`receval.finalize`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from receval import audit, checks, report, tracking, training
from receval._version import __version__
from receval.aggregate import aggregate
from receval.beyond.names import split_metrics
from receval.data.columns import read_sides
from receval.dispatch import (
    check_duplicates_outside,
    check_engine,
    duplicates_outside,
    engine_request,
    has_duplicates,
    lists_of,
    ranked_lists,
    run,
)
from receval.exceptions import ReceValError
from receval.finalize import (
    canonical_names,
    check_inputs,
    finish,
    merge_parts,
    record_profile,
    recorded_inputs,
)
from receval.measures.spec import RATING, MetricSpec, parse_metrics
from receval.options import UNSET, Options, passed_options
from receval.result import RecordedOptions, Result
from receval.scalars import plain
from receval.shaping import Prepared, prepare, prepare_key
from receval.strata import Strata, as_mapping, merge_metric_parts, stratify, with_user_metrics

#: loaded for what they lend every Result: its plot and notebook views, its log (result.VIEWS)
_VIEWS = (report, tracking)

if TYPE_CHECKING:
    from receval.partitions import PartitionMode
    from receval.profiles import Profile


@checks.keeps_warnings  # the run's warnings kept on its Result (every output)
def evaluate(
    truth: Any,
    predictions: Any,
    metrics: str | Iterable[str],
    *,
    profile: str | Profile | None = None,
    relevance_threshold: float | str | None = UNSET,
    score_threshold: float | None = UNSET,
    protocol: str = UNSET,
    ties: str = UNSET,
    precision_denominator: str | None = UNSET,
    recall_denominator: str = UNSET,
    ap_normalizer: str = UNSET,
    gain: str = UNSET,
    discount: str = UNSET,
    ideal: str = UNSET,
    err_max_grade: float | str = UNSET,
    all_skipped: str = UNSET,
    persistence: float = UNSET,
    iprec_rounding: str = UNSET,
    empty: str = UNSET,
    average: str = UNSET,
    users: str = UNSET,
    duplicates: str = UNSET,
    score_dtype: str = UNSET,
    item_order: str = UNSET,
    truth_scope: str = UNSET,
    nonpositive_scores: str = UNSET,
    empty_scope: str = UNSET,
    max_list: int | None = UNSET,
    user_col: str = "user",
    item_col: str = "item",
    rating_col: str = "rating",
    score_col: str = "score",
    truth_columns: Mapping[str, str] | None = None,
    prediction_columns: Mapping[str, str] | None = None,
    engine: str = "numba",
    device: Any = None,
    silence: str | Iterable[str] | None = None,
    spark_options: Mapping[str, Any] | None = None,
    train: Any = None,
    exclude_train: bool = False,
    train_columns: Mapping[str, str] | None = None,
    timestamp_col: str = "timestamp",
    item_features: Any = None,
    item_features_columns: Mapping[str, str] | None = None,
    beyond: Any = None,
    strata: Any = None,
    item_groups: Any = None,
    propensity: Any = None,
    debias: str | None = None,
    propensity_clip: float | None = None,
    memory_budget: str | int | None = None,
    _partition: PartitionMode | None = None,
) -> Result:
    """Evaluate ``predictions`` against ``truth`` on ``metrics``.

    ``truth`` and ``predictions`` are pandas/polars DataFrames, pyarrow Tables, dicts of arrays
    or paths to CSV/TSV/Parquet/JSON Lines/TREC files (read by :mod:`receval.io`, as the
    command line reads them) in long format: one row per (user, item). Column names:
    ``user_col=`` ... for both sides, or per side ``truth_columns={"user": "userId", "item":
    "movieId", "rating": "r"}`` and ``prediction_columns={"user": ..., "item": ...,
    "score": ...}``, which override them. The truth's
    ``rating`` column is optional when every truth row is relevant (implicit feedback); the
    predictions need ``score`` (or a ``rank`` column, rank 1 best). Every option is described
    on :class:`~receval.options.Options`; defaults: every truth row relevant, full-ranking
    protocol, stable ties, P@k over k, AP@k over min(k, L), binary nDCG gain, undefined values
    count as 0, macro average over the users of the truth.

    ``profile`` names a tool whose numbers to reproduce (:mod:`receval.profiles`: ``"trec_eval"``,
    ``"ranx"``, ``"torchmetrics"``, ``"tensorflow"``, ``"recommenders"``, ``"surprise"``,
    ``"spark"``, ``"kaggle"``, ``"lenskit"``, ``"recbole"``, ``"cornac"``, ``"trec_eval10"``):
    its bundle of options replaces the defaults,
    and every option passed here overrides the profile's. The profile's name is in
    ``Result.options``.

    Common mistakes raise a warning (:mod:`receval.checks`) that names the option to use:
    graded ratings without ``relevance_threshold``, predictions that never meet the truth,
    item ids that do not match, ties across a cutoff; ``silence`` lists the codes of those not
    wanted (``["no-threshold", "ties"]``).

    ``train``: the training interactions (user, item, optional ``timestamp_col``; columns as
    ``train_columns={"user": ..., "item": ..., "timestamp": ...}``), audited against both
    sides in ``Result.counts["train"]`` (:mod:`receval.training`: predictions and truth rows
    that are training rows, cold users and items, training rows dated after the user's first
    test row when the truth has ``timestamp_col`` too). ``exclude_train=True`` removes each
    user's training items from their predictions before ranking (the full-ranking protocol),
    counted in ``counts["rows"]["predictions_excluded_train"]``.

    Beyond-accuracy metrics (:mod:`receval.beyond`, docs/beyond-accuracy.md) mix with the
    others: ``coverage@k``, ``distributional_coverage@k``, ``gini@k``, ``personalization@k``,
    ``PopREO@k``, ``PopRSP@k`` (one number over all lists: summary only) and ``novelty@k``,
    ``diversity@k``, ``serendipity@k``, ``ARP@k``, ``APLT@k``, ``ACLT@k`` (per user), read
    from the ranked lists with ``train`` (popularity) and ``item_features`` (a file, read as
    the command line reads ``--item-features``, a frame or a dict of item -> categories, ``a|b``
    category lists or a vector; ``item_features_columns={"item": "movieId", "features":
    "genres"}`` names its columns, see :func:`receval.beyond.frames.read_features`);
    ``beyond`` holds their switches
    (:class:`~receval.beyond.settings.BeyondOptions` or a dict). Exposure fairness
    (``group_exposure@k``, ``AWRF@k``, ``nDCG_AWRF@k``, ``rND@k``, ``rKL@k``, ``rRD@k``) and
    calibration (``calibration@k``, ``calibration_js@k``) read item groups: ``item_groups``
    (item -> group or groups, a frame, or a column name of ``item_features``) or, without it,
    the categories of ``item_features`` (docs/fairness.md).

    ``strata``: a user -> group mapping (a dict, a Series, or a frame with a ``user`` column and
    a group column); ``Result.strata`` then holds each group's users and summary, reconciled
    exactly with the whole (:mod:`receval.strata`; users it does not name: group ``(none)``).

    ``debias="ips"`` or ``"snips"`` with ``propensity=`` (``"uniform"``, ``("popularity",
    gamma)``, ``("popularity", "estimate")`` with ``train``, or a truth column) gives the
    debiased P, R, nDCG, AP, RBP and hit rate of Yang et al. 2018 under the same names,
    each weight ``1/propensity`` clipped at ``propensity_clip`` (:mod:`receval.debias`,
    docs/debiased-metrics.md); ``Result.options`` records all three.

    ``engine="torch"`` ranks the lists with torch on ``device`` (a torch device or its name,
    ``"cpu"``, ``"cuda:1"``; default: CUDA when there is one, else the CPU), with the numbers
    of ``engine="numba"``; ``device`` is refused with any other engine.

    ``engine="spark"`` (or pyspark DataFrames, or Parquet paths read by Spark) evaluates on
    Spark with the same numbers bit for bit (:mod:`receval.spark`; ``spark_options``:
    ``partitions``, ``order_by``, ``per_user``, ``master``; see docs/spark.md).

    ``memory_budget="2GiB"`` (two CSV/TSV/Parquet paths) streams the files within that much
    memory with the same numbers bit for bit (:mod:`receval.streaming`, docs/streaming.md);
    unset, two files that would not fit in half the machine's memory are streamed too.
    ``Result.counts["streaming"]`` then says how (sorted or partitioned, the partitions and
    the passes over the data).

    ``_partition`` is not for callers: :func:`evaluate_partition` sets it on the users of one
    Spark partition or streamed batch (:class:`receval.partitions.PartitionMode`).

    Example:
        >>> import pandas as pd, receval
        >>> truth = pd.DataFrame({"user": ["a", "a", "b"], "item": ["x", "y", "x"]})
        >>> preds = pd.DataFrame({"user": ["a", "a", "b", "b"], "item": ["x", "z", "z", "x"],
        ...                       "score": [0.9, 0.8, 0.7, 0.1]})
        >>> r = receval.evaluate(truth, preds, ["P@1", "R@2", "MRR"])
        >>> r.summary
        {'P@1': 0.5, 'R@2': 0.75, 'MRR': 0.75}
        >>> receval.evaluate(truth, preds, ["AP@2"], profile="torchmetrics").summary
        {'AP@2': 0.75}
    """
    from receval.profiles import resolve

    # the option keywords above, read by the names of Options' fields (the one declaration;
    # tests/test_declared_once.py holds this signature to it): those passed, not UNSET
    explicit = passed_options(locals())
    resolved = resolve(profile, explicit)
    options = resolved.options
    check_engine(engine)
    if device is not None and engine != "torch":
        raise ReceValError(f"device= chooses where engine='torch' runs; engine={engine!r} "
                           "takes no device (pass engine='torch')")
    metrics, beyond_specs, requested = split_metrics(metrics)
    request = None
    if debias is not None or propensity is not None or propensity_clip is not None:
        request = _debias_request(debias, propensity, propensity_clip, metrics, options,
                                  engine=engine, strata=strata, train=train,
                                  spark=_is_spark_frame(truth) or _is_spark_frame(predictions))
    if beyond_specs:
        _check_beyond(beyond_specs, beyond, resolved.name, engine, train, item_features,
                      item_groups)
    if memory_budget is not None or (engine == "numba" and _would_not_fit(truth, predictions)):
        refused = _streaming_refused(
            truth, predictions, engine, strata, beyond_specs, train=train,
            exclude_train=exclude_train or None, item_features=item_features,
            item_groups=item_groups, debias=debias, propensity=propensity,
            propensity_clip=propensity_clip, device=device, spark_options=spark_options)
        if refused is not None and memory_budget is not None:
            raise ReceValError(refused)
        if refused is None:
            from receval.streaming import evaluate_files

            return evaluate_files(
                truth, predictions, metrics, evaluate_partition, profile=profile,
                explicit=explicit, silence=silence, strata=strata,
                memory_budget=memory_budget,
                columns={"user_col": user_col, "item_col": item_col, "rating_col": rating_col,
                         "score_col": score_col, "truth_columns": truth_columns,
                         "prediction_columns": prediction_columns})
    if engine == "spark" or _is_spark_frame(truth) or _is_spark_frame(predictions):
        if isinstance(strata, str):
            raise ReceValError(f"strata={strata!r} is built from train= by the local plan; on "
                               "Spark pass the user -> group mapping (a frame or a dict)")
        from receval.spark import evaluate_spark

        return evaluate_spark(
            truth, predictions, metrics, evaluate_partition, profile=profile,
            explicit=explicit, silence=silence, spark_options=spark_options,
            columns={"user_col": user_col, "item_col": item_col, "rating_col": rating_col,
                     "score_col": score_col, "truth_columns": truth_columns,
                     "prediction_columns": prediction_columns}, strata=strata,
            train=None if train is None and not exclude_train else {
                "train": train, "exclude_train": exclude_train, "train_columns": train_columns,
                "timestamp_col": timestamp_col},
            beyond=None if not beyond_specs else {
                "specs": beyond_specs, "requested": requested, "item_features": item_features,
                "item_groups": item_groups, "beyond": beyond,
                "item_features_columns": item_features_columns})
    specs = parse_metrics(metrics) if metrics or not beyond_specs else []
    per_spec = [resolved.options_for(s.family) for s in specs]
    rating_needed = (
        explicit.get("relevance_threshold") is not None
        or explicit.get("gain", "binary") != "binary"
        or resolved.requires_rating
        or any(s.family in RATING for s in specs)
    )
    truth_cols, pred_cols = read_sides(
        truth, predictions, user_col=user_col, item_col=item_col, rating_col=rating_col,
        score_col=score_col, truth_columns=truth_columns,
        prediction_columns=prediction_columns, rating_required=rating_needed)
    rating_col = truth_cols.value_name or rating_col
    score_col = pred_cols.value_name or score_col
    read_predictions = pred_cols  # as read, before exclude_train: the ranks-as-scores check
    leak = None
    if train is not None or exclude_train:  # the audit, and the exclusion before ranking
        leak = training.Leakage.of(
            train, truth, truth_cols, pred_cols, exclude_train=exclude_train, user_col=user_col,
            item_col=item_col, train_columns=train_columns, timestamp_col=timestamp_col,
            truth_columns=truth_columns)
        pred_cols = leak.kept(pred_cols) if exclude_train else pred_cols
    groups: dict[Options, list[int]] = {}
    for i, opts in enumerate(per_spec):
        groups.setdefault(opts, []).append(i)
    if not groups:  # beyond-accuracy metrics only: the users and the audit still come from here
        groups[options] = []
    given_strata = strata
    if isinstance(strata, str):  # a built-in stratum of the training data (receval.training)
        strata = training.resolve_strata(strata, None if leak is None else leak.train,
                                         training.users_of(truth_cols, pred_cols))
    mapping = None if strata is None else as_mapping(strata, user_col=user_col)
    prepared_by_key: dict[tuple[Any, ...], Prepared] = {}
    parts: list[tuple[list[int], Result]] = []
    with checks.silence(silence):
        for opts, members in groups.items():
            key = prepare_key(opts)
            if key not in prepared_by_key:
                prepared_by_key[key] = prepare(truth_cols, pred_cols, opts,
                                               rating_col=rating_col, score_col=score_col)
            parts.append((members, evaluate_prepared(prepared_by_key[key],
                                                     [specs[i] for i in members], opts,
                                                     engine=engine, strata=mapping,
                                                     device=device, partition=_partition)))
    result = parts[0][1] if len(parts) == 1 else merge_parts(specs, parts, options)
    if mapping is not None and len(parts) > 1:  # the groups' metric columns side by side
        merged = merge_metric_parts([_strata_of(p) for _, p in parts], [s.name for s in specs])
        result.strata, result.strata_sums = (None, None) if merged is None else (merged.table,
                                                                                merged.sums)
    if request is not None:  # before the plan is recorded: gamma, when fitted, is part of it
        with checks.silence(silence):
            request = _apply_debias(result, request, specs, per_spec, options,
                                    prepared_by_key, truth_cols, pred_cols, engine, device,
                                    leak, truth, predictions,
                                    {"user_col": user_col, "item_col": item_col,
                                     "score_col": score_col, "truth_columns": truth_columns,
                                     "prediction_columns": prediction_columns})
    record_profile(result, specs, per_spec, options, resolved.name, inputs={**recorded_inputs(
        train=train if leak is None or isinstance(train, str | os.PathLike) else leak.train,
        exclude_train=exclude_train,
        item_features=item_features, item_groups=item_groups,
        strata=given_strata if isinstance(given_strata, str) else mapping,
        beyond=_beyond_record(beyond_specs, options, beyond, resolved.name) if beyond_specs
        else None), **(request.record() if request is not None else {})},
        metrics=canonical_names(specs, beyond_specs, requested))
    with checks.silence(silence):
        first = next(iter(prepared_by_key.values()))
        check_inputs(result.counts, options, ratings=truth_cols.values, column=rating_col,
                     threshold_given="relevance_threshold" in explicit,
                     item_overlap=lambda: audit.item_overlap(first))
        checks.check_ranks_as_scores(read_predictions.users, read_predictions.values,
                                     column=score_col)
        if leak is not None:
            leak.record(result)
    raw: dict[str, Any] = {}  # the beyond metrics' per-user values, for the groups of users
    if beyond_specs:
        key = prepare_key(options)
        if key not in prepared_by_key:
            prepared_by_key[key] = prepare(truth_cols, pred_cols, options,
                                           rating_col=rating_col, score_col=score_col)
        raw = _add_beyond(result, beyond_specs, requested, prepared_by_key[key], options,
                          engine, None if leak is None else leak.train, item_features, beyond,
                          resolved.name, item_features_columns, device, item_groups, _partition)
    if mapping is not None:  # every per-user metric asked for, per group (receval.strata)
        with_user_metrics(result, mapping, beyond_specs, raw, partition=_partition is not None)
    return result


def evaluate_prepared(
    prepared: Prepared, specs: list[MetricSpec], options: Options, *, engine: str = "numba",
    strata: pd.Series | None = None, device: Any = None, partition: PartitionMode | None = None,
) -> Result:
    """Run the engine on prepared inputs and build the :class:`Result` (with ``strata``, a
    user -> group Series, its per-group sums: :func:`receval.strata.stratify`); ``partition``:
    the users of one partition (:class:`receval.partitions.PartitionMode`: it may select no
    user, its finish is partial, the mapping may name none of its users)."""
    selected = (np.flatnonzero(audit.users_mask(prepared, options)).astype(np.int64)
                if partition is not None else audit.select_users(prepared, options))
    request = engine_request(prepared, selected, specs, options)
    out = run(request, specs, options, engine, device)
    if options.duplicates == "error":
        audit.raise_on_duplicates(prepared, selected, out)
        check_duplicates_outside(prepared, request)
    elif has_duplicates(out) or duplicates_outside(prepared, request):
        # every user's duplicates are dropped and counted, evaluated or not, so the count
        # is the same whichever users are evaluated
        prepared = audit.resolve_duplicates(prepared, options)
        out = run(request.on(lists_of(prepared, selected)), specs, options, engine, device)
    if options.users == "relevant":
        keep = out.n_relevant > 0
        selected = selected[keep]
        out = out.take(keep)
    if options.empty_scope == "no_relevant":
        none_relevant = out.n_relevant == 0
        for c, spec in enumerate(specs):
            if spec.family not in RATING:
                out.value[none_relevant, c] = np.nan
    user_ids = prepared.users.decode(selected)
    # per group before the empty policy fills the values in place, as the whole's sums are
    groups = None if strata is None else stratify(specs, out, options, user_ids, strata,
                                                  require_match=partition is None)
    agg = aggregate(specs, out, options, lambda row: plain(user_ids[row]), warn=False)
    # one block around the value matrix (no copy), then the user column in front
    per_user = pd.DataFrame(agg.per_user, columns=[s.name for s in specs], copy=False)
    per_user.insert(0, "user", user_ids)
    counts = audit.counts(prepared, selected, out, options, agg.undefined, agg.used,
                          request.cut_ks)
    # the one finish (the Spark driver's too): "no user", summary_null, the warnings
    assert agg.sums is not None
    summary = finish(specs, [options] * len(specs), counts, agg.sums,
                     partial=partition is not None)
    record = options.to_dict()
    record.update(
        version=__version__,
        engine=engine,
        metrics={s.name: s.canonical for s in specs},
    )
    return Result(summary=summary, per_user=per_user, counts=counts,
                  options=cast(RecordedOptions, record),
                  metrics=[s.name for s in specs], sums=agg.sums,
                  strata=None if groups is None else groups.table,
                  strata_sums=None if groups is None else groups.sums,
                  list_depth=int(out.n_list.max(initial=0)))


def _strata_of(result: Result) -> Strata | None:
    """The groups of users of one part (a profile's group of metrics), typed again."""
    if result.strata is None:
        return None
    return Strata(result.strata, result.strata_sums or {})


def _is_spark_frame(obj: Any) -> bool:
    """A pyspark DataFrame (classic or Connect), known without importing pyspark."""
    return type(obj).__module__.startswith("pyspark.") and hasattr(obj, "mapInArrow")


def evaluate_partition(truth: Any, predictions: Any, metrics: list[str],
                       kwargs: dict[str, Any], mode: PartitionMode | None = None) -> Result:
    """:func:`evaluate` on one partition's users (a Spark partition on the executors, a
    streamed batch): no warning (the driver checks once, on the merged counts) and a
    partition that selects no user is not an error; ``mode`` carries the driver's whole
    training popularity and catalogue (:class:`receval.partitions.PartitionMode`).

    Example:
        >>> r = evaluate_partition({"user": [1], "item": [2]},
        ...     {"user": [3], "item": [2], "score": [1.0]}, ["P@1"], {"users": "both"})
        >>> r.counts["users"]["evaluated"], r.counts["users"]["seen"]
        (0, 2)
    """
    from receval.partitions import PartitionMode

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(truth, predictions, metrics, engine="numba", **kwargs,
                        _partition=PartitionMode() if mode is None else mode)


def _would_not_fit(truth: Any, predictions: Any) -> bool:
    """Two files that would not fit in memory (:func:`receval.streaming.would_not_fit`)."""
    if not all(isinstance(x, str | os.PathLike) for x in (truth, predictions)):
        return False
    from receval.streaming import would_not_fit

    return would_not_fit(os.fspath(truth), os.fspath(predictions))


def _streaming_refused(truth: Any, predictions: Any, engine: str, strata: Any,
                       beyond_specs: list[Any], **given: Any) -> str | None:
    """Why ``memory_budget`` cannot be honoured for this call, in one line; ``None`` when it
    can."""
    from receval.streaming import REFUSED

    if not all(isinstance(x, str | os.PathLike) for x in (truth, predictions)):
        return ("memory_budget streams files: pass truth and predictions as paths (CSV, TSV "
                "or Parquet); frames are already in memory")
    if engine != "numba":
        return f"memory_budget runs the numba engine; engine={engine!r} is not streamed"
    if beyond_specs:
        return (f"memory_budget cannot evaluate {beyond_specs[0].name}: "
                f"{REFUSED['beyond']}")
    for name, value in given.items():
        if value is not None:
            return f"memory_budget cannot take {name}=: {REFUSED[name]}"
    if isinstance(strata, str):
        return (f"memory_budget cannot take strata={strata!r}: built-in strata are built "
                "from train= (pass a user -> group mapping)")
    return None


def _debias_request(debias: Any, propensity: Any, clip: Any, metrics: Any, options: Options,
                    *, engine: str, strata: Any, train: Any, spark: bool) -> Any:
    """The validated ``debias=`` request (:mod:`receval.debias`), refused in one line where
    it cannot be honoured."""
    from receval import debias as db

    request = db.Debias.of(debias, propensity, clip)
    db.check(parse_metrics(metrics) if metrics else [], engine=engine, strata=strata,
             truth_is_spark=spark)
    if request.model != "uniform":  # early; the per-metric options are checked again
        db.check_options([], options)
    if request.model == "popularity" and train is None:
        raise ReceValError("propensity=('popularity', ...) needs the training data: pass "
                           "train= (item popularity is counted there)")
    return request


def _apply_debias(result: Result, request: Any, specs: list[MetricSpec],
                  per_spec: list[Options], options: Options,
                  prepared_by_key: dict[tuple[Any, ...], Prepared], truth_cols: Any,
                  pred_cols: Any, engine: str, device: Any, leak: Any, truth: Any,
                  predictions: Any, columns: dict[str, Any]) -> Any:
    """The debiased values of ``specs`` in ``result`` (:func:`receval.debias.apply`); the
    request as resolved (``gamma`` fitted where asked), for the plan's record."""
    from receval import debias as db

    key = prepare_key(options)
    if key not in prepared_by_key:
        prepared_by_key[key] = prepare(truth_cols, pred_cols, options,
                                       rating_col=truth_cols.value_name or "rating",
                                       score_col=pred_cols.value_name or "score")
    return db.apply(result, request, specs, prepared_by_key[key], options, engine=engine,
                    device=device, truth=truth,
                    read_column=lambda col: db.read_truth_column(truth, predictions, col,
                                                                 columns),
                    train_items=None if leak is None else leak.train.items, per_spec=per_spec)


def _check_beyond(specs: list[Any], beyond: Any, profile: str | None, engine: str, train: Any,
                  item_features: Any, item_groups: Any = None) -> None:
    """Fail early, in one line, when beyond-accuracy metrics lack an input or an engine."""
    from receval.beyond.attach import check_inputs
    from receval.beyond.settings import resolve as resolve_beyond

    check_inputs(specs, resolve_beyond(profile, beyond), has_train=train is not None,
                 has_features=item_features is not None,
                 has_groups=item_groups is not None or item_features is not None)


def _beyond_record(specs: list[Any], options: Options, beyond: Any,
                   profile: str | None) -> dict[str, Any]:
    """``Result.options["beyond"]``: the beyond-accuracy settings in force, as planned."""
    from receval.beyond.attach import recorded

    return recorded(specs, options, beyond, profile)


def _add_beyond(result: Result, specs: list[Any], requested: list[str], prepared: Prepared,
                options: Options, engine: str, trained: Any, item_features: Any, beyond: Any,
                profile: str | None, features_columns: Mapping[str, str] | None = None,
                device: Any = None, item_groups: Any = None,
                partition: PartitionMode | None = None) -> dict[str, Any]:
    """The beyond-accuracy metrics from the engine's ranked top-k lists of the same users
    (:mod:`receval.beyond.attach`); a second pass of the engine, asking for the lists only.
    On one ``partition``, the catalogue metrics' exposure counts for the driver, and the
    driver's whole training popularity and catalogue. Returns the per-user values before the
    ``empty`` policy (``attach(raw=)``), for strata."""
    from receval.beyond.attach import attach
    from receval.beyond.tied_exposure import tied_scores
    from receval.engines.judge import relevant_items

    selected = (np.flatnonzero(audit.users_mask(prepared, options)).astype(np.int64)
                if partition is not None else audit.select_users(prepared, options))
    prepared, out = ranked_lists(prepared, selected, options, max(s.k for s in specs), engine,
                                 device)
    if options.users == "relevant":
        keep = out.n_relevant > 0
        selected, out = selected[keep], out.take(keep)
    if partition is not None:  # a partition: the catalogue metrics' exposure counts, for the driver
        from receval.spark.beyond import exposure_counts

        whole = [s for s in specs if s.entry.reduction == "catalogue"]
        result.counts["exposure"] = exposure_counts(whole, out.top_items, out.n_list,
                                                    prepared.items.decode)
        specs = [s for s in specs if s not in whole]
        requested = [n for n in requested if n not in {s.name for s in whole}]
        if not specs:
            return {}
    raw: dict[str, Any] = {}
    t = prepared.truth
    truth = relevant_items(t.indptr, t.items, t.values, selected, options.relevance_threshold)
    scored = tied_scores(specs, beyond, profile, prepared, selected, options)
    attach(result, specs, requested, top=out.top_items, n_list=out.n_list,
           user_ids=prepared.users.decode(selected), decode=prepared.items.decode, truth=truth,
           train=None if trained is None else (trained.users, trained.items),
           item_features=item_features, options=options, beyond=beyond, profile=profile,
           # the catalogue: every truth item, relevant or not (not moved by the threshold)
           truth_items=np.unique(np.asarray(t.items, dtype=np.int64)),
           features_columns=features_columns, item_groups=item_groups, scored=scored,
           popularity=None if partition is None else partition.popularity,
           catalogue=None if partition is None else partition.catalogue, raw=raw)
    return raw
