"""Next-item evaluation of sequential and session recommenders (docs/sequential.md).

:func:`queries` makes the queries of a protocol (``"next"``, ``"last"``, ``"rest"``) from
training and test events; :func:`evaluate` evaluates one ranked list per query with
:func:`receval.evaluate`, the history kept or excluded, and splits each metric into its
repeat and explore parts (Li et al. 2023).

Example:
    >>> import receval
    >>> q = receval.sequential.queries({"user": [1], "item": ["a"], "timestamp": [1]},
    ...                                {"user": [1], "item": ["b"], "timestamp": [2]})
    >>> receval.sequential.evaluate(q, {"query": [0], "item": ["b"], "rank": [1]},
    ...                             ["R@1"]).summary
    {'R@1': 1.0}
"""

from receval.sequential.evaluation import evaluate
from receval.sequential.protocols import PROTOCOLS, Queries, queries
from receval.sequential.result import SequentialResult

__all__ = ["PROTOCOLS", "Queries", "SequentialResult", "evaluate", "queries"]
