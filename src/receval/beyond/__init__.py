"""Beyond-accuracy metrics: coverage, distributional coverage, Gini, novelty, intra-list
diversity, serendipity, popularity bias (ARP, APLT, ACLT, PopREO, PopRSP) and
personalization, exposure fairness over item groups (:mod:`~receval.beyond.fairness`,
:mod:`~receval.beyond.expected_exposure`) and calibration
(:mod:`~receval.beyond.calibration`), computed from ranked top-k lists (``(U, K)`` item
codes, ``-1`` padding) plus training popularity, item features and item groups.

One module per family (:mod:`~receval.beyond.catalogue`, :mod:`~receval.beyond.novelty`,
:mod:`~receval.beyond.diversity`, :mod:`~receval.beyond.serendipity`,
:mod:`~receval.beyond.popularity`), each with its cited formula; the switches where libraries
differ are :class:`~receval.beyond.settings.BeyondOptions`, the names
:mod:`~receval.beyond.names` (which also says which metrics are per user and which reduce
over the catalogue). :func:`receval.evaluate` computes them from the engine's lists;
:func:`~receval.beyond.frames.beyond_metrics` from a frame of ranked lists;
:mod:`~receval.beyond.report_data` gives the report's tables. docs/beyond-accuracy.md
describes every formula and how the libraries differ; docs/fairness.md the fairness and
calibration metrics.
"""


from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from receval.beyond.frames import beyond_metrics
    from receval.beyond.settings import BeyondOptions

#: each public name -> its module, imported on first access (PEP 562): the metric names
#: (:mod:`~receval.beyond.names`) are read by every evaluation, the computing code (scipy)
#: only by the evaluations that ask for a beyond-accuracy metric
PUBLIC = {"beyond_metrics": "receval.beyond.frames", "BeyondOptions": "receval.beyond.settings"}

__all__ = ["BeyondOptions", "beyond_metrics"]


def __getattr__(name: str) -> Any:
    """``beyond_metrics`` and ``BeyondOptions``, imported when first asked for."""
    value: Any
    if name == "beyond_metrics":
        from receval.beyond.frames import beyond_metrics as value
    elif name == "BeyondOptions":
        from receval.beyond.settings import BeyondOptions as value
    else:
        raise AttributeError(f"module 'receval.beyond' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC})
