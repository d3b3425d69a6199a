"""``evaluate()``: truth and predictions in, a :class:`~receval.result.Result` out.

The flow, top to bottom: read the columns -> check them -> encode ids -> group rows per user
-> run the engine over the selected users -> apply the zero-denominator policy and average.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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
from receval.options import Options
from receval.result import Result

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
    relevance_threshold: float | str | None = None,
    score_threshold: float | None = None,
    protocol: str = "full",
    ties: str = "stable",
    precision_denominator: str | None = None,
    recall_denominator: str = "relevant",
    ap_normalizer: str = "min_k_relevant",
    gain: str = "binary",
    empty: str = "zero",
    average: str = "macro",
    users: str = "truth",
    duplicates: str = "error",
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

    Example:
        >>> import pandas as pd, receval
        >>> truth = pd.DataFrame({"user": ["a", "a", "b"], "item": ["x", "y", "x"]})
        >>> preds = pd.DataFrame({"user": ["a", "a", "b", "b"], "item": ["x", "z", "z", "x"],
        ...                       "score": [0.9, 0.8, 0.7, 0.1]})
        >>> r = receval.evaluate(truth, preds, ["P@1", "R@2", "MRR"])
        >>> r.summary
        {'P@1': 0.5, 'R@2': 0.75, 'MRR': 0.75}
    """
    options = Options(
        relevance_threshold=relevance_threshold,
        score_threshold=score_threshold,
        protocol=protocol,  # type: ignore[arg-type]
        ties=ties,  # type: ignore[arg-type]
        precision_denominator=precision_denominator,  # type: ignore[arg-type]
        recall_denominator=recall_denominator,  # type: ignore[arg-type]
        ap_normalizer=ap_normalizer,  # type: ignore[arg-type]
        gain=gain,  # type: ignore[arg-type]
        empty=empty,  # type: ignore[arg-type]
        average=average,  # type: ignore[arg-type]
        users=users,  # type: ignore[arg-type]
        duplicates=duplicates,  # type: ignore[arg-type]
    )
    if engine not in ENGINES:
        raise ReceValError(f"engine {engine!r} is not one of {', '.join(map(repr, ENGINES))}")
    specs = parse_metrics(metrics)
    rating_needed = (
        relevance_threshold is not None
        or gain != "binary"
        or any(s.family in RATING for s in specs)
    )
    truth_cols = read_columns(truth, side="truth", user_col=user_col, item_col=item_col,
                              value_col=rating_col, value_required=rating_needed)
    pred_cols = read_columns(predictions, side="predictions", user_col=user_col,
                             item_col=item_col, value_col=score_col, value_required=True,
                             fallback_rank_col="rank")
    prepared = prepare(truth_cols, pred_cols, options, rating_col=rating_col,
                       score_col=score_col)
    return evaluate_prepared(prepared, specs, options, engine=engine)


def prepare(
    truth: Columns,
    predictions: Columns,
    options: Options,
    *,
    rating_col: str = "rating",
    score_col: str = "score",
) -> Prepared:
    """Check, encode and group both sides (no metric is computed here)."""
    assert predictions.values is not None
    scores = predictions.values
    bad = ~np.isfinite(scores)
    if bad.any():
        row = int(np.argmax(bad))
        raise ReceValError(
            f"predictions column {score_col!r} holds {scores[row]} at row {row} "
            f"(user {_id_at(predictions.users, row)!r}); scores must be finite numbers"
        )
    rows = {"truth": len(truth), "predictions": len(predictions)}
    t_users, t_items = truth.users, truth.items
    ratings = truth.values if truth.values is not None else np.ones(len(truth))
    missing = np.isnan(ratings)
    rows["truth_dropped_missing_rating"] = int(missing.sum())
    if missing.any():
        keep = ~missing
        t_users, t_items, ratings = _take(t_users, keep), _take(t_items, keep), ratings[keep]
        if len(ratings) == 0:
            raise ReceValError(f"truth column {rating_col!r} holds no rating (all missing)")
    if np.isinf(ratings).any():
        row = int(np.argmax(np.isinf(ratings)))
        raise ReceValError(f"truth column {rating_col!r} holds {ratings[row]} at row {row}")
    t_codes, p_codes, user_dict, n_users = encode_users(t_users, predictions.users)
    t_keys, p_keys, item_dict = encode_items(t_items, predictions.items)
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
    if (out.dup_truth >= 0).any() or (out.dup_predictions >= 0).any():
        prepared = _resolve_duplicates(prepared, selected, out, options)
        out = _run(prepared, selected, families, ks, betas, cut_ks, iopts, fopts)
    if options.users == "relevant":
        keep = out.n_relevant > 0
        selected = selected[keep]
        out = ne.KernelOutput(*(getattr(out, f)[keep] for f in out.__dataclass_fields__))
    user_ids = prepared.users.decode(selected)
    agg = aggregate(specs, out, options, lambda row: _py(user_ids[row]))
    per_user = pd.DataFrame({"user": user_ids})
    for c, spec in enumerate(specs):
        per_user[spec.name] = agg.per_user[:, c]
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
    iopts[ne.I_TIES] = TIE_CODES[options.ties]
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


def _resolve_duplicates(prepared: Prepared, selected: np.ndarray, out: ne.KernelOutput,
                        options: Options) -> Prepared:
    for side, flags, csr in (("truth", out.dup_truth, prepared.truth),
                             ("predictions", out.dup_predictions, prepared.predictions)):
        if options.duplicates == "error" and (flags >= 0).any():
            row = int(np.argmax(flags >= 0))
            user = _py(prepared.users.decode(selected[row : row + 1])[0])
            item = _py(prepared.items.decode(csr.items[flags[row] : flags[row] + 1])[0])
            raise ReceValError(
                f"duplicate (user, item) rows in {side}: user {user!r}, item {item!r} appears "
                "more than once; pass duplicates='first' or 'max' to keep one"
            )
    truth, n_t = drop_duplicates(prepared.truth, options.duplicates)
    preds, n_p = drop_duplicates(prepared.predictions, options.duplicates)
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


def _id_at(arr: np.ndarray | pa.Array, row: int) -> object:
    return _py(arr[row].as_py() if isinstance(arr, pa.Array) else arr[row])


def _py(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value
