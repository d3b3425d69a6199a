"""Input shaping: both sides checked, encoded and grouped per user (:func:`prepare`), with the
options that change the input itself applied (``score_dtype``, ``item_order``,
``truth_scope``, ``nonpositive_scores``, ``duplicates="keep"``, the presorting tie policies).

Example:
    >>> from receval.data.columns import read_sides
    >>> from receval.options import Options
    >>> t, p = read_sides({"user": [1], "item": [2]}, {"user": [1], "item": [2], "score": [1.0]},
    ...                   user_col="user", item_col="item", rating_col="rating",
    ...                   score_col="score", truth_columns=None, prediction_columns=None,
    ...                   rating_required=False)
    >>> prepare(t, p, Options()).rows
    {'truth': 1, 'predictions': 1, 'truth_dropped_missing_rating': 0}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval.data.columns import Columns
from receval.data.csr import CSR, Codes, group_by_user
from receval.data.encode import Dictionary, encode_items, user_codes
from receval.exceptions import ReceValError
from receval.options import Options
from receval.scalars import plain


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
    t_codes, p_codes, user_dict, n_users = user_codes(t_users, predictions.users)
    if options.gain != "binary":
        _check_gains(ratings, t_codes, n_users, options, rating_col,
                     np.flatnonzero(~missing) if missing.any() else None, truth.users)
    t_keys, p_keys, item_dict = encode_items(t_items, p_items)
    if _reshapes(options):  # these options read and reorder the codes of every row
        t_rows, t_keys, ratings, p_rows, p_keys, scores = _reshape_inputs(
            t_codes.codes(), t_keys, ratings, p_codes.codes(), p_keys, scores, options, rows
        )
        t_codes, p_codes = Codes(t_rows), Codes(p_rows)
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


def _take(arr: np.ndarray | pa.Array, mask: np.ndarray) -> np.ndarray | pa.Array:
    if isinstance(arr, np.ndarray):
        return arr[mask]
    return arr.filter(pa.array(mask))


#: row counts that :func:`_reshape_inputs` reports, when its option is in force
RESHAPE_COUNTS = (
    "truth_dropped_unpredicted",
    "truth_duplicates_kept",
    "predictions_duplicates_kept",
    "predictions_nonpositive",
)


def prepare_key(options: Options) -> tuple[Any, ...]:
    """The options :func:`prepare` reads: results with equal keys can share one preparation."""
    return (options.score_dtype, options.item_order, options.truth_scope,
            options.nonpositive_scores, options.duplicates == "keep",
            options.ties == "item_ascending", options.ties == "ranx",
            # graded gains are checked against the threshold (binary ones are not checked)
            None if options.gain == "binary" else (options.gain, options.relevance_threshold))


def _reshapes(options: Options) -> bool:
    """Whether :func:`_reshape_inputs` changes anything under ``options``."""
    return (options.truth_scope == "predicted" or options.duplicates == "keep"
            or options.nonpositive_scores == "irrelevant"
            or options.ties in ("item_ascending", "ranx"))


def _check_gains(ratings: np.ndarray, codes: Codes, n_users: int, options: Options,
                 rating_col: str, rows: np.ndarray | None, users: Any) -> None:
    """Graded gains (``gain="linear"``/``"exponential"``) need non-negative ratings on the
    relevant truth rows: a negative gain would make nDCG negative (or above 1).

    A row is relevant as every door judges it (:func:`receval.engines.judge.relevant_rows`):
    rating >= the threshold (every row without one; with ``"user_mean"``, the mean of the
    user's ratings). ``rows`` maps the ratings
    back to input rows (``None``: the same rows).
    """
    negative = ratings < 0
    if not negative.any():
        return
    rt = options.relevance_threshold
    if rt is not None:  # judged by the one judge (the user's mean summed exactly)
        from receval.engines.judge import relevant_rows

        negative &= relevant_rows(codes.codes(), ratings, rt, n_users)
    if not negative.any():
        return
    first = int(np.argmax(negative))
    row = first if rows is None else int(rows[first])
    raise ReceValError(
        f"gain={options.gain!r} needs non-negative ratings on relevant rows; truth column "
        f"{rating_col!r} holds {ratings[first]:g} at row {row} (user {id_at(users, row)!r}), "
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


def id_at(arr: np.ndarray | pa.Array, row: int) -> object:
    return plain(arr[row])

