"""Several models side by side: name -> :class:`~receval.result.Result`, and the extra cutoffs the
curves need (computed in the same pass, then hidden from the tables)."""

from __future__ import annotations

import copy
from collections.abc import Mapping

import numpy as np
import pandas as pd

from receval.measures.spec import RATING, Family, parse_metric, parse_metrics
from receval.result import Result

#: the precision/recall curves go up to this cutoff at most (log-spaced beyond CURVE_DENSE)
CURVE_MAX_K = 1000
CURVE_DENSE = 30
#: the cutoffs of the curves past CURVE_DENSE: round numbers, as list lengths usually are
ROUND_KS = tuple(int(m * 10**e) for e in range(1, 8)
                 for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9))


def as_models(results: Result | Mapping[str, Result], name: str = "model") -> dict[str, Result]:
    """A dict name -> Result from one Result or a mapping of them.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> list(as_models(r))
        ['model']
    """
    if isinstance(results, Result):
        return {name: results}
    models = dict(results)
    if not models or not all(isinstance(r, Result) for r in models.values()):
        raise TypeError("expected a Result or a non-empty mapping of name -> Result")
    return models


def curve_ks(metrics: list[str], max_k: int = CURVE_MAX_K) -> list[int]:
    """The cutoffs of the P@k / R@k curves: 1..30, then round numbers (40, 50, ..., 100, 120,
    150, 200, ...) up to ``max_k``, plus every cutoff asked in ``metrics`` up to ``max_k``.

    The report evaluates them all and then shows the ranks the lists hold
    (:func:`list_depth`), so ``max_k`` is a cap, not what is drawn.

    Example:
        >>> curve_ks(["P@5", "nDCG@3"], max_k=6)
        [1, 2, 3, 4, 5, 6]
        >>> curve_ks(["P@45"], max_k=110)[29:]
        [30, 40, 45, 50, 60, 70, 80, 90, 100, 110]
        >>> len(curve_ks(["MRR"]))
        49
    """
    if max_k < 1:
        raise ValueError(f"max_k must be at least 1; got {max_k}")
    asked = {s.k for s in parse_metrics(metrics) if s.k and s.k <= max_k} if metrics else set()
    dense = set(range(1, min(max_k, CURVE_DENSE) + 1))
    tail = {k for k in ROUND_KS if CURVE_DENSE < k < max_k} | {max_k}
    return sorted(dense | tail | asked)


def with_curves(metrics: list[str], ks: list[int]) -> list[str]:
    """``metrics`` plus ``P@k`` and ``R@k`` for every k of ``ks`` not asked already.

    Example:
        >>> with_curves(["P@2", "MRR"], [1, 2])
        ['P@2', 'MRR', 'P@1', 'R@1', 'R@2']
        >>> with_curves([], [1])
        ['P@1', 'R@1']
    """
    specs = parse_metrics(metrics) if metrics else []
    asked = {s.canonical for s in specs}
    extra = [f"{f}@{k}" for k in ks for f in ("P", "R") if f"{f}@{k}" not in asked]
    return [s.name for s in specs] + extra


def restrict(result: Result, metrics: list[str]) -> Result:
    """A copy of ``result`` that shows only ``metrics`` (names as in the result).

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1", "R@1"])
        >>> restrict(r, ["R@1"]).summary
        {'R@1': 1.0}
    """
    keep = [m for m in result.metrics or list(result.summary) if m in metrics]
    ks = {parse_metric(m).k for m in keep}
    counts = copy.deepcopy(result.counts)
    counts["undefined"]["users"] = {m: counts["undefined"]["users"][m] for m in keep}
    counts["averaged"] = {m: counts["averaged"][m] for m in keep}
    counts["ties_at_cutoff"] = {k: v for k, v in counts["ties_at_cutoff"].items() if k in ks}
    options = result.options.copy()
    if isinstance(options.get("metrics"), dict):
        options["metrics"] = {m: options["metrics"][m] for m in keep}
    return Result(
        summary={m: result.summary[m] for m in keep},
        per_user=result.per_user[["user", *keep]].copy(),
        counts=counts,
        options=options,
        metrics=keep,
        sums=result.sums,
        strata=(None if result.strata is None else result.strata[
            ["group", "users", *[m for m in keep if m in result.strata.columns]]]),
    )


def curve_points(result: Result,
                 max_k: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cutoffs k (up to ``max_k``) with both P@k and R@k in ``result``, and their means.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1, 1], "item": [2, 1], "score": [2.0, 1.0]}, ["P@1,2", "R@1,2"])
        >>> [a.tolist() for a in curve_points(r)]
        [[1, 2], [0.0, 0.5], [0.0, 1.0]]
        >>> curve_points(r, max_k=1)[0].tolist()
        [1]
    """
    precision, recall = _curve_columns(result)
    ks = sorted(k for k in set(precision) & set(recall) if max_k is None or k <= max_k)
    return (np.array(ks, dtype=int),
            np.array([result.summary[precision[k]] for k in ks], dtype=float),
            np.array([result.summary[recall[k]] for k in ks], dtype=float))


def curve_limit(results: dict[str, Result], max_k: int | None = None) -> int | None:
    """The last cutoff the curves show: ``max_k`` if given, else the smallest cutoff the
    results hold at or past the lists' depth (:func:`list_depth`); ``None`` without curves.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [3]},
        ...     {"user": [1, 1, 1], "item": [1, 2, 3], "score": [3.0, 2.0, 1.0]},
        ...     ["P@1,2,4,8", "R@1,2,4,8"])
        >>> curve_limit({"a": r}), curve_limit({"a": r}, max_k=2)
        (4, 2)
    """
    if max_k is not None:
        return max_k
    depths = [d for d in (list_depth(r) for r in results.values()) if d is not None]
    if not depths:
        return None
    ks = sorted({int(k) for r in results.values() for k in curve_points(r)[0]})
    return min((k for k in ks if k >= max(depths)), default=ks[-1] if ks else None)


def list_depth(result: Result) -> int | None:
    """How deep the prediction lists go, as far as ``result`` shows: the mean list length
    (from the row and user counts) or the cutoff from which no user's R@k grows any more,
    whichever is larger; ``None`` if the result holds no R@k.

    A curve drawn past this depth only shows P@k falling as 1/k over ranks no list holds.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [3, 9]}
        >>> preds = {"user": [1, 1, 1, 2, 2, 2], "item": [1, 2, 3, 4, 5, 6],
        ...          "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0]}
        >>> list_depth(receval.evaluate(truth, preds, ["P@1,2,3,4,5", "R@1,2,3,4,5"]))
        3
    """
    _, recall = _curve_columns(result)
    if not recall:
        return None
    ks = sorted(recall)
    values = result.per_user[[recall[k] for k in ks]].to_numpy(dtype=np.float64)
    values = np.nan_to_num(values)
    # the first cutoff from which no user's recall grows any more
    grows = (values[:, 1:] > values[:, :-1]).any(axis=0)
    deepest_hit = ks[int(np.flatnonzero(grows)[-1]) + 1] if grows.any() else ks[0]
    return max(deepest_hit, _mean_list_length(result))


def ranking_metrics(result: Result) -> list[str]:
    """The metrics of ``result`` that are ranking metrics (not RMSE/MAE, whose scale differs).

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1], "rating": [4.0]},
        ...     {"user": [1], "item": [1], "score": [3.0]}, ["P@1", "RMSE"])
        >>> ranking_metrics(r)
        ['P@1']
    """
    return [m for m in result.metrics or list(result.summary)
            if parse_metric(m).family not in RATING]


def _curve_columns(result: Result) -> tuple[dict[int, str], dict[int, str]]:
    """k -> metric name of the P@k and R@k the result holds."""
    precision: dict[int, str] = {}
    recall: dict[int, str] = {}
    for name in result.summary:
        spec = parse_metric(name)
        if spec.k and spec.family is Family.PRECISION:
            precision.setdefault(spec.k, name)
        elif spec.k and spec.family is Family.RECALL:
            recall.setdefault(spec.k, name)
    return precision, recall


def _mean_list_length(result: Result) -> int:
    """Prediction rows kept per user with predictions, rounded up (0 without counts)."""
    rows = result.counts.get("rows", {})
    users = result.counts.get("users", {}).get("in_predictions", 0)
    if not users or "predictions" not in rows:
        return 0
    dropped = sum(v for k, v in rows.items() if k.startswith("predictions_")
                  and ("dropped" in k or "below" in k))
    return int(np.ceil(max(rows["predictions"] - dropped, 0) / users))


#: the edges of the first-hit buckets: a user whose first hit is at rank j falls in the bucket
#: (previous edge, edge] holding j
HIT_EDGES = (1, 3, 5, 10, 20, 50, 100, 200, 500, 1000)


def hit_edges(result: Result, cutoff: int | None, limit: int | None) -> list[int]:
    """The cutoffs that bound the first-hit buckets: :data:`HIT_EDGES`, ``cutoff`` and
    ``limit``, kept where ``result`` holds R@k and k <= ``limit``.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["R@1,2,3,4,5,6"])
        >>> hit_edges(r, cutoff=4, limit=6)
        [1, 3, 4, 5, 6]
    """
    _, recall = _curve_columns(result)
    wanted = {*HIT_EDGES, *(k for k in (cutoff, limit) if k)}
    return sorted(k for k in recall if k in wanted and (limit is None or k <= limit))


def first_hit_bucket(result: Result, edges: list[int]) -> np.ndarray:
    """Per user (in ``per_user`` order), the index of the first edge k of ``edges`` with
    R@k > 0 (a relevant item in the top k); ``len(edges)`` for no hit in the top
    ``edges[-1]``; -1 where R@k is NaN (a user the ``skip`` policy left out).

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 2, 3], "item": [1, 9, 3]},
        ...     {"user": [1, 1, 2, 3, 3, 3], "item": [1, 2, 5, 1, 2, 3],
        ...      "score": [2.0, 1.0, 1.0, 3.0, 2.0, 1.0]}, ["R@1,2,3"])
        >>> first_hit_bucket(r, [1, 3]).tolist()
        [0, 2, 1]
    """
    _, recall = _curve_columns(result)
    values = result.per_user[[recall[k] for k in edges]].to_numpy(dtype=np.float64)
    hit = values > 0
    out = np.where(hit.any(axis=1), hit.argmax(axis=1), len(edges))
    return np.where(np.isnan(values).any(axis=1), -1, out)


def paired_differences(baseline: Result, other: Result, metric: str) -> pd.DataFrame:
    """Per user evaluated by both: ``user``, the two values of ``metric`` (``baseline``,
    ``other``) and ``difference`` = other - baseline, users with a NaN left out.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 2]}
        >>> a = receval.evaluate(truth, {"user": [1, 2], "item": [1, 1], "score": [1.0, 1.0]},
        ...                      ["P@1"])
        >>> b = receval.evaluate(truth, {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]},
        ...                      ["P@1"])
        >>> paired_differences(a, b, "P@1")["difference"].tolist()
        [0.0, 1.0]
    """
    left = baseline.per_user[["user", metric]].rename(columns={metric: "baseline"})
    right = other.per_user[["user", metric]].rename(columns={metric: "other"})
    both = left.merge(right, on="user", how="inner", sort=False).dropna()
    return both.assign(difference=both["other"] - both["baseline"]).reset_index(drop=True)
