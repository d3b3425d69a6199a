"""Monitoring in production: offline metrics per time window from served lists and delayed
feedback, incremental through a state file (:mod:`receval.monitor.core` has the definitions).

Example:
    >>> import receval, pandas as pd
    >>> imp = pd.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 2],
    ...                     "served_at": pd.to_datetime(["2024-01-01"] * 2)})
    >>> fb = pd.DataFrame({"user": [1], "item": [10], "value": [1.0],
    ...                    "at": pd.to_datetime(["2024-01-03"])})
    >>> receval.monitor(imp, fb, "P@1", n_resamples=0).windows["P@1"].tolist()
    [1.0]
"""

from receval.monitor.ab import DECISION_COLUMNS
from receval.monitor.core import COMPARISON_COLUMNS, COUNTS, Monitor, monitor

__all__ = ["COMPARISON_COLUMNS", "COUNTS", "DECISION_COLUMNS", "Monitor", "monitor"]
