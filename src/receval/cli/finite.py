"""A click number range that refuses NaN: ``click.FloatRange`` compares the value with its
bounds, and every comparison with NaN is false, so ``--lock-timeout nan`` passed."""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteRange(click.FloatRange):
    """:class:`click.FloatRange` that also refuses ``nan`` (one-line usage error, exit 2).

    Example:
        >>> FiniteRange(0, None).convert("1.5", None, None)
        1.5
        >>> FiniteRange(0, None).convert("nan", None, None)
        Traceback (most recent call last):
        ...
        click.exceptions.BadParameter: 'nan' is not a number.
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if isinstance(number, float) and math.isnan(number):
            self.fail(f"{value!r} is not a number.", param, ctx)
        return number
