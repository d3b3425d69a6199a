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

from typing import Any

from receval import numbers

#: the note under a table that may hold the cells of this module
NOTE = ("n/a: no evaluated list in the window (see waiting / unjudged), or no interval "
        "(resamples 0, or a summary that is not a mean of per-list values); n = 1: one "
        "evaluated list, so no interval.")


def value_cell(value: Any, kind: numbers.Kind = "value") -> str:
    """A metric's value (:func:`receval.numbers.number`), ``n/a`` when there is none.

    Example:
        >>> value_cell(0.25), value_cell(float("nan"))
        ('0.2500', 'n/a')
    """
    return numbers.number(value, kind)


def interval_cell(low: Any, high: Any, n: int, kind: numbers.Kind = "value") -> str:
    """A window's interval from its bounds and its number of evaluated lists ``n``.

    Example:
        >>> interval_cell(0.1, 0.3, 40), interval_cell(0.1, 0.1, 1)
        ('[0.1000, 0.3000]', 'n = 1')
        >>> interval_cell(float("nan"), float("nan"), 40), interval_cell(0.0, 0.0, 0)
        ('n/a', 'n/a')
    """
    if n == 1:
        return "n = 1"
    return numbers.NA if n < 1 else numbers.interval(low, high, kind)
