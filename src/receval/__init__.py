"""receval: exact, explicit and fast evaluation of recommender systems.

Example:
    >>> import receval
    >>> r = receval.evaluate({"user": [1, 1], "item": [1, 2]},
    ...                      {"user": [1, 1], "item": [2, 3], "score": [0.9, 0.1]},
    ...                      ["P@1", "nDCG@2"])
    >>> r.summary["P@1"]
    1.0

Every documented submodule is reachable from ``import receval`` alone, loaded on first use:

    >>> receval.metrics.precision_at_k([1, 0, 1], [0.9, 0.8, 0.1], 2)
    0.5
    >>> receval.explain.explain("trec_eval", "ranx").a
    'trec_eval'
"""

import importlib
from types import ModuleType

# report lends Result its plot and notebook views, tracking its log method
from receval import report, tracking  # noqa: F401
from receval._version import __version__
from receval.compare import Comparison, compare
from receval.evaluation import evaluate
from receval.exceptions import ReceValError, UndefinedMetricError, UndefinedMetricWarning
from receval.gates import Gate, check
from receval.measures.spec import MetricSpec, parse_metric, parse_metrics
from receval.monitor import Monitor, monitor
from receval.options import Options
from receval.result import Result
from receval.scores import evaluate_scores

#: submodules loaded on first attribute access (``receval.metrics.ndcg_at_k``): importing them
#: eagerly would load matplotlib and jinja2 for every evaluation
SUBMODULES = ("adapters", "explain", "io", "metrics", "options", "profiles", "report", "result",
              "sampled", "split", "baselines", "training", "disparity", "sequential", "text")

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


def __getattr__(name: str) -> ModuleType:
    if name in SUBMODULES:
        module = importlib.import_module(f"receval.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'receval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *SUBMODULES})
