"""The audit: which users are evaluated, duplicate rows, and the counts of a :class:`Result`
(rows and users read, kept, dropped and why; ties at each cutoff), plus the check that the
predictions meet the truth at all."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from receval.data.csr import drop_duplicates
from receval.exceptions import ReceValError
from receval.options import Options
from receval.result import Counts
from receval.scalars import plain
from receval.shaping import RESHAPE_COUNTS, Prepared

if TYPE_CHECKING:
    from receval.engines.numba_engine import KernelOutput


def item_overlap(prepared: Prepared) -> float:
    """The share of distinct predicted items found anywhere in the truth (the no-match
    warning's input, :func:`receval.finalize.check_inputs`)."""
    predicted = np.unique(prepared.predictions.items)
    return float(np.isin(predicted, prepared.truth.items).mean()) if len(predicted) else 1.0


def users_mask(prepared: Prepared, options: Options) -> np.ndarray:
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


def select_users(prepared: Prepared, options: Options) -> np.ndarray:
    selected = np.flatnonzero(users_mask(prepared, options)).astype(np.int64)
    if len(selected) == 0:
        raise no_user_error(options.users, relevant_only=False)
    return selected


def no_user_error(users: str, *, relevant_only: bool) -> ReceValError:
    """The error when ``users=`` selects nobody (``relevant_only``: ``users="relevant"`` found
    truth users, none with a relevant item), at every door.

    Example:
        >>> str(no_user_error("both", relevant_only=False)).split(":")[0]
        "no user to evaluate with users='both'"
    """
    if relevant_only:
        return ReceValError("no user to evaluate with users='relevant': no user of the truth "
                            "has a relevant item (check relevance_threshold)")
    return ReceValError(f"no user to evaluate with users={users!r}: truth and predictions share "
                        "no user id (check the user column and its type)")


def raise_on_duplicates(prepared: Prepared, users: np.ndarray, out: KernelOutput) -> None:
    """The ``duplicates="error"`` policy: name the first repeated (user, item) the kernel
    flagged among ``users`` (truth first, then predictions)."""
    for side, flags, csr in (("truth", out.dup_truth, prepared.truth),
                             ("predictions", out.dup_predictions, prepared.predictions)):
        if (flags >= 0).any():
            row = int(np.argmax(flags >= 0))
            user = plain(prepared.users.decode(users[row : row + 1])[0])
            item = plain(prepared.items.decode(csr.items[flags[row] : flags[row] + 1])[0])
            raise ReceValError(
                f"duplicate (user, item) rows in {side}: user {user!r}, item {item!r} appears "
                "more than once; pass duplicates='first' or 'max' to keep one"
            )


def resolve_duplicates(prepared: Prepared, options: Options) -> Prepared:
    """Keep one row per (user, item) under ``options.duplicates`` (``first`` or ``max``),
    counting the dropped rows of every user, evaluated or not."""
    truth, _ = drop_duplicates(prepared.truth, options.duplicates)
    preds, _ = drop_duplicates(prepared.predictions, options.duplicates)
    n_t = len(prepared.truth.items) - len(truth.items)
    n_p = len(prepared.predictions.items) - len(preds.items)
    rows = dict(prepared.rows, truth_dropped_duplicates=n_t, predictions_dropped_duplicates=n_p)
    return Prepared(truth, preds, prepared.users, prepared.items, prepared.in_truth,
                    prepared.in_predictions, rows)


def counts(prepared: Prepared, selected: np.ndarray, out: KernelOutput, options: Options,
            undefined: dict[str, int], used: dict[str, int],
            cut_ks: np.ndarray) -> Counts:
    t, p = prepared.in_truth, prepared.in_predictions
    evaluated = np.zeros(len(t), dtype=bool)
    evaluated[selected] = True
    by_option = ~users_mask(prepared, options)  # left out by ``users=``, before relevance
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
    for key in RESHAPE_COUNTS:
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
