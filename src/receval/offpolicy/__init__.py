"""Off-policy estimates: what would a new recommender earn online, from the served logs?

:func:`estimate` takes the log of what the old policy showed (one row per shown item, with
the logger's propensity and the reward) and target policies (probability tables, or scores
and a rule) and returns, per (target, estimator), the estimate, a seeded bootstrap interval
over requests, a normal interval and the importance weights' diagnostics. The estimators:
``ips``, ``snips``, ``dm``, ``dr``, ``sndr``, ``switch_dr``, ``dros`` and, for lists, ``iips``,
``sips``, ``rips``, ``cascade_dr``, ``sn_sips``, ``sn_rips``, ``pi``, ``pbm``
(:mod:`receval.offpolicy.estimators` says when each is unbiased). Never a dense requests x
items array. :func:`log_from_monitor` builds the log from monitor's impressions and feedback;
``by="window"`` / ``"variant"`` estimates per group, whose exact sums
(:class:`EstimateSums`) merge to the whole bit for bit; :func:`monitor_estimates` estimates per
window of a monitor run, for ``Monitor.to_html(offpolicy=...)``. See docs/offpolicy.md.
"""

from receval.offpolicy.estimate import OffPolicyResult, estimate, merge_sums
from receval.offpolicy.estimators import ESTIMATORS
from receval.offpolicy.monitor_log import log_from_monitor
from receval.offpolicy.monitor_windows import monitor_estimates
from receval.offpolicy.policies import RULES, Policy
from receval.offpolicy.sums import EstimateSums

__all__ = ["ESTIMATORS", "RULES", "EstimateSums", "OffPolicyResult", "Policy", "estimate",
           "log_from_monitor", "merge_sums", "monitor_estimates"]
