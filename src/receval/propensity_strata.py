"""Propensity-stratified evaluation (Jadidinejad, Macdonald & Ounis 2021, "The Simpson's
paradox in the offline evaluation of recommendation systems"; Cornac's
``PropensityStratifiedEvaluation``): the test interactions split by the propensity of their
item into strata of equal propensity width, and the same evaluation on each stratum.

A model that wins on the whole test set only through its popular (high-propensity) items wins
on the high stratum and may lose on the low one: the strata show what the pooled number hides.
Each stratum is :func:`receval.evaluate` on the test rows of that stratum (the predictions
unchanged), so every metric and option means what it means there.

Propensity: ``("popularity", gamma)`` (Yang et al. 2018 eq. 15 from ``train=``:
:func:`receval.debias.popularity_propensity`, as ``evaluate(..., propensity=)``) or the name
of a truth column holding it. Strata: n equal-width bins of [min, max] of the test rows'
propensities, the largest in the last (Cornac puts the maximum in a stratum of its own).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from receval.debias import popularity_propensity
from receval.evaluation import evaluate
from receval.exceptions import ReceValError


def strata_of(propensity: np.ndarray, n_strata: int) -> tuple[np.ndarray, np.ndarray]:
    """Each value's stratum (0 .. n_strata - 1, equal widths over [min, max], the maximum in
    the last) and the n_strata + 1 edges.

    Example:
        >>> s, edges = strata_of(np.array([0.1, 0.2, 0.55, 1.0]), 3)
        >>> s.tolist(), edges.round(2).tolist()
        ([0, 0, 1, 2], [0.1, 0.4, 0.7, 1.0])
    """
    low, high = float(np.min(propensity)), float(np.max(propensity))
    edges = np.linspace(low, high, n_strata + 1)
    if high == low:
        return np.zeros(propensity.size, np.int64), edges
    at = np.floor((propensity - low) / (high - low) * n_strata).astype(np.int64)
    return np.minimum(at, n_strata - 1), edges


def propensity_strata(truth: Any, predictions: Any, metrics: Any, *,
                      propensity: Any, train: Any = None, n_strata: int = 2,
                      item_col: str = "item", **options: Any) -> pd.DataFrame:
    """The evaluation on each propensity stratum of the test rows: one row per stratum
    (``stratum`` 1..n, its propensity range ``propensity_low`` / ``propensity_high``, its
    test ``rows``, ``users`` evaluated) and one column per metric; ``frame.attrs`` records the
    propensity model and the edges. ``options`` go to :func:`receval.evaluate` (with
    ``item_col``).

    Example (item 1 has propensity (4/4)^1 = 1, item 2 (1/4)^1 = 0.25: the low stratum holds
    the two rows of item 2, ranked below the top by both users):
        >>> import pandas as pd
        >>> train = pd.DataFrame({"user": [9] * 5, "item": [1, 1, 1, 1, 2]})
        >>> truth = pd.DataFrame({"user": [1, 1, 2], "item": [1, 2, 2]})
        >>> preds = pd.DataFrame({"user": [1, 1, 2, 2], "item": [1, 3, 3, 2],
        ...                       "score": [2.0, 1.0, 2.0, 1.0]})
        >>> t = propensity_strata(truth, preds, ["P@1", "R@2"], train=train,
        ...                       propensity=("popularity", 1.0))
        >>> t["rows"].tolist(), t["users"].tolist(), t["P@1"].tolist(), t["R@2"].tolist()
        ([2, 1], [2, 1], [0.0, 1.0], [0.5, 1.0])
    """
    if isinstance(n_strata, bool) or not isinstance(n_strata, int) or n_strata < 1:
        raise ReceValError(f"n_strata must be a whole number >= 1; got {n_strata!r}")
    frame = truth if isinstance(truth, pd.DataFrame) else pd.DataFrame(truth)
    frame = frame.reset_index(drop=True)
    if item_col not in frame.columns:
        raise ReceValError(f"truth has no column {item_col!r}; columns: "
                           f"{', '.join(map(str, frame.columns))}")
    if len(frame) == 0:
        raise ReceValError("truth is empty: no test row to stratify")
    model: dict[str, Any]
    if isinstance(propensity, tuple | list) and len(propensity) == 2 \
            and propensity[0] == "popularity":
        gamma = propensity[1]
        if isinstance(gamma, bool) or not isinstance(gamma, int | float) or gamma < -1:
            raise ReceValError(f"propensity=('popularity', {gamma!r}): gamma must be a number "
                               ">= -1")
        if train is None:
            raise ReceValError("propensity=('popularity', gamma) needs train= (the item "
                               "popularity it is computed from)")
        train_frame = train if isinstance(train, pd.DataFrame) else pd.DataFrame(train)
        if item_col not in train_frame.columns:
            raise ReceValError(f"train has no column {item_col!r}")
        p = popularity_propensity(train_frame[item_col].to_numpy(),
                                  frame[item_col].to_numpy(), float(gamma))
        model = {"model": "popularity", "gamma": float(gamma)}
    elif isinstance(propensity, str) and propensity in frame.columns:
        p = pd.to_numeric(frame[propensity], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~(np.isfinite(p) & (p > 0))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ReceValError(f"truth: column {propensity!r} is not a propensity > 0 at row "
                               f"{row} ({int(bad.sum())} bad rows)")
        model = {"model": "column", "column": propensity}
    else:
        raise ReceValError(f"propensity={propensity!r} is not ('popularity', gamma) nor the "
                           "name of a truth column")
    stratum, edges = strata_of(p, n_strata)
    rows = []
    for s in range(n_strata):
        part = frame[stratum == s]
        if not len(part):
            continue
        result = evaluate(part, predictions, metrics, item_col=item_col, **options)
        rows.append({"stratum": s + 1, "propensity_low": float(edges[s]),
                     "propensity_high": float(edges[s + 1]), "rows": len(part),
                     "users": int(result.counts["users"]["evaluated"]), **result.summary})
    out = pd.DataFrame(rows)
    out.attrs.update({"propensity": model, "n_strata": n_strata,
                      "edges": [float(e) for e in edges]})
    return out
