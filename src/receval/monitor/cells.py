"""How the monitor's table and report show a window's value and interval: never an empty
cell nor ``[, ]``, and no zero-width interval passed off as precise.

- no evaluated list in the window: value and interval ``n/a`` (the counts say why: waiting
  or unjudged lists);
- one evaluated list: the value, and ``n = 1`` for the interval (a bootstrap of one value is
  that value: its zero width says nothing about the spread);
- no interval (``n_resamples=0``, or a summary that is not a mean of per-list values: micro
  average, RMSE, MAE): ``n/a``;
- otherwise ``[low, high]``.

:data:`NOTE` explains the ``n/a`` cells under a table.
"""

from __future__ import annotations

import math
from typing import Any

#: the note under a table that may hold the cells of this module
NOTE = ("n/a: no evaluated list in the window (see waiting / unjudged), or no interval "
        "(resamples 0, or a summary that is not a mean of per-list values); n = 1: one "
        "evaluated list, so no interval.")


def _finite(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def value_cell(value: Any, spec: str = ".4f") -> str:
    """A metric's value, ``n/a`` when there is none.

    Example:
        >>> value_cell(0.25), value_cell(float("nan"))
        ('0.2500', 'n/a')
    """
    v = _finite(value)
    return "n/a" if v is None else format(v, spec)


def interval_cell(low: Any, high: Any, n: int, spec: str = ".4f") -> str:
    """A window's interval from its bounds and its number of evaluated lists ``n``.

    Example:
        >>> interval_cell(0.1, 0.3, 40), interval_cell(0.1, 0.1, 1)
        ('[0.1000, 0.3000]', 'n = 1')
        >>> interval_cell(float("nan"), float("nan"), 40), interval_cell(0.0, 0.0, 0)
        ('n/a', 'n/a')
    """
    if n == 1:
        return "n = 1"
    lo, hi = _finite(low), _finite(high)
    if n < 1 or lo is None or hi is None:
        return "n/a"
    return f"[{format(lo, spec)}, {format(hi, spec)}]"
