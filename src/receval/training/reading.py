"""Reading the training data: :class:`Training` (plain arrays, as the other sides are read),
:func:`read_train` (frames, Arrow tables, dicts of arrays or files through :mod:`receval.io`),
the truth's timestamps, and the id helpers the audit and the strata builders share.

Example:
    >>> t = read_train({"user": [1, 1, 2], "item": [10, 11, 10]})
    >>> len(t), t.in_train(np.array([1, 2, 2]), np.array([10, 10, 12])).tolist()
    (3, [True, True, False])
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval.data.columns import IdArray, read_columns
from receval.data.encode import encode_users
from receval.exceptions import ReceValError
from receval.io.values import bad_rows, frame_row
from receval.io.wanted import Wanted, clean_name

#: the roles ``train_columns`` / ``--train-columns`` may name
TRAIN_ROLES = ("user", "item", "rating", "timestamp")


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
