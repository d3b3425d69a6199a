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

def _submodules() -> dict[str, Any]:
    import importlib

    return {  # each name written out: the layer check reads every import's target
        "beyond": lambda: importlib.import_module("receval.report.beyond"),
        "bootstrap": lambda: importlib.import_module("receval.report.bootstrap"),
        "fairness": lambda: importlib.import_module("receval.report.fairness"),
        "fit": lambda: importlib.import_module("receval.report.fit"),
        "html": lambda: importlib.import_module("receval.report.html"),
        "models": lambda: importlib.import_module("receval.report.models"),
        "notebook": lambda: importlib.import_module("receval.report.notebook"),
        "offpolicy": lambda: importlib.import_module("receval.report.offpolicy"),
        "page": lambda: importlib.import_module("receval.report.page"),
        "plots": lambda: importlib.import_module("receval.report.plots"),
        "significance": lambda: importlib.import_module("receval.report.significance"),
        "tables": lambda: importlib.import_module("receval.report.tables"),
    }


def __getattr__(name: str) -> Any:
    """A submodule of the report (``receval.report.tables``), imported when first asked for:
    matplotlib and jinja2 load with the plots and the page only."""
    load = _submodules().get(name)
    if load is None:
        raise AttributeError(f"module 'receval.report' has no attribute {name!r}")
    return load()
