"""The leakage audit: what the training data says about one evaluation's inputs
(:class:`Leakage`: training items among the predictions, truth rows that are training rows,
cold users and items, training rows dated after the test), the exclusion of training items
before ranking (``exclude_train=True``) and the warnings when a count is large.

Example:
    >>> from receval.data.columns import read_sides
    >>> t, p = read_sides({"user": [1], "item": [5]},
    ...                   {"user": [1, 1], "item": [5, 6], "score": [1.0, 0.5]})
    >>> Leakage.of({"user": [1], "item": [6]}, None, t, p).predictions_in_train.tolist()
    [False, True]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval import checks
from receval.data.columns import Columns, IdArray
from receval.data.encode import encode_users
from receval.exceptions import ReceValError
from receval.result import Result
from receval.training.reading import (
    Training,
    _distinct,
    _isin,
    _one_kind,
    index_of,
    plain_ids,
    read_train,
    truth_timestamps,
)

#: a count above this share of its rows is "large" and warned about
LARGE_SHARE = 0.01


@dataclass
class Leakage:
    """What the training data says about one evaluation's inputs (:meth:`of`), written into its
    :class:`~receval.result.Result` by :meth:`record`."""

    train: Training
    predictions_in_train: np.ndarray
    truth_rows: int
    truth_in_train: int
    items_without_train: int
    train_after_test: int | None
    #: rows a prediction count is out of (matrix: its cells)
    predictions: int
    exclude_train: bool = False
    #: with ``exclude_train``: the users every one of whose prediction rows is a training pair
    #: (their list is emptied by the exclusion)
    emptied: np.ndarray | None = None

    @staticmethod
    def of(train: Any, truth: Any, truth_cols: Columns, pred_cols: Columns | None, *,
           exclude_train: bool = False, user_col: str = "user", item_col: str = "item",
           train_columns: Mapping[str, str] | None = None, timestamp_col: str = "timestamp",
           truth_columns: Mapping[str, str] | None = None) -> Leakage:
        """The audit of ``truth_cols`` and ``pred_cols`` (``None``: a score matrix, see
        :meth:`matrix`) against ``train``; ``truth`` is the truth as passed (for its
        timestamps).

        Example:
            >>> from receval.data.columns import read_sides
            >>> t, p = read_sides({"user": [1], "item": [5]},
            ...                   {"user": [1, 1], "item": [5, 6], "score": [1.0, 0.5]})
            >>> leak = Leakage.of({"user": [1], "item": [6]}, None, t, p)
            >>> leak.predictions_in_train.tolist(), leak.truth_in_train
            ([False, True], 0)
        """
        if train is None:
            raise ReceValError("exclude_train=True needs the training data: pass train=")
        trained = read_train(train, user_col=user_col, item_col=item_col,
                             timestamp_col=timestamp_col, columns=train_columns)
        rated = (np.ones(len(truth_cols), dtype=bool) if truth_cols.values is None
                 else ~np.isnan(truth_cols.values))
        t_users = _take(truth_cols.users, rated)
        t_items = _take(truth_cols.items, rated)
        truth_in = trained.in_train(t_users, t_items, side="truth")
        items = _distinct(t_items)
        cold_items = int((~_isin(items, _distinct(trained.items))).sum())
        after = None
        if trained.timestamps is not None and truth is not None:
            stamps = truth_timestamps(truth, len(truth_cols), user_col=user_col,
                                      item_col=item_col, timestamp_col=timestamp_col,
                                      truth_columns=truth_columns)
            if stamps is not None:
                after = _train_after_test(trained, t_users, stamps[0][rated], stamps[1][rated])
        in_pred = (np.zeros(0, dtype=bool) if pred_cols is None
                   else trained.in_train(pred_cols.users, pred_cols.items))
        return Leakage(trained, in_pred, int(rated.sum()), int(truth_in.sum()), cold_items,
                       after, len(in_pred), exclude_train,
                       emptied_users(pred_cols, in_pred) if exclude_train else None)

    def matrix(self, user_ids: np.ndarray, item_ids: np.ndarray,
               excluded: np.ndarray | None = None) -> int:
        """For a score matrix (rows ``user_ids``, columns ``item_ids``): the number of its cells
        that are training pairs, each counted once; it becomes ``predictions_in_train``.
        ``excluded``: the cells that are not predictions (``row * n_items + column``, distinct
        and sorted; the ``exclude=`` pairs), left out of both counts.

        Example:
            >>> from receval.data.columns import read_columns
            >>> t = read_columns({"user": [0], "item": [1]}, side="truth", user_col="user",
            ...                  item_col="item", value_col=None, value_required=False)
            >>> leak = Leakage.of({"user": [0, 0, 0, 5], "item": [1, 1, 2, 1]}, None, t, None)
            >>> leak.matrix(np.array([0, 1]), np.array([0, 1, 2]))
            2
        """
        users = plain_ids(self.train.users)
        items = plain_ids(self.train.items)
        row = index_of(users, user_ids)
        col = index_of(items, item_ids)
        inside = (row >= 0) & (col >= 0)
        cells = np.unique(row[inside] * len(item_ids) + col[inside])
        self.predictions = len(user_ids) * len(item_ids)
        if excluded is not None and len(excluded):
            cells = np.setdiff1d(cells, excluded, assume_unique=True)
            self.predictions -= len(excluded)
        self.predictions_in_train = np.ones(len(cells), dtype=bool)
        return len(cells)

    def train_pairs(self, user_col: str = "user", item_col: str = "item", *,
                    user_ids: np.ndarray | None = None,
                    item_ids: np.ndarray | None = None) -> pa.Table:
        """The training (user, item) pairs as a table (``exclude=`` of a score matrix), ids
        as text where the matrix's ``user_ids`` / ``item_ids`` are text and they are not.

        Example:
            >>> from receval.data.columns import read_columns
            >>> leak = Leakage.of({"user": [1], "item": [2]}, None, read_columns(
            ...     {"user": [1], "item": [2]}, side="truth", user_col="user",
            ...     item_col="item", value_col=None, value_required=False), None)
            >>> leak.train_pairs("u", "i").to_pylist()
            [{'u': 1, 'i': 2}]
        """
        users, items = plain_ids(self.train.users), plain_ids(self.train.items)
        for ids, known, col in ((users, user_ids, user_col), (items, item_ids, item_col)):
            if known is not None and len(known) and (np.asarray(known).dtype.kind in "iu") != (
                    ids.dtype.kind in "iu"):
                if col == user_col:
                    users = users.astype(str)
                else:
                    items = items.astype(str)
        return pa.table({user_col: users, item_col: items})

    def kept(self, pred_cols: Columns) -> Columns:
        """``pred_cols`` without its training pairs (``exclude_train=True``).

        Example:
            >>> from receval.data.columns import read_sides
            >>> t, p = read_sides({"user": [1], "item": [5]},
            ...                   {"user": [1, 1], "item": [5, 6], "score": [1.0, 0.5]})
            >>> Leakage.of({"user": [1], "item": [6]}, None, t, p).kept(p).items.tolist()
            [5]
        """
        keep = ~self.predictions_in_train
        if not keep.any():
            raise ReceValError(
                f"exclude_train=True removes every one of the {len(keep):,} prediction rows: "
                "each predicted item is in its user's training data (are the predictions "
                "scores of the training pairs?)")
        assert pred_cols.values is not None
        return Columns(side=pred_cols.side, users=_take(pred_cols.users, keep),
                       items=_take(pred_cols.items, keep), values=pred_cols.values[keep],
                       value_name=pred_cols.value_name)

    def counts(self, evaluated: Iterable[Any]) -> dict[str, int]:
        """``Result.counts["train"]`` for the ``evaluated`` users."""
        users = _distinct(self.train.users)
        evaluated_ids = np.asarray(pd.unique(np.asarray(list(evaluated), dtype=object)))
        if len(evaluated_ids) and all(isinstance(u, int | np.integer) for u in evaluated_ids):
            evaluated_ids = evaluated_ids.astype(np.int64)
        out = {
            "rows": len(self.train),
            "users": len(users),
            "items": len(_distinct(self.train.items)),
            "predictions_in_train": int(self.predictions_in_train.sum()),
            "truth_in_train": self.truth_in_train,
            "users_without_train": int((~_isin(evaluated_ids, users)).sum()),
            "items_without_train": self.items_without_train,
        }
        if self.train_after_test is not None:
            out["train_after_test"] = self.train_after_test
        return out

    def record(self, result: Result) -> None:
        """Write the audit into ``result`` (``counts["train"]``; with ``exclude_train``, the
        excluded rows in ``counts["rows"]``) and warn about what is large (:func:`check`).
        ``options["train"]`` and ``options["exclude_train"]`` are written with the options
        (:func:`receval.finalize.recorded_inputs`)."""
        counts = self.counts(result.per_user["user"].tolist())
        result.counts["train"] = counts
        if self.exclude_train:
            excluded = counts["predictions_in_train"]
            rows = result.counts["rows"]
            if "predictions" in rows:  # a long table: the rows read, the excluded ones too
                rows["predictions"] += excluded
            rows["predictions_excluded_train"] = excluded
        check(counts, predictions=self.predictions, truth=self.truth_rows,
              exclude_train=self.exclude_train)
        if self.exclude_train and self.emptied is not None:
            count_emptied(result, int(_isin(_ids_of(result.per_user["user"].tolist()),
                                            self.emptied).sum()))


def emptied_users(pred_cols: Columns | None, in_train: np.ndarray) -> np.ndarray | None:
    """The users of ``pred_cols`` whose every prediction row is a training pair
    (``in_train``): ``exclude_train=True`` leaves them an empty list.

    Example:
        >>> from receval.data.columns import read_sides
        >>> _, p = read_sides({"user": [1], "item": [5]}, {"user": [1, 2, 2], "item": [5, 6, 7],
        ...                                                 "score": [1.0, 0.5, 0.2]})
        >>> emptied_users(p, np.array([False, True, True])).tolist()
        [2]
    """
    if pred_cols is None or not len(in_train):
        return None
    owners = pd.Series(in_train).groupby(plain_ids(pred_cols.users), sort=False).all()
    return np.asarray(owners.index[owners.to_numpy()])


def _ids_of(users: list[Any]) -> np.ndarray:
    """Evaluated user ids as :meth:`Leakage.counts` compares them (whole numbers as int64)."""
    ids = np.asarray(pd.unique(np.asarray(users, dtype=object)))
    if len(ids) and all(isinstance(u, int | np.integer) for u in ids):
        ids = ids.astype(np.int64)
    return ids


def count_emptied(result: Result, n: int) -> None:
    """The ``n`` evaluated users whose list ``exclude_train`` emptied, counted as such (the
    local plan and Spark alike): in the predictions (they are in the file), with an empty list
    (``users.emptied_by_exclude_train``), not as users only in the truth or without
    predictions; and warned (``emptied-lists``).

    Example:
        >>> import pandas as pd
        >>> r = Result({}, pd.DataFrame({"user": [1]}), {"users": {"only_in_truth": 1,
        ...            "in_predictions": 0, "in_both": 0, "without_predictions": 1}}, {})
        >>> count_emptied(r, 0)
        >>> r.counts["users"]["emptied_by_exclude_train"]
        0
    """
    users = result.counts.setdefault("users", {})
    users["emptied_by_exclude_train"] = n
    if not n:
        return
    for key, step in (("in_predictions", n), ("in_both", n), ("only_in_truth", -n),
                      ("without_predictions", -n)):
        if key in users:
            users[key] += step
    checks.warn(checks.EmptiedListsWarning,
                f"exclude_train=True removed every item of {n} evaluated user(s)' lists (all "
                f"their predictions are training items): they are evaluated with an empty list "
                f"(Result.counts['users']['emptied_by_exclude_train']); predict more items "
                f"per user than they have in the training data")


def _take(ids: IdArray, mask: np.ndarray) -> IdArray:
    if isinstance(ids, np.ndarray):
        return ids[mask]
    return ids.filter(pa.array(mask))


def _train_after_test(train: Training, t_users: IdArray, stamps: np.ndarray,
                      known: np.ndarray) -> int:
    """Training rows dated after their user's first (earliest) test row."""
    assert train.timestamps is not None and train.known is not None
    if (train.timestamps.dtype.kind == "f") != (stamps.dtype.kind == "f"):
        raise ReceValError("train and truth timestamps are of different kinds (one numbers, "
                           "the other datetimes): give both the same")
    tu, ou = _one_kind(train.users, t_users, train.from_file, "user", "truth")
    train_codes, test_codes, _, n = encode_users(tu, ou)
    sentinel = np.inf if stamps.dtype.kind == "f" else np.iinfo(np.int64).max
    first = np.full(n, sentinel, dtype=stamps.dtype)
    np.minimum.at(first, test_codes[known], stamps[known])
    later = train.known & (train.timestamps > first[train_codes])
    return int(later.sum())


def check(counts: Mapping[str, int], *, predictions: int, truth: int,
          exclude_train: bool) -> None:
    """Warn when an audit count is large (above :data:`LARGE_SHARE` of its rows), naming what
    handles it: :class:`~receval.checks.TrainItemsWarning` (``exclude_train``),
    :class:`~receval.checks.TrainOverlapWarning` (the truth is not the test set?),
    :class:`~receval.checks.TrainFutureWarning` (a split that ignores the timeline).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     check({"predictions_in_train": 5, "truth_in_train": 0, "rows": 9},
        ...           predictions=10, truth=4, exclude_train=False)
        >>> str(caught[0].message).split(";")[0]
        '5 of 10 prediction rows (50%) are items their user has in the training data'
    """
    n = counts["predictions_in_train"]
    if not exclude_train and predictions and n > LARGE_SHARE * predictions:
        checks.warn(checks.TrainItemsWarning,
                    f"{n:,} of {predictions:,} prediction rows ({n / predictions:.0%}) are items "
                    "their user has in the training data; under the full-ranking protocol they "
                    "take places in the top k that a held-out item could have: pass "
                    "exclude_train=True (--exclude-train) to remove them before ranking")
    n = counts["truth_in_train"]
    if truth and n > LARGE_SHARE * truth:
        checks.warn(checks.TrainOverlapWarning,
                    f"the truth overlaps the training data: {n:,} of {truth:,} truth rows "
                    f"({n / truth:.0%}) are training rows; is the truth the test set? (a "
                    "held-out test set shares no (user, item) with the training data)")
    n = counts.get("train_after_test", 0)
    rows = counts.get("rows", 0)
    if rows and n > LARGE_SHARE * rows:
        checks.warn(checks.TrainFutureWarning,
                    f"{n:,} of {rows:,} training rows ({n / rows:.0%}) are dated after their "
                    "user's first test row: the model saw the future (Ji et al., TOIS 2023); "
                    "split at one global cut date (a global temporal split) to avoid it")


