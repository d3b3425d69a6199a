"""The served log, checked and encoded: one row per shown item, sorted by (request, position).

Requests and items become integer codes (requests in sorted order, so the bootstrap draws the
same requests whatever the order of the rows); every check fails with one line naming the
problem, the first offending row and how many rows share it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError

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

    @property
    def n_requests(self) -> int:
        return int(self.length.size)

    @property
    def n_rows(self) -> int:
        return int(self.request.size)

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


def read_log(log: pd.DataFrame) -> Log:
    """Check and encode a log (a pandas DataFrame).

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
    probs = {c: _probability(frame, c) for c in ("propensity", "propensity_prefix",
                                                 "propensity_slate")}
    sorted_probs = {c: None if p is None else p[order] for c, p in probs.items()}
    length = np.bincount(request, minlength=len(requests)).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(length)]).astype(np.int64)
    return Log(requests=requests, items=items, request=request[order], item=item[order],
               position=pos[order], reward=reward[order], starts=starts, length=length,
               propensity=sorted_probs["propensity"],
               propensity_prefix=sorted_probs["propensity_prefix"],
               propensity_slate=sorted_probs["propensity_slate"])
