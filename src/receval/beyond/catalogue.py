"""Catalogue-level metrics of the exposure counts: coverage, distributional coverage
(entropy) and Gini. Each reduces over the union of all lists (one number, no per-user value).

Formulas (docs/semantics.md section 11; x_i = lists holding item i, S_u,k = u's top k):

- coverage@k = |(∪_u S_u,k) ∩ I| / |I| (Shani & Gunawardana, Evaluating Recommendation
  Systems, 2010, "catalog coverage"); switches: the catalogue I, raw count, items outside I.
- distributional_coverage@k = -Σ_i p_i log_b p_i, p_i = x_i / Σ_j x_j (ibid., eq. 21).
- gini@k = Σ_i (2i - n - 1) x_(i) / (d · Σ x), x ascending, i = 1..n, d = n or n - 1
  (LensKit ``gini``; Elliot, Evidently: n - 1).
"""

from __future__ import annotations

import math

import numpy as np

from receval.beyond._lists import exposure


def coverage(top: np.ndarray, catalogue: np.ndarray, *, count: bool = False,
             outside: str = "drop", pad: int = 0) -> float:
    """Catalogue coverage of the lists ``top`` (``(U, k)`` codes, ``-1`` padding).

    ``catalogue`` is a bool mask over item codes. ``outside="count"`` also counts recommended
    items outside the catalogue (Microsoft Recommenders: the share can exceed 1); ``count``
    returns the number of distinct items instead of the share; ``pad`` items join the
    catalogue's size (RecBole's ``[PAD]`` id). An empty catalogue gives NaN.

    Example:
        >>> top = np.array([[0, 1], [1, 3]])
        >>> cat = np.array([True, True, True, False])
        >>> coverage(top, cat), coverage(top, cat, outside="count"), coverage(top, cat, count=True)
        (0.6666666666666666, 1.0, 2.0)
    """
    shown = exposure(top, len(catalogue)) > 0
    if outside == "drop":
        shown &= catalogue
    n_shown = int(shown.sum())
    if count:
        return float(n_shown)
    n_cat = int(np.count_nonzero(catalogue)) + pad
    return n_shown / n_cat if n_cat else math.nan


def distributional_coverage(top: np.ndarray, n_items: int, *, base: float = 2.0,
                            normalize: str = "none") -> float:
    """Entropy of the share of recommendation slots each item holds, in log base ``base``;
    ``normalize="distinct"`` divides by the number of distinct recommended items (RecBole).
    No slot at all gives NaN.

    Example:
        >>> distributional_coverage(np.array([[0, 1], [0, 2]]), 3)
        1.5
    """
    x = exposure(top, n_items)
    x = x[x > 0]
    total = int(x.sum())
    if total == 0:
        return math.nan
    p = x / total
    h = float(-(p * np.log(p)).sum() / math.log(base)) + 0.0
    return h / len(x) if normalize == "distinct" else h


def gini(top: np.ndarray, catalogue: np.ndarray, *, scope: str = "catalogue",
         form: str = "G", denominator: str = "n", pad: int = 0) -> float:
    """Gini index of the exposure counts.

    ``scope="catalogue"``: the items of the catalogue plus any recommended item (unexposed
    ones count 0); ``"recommended"``: only items in some list. ``form="1-G"`` returns
    1 - G (Elliot); ``scope="catalogue"`` counts ``pad`` more unexposed items (RecBole's
    ``[PAD]`` id). NaN when nothing is exposed or the denominator is 0.

    Example:
        >>> top = np.array([[0, 1], [0, -1]])
        >>> cat = np.ones(4, dtype=bool)
        >>> gini(top, cat), gini(top, cat, scope="recommended")
        (0.5833333333333334, 0.16666666666666666)
    """
    x = exposure(top, len(catalogue))
    keep = (x > 0) if scope == "recommended" else (catalogue | (x > 0))
    xs = np.sort(x[keep])
    if scope == "catalogue" and pad:
        xs = np.concatenate([np.zeros(pad, dtype=xs.dtype), xs])
    n = len(xs)
    total = int(xs.sum())
    d = n if denominator == "n" else n - 1
    if total == 0 or d <= 0:
        return math.nan
    i = np.arange(1, n + 1, dtype=np.int64)
    # an exact integer numerator: the same number whatever the order the items came in
    numerator = int(((2 * i - n - 1) * xs).sum())
    g = numerator / (d * total)
    return 1.0 - g if form == "1-G" else g
