"""``evaluate()`` for next-item queries: :func:`receval.evaluate` with the queries as users,
the history choice applied and recorded, and the repeat / explore parts of every metric that
splits.

The parts (Li, Sun, Ren, de Rijke, "A Next Basket Recommendation Reality Check", 2023): a
metric's hits (P, R, hits) or gains (nDCG, DCG) are split by the kind of target they come from;
the denominators (k, the number of targets, the ideal DCG) stay the whole's. A query whose
targets are all of one kind puts its whole value in that part and 0 in the other; a query
with both kinds (``"rest"`` only) takes the whole value times the share of its hits or its
DCG that each kind holds, those shares read from :func:`receval.evaluate` (``hits@k``,
``DCG@k``) on those queries with one kind of target each. Other metrics split only where no
query mixes kinds (always under ``"next"`` and ``"last"``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any, cast

import numpy as np
import pandas as pd

from receval.evaluation import evaluate as evaluate_flat
from receval.exceptions import ReceValError
from receval.measures.family import Family
from receval.measures.spec import MetricSpec, parse_metrics
from receval.result import Counts, RecordedOptions
from receval.sequential.frames import as_frame
from receval.sequential.protocols import Queries
from receval.sequential.result import KINDS, SequentialResult, by_user, mean, per_user_table

HISTORY = ("keep", "exclude")
#: the families whose parts add up whatever the targets: hits split (P, R, hits) ...
BY_HITS = frozenset({Family.PRECISION, Family.RECALL, Family.HITS})
#: ... and gains split (nDCG, DCG)
BY_GAINS = frozenset({Family.NDCG, Family.DCG})


def evaluate(
    q: Queries,
    predictions: Any,
    metrics: str | Iterable[str],
    history: str = "keep",
    *,
    item_col: str = "item",
    **options: Any,
) -> SequentialResult:
    """Evaluate ranked lists, one per query of ``q`` (:func:`receval.sequential.queries`).

    ``predictions`` (a DataFrame, a dict of columns or a path) is keyed by ``query`` or by
    ``user`` and ``step`` (``session`` and ``step`` with sessions), with ``item_col`` and a
    ``score`` or ``rank`` column. ``history="exclude"`` drops each query's history items
    from its list before ranking (RecBole's general models); ``"keep"`` does not (its
    sequential models, Cornac's ``NextItemEvaluation``). Every other keyword
    (``ties=``, ``profile=``, ``engine=``, ...) is :func:`receval.evaluate`'s.

    ``summary`` is the macro over queries; ``summary_by_user`` (``macro("user")``) over users;
    ``parts["repeat"]`` and ``parts["explore"]`` add up to ``summary`` for P, R, nDCG (and
    hits, DCG), and for every metric when each query has one target. ``counts["targets"]``
    counts the (query, target) pairs of each kind, ``counts["targets_unreachable"]`` those
    whose item ``history="exclude"`` removed from the list (they stay in the truth, as
    misses); ``options["history"]`` and ``options["sequential"]`` record the choices.

    Example:
        >>> import receval
        >>> train = {"user": ["u", "u"], "item": ["a", "b"], "timestamp": [1, 2]}
        >>> test = {"user": ["u", "u"], "item": ["c", "a"], "timestamp": [3, 4]}
        >>> q = receval.sequential.queries(train, test, protocol="next")
        >>> preds = {"query": [0, 0, 1, 1], "item": ["a", "c", "a", "c"], "rank": [1, 2, 1, 2]}
        >>> r = receval.sequential.evaluate(q, preds, ["R@1", "nDCG@2"])
        >>> r.summary
        {'R@1': 0.5, 'nDCG@2': 0.8154648767857288}
        >>> r.parts["repeat"]["R@1"], r.parts["explore"]["R@1"]
        (0.5, 0.0)
        >>> x = receval.sequential.evaluate(q, preds, ["R@1"], history="exclude")
        >>> x.summary, x.counts["targets_unreachable"], x.options["history"]
        ({'R@1': 0.5}, 1, 'exclude')
    """
    if not isinstance(q, Queries):
        raise ReceValError(
            "q: expected the queries of receval.sequential.queries(train, test, "
            f"protocol=...), got {type(q).__name__}"
        )
    if history not in HISTORY:
        raise ReceValError(f"history={history!r} is not one of 'keep', 'exclude'")
    for taken in ("user_col", "truth_columns", "prediction_columns", "train", "strata"):
        if taken in options:
            raise ReceValError(
                f"{taken}= is set by receval.sequential.evaluate (the queries "
                "are the users); pass it to receval.evaluate instead"
            )
    specs = parse_metrics(metrics)
    given = as_frame(predictions, "predictions")
    preds = _keyed(q, given, item_col)
    without_query = len(given) - len(preds)
    truth = q.truth
    excluded, unreachable = 0, 0
    if history == "exclude":
        in_hist = q.in_history(preds["query"].to_numpy(), preds[item_col].to_numpy())
        removed = preds.loc[in_hist, ["query", item_col]]
        unreachable = len(
            removed.drop_duplicates().merge(
                truth[["query", "item"]].rename(columns={"item": item_col}), on=["query", item_col]
            )
        )
        excluded = int(in_hist.sum())
        preds = preds.loc[~in_hist]
        if len(preds) == 0:
            raise ReceValError(
                "predictions: no row is left once history='exclude' removed "
                "each query's history items"
            )
    flat_truth = truth[["query", "item"]].rename(columns={"item": item_col})
    whole = evaluate_flat(
        flat_truth, preds, [s.name for s in specs], user_col="query", item_col=item_col, **options
    )
    per_query = _per_query(q, whole.per_user)
    names = [s.name for s in specs]
    kinds = _kinds_per_query(q, per_query["query"].to_numpy())
    parts_pq = _parts(q, specs, per_query, kinds, flat_truth, preds, item_col, options)
    parts = {
        kind: {n: mean(t[n].to_numpy(dtype=np.float64)) for n in t.columns if n in names}
        for kind, t in parts_pq.items()
    }
    counts = cast(dict[str, Any], whole.counts)
    counts["queries"] = len(q.queries)
    counts["targets"] = {kind: int((truth["kind"] == kind).sum()) for kind in KINDS}
    counts["targets_unreachable"] = unreachable
    counts.setdefault("rows", {})["predictions_excluded_history"] = excluded
    counts["rows"]["predictions_without_query"] = without_query
    recorded = cast(dict[str, Any], whole.options)
    recorded["history"] = history
    recorded["sequential"] = {
        "protocol": q.protocol,
        "session": q.session,
        "unit": "query",
        "average": "macro over queries",
    }
    return SequentialResult(
        summary=whole.summary,
        per_user=per_user_table(per_query, names),
        counts=cast(Counts, counts),
        options=cast(RecordedOptions, recorded),
        metrics=whole.metrics,
        sums=whole.sums,
        per_query=per_query,
        parts=parts,
        parts_per_query=parts_pq,
        summary_by_user=by_user(per_query, names),
    )


def _keyed(q: Queries, preds: pd.DataFrame, item_col: str) -> pd.DataFrame:
    """The predictions with a ``query`` column (mapped from ``user``/``session`` and
    ``step`` when they have none; rows of a (user, step) that is no query are dropped, and
    counted by the caller: ``counts["rows"]["predictions_without_query"]``)."""
    if item_col not in preds.columns:
        raise ReceValError(f"predictions: missing column {item_col!r}")
    if "query" in preds.columns:
        return preds
    unit = "session" if q.session is not None else "user"
    if unit not in preds.columns or "step" not in preds.columns:
        raise ReceValError(
            f"predictions: key them by 'query' or by '{unit}' and 'step' "
            f"(columns: {', '.join(map(str, preds.columns))})"
        )
    keys = q.queries[[unit, "step", "query"]]
    mapped = preds.merge(keys, on=[unit, "step"], how="inner")  # others: no such query
    mapped["query"] = mapped["query"].astype(np.int64)
    return mapped.drop(columns=[unit, "step"])


def _per_query(q: Queries, per_user: pd.DataFrame) -> pd.DataFrame:
    """receval.evaluate's per-user table read per query, with the query's user and step."""
    table = per_user.rename(columns={"user": "query"})
    keys = [c for c in ("query", "user", "session", "step") if c in q.queries.columns]
    return q.queries[keys].merge(table, on="query", how="inner")


def _kinds_per_query(q: Queries, query: np.ndarray) -> pd.DataFrame:
    """Per query (in ``query``'s order): its repeat and explore targets."""
    n = len(q.queries)
    ids = q.truth["query"].to_numpy()
    repeat = (q.truth["kind"] == "repeat").to_numpy()
    counts = {
        "repeat": np.bincount(ids[repeat], minlength=n),
        "explore": np.bincount(ids[~repeat], minlength=n),
    }
    return pd.DataFrame({kind: counts[kind][query] for kind in KINDS})


def _parts(
    q: Queries,
    specs: list[MetricSpec],
    per_query: pd.DataFrame,
    kinds: pd.DataFrame,
    truth: pd.DataFrame,
    preds: pd.DataFrame,
    item_col: str,
    options: dict[str, Any],
) -> dict[str, pd.DataFrame]:
    """Each kind's per-query values of every metric that splits."""
    n_rep = kinds["repeat"].to_numpy()
    n_exp = kinds["explore"].to_numpy()
    mixed = (n_rep > 0) & (n_exp > 0)
    split = [s for s in specs if s.family in BY_HITS | BY_GAINS or not mixed.any()]
    keys = [c for c in ("query", "user", "session", "step") if c in per_query.columns]
    out = {kind: per_query[keys].copy() for kind in KINDS}
    shares = (
        _shares(split, per_query["query"].to_numpy()[mixed], truth, preds, q, item_col, options)
        if mixed.any()
        else {}
    )
    for spec in split:
        whole = per_query[spec.name].to_numpy(dtype=np.float64)
        for kind, alone in (("repeat", n_exp == 0), ("explore", n_rep == 0)):
            value = np.where(alone, whole, 0.0)
            value[np.isnan(whole)] = np.nan
            if mixed.any():
                value[mixed] = whole[mixed] * shares[(spec.name, kind)]
            out[kind][spec.name] = value
    return out


def _shares(
    specs: list[MetricSpec],
    mixed: np.ndarray,
    truth: pd.DataFrame,
    preds: pd.DataFrame,
    q: Queries,
    item_col: str,
    options: dict[str, Any],
) -> dict[tuple[str, str], np.ndarray]:
    """Per query of ``mixed`` (in order): the share of its hits (P, R, hits) or of its DCG
    (nDCG, DCG) at the metric's cutoff that each kind of target holds."""
    asked: dict[str, str] = {}
    for s in specs:
        base = "hits" if s.family in BY_HITS else "DCG"
        asked[s.name] = base if s.k is None else f"{base}@{s.k}"
    wanted = sorted(set(asked.values()))
    kept = options.copy()  # the profile and the ties too: the lists ranked as the whole's
    flags = q.truth.set_index(["query", "item"])["kind"]
    in_mixed = truth["query"].isin(mixed).to_numpy()
    sub_truth = truth.loc[in_mixed]
    kind_of = flags.reindex(
        pd.MultiIndex.from_frame(sub_truth.rename(columns={item_col: "item"}))
    ).to_numpy()
    sub_preds = preds.loc[preds["query"].isin(mixed).to_numpy()]
    values: dict[str, pd.DataFrame] = {}
    if len(sub_preds) == 0:  # no list: no hit, no gain, nothing to split
        zero = np.zeros(len(mixed))
        return {(s.name, kind): zero for s in specs for kind in KINDS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, rows in (
            ("whole", np.ones(len(sub_truth), dtype=bool)),
            ("repeat", kind_of == "repeat"),
            ("explore", kind_of == "explore"),
        ):
            r = evaluate_flat(
                sub_truth.loc[rows], sub_preds, wanted, user_col="query", item_col=item_col, **kept
            )
            values[label] = r.per_user.set_index("user").reindex(mixed)
    out: dict[tuple[str, str], np.ndarray] = {}
    for name, base in asked.items():
        whole = values["whole"][base].to_numpy(dtype=np.float64)
        for kind in KINDS:
            part = values[kind][base].to_numpy(dtype=np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                share = np.where(whole > 0, np.minimum(part / whole, 1.0), 0.0)
            out[(name, kind)] = share
    return out
