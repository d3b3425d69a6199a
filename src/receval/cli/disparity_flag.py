"""``--disparity`` of ``receval evaluate``: the gap in each metric between the groups of users
of ``--strata``, with an unpaired test (:func:`receval.disparity.disparity`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
import pandas as pd

from receval.exceptions import ReceValError
from receval.io.terminal import safe_text
from receval.stats import UNPAIRED_TESTS


def disparity_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """The ``--disparity TEST`` flag."""
    return click.option(
        "--disparity", default=None, type=click.Choice(UNPAIRED_TESTS),
        help="With --strata: the gap in each per-user metric between every two groups of "
             "users, its interval and an unpaired test (welch: Welch's t; permutation: the "
             "group labels permuted 10,000 times, bootstrap interval), Holm-corrected.")(f)


def check_disparity(params: dict[str, Any], fmt: str) -> None:
    """One line when ``--disparity`` lacks what it needs.

    Example:
        >>> check_disparity({"disparity": "welch"}, "table")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: --disparity compares groups of users: pass --strata \
(a user -> group file, or activity, cold...)
    """
    if not params.get("disparity"):
        return
    if not params.get("strata"):
        raise ReceValError("--disparity compares groups of users: pass --strata (a user -> "
                           "group file, or activity, cold...)")
    if fmt != "table":
        raise ReceValError(f"--disparity prints a table: use --format table (not {fmt}), or "
                           "receval.disparity.disparity in Python")


def disparity_tables(results: dict[str, Any], strata: Any, train: Any,
                     params: dict[str, Any], width: int = 100) -> tuple[Any, str]:
    """The rich tables of the gaps (every model, every per-user metric), fitting ``width``
    columns, and their footnote."""
    from receval.disparity import disparity, disparity_footnote

    test = params["disparity"]
    resamples = params.get("resamples")
    table = disparity(results, strata, test=test, seed=params.get("seed") or 0, train=train,
                      n_resamples=10_000 if resamples is None else int(resamples))
    return _rich(table, several=len(results) > 1, width=width), disparity_footnote(table)


def _rich(table: pd.DataFrame, *, several: bool, width: int = 100) -> Any:
    """The gaps as tables that fit ``width`` columns (:func:`receval.report.fit.fit_tables`)."""
    from receval import numbers
    from receval.report.fit import fit_tables

    headers = ["model"] if several else []
    headers += ["metric", "group", "reference", "mean", "ref. mean", "gap", "interval",
                "p", "p adj.", "users", "ref. users"]
    rows = []
    for row in table.itertuples(index=False):
        cells = [safe_text(str(row.model))] if several else []
        cells += [safe_text(str(row.metric)), safe_text(str(row.group)),
                  safe_text(str(row.reference)), numbers.value(row.mean),
                  numbers.value(row.reference_mean), numbers.delta(row.gap),
                  numbers.interval(row.ci_low, row.ci_high, "delta"),
                  numbers.p_value(row.p_value), numbers.p_value(row.p_adjusted),
                  numbers.count(row.n), numbers.count(row.reference_n)]
        rows.append(cells)
    left = ("model", "metric", "group", "reference")
    return fit_tables(headers, rows, width, keys=4 if several else 3,
                      right=[h for h in headers if h not in left],
                      title="gap between groups of users")

