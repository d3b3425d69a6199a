"""Off-policy estimates per window of a monitor run, for the monitor's HTML page.

The log is :func:`~receval.offpolicy.log_from_monitor` of the run's impressions and feedback,
with the run's own windows, attribution period, lateness, variant column and relevance
threshold (read from ``Monitor.options``, so the windows are the page's windows); the
estimates are :func:`~receval.offpolicy.estimate` ``by="window"`` (and ``"variant"``), seeded
and resampled as the run. This module lives with the estimator, above monitor in the layers
(monitor reads no off-policy code): ``monitor.to_html(offpolicy=...)`` renders the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from receval.exceptions import ReceValError
from receval.offpolicy.estimate import OffPolicyResult, estimate
from receval.offpolicy.monitor_log import log_from_monitor

if TYPE_CHECKING:
    from receval.monitor.core import Monitor


def monitor_estimates(result: Monitor, impressions: Any, feedback: Any,
                      targets: Mapping[str, Any], *, propensity_col: str = "propensity",
                      estimators: Sequence[str] = ("ips", "snips"), reward_model: Any = None,
                      user_col: str = "user", item_col: str = "item",
                      score_col: str | None = None, served_col: str = "served_at",
                      value_col: str = "value", time_col: str = "at",
                      time_unit: str | None = None, **options: Any) -> OffPolicyResult:
    """The estimates of each target policy per window (and variant) of the monitor run
    ``result`` on the same ``impressions`` and ``feedback`` (with the logger's
    ``propensity_col``); ``**options`` go to :func:`~receval.offpolicy.estimate` (``rule``,
    ``epsilon``, ``clip``...). Lists whose attribution period is still open are left out (as
    :func:`~receval.offpolicy.log_from_monitor` does). Rolling windows (``step=``) are refused:
    the estimates are per calendar window.

    Example:
        >>> import receval
        >>> imp = pd.DataFrame({"user": [1, 2, 3], "item": ["a", "a", "b"], "rank": 1,
        ...     "served_at": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-09"]),
        ...     "propensity": 0.5})
        >>> fb = pd.DataFrame({"user": [1, 3], "item": ["a", "b"], "value": 1.0,
        ...     "at": pd.to_datetime(["2024-01-01", "2024-01-09"])})
        >>> m = receval.monitor(imp, fb, "P@1", window="W", attribution="1D", n_resamples=0)
        >>> new = pd.DataFrame({"user": [1, 2, 3], "served_at": imp["served_at"],
        ...     "item": "a", "position": 1, "probability": 1.0})
        >>> est = monitor_estimates(m, imp, fb, {"new": new}, estimators=["ips"])
        >>> est.table[["window", "value"]].astype(str).values.tolist()
        [['2024-01-01 00:00:00+00:00', '1.0']]
    """
    o = result.options
    if o.get("step") != o.get("width"):
        raise ReceValError("off-policy estimates per window need calendar windows: this "
                           "monitor run has rolling windows (step=); run it without step")
    variant_col = o.get("variant_col")
    log = log_from_monitor(
        impressions, feedback, propensity_col=propensity_col,
        attribution=f"{int(o['attribution'])}ns",
        lateness=f"{int(o['lateness'])}ns" if o.get("lateness") else "0s",
        window=o["window"], origin=pd.Timestamp(int(o["origin"]), unit="ns"),
        variant_col=variant_col,
        relevance_threshold=o.get("options", {}).get("relevance_threshold"),
        user_col=user_col, item_col=item_col, score_col=score_col, served_col=served_col,
        value_col=value_col, time_col=time_col, time_unit=time_unit)
    by = ["window", "variant"] if variant_col else ["window"]
    options.setdefault("alpha", round(1 - float(o.get("confidence", 0.95)), 12))
    out = estimate(log, targets, estimators=list(estimators), reward_model=reward_model,
                   seed=int(o.get("seed", 0)), n_resamples=int(o.get("n_resamples", 1000)),
                   by=by, **options)
    out.options["log_counts"] = log.attrs.get("counts", {})
    return out
