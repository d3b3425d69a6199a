"""receval: exact, explicit and fast evaluation of recommender systems.

Example:
    >>> import receval
    >>> r = receval.evaluate({"user": [1, 1], "item": [1, 2]},
    ...                      {"user": [1, 1], "item": [2, 3], "score": [0.9, 0.1]},
    ...                      ["P@1", "nDCG@2"])
    >>> r.summary["P@1"]
    1.0
"""

from receval._version import __version__
from receval.evaluation import evaluate
from receval.exceptions import ReceValError, UndefinedMetricError, UndefinedMetricWarning
from receval.measures.spec import MetricSpec, parse_metric, parse_metrics
from receval.options import Options
from receval.result import Result

__all__ = [
    "MetricSpec",
    "Options",
    "ReceValError",
    "Result",
    "UndefinedMetricError",
    "UndefinedMetricWarning",
    "__version__",
    "evaluate",
    "parse_metric",
    "parse_metrics",
]
