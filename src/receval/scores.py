"""``evaluate_scores()``: a score matrix (or a model's forward pass) in, a Result out.

The matrix is never a long table: users go through the torch engine
(:mod:`receval.engines.torch_engine`) in blocks of rows, each block's scores masked (training
items, ``exclude=``), ranked once (``topk``), judged against the truth and reduced to a
picture on the device; only the per-user metric values come back to the host. A block holds
``batch_size`` rows; by default as many as fit ``memory_budget`` bytes at
:data:`BYTES_PER_ENTRY` bytes per (user, item) entry, so the memory used is bounded by the
budget whatever the number of users.

Everything else is the plan of :func:`receval.evaluate`: the truth judged by
:mod:`receval.engines.judge`, each option group's :class:`~receval.engines.request.
EngineRequest` built by :func:`receval.dispatch.plan_request` (the judged truth as its lists,
the predictions the rows of the matrix), the counts by :func:`receval.audit.counts_of` (the
matrix's cells outside ``exclude`` are its prediction rows), the finish by
:func:`receval.finalize.finish` and :func:`~receval.finalize.check_inputs`, and the
beyond-accuracy and fairness metrics by :func:`receval.beyond.attach.attach` from the top-k
lists the blocks rank.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, cast

import numpy as np
import pandas as pd

from receval import checks, report, tracking
from receval import debias as db
from receval._version import __version__
from receval.audit import counts_of
from receval.beyond.names import split_metrics
from receval.exceptions import ReceValError
from receval.finalize import (
    canonical_names,
    check_inputs,
    finish,
    merge_parts,
    record_profile,
    recorded_inputs,
)
from receval.measures.spec import MetricSpec, parse_metrics
from receval.options import OPTION_NAMES, Options
from receval.result import RecordedOptions, Result
from receval.scalars import plain
from receval.scores_blocks import (
    BYTES_PER_ENTRY,
    CPU_BUDGET,
    _Excluded,
    _judge_truth,
    _Judged,
    _positions,
    _RanksSeen,
    _read_exclude,
    _read_truth,
    _run_blocks,
    _ScoreSource,
    _Truth,
    batch_rows,
)

#: loaded for what they lend every Result: its plot and notebook views, its log (result.VIEWS)
_VIEWS = (report, tracking)


ENGINES = ("torch",)


@checks.keeps_warnings  # the run's warnings kept on its Result (every output)
def evaluate_scores(
    truth: Any,
    scores: Any,
    metrics: str | Iterable[str],
    *,
    exclude: Any = None,
    user_ids: Any = None,
    item_ids: Any = None,
    engine: str = "torch",
    device: Any = None,
    batch_size: int | None = None,
    memory_budget: int | None = None,
    profile: str | None = None,
    user_col: str = "user",
    item_col: str = "item",
    rating_col: str = "rating",
    silence: str | Iterable[str] | None = None,
    train: Any = None,
    exclude_train: bool = False,
    train_columns: Mapping[str, str] | None = None,
    timestamp_col: str = "timestamp",
    item_features: Any = None,
    item_features_columns: Mapping[str, str] | None = None,
    beyond: Any = None,
    item_groups: Any = None,
    **options: Any,
) -> Result:
    """Evaluate a users x items score matrix against ``truth`` on ``metrics``.

    ``scores`` is a 2-D numpy array or torch tensor (row ``r``: user ``user_ids[r]``, column
    ``c``: item ``item_ids[c]``; both default to ``0..n-1``), or a callable that takes a 1-D
    int64 tensor of row indices (on ``device``) and returns their score rows, such as a
    model's forward pass (``user_ids`` and ``item_ids`` are then required). Every item of a
    row is in the user's ranked list except the ``exclude`` pairs (the training interactions):
    a long table with ``user_col`` / ``item_col`` or a ``scipy.sparse`` matrix shaped like
    ``scores`` (stored non-zeros excluded). ``truth`` is what :func:`receval.evaluate` takes.

    ``options`` are :func:`receval.evaluate`'s (:class:`~receval.options.Options`) and mean the
    same: the numbers are those of ``evaluate(truth, long_table)`` with the long table holding
    every (row, column) score outside ``exclude``. Not available here, each with an error that
    says so: ``ties="ranx"`` (ranx sorts input rows a matrix does not have) and
    ``duplicates="keep"`` (a matrix holds each item once). RMSE and MAE read the scores at
    the truth's cells (the long table's rows with a rating). The families that read
    the judged items (bpref, ERR, RBP, Judged@k, iprec, ...) and ``max_list`` are computed by
    the functions ``evaluate(engine="torch")`` uses (:func:`receval.engines.torch_engine.
    judged_in_order`, :func:`~receval.engines.torch_engine.cut_rows`).

    ``train``, ``exclude_train``, ``train_columns``, ``timestamp_col``: as in
    :func:`receval.evaluate`; ``exclude_train=True`` masks each user's training items in the
    matrix too (with ``exclude=``: both). ``counts["train"]["predictions_in_train"]`` counts
    the cells outside ``exclude=`` that are training pairs (the long table's rows in train).
    ``debias``, ``propensity``, ``propensity_clip``: the debiased metrics of
    :func:`receval.evaluate` (:mod:`receval.debias`).

    Beyond-accuracy and fairness metrics (``novelty@k``, ``coverage@k``, ``AWRF@k``,
    ``rND@k``, ``calibration@k``, ...) are computed from each user's top k as the blocks rank
    it, with ``train``, ``item_features``, ``item_features_columns``, ``item_groups`` and
    ``beyond`` as :func:`receval.evaluate` takes them, and the same numbers. Refused in one
    line: ``beyond={"ee_ties": "permute"}`` (it reads the score of every item of a list,
    which the blocks do not keep).

    ``device``: a torch device (default: CUDA when available, else the CPU). ``batch_size``:
    rows per block (default: ``memory_budget // (BYTES_PER_ENTRY * n_items)``, with
    ``memory_budget`` a quarter of the free GPU memory, or 1 GiB on the CPU).

    Example:
        >>> import numpy as np, receval
        >>> truth = {"user": [0, 0, 1], "item": [2, 1, 0]}
        >>> scores = np.array([[0.1, 0.5, 0.9, 0.3], [0.8, 0.9, 0.2, 0.1]], dtype=np.float32)
        >>> receval.evaluate_scores(truth, scores, ["P@1", "R@2"], device="cpu").summary
        {'P@1': 0.5, 'R@2': 1.0}
        >>> training = {"user": [1], "item": [1]}  # user 1 saw item 1: not ranked
        >>> receval.evaluate_scores(truth, scores, ["P@1"], exclude=training,
        ...                         device="cpu").summary
        {'P@1': 1.0}
        >>> r = receval.evaluate_scores(truth, scores, ["coverage@1"], device="cpu",
        ...                             item_features={0: ["a"], 1: ["b"], 2: ["a"], 3: ["b"]})
        >>> r.summary  # items 2 and 1 listed first, of the truth's three (the catalogue)
        {'coverage@1': 0.6666666666666666}
    """
    torch = _require_torch(engine)
    from receval.engines.torch_engine import torch_device
    from receval.profiles import resolve

    accuracy, beyond_specs, requested = split_metrics(metrics)
    debias: dict[str, Any] = {k: options.pop(k) for k in ("debias", "propensity", "propensity_clip")
              if k in options}  # receval.debias: weighed after the ranking
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise ReceValError(f"unknown option {unknown[0]!r} for evaluate_scores (options: "
                           f"{', '.join(OPTION_NAMES)})")
    resolved = resolve(profile, options)
    opts = resolved.options
    specs = parse_metrics(accuracy) if accuracy or not beyond_specs else []
    if beyond_specs:
        _check_beyond(beyond_specs, beyond, resolved.name, train, item_features, item_groups)
    per_spec = [resolved.options_for(s.family) for s in specs]
    groups: dict[Options, list[int]] = {}
    for i, spec_opts in enumerate(per_spec):
        _check_supported([specs[i]], spec_opts)
        groups.setdefault(spec_opts, []).append(i)
    if beyond_specs:  # the lists of the beyond-accuracy metrics: ranked under the options
        _check_supported([], opts)
        groups.setdefault(opts, [])
    request = db.request(debias, specs, per_spec, opts, train) if debias else None
    for name, value in (("batch_size", batch_size), ("memory_budget", memory_budget)):
        if value is not None and (isinstance(value, bool) or
                                  not isinstance(value, int | np.integer) or value < 1):
            raise ReceValError(f"{name} must be a positive integer (or None for the default); "
                               f"got {value!r}")
    where = torch_device(device)
    source = _ScoreSource.of(scores, user_ids, item_ids, where, torch)
    if source.n_rows == 0:
        raise ReceValError(f"scores has no rows (0 users x {source.n_items} items): there is "
                           "no user to rank items for")
    leak = None
    if train is not None or exclude_train:
        leak = _train_audit(truth, train, source, exclude_train, user_col, item_col,
                            rating_col, train_columns, timestamp_col)
    parts: list[tuple[list[int], Result]] = []
    with checks.silence(silence):
        table = _read_truth(truth, opts, specs, user_col, item_col, rating_col)
        excluded = _read_exclude(exclude, source, user_col, item_col)
        if leak is not None:  # the predictions as given (the cells outside exclude=)
            leak.matrix(source.user_ids, source.item_ids, excluded.keys(source.n_items))
            if exclude_train:  # the training pairs leave the lists too
                given = excluded
                excluded = given.union(_read_exclude(
                    leak.train_pairs(user_col, item_col, user_ids=source.user_ids,
                                     item_ids=source.item_ids), source, user_col, item_col),
                    source.n_items)
                # the rows that had a list and have none left, as evaluate counts them
                leak.emptied = np.asarray(source.user_ids)[
                    (given.items_left(source.n_items) > 0)
                    & (excluded.items_left(source.n_items) == 0)]
        # debias= (propensities other than uniform) reads the ranked lists
        ranked: list[tuple[np.ndarray, np.ndarray]] | None = (
            [] if (request is not None and request.model != "uniform") or beyond_specs
            else None)
        depth = max([db.matrix_depth(request, specs, source.n_items, opts)]
                    + [s.k for s in beyond_specs])
        lists_of: _Judged | None = None
        listed_under = opts if beyond_specs or not groups else next(iter(groups))
        base_part: Result | None = None
        ranks: _RanksSeen | None = _RanksSeen()  # read by the first group's blocks
        for group_opts, members in groups.items():  # a profile's per-metric options
            judged = _judge_truth(table, source, excluded, group_opts, rating_col)
            # the lists: the base options' (beyond-accuracy metrics), else debias='s one group
            mine = ranked if group_opts == listed_under else None
            if mine is not None:
                lists_of = judged
            part = _run(judged, source, excluded, [specs[i] for i in members], group_opts,
                        where, batch_size, memory_budget, torch, mine, depth, ranks)
            if ranks is not None:
                ranks.warn()
                ranks = None
            if members:
                parts.append((members, part))
            else:  # the lists' pass only: its users and counts when no metric has its own
                base_part = part
    if not parts:  # beyond-accuracy metrics only
        assert base_part is not None
        result = base_part
    else:
        result = parts[0][1] if len(parts) == 1 else merge_parts(specs, parts, opts)
    if request is not None:  # one group (debias.check_options): its lists, before the record
        with checks.silence(silence):
            request = db.apply_matrix(result, request, specs, opts, ranked or [],
                                      judged if lists_of is None else lists_of,
                                      source.n_items, source.item_ids, truth,
                                      None if leak is None else leak.train.items,
                                      user_col=user_col, item_col=item_col)
    record_profile(result, specs, per_spec, opts, resolved.name, inputs={**recorded_inputs(
        train=train if leak is None or isinstance(train, str | os.PathLike) else leak.train,
        exclude_train=exclude_train, item_features=item_features, item_groups=item_groups,
        beyond=_beyond_record(beyond_specs, opts, beyond, resolved.name)),
        **(request.record() if request is not None else {})},
        metrics=canonical_names(specs, beyond_specs, requested))
    with checks.silence(silence):  # the common-mistake warnings, as evaluate's
        check_inputs(result.counts, opts, ratings=table.ratings, column=rating_col,
                     threshold_given="relevance_threshold" in options,
                     item_overlap=lambda: _item_overlap(table, source, excluded))
        if leak is not None:
            leak.record(result)
    if beyond_specs:
        assert lists_of is not None and ranked is not None
        with checks.silence(silence):
            _add_beyond(result, beyond_specs, requested, lists_of, ranked, table, source,
                        opts, None if leak is None else leak.train, item_features, beyond,
                        resolved.name, item_features_columns, item_groups)
    return result


def _item_overlap(table: _Truth, source: _ScoreSource, excluded: _Excluded) -> float:
    """The share of the items listed for some user (a column not excluded for every row)
    found in the truth: :func:`receval.audit.item_overlap` of the matrix's long table."""
    masked = np.bincount(excluded.cols, minlength=source.n_items)
    listed = np.asarray(source.item_ids)[masked < source.n_rows]
    if not len(listed):
        return 1.0
    return float(pd.Index(pd.unique(np.asarray(table.items))).get_indexer(listed).__ge__(0)
                 .mean())


def _beyond_record(specs: list[Any], options: Options, beyond: Any,
                   profile: str | None) -> dict[str, Any] | None:
    """``Result.options["beyond"]``: the settings in force (``None`` without such a metric)."""
    if not specs:
        return None
    from receval.beyond.attach import recorded

    return recorded(specs, options, beyond, profile)


def _check_beyond(specs: list[Any], beyond: Any, profile: str | None, train: Any,
                  item_features: Any, item_groups: Any) -> None:
    """Fail early, in one line, when a beyond-accuracy metric lacks an input or a switch
    reads what a score matrix does not hold."""
    from receval.beyond.attach import check_inputs as check_beyond_inputs
    from receval.beyond.settings import resolve as resolve_beyond
    from receval.beyond.tied_exposure import needs_scores

    settings = resolve_beyond(profile, beyond)
    check_beyond_inputs(specs, settings, has_train=train is not None,
                        has_features=item_features is not None,
                        has_groups=item_groups is not None or item_features is not None)
    if needs_scores(specs, settings.ee_ties):
        name = next(s.name for s in specs if needs_scores([s], settings.ee_ties))
        raise ReceValError(f"{name!r} with beyond ee_ties='permute' reads the score of every "
                           "item of every list, which evaluate_scores does not keep (it ranks "
                           "each block and keeps the top k): use ee_ties='list' or "
                           "receval.evaluate")


def _add_beyond(result: Result, specs: list[Any], requested: list[str], judged: _Judged,
                ranked: list[tuple[np.ndarray, np.ndarray]], table: _Truth,
                source: _ScoreSource, options: Options, trained: Any, item_features: Any,
                beyond: Any, profile: str | None, features_columns: Any,
                item_groups: Any) -> None:
    """The beyond-accuracy and fairness metrics from the top-k lists the block loop ranked
    (under the base options), by :func:`receval.beyond.attach.attach`, as
    :func:`receval.evaluate` computes them from its engine's lists. Item codes: the matrix's
    columns, then the truth items no column holds."""
    from receval.beyond.attach import attach

    depth = max(s.k for s in specs)
    top = (np.concatenate([t[:, :depth] for t, _ in ranked]) if ranked
           else np.zeros((0, depth), np.int64))
    n_list = (np.concatenate([n for _, n in ranked]) if ranked else np.zeros(0, np.int64))
    col = _positions(table.items, source.item_ids)
    outside = col < 0
    extra_codes, extra_ids = pd.factorize(pd.Series(np.asarray(table.items, dtype=object)
                                                    [outside], dtype=object), sort=False)
    codes = col.copy()
    codes[outside] = source.n_items + extra_codes
    ids = np.concatenate([np.asarray(source.item_ids, dtype=object),
                          np.asarray(extra_ids, dtype=object)])
    g_codes = judged.g_cols.copy()
    missing = g_codes < 0
    if missing.any():
        g_codes[missing] = source.n_items + pd.Index(extra_ids).get_indexer(
            pd.Series(np.asarray(judged.g_items, dtype=object)[missing], dtype=object))
    attach(result, specs, requested, top=top.astype(np.int64), n_list=n_list,
           user_ids=judged.users, decode=lambda c: ids[np.asarray(c, dtype=np.int64)],
           truth=(judged.g_indptr, g_codes.astype(np.int64)),
           train=None if trained is None else (trained.users, trained.items),
           item_features=item_features, options=options, beyond=beyond, profile=profile,
           truth_items=np.unique(codes), features_columns=features_columns,
           item_groups=item_groups, scored=None)


def _train_audit(truth: Any, train: Any, source: _ScoreSource, exclude_train: bool,
                 user_col: str, item_col: str, rating_col: str,
                 train_columns: Mapping[str, str] | None, timestamp_col: str) -> Any:
    """The training audit (:class:`receval.training.Leakage`) of a score matrix."""
    from receval.data.columns import read_columns
    from receval.training import Leakage

    cols = read_columns(truth, side="truth", user_col=user_col, item_col=item_col,
                        value_col=rating_col, value_required=False)
    leak = Leakage.of(train, truth, cols, None, exclude_train=exclude_train,
                      user_col=user_col, item_col=item_col, train_columns=train_columns,
                      timestamp_col=timestamp_col)
    return leak


def _require_torch(engine: str) -> Any:
    if engine not in ENGINES:
        raise ReceValError(
            f"engine {engine!r} is not one of {', '.join(map(repr, ENGINES))} for "
            "evaluate_scores (the numba engine takes long tables: receval.evaluate)")
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is installed in the test environment
        raise ReceValError("engine='torch' needs torch: pip install 'receval[torch]'") from None
    return torch


def _check_supported(specs: list[MetricSpec], options: Options) -> None:
    """The options and metrics the score-matrix path does not take: a clear error each."""
    if options.ties == "ranx":
        raise ReceValError("option ties='ranx' (ranx's own sort of the input rows) is not "
                           "available in evaluate_scores; use ties='stable' or "
                           "receval.evaluate")
    if options.duplicates == "keep":
        raise ReceValError("option duplicates='keep' is not available in evaluate_scores "
                           "(a score matrix holds each item once); use 'error', 'first' or "
                           "'max'")


def _run(judged: _Judged, source: _ScoreSource, excluded: _Excluded, specs: list[MetricSpec],
         options: Options, device: Any, batch_size: int | None, memory_budget: int | None,
         torch: Any, ranked: list[tuple[np.ndarray, np.ndarray]] | None = None,
         ranked_depth: int = 0, ranks: _RanksSeen | None = None) -> Result:
    """One option group's Result: the block loop (:mod:`receval.scores_blocks`), then the
    counts and the finish."""
    read, out, cut_ks = _run_blocks(judged, source, excluded, specs, options, device,
                                    batch_size, memory_budget, torch, ranked, ranked_depth,
                                    ranks)
    return _result(judged, read, out, specs, options, cut_ks, str(device))


def _result(judged: _Judged, read: dict[str, int], out: Any, specs: list[MetricSpec],
            options: Options, cut_ks: list[int], device: str) -> Result:
    """The empty policy, the averages, the counts (:func:`receval.audit.counts_of`) and the
    finish (:func:`receval.finalize.finish`: summary, ``summary_null``, the warnings), as
    :func:`receval.evaluate` reports them."""
    from receval.aggregate import aggregate

    if options.empty_scope == "no_relevant":
        out.value[out.n_relevant == 0, :] = np.nan
    users = judged.users
    agg = aggregate(specs, out, options, lambda row: plain(users[row]), warn=False)
    per_user = pd.DataFrame(agg.per_user, columns=[s.name for s in specs], copy=False)
    per_user.insert(0, "user", users)
    counts = counts_of(judged.seen_t, judged.seen_p, judged.seen_tlen, judged.seen_plen, read,
                       judged.selected, out, options, agg.undefined, agg.used,
                       np.asarray(cut_ks, dtype=np.int64))
    assert agg.sums is not None
    summary = finish(specs, [options] * len(specs), counts, agg.sums)
    record = options.to_dict()
    record.update(version=__version__, engine="torch", device=device,
                  metrics={s.name: s.canonical for s in specs})
    return Result(summary=summary, per_user=per_user, counts=counts,
                  options=cast(RecordedOptions, record),
                  metrics=[s.name for s in specs], sums=agg.sums,
                  list_depth=int(out.n_list.max(initial=0)))


__all__ = ["BYTES_PER_ENTRY", "CPU_BUDGET", "batch_rows", "evaluate_scores"]
