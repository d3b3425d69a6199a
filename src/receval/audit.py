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
    return selected_by(prepared.in_truth, prepared.in_predictions, options.users)


def selected_by(t: np.ndarray, p: np.ndarray, users: str) -> np.ndarray:
    """Of the users seen (a row in the truth: ``t``, in the predictions: ``p``), those
    ``users=`` selects (before ``"relevant"`` looks at relevance).

    Example:
        >>> selected_by(np.array([True, False]), np.array([True, True]), "truth").tolist()
        [True, False]
    """
    mask: np.ndarray = {
        "truth": t,
        "relevant": t,
        "both": t & p,
        "predictions": p,
        "union": t | p,
    }[users]
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
            raise duplicate_error(side, user, item)


def duplicate_error(side: str, user: object, item: object) -> ReceValError:
    """The ``duplicates="error"`` policy's one line, at every door.

    Example:
        >>> str(duplicate_error("truth", 1, "x")).split(";")[0]
        "duplicate (user, item) rows in truth: user 1, item 'x' appears more than once"
    """
    return ReceValError(f"duplicate (user, item) rows in {side}: user {user!r}, item {item!r} "
                        "appears more than once; pass duplicates='first' or 'max' to keep one")


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
    """The counts of a :class:`Result` from the prepared inputs and the engine's output."""
    return counts_of(prepared.in_truth, prepared.in_predictions, prepared.truth.lengths(),
                     prepared.predictions.lengths(), prepared.rows, selected, out, options,
                     undefined, used, cut_ks)


def counts_of(t: np.ndarray, p: np.ndarray, t_len: np.ndarray, p_len: np.ndarray,
              read: dict[str, int], selected: np.ndarray, out: KernelOutput, options: Options,
              undefined: dict[str, int], used: dict[str, int], cut_ks: np.ndarray) -> Counts:
    """The counts of a :class:`Result` over the users seen (a row on either side): ``t`` /
    ``p`` whether each has a truth / prediction row, ``t_len`` / ``p_len`` how many (after
    the rows dropped), ``read`` the rows read and dropped (:attr:`Prepared.rows`),
    ``selected`` the evaluated users (positions, in the order of ``out``'s rows). Every door
    counts here: the long tables (:func:`counts`) and the score matrices
    (:func:`receval.evaluate_scores`, whose predictions are the matrix's cells).

    Example:
        >>> from receval.engines.numba_engine import KernelOutput
        >>> one = np.ones(1, np.int64)
        >>> out = KernelOutput(value=np.zeros((1, 0)), num=np.zeros((1, 0)),
        ...     den=np.zeros((1, 0)), den2=np.zeros((1, 0)), n_relevant=one, n_list=2 * one,
        ...     n_predicted=2 * one, n_without_truth=one, n_below_score_threshold=0 * one,
        ...     dup_truth=-one, dup_predictions=-one, tie_at_cut=np.zeros((1, 0), bool),
        ...     gain_shift=np.zeros(1))
        >>> c = counts_of(np.array([True, False]), np.array([True, True]), np.array([1, 0]),
        ...     np.array([2, 3]), {"truth": 1, "predictions": 5,
        ...     "truth_dropped_missing_rating": 0}, np.array([0]), out, Options(), {}, {},
        ...     np.zeros(0, np.int64))
        >>> c["users"]["only_in_predictions"], c["rows"]["predictions_not_evaluated"]
        (1, 3)
    """
    evaluated = np.zeros(len(t), dtype=bool)
    evaluated[selected] = True
    by_option = ~selected_by(t, p, options.users)  # left out by ``users=``, before relevance
    truth_kept = int(t_len[selected].sum())
    rows = {
        "truth": read["truth"],
        "truth_kept": truth_kept,
        "truth_not_evaluated": int(t_len.sum()) - truth_kept,
        "predictions": read["predictions"],
        "truth_dropped_missing_rating": read["truth_dropped_missing_rating"],
        "truth_dropped_duplicates": read.get("truth_dropped_duplicates", 0),
        "predictions_dropped_duplicates": read.get("predictions_dropped_duplicates", 0),
        "predictions_kept": int(out.n_list.sum()),
        "predictions_not_evaluated": int(p_len.sum() - p_len[selected].sum()),
        "predictions_without_truth": int(out.n_without_truth.sum()),
        "predictions_below_score_threshold": int(out.n_below_score_threshold.sum()),
    }
    for key in RESHAPE_COUNTS:
        if key in read:
            rows[key] = read[key]
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
