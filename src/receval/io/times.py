"""Times as int64 nanoseconds since the epoch, the range pandas can hold, checked: a date
outside 1677-09-22 .. 2262-04-11 is refused, never wrapped (pandas 3 parses ISO text into
microseconds, where year 3000 fits; a plain conversion to nanoseconds then overflows into
1830)."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the supported range of times: pandas' int64 nanoseconds
TIME_MIN, TIME_MAX = int(pd.Timestamp.min.value), int(pd.Timestamp.max.value)
RANGE_TEXT = "1677-09-22 .. 2262-04-11"
#: nanoseconds per unit of a datetime64 or a numeric time column
UNITS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def ns_ticks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``values`` (datetime64 of any unit, naive UTC, no NaT) as int64 nanoseconds, and a mask
    of the values outside :data:`RANGE_TEXT` (their ticks are then meaningless).

    Example:
        >>> ticks, outside = ns_ticks(np.array(["1970-01-01T00:00:01", "3000-01-01"],
        ...                                     dtype="datetime64[us]"))
        >>> int(ticks[0]), outside.tolist()
        (1000000000, [False, True])
    """
    unit = np.datetime_data(values.dtype)[0]
    per = UNITS.get(unit)
    raw = values.astype(np.int64)
    if per is None:  # days, minutes...: through seconds, which hold every one of them
        raw = values.astype("datetime64[s]").astype(np.int64)
        per = UNITS["s"]
    low, high = -(-TIME_MIN // per), TIME_MAX // per
    outside = (raw < low) | (raw > high)
    return np.where(outside, 0, raw) * per, outside


def series_ticks(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A datetime Series (naive or with a zone: UTC ticks) as :func:`ns_ticks`.

    Example:
        >>> s = pd.to_datetime(pd.Series(["3000-01-01T00:00:00Z"]), utc=True, format="ISO8601")
        >>> ns_ok = series_ticks(s)[1].tolist()
        >>> ns_ok
        [True]
    """
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        series = series.dt.tz_convert("UTC").dt.tz_localize(None)
    return ns_ticks(series.to_numpy())
