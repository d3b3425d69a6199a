"""The off-policy estimators declared (:data:`receval.offpolicy.estimators.ESTIMATORS`): the
range of each estimate, its direction, why it can be undefined and the options it reads.

A declaration, read by the generated property suite (tests/test_no_quiet_number.py), which
checks that every estimator of :data:`~receval.offpolicy.estimators.ESTIMATORS` is declared
here and its estimates keep the declaration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class EstimatorEntry:
    """One off-policy estimator, declared.

    Attributes:
        name: its name in ``ESTIMATORS``.
        bounds: ``"rewards"``: per position, a weighted mean of the logged rewards with
            non-negative weights, so the estimate of a list lies between the number of
            positions times the smallest and the largest reward; ``"none"``: unbiased or model
            based, may leave that range (a weight above 1, a reward model's predictions).
        better: ``"higher"``: the estimate is an expected reward.
        undefined: why an estimate can be undefined (NaN): ``""`` where it never is.
        options: the :func:`~receval.offpolicy.estimate` options that change it.
    """

    name: str
    bounds: Literal["rewards", "none"]
    better: Literal["higher", "lower"] = "higher"
    undefined: str = ""
    options: tuple[str, ...] = ()


_NO_WEIGHT = "no weight at all at a position (0 / 0)"
_RULE = ("rule", "epsilon", "temperature")

ENTRIES: dict[str, EstimatorEntry] = {
    e.name: e
    for e in (
        EstimatorEntry("ips", "none", options=("clip", *_RULE)),
        EstimatorEntry("snips", "rewards", undefined=_NO_WEIGHT, options=("clip", *_RULE)),
        EstimatorEntry("dm", "none", options=_RULE),
        EstimatorEntry("dr", "none", options=("clip", *_RULE)),
        EstimatorEntry("sndr", "none", undefined=_NO_WEIGHT, options=("clip", *_RULE)),
        EstimatorEntry("switch_dr", "none", options=("clip", "switch_threshold", *_RULE)),
        EstimatorEntry("dros", "none", options=("clip", "shrinkage", *_RULE)),
        EstimatorEntry("iips", "none", options=("clip", *_RULE)),
        EstimatorEntry("sips", "none", options=("clip", *_RULE)),
        EstimatorEntry("rips", "none", options=("clip", *_RULE)),
        EstimatorEntry("sn_sips", "rewards", undefined=_NO_WEIGHT, options=("clip", *_RULE)),
        EstimatorEntry("sn_rips", "rewards", undefined=_NO_WEIGHT, options=("clip", *_RULE)),
        EstimatorEntry("cascade_dr", "none", options=("clip", *_RULE)),
        EstimatorEntry("pi", "none", options=("clip", *_RULE)),
        EstimatorEntry("pbm", "none", options=("clip", "examination", "logger", *_RULE)),
    )
}


def declared(name: str) -> EstimatorEntry:
    """The declaration of the estimator ``name``.

    Example:
        >>> declared("snips").bounds, declared("ips").bounds, declared("dr").better
        ('rewards', 'none', 'higher')
    """
    return ENTRIES[name]
