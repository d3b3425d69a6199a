"""receval: exact, explicit and fast evaluation of recommender systems.

Example:
    >>> import receval
    >>> r = receval.evaluate({"user": [1, 1], "item": [1, 2]},
    ...                      {"user": [1, 1], "item": [2, 3], "score": [0.9, 0.1]},
    ...                      ["P@1", "nDCG@2"])
    >>> r.summary["P@1"]
    1.0

Every public name and every documented submodule is reachable from ``import receval`` alone,
loaded on first use (PEP 562), so ``import receval`` loads neither pandas nor numba, and
``receval --help`` answers at once:

    >>> receval.metrics.precision_at_k([1, 0, 1], [0.9, 0.8, 0.1], 2)
    0.5
    >>> receval.explain.explain("trec_eval", "ranx").a
    'trec_eval'
    >>> callable(receval.compare) and callable(receval.monitor)  # functions, not the modules
    True
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names below are, for type checkers and IDEs
    from receval.compare import Comparison, compare
    from receval.evaluation import evaluate
    from receval.exceptions import ReceValError, UndefinedMetricError, UndefinedMetricWarning
    from receval.gates import Gate, check
    from receval.measures.spec import MetricSpec, parse_metric, parse_metrics
    from receval.monitor import Monitor, monitor
    from receval.options import Options
    from receval.result import Result
    from receval.scores import evaluate_scores

#: each public name -> the module that defines it, imported on first access
PUBLIC = {
    "Comparison": "receval.compare",
    "compare": "receval.compare",
    "evaluate": "receval.evaluation",
    "ReceValError": "receval.exceptions",
    "UndefinedMetricError": "receval.exceptions",
    "UndefinedMetricWarning": "receval.exceptions",
    "Gate": "receval.gates",
    "check": "receval.gates",
    "MetricSpec": "receval.measures.spec",
    "parse_metric": "receval.measures.spec",
    "parse_metrics": "receval.measures.spec",
    "Monitor": "receval.monitor",
    "monitor": "receval.monitor",
    "Options": "receval.options",
    "Result": "receval.result",
    "evaluate_scores": "receval.scores",
}

#: submodules loaded on first attribute access (``receval.metrics.ndcg_at_k``)
SUBMODULES = ("adapters", "explain", "io", "metrics", "options", "profiles", "report", "result",
              "sampled", "split", "baselines", "training", "disparity", "tracking", "beyond",
              "offpolicy", "gates", "stats", "sequential", "text", "streaming")

__all__ = [
    "Comparison",
    "Gate",
    "MetricSpec",
    "Monitor",
    "Options",
    "ReceValError",
    "Result",
    "UndefinedMetricError",
    "UndefinedMetricWarning",
    "__version__",
    "check",
    "compare",
    "evaluate",
    "evaluate_scores",
    "monitor",
    "parse_metric",
    "parse_metrics",
]


def __getattr__(name: str) -> Any:
    """A public name or a submodule, imported when first asked for (then kept)."""
    value: Any
    if name == "__version__":  # importlib.metadata takes ~0.1 s: read when asked
        from receval._version import __version__ as value
    elif name in PUBLIC:
        value = getattr(importlib.import_module(PUBLIC[name]), name)
    elif name in SUBMODULES:
        value = importlib.import_module(f"receval.{name}")
    else:
        raise AttributeError(f"module 'receval' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC, *SUBMODULES, "__version__"})


class _Package(ModuleType):
    """``receval`` itself: importing the submodule ``receval.compare`` (or ``receval.monitor``)
    must not replace the function of that name on the package, as the import system does when
    it binds a newly loaded submodule to its parent."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and PUBLIC.get(name) == value.__name__:
            return  # ``receval.compare`` stays the function: __getattr__ gives it
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
