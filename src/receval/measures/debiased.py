"""The debiased forms of the top-k metrics declared: for each family with an IPS/SNIPS form
(``evaluate(..., debias="ips"|"snips")``, :mod:`receval.debias`), the range each form's
per-user value must lie in, its direction, why it can be undefined and the options it reads.

A declaration, not the computation (:mod:`receval.debias` computes); the generated property
suite (tests/test_no_quiet_number.py) checks the values against it and that every family
:mod:`receval.debias` weights is declared here.

- ``"snips"``: a self-normalised estimator of the plain metric, so inside the plain metric's
  range (:attr:`Entry.bounds <receval.measures.entry.Entry.bounds>`), and equal to the plain
  metric under a constant propensity (whatever the constant).
- ``"ips"``: unbiased, not self-normalised: a user's value is a weighted sum that can exceed
  the plain range (a weight 1/p above 1), so only ``>= 0`` is declared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from receval.measures.entry import Direction
from receval.measures.family import Family
from receval.measures.registry import ENTRIES

#: the debiasing forms
FORMS = ("ips", "snips")
#: the options every debiased form reads besides its plain metric's
OPTIONS = ("propensity", "propensity_clip", "debias")


@dataclass(frozen=True)
class DebiasedEntry:
    """One debiased form of one family, declared.

    Attributes:
        family: the plain metric's family.
        form: ``"ips"`` or ``"snips"``.
        bounds: ``(low, high)`` that every defined per-user value lies in.
        better: the plain metric's direction.
        undefined: why a user's value can be undefined.
        options: the options that change its value (the plain metric's, and
            :data:`OPTIONS`).
        constant_invariant: whether a constant propensity (any constant) leaves the plain
            metric's value exactly (what a self-normalised form promises).
    """

    family: Family
    form: Literal["ips", "snips"]
    bounds: tuple[float, float]
    better: Direction
    undefined: str
    options: tuple[str, ...]
    constant_invariant: bool


def _entries() -> dict[tuple[Family, str], DebiasedEntry]:
    out: dict[tuple[Family, str], DebiasedEntry] = {}
    for family in WEIGHTED:
        plain = ENTRIES[family]
        assert plain.bounds is not None
        for form in FORMS:
            snips = form == "snips"
            out[(family, form)] = DebiasedEntry(
                family=family,
                form=form,  # type: ignore[arg-type]
                bounds=plain.bounds if snips else (0.0, math.inf),
                better=plain.better,
                undefined=(
                    f"{plain.undefined}; or every weight of the user's relevant items is 0"
                    if plain.undefined
                    else "every weight of the user's relevant items is 0"
                ),
                options=(*plain.options, *OPTIONS),
                constant_invariant=snips,
            )
    return out


#: the families with debiased forms (:data:`receval.debias.FAMILY_CODES` must list the same)
WEIGHTED = (Family.PRECISION, Family.RECALL, Family.NDCG, Family.AP, Family.RBP, Family.HIT)


def entries() -> dict[tuple[Family, str], DebiasedEntry]:
    """Every debiased form, keyed by ``(family, form)``.

    Example:
        >>> from receval.measures.family import Family
        >>> e = entries()[(Family.NDCG, "snips")]
        >>> e.bounds, e.better, e.constant_invariant, entries()[(Family.NDCG, "ips")].bounds
        ((0.0, 1.0), 'higher', True, (0.0, inf))
    """
    return DEBIASED


DEBIASED = _entries()
