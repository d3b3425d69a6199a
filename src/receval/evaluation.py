"""``evaluate()``: truth and predictions in, a :class:`~receval.result.Result` out.

The plan, top to bottom: resolve the profile and the options, read both sides
(:mod:`receval.data.columns`), shape them (:mod:`receval.shaping`: encode ids, group rows per
user), run the engine over the selected users (:mod:`receval.dispatch`), audit what was read
and dropped (:mod:`receval.audit`), reduce per-user values exactly (:mod:`receval.aggregate`)
and merge the groups of a profile's per-metric options (:mod:`receval.finalize`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from receval import audit, checks
from receval._version import __version__
from receval.aggregate import aggregate
from receval.data.columns import read_sides
from receval.dispatch import (
    check_duplicates_outside,
    check_engine,
    duplicates_outside,
    has_duplicates,
    kernel_arguments,
    run,
)
from receval.exceptions import ReceValError
from receval.finalize import merge_parts, record_profile
from receval.measures.spec import RATING, MetricSpec, parse_metrics
from receval.options import UNSET, Options
from receval.result import Result, null_reasons
from receval.scalars import plain
from receval.shaping import Prepared, prepare, prepare_key

if TYPE_CHECKING:
    from receval.profiles import Profile


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
    empty: str = UNSET,
    average: str = UNSET,
    users: str = UNSET,
    duplicates: str = UNSET,
    score_dtype: str = UNSET,
    item_order: str = UNSET,
    truth_scope: str = UNSET,
    nonpositive_scores: str = UNSET,
    empty_scope: str = UNSET,
    user_col: str = "user",
    item_col: str = "item",
    rating_col: str = "rating",
    score_col: str = "score",
    truth_columns: Mapping[str, str] | None = None,
    prediction_columns: Mapping[str, str] | None = None,
    engine: str = "numba",
    silence: str | Iterable[str] | None = None,
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
    ``"spark"``, ``"kaggle"``): its bundle of options replaces the defaults, and every option
    passed here overrides the profile's. The profile's name is in ``Result.options``.

    Common mistakes raise a warning (:mod:`receval.checks`) that names the option to use:
    graded ratings without ``relevance_threshold``, predictions that never meet the truth,
    item ids that do not match, ties across a cutoff; ``silence`` lists the codes of those not
    wanted (``["no-threshold", "ties"]``).

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

    passed = {
        "relevance_threshold": relevance_threshold, "score_threshold": score_threshold,
        "protocol": protocol, "ties": ties, "precision_denominator": precision_denominator,
        "recall_denominator": recall_denominator, "ap_normalizer": ap_normalizer,
        "gain": gain, "empty": empty, "average": average, "users": users,
        "duplicates": duplicates, "score_dtype": score_dtype, "item_order": item_order,
        "truth_scope": truth_scope, "nonpositive_scores": nonpositive_scores,
        "empty_scope": empty_scope,
    }
    explicit = {name: value for name, value in passed.items() if value is not UNSET}
    resolved = resolve(profile, explicit)
    options = resolved.options
    check_engine(engine)
    specs = parse_metrics(metrics)
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
    groups: dict[Options, list[int]] = {}
    for i, opts in enumerate(per_spec):
        groups.setdefault(opts, []).append(i)
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
                                                     engine=engine)))
    result = parts[0][1] if len(parts) == 1 else merge_parts(specs, parts, options)
    record_profile(result, specs, per_spec, options, resolved.name)
    with checks.silence(silence):
        checks.check_relevance_threshold(
            truth_cols.values, column=rating_col, gain=options.gain,
            threshold_given="relevance_threshold" in explicit
            or options.relevance_threshold is not None)
        audit.check_matches(next(iter(prepared_by_key.values())), result)
    return result


def evaluate_prepared(
    prepared: Prepared, specs: list[MetricSpec], options: Options, *, engine: str = "numba"
) -> Result:
    """Run the engine on prepared inputs and build the :class:`Result`."""
    selected = audit.select_users(prepared, options)
    iopts, fopts, cutoffs, cut_ks, fields = kernel_arguments(specs, options)
    out = run(prepared, selected, specs, options, cutoffs, cut_ks, fields, iopts, fopts,
               engine)
    if options.duplicates == "error":
        audit.raise_on_duplicates(prepared, selected, out)
        check_duplicates_outside(prepared, selected, iopts, fopts)
    elif has_duplicates(out) or duplicates_outside(prepared, selected, iopts, fopts):
        # every user's duplicates are dropped and counted, evaluated or not, so the count
        # is the same whichever users are evaluated
        prepared = audit.resolve_duplicates(prepared, options)
        out = run(prepared, selected, specs, options, cutoffs, cut_ks, fields, iopts, fopts,
                   engine)
    if options.users == "relevant":
        keep = out.n_relevant > 0
        if not keep.any():
            raise ReceValError(
                "no user to evaluate with users='relevant': no user of the truth has a "
                "relevant item (check relevance_threshold)"
            )
        selected = selected[keep]
        out = out.take(keep)
    if options.empty_scope == "no_relevant":
        none_relevant = out.n_relevant == 0
        for c, spec in enumerate(specs):
            if spec.family not in RATING:
                out.value[none_relevant, c] = np.nan
    user_ids = prepared.users.decode(selected)
    agg = aggregate(specs, out, options, lambda row: plain(user_ids[row]))
    # one block around the value matrix (no copy), then the user column in front
    per_user = pd.DataFrame(agg.per_user, columns=[s.name for s in specs], copy=False)
    per_user.insert(0, "user", user_ids)
    counts = audit.counts(prepared, selected, out, options, agg.undefined, agg.used, cut_ks)
    counts["summary_null"] = null_reasons(agg.summary, agg.undefined, agg.used, options.empty,
                                          {s.name for s in specs if s.family in RATING})
    checks.check_ties(counts["ties_at_cutoff"], options.ties)
    record = options.to_dict()
    record.update(
        version=__version__,
        engine=engine,
        metrics={s.name: s.canonical for s in specs},
    )
    return Result(summary=agg.summary, per_user=per_user, counts=counts, options=record,
                  metrics=[s.name for s in specs], sums=agg.sums)
