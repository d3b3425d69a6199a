"""User-side disparity: the gap in a metric between groups of users, with an unpaired test.

``evaluate(..., strata=...)`` gives each group of users its summary; :func:`disparity` says how
far apart two groups are and whether the gap is more than noise. The groups hold different
users, so the comparison is unpaired (:mod:`receval.stats.unpaired`: Welch's t-test and
interval, or a permutation test of the group labels with a bootstrap interval). Any metric with
per-user values works: accuracy, beyond-accuracy, fairness and calibration (``AWRF@k``,
``calibration@k``...); a catalogue-level metric (``group_exposure@k``, ``coverage@k``) is one
number over all lists and is refused in one line.

Each row compares one group with another for one metric (and model): ``gap = mean - reference
mean`` over the users with a value (a user undefined for a metric, NaN, is left out of it; a
micro-averaged metric is compared through its per-user values). The p-values are corrected
across every row of the call (``correction=``, Holm by default). Random streams (the
permutation test and its interval) are keyed by ``(seed, "disparity", model, metric, group,
reference)``: neither the order of the groups, metrics or models nor the other rows change a
row's numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from receval import training
from receval.exceptions import ReceValError
from receval.result import Result
from receval.stats.corrections import adjust
from receval.stats.pairing import pair_stream
from receval.stats.unpaired import INTERVALS, check_unpaired_test, unpaired
from receval.strata import as_mapping, group_rows

#: the columns of :func:`disparity`'s table, in order
COLUMNS = ("model", "metric", "group", "reference", "mean", "reference_mean", "gap", "ci_low",
           "ci_high", "p_value", "p_adjusted", "n", "reference_n")


def disparity(
    results: Result | Mapping[str, Result],
    strata: Any,
    metrics: Sequence[str] | None = None,
    *,
    reference: str | None = None,
    test: str = "welch",
    correction: str = "holm",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    train: Any = None,
) -> pd.DataFrame:
    """The gap in each metric between groups of users, with an unpaired test and its interval.

    ``results``: a :class:`~receval.result.Result` or a dict model -> Result. ``strata``: the
    user -> group mapping ``evaluate`` takes (a dict, a Series, a frame with a user and a group
    column; users it does not name form the group ``(none)``), or a built-in stratum of the
    training data (``"activity"``, ``"cold"``..., with ``train=``). ``metrics``: per-user
    metrics of the Results (default: all). ``reference``: compare every other group with this
    one; by default every pair of groups (in sorted order, the later minus the earlier).
    ``test``: ``"welch"`` or ``"permutation"`` (``n_resamples`` relabellings and bootstrap
    resamples). Returns one row per (model, metric, pair of groups), columns :data:`COLUMNS`;
    ``.attrs`` records the test, interval, correction, alpha, resamples and seed.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2, 3, 4, 5, 6], "item": [1] * 6}
        >>> preds = {"user": [1, 2, 3, 4, 5, 6], "item": [1, 1, 2, 1, 2, 2],
        ...          "score": [1.0] * 6}
        >>> r = receval.evaluate(truth, preds, ["P@1"])
        >>> groups = {1: "light", 2: "light", 3: "light", 4: "heavy", 5: "heavy", 6: "heavy"}
        >>> t = disparity(r, groups)
        >>> t[["metric", "group", "reference", "mean", "reference_mean", "gap", "n"]].values.tolist()
        [['P@1', 'light', 'heavy', 0.6666666666666666, 0.3333333333333333, 0.3333333333333333, 3]]
        >>> round(float(t["p_value"][0]), 4)
        0.5185
    """  # noqa: E501
    check_unpaired_test(test)
    if not 0 < alpha < 1:
        raise ReceValError(f"alpha must be between 0 and 1, got {alpha}")
    if test == "permutation" and n_resamples < 1:
        raise ReceValError("the permutation test needs n_resamples >= 1")
    models = {"": results} if isinstance(results, Result) else dict(results)
    if not models:
        raise ReceValError("disparity needs at least one Result")
    rows: list[dict[str, Any]] = []
    for model in sorted(models):
        result = models[model]
        users = result.per_user["user"].to_numpy()
        mapping = as_mapping(training.resolve_strata(strata, train, users))
        members = group_rows(users, mapping)
        labels = list(members)
        if reference is not None and reference not in members:
            raise ReceValError(f"reference group {reference!r} has no evaluated user (groups: "
                               f"{', '.join(labels)})")
        pairs = ([(reference, g) for g in labels if g != reference] if reference is not None
                 else [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:]])
        for metric in _metrics(result, metrics, model):
            values = result.per_user[metric].to_numpy(dtype=float)
            for base, group in pairs:
                rng = pair_stream(seed, group, base, metric, "disparity", model)
                row = unpaired(values[members[base]], values[members[group]], test=test,
                               alpha=alpha, n_resamples=n_resamples, rng=rng)
                rows.append({"model": model, "metric": metric, "group": group,
                             "reference": base, **{k.replace("baseline_", "reference_"): v
                                                   for k, v in row.items()}})
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    if len(table):
        table["p_adjusted"] = adjust(table["p_value"].to_numpy(), correction)
    else:
        adjust([], correction)  # an unknown correction is still an error
    if isinstance(results, Result):
        table = table.drop(columns="model")
    table.attrs.update({"test": test, "interval": INTERVALS[test], "correction": correction,
                        "alpha": alpha, "n_resamples": n_resamples if test == "permutation"
                        else 0, "seed": seed})
    return table


def _metrics(result: Result, metrics: Sequence[str] | None, model: str) -> list[str]:
    """The per-user columns asked (default: every one), or a one-line error for the first
    that has none (a catalogue-level metric, or one not evaluated)."""
    have = [str(c) for c in result.per_user.columns if c != "user"]
    if metrics is None and not have:  # only catalogue-level metrics: nothing to compare
        where = f"model {model!r}: " if model else ""
        shown = ", ".join(map(str, result.summary)) or "none"
        raise ReceValError(f"{where}no per-user metric to compare between groups of users "
                           f"(evaluated: {shown}, each one number over all lists); ask for a "
                           "per-user metric such as nDCG@10")
    if metrics is None:
        return have
    for name in metrics:
        if name not in have:
            where = f"model {model!r}: " if model else ""
            why = ("one number over all lists (catalogue level): no per-user values to compare "
                   "between groups of users" if name in result.summary
                   else f"not evaluated (per-user metrics: {', '.join(have) or 'none'})")
            raise ReceValError(f"{where}{name!r} is {why}")
    return list(metrics)


def disparity_footnote(table: pd.DataFrame) -> str:
    """One line saying how :func:`disparity`'s table was computed.

    Example:
        >>> t = pd.DataFrame(columns=list(COLUMNS))
        >>> t.attrs.update({"test": "welch", "interval": "Welch t interval",
        ...                 "correction": "holm", "alpha": 0.05})
        >>> disparity_footnote(t)
        'gap = group mean - reference mean over the users with a value; unpaired test: welch; 95% Welch t interval; p_adjusted: holm over every row'
    """  # noqa: E501
    a = table.attrs
    level = f"{100 * (1 - a['alpha']):g}%"
    return (f"gap = group mean - reference mean over the users with a value; unpaired test: "
            f"{a['test']}; {level} {a['interval']}; p_adjusted: {a['correction']} over every "
            "row")
