"""What an evaluation returns: the numbers, per user, with the audit and the definitions."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass
class Result:
    """The outcome of :func:`receval.evaluate`.

    Attributes:
        summary: metric name (as requested) -> mean over the evaluated users.
        per_user: a DataFrame with a ``user`` column and one column per metric (NaN where the
            ``skip`` policy left the user out of that metric).
        counts: the input audit: users per side, users evaluated and skipped, rows dropped and
            why, predictions without a truth row, cutoffs that fell inside a tie.
        options: every option in effect, the receval version and the engine, so a number
            never travels without its definition.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 1], "item": [10, 11]}
        >>> preds = {"user": [1, 1], "item": [10, 12], "score": [0.9, 0.8]}
        >>> r = receval.evaluate(truth, preds, ["P@2", "R@2"])
        >>> r.summary
        {'P@2': 0.5, 'R@2': 0.5}
        >>> r.per_user.columns.tolist()
        ['user', 'P@2', 'R@2']
    """

    summary: dict[str, float]
    per_user: pd.DataFrame
    counts: dict[str, Any]
    options: dict[str, Any]
    metrics: list[str] = field(default_factory=list)

    def __getitem__(self, metric: str) -> float:
        return self.summary[metric]

    def to_dict(self) -> dict[str, Any]:
        """Summary, counts and options as plain JSON-ready Python objects.

        Example:
            >>> import receval
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
            >>> sorted(r.to_dict())
            ['counts', 'options', 'summary']
        """
        return {
            "summary": {k: _json_float(v) for k, v in self.summary.items()},
            "counts": self.counts,
            "options": self.options,
        }

    def to_json(self, **kwargs: Any) -> str:
        """The :meth:`to_dict` view as a JSON string (NaN becomes ``null``).

        Example:
            >>> import receval
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
            >>> r.to_json().startswith('{"summary": {"P@1": 1.0}')
            True
        """
        return json.dumps(self.to_dict(), **kwargs)

    def to_pandas(self) -> pd.DataFrame:
        """The summary as a one-column DataFrame indexed by metric.

        Example:
            >>> import receval
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
            >>> r.to_pandas().loc["P@1", "value"]
            np.float64(1.0)
        """
        return pd.DataFrame({"value": pd.Series(self.summary, dtype=float)}).rename_axis(
            "metric"
        )

    def to_polars(self) -> Any:
        """The summary as a polars DataFrame with columns ``metric`` and ``value``.

        Example:
            >>> import receval
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
            >>> r.to_polars().shape
            (1, 2)
        """
        import polars as pl

        return pl.DataFrame(
            {"metric": list(self.summary), "value": [float(v) for v in self.summary.values()]}
        )

    def __repr__(self) -> str:
        width = max((len(k) for k in self.summary), default=6)
        lines = [f"  {k:<{width}}  {v:.6f}" for k, v in self.summary.items()]
        users = self.counts["users"]["evaluated"]
        head = f"Result({users} users; ties={self.options['ties']}, empty={self.options['empty']}"
        return head + f", average={self.options['average']})\n" + "\n".join(lines)

    def _repr_html_(self) -> str:
        from receval.report.notebook import result_html

        return result_html(self)

    def plot(self, kind: str, path: str | None = None, **kwargs: Any) -> Any:
        """Draw ``kind`` ("at-k", "pr-curve", "f-beta", "distribution", "comparison") as a
        matplotlib Figure, saved to ``path`` (.png or .svg) when given; see
        :mod:`receval.report.plots` for the keyword arguments of each kind.

        Example:
            >>> import receval
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1,2", "R@1,2"])
            >>> r.plot("pr-curve").axes[0].get_xlabel()
            'recall@k'
        """
        from receval.report.plots import plot

        return plot(self, kind, path, **kwargs)


def _json_float(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)
