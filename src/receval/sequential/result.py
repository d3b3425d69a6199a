"""What :func:`receval.sequential.evaluate` returns: a :class:`~receval.result.Result` whose
unit is the query, with the repeat / explore parts and the macro over users."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.result import Result, _finite, _json_float

KINDS = ("repeat", "explore")


@dataclass
class SequentialResult(Result):
    """A next-item evaluation: :class:`~receval.result.Result` read per query.

    Attributes (besides :class:`~receval.result.Result`'s):
        summary: metric -> mean over the queries (macro over queries).
        per_query: one row per query: ``query``, ``user`` (``session``), ``step`` and one
            column per metric.
        per_user: one row per user: ``user``, ``queries`` and each metric's mean over the
            user's queries (``summary_by_user`` is their mean: the macro over users).
        parts: ``"repeat"`` and ``"explore"`` -> metric -> mean over the queries of the
            part's per-query value (hits and gains of that kind of target only, the whole's
            denominators and ideal), so that the two add up to ``summary``.
        parts_per_query: ``"repeat"`` / ``"explore"`` -> a DataFrame like ``per_query``.
        summary_by_user: metric -> macro over users (:meth:`macro` ``("user")``).
    """

    per_query: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    parts: dict[str, dict[str, float]] = field(default_factory=dict)
    parts_per_query: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    summary_by_user: dict[str, float] = field(default_factory=dict)

    def macro(self, over: str = "query", part: str | None = None) -> dict[str, float]:
        """The summary averaged over ``"query"`` (``summary``) or ``"user"`` (the mean of
        each user's mean over their queries), of the whole or of a ``part``.

        Example:
            >>> import receval
            >>> q = receval.sequential.queries(
            ...     {"user": [1, 2], "item": ["a", "a"], "timestamp": [0, 0]},
            ...     {"user": [1, 1, 2], "item": ["a", "b", "b"], "timestamp": [1, 2, 1]})
            >>> preds = {"query": [0, 1, 2], "item": ["a", "a", "b"], "score": [1, 1, 1]}
            >>> r = receval.sequential.evaluate(q, preds, ["R@1"])
            >>> r.macro("query"), r.macro("user")
            ({'R@1': 0.6666666666666666}, {'R@1': 0.75})
            >>> r.macro("query", part="repeat")
            {'R@1': 0.3333333333333333}
        """
        if over not in ("query", "user"):
            raise ReceValError(f"over={over!r}: the macro is over 'query' or 'user'")
        if part is not None and part not in KINDS:
            raise ReceValError(f"part={part!r} is not one of 'repeat', 'explore'")
        table = self.per_query if part is None else self.parts_per_query[part]
        names = list(self.summary if part is None else self.parts[part])
        if over == "query":
            return dict(self.summary) if part is None else dict(self.parts[part])
        return by_user(table, names)

    def to_dict(self) -> dict[str, Any]:
        """:meth:`Result.to_dict` with ``parts`` and ``summary_by_user``.

        Example:
            >>> import receval
            >>> q = receval.sequential.queries({"user": [1], "item": ["a"], "timestamp": [0]},
            ...                                {"user": [1], "item": ["a"], "timestamp": [1]})
            >>> r = receval.sequential.evaluate(q, {"query": [0], "item": ["a"], "rank": [1]},
            ...                                 ["R@1"])
            >>> r.to_dict()["parts"]
            {'repeat': {'R@1': 1.0}, 'explore': {'R@1': 0.0}}
        """
        out = super().to_dict()
        out["parts"] = {
            kind: {k: _json_float(v) for k, v in values.items()}
            for kind, values in self.parts.items()
        }
        out["summary_by_user"] = _finite(self.summary_by_user)
        return out


def mean(values: np.ndarray) -> float:
    """The mean of the values that are numbers (NaN: left out), summed exactly; NaN when
    there is none.

    Example:
        >>> mean(np.array([0.1, 0.2, np.nan]))
        0.15000000000000002
    """
    kept = values[~np.isnan(values)]
    return math.fsum(kept.tolist()) / len(kept) if len(kept) else math.nan


def by_user(per_query: pd.DataFrame, names: list[str]) -> dict[str, float]:
    """The macro over users: each user's mean over their queries, then the mean of those.

    Example:
        >>> t = pd.DataFrame({"user": [1, 1, 2], "R@1": [1.0, 0.0, 1.0]})
        >>> by_user(t, ["R@1"])
        {'R@1': 0.75}
    """
    users = per_user_table(per_query, names)
    return {name: mean(users[name].to_numpy(dtype=np.float64)) for name in names}


def per_user_table(per_query: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """One row per user: ``user``, ``queries`` and each metric's mean over the user's queries
    (NaN values left out).

    Example:
        >>> t = pd.DataFrame({"user": [1, 1, 2], "R@1": [1.0, 0.0, 1.0]})
        >>> per_user_table(t, ["R@1"]).values.tolist()
        [[1.0, 2.0, 0.5], [2.0, 1.0, 1.0]]
    """
    grouped = per_query.groupby("user", sort=False)
    out = grouped[names].mean() if names else pd.DataFrame(index=grouped.size().index)
    out.insert(0, "queries", grouped.size())
    return out.reset_index()
