"""Item groups for the exposure-fairness and calibration metrics: each item's *alignment*, a
distribution over the groups (TREC Fair Ranking 2022's term): an item of ``m`` groups has
``1/m`` in each, an item of no known group a zero row (it adds no exposure and no mass).

``item_groups=`` accepts an item -> group (or list of groups) dict or Series, a frame of
(item, group) rows (several rows per item add groups), the name of a column of
``item_features``, or nothing: the categories of ``item_features`` are the groups then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError


def _plain(ids: Any) -> np.ndarray:
    arr = np.asarray(ids)
    return arr.astype(np.int64) if arr.dtype.kind in "iu" else arr.astype(object)


def _frame(item_groups: Any, item_features: Any, item_col: str) -> pd.DataFrame:
    if isinstance(item_groups, str):
        if not isinstance(item_features, pd.DataFrame) or item_groups not in \
                item_features.columns:
            raise ReceValError(f"item_groups={item_groups!r} names no column of item_features "
                               f"(pass a frame with that column as item_features=)")
        return item_features[[item_col, item_groups]]
    source = item_features if item_groups is None else item_groups
    if isinstance(source, pd.Series):
        return pd.DataFrame({item_col: source.index.to_numpy(), "group": source.to_numpy()})
    if isinstance(source, Mapping):
        return pd.DataFrame({item_col: list(source.keys()), "group": list(source.values())})
    if isinstance(source, pd.DataFrame):
        if item_col not in source.columns:
            raise ReceValError(f"item groups have no column {item_col!r} (columns: "
                               f"{', '.join(map(str, source.columns))})")
        others = [c for c in source.columns if c != item_col]
        if len(others) != 1:
            raise ReceValError(f"item groups need one group column besides {item_col!r}; got "
                               f"{len(others)} (name it: item_groups='column')")
        return source[[item_col, others[0]]]
    raise ReceValError(f"item_groups must be a dict, Series, DataFrame or a column name of "
                       f"item_features; got {type(source).__name__}")


def read_groups(item_groups: Any, item_features: Any = None, item_col: str = "item"
                ) -> tuple[np.ndarray, np.ndarray, tuple[Any, ...]]:
    """``(item ids, (n, G) alignment, group names)``; groups sorted by name (as text).

    Example:
        >>> ids, align, names = read_groups({"a": "x", "b": ["x", "y"], "c": None})
        >>> ids.tolist(), align.tolist(), names
        (['a', 'b', 'c'], [[1.0, 0.0], [0.5, 0.5], [0.0, 0.0]], ('x', 'y'))
        >>> read_groups(None, pd.DataFrame({"item": [1, 1, 2], "genre": ["d", "c", "c"]}))[1]
        array([[0.5, 0.5],
               [1. , 0. ]])
    """
    if item_groups is None and item_features is None:
        raise ReceValError("fairness and calibration metrics need item groups: pass "
                           "item_groups= (item -> group) or item_features= (categories)")
    frame = _frame(item_groups, item_features, item_col)
    if len(frame) == 0:
        raise ReceValError("item groups are empty: no item has a group (item_groups= must map "
                           "items to their groups)")
    col = frame.columns[1]
    if pd.api.types.is_float_dtype(frame[col]) and frame[col].notna().all():
        raise ReceValError(f"item groups: column {col!r} holds numbers (an embedding?); "
                           f"groups must be labels")
    ids = _plain(frame[item_col].to_numpy())
    item_codes, uniq = pd.factorize(pd.Series(ids, dtype=ids.dtype))
    rows, labels = [], []
    for r, v in enumerate(frame[col].to_numpy()):
        values = v if isinstance(v, list | tuple | np.ndarray | set | frozenset) else [v]
        for g in values:
            if g is None or (isinstance(g, float) and np.isnan(g)):
                continue
            rows.append(item_codes[r])
            labels.append(g)
    names = sorted(set(labels), key=lambda g: (str(type(g)), str(g)))
    index = {g: j for j, g in enumerate(names)}
    member = np.zeros((len(uniq), len(names)), dtype=np.float64)
    if rows:
        member[np.asarray(rows), [index[g] for g in labels]] = 1.0
    count = member.sum(axis=1, keepdims=True)
    align = np.divide(1.0, count, out=np.zeros_like(count), where=count > 0) * member
    return _plain(np.asarray(uniq)), align, tuple(names)
