"""What a person reads: summary tables (rich, JSON, CSV, Markdown, LaTeX), plots, the HTML
report and the notebook view. Plots and the HTML report need ``pip install 'receval[plot]'``
(matplotlib, jinja2).

Loading this package lends :class:`~receval.result.Result` its :meth:`~receval.result.Result.plot`
and notebook view (:data:`receval.result.VIEWS`); matplotlib and jinja2 load only when used.

Example:
    >>> import receval.report
    >>> from receval.result import VIEWS
    >>> {"html", "plot"} <= set(VIEWS)  # receval.tracking lends "log" the same way
    True
"""

from __future__ import annotations

from typing import Any

from receval.result import VIEWS, Result


def _plot(result: Result, kind: str, path: str | None = None, **kwargs: Any) -> Any:
    from receval.report.plots import plot

    return plot(result, kind, path, **kwargs)


def _html(result: Result) -> str:
    from receval.report.notebook import result_html

    return result_html(result)


VIEWS.update(plot=_plot, html=_html)

#: the modules of this package, each loaded on first attribute access
#: (``receval.report.tables``): matplotlib and jinja2 load with the plots and the page only
SUBMODULES = ("beyond", "bootstrap", "fairness", "fit", "html", "models", "notebook",
              "offpolicy", "page", "plots", "significance", "tables")


def __getattr__(name: str) -> Any:
    """A submodule of the report, imported when first asked for."""
    if name not in SUBMODULES:
        raise AttributeError(f"module 'receval.report' has no attribute {name!r}")
    import importlib

    return importlib.import_module(f"receval.report.{name}")
