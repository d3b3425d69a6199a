"""The two logs, read and checked: impressions (what was served) and feedback (what users did).

Each becomes a pandas DataFrame with fixed column names: impressions ``user, item, order,
served`` (+ ``variant``), feedback ``user, item, value, at``; times are int64 nanoseconds since
the epoch (UTC). Accepted: pandas or polars DataFrames, pyarrow Tables, dicts of arrays, and
paths to CSV, TSV, Parquet or JSON Lines files. Times may be datetimes (naive ones are UTC),
ISO 8601 text, or numbers (Unix seconds).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.scalars import plain


def as_frame(data: Any, side: str) -> pd.DataFrame:
    """``data`` as a pandas DataFrame (a path is read by its suffix).

    Example:
        >>> as_frame({"user": [1], "item": [2]}, "impressions").shape
        (1, 2)
    """
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, str | Path):
        return _read_path(Path(data), side)
    if hasattr(data, "to_pandas"):
        return data.to_pandas()
    if isinstance(data, Mapping):
        return pd.DataFrame(dict(data))
    raise ReceValError(f"{side}: expected a DataFrame, an Arrow table, a dict of arrays or a "
                       f"path, got {type(data).__name__}")


def _read_path(path: Path, side: str) -> pd.DataFrame:
    if not path.is_file():
        raise ReceValError(f"{side}: no such file {str(path)!r}")
    suffixes = [s.lower() for s in path.suffixes]
    last = suffixes[-2] if suffixes and suffixes[-1] == ".gz" and len(suffixes) > 1 \
        else (suffixes[-1] if suffixes else "")
    try:
        if last in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if last in (".jsonl", ".ndjson"):
            return pd.read_json(path, lines=True)
        if last in (".csv", ".tsv", ".txt"):
            return pd.read_csv(path, sep="\t" if last == ".tsv" else ",")
    except (ValueError, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ReceValError(f"{side}: cannot read {str(path)!r}: {first}") from None
    raise ReceValError(f"{side}: {str(path)!r} is not a .csv, .tsv, .parquet or .jsonl file")


def _column(frame: pd.DataFrame, name: str, side: str, role: str) -> pd.Series:
    if name not in frame.columns:
        raise ReceValError(f"{side}: no column {name!r} (the {role}); columns: "
                           f"{', '.join(map(str, frame.columns))}")
    return frame[name]


def _bad(side: str, name: str, mask: np.ndarray, series: pd.Series, what: str) -> None:
    if mask.any():
        row = int(np.flatnonzero(mask)[0])
        raise ReceValError(f"{side}: column {name!r} {what} at row {row} "
                           f"(value {plain(series.iloc[row])!r}; {int(mask.sum())} bad rows)")


def times(series: pd.Series, side: str, name: str) -> np.ndarray:
    """int64 ns since the epoch (UTC) of a column of datetimes, ISO text or Unix seconds.

    Example:
        >>> times(pd.Series(["1970-01-01T00:00:01Z"]), "feedback", "at").tolist()
        [1000000000]
        >>> times(pd.Series([2]), "feedback", "at").tolist()
        [2000000000]
    """
    _bad(side, name, series.isna().to_numpy(), series, "has a missing time")
    if pd.api.types.is_bool_dtype(series):
        _bad(side, name, np.ones(len(series), bool), series, "is not a time")
    if pd.api.types.is_integer_dtype(series):
        return series.to_numpy(dtype=np.int64) * 10**9  # exact (floats lose ns at 1e18)
    if pd.api.types.is_numeric_dtype(series):
        values = series.to_numpy(dtype=np.float64)
        _bad(side, name, ~np.isfinite(values), series, "is not a finite number of seconds")
        return np.round(values * 1e9).astype(np.int64)
    if isinstance(series.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(series):
        parsed = series
    else:
        parsed = pd.to_datetime(series, utc=True, errors="coerce", format="ISO8601")
        _bad(side, name, parsed.isna().to_numpy(), series, "is not a time (ISO 8601 expected)")
    if isinstance(parsed.dtype, pd.DatetimeTZDtype):
        parsed = parsed.dt.tz_convert("UTC").dt.tz_localize(None)
    return parsed.to_numpy(dtype="datetime64[ns]").astype(np.int64)


def _ids(series: pd.Series, side: str, name: str) -> pd.Series:
    _bad(side, name, series.isna().to_numpy(), series, "has a missing id")
    return series.reset_index(drop=True)


def read_impressions(data: Any, *, user_col: str, item_col: str, score_col: str | None,
                     served_col: str, variant_col: str | None) -> tuple[pd.DataFrame, str]:
    """The impressions with columns ``user, item, order, served[, variant]`` and whether
    ``order`` is a ``"rank"`` (1 best) or a ``"score"`` (highest best).

    Example:
        >>> f, kind = read_impressions({"user": [1], "item": [2], "rank": [1],
        ...     "served_at": ["2024-01-01"]}, user_col="user", item_col="item",
        ...     score_col=None, served_col="served_at", variant_col=None)
        >>> kind, f.columns.tolist()
        ('rank', ['user', 'item', 'order', 'served'])
    """
    side = "impressions"
    frame = as_frame(data, side)
    if score_col is None:
        score_col = "score" if "score" in frame.columns else "rank"
        if score_col not in frame.columns:
            raise ReceValError(f"{side}: no column 'score' or 'rank' (the order of the served "
                               f"list); columns: {', '.join(map(str, frame.columns))}")
    kind = "rank" if score_col == "rank" else "score"
    order = _column(frame, score_col, side, "rank or score")
    if not pd.api.types.is_numeric_dtype(order) or pd.api.types.is_bool_dtype(order):
        _bad(side, score_col, np.ones(len(order), bool), order, "is not a number")
    values = order.to_numpy(dtype=np.float64)
    _bad(side, score_col, np.isnan(values), order, "is missing")
    out = pd.DataFrame({
        "user": _ids(_column(frame, user_col, side, "user"), side, user_col),
        "item": _ids(_column(frame, item_col, side, "item"), side, item_col),
        "order": values,
        "served": times(_column(frame, served_col, side, "time served").reset_index(drop=True),
                        side, served_col),
    })
    if variant_col is not None:
        out["variant"] = _ids(_column(frame, variant_col, side, "variant"), side, variant_col)
    return out, kind


def read_feedback(data: Any, *, user_col: str, item_col: str, value_col: str,
                  time_col: str) -> pd.DataFrame:
    """The feedback with columns ``user, item, value, at``.

    Example:
        >>> read_feedback({"user": [1], "item": [2], "value": [5], "at": [0]}, user_col="user",
        ...     item_col="item", value_col="value", time_col="at").dtypes["value"]
        dtype('float64')
    """
    side = "feedback"
    frame = as_frame(data, side)
    value = _column(frame, value_col, side, "value")
    if not pd.api.types.is_numeric_dtype(value) or pd.api.types.is_bool_dtype(value):
        converted = pd.to_numeric(value, errors="coerce")
        _bad(side, value_col, converted.isna().to_numpy() & value.notna().to_numpy(), value,
             "is not a number")
        value = converted
    values = value.to_numpy(dtype=np.float64)
    _bad(side, value_col, np.isnan(values), value, "is missing")
    return pd.DataFrame({
        "user": _ids(_column(frame, user_col, side, "user"), side, user_col),
        "item": _ids(_column(frame, item_col, side, "item"), side, item_col),
        "value": values,
        "at": times(_column(frame, time_col, side, "feedback time").reset_index(drop=True),
                    side, time_col),
    })
