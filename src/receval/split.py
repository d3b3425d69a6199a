"""Train/test splits of interaction data: seeded, independent of row order, each with its audit.

Five splitters, one result type (:class:`Split`: ``train``, ``test``, optional ``validation``
pandas DataFrames holding every input column, and ``audit``):

- :func:`random_holdout`: per user, a random fraction or count of the rows goes to test;
- :func:`temporal_user`: per user, the last fraction or count of the rows by time;
- :func:`leave_last_out`: per user, the last ``n`` rows by time (``temporal_user`` with a count);
- :func:`temporal_global`: one cut on the global timeline (``t >= cut`` is test), an optional
  validation cut before it;
- :func:`kfold_users`: users dealt into ``k`` folds; each fold's users hold out rows (random or
  last by time) and everything else trains.

**Determinism.** A split depends on the rows and the seed only, never on the order of the rows:
every random choice is a 64-bit key hashed from ``(seed, user, item, timestamp, occurrence)``
(splitmix64 over a blake2b digest of each string id), and ties are broken by that key. The same
rows shuffled give the same split; a row's fate does not depend on other users' rows either.

**Counts per user.** ``test_fraction`` holds out ``floor(fraction * n_u + 0.5)`` rows of a user
with ``n_u`` rows (rounding half up), ``test_count`` holds out ``test_count``; either way at
most ``n_u - min_train`` (default ``min_train=1``: every user keeps a training row; a user with
``n_u <= min_train`` rows stays whole in train and is counted in ``users.kept_whole_in_train``).

**Audit** (``Split.audit``, the same keys for every method): rows in and out (``lost`` and
``duplicated`` are recounted from the row positions, and are 0), users and items per side,
users and items only in test (cold), test rows whose (user, item) is also a training row
(``test_rows_in_train``: repeated interactions), and with a timestamp column:
``train_after_test`` (training rows dated after their user's first test row, the leak Ji et
al., TOIS 2023 describe), ``train_after_test_start`` (training rows dated after the earliest
test row: the global timeline), and the ties at the cut and how they were resolved.

Example:
    >>> import pandas as pd
    >>> ratings = pd.DataFrame({"user": [1, 1, 1, 2, 2], "item": [1, 2, 3, 1, 4],
    ...                         "timestamp": [10, 20, 30, 15, 25]})
    >>> s = temporal_user(ratings, test_count=1)
    >>> sorted(zip(s.test.user, s.test.item))
    [(1, 3), (2, 4)]
    >>> s.audit["rows"]
    {'input': 5, 'train': 3, 'test': 2, 'lost': 0, 'duplicated': 0}
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.scalars import plain

#: the splitters by their command-line name
METHODS = ("random-user", "temporal-user", "leave-last-out", "temporal-global", "kfold-user")
#: how rows tied in time across a per-user boundary are resolved
TIES = ("random", "test", "train")


@dataclass
class Split:
    """One split: ``train``, ``test`` and, when asked, ``validation`` (pandas DataFrames with
    every input column, rows in input order, the input's index kept), and ``audit``.

    Example:
        >>> s = random_holdout({"user": [1, 1, 2, 2], "item": [1, 2, 1, 2]}, test_count=1)
        >>> len(s.train), len(s.test), s.validation is None
        (2, 2, True)
    """

    train: pd.DataFrame
    test: pd.DataFrame
    audit: dict[str, Any]
    validation: pd.DataFrame | None = field(default=None)

    def lines(self) -> list[str]:
        """The audit as short human-readable lines (what ``receval split`` prints).

        Example:
            >>> s = random_holdout({"user": [1, 1, 2], "item": [1, 2, 1]}, test_count=1)
            >>> s.lines()[1]
            'rows: 3 in = 2 train + 1 test (lost 0, duplicated 0)'
        """
        a = self.audit
        rows, users, items = a["rows"], a["users"], a["items"]
        parts = [f"{rows['train']} train"]
        if "validation" in rows:
            parts.append(f"{rows['validation']} validation")
        parts.append(f"{rows['test']} test")
        out = [f"split: {a['method']} {_params_text(a['parameters'])}".rstrip(),
               f"rows: {rows['input']} in = {' + '.join(parts)} "
               f"(lost {rows['lost']}, duplicated {rows['duplicated']})",
               f"users: {users['input']} in, {users['train']} in train, {users['test']} in "
               f"test, {users['only_in_test']} only in test, {users['kept_whole_in_train']} "
               "kept whole in train (too few rows)",
               f"items: {items['input']} in, {items['only_in_test']} only in test (cold; "
               f"{items['test_rows_cold_item']} test rows)",
               f"test rows whose (user, item) is also a training row: "
               f"{a['test_rows_in_train']}"]
        time = a.get("time")
        if time:
            out.append(f"time ({time['column']}): {time['train_after_test']} train rows dated "
                       f"after their user's first test row ({time['users_train_after_test']} "
                       f"users); {time['train_after_test_start']} train rows after the first "
                       f"test row overall ({time['test_start']})")
            ties = time.get("ties")
            if ties:
                out.append("ties: " + ", ".join(f"{k} {v}" for k, v in ties.items()))
        return out


def _params_text(params: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items() if v is not None)


# --- the splitters ---------------------------------------------------------------------------


def random_holdout(data: Any, *, test_fraction: float | None = None,
                   test_count: int | None = None, seed: int = 0, min_train: int = 1,
                   user_col: str = "user", item_col: str = "item",
                   timestamp_col: str | None = "timestamp") -> Split:
    """Per user, a seeded random ``test_fraction`` (or ``test_count``) of the rows to test.

    ``data``: a pandas/polars DataFrame, a pyarrow Table, a dict of columns or a path (CSV, TSV,
    Parquet, JSON Lines). The timestamp column, when present, is only audited.

    Example:
        >>> data = {"user": [1] * 5 + [2] * 5, "item": list(range(10))}
        >>> a = random_holdout(data, test_fraction=0.4, seed=1)
        >>> b = random_holdout({k: v[::-1] for k, v in data.items()}, test_fraction=0.4, seed=1)
        >>> len(a.test), sorted(a.test.item) == sorted(b.test.item)
        (4, True)
    """
    frame = _Frame.read(data, user_col, item_col, timestamp_col, need_time=False)
    n_test = frame.n_test(test_fraction, test_count, min_train)
    order = np.lexsort((frame.key(seed), frame.user_codes))
    test = frame.first_of_each_user(order, n_test)
    params = {"test_fraction": test_fraction, "test_count": test_count, "seed": seed,
              "min_train": min_train}
    return frame.result("random-user", params, test=test, kept=frame.kept_whole(n_test))


def temporal_user(data: Any, *, test_fraction: float | None = None,
                  test_count: int | None = None, ties: str = "random", seed: int = 0,
                  min_train: int = 1, user_col: str = "user", item_col: str = "item",
                  timestamp_col: str = "timestamp") -> Split:
    """Per user, the last ``test_fraction`` (or ``test_count``) of the rows by time to test.

    Rows of one user with the same timestamp are ordered by the seeded key. When a tie group
    straddles the user's boundary, ``ties`` decides: ``"random"`` keeps the seeded order (the
    counts are exact), ``"test"`` moves the whole group to test, ``"train"`` to train; the audit
    counts the groups and rows concerned (``time.ties``).

    Example:
        >>> data = {"user": [1, 1, 1], "item": [1, 2, 3], "timestamp": [1, 2, 2]}
        >>> temporal_user(data, test_count=1, ties="test").test.item.tolist()
        [2, 3]
        >>> temporal_user(data, test_count=1, ties="train").test.item.tolist()
        []
    """
    if ties not in TIES:
        raise ReceValError(f"ties must be one of {', '.join(TIES)}; got {ties!r}")
    frame = _Frame.read(data, user_col, item_col, timestamp_col, need_time=True)
    n_test = frame.n_test(test_fraction, test_count, min_train)
    test, tie_audit = frame.last_by_time(n_test, seed, ties)
    params = {"test_fraction": test_fraction, "test_count": test_count, "ties": ties,
              "seed": seed, "min_train": min_train}
    return frame.result("temporal-user", params, test=test, kept=frame.kept_whole(n_test),
                        ties=tie_audit)


def leave_last_out(data: Any, n: int = 1, *, ties: str = "random", seed: int = 0,
                   min_train: int = 1, user_col: str = "user", item_col: str = "item",
                   timestamp_col: str = "timestamp") -> Split:
    """Per user, the last ``n`` rows by time to test (leave-last-n-out); a user with at most
    ``min_train`` rows stays whole in train. Ties as in :func:`temporal_user`.

    Example:
        >>> data = {"user": [1, 1, 2], "item": [1, 2, 3], "timestamp": [5, 9, 1]}
        >>> s = leave_last_out(data)
        >>> s.test.item.tolist(), s.audit["users"]["kept_whole_in_train"]
        ([2], 1)
    """
    split = temporal_user(data, test_count=n, ties=ties, seed=seed, min_train=min_train,
                          user_col=user_col, item_col=item_col, timestamp_col=timestamp_col)
    split.audit["method"] = "leave-last-out"
    split.audit["parameters"] = {"n": n, "ties": ties, "seed": seed, "min_train": min_train}
    return split


def temporal_global(data: Any, *, test_start: Any = None, test_fraction: float | None = None,
                    validation_start: Any = None, validation_fraction: float | None = None,
                    user_col: str = "user", item_col: str = "item",
                    timestamp_col: str = "timestamp") -> Split:
    """One cut on the global timeline: rows dated ``t >= test_start`` are test, rows with
    ``validation_start <= t < test_start`` validation, the rest train.

    A cut is given as a time (a number for a numeric column, a date for a date column) or as
    the fraction of rows after it: the cut is then the timestamp of the row at position
    ``n - floor(fraction * n + 0.5)`` of the rows sorted by time, and every row tied with it
    goes after the cut too (the audit says how many: ``time.ties.at_test_cut``). No training
    row is dated at or after a cut (``time.train_after_test_start`` is 0 by construction and
    recounted); users and items first seen after the cut are counted as cold.

    Example:
        >>> data = {"user": [1, 1, 2, 2], "item": [1, 2, 1, 3], "timestamp": [1, 5, 3, 5]}
        >>> s = temporal_global(data, test_start=5)
        >>> s.test.item.tolist(), s.audit["time"]["ties"]["at_test_cut"]
        ([2, 3], 2)
        >>> temporal_global(data, test_fraction=0.25).audit["rows"]["test"]  # 5 is tied
        2
    """
    if validation_fraction is not None and test_fraction is None:
        raise ReceValError("validation_fraction needs test_fraction (the validation rows come "
                           "just before the test rows); with test_start give validation_start")
    frame = _Frame.read(data, user_col, item_col, timestamp_col, need_time=True)
    test_cut = frame.cut(test_start, test_fraction, "test")
    assert test_cut is not None
    val_cut = frame.cut(validation_start, validation_fraction, "validation",
                        before=test_fraction)
    times = frame.times
    test = times >= test_cut
    validation = None
    if val_cut is not None:
        if val_cut > test_cut:
            raise ReceValError(f"the validation cut ({frame.show_time(val_cut)}) is after the "
                               f"test cut ({frame.show_time(test_cut)}); it must come first")
        validation = (times >= val_cut) & ~test
    ties = {"at_test_cut": int(np.count_nonzero(times == test_cut)),
            "resolved": "rows dated at a cut go after it (t >= cut)"}
    if val_cut is not None:
        ties = {"at_validation_cut": int(np.count_nonzero(times == val_cut)), **ties}
    params = {"test_start": frame.show_time(test_cut), "test_fraction": test_fraction,
              "validation_start": None if val_cut is None else frame.show_time(val_cut),
              "validation_fraction": validation_fraction}
    return frame.result("temporal-global", params, test=test, validation=validation,
                        kept=np.zeros(frame.n_users, dtype=bool), ties=ties,
                        cuts={"test": test_cut, "validation": val_cut})


def kfold_users(data: Any, k: int = 5, *, test_fraction: float | None = None,
                test_count: int | None = None, holdout: str = "random", ties: str = "random",
                seed: int = 0, min_train: int = 1, user_col: str = "user",
                item_col: str = "item", timestamp_col: str | None = "timestamp") -> list[Split]:
    """K-fold by user: each user's fold is a seeded hash of its id alone (:func:`user_folds`),
    so removing or adding a user moves no other user; in fold ``f``, the users of fold ``f``
    hold out ``test_fraction`` (or
    ``test_count``) of their rows, ``holdout="random"`` or ``"temporal"`` (last by time), and
    all other rows train. ``test_fraction=1, min_train=0`` holds out the users whole (cold
    users: "strong generalisation"). The folds' sizes are not equal but binomial: see
    :func:`user_folds`. A fold without users is an error (only likely with very few users).

    Example:
        >>> data = {"user": [1, 1, 2, 2, 3, 3, 4, 4], "item": [1, 2] * 4}
        >>> folds = kfold_users(data, k=2, test_count=1)
        >>> [len(f.test) for f in folds], sorted(u for f in folds for u in f.test.user)
        ([2, 2], [1, 2, 3, 4])
    """
    if holdout not in ("random", "temporal"):
        raise ReceValError(f"holdout must be 'random' or 'temporal'; got {holdout!r}")
    if ties not in TIES:
        raise ReceValError(f"ties must be one of {', '.join(TIES)}; got {ties!r}")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise ReceValError(f"k must be an integer >= 2; got {k!r}")
    frame = _Frame.read(data, user_col, item_col, timestamp_col,
                        need_time=holdout == "temporal")
    if frame.n_users < k:
        raise ReceValError(f"k={k} folds need at least {k} users; the data has {frame.n_users}")
    n_test = frame.n_test(test_fraction, test_count, min_train)
    fold_of_user = user_folds(frame.user_hash_unique, int(k), seed)
    sizes = np.bincount(fold_of_user, minlength=int(k))
    if not sizes.all():
        raise ReceValError(
            f"fold {int(np.argmin(sizes))} of k={k} holds no user ({frame.n_users} users): a "
            "user's fold is a hash of its id alone, so with this few users some fold can be "
            "empty; use fewer folds or another seed")
    if holdout == "random":
        order = np.lexsort((frame.key(seed), frame.user_codes))
        held = frame.first_of_each_user(order, n_test)
        tie_audit = None
    else:
        held, tie_audit = frame.last_by_time(n_test, seed, ties)
    out = []
    for f in range(int(k)):
        in_fold = fold_of_user == f
        test = held & in_fold[frame.user_codes]
        params = {"k": int(k), "fold": f, "holdout": holdout, "test_fraction": test_fraction,
                  "test_count": test_count, "seed": seed, "min_train": min_train}
        if holdout == "temporal":
            params["ties"] = ties
        out.append(frame.result("kfold-user", params, test=test,
                                kept=frame.kept_whole(n_test) & in_fold,
                                ties=None if tie_audit is None else dict(tie_audit)))
    return out


def user_folds(user_hashes: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """The fold (``0..k-1``) of each user from the 64-bit hash of its id: splitmix64 of the
    hash keyed by the seed, modulo ``k``. A user's fold depends on its id and the seed alone,
    never on the other users: removing a user moves no other user to another fold.

    The price is balance: each fold's size is binomial, ``n/k`` give or take
    ``sqrt(n (1/k)(1 - 1/k))`` (one standard deviation): 20,000 +- 126 users per fold for
    100,000 users in 5 folds (0.6 %), 200 +- 13 for 1,000 users (6 %). Dealing users
    round-robin would make the sizes equal, but then removing one user shifts most others.

    Example:
        >>> hashes = _hash_values(np.arange(10_000))
        >>> folds = user_folds(hashes, 5, seed=0)
        >>> bool(np.bincount(folds).min() > 1_900)
        True
        >>> bool((user_folds(hashes[1:], 5) == folds[1:]).all())  # user 0 removed: none moves
        True
    """
    key = _mix(_seed_word(seed, "fold"), np.asarray(user_hashes, dtype=np.uint64))
    return (key % np.uint64(k)).astype(np.int64)


# --- reading ---------------------------------------------------------------------------------


#: ``DataFrame.attrs`` key of a frame read from a file: where its rows come from, so an error
#: names the file's line rather than a row index
SOURCE_ATTR = "receval.source"
_SOURCE_META = b"receval.source"


def read_interactions(path: str | os.PathLike[str], *, format: str = "auto",
                      user_col: str = "user", item_col: str = "item",
                      delimiter: str | None = None) -> pd.DataFrame:
    """Every column of an interactions file (CSV, TSV, Parquet, JSON Lines; gzip welcome) as a
    pandas DataFrame; the user and item ids are read as text and become integers only when
    every id is a canonical integer (``"007"`` stays a string, as in :mod:`receval.io`). The
    ``'`` a receval writer puts before a CSV/TSV cell that starts like a formula is taken off
    (:mod:`receval.io.formulas`), so a file ``receval split`` wrote reads back as it was.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
        >>> _ = p.write_text("user,item,rating,timestamp\\n1,007,4.5,100\\n'-a,x,1,2\\n")
        >>> read_interactions(p).to_dict("records")[1]
        {'user': '-a', 'item': 'x', 'rating': 1.0, 'timestamp': 2}
    """
    return interactions_frame(read_interactions_table(path, format=format, user_col=user_col,
                                                      item_col=item_col, delimiter=delimiter),
                              user_col, item_col)


def read_interactions_table(path: str | os.PathLike[str], *, format: str = "auto",
                            user_col: str = "user", item_col: str = "item",
                            delimiter: str | None = None) -> Any:
    """The interactions file as an Arrow table, every column in the type the file gives it
    (what ``receval split`` writes back: an integer column stays integers, nulls and all).
    CSV/TSV ids are read as text, narrowed to int64 when every id is a canonical integer, and
    every text cell has the formula-neutralising ``'`` taken off.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
        >>> _ = p.write_text("user,item,n\\n'@b,i,9007199254740993\\nu2,j,\\n")
        >>> t = read_interactions_table(p)
        >>> t.column("user").to_pylist(), t.column("n").type, t.column("n").to_pylist()
        (['@b', 'u2'], DataType(int64), [9007199254740993, None])
    """

    from receval.io.frames import FRAME_SOURCE, read_frame

    table = read_frame(path, "interactions", ids=(user_col, item_col), format=format,
                       delimiter=delimiter)
    where = (table.schema.metadata or {})[FRAME_SOURCE]
    return table.replace_schema_metadata({**(table.schema.metadata or {}),
                                          _SOURCE_META: where})


def interactions_frame(table: Any, user_col: str = "user", item_col: str = "item") -> pd.DataFrame:
    """A table from :func:`read_interactions_table` as the pandas DataFrame the splitters take:
    ids narrowed to int64 where every id is a canonical integer, rows indexed ``0..n-1`` (the
    positions in ``table``), and ``attrs`` saying which file the rows come from.

    Example:
        >>> import pyarrow as pa
        >>> interactions_frame(pa.table({"user": ["1", "2"], "item": ["a", "b"]})).user.tolist()
        [1, 2]
    """
    import json

    from receval.io.ids import narrow

    for name in (user_col, item_col):
        if name in table.column_names:
            i = table.schema.get_field_index(name)
            table = table.set_column(i, name, narrow(table.column(i).combine_chunks()))
    meta = (table.schema.metadata or {}).get(_SOURCE_META)
    df = table.to_pandas()
    if meta is not None:
        df.attrs[SOURCE_ATTR] = json.loads(meta)
    return df


def _where(df: pd.DataFrame) -> Any:
    """Where row ``i`` of ``df`` is: ``line N of FILE`` for a frame read from a file, else
    ``row i``."""
    from receval.io.lines import locator
    from receval.io.values import frame_row

    source = df.attrs.get(SOURCE_ATTR)
    if not source:
        return frame_row
    return locator(Path(source["path"]), source["kind"], source["header_lines"])


# --- the work --------------------------------------------------------------------------------


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise on uint64 (wrapping arithmetic)."""
    z = x.astype(np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _mix(*words: np.ndarray | np.uint64) -> np.ndarray:
    """One 64-bit hash of several words (each an array or one word), in order."""
    h = np.zeros(1, dtype=np.uint64)
    for w in words:
        h = _splitmix(h ^ np.asarray(w, dtype=np.uint64))
    return h


def _seed_word(seed: int, purpose: str) -> np.uint64:
    """A word from the seed and what it is used for (random holdout, folds, ties)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ReceValError(f"seed must be a non-negative integer; got {seed!r}")
    digest = hashlib.blake2b(f"{int(seed)}:{purpose}".encode(), digest_size=8).digest()
    return np.uint64(int.from_bytes(digest, "little"))


def _hash_values(values: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each value: integers by splitmix64, anything else by blake2b of its
    type and text, so the hash never depends on where the value is in the data."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iu":
        return _splitmix(arr.astype(np.int64).view(np.uint64))
    if arr.dtype.kind == "f":
        return _splitmix(arr.astype(np.float64).view(np.uint64))
    if arr.dtype.kind == "M":
        return _splitmix(arr.view(np.int64).view(np.uint64))
    out = np.empty(len(arr), dtype=np.uint64)
    for i, v in enumerate(arr.tolist()):
        kind = "int" if isinstance(v, int) else type(v).__name__
        digest = hashlib.blake2b(f"{kind}:{v}".encode(), digest_size=8).digest()
        out[i] = int.from_bytes(digest, "little")
    return out


def _codes(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the sorted distinct values (independent of row order), and those values."""
    try:
        codes, uniques = pd.factorize(series, sort=True)
        return codes.astype(np.int64), np.asarray(uniques.to_numpy())
    except TypeError:  # mixed types (1 and "1"): sorted by type and text
        codes, _ = pd.factorize(series.map(lambda v: f"{type(v).__name__}:{v}"), sort=True)
        first = np.unique(codes, return_index=True)[1]
        return codes.astype(np.int64), series.to_numpy(dtype=object)[first]


def _round_half_up(x: np.ndarray) -> np.ndarray:
    return np.floor(x + 0.5).astype(np.int64)


class _Frame:
    """The input with its id codes, hashes and times, and the result builder."""

    def __init__(self, df: pd.DataFrame, user_col: str, item_col: str,
                 timestamp_col: str | None, times: np.ndarray | None, kind: str) -> None:
        self.df, self.user_col, self.item_col = df, user_col, item_col
        self.timestamp_col = timestamp_col
        self.times, self.time_kind = times, kind
        self.n = len(df)
        self.user_codes, users = _codes(df[user_col])
        self.item_codes, items = _codes(df[item_col])
        self.n_users, self.n_items = len(users), len(items)
        self.user_hash_unique = _hash_values(users)
        self.item_hash_unique = _hash_values(items)
        self.user_sizes = np.bincount(self.user_codes, minlength=self.n_users)

    @classmethod
    def read(cls, data: Any, user_col: str, item_col: str, timestamp_col: str | None, *,
             need_time: bool) -> _Frame:
        df = _as_frame(data, user_col, item_col)
        times, kind = None, "none"
        if timestamp_col is not None and timestamp_col in df.columns:
            times, kind = _times(df[timestamp_col], timestamp_col, _where(df))
        elif need_time:
            raise ReceValError(f"this split needs a timestamp column {timestamp_col!r}; the "
                               f"columns are {', '.join(map(repr, df.columns))} (pass "
                               "timestamp_col= / --timestamp-col)")
        return cls(df, user_col, item_col, timestamp_col, times, kind)

    # -- keys and counts

    def occurrence(self) -> np.ndarray:
        """0, 1, ... over rows that share (user, item, timestamp), in an order of their other
        columns, so exact repeats get distinct keys without depending on row order."""
        t = self.times if self.times is not None else np.zeros(self.n)
        keys = pd.DataFrame({"u": self.user_codes, "i": self.item_codes, "t": t})
        dup = keys.duplicated(keep=False).to_numpy()
        occ = np.zeros(self.n, dtype=np.int64)
        if dup.any():
            rows = np.flatnonzero(dup)
            text = self.df.iloc[rows].astype(str).agg("\x1f".join, axis=1).to_numpy()
            sub = keys.iloc[rows].assign(text=text, row=rows)
            sub = sub.sort_values(["u", "i", "t", "text"], kind="stable")
            occ[sub["row"].to_numpy()] = sub.groupby(["u", "i", "t"]).cumcount().to_numpy()
        return occ

    def key(self, seed: int, purpose: str = "holdout") -> np.ndarray:
        time_hash = (np.zeros(self.n, dtype=np.uint64) if self.times is None
                     else _hash_values(self.times))
        return _mix(_seed_word(seed, purpose), self.user_hash_unique[self.user_codes],
                    self.item_hash_unique[self.item_codes], time_hash,
                    self.occurrence().view(np.uint64))

    def n_test(self, fraction: float | None, count: int | None, min_train: int) -> np.ndarray:
        """Rows each user holds out."""
        if isinstance(min_train, bool) or not isinstance(min_train, int | np.integer) \
                or min_train < 0:
            raise ReceValError(f"min_train must be a non-negative integer; got {min_train!r}")
        if (fraction is None) == (count is None):
            raise ReceValError("give exactly one of test_fraction and test_count")
        if fraction is not None:
            if isinstance(fraction, bool) or not isinstance(fraction, int | float) \
                    or not 0 < fraction <= 1:
                raise ReceValError(f"test_fraction must be in (0, 1]; got {fraction!r}")
            wanted = _round_half_up(fraction * self.user_sizes.astype(np.float64))
        else:
            if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 1:
                raise ReceValError(f"test_count must be a positive integer; got {count!r}")
            wanted = np.full(self.n_users, int(count), dtype=np.int64)
        return np.clip(np.minimum(wanted, self.user_sizes - min_train), 0, None)

    def kept_whole(self, n_test: np.ndarray) -> np.ndarray:
        return n_test == 0

    def first_of_each_user(self, order: np.ndarray, n_test: np.ndarray) -> np.ndarray:
        """Mask of the first ``n_test[u]`` rows of each user in ``order`` (grouped by user)."""
        starts = np.concatenate([[0], np.cumsum(self.user_sizes)[:-1]])
        users = self.user_codes[order]
        position = np.arange(self.n) - starts[users]
        mask = np.zeros(self.n, dtype=bool)
        mask[order] = position < n_test[users]
        return mask

    def last_by_time(self, n_test: np.ndarray, seed: int,
                     ties: str) -> tuple[np.ndarray, dict[str, Any]]:
        """The last ``n_test[u]`` rows of each user by (time, seeded key), ties resolved."""
        assert self.times is not None
        key = self.key(seed, "ties")
        # latest first: the first n_test rows of each user in this order are its test rows
        order = np.lexsort((~key, -self._time_rank(), self.user_codes))
        test = self.first_of_each_user(order, n_test)
        # a tie group straddles the boundary when the user's first test row and last train row
        # share a time
        ranked = self._time_rank()
        first_test = np.full(self.n_users, np.iinfo(np.int64).max)
        np.minimum.at(first_test, self.user_codes[test], ranked[test])
        last_train = np.full(self.n_users, np.iinfo(np.int64).min)
        np.maximum.at(last_train, self.user_codes[~test], ranked[~test])
        straddles = first_test == last_train
        in_group = straddles[self.user_codes] & (ranked == first_test[self.user_codes])
        audit = {"policy": ties, "groups_at_boundary": int(straddles.sum()),
                 "rows_in_those_groups": int(in_group.sum())}
        if ties == "test":
            audit["moved_to_test"] = int((in_group & ~test).sum())
            test = test | in_group
        elif ties == "train":
            audit["moved_to_train"] = int((in_group & test).sum())
            test = test & ~in_group
        return test, audit

    def _time_rank(self) -> np.ndarray:
        assert self.times is not None
        return np.unique(self.times, return_inverse=True)[1].astype(np.int64).ravel()

    def cut(self, at: Any, fraction: float | None, what: str,
            before: float | None = None) -> Any:
        """The cut time from a time or a fraction of the rows (``before``: the fraction after
        the later cut, which this block precedes)."""
        if at is not None and fraction is not None:
            raise ReceValError(f"give {what}_start or {what}_fraction, not both")
        if at is None and fraction is None:
            if what == "test":
                raise ReceValError("give test_start (a time) or test_fraction")
            return None
        assert self.times is not None
        if at is not None:
            return _time_value(at, self.time_kind, f"{what}_start")
        if isinstance(fraction, bool) or not isinstance(fraction, int | float) \
                or not 0 < fraction < 1:
            raise ReceValError(f"{what}_fraction must be in (0, 1); got {fraction!r}")
        share = fraction + (before or 0.0)
        if share >= 1:
            raise ReceValError(f"validation_fraction + test_fraction must be below 1; "
                               f"got {share!r}")
        n_after = int(_round_half_up(np.array([share * self.n]))[0])
        if n_after == 0:
            raise ReceValError(f"{what}_fraction={fraction} holds out no row of {self.n}")
        return np.sort(self.times)[self.n - n_after]

    def show_time(self, value: Any) -> Any:
        if self.time_kind == "datetime":
            return str(pd.Timestamp(int(value), unit="ns"))
        return plain(value)

    # -- the result

    def result(self, method: str, params: dict[str, Any], *, test: np.ndarray,
               kept: np.ndarray, validation: np.ndarray | None = None,
               ties: dict[str, Any] | None = None,
               cuts: dict[str, Any] | None = None) -> Split:
        train = ~test if validation is None else ~test & ~validation
        positions = [np.flatnonzero(train), np.flatnonzero(test)]
        if validation is not None:
            positions.append(np.flatnonzero(validation))
        everything = np.concatenate(positions)
        distinct = len(np.unique(everything))
        rows: dict[str, int] = {"input": self.n, "train": len(positions[0])}
        if validation is not None:
            rows["validation"] = len(positions[2])
        rows.update(test=len(positions[1]), lost=self.n - distinct,
                    duplicated=len(everything) - distinct)
        audit: dict[str, Any] = {"method": method, "parameters": params, "rows": rows,
                                 **self._overlap(train, test, kept)}
        if self.times is not None:
            audit["time"] = self._time_audit(train, test, ties, cuts)
        frames = {name: self.df.iloc[pos] for name, pos in
                  zip(("train", "test", "validation"), positions, strict=False)}
        return Split(train=frames["train"], test=frames["test"], audit=audit,
                     validation=frames.get("validation"))

    def _overlap(self, train: np.ndarray, test: np.ndarray, kept: np.ndarray) -> dict[str, Any]:
        train_users = np.zeros(self.n_users, dtype=bool)
        train_users[self.user_codes[train]] = True
        test_users = np.zeros(self.n_users, dtype=bool)
        test_users[self.user_codes[test]] = True
        train_items = np.zeros(self.n_items, dtype=bool)
        train_items[self.item_codes[train]] = True
        test_items = np.zeros(self.n_items, dtype=bool)
        test_items[self.item_codes[test]] = True
        pair = self.user_codes * np.int64(self.n_items) + self.item_codes
        in_train = np.isin(pair[test], pair[train])
        return {
            "users": {"input": self.n_users, "train": int(train_users.sum()),
                      "test": int(test_users.sum()),
                      "only_in_test": int((test_users & ~train_users).sum()),
                      "kept_whole_in_train": int(kept.sum())},
            "items": {"input": self.n_items, "train": int(train_items.sum()),
                      "test": int(test_items.sum()),
                      "only_in_test": int((test_items & ~train_items).sum()),
                      "test_rows_cold_item": int((~train_items[self.item_codes[test]]).sum())},
            "test_rows_in_train": int(in_train.sum()),
        }

    def _time_audit(self, train: np.ndarray, test: np.ndarray, ties: dict[str, Any] | None,
                    cuts: dict[str, Any] | None) -> dict[str, Any]:
        assert self.times is not None
        t, ranked = self.times, self._time_rank()  # ranks: exact for int64 nanoseconds
        first_test = np.full(self.n_users, np.iinfo(np.int64).max)
        np.minimum.at(first_test, self.user_codes[test], ranked[test])
        after = train & (ranked > first_test[self.user_codes])
        start = int(ranked[test].min()) if test.any() else None
        out: dict[str, Any] = {
            "column": self.timestamp_col,
            "train_after_test": int(after.sum()),
            "users_train_after_test": len(np.unique(self.user_codes[after])),
            "train_after_test_start": 0 if start is None else int((train & (ranked > start))
                                                                  .sum()),
            "test_start": None if start is None else self.show_time(t[test][
                np.argmin(ranked[test])]),
        }
        if cuts is not None:
            out["train_at_or_after_test_cut"] = int((train & (t >= cuts["test"])).sum())
        if ties is not None:
            out["ties"] = ties
        return out


def _as_frame(data: Any, user_col: str, item_col: str) -> pd.DataFrame:
    if isinstance(data, str | os.PathLike):
        df = read_interactions(data, user_col=user_col, item_col=item_col)
    elif isinstance(data, pd.DataFrame):
        df = data
    elif isinstance(data, Mapping):
        try:
            df = pd.DataFrame(dict(data))
        except (TypeError, ValueError) as err:
            raise ReceValError(f"cannot read the dict as columns: {err}") from None
    else:
        module = type(data).__module__.split(".")[0]
        if module == "polars":
            df = (data.collect() if type(data).__name__ == "LazyFrame" else data).to_pandas()
        elif module == "pyarrow":
            df = data.to_pandas()
        else:
            raise ReceValError("data must be a pandas/polars DataFrame, a pyarrow Table, a dict "
                               f"of columns or a path; got {type(data).__name__}")
    missing = [c for c in (user_col, item_col) if c not in df.columns]
    if missing:
        raise ReceValError(f"the data has no column {', '.join(map(repr, missing))}; its "
                           f"columns are {', '.join(map(repr, map(str, df.columns)))} (pass "
                           "user_col= / item_col=, or --user-col / --item-col)")
    if len(df) == 0:
        raise ReceValError("the data is empty (no rows)")
    where = _where(df)
    for name in (user_col, item_col):
        for problem, bad in (("a missing", df[name].isna().to_numpy()),
                             ("an empty", (df[name].astype(str) == "").to_numpy()
                              if df[name].dtype.kind in "OSUT" or
                              isinstance(df[name].dtype, pd.StringDtype) else None)):
            if bad is not None and bad.any():
                first = int(np.argmax(bad))
                raise ReceValError(f"column {name!r} has {problem} id at {where(first)} "
                                   f"({int(bad.sum())} rows in all); every row needs one")
    return df


def _times(series: pd.Series, name: str, where: Any = None) -> tuple[np.ndarray, str]:
    """Sortable times: numbers as they are, dates as int64 nanoseconds (UTC); a bad value is
    an error naming ``where`` it is (a file's line, or the row)."""
    if where is None:
        from receval.io.values import frame_row

        where = frame_row
    kind = series.dtype.kind
    if kind in "iu":
        return series.to_numpy().astype(np.int64), "number"
    if kind == "f":
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(values)
        if bad.any():
            first = int(np.argmax(bad))
            raise ReceValError(f"timestamp column {name!r} has a missing or infinite value at "
                               f"{where(first)} ({int(bad.sum())} rows in all)")
        return values, "number"
    if kind == "M" or isinstance(series.dtype, pd.DatetimeTZDtype):
        parsed = series
    else:
        # text: numbers or dates, whichever most values are
        numbers = pd.to_numeric(series, errors="coerce")
        parsed = pd.to_datetime(series, errors="coerce", utc=True, format="mixed")
        if numbers.notna().sum() > parsed.notna().sum():
            parsed = numbers
    if parsed.isna().any():
        bad = parsed.isna().to_numpy()
        first = int(np.argmax(bad))
        raise ReceValError(f"timestamp column {name!r} holds {series.iloc[first]!r} at "
                           f"{where(first)}, neither a number nor a date ({int(bad.sum())} rows "
                           "in all)")
    if parsed.dtype.kind in "iuf":
        return _times(parsed, name, where)
    from receval.io.times import RANGE_TEXT, series_ticks

    ticks, outside = series_ticks(parsed)
    if outside.any():
        first = int(np.argmax(outside))
        raise ReceValError(f"timestamp column {name!r} holds {series.iloc[first]!r} at "
                           f"{where(first)}, outside the dates receval can hold ({RANGE_TEXT}; "
                           f"{int(outside.sum())} rows in all)")
    return ticks, "datetime"


def _time_value(value: Any, kind: str, what: str) -> Any:
    """A cut given by the user, in the column's terms."""
    if kind == "number":
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ReceValError(f"{what} must be a number (the timestamp column is numeric); "
                               f"got {value!r}") from None
        if not math.isfinite(number):
            raise ReceValError(f"{what} must be a finite number; got {value!r}")
        return number
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError):
        raise ReceValError(f"{what} must be a date (the timestamp column holds dates); "
                           f"got {value!r}") from None
    if stamp is pd.NaT:
        raise ReceValError(f"{what} must be a date; got {value!r}")
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert("UTC").tz_localize(None)
    return np.int64(stamp.as_unit("ns").value)
