"""Next-item queries from event tables: ``"last"``, ``"next"`` and ``"rest"``.

Each user's (or, with a session column, each session's) test events are ordered by time
(ties: input order) and numbered from 1 (``step``). A query stands at one test event: its
history is every training event of the user plus the test events before it (with a session
column: the session's earlier events only), its targets are that event (``"next"``), only the
last event (``"last"``) or that event and every later one, as distinct items (``"rest"``).
A target is a *repeat* target when its item is in the query's history, else *explore*.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.sequential.frames import as_frame, require

PROTOCOLS = ("next", "last", "rest")


@dataclass(eq=False)
class Queries:
    """The queries of one protocol (made by :func:`queries`).

    Attributes:
        queries: one row per query: ``query`` (0, 1, ... in user then step order), ``user``,
            ``session`` (with a session column), ``step`` (the first target's 1-based position
            among the unit's test events), ``time`` (its timestamp) and ``history_length``
            (events before it, repeats counted).
        truth: one row per (query, target): ``query``, ``item`` and ``kind`` (``"repeat"``
            when the item is in the query's history, else ``"explore"``).
        protocol: ``"next"``, ``"last"`` or ``"rest"``.
        session: the session column's name, or ``None`` (users are the unit).
    """

    queries: pd.DataFrame
    truth: pd.DataFrame
    protocol: str
    session: str | None
    #: (unit code, item) -> the first position the item holds in the unit's events (0: train)
    firsts: pd.DataFrame = field(repr=False)
    #: per query: its unit's code and its step
    query_unit: np.ndarray = field(repr=False)
    _history: pd.DataFrame | None = field(default=None, repr=False)
    _items: pd.Index | None = field(default=None, repr=False)
    _keys: pd.Index | None = field(default=None, repr=False)

    @property
    def history(self) -> pd.DataFrame:
        """What the model may see for each query: ``query``, ``item``, one row per distinct
        item (in the order each item first appeared).

        Example:
            >>> q = queries({"user": [1, 1], "item": ["a", "b"], "timestamp": [1, 2]},
            ...             {"user": [1, 1], "item": ["c", "a"], "timestamp": [3, 4]})
            >>> q.history.values.tolist()
            [[0, 'a'], [0, 'b'], [1, 'a'], [1, 'b'], [1, 'c']]
        """
        if self._history is None:
            per_query = pd.DataFrame(
                {
                    "query": self.queries["query"].to_numpy(),
                    "unit": self.query_unit,
                    "step": self.queries["step"].to_numpy(),
                }
            )
            joined = per_query.merge(self.firsts, on="unit", how="inner")
            joined = joined[joined["first"] < joined["step"]]
            joined = joined.sort_values(["query", "first", "order"], kind="stable")
            self._history = joined[["query", "item"]].reset_index(drop=True)
        return self._history

    def in_history(self, query: Any, item: Any) -> np.ndarray:
        """Per (query, item) pair: whether the item is in the query's history.

        Example:
            >>> q = queries({"user": [1], "item": ["a"], "timestamp": [1]},
            ...             {"user": [1, 1], "item": ["b", "c"], "timestamp": [2, 3]})
            >>> q.in_history([0, 0, 1, 1], ["a", "b", "b", "c"]).tolist()
            [True, False, True, False]
        """
        query = np.asarray(query, dtype=np.int64)
        known = (query >= 0) & (query < len(self.query_unit))
        codes = np.where(known, query, 0)
        if self._items is None:  # the firsts' items, encoded once; keys (unit, item code)
            item_codes, uniques = pd.factorize(self.firsts["item"])
            self._items = pd.Index(uniques)
            n_codes = max(len(uniques), 1)
            self._keys = pd.Index(self.firsts["unit"].to_numpy() * n_codes + item_codes)
        assert self._keys is not None
        item_code = self._items.get_indexer(np.asarray(item))
        n_codes = max(len(self._items), 1)
        keys = self.query_unit[codes] * n_codes + item_code
        at = self._keys.get_indexer(np.where(item_code >= 0, keys, -1))
        first = self.firsts["first"].to_numpy()[np.maximum(at, 0)]
        step = self.queries["step"].to_numpy()[codes]
        return known & (item_code >= 0) & (at >= 0) & (first < step)


def queries(
    train: Any,
    test: Any,
    protocol: str = "next",
    *,
    session: str | None = None,
    user_col: str = "user",
    item_col: str = "item",
    timestamp_col: str | None = "timestamp",
) -> Queries:
    """The queries of ``protocol`` over the ``test`` events, histories from ``train``.

    ``train`` and ``test`` are event tables (a DataFrame, a dict of columns or a path) with
    ``user_col``, ``item_col`` and ``timestamp_col`` (``timestamp_col=None``: the rows' order
    is the time order). ``session`` names a session column: sessions are then the unit (steps
    count within the session and the history is the session's earlier events, in ``train``
    or ``test``); ``user_col`` may then be absent (the session stands for the user).

    - ``"next"``: one query per test event, its target that event;
    - ``"last"``: one query per user (session), its target the last test event;
    - ``"rest"``: one query per test event, its targets that event and every later one of
      the user (session), as distinct items.

    A test event with no history still makes a query.

    Example:
        >>> train = {"user": ["u", "u"], "item": ["a", "b"], "timestamp": [1, 2]}
        >>> test = {"user": ["u", "u", "u"], "item": ["c", "a", "d"], "timestamp": [3, 4, 5]}
        >>> q = queries(train, test, protocol="next")
        >>> q.queries[["query", "user", "step", "time", "history_length"]].values.tolist()
        [[0, 'u', 1, 3, 2], [1, 'u', 2, 4, 3], [2, 'u', 3, 5, 4]]
        >>> q.truth.values.tolist()
        [[0, 'c', 'explore'], [1, 'a', 'repeat'], [2, 'd', 'explore']]
        >>> queries(train, test, protocol="rest").truth.values.tolist()[:3]
        [[0, 'c', 'explore'], [0, 'a', 'repeat'], [0, 'd', 'explore']]
        >>> queries(train, test, protocol="last").queries["step"].tolist()
        [3]
    """
    if protocol not in PROTOCOLS:
        raise ReceValError(f"protocol={protocol!r} is not one of 'next', 'last', 'rest'")
    train_f, test_f = as_frame(train, "train"), as_frame(test, "test")
    unit_col = session if session is not None else user_col
    has_user = user_col in test_f.columns
    needed = [unit_col, item_col] + ([timestamp_col] if timestamp_col is not None else [])
    require(test_f, needed, "test")
    require(train_f, [unit_col, item_col], "train")
    if len(test_f) == 0:
        raise ReceValError("test: no event (the queries are made from the test events)")
    test_f = test_f.reset_index(drop=True)
    order = (
        test_f.sort_values([unit_col, timestamp_col], kind="stable").index.to_numpy()
        if timestamp_col is not None
        else test_f.sort_values(unit_col, kind="stable").index.to_numpy()
    )
    ev = test_f.iloc[order].reset_index(drop=True)
    unit_codes, units = pd.factorize(
        pd.concat([ev[unit_col], train_f[unit_col]], ignore_index=True), sort=False
    )
    ev_unit = unit_codes[: len(ev)].astype(np.int64)
    tr_unit = unit_codes[len(ev) :].astype(np.int64)
    starts = np.flatnonzero(np.r_[True, ev_unit[1:] != ev_unit[:-1]])
    sizes = np.diff(np.r_[starts, len(ev)])
    step = np.arange(len(ev)) - np.repeat(starts, sizes) + 1
    n_train = np.bincount(tr_unit, minlength=len(units))
    items = ev[item_col].to_numpy()
    firsts = _firsts(tr_unit, train_f[item_col].to_numpy(), ev_unit, items, step)

    rows = starts + sizes - 1 if protocol == "last" else np.arange(len(ev))
    n_q = len(rows)
    out = {"query": np.arange(n_q, dtype=np.int64)}
    out["user"] = (ev[user_col] if has_user else ev[unit_col]).to_numpy()[rows]
    if session is not None:
        out["session"] = ev[session].to_numpy()[rows]
    out["step"] = step[rows].astype(np.int64)
    out["time"] = (
        ev[timestamp_col].to_numpy()[rows] if timestamp_col is not None else np.full(n_q, np.nan)
    )
    out["history_length"] = (n_train[ev_unit[rows]] + step[rows] - 1).astype(np.int64)
    table = pd.DataFrame(out)

    if protocol == "rest":  # every later event of the unit, from the query's own
        ends = np.repeat(starts + sizes, sizes)
        lengths = ends - rows
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        t_query = np.repeat(np.arange(n_q), lengths)
        t_rows = np.repeat(rows, lengths) + offsets
        truth = pd.DataFrame({"query": t_query, "item": items[t_rows]})
        truth = truth.drop_duplicates(["query", "item"], keep="first").reset_index(drop=True)
    else:
        truth = pd.DataFrame({"query": np.arange(n_q, dtype=np.int64), "item": items[rows]})
    query_unit = ev_unit[rows]
    result = Queries(
        queries=table,
        truth=truth,
        protocol=protocol,
        session=session,
        firsts=firsts,
        query_unit=query_unit,
    )
    repeat = result.in_history(truth["query"].to_numpy(), truth["item"].to_numpy())
    truth["kind"] = np.where(repeat, "repeat", "explore")
    return result


def _firsts(
    tr_unit: np.ndarray,
    tr_items: np.ndarray,
    ev_unit: np.ndarray,
    ev_items: np.ndarray,
    step: np.ndarray,
) -> pd.DataFrame:
    """Per (unit, item): the first position it holds (0 in train, else its first step) and
    the order it first appeared in (train rows first, in input order)."""
    both = pd.DataFrame(
        {
            "unit": np.r_[tr_unit, ev_unit],
            "item": np.r_[tr_items, ev_items]
            if tr_items.dtype == ev_items.dtype
            else np.r_[tr_items.astype(object), ev_items.astype(object)],
            "first": np.r_[np.zeros(len(tr_unit), dtype=np.int64), step.astype(np.int64)],
        }
    )
    both["order"] = np.arange(len(both))
    return both.groupby(["unit", "item"], sort=False, as_index=False).agg(
        first=("first", "min"), order=("order", "min")
    )
