"""The two logs, read and checked: impressions (what was served) and feedback (what users did).

Each becomes a pandas DataFrame with fixed column names: impressions ``user, item, order,
served`` (+ ``variant``), feedback ``user, item, value, at``; times are int64 nanoseconds since
the epoch (UTC). Accepted: pandas or polars DataFrames, pyarrow Tables, dicts of arrays, and
paths to CSV, TSV, Parquet or JSON Lines files.

Ids follow :mod:`receval.io`'s policy (:func:`receval.io.values.check_id_column`,
:func:`receval.io.ids.narrow`): text files' ids are read as text and become integers only when
every one is a canonical integer, so ``007`` and ``7`` stay two items, as in
``receval evaluate``; a missing or empty id is an error.

Times may be datetimes, ISO 8601 text, or numbers in a declared unit (``time_unit``: ``"s"``,
``"ms"``, ``"us"`` or ``"ns"`` since the Unix epoch; a number does not say its unit, so a
numeric time column without ``time_unit`` is refused). Every time must lie within
1677-09-22 .. 2262-04-11 (int64 nanoseconds); times with a time zone (or an offset) and times
without one (naive, read as UTC) are never mixed, within a column or between the two logs.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from receval.exceptions import ReceValError
from receval.io.times import series_ticks
from receval.io.values import check_id_column
from receval.scalars import plain

#: nanoseconds per unit of a numeric time column
UNITS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
#: the supported range of times: pandas' int64 nanoseconds
TIME_MIN, TIME_MAX = int(pd.Timestamp.min.value), int(pd.Timestamp.max.value)
RANGE_TEXT = "1677-09-22 .. 2262-04-11"
#: the texts a CSV cell of a number or time column reads as missing (pandas' defaults)
NA_TEXT = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
           "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
#: a time of day followed by a zone: Z, UTC or an offset (a date's "-01" is not one)
_OFFSET = re.compile(r"[T ]\d\d(?::?\d\d){0,2}(?:[.,]\d+)?\s*(?:Z|UTC|[+-]\d\d(?::?\d\d)?)$",
                     re.IGNORECASE)


def as_frame(data: Any, side: str, ids: tuple[str, ...] = ()) -> pd.DataFrame:
    """``data`` as a pandas DataFrame (a path is read by its suffix; the ``ids`` columns of a
    CSV/TSV file as text, narrowed to integers only when every one is canonical).

    Example:
        >>> as_frame({"user": [1], "item": [2]}, "impressions").shape
        (1, 2)
    """
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, str | Path):
        return _read_path(Path(data), side, ids)
    if hasattr(data, "to_pandas"):
        return data.to_pandas()
    if isinstance(data, Mapping):
        return pd.DataFrame(dict(data))
    raise ReceValError(f"{side}: expected a DataFrame, an Arrow table, a dict of arrays or a "
                       f"path, got {type(data).__name__}")


def _read_path(path: Path, side: str, ids: tuple[str, ...]) -> pd.DataFrame:
    """A log file through :func:`receval.io.frames.read_frame` (ids as text, narrowed only
    when every one is canonical; ISO times stay text for :func:`times`)."""
    from receval.io.frames import read_frame

    return read_frame(path, side, ids=ids, empty_ok=True).to_pandas()


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


def zone_of(series: pd.Series, side: str, name: str) -> str | None:
    """``"aware"`` (times with a zone or an offset), ``"naive"`` or ``None`` (numbers: Unix
    time); a column holding both aware and naive times is an error naming the first of the
    fewer kind.

    Example:
        >>> zone_of(pd.Series(["2024-01-01T00:00Z", "2024-01-02"]), "feedback", "at")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: feedback: column 'at' mixes times with a time zone and times without one (naive) at row 1 (value '2024-01-02'; 1 bad rows); write every time with its offset (or none)
    """  # noqa: E501
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        return "aware"
    if pd.api.types.is_datetime64_dtype(series):
        return "naive"
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return None
    if series.dtype == object and any(isinstance(v, dt.datetime) for v in series):
        aware = np.array([(v.tzinfo is not None) if isinstance(v, dt.datetime)
                          else bool(_OFFSET.search(str(v).strip())) for v in series], dtype=bool)
    else:  # text: one vectorised regular expression (RE2) over the column
        try:
            raw = pa.array(series, from_pandas=True).cast(pa.string())
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            raw = pa.array(series.astype(str).to_numpy(dtype=object), pa.string())
        text = pc.utf8_trim_whitespace(raw)
        aware = pc.match_substring_regex(text, _OFFSET.pattern, ignore_case=True) \
            .to_numpy(zero_copy_only=False)
    if aware.all():
        return "aware"
    if not aware.any():
        return "naive"
    minority = ~aware if aware.sum() * 2 >= len(aware) else aware
    row = int(np.flatnonzero(minority)[0])
    raise ReceValError(
        f"{side}: column {name!r} mixes times with a time zone and times without one "
        f"({'naive' if minority is not aware else 'with a zone'}) at row {row} (value "
        f"{plain(series.iloc[row])!r}; {int(minority.sum())} bad rows); write every time "
        "with its offset (or none)")


def times(series: pd.Series, side: str, name: str, unit: str | None = None) -> np.ndarray:
    """int64 ns since the epoch (UTC) of a column of datetimes, ISO text or numbers in
    ``unit`` (``"s"``, ``"ms"``, ``"us"``, ``"ns"``); every time within 1677-09-22 ..
    2262-04-11, or an error naming the first row out of it.

    Example:
        >>> times(pd.Series(["1970-01-01T00:00:01Z"]), "feedback", "at").tolist()
        [1000000000]
        >>> times(pd.Series([2]), "feedback", "at", "ms").tolist()
        [2000000]
        >>> times(pd.Series([2]), "feedback", "at")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: feedback: column 'at' holds numbers (row 0: 2) and a number does not say its unit; pass time_unit='s', 'ms', 'us' or 'ns' (--time-unit s|ms|us|ns)
    """  # noqa: E501
    _bad(side, name, series.isna().to_numpy(), series, "has a missing time")
    if pd.api.types.is_bool_dtype(series):
        _bad(side, name, np.ones(len(series), bool), series, "is not a time")
    if pd.api.types.is_numeric_dtype(series):
        if unit is None:
            raise ReceValError(
                f"{side}: column {name!r} holds numbers (row 0: {plain(series.iloc[0])!r}) "
                "and a number does not say its unit; pass time_unit='s', 'ms', 'us' or 'ns' "
                "(--time-unit s|ms|us|ns)")
        return _numeric_times(series, side, name, unit)
    if isinstance(series.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(series):
        # a datetime64 of another unit (s, ms, us) can hold years pandas' ns cannot
        if isinstance(series.dtype, pd.DatetimeTZDtype):
            # the stored ticks are UTC already: read them, no conversion of every row
            ticks = pd.DatetimeIndex(series).asi8
            per = UNITS.get(series.dtype.unit, 1)
        else:
            ticks = series.to_numpy().astype(np.int64)
            per = UNITS.get(np.datetime_data(series.to_numpy().dtype)[0], 1)
        low, high = -(-TIME_MIN // per), TIME_MAX // per
        if len(ticks) and (ticks.min() < low or ticks.max() > high):  # rare: then the rows
            _bad(side, name, (ticks < low) | (ticks > high), series,
                 f"is outside the supported times {RANGE_TEXT}")
        return ticks * per if per != 1 else ticks  # nanoseconds: no copy
    parsed = pd.to_datetime(series, utc=True, errors="coerce", format="ISO8601")
    _bad(side, name, parsed.isna().to_numpy(), series,
         f"is not a time (ISO 8601 expected) within {RANGE_TEXT}")
    ticks, outside = series_ticks(parsed)
    _bad(side, name, outside, series, f"is outside the supported times {RANGE_TEXT}")
    return ticks


def _numeric_times(series: pd.Series, side: str, name: str, unit: str) -> np.ndarray:
    if unit not in UNITS:
        raise ReceValError(f"time_unit must be one of 's', 'ms', 'us', 'ns'; got {unit!r}")
    per = UNITS[unit]
    what = f"is outside the supported times {RANGE_TEXT} (as {unit} since 1970)"
    if pd.api.types.is_integer_dtype(series):
        if pd.api.types.is_unsigned_integer_dtype(series):
            big = series.to_numpy() > np.uint64(TIME_MAX // per)
            _bad(side, name, big, series, what)
        values = series.to_numpy(dtype=np.int64)
        _bad(side, name, (values < -(-TIME_MIN // per)) | (values > TIME_MAX // per), series,
             what)
        return values * per  # exact (floats lose ns at 1e18)
    values = series.to_numpy(dtype=np.float64)
    _bad(side, name, ~np.isfinite(values), series, f"is not a finite number of {unit}")
    with np.errstate(all="ignore"):
        ns = np.round(values * per)
    # float64 bounds just inside int64: the conversion below cannot wrap
    _bad(side, name, (ns < -9.2233720368547e18) | (ns > 9.2233720368547e18), series, what)
    return ns.astype(np.int64)


def _ids(series: pd.Series, side: str, name: str) -> pd.Series:
    """Ids checked and typed by receval.io's policy: int64, or text (a mix of both: text)."""
    values = series.reset_index(drop=True)
    if values.dtype == np.int64:  # no missing value possible: nothing to check
        return values
    _bad(side, name, series.isna().to_numpy(), series, "has a missing id")
    if not len(values):
        return values
    try:
        raw = values.to_numpy(dtype=object) if values.dtype == object else values
        arr = pa.chunked_array([pa.array(raw, from_pandas=True)])
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # numbers and text mixed: all text
        arr = pa.chunked_array([pa.array(values.astype(str).to_numpy(dtype=object))])
    checked = check_id_column(arr, side, name, lambda row: f"row {row}")
    return checked.to_pandas()


def read_impressions(data: Any, *, user_col: str, item_col: str, score_col: str | None,
                     served_col: str, variant_col: str | None,
                     time_unit: str | None = None) -> tuple[pd.DataFrame, str, str | None]:
    """The impressions with columns ``user, item, order, served[, variant]``, whether
    ``order`` is a ``"rank"`` (1 best) or a ``"score"`` (highest best), and the time zone
    kind of ``served`` (:func:`zone_of`).

    Example:
        >>> f, kind, zone = read_impressions({"user": [1], "item": [2], "rank": [1],
        ...     "served_at": ["2024-01-01"]}, user_col="user", item_col="item",
        ...     score_col=None, served_col="served_at", variant_col=None)
        >>> kind, zone, f.columns.tolist()
        ('rank', 'naive', ['user', 'item', 'order', 'served'])
    """
    side = "impressions"
    frame = as_frame(data, side, (user_col, item_col))
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
    _bad(side, score_col, ~np.isfinite(values), order, "is missing or not finite")
    served = _column(frame, served_col, side, "time served").reset_index(drop=True)
    out = pd.DataFrame({
        "user": _ids(_column(frame, user_col, side, "user"), side, user_col),
        "item": _ids(_column(frame, item_col, side, "item"), side, item_col),
        "order": values,
        "served": times(served, side, served_col, time_unit),
    }, copy=False)  # the checked columns as they are: no block of them copied
    if variant_col is not None:
        variant = _column(frame, variant_col, side, "variant")
        _bad(side, variant_col, variant.isna().to_numpy(), variant, "has a missing variant")
        out["variant"] = variant.reset_index(drop=True)
    return out, kind, zone_of(served, side, served_col) if len(served) else None


def read_feedback(data: Any, *, user_col: str, item_col: str, value_col: str,
                  time_col: str, time_unit: str | None = None) -> tuple[pd.DataFrame, str | None]:
    """The feedback with columns ``user, item, value, at``, and the time zone kind of ``at``.

    Example:
        >>> f, zone = read_feedback({"user": [1], "item": [2], "value": [5], "at": [0]},
        ...     user_col="user", item_col="item", value_col="value", time_col="at",
        ...     time_unit="s")
        >>> f.dtypes["value"], zone
        (dtype('float64'), None)
    """
    side = "feedback"
    frame = as_frame(data, side, (user_col, item_col))
    value = _column(frame, value_col, side, "value")
    if not pd.api.types.is_numeric_dtype(value) or pd.api.types.is_bool_dtype(value):
        converted = pd.to_numeric(value, errors="coerce")
        _bad(side, value_col, converted.isna().to_numpy() & value.notna().to_numpy(), value,
             "is not a number")
        value = converted
    values = value.to_numpy(dtype=np.float64)
    _bad(side, value_col, np.isnan(values), value, "is missing")
    _bad(side, value_col, np.isinf(values), value, "is not finite")
    at = _column(frame, time_col, side, "feedback time").reset_index(drop=True)
    out = pd.DataFrame({
        "user": _ids(_column(frame, user_col, side, "user"), side, user_col),
        "item": _ids(_column(frame, item_col, side, "item"), side, item_col),
        "value": values,
        "at": times(at, side, time_col, time_unit),
    }, copy=False)
    return out, zone_of(at, side, time_col) if len(at) else None
