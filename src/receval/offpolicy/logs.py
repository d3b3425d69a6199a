"""The served log, checked and encoded: one row per shown item, sorted by (request, position).

Requests and items become integer codes (requests in sorted order, so the bootstrap draws the
same requests whatever the order of the rows); every check fails with one line naming the
problem, the first offending row and how many rows share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval.data.repeats import repeat_error, repeated
from receval.exceptions import ReceValError
from receval.scalars import plain

#: the log's columns; ``request`` may be replaced by ``user`` + ``served_at``
REQUIRED = ("item", "position", "reward")


@dataclass(frozen=True)
class Log:
    """The encoded log, rows sorted by (request, position).

    ``request``: request code per row (0..n_requests-1); ``starts``: the first row of each
    request (and the total at the end); ``length``: rows per request; ``item``: item code per
    row in :attr:`items`; ``propensity`` / ``propensity_prefix`` / ``propensity_slate``: the
    logger's probabilities (None where the column is absent)."""

    requests: pd.Index
    items: pd.Index
    request: np.ndarray
    item: np.ndarray
    position: np.ndarray
    reward: np.ndarray
    propensity: np.ndarray | None
    propensity_prefix: np.ndarray | None
    propensity_slate: np.ndarray | None
    starts: np.ndarray
    length: np.ndarray
    #: per request, the values of the ``by`` columns (None without ``by``)
    groups: pd.DataFrame | None = None
    #: per request, its (user, served_at in ns) when the log has both columns: targets and
    #: reward models may name a request by them instead of ``request``
    keys: pd.MultiIndex | None = None
    #: what every target reuses (the rows at each position), filled on first use
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def n_requests(self) -> int:
        return int(self.length.size)

    @property
    def n_rows(self) -> int:
        return int(self.request.size)

    def positions(self) -> list[tuple[int, np.ndarray | None, np.ndarray]]:
        """Per position k (ascending): k, its rows (None when every request holds positions
        1..L of one L: row i * L + k - 1) and the indicator of the requests holding it."""
        if "positions" not in self.cache:
            top = int(self.length.max()) if self.length.size else 0
            if self.length.size and bool(np.all(self.length == top)) and self.contiguous():
                ones = np.ones(self.n_requests)
                self.cache["positions"] = [(k, None, ones) for k in range(1, top + 1)]
            else:
                out = []
                for k in np.unique(self.position):
                    rows = np.flatnonzero(self.position == k)
                    m = np.zeros(self.n_requests)
                    m[self.request[rows]] = 1.0
                    out.append((int(k), rows, m))
                self.cache["positions"] = out
        return list(self.cache["positions"])

    def contiguous(self) -> bool:
        """Whether every request holds positions 1..L with no gap (prefixes are defined)."""
        first = np.repeat(self.starts[:-1], self.length)
        return bool(np.all(self.position == np.arange(self.n_rows) - first + 1))


def _first_bad(frame: pd.DataFrame, bad: np.ndarray, what: str, name: str = "log") -> ReceValError:
    rows = np.flatnonzero(bad)
    first = frame.index[rows[0]]
    values = frame.iloc[rows[0]].to_dict()
    return ReceValError(f"{name}: {rows.size} row(s) {what}; first: row {first} {values}")


def _codes(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes in sorted order of the values (insertion order when they do not sort)."""
    try:
        codes, uniques = pd.factorize(values, sort=True)
    except TypeError:
        codes, uniques = pd.factorize(values, sort=False)
    return codes.astype(np.int64), pd.Index(uniques)


def _number(frame: pd.DataFrame, column: str, name: str) -> np.ndarray:
    try:
        values = pd.to_numeric(frame[column], errors="raise").to_numpy(dtype=np.float64)
    except (ValueError, TypeError):
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        raise _first_bad(frame, bad, f"with a {column!r} that is not a finite number", name)
    return values


def _probability(frame: pd.DataFrame, column: str) -> np.ndarray | None:
    if column not in frame.columns:
        return None
    p = _number(frame, column, "log")
    bad = (p <= 0) | (p > 1)
    if bad.any():
        raise _first_bad(frame, bad, f"with a {column!r} outside (0, 1] (the logger showed the "
                         "item, so its probability cannot be 0)")
    return p


def served_ns(series: pd.Series, what: str) -> np.ndarray:
    """``served_at`` as int64 ns since the epoch (UTC): datetimes and ISO text through
    monitor's reader; numbers stay the numbers they are (they match the log's numbers).

    Example:
        >>> served_ns(pd.Series(["1970-01-01T00:00:01Z"]), "log").tolist()
        [1000000000]
    """
    from receval.monitor.inputs import times

    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return series.to_numpy(dtype=np.int64)
    return times(series.reset_index(drop=True), what, "served_at")


def _user_values(series: pd.Series, text: bool) -> np.ndarray:
    return series.astype(str).to_numpy(dtype=object) if text else series.to_numpy()


def request_codes(frame: pd.DataFrame, log: Log, what: str) -> np.ndarray:
    """The log's request code of each row of a target or reward model table (-1: a request
    the log does not hold), by its ``request`` or, when it has none, its ``user`` and
    ``served_at`` (the log's must then be there too).

    Example:
        >>> log = read_log(pd.DataFrame({"user": [7, 8], "served_at": ["2024-01-01"] * 2,
        ...     "item": [1, 2], "position": 1, "reward": 0.0, "propensity": 0.5}))
        >>> t = pd.DataFrame({"user": [8, 9], "served_at": ["2024-01-01T00:00Z"] * 2})
        >>> request_codes(t, log, "target").tolist()
        [1, -1]
    """
    if "request" in frame.columns:
        return np.asarray(log.requests.get_indexer(frame["request"]), dtype=np.int64)
    if log.keys is None or not {"user", "served_at"} <= set(frame.columns):
        raise ReceValError(f"{what} has no column 'request' (nor 'user' and 'served_at' "
                           "matching the log's); columns: "
                           f"{', '.join(map(str, frame.columns))}")
    users = log.keys.levels[0]
    text = users.dtype == object or not pd.api.types.is_numeric_dtype(frame["user"])
    ns = served_ns(frame["served_at"], what)
    index = log.keys
    if text and users.dtype != object:
        index = pd.MultiIndex.from_arrays([_user_values(pd.Series(log.keys.get_level_values(0)),
                                                        True), log.keys.get_level_values(1)])
    probe = pd.MultiIndex.from_arrays([_user_values(frame["user"], text), ns])
    return np.asarray(index.get_indexer(probe), dtype=np.int64)


def read_log(log: pd.DataFrame, by: tuple[str, ...] = (), repeats: bool = False) -> Log:
    """Check and encode a log (a pandas DataFrame); ``by``: columns constant within each
    request whose values group the requests (``Log.groups``).

    Example:
        >>> import pandas as pd
        >>> log = read_log(pd.DataFrame({"request": ["b", "a", "a"], "item": [1, 2, 3],
        ...     "position": [1, 2, 1], "reward": [0, 1, 0], "propensity": [0.5, 0.5, 0.25]}))
        >>> log.request.tolist(), log.position.tolist(), log.propensity.tolist()
        ([0, 0, 1], [1, 2, 1], [0.25, 0.5, 0.5])
    """
    if not isinstance(log, pd.DataFrame):
        try:
            log = pd.DataFrame(log)
        except (ValueError, TypeError) as err:
            raise ReceValError(f"log must be a table (a pandas DataFrame); got "
                               f"{type(log).__name__}") from err
    frame = log.reset_index(drop=True)
    if "request" not in frame.columns:
        if {"user", "served_at"} <= set(frame.columns):
            frame = frame.assign(request=list(zip(frame["user"], frame["served_at"],
                                                  strict=True)))
        else:
            columns = ", ".join(map(str, log.columns))
            raise ReceValError("log has no column 'request' (one served list), nor 'user' and "
                               f"'served_at' to make it; columns: {columns}")
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise ReceValError(f"log has no column {missing[0]!r}; columns: "
                           f"{', '.join(map(str, log.columns))}")
    if len(frame) == 0:
        raise ReceValError("log is empty: no shown item to estimate from")
    for column in ("request", "item"):
        bad = frame[column].isna().to_numpy()
        if bad.any():
            raise _first_bad(frame, bad, f"with no {column!r}")
    position = _number(frame, "position", "log")
    bad = (position < 1) | (position != np.floor(position))
    if bad.any():
        raise _first_bad(frame, bad, "with a 'position' that is not an integer >= 1 (1 = top)")
    reward = _number(frame, "reward", "log")
    request, requests = _codes(frame["request"])
    item, items = _codes(frame["item"])
    pos = position.astype(np.int64)
    order = np.lexsort((pos, request))
    dup = np.zeros(len(frame), dtype=bool)
    same = (request[order][1:] == request[order][:-1]) & (pos[order][1:] == pos[order][:-1])
    dup[order[1:][same]] = True
    if dup.any():
        raise _first_bad(frame, dup, "repeating a (request, position) already in the log")
    again = repeated(request, item)
    if again.any() and not repeats:  # as monitor: a served list shows an item once
        row = int(np.flatnonzero(again)[0])
        raise repeat_error("log", frame["item"].iloc[row],
                           f"request {plain(frame['request'].iloc[row])!r}", frame.index[row],
                           int(again.sum()), "pass repeats='allow' for slates drawn slot by "
                           "slot")
    probs = {c: _probability(frame, c) for c in ("propensity", "propensity_prefix",
                                                 "propensity_slate")}
    sorted_probs = {c: None if p is None else p[order] for c, p in probs.items()}
    length = np.bincount(request, minlength=len(requests)).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(length)]).astype(np.int64)
    first = order[starts[:-1]]  # each request's first row (in the frame's order)
    groups = None
    if by:
        absent = [c for c in by if c not in frame.columns]
        if absent:
            raise ReceValError(f"by={absent[0]!r}: the log has no column {absent[0]!r}; "
                               f"columns: {', '.join(map(str, log.columns))}")
        groups = frame.iloc[first][list(by)].reset_index(drop=True)
        for column in by:
            values = frame[column].to_numpy()
            own = values[first[request]]
            differs = (pd.Series(values).ne(pd.Series(own)).to_numpy()
                       & ~(pd.isna(values) & pd.isna(own)))
            if differs.any():
                raise _first_bad(frame, differs, f"whose {column!r} differs from its request's "
                                 "first row (by= groups whole requests)")
    keys = None
    if {"user", "served_at"} <= set(frame.columns):
        keys = pd.MultiIndex.from_arrays([frame["user"].to_numpy()[first],
                                          served_ns(frame["served_at"].iloc[first], "log")])
        if not keys.is_unique:  # several requests of one (user, served_at): named by request
            keys = None
    return Log(requests=requests, items=items, request=request[order], item=item[order],
               position=pos[order], reward=reward[order], starts=starts, length=length,
               propensity=sorted_probs["propensity"],
               propensity_prefix=sorted_probs["propensity_prefix"],
               propensity_slate=sorted_probs["propensity_slate"], groups=groups, keys=keys)
