"""The flags of the served logs that ``receval monitor`` and ``receval offpolicy`` both read
(impressions, feedback, attribution, calendar windows, variant, time unit, the logger's
propensity column and the target policies): declared once here,
each command giving its own help where the meaning differs in detail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from receval.monitor.inputs import UNITS

Decorator = Callable[[Any], Any]


def impressions(required: bool, help: str) -> Decorator:
    """``--impressions`` / ``-i``: the served impressions file."""
    return click.option("--impressions", "-i", required=required,
                        metavar="FILE", help=help)


def feedback(required: bool, help: str = "What users did: user, item, value, at.") -> Decorator:
    """``--feedback``: the feedback file."""
    return click.option("--feedback", required=required, metavar="FILE",
                        help=help)


def attribution() -> Decorator:
    """``--attribution``: monitor's attribution period."""
    return click.option("--attribution", default="7D", show_default=True,
                        help="Feedback judges an impression served at s when s <= at <= s + "
                             "this.")


def window() -> Decorator:
    """``--window``: monitor's calendar windows."""
    return click.option("--window", default="7D", show_default=True,
                        help="Calendar windows: 7D or W (weeks from Monday, unless --origin), "
                             "D, 12h, ...")


def origin() -> Decorator:
    """``--origin``: the start of the window grid."""
    return click.option("--origin", default=None, metavar="TIME",
                        help="Start of the first window grid.")


def variant_col() -> Decorator:
    """``--variant-col``: the column of the variant served."""
    return click.option("--variant-col", default=None,
                        help="Column of the model or variant served.")


def time_unit() -> Decorator:
    """``--time-unit``: the unit of numeric times."""
    return click.option("--time-unit", type=click.Choice(tuple(UNITS)), default=None,
                        help="Unit of numeric times (since 1970-01-01 UTC); required when a "
                             "time column holds numbers.")


def propensity_col(help: str) -> Decorator:
    """``--propensity-col``: the impressions' column of the logger's probabilities."""
    return click.option("--propensity-col", default="propensity", show_default=True, help=help)


def targets(required: bool, help: str) -> Decorator:
    """``--target NAME=FILE`` (repeated): the target policies of the off-policy estimates."""
    return click.option("--target", "targets", required=required, multiple=True,
                        metavar="NAME=FILE", help=help)
