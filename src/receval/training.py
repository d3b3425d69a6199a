"""The training data in the picture: the leakage audit, training-item exclusion and strata.

receval sees the predictions and the held-out truth; with ``train=`` it also sees what the
model was trained on (docs/semantics.md section 15), and can say what the numbers cannot show:

- ``predictions_in_train``: prediction rows whose (user, item) is a training row. Under the
  full-ranking protocol these items take places in the top k that a held-out item could have
  had (``exclude_train=True`` removes them before ranking: the standard protocol);
- ``truth_in_train``: truth rows that are also training rows (is the truth the test set?);
- ``users_without_train`` / ``items_without_train``: evaluated users and truth items that the
  training data never saw (cold start);
- ``train_after_test`` (timestamps on both sides): training rows dated after their user's first
  test row, a temporal leak (Ji et al., TOIS 2023).

The training interactions are read as the other sides are (frames, Arrow tables, dicts of
arrays or files through :mod:`receval.io`): ``user`` and ``item``, and an optional
``timestamp`` (numbers, or datetimes in a frame); a ``rating`` column may be there and is not
used (every training row is an interaction, whatever its rating).

The strata (:func:`activity_groups`, :func:`cold_start_groups`) map users to a group for
``evaluate(strata=...)``; :func:`popularity_groups` maps items to ``head`` / ``tail``.

Example:
    >>> train = {"user": [1, 1, 2], "item": [10, 11, 10]}
    >>> t = read_train(train)
    >>> len(t), t.in_train(np.array([1, 2, 2]), np.array([10, 10, 12])).tolist()
    (3, [True, True, False])
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval import checks
from receval.data.columns import Columns, IdArray, read_columns
from receval.data.encode import encode_users
from receval.exceptions import ReceValError
from receval.io.values import bad_rows, frame_row
from receval.io.wanted import Wanted, clean_name
from receval.randomness import keyed
from receval.result import Result

#: the roles ``train_columns`` / ``--train-columns`` may name
TRAIN_ROLES = ("user", "item", "rating", "timestamp")
#: a count above this share of its rows is "large" and warned about
LARGE_SHARE = 0.01


# --- reading ------------------------------------------------------------------------------------


@dataclass
class Training:
    """The training interactions as plain arrays (as :class:`~receval.data.columns.Columns`).

    ``timestamps`` is ``None`` without a timestamp column; else float64 (numbers, NaN: unknown)
    or int64 nanoseconds (datetimes) with ``known`` marking the rows that have one.
    """

    users: IdArray
    items: IdArray
    timestamps: np.ndarray | None = None
    known: np.ndarray | None = None
    from_file: bool = False
    _pairs: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.users)

    def in_train(self, users: IdArray, items: IdArray, *, side: str = "predictions") -> np.ndarray:
        """Per row of ``(users, items)``: whether that (user, item) is a training row.

        Example:
            >>> t = read_train({"user": ["a"], "item": ["x"]})
            >>> t.in_train(pa.array(["a", "a"]), pa.array(["x", "y"])).tolist()
            [True, False]
        """
        if len(users) == 0:
            return np.zeros(0, dtype=bool)
        tu, ou = _one_kind(self.users, users, self.from_file, "user", side)
        ti, oi = _one_kind(self.items, items, self.from_file, "item", side)
        t_users, o_users, _, _ = encode_users(tu, ou)
        t_items, o_items, _, n_items = encode_users(ti, oi)
        t_keys = t_users.astype(np.int64) * n_items + t_items
        o_keys = o_users.astype(np.int64) * n_items + o_items
        return member(o_keys, t_keys)

    def user_counts(self) -> pd.Series:
        """Training rows per user (index: the user ids, sorted).

        Example:
            >>> read_train({"user": [2, 1, 2], "item": [1, 1, 2]}).user_counts().to_dict()
            {1: 1, 2: 2}
        """
        return pd.Series(plain_ids(self.users)).value_counts().sort_index()

    def item_counts(self) -> pd.Series:
        """Training rows per item (index: the item ids, sorted).

        Example:
            >>> read_train({"user": [2, 1, 2], "item": [1, 1, 2]}).item_counts().to_dict()
            {1: 2, 2: 1}
        """
        return pd.Series(plain_ids(self.items)).value_counts().sort_index()


def read_train(
    source: Any,
    *,
    user_col: str = "user",
    item_col: str = "item",
    timestamp_col: str = "timestamp",
    columns: Mapping[str, str] | None = None,
    format: str = "auto",
    header: bool = True,
    delimiter: str | None = None,
) -> Training:
    """Read the training interactions: a frame, an Arrow table, a dict of arrays or a path.

    ``columns`` (``{"user": "userId", "item": "movieId", "timestamp": "ts"}``, or
    ``--train-columns user=userId,...``) overrides the shared ``*_col`` names. The timestamp is
    read when the column is there. ``format``, ``header`` and ``delimiter`` are the readers'
    (:func:`receval.io.read_table`) for a path.

    Example:
        >>> t = read_train({"userId": [1, 2], "item": [5, 6], "ts": [10.0, 20.0]},
        ...                columns={"user": "userId", "timestamp": "ts"})
        >>> t.users.tolist(), t.timestamps.tolist()
        ([1, 2], [10.0, 20.0])
        >>> read_train({"user": [1]})
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: train has no column 'item'; its columns are: 'user' \
(pass --train-columns item=NAME / train_columns={'item': NAME})
    """
    if isinstance(source, Training):
        return source
    names = train_columns(columns, user=user_col, item=item_col, timestamp=timestamp_col)
    if isinstance(source, str | os.PathLike):
        return _read_train_file(Path(source), names, format=format, header=header,
                                delimiter=delimiter)
    found = _column_names(source)
    missing = [(role, names[role]) for role in ("user", "item") if names[role] not in found]
    if missing:
        raise ReceValError(missing_train_message("train", missing, found))
    cols = read_columns(source, side="train", user_col=names["user"], item_col=names["item"],
                        value_col=None, value_required=False)
    stamps = known = None
    if names["timestamp"] in found:
        stamps, known = _timestamps(_column(source, names["timestamp"]), "train",
                                    names["timestamp"])
    return Training(cols.users, cols.items, stamps, known)


def train_columns(columns: Mapping[str, str] | None, **shared: str) -> dict[str, str]:
    """The column of each training role: ``shared`` overridden by ``columns``.

    Example:
        >>> train_columns({"item": "movieId"}, user="user", item="item", timestamp="ts")
        {'user': 'user', 'item': 'movieId', 'timestamp': 'ts'}
        >>> train_columns({"score": "s"}, user="user", item="item", timestamp="ts")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: train_columns has an unknown key 'score'; its keys \
are 'user', 'item', 'rating', 'timestamp' (--train-columns likewise)
    """
    out = dict(shared)
    if columns is None:
        return out
    if not isinstance(columns, Mapping):
        raise ReceValError("train_columns must be a dict such as {'user': 'userId'}; got "
                           f"{type(columns).__name__}")
    for key, name in columns.items():
        if key not in TRAIN_ROLES:
            raise ReceValError(f"train_columns has an unknown key {key!r}; its keys are "
                               f"{', '.join(map(repr, TRAIN_ROLES))} (--train-columns likewise)")
        if not isinstance(name, str) or not name:
            raise ReceValError(f"train {key} column must be a non-empty string; got {name!r}")
        if key != "rating":  # the rating is not read
            out[key] = name
    seen: dict[str, str] = {}
    for role in ("user", "item", "timestamp"):
        if out[role] in seen:
            raise ReceValError(
                f"train: the {seen[out[role]]} and {role} columns are both {out[role]!r}; name "
                f"two different columns (pass --train-columns {seen[out[role]]}=NAME,{role}=NAME"
                f" / train_columns={{'{seen[out[role]]}': NAME, '{role}': NAME}})")
        seen[out[role]] = role
    return out


def missing_train_message(where: str, missing: list[tuple[str, str]], found: list[str]) -> str:
    """The one-line message for training columns that ``where`` lacks.

    Example:
        >>> missing_train_message("train", [("user", "uid")], ["userId"])
        "train has no column 'uid'; its columns are: 'userId' (pass --train-columns user=NAME \
/ train_columns={'user': NAME})"
    """
    shown = ", ".join(map(repr, found)) if found else "(none)"
    asked = ", ".join(repr(name) for _, name in missing)
    fix = (f"pass --train-columns {','.join(f'{role}=NAME' for role, _ in missing)} / "
           f"train_columns={{{', '.join(f'{role!r}: NAME' for role, _ in missing)}}}")
    return f"{where} has no column {asked}; its columns are: {shown} ({fix})"


@dataclass(frozen=True)
class _TrainWanted(Wanted):
    """The reader's column request for the training side: user, item, optional timestamp."""

    def positional(self, n_columns: int) -> list[str]:
        # a file without header is read as user, item, rating, timestamp (MovieLens' order)
        names = [self.user, self.item, "rating" if self.value != "rating" else "_rating",
                 self.value]
        return (names + [f"column_{i}" for i in range(4, n_columns)])[:n_columns]

    def resolve(self, names: list[str], path: str | Path) -> dict[str, str]:
        self.found[:] = names
        lookup: dict[str, str] = {}
        for name in names:
            lookup.setdefault(name, name)
        for name in names:
            lookup.setdefault(clean_name(name), name)
        missing = [(role, c) for role, c in (("user", self.user), ("item", self.item))
                   if c not in lookup]
        if missing:
            raise ReceValError(missing_train_message(f"train file {path}", missing, names))
        out = {"user": lookup[self.user], "item": lookup[self.item]}
        if self.value in lookup:
            out["timestamp"] = lookup[self.value]
        return out


def _read_train_file(path: Path, names: dict[str, str], *, format: str, header: bool,
                     delimiter: str | None) -> Training:
    from receval import io

    source = io.source.check_file(path, "train")
    kind = io.detect_format(source, "train", format)
    if kind == "trec":  # qrels: query, 0, document, relevance (no timestamp)
        table = io.read_table(source, Wanted.truth(), format="trec")
    else:
        wanted = _TrainWanted("train", names["user"], names["item"], names["timestamp"],
                              "timestamp", False, None)
        table = io.read_table(source, wanted, format=kind, header=header, delimiter=delimiter)
    cols = read_columns(table, side="train", user_col="user", item_col="item", value_col=None,
                        value_required=False)
    stamps = known = None
    if "timestamp" in table.column_names:
        stamps, known = _timestamps(table.column("timestamp").to_pandas(), "train",
                                    names["timestamp"])
    return Training(cols.users, cols.items, stamps, known, from_file=True)


def truth_timestamps(truth: Any, n_rows: int, *, user_col: str = "user",
                     item_col: str = "item", timestamp_col: str = "timestamp",
                     truth_columns: Mapping[str, str] | None = None, header: bool = True,
                     delimiter: str | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """The timestamp of each truth row (as read by :func:`receval.data.columns.read_sides`),
    when the truth has a ``timestamp_col`` column, else ``None``: ``(values, known)``.
    ``header`` and ``delimiter``: the reader's, for a path.

    Example:
        >>> truth_timestamps({"user": [1], "item": [2], "timestamp": [5]}, 1)[0].tolist()
        [5.0]
        >>> truth_timestamps({"user": [1], "item": [2]}, 1) is None
        True
    """
    user = dict(truth_columns or {}).get("user", user_col)
    item = dict(truth_columns or {}).get("item", item_col)
    if isinstance(truth, str | os.PathLike):
        from receval import io

        path = Path(truth)
        if io.detect_format(path, "truth") == "trec" or timestamp_col in (user, item):
            return None
        wanted = _TrainWanted("truth", user, item, timestamp_col, "timestamp", False, None)
        table = io.read_table(path, wanted, header=header, delimiter=delimiter)
        if "timestamp" not in table.column_names or table.num_rows != n_rows:
            return None
        return _timestamps(table.column("timestamp").to_pandas(), "truth", timestamp_col)
    if isinstance(truth, Training) or timestamp_col not in _column_names(truth):
        return None
    out = _timestamps(_column(truth, timestamp_col), "truth", timestamp_col)
    return out if len(out[0]) == n_rows else None


def _column_names(source: Any) -> list[str]:
    if isinstance(source, dict):
        return [str(k) for k in source]
    if isinstance(source, pa.Table | pa.RecordBatch):
        return list(source.schema.names)
    columns = getattr(source, "columns", None)
    if columns is None:
        raise TypeError("train must be a pandas/polars DataFrame, a pyarrow Table, a dict of "
                        "arrays or a path to a CSV/TSV/Parquet/JSON Lines file; got "
                        f"{type(source).__name__}")
    return [str(c) for c in columns]


def _column(source: Any, name: str) -> pd.Series:
    """One column of a frame, a table or a dict, as a pandas Series."""
    if isinstance(source, dict):
        return pd.Series(np.asarray(source[name]) if not isinstance(source[name], pd.Series)
                         else source[name])
    if isinstance(source, pa.Table | pa.RecordBatch):
        return source.column(name).to_pandas()
    col = source[name]
    return col if isinstance(col, pd.Series) else col.to_pandas()


def _timestamps(col: pd.Series, side: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Numbers as float64, datetimes as int64 nanoseconds; ``known``: not missing."""
    col = col.reset_index(drop=True)
    if isinstance(col.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_any_dtype(col):
        known = col.notna().to_numpy()
        values = col.dt.tz_convert("UTC") if isinstance(col.dtype, pd.DatetimeTZDtype) else col
        ns = values.astype("datetime64[ns, UTC]" if isinstance(col.dtype, pd.DatetimeTZDtype)
                           else "datetime64[ns]")
        return ns.to_numpy(dtype="datetime64[ns]").view(np.int64), known
    try:
        values = pd.to_numeric(col, errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        bad = pd.to_numeric(col, errors="coerce").isna() & col.notna()
        row = int(np.argmax(bad.to_numpy()))
        raise ReceValError(bad_rows(side, name, frame_row(row), int(bad.sum()),
                                    repr(col.iloc[row]),
                                    "; timestamps must be numbers or datetimes")) from None
    return values, ~np.isnan(values)


# --- ids ----------------------------------------------------------------------------------------


def _one_kind(train: IdArray, other: IdArray, from_file: bool, what: str,
              side: str) -> tuple[IdArray, IdArray]:
    """Train ids and another side's ids of one type: integers become text when the training
    data came from a file (as the command line does); two frames must agree."""
    if isinstance(train, np.ndarray) == isinstance(other, np.ndarray):
        return train, other
    if not from_file:
        names = {True: "integers", False: "strings"}
        raise ReceValError(
            f"{what} ids of mismatched types: train has {names[isinstance(train, np.ndarray)]}, "
            f"{side} has {names[isinstance(other, np.ndarray)]}; give both one type "
            "(e.g. .astype(str) on both)")
    if isinstance(train, np.ndarray):
        return pa.array(train).cast(pa.string()), other
    return train, pa.array(other).cast(pa.string())


def plain_ids(ids: Any) -> np.ndarray:
    """Ids as a numpy array: int64, or objects (strings).

    Example:
        >>> plain_ids(pa.array(["b", "a", "b"]).dictionary_encode()).tolist()
        ['b', 'a', 'b']
    """
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if isinstance(ids, pa.DictionaryArray):
        ids = ids.dictionary_decode()
    if isinstance(ids, pa.Array):
        return np.asarray(ids.to_numpy(zero_copy_only=False))
    return np.asarray(ids)


def _distinct(ids: Any) -> np.ndarray:
    """The distinct ids (cheap for dictionary-encoded strings)."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if isinstance(ids, pa.DictionaryArray):
        used = np.unique(ids.indices.to_numpy(zero_copy_only=False))
        return np.asarray(ids.dictionary.take(pa.array(used)).to_numpy(zero_copy_only=False))
    return pd.unique(plain_ids(ids))


def _isin(values: np.ndarray, known: np.ndarray) -> np.ndarray:
    """``values`` found in ``known``, comparing integers and text as text when they differ."""
    if len(values) and len(known) and (values.dtype.kind in "iu") != (known.dtype.kind in "iu"):
        values, known = values.astype(str), known.astype(str)
    return np.asarray(pd.Index(values).isin(known))


# --- the audit ----------------------------------------------------------------------------------


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
                       after, len(in_pred), exclude_train)

    def matrix(self, user_ids: np.ndarray, item_ids: np.ndarray) -> int:
        """For a score matrix (rows ``user_ids``, columns ``item_ids``): the number of its cells
        that are training pairs, each counted once; it becomes ``predictions_in_train``.

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
        self.predictions_in_train = np.ones(len(cells), dtype=bool)
        self.predictions = len(user_ids) * len(item_ids)
        return len(cells)

    def train_pairs(self, user_col: str = "user", item_col: str = "item", *,
                    user_ids: np.ndarray | None = None,
                    item_ids: np.ndarray | None = None) -> pa.Table:
        """The training (user, item) pairs as a table (``exclude=`` of a score matrix), ids
        as text where the matrix's ``user_ids`` / ``item_ids`` are text and they are not.

        Example:
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


def member(keys: np.ndarray, known: np.ndarray) -> np.ndarray:
    """``np.isin(keys, known)`` by a sort and a binary search (numpy's hash-based isin is
    several times slower on millions of int64 keys).

    Example:
        >>> member(np.array([3, 1, 7]), np.array([7, 3, 3])).tolist()
        [True, False, True]
    """
    table = np.sort(known)
    where = np.minimum(np.searchsorted(table, keys), len(table) - 1)
    return np.asarray(table[where] == keys) if len(table) else np.zeros(len(keys), bool)


def _take(ids: IdArray, mask: np.ndarray) -> IdArray:
    if isinstance(ids, np.ndarray):
        return ids[mask]
    return ids.filter(pa.array(mask))


def index_of(ids: np.ndarray, known: np.ndarray) -> np.ndarray:
    """The position of each id in ``known`` (-1: absent); integers and text compared as text
    when they differ.

    Example:
        >>> index_of(np.array([3, 9]), np.array(["1", "3"], dtype=object)).tolist()
        [1, -1]
    """
    known = np.asarray(known)
    if len(ids) and len(known) and (ids.dtype.kind in "iu") != (known.dtype.kind in "iu"):
        ids, known = ids.astype(str), known.astype(str)
    return np.asarray(pd.Index(known).get_indexer(ids), dtype=np.int64)


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


# --- strata -------------------------------------------------------------------------------------


def activity_groups(train: Any, quantiles: int = 4, *, users: Iterable[Any] | None = None,
                    user_col: str = "user", item_col: str = "item") -> pd.DataFrame:
    """Users grouped by their number of training rows, in ``quantiles`` groups.

    Group ``Qj`` holds the users whose count is at most the ``j/quantiles`` quantile of the
    counts (the smallest count that at least that share of users does not exceed) and above
    the previous group's; users with equal counts are always in one group, so a group can be
    empty (it is then absent and the numbering keeps the quantile's place). Labels name the
    counts found: ``"Q1 (1-5 rows)"``. With ``users``, exactly those users (the evaluated
    ones): the quantiles are over those with training rows, and users without any are
    ``"none (0 rows)"``.

    Example:
        >>> train = {"user": [1, 2, 2, 3, 3, 3, 4, 4, 4, 4], "item": range(10)}
        >>> activity_groups(train, 2).values.tolist()
        [[1, 'Q1 (1-2 rows)'], [2, 'Q1 (1-2 rows)'], [3, 'Q2 (3-4 rows)'], [4, 'Q2 (3-4 rows)']]
    """
    if not isinstance(quantiles, int | np.integer) or quantiles < 1:
        raise ReceValError(f"quantiles must be a positive integer; got {quantiles!r}")
    counts = _counts_for(train, users, user_col, item_col)
    active = counts[counts > 0]
    groups = pd.Series("none (0 rows)", index=counts.index, dtype=object)
    if len(active):
        values = np.sort(active.to_numpy())
        # inverted-CDF quantiles: edge j is a count that some user has
        edges = [values[max(int(np.ceil(j * len(values) / quantiles)) - 1, 0)]
                 for j in range(1, quantiles + 1)]
        which = np.searchsorted(np.asarray(edges), active.to_numpy(), side="left")
        for j in np.unique(which):
            members = active.index[which == j]
            low, high = int(active[members].min()), int(active[members].max())
            span = f"{low}" if low == high else f"{low}-{high}"
            groups[members] = f"Q{j + 1} ({span} row{'s' if high != 1 else ''})"
    return _frame("user", groups)


def cold_start_groups(train: Any, users: Iterable[Any], n: int = 5, *,
                      user_col: str = "user", item_col: str = "item") -> pd.DataFrame:
    """``users`` as ``"cold (<n)"`` (fewer than ``n`` training rows, none included) or
    ``"warm"``.

    Example:
        >>> cold_start_groups({"user": [1, 1, 2], "item": [1, 2, 3]}, [1, 2, 3], n=2)
        ...     # doctest: +NORMALIZE_WHITESPACE
           user      group
        0     1       warm
        1     2  cold (<2)
        2     3  cold (<2)
    """
    if not isinstance(n, int | np.integer) or n < 1:
        raise ReceValError(f"n must be a positive integer; got {n!r}")
    counts = _counts_for(train, users, user_col, item_col)
    groups = pd.Series(np.where(counts.to_numpy() < n, f"cold (<{n})", "warm"),
                       index=counts.index, dtype=object)
    return _frame("user", groups)


def popularity_groups(train: Any, head_share: float = 0.2, *, user_col: str = "user",
                      item_col: str = "item") -> pd.DataFrame:
    """Items as ``"head"`` or ``"tail"`` by their share of the training interactions.

    Items sorted by training rows, most first: the head is the shortest run of them that
    together make at least ``head_share`` of all training rows, plus every item with as many
    rows as the last one (ties are never split); the rest is the tail (Abdollahpouri et al.'s
    short head). Per item, not per user: evaluate the truth restricted to head or tail items
    (:func:`truth_by_items`) to see how a model does on each.

    Example:
        >>> train = {"user": range(10), "item": [1, 1, 1, 1, 1, 2, 2, 2, 3, 4]}
        >>> popularity_groups(train, 0.5).values.tolist()
        [[1, 'head'], [2, 'tail'], [3, 'tail'], [4, 'tail']]
        >>> popularity_groups(train, 0.6).values.tolist()
        [[1, 'head'], [2, 'head'], [3, 'tail'], [4, 'tail']]
    """
    if not 0 < float(head_share) <= 1:
        raise ReceValError(f"head_share must be in (0, 1]; got {head_share!r}")
    counts = read_train(train, user_col=user_col, item_col=item_col).item_counts()
    ordered = counts.sort_values(ascending=False, kind="stable").to_numpy()
    reach = int(np.searchsorted(np.cumsum(ordered), head_share * ordered.sum(), side="left"))
    last = ordered[min(reach, len(ordered) - 1)]
    groups = pd.Series(np.where(counts.to_numpy() >= last, "head", "tail"), index=counts.index,
                       dtype=object)
    return _frame("item", groups)


def truth_by_items(truth: pd.DataFrame, groups: pd.DataFrame, *,
                   item_col: str = "item") -> dict[str, pd.DataFrame]:
    """The truth rows of each item group (``groups``: columns ``item`` and ``group``, such as
    :func:`popularity_groups`); items in no group are left out.

    Evaluating the predictions against ``truth_by_items(...)["tail"]`` scores how a model finds
    the tail items a user holds out (the head items in its lists then count as misses).

    Example:
        >>> truth = pd.DataFrame({"user": [1, 1, 2], "item": [1, 3, 3]})
        >>> groups = pd.DataFrame({"item": [1, 3], "group": ["head", "tail"]})
        >>> {g: t["item"].tolist() for g, t in truth_by_items(truth, groups).items()}
        {'head': [1], 'tail': [3, 3]}
    """
    label = pd.Series(groups["group"].to_numpy(), index=groups["item"].to_numpy())
    which = truth[item_col].map(label)
    return {str(g): truth[which == g] for g in pd.unique(label) if (which == g).any()}


def _counts_for(train: Any, users: Iterable[Any] | None, user_col: str,
                item_col: str) -> pd.Series:
    counts = read_train(train, user_col=user_col, item_col=item_col).user_counts()
    if users is None:
        return counts
    wanted = np.asarray(pd.unique(pd.Series(list(users), dtype=object)))
    if len(wanted) and all(isinstance(u, int | np.integer) for u in wanted):
        wanted = wanted.astype(np.int64)
    at = index_of(wanted, counts.index.to_numpy())
    return pd.Series(np.where(at >= 0, counts.to_numpy()[np.maximum(at, 0)], 0), index=wanted)


def _frame(key: str, groups: pd.Series) -> pd.DataFrame:
    return pd.DataFrame({key: groups.index.to_numpy(), "group": groups.to_numpy()})


def user_seed(seed: int, user: Any) -> np.random.Generator:
    """A random generator for one user: its stream depends on ``seed`` and the user id only,
    so a user's draw is the same whichever other users are drawn for (:mod:`receval.baselines`).

    Example:
        >>> a = user_seed(0, "u1").integers(1000); b = user_seed(0, "u1").integers(1000)
        >>> bool(a == b)
        True
    """
    if isinstance(user, int | np.integer):
        key = [0, int(user) & 0xFFFFFFFFFFFFFFFF]
    else:
        digest = hashlib.blake2b(str(user).encode("utf-8"), digest_size=8).digest()
        key = [1, int.from_bytes(digest, "little")]
    return keyed(int(seed) & 0xFFFFFFFFFFFFFFFF, *key)


def audit_line(counts: Mapping[str, Any], rows: Mapping[str, Any] | None = None) -> str:
    """The training audit (``Result.counts["train"]``) in one line, for the terminal; ``rows``
    (``counts["rows"]``) adds the prediction rows excluded by ``exclude_train``.

    Example:
        >>> audit_line({"rows": 10, "users": 2, "items": 5, "predictions_in_train": 3,
        ...             "truth_in_train": 0, "users_without_train": 1,
        ...             "items_without_train": 2}, {"predictions": 12})
        'train audit: 10 rows, 2 users, 5 items; predictions in train 3 (25% of 12), truth in \
train 0, users without train 1, items without train 2'
    """
    total = (rows or {}).get("predictions")
    share = f" ({counts['predictions_in_train'] / total:.0%} of {total:,})" if total else ""
    parts = [f"predictions in train {counts['predictions_in_train']:,}{share}",
             f"truth in train {counts['truth_in_train']:,}",
             f"users without train {counts['users_without_train']:,}",
             f"items without train {counts['items_without_train']:,}"]
    if "train_after_test" in counts:
        parts.append(f"train after test {counts['train_after_test']:,}")
    excluded = (rows or {}).get("predictions_excluded_train")
    if excluded is not None:
        parts.append(f"excluded from the lists {excluded:,} (exclude_train)")
    return (f"train audit: {counts['rows']:,} rows, {counts['users']:,} users, "
            f"{counts['items']:,} items; " + ", ".join(parts))


def parse_train_columns(text: str | None) -> dict[str, str] | None:
    """``"user=userId,timestamp=ts"`` (a ``--train-columns`` value) as a dict.

    Example:
        >>> parse_train_columns("user=userId, timestamp = ts")
        {'user': 'userId', 'timestamp': 'ts'}
        >>> parse_train_columns("userId")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: --train-columns takes ROLE=NAME pairs separated by \
commas (e.g. user=userId,item=movieId,timestamp=ts); got 'userId'
    """
    if text is None:
        return None
    out: dict[str, str] = {}
    for pair in text.split(","):
        role, sep, name = pair.partition("=")
        if not sep or not role.strip() or not name.strip():
            raise ReceValError("--train-columns takes ROLE=NAME pairs separated by commas "
                               f"(e.g. user=userId,item=movieId,timestamp=ts); got {text!r}")
        out[role.strip()] = name.strip()
    return out


#: the built-in strata by name (``evaluate(strata="activity")``): user -> group from ``train``
STRATA = ("activity", "cold")


def resolve_strata(strata: Any, train: Any, users: Iterable[Any]) -> Any:
    """A built-in stratum name as its user -> group Series; anything else as it is.

    ``"activity"``: :func:`activity_groups` (quartiles of training rows per user;
    ``"activity:10"``: deciles); ``"cold"``: :func:`cold_start_groups` (fewer than 5 training
    rows; ``"cold:3"``: fewer than 3). Both cover ``users`` (the users of the evaluation's
    inputs) and need the training data.

    Example:
        >>> resolve_strata("cold", {"user": [1] * 5 + [2], "item": range(6)}, [1, 2]).to_dict()
        {1: 'warm', 2: 'cold (<5)'}
        >>> resolve_strata("cold", None, [1])
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: strata='cold' groups users by their training data: \
pass train=
    """
    if not isinstance(strata, str):
        return strata
    name, _, arg = strata.partition(":")
    if name not in STRATA or (arg and not arg.isdigit()):
        raise ReceValError(f"strata={strata!r} is not a built-in stratum (activity, "
                           "activity:N, cold, cold:N); pass a user -> group mapping (a dict, a "
                           "Series or a frame with user and group columns)")
    if train is None:
        raise ReceValError(f"strata={strata!r} groups users by their training data: pass train=")
    if name == "activity":
        frame = activity_groups(train, int(arg or 4), users=users)
    else:
        frame = cold_start_groups(train, users, int(arg or 5))
    # a Series (index: user) whatever the evaluation's user column is called
    return pd.Series(frame["group"].to_numpy(), index=frame["user"].to_numpy(), name="group")


def users_of(*sides: Columns) -> np.ndarray:
    """The distinct users of the sides, in order of appearance (the users a stratum covers).

    Example:
        >>> from receval.data.columns import read_sides
        >>> t, p = read_sides({"user": [2, 1], "item": [1, 1]},
        ...                   {"user": [3, 2], "item": [1, 1], "score": [1.0, 1.0]})
        >>> users_of(t, p).tolist()
        [2, 1, 3]
    """
    ids = [plain_ids(side.users) for side in sides]
    return np.asarray(pd.unique(np.concatenate(ids) if ids else np.zeros(0, np.int64)))


def with_truth_timestamps(truth: pa.Table, path: str | os.PathLike[str], train: Training, *,
                          user_col: str = "user", item_col: str = "item",
                          truth_columns: Mapping[str, str] | None = None,
                          timestamp_col: str = "timestamp", header: bool = True,
                          delimiter: str | None = None) -> pa.Table:
    """The truth table read from ``path`` (user, item, rating), plus the file's timestamp column
    as ``timestamp`` when ``train`` has timestamps: the column named as the training data's
    (``timestamp_col``), else ``timestamp``. What the command line passes to evaluate.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
        >>> _ = p.write_text("user,item,ts\\n1,2,30\\n")
        >>> t = read_train({"user": [1], "item": [3], "ts": [40]}, timestamp_col="ts")
        >>> from receval import io
        >>> table = with_truth_timestamps(io.read_truth(p), p, t, timestamp_col="ts")
        >>> table.column("timestamp").to_pylist()
        [30.0]
    """
    if train.timestamps is None:
        return truth
    for name in dict.fromkeys([timestamp_col, "timestamp"]):
        stamps = truth_timestamps(path, truth.num_rows, user_col=user_col, item_col=item_col,
                                  truth_columns=truth_columns, timestamp_col=name,
                                  header=header, delimiter=delimiter)
        if stamps is not None:
            values, known = stamps
            column = np.where(known, values, np.nan) if values.dtype.kind == "f" else values
            return truth.append_column("timestamp", pa.array(column))
    return truth
