"""Hypothesis strategies for small evaluation inputs, and the input containers receval reads.

Rows are plain tuples so that the oracle sees exactly what receval is given. Nothing here
imports receval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import hypothesis.strategies as st
import pandas as pd
import polars as pl
import pyarrow as pa

RATINGS = [0, 1, 2, 2.5, 3, 3.5, 4, 5]
TIED_SCORES = [0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 3.5, 4.0]
THRESHOLDS = [None, 1.0, 2.5, 3.0, 3.5, 4.0, "user_mean"]
SCORE_THRESHOLDS = [None, None, 0.5, 1.0, 2.0, 3.0, 3.5]


@dataclass
class Data:
    """Truth rows ``(user, item, rating)`` and prediction rows ``(user, item, score)``."""

    truth: list[tuple[object, object, float]]
    predictions: list[tuple[object, object, float]]
    id_kind: str

    def truth_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.truth, columns=["user", "item", "rating"])

    def prediction_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.predictions, columns=["user", "item", "score"])

    def __repr__(self) -> str:  # readable falsifying examples
        return (f"Data(id_kind={self.id_kind!r},\n  truth={self.truth!r},\n"
                f"  predictions={self.predictions!r})")


def _id(kind: str, prefix: str, n: int) -> object:
    if kind == "str":
        return f"{prefix}{n}"  # "i10" sorts before "i2": string order, not numeric
    if kind == "sparse":  # far apart and negative: not a dense range of codes
        return (n - 3) * 10**12 + 7
    return n


@st.composite
def datasets(
    draw: st.DrawFn,
    *,
    id_kind: str | None = None,
    max_users: int = 5,
    max_items: int = 12,
    max_list: int = 8,
    scores: st.SearchStrategy[float] | None = None,
    missing_ratings: bool = True,
    duplicates: bool = False,
) -> Data:
    """Users with and without relevant items, users missing from one side, lists shorter
    than k, graded ratings, heavy score ties, rows in random order."""
    kind = id_kind or draw(st.sampled_from(["int", "str", "sparse"]))
    if scores is None:
        scores = st.one_of(
            st.sampled_from(TIED_SCORES),
            st.floats(-3, 6, allow_nan=False, allow_infinity=False, width=32),
        )
    n_users = draw(st.integers(1, max_users))
    n_items = draw(st.integers(1, max_items))
    item_ids = st.integers(0, n_items - 1)
    truth: list[tuple[int, int, float]] = []
    preds: list[tuple[int, int, float]] = []
    for u in range(n_users):
        for i in draw(st.lists(item_ids, unique=True, max_size=6)):
            truth.append((u, i, float(draw(st.sampled_from(RATINGS)))))
        for i in draw(st.lists(item_ids, unique=True, max_size=max_list)):
            preds.append((u, i, draw(scores)))
    if not truth:
        truth.append((0, 0, 5.0))
    if not preds:
        preds.append((0, 0, 1.0))
    if missing_ratings and draw(st.integers(0, 4)) == 0:
        # a few unknown ratings: dropped before ranking
        for pos in draw(st.lists(st.integers(0, len(truth) - 1), max_size=2, unique=True)):
            u, i, _ = truth[pos]
            truth[pos] = (u, i, math.nan)
        if all(math.isnan(r) for _, _, r in truth):
            truth.append((0, n_items, 4.0))
    if duplicates:
        truth, preds = _add_duplicates(draw, truth, preds)
    truth = draw(st.permutations(truth))
    preds = draw(st.permutations(preds))
    return Data(
        [(_id(kind, "u", u), _id(kind, "i", i), r) for u, i, r in truth],
        [(_id(kind, "u", u), _id(kind, "i", i), s) for u, i, s in preds],
        kind,
    )


def _add_duplicates(draw: st.DrawFn, truth: list, preds: list) -> tuple[list, list]:
    """Repeat some (user, item) rows, with other values."""
    for u, i, _ in draw(st.lists(st.sampled_from(truth), max_size=3)):
        truth.append((u, i, float(draw(st.sampled_from(RATINGS)))))
    for u, i, _ in draw(st.lists(st.sampled_from(preds), max_size=3)):
        preds.append((u, i, draw(st.sampled_from(TIED_SCORES))))
    return truth, preds


def options(**fixed: object) -> st.SearchStrategy[dict[str, object]]:
    """Every option of ``receval.evaluate``, drawn independently; ``fixed`` pins some (a
    value, or a strategy to draw it from)."""
    choices: dict[str, st.SearchStrategy[object]] = {
        "relevance_threshold": st.sampled_from(THRESHOLDS),
        "score_threshold": st.sampled_from(SCORE_THRESHOLDS),
        "protocol": st.sampled_from(["full", "known"]),
        "ties": st.sampled_from(["stable", "item", "pessimistic", "optimistic", "average"]),
        "precision_denominator": st.sampled_from([None, "k", "returned"]),
        "recall_denominator": st.sampled_from(["relevant", "capped"]),
        "ap_normalizer": st.sampled_from(["min_k_relevant", "relevant", "hits", "k",
                                          "min_returned_relevant"]),
        "gain": st.sampled_from(["binary", "linear", "exponential"]),
        "empty": st.sampled_from(["zero", "one", "skip", "error"]),
        "average": st.sampled_from(["macro", "micro"]),
        "users": st.sampled_from(["truth", "both", "relevant", "predictions", "union"]),
        "discount": st.sampled_from(["log2", "log2_max2", "geometric"]),
        "persistence": st.sampled_from([0.5, 0.9]),
        "err_max_grade": st.sampled_from(["user", 4, 2.5]),
    }
    for name, value in fixed.items():
        choices[name] = value if isinstance(value, st.SearchStrategy) else st.just(value)
    return st.fixed_dictionaries(choices)


CONTAINERS = ["pandas", "pandas_chunked", "polars", "arrow", "dict"]


def as_container(frame: pd.DataFrame, kind: str, path: Path | None = None) -> object:
    """The same rows as a pandas, polars or Arrow table, a dict of lists or a CSV file."""
    if kind == "pandas":
        return frame
    if kind == "pandas_chunked":  # pd.concat: string columns backed by several Arrow chunks
        half = len(frame) // 2
        return pd.concat([frame.iloc[:half], frame.iloc[half:]], ignore_index=True)
    if kind == "polars":
        return pl.from_pandas(frame)
    if kind == "arrow":
        return pa.Table.from_pandas(frame, preserve_index=False)
    if kind == "dict":
        return {c: frame[c].tolist() for c in frame.columns}
    if kind == "csv":
        assert path is not None
        frame.to_csv(path, index=False)
        return path
    raise ValueError(kind)
