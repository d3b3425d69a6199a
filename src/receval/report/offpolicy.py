"""The off-policy section of an HTML report: per target policy, each estimator's value with its
bootstrap and normal intervals and the importance weights' diagnostics (effective sample size,
largest weight and its share, support), from the table of ``receval.offpolicy.estimate``.

One offline page (:func:`page`) or a section (:func:`section_html`) for another page; jinja2 with
autoescape, no script, the Content-Security-Policy of the other reports.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd

from receval import numbers
from receval._version import __version__

TEMPLATES = Path(__file__).parent / "templates"
#: the columns of the estimate table that are not groups
TABLE_COLUMNS = ("target", "estimator", "value", "ci_low", "ci_high", "ess", "max_weight",
                 "max_weight_share", "mean_weight", "support_missing", "se", "normal_low",
                 "normal_high", "n_requests", "n_rows", "target_rows_dropped",
                 "weights_blow_up")


def _group(value: Any) -> str:
    if isinstance(value, pd.Timestamp):
        return str(value.date()) if value == value.normalize() else str(value)
    return "" if value is None else str(value)


def section_context(table: pd.DataFrame, confidence: float = 0.95,
                    resamples: int | None = None) -> dict[str, Any]:
    """The template's values: the group columns and, per target, its rows as text.

    Example:
        >>> t = pd.DataFrame({"target": ["new"], "estimator": ["ips"], "value": [0.5],
        ...     "ci_low": [0.4], "ci_high": [0.6], "ess": [90.0], "max_weight": [3.0],
        ...     "max_weight_share": [0.02], "support_missing": [0], "normal_low": [0.41],
        ...     "normal_high": [0.59], "n_requests": [100], "n_rows": [100]})
        >>> row = section_context(t)["targets"][0]["rows"][0]
        >>> row["value"], row["ci"], row["flag"]
        ('0.5000', '[0.4000, 0.6000]', False)
    """
    groups = [c for c in table.columns if c not in TABLE_COLUMNS]
    targets = []
    for name in dict.fromkeys(table["target"]):
        part = table[table["target"] == name]
        rows = [{"groups": [_group(r[g]) for g in groups], "estimator": str(r["estimator"]),
                 "value": numbers.value(r["value"]),
                 "ci": numbers.interval(r["ci_low"], r["ci_high"]),
                 "normal": numbers.interval(r.get("normal_low"), r.get("normal_high")),
                 "ess": numbers.count(r["ess"]), "rows": int(r["n_rows"]),
                 "max_weight": numbers.value(r["max_weight"]),
                 "share": numbers.share(r["max_weight_share"]),
                 "support": int(r["support_missing"]), "requests": int(r["n_requests"]),
                 "flag": bool(r.get("weights_blow_up", False))}
                for r in part.to_dict(orient="records")]
        targets.append({"name": str(name), "rows": rows})
    ci = f"{confidence:.0%} bootstrap percentile over requests"
    if resamples is not None:
        ci += f" ({resamples} resamples)"
    return {"group_cols": groups, "targets": targets, "ci_text": ci}


def _env() -> Any:
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              keep_trailing_newline=True)


def section_html(table: pd.DataFrame, confidence: float = 0.95,
                 resamples: int | None = None) -> str:
    """The section alone (an ``<h2>`` and one table per target), escaped, for another page.

    Example:
        >>> t = pd.DataFrame({"target": ["<b>"], "estimator": ["dm"], "value": [0.5],
        ...     "ci_low": [0.4], "ci_high": [0.6], "ess": [float("nan")],
        ...     "max_weight": [float("nan")], "max_weight_share": [float("nan")],
        ...     "support_missing": [0], "n_requests": [1], "n_rows": [1]})
        >>> html = section_html(t)
        >>> "&lt;b&gt;" in html and "<b>" not in html
        True
    """
    return str(_env().get_template("offpolicy_section.html.j2")
               .render(**section_context(table, confidence, resamples)))


def page(table: pd.DataFrame, *, title: str = "receval off-policy estimates",
         confidence: float = 0.95, resamples: int | None = None,
         timestamp: bool = False) -> str:
    """One offline HTML page of the estimates (the same input gives the same bytes unless
    ``timestamp=True``).

    Example:
        >>> t = pd.DataFrame({"target": ["new"], "estimator": ["ips"], "value": [0.5],
        ...     "ci_low": [0.4], "ci_high": [0.6], "ess": [90.0], "max_weight": [3.0],
        ...     "max_weight_share": [0.02], "support_missing": [0], "n_requests": [100],
        ...     "n_rows": [100]})
        >>> html = page(t)
        >>> "Content-Security-Policy" in html and "<script" not in html
        True
    """
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds") if timestamp \
        else ""
    return str(_env().get_template("offpolicy.html.j2").render(
        title=title, version=__version__, stamp=stamp,
        **section_context(table, confidence, resamples)))
