"""The HTML a notebook shows for a :class:`~receval.result.Result` (no template needed).

Every text that comes from the data or the caller (metric names, ids, option values) is
escaped as the report's templates escape it (:func:`receval.report.page.escape`); numbers are
written as everywhere else (:mod:`receval.numbers`: 4 decimals, ``n/a`` when missing).
"""

from __future__ import annotations

from typing import Any

from receval import numbers
from receval.report.page import escape
from receval.result import Result

_STYLE = (
    "<style>.receval-result table{border-collapse:collapse;margin:4px 0}"
    ".receval-result td,.receval-result th{padding:2px 10px;text-align:right}"
    ".receval-result td:first-child,.receval-result th:first-child{text-align:left}"
    ".receval-result details{margin-top:4px}.receval-result summary{cursor:pointer}</style>"
)


def result_html(result: Result, max_users: int = 5) -> str:
    """A compact, escaped HTML view: the summary, who was evaluated, options and per-user head.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": ["<b>"], "item": [1]},
        ...     {"user": ["<b>"], "item": [1], "score": [1.0]}, ["P@1"])
        >>> html = result_html(r)
        >>> "&lt;b&gt;" in html and "<b>" not in html
        True
    """
    users = result.counts["users"]
    rows = "".join(
        f"<tr><td>{escape(str(name))}</td><td>{_fmt(value)}</td></tr>"
        for name, value in result.summary.items()
    )
    caption = (
        f"receval: {users['evaluated']} users evaluated ({users['without_predictions']} without "
        f"predictions, {users['without_relevant']} without a relevant item)"
    )
    return (
        f'<div class="receval-result">{_STYLE}'
        f"<table><caption>{escape(caption)}</caption>"
        f"<thead><tr><th>metric</th><th>value</th></tr></thead><tbody>{rows}</tbody></table>"
        f"{_details('options', _pairs(dict(result.options)))}"
        f"{_details('rows read and dropped', _pairs(result.counts['rows']))}"
        f"{_details(f'per user (first {max_users})', _per_user(result, max_users))}"
        "</div>"
    )


def _fmt(value: Any) -> str:
    """A float as a metric's value (:func:`receval.numbers.value`), anything else as text."""
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        value = value.item()
    if isinstance(value, float):
        return numbers.value(value)
    return escape(str(value))


def _pairs(mapping: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{escape(str(k))}</td><td>{_value(v)}</td></tr>" for k, v in mapping.items()
    )
    return f"<table>{rows}</table>"


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return escape(", ".join(f"{k}={v}" for k, v in value.items()))
    return _fmt(value)


def _per_user(result: Result, n: int) -> str:
    head = result.per_user.head(n)
    header = "".join(f"<th>{escape(str(c))}</th>" for c in head.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in row) + "</tr>"
        for row in head.itertuples(index=False)
    )
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def _details(title: str, body: str) -> str:
    return f"<details><summary>{escape(title)}</summary>{body}</details>"
