"""``evaluate()``: truth and predictions in, a :class:`~receval.result.Result` out.

The flow, top to bottom: read the columns -> check them -> encode ids -> group rows per user
-> run the engine over the selected users -> apply the zero-denominator policy and average.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval import checks
from receval._version import __version__
from receval.aggregate import aggregate
from receval.data.columns import Columns, read_sides
from receval.data.csr import CSR, drop_duplicates, group_by_user
from receval.data.encode import Dictionary, encode_items, encode_users
from receval.engines import numba_engine as ne
from receval.exceptions import ReceValError
from receval.measures.registry import compute, cutoffs_needed, needs
from receval.measures.spec import RATING, MetricSpec, parse_metrics
from receval.options import UNSET, Options
from receval.result import Result, null_reasons

if TYPE_CHECKING:
    from receval.profiles import Profile

ENGINES = ("numba", "torch")


@dataclass
class Prepared:
    """Both sides encoded and grouped per user, plus the audit of what was read."""

    truth: CSR
    predictions: CSR
    users: Dictionary
    items: Dictionary
    in_truth: np.ndarray
    in_predictions: np.ndarray
    rows: dict[str, int]


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
    if engine not in ENGINES:
        raise ReceValError(f"engine {engine!r} is not one of {', '.join(map(repr, ENGINES))}")
    if engine == "torch" and importlib.util.find_spec("torch") is None:
        raise ReceValError("engine='torch' needs torch: pip install 'receval[torch]'")
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
            key = _prepare_key(opts)
            if key not in prepared_by_key:
                prepared_by_key[key] = prepare(truth_cols, pred_cols, opts,
                                               rating_col=rating_col, score_col=score_col)
            parts.append((members, evaluate_prepared(prepared_by_key[key],
                                                     [specs[i] for i in members], opts,
                                                     engine=engine)))
    result = parts[0][1] if len(parts) == 1 else _merge_parts(specs, parts, options)
    base = options.to_dict()
    result.options.update(base)
    result.options["profile"] = resolved.name
    overrides = {
        specs[i].name: {name: value for name, value in per_spec[i].to_dict().items()
                        if base[name] != value}
        for i in range(len(specs)) if per_spec[i] != options
    }
    if overrides:
        result.options["per_metric"] = overrides
    with checks.silence(silence):
        checks.check_relevance_threshold(
            truth_cols.values, column=rating_col,
            # graded gains read the ratings on purpose: a low rating is a low gain
            threshold_given="relevance_threshold" in explicit
            or options.relevance_threshold is not None or options.gain != "binary")
        _check_matches(next(iter(prepared_by_key.values())), result)
    return result


def _check_matches(prepared: Prepared, result: Result) -> None:
    """:func:`receval.checks.check_matches` on the evaluated users' counts."""
    users, rows = result.counts["users"], result.counts["rows"]

    def item_overlap() -> float:
        predicted = np.unique(prepared.predictions.items)
        return float(np.isin(predicted, prepared.truth.items).mean()) if len(predicted) else 1.0

    with_lists = users["evaluated"] - users["without_predictions"]
    checks.check_matches(
        predictions_without_truth=rows["predictions_without_truth"], users=with_lists,
        users_without_match=users["without_match"], predicted_item_overlap=item_overlap)


def prepare(
    truth: Columns,
    predictions: Columns,
    options: Options,
    *,
    rating_col: str = "rating",
    score_col: str = "score",
) -> Prepared:
    """Check, encode and group both sides (no metric is computed here).

    The options that change the input itself are applied here: ``score_dtype``,
    ``item_order``, ``truth_scope``, ``nonpositive_scores``, ``duplicates="keep"`` and
    ``ties="item_ascending"`` / ``"ranx"`` (see :class:`~receval.options.Options`).
    """
    assert predictions.values is not None
    scores = predictions.values  # finite: checked by read_columns, with the row and count
    if options.score_dtype == "float32":
        with np.errstate(over="ignore"):
            scores = scores.astype(np.float32).astype(np.float64)
        if np.isinf(scores).any():
            row = int(np.argmax(np.isinf(scores)))
            raise ReceValError(
                f"predictions column {score_col!r} holds {predictions.values[row]} at row {row}, "
                "which does not fit in float32 (score_dtype='float32')"
            )
    rows = {"truth": len(truth), "predictions": len(predictions)}
    t_users, t_items = truth.users, truth.items
    p_items = predictions.items
    ratings = truth.values if truth.values is not None else np.ones(len(truth))
    missing = np.isnan(ratings)
    rows["truth_dropped_missing_rating"] = int(missing.sum())
    if missing.any():
        keep = ~missing
        t_users, t_items, ratings = _take(t_users, keep), _take(t_items, keep), ratings[keep]
        if len(ratings) == 0:
            raise ReceValError(f"truth column {rating_col!r} holds no rating (all missing)")
    if options.item_order == "text":
        t_items, p_items = _as_text(t_items), _as_text(p_items)
    t_codes, p_codes, user_dict, n_users = encode_users(t_users, predictions.users)
    if options.gain != "binary":
        _check_gains(ratings, t_codes, n_users, options, rating_col,
                     np.flatnonzero(~missing) if missing.any() else None, truth.users)
    t_keys, p_keys, item_dict = encode_items(t_items, p_items)
    t_codes, t_keys, ratings, p_codes, p_keys, scores = _reshape_inputs(
        t_codes, t_keys, ratings, p_codes, p_keys, scores, options, rows
    )
    truth_csr = group_by_user(t_codes, n_users, t_keys, ratings)
    pred_csr = group_by_user(p_codes, n_users, p_keys, scores)
    return Prepared(
        truth=truth_csr,
        predictions=pred_csr,
        users=user_dict,
        items=item_dict,
        in_truth=truth_csr.lengths() > 0,
        in_predictions=pred_csr.lengths() > 0,
        rows=rows,
    )


def evaluate_prepared(
    prepared: Prepared, specs: list[MetricSpec], options: Options, *, engine: str = "numba"
) -> Result:
    """Run the engine on prepared inputs and build the :class:`Result`."""
    selected = _select_users(prepared, options)
    iopts, fopts, cutoffs, cut_ks, fields = kernel_arguments(specs, options)
    out = _run(prepared, selected, specs, options, cutoffs, cut_ks, fields, iopts, fopts,
               engine)
    if options.duplicates == "error":
        _raise_on_duplicates(prepared, selected, out)
        _check_duplicates_outside(prepared, selected, iopts, fopts)
    elif _has_duplicates(out) or _duplicates_outside(prepared, selected, iopts, fopts):
        # every user's duplicates are dropped and counted, evaluated or not, so the count
        # is the same whichever users are evaluated
        prepared = _resolve_duplicates(prepared, options)
        out = _run(prepared, selected, specs, options, cutoffs, cut_ks, fields, iopts, fopts,
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
    agg = aggregate(specs, out, options, lambda row: _py(user_ids[row]))
    # one block around the value matrix (no copy), then the user column in front
    per_user = pd.DataFrame(agg.per_user, columns=[s.name for s in specs], copy=False)
    per_user.insert(0, "user", user_ids)
    counts = _counts(prepared, selected, out, options, agg.undefined, agg.used, cut_ks)
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
                  metrics=[s.name for s in specs])


def kernel_arguments(
    specs: list[MetricSpec], options: Options
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, set[str]]:
    """The plain arrays the numba engine takes: integer and float options, the picture's
    cutoffs (:func:`~receval.measures.registry.cutoffs_needed`, ``0``: the whole list), the
    cutoffs where ties are flagged, and the picture fields to write.

    Example:
        >>> from receval.measures.spec import parse_metrics
        >>> _, _, cutoffs, cut_ks, fields = kernel_arguments(parse_metrics(["P@5", "MRR"]),
        ...                                                  Options())
        >>> cutoffs.tolist(), cut_ks.tolist(), sorted(fields)
        ([0, 5], [5], ['hits', 'n_list', 'rr_sum'])
    """
    cutoffs = np.array(cutoffs_needed(specs, options), dtype=np.int64)
    cut_ks = cutoffs[cutoffs > 0]
    fields = needs(specs, options)
    iopts, fopts = ne.kernel_options(options, cutoffs, fields)
    return iopts, fopts, cutoffs, cut_ks, fields


# --- helpers ---------------------------------------------------------------------------------


def _run(prepared: Prepared, selected: np.ndarray, specs: list[MetricSpec], options: Options,
         cutoffs: np.ndarray, cut_ks: np.ndarray, fields: set[str], iopts: np.ndarray,
         fopts: np.ndarray, engine: str = "numba") -> ne.KernelOutput:
    """The engine's picture of the ``selected`` users, the metrics computed from it."""
    t, p = prepared.truth, prepared.predictions
    run_kernel: Any = ne.run_kernel
    if engine == "torch":
        from receval.engines.torch_engine import run_kernel as torch_kernel

        run_kernel = torch_kernel
    picture, audit = run_kernel(selected, t.indptr, t.items, t.values, p.indptr, p.items,
                                   p.values, cutoffs, cut_ks, fields, iopts, fopts)
    return ne.kernel_output(compute(picture, specs, options), picture, audit)


def _users_mask(prepared: Prepared, options: Options) -> np.ndarray:
    """The users ``options.users`` selects (before ``"relevant"`` looks at relevance)."""
    t, p = prepared.in_truth, prepared.in_predictions
    mask: np.ndarray = {
        "truth": t,
        "relevant": t,
        "both": t & p,
        "predictions": p,
        "union": t | p,
    }[options.users]
    return mask


def _select_users(prepared: Prepared, options: Options) -> np.ndarray:
    selected = np.flatnonzero(_users_mask(prepared, options)).astype(np.int64)
    if len(selected) == 0:
        raise ReceValError(
            f"no user to evaluate with users={options.users!r}: truth and predictions share "
            "no user id (check the user column and its type)"
        )
    return selected


def _outside(prepared: Prepared, selected: np.ndarray, iopts: np.ndarray,
             fopts: np.ndarray) -> tuple[np.ndarray, ne.KernelOutput] | None:
    """The users with rows who are not ``selected``, judged with no metric (their duplicate
    flags), or ``None`` when there are none."""
    evaluated = np.zeros(len(prepared.in_truth), dtype=bool)
    evaluated[selected] = True
    others = np.flatnonzero((prepared.in_truth | prepared.in_predictions) & ~evaluated)
    if len(others) == 0:
        return None
    none = np.zeros(0, dtype=np.int64)
    return others, _run(prepared, others, [], Options(), none, none, set(), iopts, fopts)


def _has_duplicates(out: ne.KernelOutput) -> bool:
    return bool((out.dup_truth >= 0).any() or (out.dup_predictions >= 0).any())


def _duplicates_outside(prepared: Prepared, selected: np.ndarray, iopts: np.ndarray,
                        fopts: np.ndarray) -> bool:
    """Whether a user who is not evaluated has a repeated (user, item) row."""
    judged = _outside(prepared, selected, iopts, fopts)
    return judged is not None and _has_duplicates(judged[1])


def _check_duplicates_outside(prepared: Prepared, selected: np.ndarray, iopts: np.ndarray,
                              fopts: np.ndarray) -> None:
    """Duplicate rows are an error wherever they are, also in the rows of users who are not
    evaluated (a predictions-only user under ``users="truth"``, say): judged with no metric."""
    judged = _outside(prepared, selected, iopts, fopts)
    if judged is not None:
        _raise_on_duplicates(prepared, *judged)


def _raise_on_duplicates(prepared: Prepared, users: np.ndarray, out: ne.KernelOutput) -> None:
    """The ``duplicates="error"`` policy: name the first repeated (user, item) the kernel
    flagged among ``users`` (truth first, then predictions)."""
    for side, flags, csr in (("truth", out.dup_truth, prepared.truth),
                             ("predictions", out.dup_predictions, prepared.predictions)):
        if (flags >= 0).any():
            row = int(np.argmax(flags >= 0))
            user = _py(prepared.users.decode(users[row : row + 1])[0])
            item = _py(prepared.items.decode(csr.items[flags[row] : flags[row] + 1])[0])
            raise ReceValError(
                f"duplicate (user, item) rows in {side}: user {user!r}, item {item!r} appears "
                "more than once; pass duplicates='first' or 'max' to keep one"
            )


def _resolve_duplicates(prepared: Prepared, options: Options) -> Prepared:
    """Keep one row per (user, item) under ``options.duplicates`` (``first`` or ``max``),
    counting the dropped rows of every user, evaluated or not."""
    truth, _ = drop_duplicates(prepared.truth, options.duplicates)
    preds, _ = drop_duplicates(prepared.predictions, options.duplicates)
    n_t = len(prepared.truth.items) - len(truth.items)
    n_p = len(prepared.predictions.items) - len(preds.items)
    rows = dict(prepared.rows, truth_dropped_duplicates=n_t, predictions_dropped_duplicates=n_p)
    return Prepared(truth, preds, prepared.users, prepared.items, prepared.in_truth,
                    prepared.in_predictions, rows)


def _counts(prepared: Prepared, selected: np.ndarray, out: ne.KernelOutput, options: Options,
            undefined: dict[str, int], used: dict[str, int],
            cut_ks: np.ndarray) -> dict[str, Any]:
    t, p = prepared.in_truth, prepared.in_predictions
    evaluated = np.zeros(len(t), dtype=bool)
    evaluated[selected] = True
    by_option = ~_users_mask(prepared, options)  # left out by ``users=``, before relevance
    t_len, p_len = prepared.truth.lengths(), prepared.predictions.lengths()
    truth_kept = int(t_len[selected].sum())
    rows = {
        "truth": prepared.rows["truth"],
        "truth_kept": truth_kept,
        "truth_not_evaluated": int(t_len.sum()) - truth_kept,
        "predictions": prepared.rows["predictions"],
        "truth_dropped_missing_rating": prepared.rows["truth_dropped_missing_rating"],
        "truth_dropped_duplicates": prepared.rows.get("truth_dropped_duplicates", 0),
        "predictions_dropped_duplicates": prepared.rows.get("predictions_dropped_duplicates", 0),
        "predictions_kept": int(out.n_list.sum()),
        "predictions_not_evaluated": int(p_len.sum() - p_len[selected].sum()),
        "predictions_without_truth": int(out.n_without_truth.sum()),
        "predictions_below_score_threshold": int(out.n_below_score_threshold.sum()),
    }
    for key in _RESHAPE_COUNTS:
        if key in prepared.rows:
            rows[key] = prepared.rows[key]
    if options.protocol == "known":
        rows["predictions_ignored_known_protocol"] = rows["predictions_without_truth"]
    return {
        "users": {
            "evaluated": len(selected),
            "in_truth": int(t.sum()),
            "in_predictions": int(p.sum()),
            "in_both": int((t & p).sum()),
            "only_in_truth": int((t & ~p).sum()),
            "only_in_predictions": int((p & ~t).sum()),
            "without_relevant": int((out.n_relevant == 0).sum()),
            "without_predictions": int((out.n_predicted == 0).sum()),
            # users with a list none of whose items has a truth row (checks.check_matches)
            "without_match": int(((out.n_predicted > 0)
                                  & (out.n_predicted == out.n_without_truth)).sum()),
            "not_evaluated": int(len(t) - len(selected)),
            # every user seen (a row on either side) is evaluated or left out for one reason
            "seen": len(t),
            "not_evaluated_only_in_truth": int((by_option & t & ~p).sum()),
            "not_evaluated_only_in_predictions": int((by_option & p & ~t).sum()),
            "not_evaluated_rows_dropped": int((by_option & ~p & ~t).sum()),
            "not_evaluated_without_relevant": int((~by_option & ~evaluated).sum()),
        },
        "rows": rows,
        "undefined": {"policy": options.empty, "users": undefined},
        "averaged": used,
        "ties_at_cutoff": {
            int(k): int(out.tie_at_cut[:, c].sum()) for c, k in enumerate(cut_ks)
        },
    }


def _take(arr: np.ndarray | pa.Array, mask: np.ndarray) -> np.ndarray | pa.Array:
    if isinstance(arr, np.ndarray):
        return arr[mask]
    return arr.filter(pa.array(mask))


#: row counts that :func:`_reshape_inputs` reports, when its option is in force
_RESHAPE_COUNTS = (
    "truth_dropped_unpredicted",
    "truth_duplicates_kept",
    "predictions_duplicates_kept",
    "predictions_nonpositive",
)


def _prepare_key(options: Options) -> tuple[Any, ...]:
    """The options :func:`prepare` reads: results with equal keys can share one preparation."""
    return (options.score_dtype, options.item_order, options.truth_scope,
            options.nonpositive_scores, options.duplicates == "keep",
            options.ties == "item_ascending", options.ties == "ranx",
            # graded gains are checked against the threshold (binary ones are not checked)
            None if options.gain == "binary" else (options.gain, options.relevance_threshold))


def _check_gains(ratings: np.ndarray, codes: np.ndarray, n_users: int, options: Options,
                 rating_col: str, rows: np.ndarray | None, users: Any) -> None:
    """Graded gains (``gain="linear"``/``"exponential"``) need non-negative ratings on the
    relevant truth rows: a negative gain would make nDCG negative (or above 1).

    A row is relevant as the kernel judges it: rating >= the threshold (every row without
    one; with ``"user_mean"``, the mean of the user's ratings). ``rows`` maps the ratings
    back to input rows (``None``: the same rows).
    """
    negative = ratings < 0
    if not negative.any():
        return
    rt = options.relevance_threshold
    if rt == "user_mean":
        sums = np.bincount(codes, weights=ratings, minlength=n_users)
        counts = np.bincount(codes, minlength=n_users)
        negative &= ratings >= (sums / np.maximum(counts, 1))[codes]
    elif rt is not None:
        negative &= ratings >= float(rt)
    if not negative.any():
        return
    first = int(np.argmax(negative))
    row = first if rows is None else int(rows[first])
    raise ReceValError(
        f"gain={options.gain!r} needs non-negative ratings on relevant rows; truth column "
        f"{rating_col!r} holds {ratings[first]:g} at row {row} (user {_id_at(users, row)!r}), "
        f"{int(negative.sum())} relevant row(s) in all; pass a relevance_threshold >= 0 "
        "(lower ratings are then not relevant) or shift the ratings"
    )


def _as_text(ids: np.ndarray | pa.Array) -> np.ndarray | pa.Array:
    """Integer ids as their decimal text (``item_order="text"``); strings unchanged."""
    if isinstance(ids, np.ndarray):
        return pa.array(ids).cast(pa.string())
    return ids


def _reshape_inputs(
    t_codes: np.ndarray, t_keys: np.ndarray, ratings: np.ndarray,
    p_codes: np.ndarray, p_keys: np.ndarray, scores: np.ndarray,
    options: Options, rows: dict[str, int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Apply the input-shaping options to the encoded rows, before they are grouped per user.

    ``truth_scope="predicted"`` drops truth rows whose (user, item) is not predicted;
    ``duplicates="keep"`` and ``nonpositive_scores="irrelevant"`` give the rows that must not
    match a truth item a fresh item key of their own (a "phantom" no other row uses), so they
    keep their place in the list (or their count in the truth) but can never be a hit;
    ``ties="item_ascending"`` sorts the predictions by item key, so a stable ranking breaks
    ties by the lower item first.
    """
    if options.truth_scope == "predicted":
        predicted = pd.MultiIndex.from_arrays([p_codes, p_keys])
        keep = np.asarray(pd.MultiIndex.from_arrays([t_codes, t_keys]).isin(predicted))
        rows["truth_dropped_unpredicted"] = int((~keep).sum())
        t_codes, t_keys, ratings = t_codes[keep], t_keys[keep], ratings[keep]
    phantom = _PhantomKeys(t_keys, p_keys)
    if options.duplicates == "keep":
        t_rep = _repeats(t_codes, t_keys, np.zeros(len(t_keys)))
        p_rep = _repeats(p_codes, p_keys, scores)
        rows["truth_duplicates_kept"] = int(t_rep.sum())
        rows["predictions_duplicates_kept"] = int(p_rep.sum())
        t_keys = t_keys.copy()
        t_keys[t_rep] = phantom.take(int(t_rep.sum()))
        p_keys = p_keys.copy()
        p_keys[p_rep] = phantom.take(int(p_rep.sum()))
    if options.nonpositive_scores == "irrelevant":
        nonpositive = scores <= 0
        rows["predictions_nonpositive"] = int(nonpositive.sum())
        p_keys = p_keys.copy()
        p_keys[nonpositive] = phantom.take(int(nonpositive.sum()))
    if options.ties == "item_ascending":
        order = np.argsort(p_keys, kind="stable")
        p_codes, p_keys, scores = p_codes[order], p_keys[order], scores[order]
    if options.ties == "ranx":  # each user's rows in ranx's order (profiles.ranx_order)
        from receval.profiles import ranx_order

        order = ranx_order(p_codes, scores)
        p_codes, p_keys, scores = p_codes[order], p_keys[order], scores[order]
    return t_codes, t_keys, ratings, p_codes, p_keys, scores


def _repeats(codes: np.ndarray, keys: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Rows repeating an earlier (user, item): all but the highest scored (then first) copy."""
    order = np.lexsort((np.arange(len(keys)), -scores, keys, codes))
    same = (codes[order][1:] == codes[order][:-1]) & (keys[order][1:] == keys[order][:-1])
    out = np.zeros(len(keys), dtype=bool)
    out[order[1:][same]] = True
    return out


class _PhantomKeys:
    """Fresh item keys beyond every key in use (above the largest, else below the smallest)."""

    def __init__(self, *in_use: np.ndarray) -> None:
        filled = [k for k in in_use if len(k)]
        self.high = max(int(k.max()) for k in filled) + 1 if filled else 0
        self.low = min(int(k.min()) for k in filled) - 1 if filled else -1

    def take(self, n: int) -> np.ndarray:
        if self.high + n < 2**62:
            out = np.arange(self.high, self.high + n, dtype=np.int64)
            self.high += n
            return out
        if self.low - n <= -(2**62):
            raise ReceValError("item ids span the whole int64 range: no spare id for a phantom")
        out = np.arange(self.low, self.low - n, -1, dtype=np.int64)
        self.low -= n
        return out


def _merge_parts(specs: list[MetricSpec], parts: list[tuple[list[int], Result]],
                 options: Options) -> Result:
    """One :class:`Result` from results over groups of metrics evaluated with different options
    (a profile's per-metric options): the summary in request order, per-user values merged on
    the user id (NaN where a user is outside a metric's population), per-metric counts merged.
    """
    names = [s.name for s in specs]
    values: dict[str, float] = {}
    per_user: pd.DataFrame | None = None
    counts: dict[str, Any] = {}
    for _members, part in parts:
        values.update(part.summary)
        frame = part.per_user
        per_user = frame if per_user is None else per_user.merge(frame, on="user", how="outer")
        if not counts:
            counts = {key: (dict(val) if isinstance(val, dict) else val)
                      for key, val in part.counts.items()}
            counts["undefined"] = dict(counts["undefined"])
            counts["undefined"]["users"] = dict(counts["undefined"]["users"])
            counts["users_per_metric"] = {}
        else:
            counts["undefined"]["users"].update(part.counts["undefined"]["users"])
            counts["averaged"].update(part.counts["averaged"])
            counts["summary_null"].update(part.counts["summary_null"])
        for name in part.metrics:
            counts["users_per_metric"][name] = part.counts["users"]["evaluated"]
    assert per_user is not None
    record = dict(parts[0][1].options)
    record.update(options.to_dict())
    record["metrics"] = {s.name: s.canonical for s in specs}
    return Result(summary={n: values[n] for n in names}, per_user=per_user[["user", *names]],
                  counts=counts, options=record, metrics=names)


def _id_at(arr: np.ndarray | pa.Array, row: int) -> object:
    return _py(arr[row].as_py() if isinstance(arr, pa.Array) else arr[row])


def _py(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value
