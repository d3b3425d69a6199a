"""Propensity-stratified evaluation (Jadidinejad, Macdonald & Ounis, "The Simpson's paradox in
the offline evaluation of recommendation systems", TOIS 2021; Cornac's
``PropensityStratifiedEvaluation``): the truth rows split by how likely they were to be
observed, each stratum evaluated on its own, and the strata weighed by their share of the rows
(docs/debiased-metrics.md, "Propensity-stratified evaluation")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from receval.debias import Debias, popularity_propensity
from receval.evaluation import evaluate
from receval.exceptions import ReceValError

#: the stratified estimate's row in :func:`stratified`'s table
STRATIFIED = "stratified"


def stratified(truth: Any, predictions: Any, metrics: Any, *, propensity: Any,
               train: Any = None, n_strata: int = 2, user_col: str = "user",
               item_col: str = "item", **evaluate_options: Any) -> pd.DataFrame:
    """Propensity-stratified evaluation (Jadidinejad, Macdonald & Ounis 2021, Cornac's
    ``PropensityStratifiedEvaluation``): the truth rows are split into ``n_strata`` strata
    of equal width in propensity, between the smallest and the largest propensity of the
    truth rows (the top edge closed); each stratum is evaluated on its own truth rows
    (:func:`receval.evaluate`, ``evaluate_options`` passed on: a user without a truth row in
    the stratum is not evaluated there), and the stratified estimate is
    ``sum_q (n_q / n) M_q``, ``n_q`` the truth rows of stratum ``q`` and ``M_q`` its metric.

    ``propensity``: ``("popularity", gamma)`` (Yang et al. eq. 15 on ``train``'s item
    counts, as :func:`receval.debias.popularity_propensity`) or the name of a truth column.
    The truth and ``train`` are tables pandas reads (a DataFrame, a dict of columns, an Arrow
    table).
    Returns one row per non-empty stratum, ``Q1`` (least popular) upwards, with its
    ``propensity_low``, ``propensity_high``, ``rows`` and ``weight`` ``n_q / n``, then the
    metric columns; and a last row ``"stratified"``: the weighted sum.

    Example:
        >>> import pandas as pd
        >>> truth = pd.DataFrame({"user": [1, 1, 2], "item": ["a", "b", "a"],
        ...                       "p": [0.9, 0.1, 0.9]})
        >>> preds = pd.DataFrame({"user": [1, 1, 2], "item": ["b", "a", "c"],
        ...                       "score": [2.0, 1.0, 1.0]})
        >>> table = stratified(truth, preds, ["P@1"], propensity="p")
        >>> [(q, n, round(v, 6)) for q, n, v in table[["stratum", "rows", "P@1"]].values]
        [('Q1', 1, 1.0), ('Q2', 2, 0.0), ('stratified', 3, 0.333333)]
    """
    if isinstance(n_strata, bool) or not isinstance(n_strata, int) or n_strata < 1:
        raise ReceValError(f"n_strata must be a positive integer, got {n_strata!r}")
    taken = sorted({"debias", "propensity_clip", "strata"} & set(evaluate_options))
    if taken:
        raise ReceValError(f"stratified evaluation takes no {taken[0]}= (it weighs strata, "
                           "not rows): evaluate with it instead")
    frame = _frame(truth, "truth")
    if propensity == "uniform" or (isinstance(propensity, tuple | list) and len(propensity) == 2
                                   and propensity[1] == "estimate"):
        raise ReceValError(f"stratified evaluation needs propensities that differ: "
                           f"propensity={propensity!r} is not ('popularity', gamma) or a truth "
                           "column (a fitted gamma: evaluate(..., propensity=('popularity', "
                           "'estimate')).options['propensity']['gamma'])")
    request = Debias.of("ips", propensity, None)
    if request.model == "popularity":
        if train is None:
            raise ReceValError("propensity=('popularity', ...) needs the training data: pass "
                               "train= (item popularity is counted there)")
        assert request.gamma is not None
        prop = popularity_propensity(_frame(train, "train")[item_col].to_numpy(),
                                     frame[item_col].to_numpy(), request.gamma)
    else:
        assert request.column is not None
        if request.column not in frame.columns:
            raise ReceValError(f"propensity={request.column!r} names no truth column (columns: "
                               f"{', '.join(map(str, frame.columns))})")
        prop = pd.to_numeric(frame[request.column], errors="coerce").to_numpy(np.float64)
    bad = ~((prop > 0) & (prop <= 1))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ReceValError(f"propensity: {int(bad.sum())} truth row(s) have a propensity "
                           f"outside (0, 1] or none (first: row {first}, "
                           f"{float(prop[first])!r})")
    low, high = float(prop.min()), float(prop.max())
    width = (high - low) / n_strata
    which = (np.zeros(len(prop), dtype=np.int64) if width == 0 else
             np.minimum(((prop - low) / width).astype(np.int64), n_strata - 1))
    rows = []
    names = None
    for q in np.unique(which):
        part = frame[which == q].reset_index(drop=True)
        result = evaluate(part, predictions, metrics, train=train, user_col=user_col,
                                  item_col=item_col, **evaluate_options)
        names = result.metrics
        rows.append({"stratum": f"Q{q + 1}", "propensity_low": low + q * width,
                     "propensity_high": high if q == n_strata - 1 else low + (q + 1) * width,
                     "rows": len(part), "weight": len(part) / len(frame), **result.summary})
    table = pd.DataFrame(rows)
    assert names is not None
    total = {name: float(np.dot(table["weight"], table[name])) for name in names}
    table.loc[len(table)] = {"stratum": STRATIFIED, "propensity_low": low,
                             "propensity_high": high, "rows": len(frame), "weight": 1.0, **total}
    return table


def _frame(data: Any, side: str) -> pd.DataFrame:
    """A table pandas reads as a DataFrame (an Arrow table through ``to_pandas``)."""
    if isinstance(data, pd.DataFrame):
        return data
    if hasattr(data, "to_pandas"):
        return data.to_pandas()
    if isinstance(data, Mapping):
        return pd.DataFrame(dict(data))
    raise ReceValError(f"stratified evaluation reads {side} as a table (a DataFrame, a dict of "
                       f"columns, an Arrow table), not {type(data).__name__}: read the file "
                       "with pandas first")
