"""``evaluate()``: truth and predictions in, a :class:`~receval.result.Result` out.

The flow, top to bottom: read the columns -> check them -> encode ids -> group rows per user
-> run the engine over the selected users -> apply the zero-denominator policy and average.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval._version import __version__
from receval.aggregate import aggregate
from receval.data.columns import Columns, read_columns
from receval.data.csr import CSR, drop_duplicates, group_by_user
from receval.data.encode import Dictionary, encode_items, encode_users
from receval.engines import numba_engine as ne
from receval.exceptions import ReceValError
from receval.measures.ap import AP_CODES
from receval.measures.ndcg import GAIN_CODES
from receval.measures.picture import TIE_CODES
from receval.measures.spec import RATING, Family, MetricSpec, parse_metrics
from receval.options import UNSET, Options
from receval.result import Result

if TYPE_CHECKING:
    from receval.profiles import Profile

ENGINES = ("numba",)


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
    engine: str = "numba",
) -> Result:
    """Evaluate ``predictions`` against ``truth`` on ``metrics``.

    ``truth`` and ``predictions`` are pandas/polars DataFrames, pyarrow Tables, dicts of arrays
    or paths to CSV/Parquet files in long format: one row per (user, item). The truth's
    ``rating`` column is optional when every truth row is relevant (implicit feedback); the
    predictions need ``score`` (or a ``rank`` column, rank 1 best). Every option is described
    on :class:`~receval.options.Options`; defaults: every truth row relevant, full-ranking
    protocol, stable ties, P@k over k, AP@k over min(k, L), binary nDCG gain, undefined values
    count as 0, macro average over the users of the truth.

    ``profile`` names a tool whose numbers to reproduce (:mod:`receval.profiles`: ``"trec_eval"``,
    ``"ranx"``, ``"torchmetrics"``, ``"tensorflow"``, ``"recommenders"``, ``"surprise"``,
    ``"spark"``, ``"kaggle"``): its bundle of options replaces the defaults, and every option
    passed here overrides the profile's. The profile's name is in ``Result.options``.

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
    specs = parse_metrics(metrics)
    per_spec = [resolved.options_for(s.family) for s in specs]
    rating_needed = (
        explicit.get("relevance_threshold") is not None
        or explicit.get("gain", "binary") != "binary"
        or resolved.requires_rating
        or any(s.family in RATING for s in specs)
    )
    truth_cols = read_columns(truth, side="truth", user_col=user_col, item_col=item_col,
                              value_col=rating_col, value_required=rating_needed)
    pred_cols = read_columns(predictions, side="predictions", user_col=user_col,
                             item_col=item_col, value_col=score_col, value_required=True,
                             fallback_rank_col="rank")
    groups: dict[Options, list[int]] = {}
    for i, opts in enumerate(per_spec):
        groups.setdefault(opts, []).append(i)
    prepared_by_key: dict[tuple[Any, ...], Prepared] = {}
    parts: list[tuple[list[int], Result]] = []
    for opts, members in groups.items():
        key = _prepare_key(opts)
        if key not in prepared_by_key:
            prepared_by_key[key] = prepare(truth_cols, pred_cols, opts, rating_col=rating_col,
                                           score_col=score_col)
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
    return result


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
    ``ties="item_ascending"`` (see :class:`~receval.options.Options`).
    """
    assert predictions.values is not None
    scores = predictions.values
    bad = ~np.isfinite(scores)
    if bad.any():
        row = int(np.argmax(bad))
        raise ReceValError(
            f"predictions column {score_col!r} holds {scores[row]} at row {row} "
            f"(user {_id_at(predictions.users, row)!r}); scores must be finite numbers"
        )
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
    if np.isinf(ratings).any():  # before dropping missing ratings: the row is the input's
        row = int(np.argmax(np.isinf(ratings)))
        raise ReceValError(f"truth column {rating_col!r} holds {ratings[row]} at row {row}")
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
    iopts, fopts, families, ks, betas, cut_ks = kernel_arguments(specs, options)
    out = _run(prepared, selected, families, ks, betas, cut_ks, iopts, fopts)
    if options.duplicates == "error":
        _raise_on_duplicates(prepared, selected, out)
        _check_duplicates_outside(prepared, selected, iopts, fopts)
    elif (out.dup_truth >= 0).any() or (out.dup_predictions >= 0).any():
        prepared = _resolve_duplicates(prepared, selected, options)
        out = _run(prepared, selected, families, ks, betas, cut_ks, iopts, fopts)
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
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The plain arrays the engines take: integer and float options, then the metric table."""
    families = np.array([int(s.family) for s in specs], dtype=np.int64)
    ks = np.array([s.k or 0 for s in specs], dtype=np.int64)
    betas = np.array([s.beta for s in specs], dtype=np.float64)
    ranked = [s for s in specs if s.family not in RATING and s.family is not Family.RPREC]
    cut_ks = np.array(sorted({s.k for s in ranked if s.k}), dtype=np.int64)
    iopts = np.zeros(ne.N_IOPTS, dtype=np.int64)
    # item_ascending is applied by prepare() (rows sorted by item), then ranked stably
    iopts[ne.I_TIES] = TIE_CODES["stable" if options.ties == "item_ascending" else options.ties]
    iopts[ne.I_KNOWN] = options.protocol == "known"
    iopts[ne.I_HAS_SCORE_THR] = options.score_threshold is not None
    rt = options.relevance_threshold
    iopts[ne.I_THR_MODE] = (
        ne.THR_NONE if rt is None else ne.THR_USER_MEAN if rt == "user_mean" else ne.THR_GLOBAL
    )
    iopts[ne.I_GAIN] = GAIN_CODES[options.gain]
    iopts[ne.I_PREC_RETURNED] = options.effective_precision_denominator == "returned"
    iopts[ne.I_RECALL_CAPPED] = options.recall_denominator == "capped"
    iopts[ne.I_AP_NORM] = AP_CODES[options.ap_normalizer]
    iopts[ne.I_NEED_ALL] = any(s.k is None and s.family is not Family.RPREC for s in ranked)
    iopts[ne.I_KMAX] = max((s.k for s in ranked if s.k), default=0)
    iopts[ne.I_NEED_RPREC] = any(s.family is Family.RPREC for s in specs)
    iopts[ne.I_PARTS] = options.average == "micro" or any(s.family in RATING for s in specs)
    fopts = np.zeros(2, dtype=np.float64)
    fopts[ne.F_SCORE_THR] = options.score_threshold if options.score_threshold is not None else 0
    fopts[ne.F_REL_THR] = float(rt) if isinstance(rt, int | float) else 0.0
    return iopts, fopts, families, ks, betas, cut_ks


# --- helpers ---------------------------------------------------------------------------------


def _run(prepared: Prepared, selected: np.ndarray, families: np.ndarray, ks: np.ndarray,
         betas: np.ndarray, cut_ks: np.ndarray, iopts: np.ndarray,
         fopts: np.ndarray) -> ne.KernelOutput:
    t, p = prepared.truth, prepared.predictions
    return ne.run_kernel(selected, t.indptr, t.items, t.values, p.indptr, p.items, p.values,
                         families, ks, betas, cut_ks, iopts, fopts)


def _select_users(prepared: Prepared, options: Options) -> np.ndarray:
    t, p = prepared.in_truth, prepared.in_predictions
    mask = {
        "truth": t,
        "relevant": t,
        "both": t & p,
        "predictions": p,
        "union": t | p,
    }[options.users]
    selected = np.flatnonzero(mask).astype(np.int64)
    if len(selected) == 0:
        raise ReceValError(
            f"no user to evaluate with users={options.users!r}: truth and predictions share "
            "no user id (check the user column and its type)"
        )
    return selected


def _check_duplicates_outside(prepared: Prepared, selected: np.ndarray, iopts: np.ndarray,
                              fopts: np.ndarray) -> None:
    """Duplicate rows are an error wherever they are, also in the rows of users who are not
    evaluated (a predictions-only user under ``users="truth"``, say): judged with no metric."""
    evaluated = np.zeros(len(prepared.in_truth), dtype=bool)
    evaluated[selected] = True
    others = np.flatnonzero((prepared.in_truth | prepared.in_predictions) & ~evaluated)
    if len(others) == 0:
        return
    none_i, none_f = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    _raise_on_duplicates(prepared, others,
                         _run(prepared, others, none_i, none_i, none_f, none_i, iopts, fopts))


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


def _resolve_duplicates(prepared: Prepared, selected: np.ndarray,
                        options: Options) -> Prepared:
    """Keep one row per (user, item) under ``options.duplicates`` (``first`` or ``max``),
    counting the evaluated users' dropped rows."""
    truth, _ = drop_duplicates(prepared.truth, options.duplicates)
    preds, _ = drop_duplicates(prepared.predictions, options.duplicates)
    # count the evaluated users' rows only, as above: the rows of a user who is not evaluated
    # are never read, so the count must not depend on whether an evaluated user had one too
    n_t = int((prepared.truth.lengths() - truth.lengths())[selected].sum())
    n_p = int((prepared.predictions.lengths() - preds.lengths())[selected].sum())
    rows = dict(prepared.rows, truth_dropped_duplicates=n_t, predictions_dropped_duplicates=n_p)
    return Prepared(truth, preds, prepared.users, prepared.items, prepared.in_truth,
                    prepared.in_predictions, rows)


def _counts(prepared: Prepared, selected: np.ndarray, out: ne.KernelOutput, options: Options,
            undefined: dict[str, int], used: dict[str, int],
            cut_ks: np.ndarray) -> dict[str, Any]:
    t, p = prepared.in_truth, prepared.in_predictions
    rows = {
        "truth": prepared.rows["truth"],
        "predictions": prepared.rows["predictions"],
        "truth_dropped_missing_rating": prepared.rows["truth_dropped_missing_rating"],
        "truth_dropped_duplicates": prepared.rows.get("truth_dropped_duplicates", 0),
        "predictions_dropped_duplicates": prepared.rows.get("predictions_dropped_duplicates", 0),
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
            "not_evaluated": int(len(t) - len(selected)),
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
            options.ties == "item_ascending")


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
