"""How every number receval shows to a person is written: one rule for every door.

Human-facing outputs (the terminal tables of ``evaluate``, ``compare``, ``monitor``,
``explain`` and ``gate``; Markdown; LaTeX; the HTML report, the monitor page and the
notebook view) write each number with :func:`number`, by what the number is:

==========  =================================  ===============================
kind        what                               written as
==========  =================================  ===============================
``value``   a metric's value, a mean, a bound  4 decimals: ``0.2500``
``delta``   a difference between two values   4 decimals, signed: ``+0.0125``
``p``       a p-value                          3 significant digits: ``0.0312``,
                                               ``1.2e-05``; below 1e-16: ``< 1e-16``
``effect``  an effect size, a probability      3 decimals: ``0.412``
``share``   a share of users or rows           a percentage, 1 decimal: ``12.5%``
``count``   a count                            an integer, thousands separated:
                                               ``12,345``
``size``    a size that need not be whole (an  1 decimal, thousands separated:
            effective sample size)             ``746.9``, ``12,345.0``
==========  =================================  ===============================

A missing number (``None``, NaN: a metric undefined for every user, an interval of nothing)
is :data:`NA`, ``n/a``, everywhere: never an empty cell (a reader cannot tell it from a
layout slip) nor ``nan``. An infinity is written ``inf``.

Machine outputs keep every bit: JSON writes a float as Python's ``repr`` and a missing
number as ``null`` (:func:`json_number`); CSV and TSV write ``repr`` and a missing number
as an empty cell (:func:`receval.io.text_tables.text_cell`), so both read back exactly.
"""

from __future__ import annotations

import math
from typing import Any, Literal

#: a missing number, as every human-facing output writes it
NA = "n/a"

#: what a number is, which decides how it is written (the module's table)
Kind = Literal["value", "delta", "p", "effect", "share", "count", "size"]

#: below this a p-value is written ``< 1e-16``: so far from 0.5 the test's assumptions, not
#: its arithmetic, decide the digits (a t of 40 on 2,000 users gives about 1e-250)
P_FLOOR = 1e-16

#: the format spec of each kind
SPECS: dict[str, str] = {"value": ".4f", "delta": "+.4f", "p": ".3g", "effect": ".3f",
                         "share": ".1%", "count": ",d", "size": ",.1f"}


def _float(x: Any) -> float | None:
    """``x`` as a float, ``None`` when it is missing (``None``, NaN, pandas' NA)."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def number(x: Any, kind: Kind = "value") -> str:
    """``x`` as a person reads it: see the module's table; ``n/a`` when missing.

    Example:
        >>> number(0.25), number(float("nan")), number(None), number(0.0125, "delta")
        ('0.2500', 'n/a', 'n/a', '+0.0125')
        >>> number(0.031234, "p"), number(1.2e-5, "p"), number(12345, "count")
        ('0.0312', '1.2e-05', '12,345')
        >>> number(0.41234, "effect"), number(0.125, "share"), number(float("inf"))
        ('0.412', '12.5%', 'inf')
        >>> number(746.999, "size"), number(0.002, "share")  # never truncated to 746, 0%
        ('747.0', '0.2%')
    """
    v = _float(x)
    if v is None:
        return NA
    if kind == "count":
        return format(int(v), SPECS["count"]) if math.isfinite(v) else format(v)
    if kind == "p" and v < P_FLOOR:
        return f"< {P_FLOOR:g}"
    return format(v, SPECS[kind])


def value(x: Any) -> str:
    """A metric's value (4 decimals), ``n/a`` when missing.

    Example:
        >>> value(1), value(float("nan"))
        ('1.0000', 'n/a')
    """
    return number(x, "value")


def delta(x: Any) -> str:
    """A difference (4 decimals, signed), ``n/a`` when missing.

    Example:
        >>> delta(-0.5), delta(0.0)
        ('-0.5000', '+0.0000')
    """
    return number(x, "delta")


def p_value(x: Any) -> str:
    """A p-value (3 significant digits; below 1e-16 ``< 1e-16``), ``n/a`` when missing.

    Example:
        >>> p_value(1.0), p_value(0.000123456), p_value(3e-250)
        ('1', '0.000123', '< 1e-16')
    """
    return number(x, "p")


def effect(x: Any) -> str:
    """An effect size or a probability (3 decimals), ``n/a`` when missing.

    Example:
        >>> effect(0.5)
        '0.500'
    """
    return number(x, "effect")


def share(x: Any) -> str:
    """A share (a percentage, 1 decimal), ``n/a`` when missing.

    Example:
        >>> share(1 / 3)
        '33.3%'
    """
    return number(x, "share")


def count(x: Any) -> str:
    """A count (an integer, thousands separated), ``n/a`` when missing.

    Example:
        >>> count(1000000), count(3.0)
        ('1,000,000', '3')
    """
    return number(x, "count")


def interval(low: Any, high: Any, kind: Kind = "value") -> str:
    """``[low, high]``, each end written as ``kind``; ``n/a`` when either end is missing.

    Example:
        >>> interval(0.1, 0.3), interval(-0.01, 0.02, "delta"), interval(float("nan"), 1.0)
        ('[0.1000, 0.3000]', '[-0.0100, +0.0200]', 'n/a')
    """
    if _float(low) is None or _float(high) is None:
        return NA
    return f"[{number(low, kind)}, {number(high, kind)}]"


def json_number(x: Any) -> Any:
    """A number for JSON: every bit kept (a float stays the float), a missing or infinite
    one ``None`` (JSON ``null``; JSON has no NaN or infinity); anything else as is.

    Example:
        >>> import numpy as np
        >>> json_number(np.float64(0.1)), json_number(float("nan")), json_number(np.int64(3))
        (0.1, None, 3)
    """
    if hasattr(x, "item") and not isinstance(x, str):  # numpy scalars
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
