"""Calendar windows and the attribution period: parsing and assigning times (int64 ns, UTC).

``window="7D"`` and ``"W"`` (``"2W"``, ``"14D"``: any whole number of weeks) cut time into
weeks starting on Mondays, 00:00 UTC (ISO weeks; origin 1970-01-05) unless ``origin`` is
given; ``"D"`` is one day; any other pandas duration (``"12h"``, ``"3D"``) is aligned to the
Unix epoch (1970-01-01 00:00 UTC). A time ``t`` falls in the window ``[start, start + width)`` with
``start = origin + floor((t - origin) / width) * width``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError

#: the origin of weekly ("W") windows: a Monday
MONDAY = pd.Timestamp("1970-01-05", tz="UTC")
EPOCH = pd.Timestamp("1970-01-01", tz="UTC")


@dataclass(frozen=True)
class Windows:
    """Calendar windows of ``width`` ns starting at ``origin`` (ns since the epoch).

    Example:
        >>> w = parse_window("W")
        >>> start = w.start_of(np.array([pd.Timestamp("2024-01-10", tz="UTC").value]))[0]
        >>> pd.Timestamp(int(start), tz="UTC")
        Timestamp('2024-01-08 00:00:00+0000', tz='UTC')
    """

    spec: str
    width: int
    origin: int

    def start_of(self, times: np.ndarray) -> np.ndarray:
        """The start (ns) of the window of each time (ns)."""
        t = np.asarray(times, dtype=np.int64)
        return self.origin + np.floor_divide(t - self.origin, self.width) * self.width


def _duration(text: str, what: str, zero: bool = False) -> pd.Timedelta:
    spec = text.strip()
    if re.fullmatch(r"[A-Za-z]+", spec):
        spec = "1" + spec
    if re.fullmatch(r"\d+W", spec, re.I):
        spec = f"{int(spec[:-1]) * 7}D"
    try:
        value = pd.Timedelta(spec)
    except (ValueError, TypeError):
        raise ReceValError(f"{what} {text!r} is not a duration (e.g. '7D', 'W', '12h')") from None
    if value < pd.Timedelta(0) or (value == pd.Timedelta(0) and not zero):
        least = "zero or more" if zero else "positive"
        raise ReceValError(f"{what} must be {least}, got {text!r}")
    return value


def parse_window(window: str, origin: str | pd.Timestamp | None = None) -> Windows:
    """The calendar windows of ``window`` (see the module text).

    Example:
        >>> parse_window("7D").width == 7 * 86_400 * 10**9, parse_window("D").origin
        (True, 0)
        >>> pd.Timestamp(parse_window("7D").origin, tz="UTC").day_name()  # ISO weeks
        'Monday'
    """
    if not isinstance(window, str):
        raise ReceValError(f"window must be a duration text such as '7D', got {window!r}")
    width = _duration(window, "window")
    weekly = width % pd.Timedelta("7D") == pd.Timedelta(0)  # "7D" is a week, as "W" is
    if origin is None:
        start = MONDAY if weekly else EPOCH
    else:
        try:
            start = pd.Timestamp(origin)
        except (ValueError, TypeError):
            raise ReceValError(f"origin {origin!r} is not a time") from None
        start = start.tz_localize("UTC") if start.tzinfo is None else start.tz_convert("UTC")
    return Windows(window, int(width.value), int(start.value))


def parse_attribution(attribution: str, what: str = "attribution", *,
                      zero: bool = False) -> int:
    """The attribution period in ns; ``zero``: a zero duration is allowed (the lateness: ``0s``,
    ``0D`` and ``0`` alike).

    Example:
        >>> parse_attribution("1h") == 3600 * 10**9
        True
        >>> parse_attribution("0D", "lateness", zero=True), parse_attribution("0", zero=True)
        (0, 0)
    """
    if not isinstance(attribution, str):
        raise ReceValError(f"{what} must be a duration text such as '7D', got {attribution!r}")
    if zero and attribution.strip() == "0":
        return 0
    return int(_duration(attribution, what, zero).value)
