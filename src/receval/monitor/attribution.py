"""monitor's attribution rule for other packages (``receval.offpolicy.log_from_monitor``): the
value of each served item, judged by the feedback of its (user, item) dated within the
attribution period (:mod:`receval.monitor.core` defines it; this module only names it, so the
rule has one definition).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from receval.monitor.core import _align_ids, _judge, _one_zone
from receval.monitor.state import State


def attribute(imps: pd.DataFrame, fb: pd.DataFrame, span: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """Each impression's value: the largest value of the feedback of its (user, item) dated
    ``served <= at <= served + span`` (ns), NaN when there is none; and whether each feedback
    row judges an impression. ``imps``: ``user, item,
    served``; ``fb``: ``user, item, value, at`` (as :mod:`receval.monitor.inputs` reads them);
    ids of different types (text and integers) are aligned first, as monitor does.

    Example:
        >>> imps = pd.DataFrame({"user": [1, 1], "item": [5, 6], "served": [0, 0]})
        >>> fb = pd.DataFrame({"user": [1, 1, 1], "item": [5, 5, 6], "value": [1.0, 3.0, 2.0],
        ...                    "at": [10, 5, 100]})
        >>> values, judging = attribute(imps, fb, 50)
        >>> values.tolist(), judging.tolist()
        ([3.0, nan], [True, True, False])
    """
    imps, fb = _align_ids(State(params={}), imps.copy(), fb.copy())
    return _judge(imps, fb, span)


def one_zone(sides: list[tuple[str, str, str | None]]) -> str | None:
    """The time zone kind (``"aware"``, ``"naive"`` or None) shared by the logs' time
    columns, given as (side, column, kind); aware and naive times never mix (one-line error).

    Example:
        >>> one_zone([("impressions", "served_at", "naive"), ("feedback", "at", None)])
        'naive'
    """
    return _one_zone(sides)
