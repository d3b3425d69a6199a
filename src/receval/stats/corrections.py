"""Multiple-comparison corrections of a vector of p-values (NaN entries are left out and kept).

Holm is written here from its definition (Holm 1979, step-down): with the m p-values sorted,
``p_(1) <= ... <= p_(m)``, the adjusted value of the i-th is
``max_{j <= i} min(1, (m - j + 1) p_(j))``. Benjamini-Hochberg is
:func:`scipy.stats.false_discovery_control` (``method="bh"``); Bonferroni is ``min(1, m p)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from receval.exceptions import ReceValError

#: the corrections by name, the default first
CORRECTIONS = ("holm", "bh", "bonferroni", "none")


def _holm(p: np.ndarray) -> np.ndarray:
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.maximum.accumulate(scaled)
    return out


def _bh(p: np.ndarray) -> np.ndarray:
    import scipy.stats  # loaded on first use: import receval stays light

    return np.asarray(scipy.stats.false_discovery_control(p, method="bh"), dtype=float)


def _bonferroni(p: np.ndarray) -> np.ndarray:
    return np.minimum(1.0, p.size * p)


_METHODS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "holm": _holm,
    "bh": _bh,
    "bonferroni": _bonferroni,
    "none": lambda p: p.copy(),
}


def adjust(p_values: object, method: str = "holm") -> np.ndarray:
    """The p-values corrected for multiplicity across all of them (``method`` in
    :data:`CORRECTIONS`); a NaN p-value stays NaN and does not count in m.

    Example:
        >>> from receval.stats.corrections import adjust
        >>> adjust([0.01, 0.04, 0.03], "holm").round(6).tolist()
        [0.03, 0.06, 0.06]
        >>> adjust([0.01, 0.04, 0.03], "bonferroni").round(6).tolist()
        [0.03, 0.12, 0.09]
    """
    if method not in _METHODS:
        raise ReceValError(f"unknown correction {method!r}; known: {', '.join(CORRECTIONS)}")
    p = np.asarray(p_values, dtype=float).ravel()
    out = np.full(p.size, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = _METHODS[method](p[ok])
    return out
