"""The report's beyond-accuracy section: coverage, novelty and popularity bias per model, a
long-tail exposure plot (the share of recommendation slots by item popularity rank, one line
per model) and each model's most recommended items, with titles when an item table is given.

The table shows the beyond-accuracy values the evaluation computed (the same lists as every
other number of the report: after exclusions, thresholds and the tie policy); the exposure and
the most recommended items are read from each model's predictions as
:mod:`receval.beyond.report_data` reads them (each user's top ``k`` by score, input order on
ties), for the users the evaluation covered, without training items when those were excluded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from receval import numbers
from receval.beyond.names import parse_beyond
from receval.exceptions import ReceValError
from receval.result import Result

#: the metrics the section always shows (at its cutoff), besides the beyond ones asked
SECTION_METRICS = ("coverage", "novelty", "gini", "APLT")
#: popularity-rank groups of the exposure plot; items listed per model
BINS = 10
TOP_N = 10


def section_k(metrics: Sequence[str], default: int = 10) -> int:
    """The section's cutoff: the first beyond-accuracy metric's k, else the first accuracy
    cutoff asked, else ``default``.

    Example:
        >>> section_k(["nDCG@5", "novelty@20"]), section_k(["MRR", "P@5"]), section_k(["MRR"])
        (20, 5, 10)
    """
    from receval.measures.spec import parse_metric

    beyond = [s.k for s in (parse_beyond(m) for m in metrics) if s is not None]
    if beyond:
        return beyond[0]
    cutoffs = [parse_metric(m).k for m in metrics if parse_beyond(m) is None]
    return next((int(k) for k in cutoffs if k), default)


def section_metrics(metrics: Sequence[str], k: int) -> list[str]:
    """The beyond-accuracy names the section shows: those in ``metrics``, then
    ``coverage@k``, ``novelty@k``, ``gini@k`` and ``APLT@k`` where not asked already (as the
    same metric at the same k under another spelling).

    Example:
        >>> section_metrics(["P@10", "Coverage@10", "ILD@5"], 10)
        ['Coverage@10', 'ILD@5', 'novelty@10', 'gini@10', 'APLT@10']
    """
    asked = [m for m in metrics if parse_beyond(m) is not None]
    have = {(s.metric, s.k) for s in (parse_beyond(m) for m in asked) if s is not None}
    return asked + [f"{m}@{k}" for m in SECTION_METRICS if (m, k) not in have]


def accuracy_names(names: Sequence[str]) -> list[str]:
    """``names`` without the beyond-accuracy ones (the report's tables, curves and tests read
    accuracy metrics; the beyond-accuracy ones have this section).

    Example:
        >>> accuracy_names(["nDCG@10", "coverage@10", "MRR"])
        ['nDCG@10', 'MRR']
    """
    return [n for n in names if parse_beyond(n) is None]


def without_beyond(result: Result) -> Result:
    """``result`` without its beyond-accuracy metrics (itself when it has none).

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]}, {"user": [1], "item": [1],
        ...     "score": [1.0]}, ["P@1", "novelty@1"], train={"user": [2], "item": [1]})
        >>> without_beyond(r).summary
        {'P@1': 1.0}
    """
    from receval.report.models import restrict

    names = list(result.metrics or result.summary)
    keep = accuracy_names(names)
    return result if len(keep) == len(names) else restrict(result, keep)


def beyond_section(
    results: Mapping[str, Result],
    predictions: Mapping[str, Any],
    train: Any,
    *,
    k: int = 10,
    titles: Any = None,
    exclude_train: bool = False,
    bins: int = BINS,
    top_n: int = TOP_N,
) -> dict[str, Any]:
    """What the section draws: ``k``, ``columns`` and ``rows`` (model, cells) of the metrics
    table, which ``catalogue`` metrics are one number over all lists, the exposure ``plot``
    (an SVG ``data:`` URI) and its table (``bins``, ``exposure``), and the ``top`` items of
    each model (item, title, lists, share of users).

    ``results``: model -> its :class:`~receval.result.Result`; the table shows every
    beyond-accuracy metric they hold (computed by :func:`receval.evaluate`); when they hold
    none, ``coverage@k``, ``novelty@k``, ``gini@k`` and ``APLT@k`` are computed from the
    predictions (:func:`~receval.beyond.report_data.coverage_novelty`). ``predictions``:
    model -> a frame (pandas or Arrow) of user, item, score (or rank); ``train``: the training
    interactions (a frame of user, item or :class:`~receval.training.Training`); ``titles``:
    item -> title (a dict, a Series, or a frame of item, title).

    Example:
        >>> train = pd.DataFrame({"user": [1, 2, 3, 3], "item": ["a", "a", "b", "c"]})
        >>> pop = pd.DataFrame({"user": [1, 2], "item": ["a", "a"], "score": [1.0, 1.0]})
        >>> s = beyond_section({}, {"pop": pop}, train, k=1, bins=3, titles={"a": "Heat"})
        >>> s["columns"], s["rows"][0]["cells"]
        (['coverage@1', 'novelty@1', 'gini@1', 'APLT@1'], ['0.3333', '1.0000', '0.6667', '0.0000'])
        >>> s["top"][0]["items"]
        [['a', 'Heat', '2', '100.0%']]
    """
    from receval.beyond.report_data import coverage_novelty, long_tail_exposure, most_recommended
    from receval.report import plots
    from receval.training import Training, plain_ids, read_train

    if not predictions:
        raise ReceValError("the beyond-accuracy section needs each model's predictions")
    trained = train if isinstance(train, Training) else read_train(train)
    train_frame = pd.DataFrame({"user": plain_ids(trained.users),
                                "item": plain_ids(trained.items)})
    frames = {name: _lists(preds, results.get(name), trained if exclude_train else None)
              for name, preds in predictions.items()}
    held = _held(results)
    if held:
        table = pd.DataFrame([[results[name].summary[m] for m in held] for name in results],
                             index=list(results), columns=held)
    else:
        table = coverage_novelty(frames, train_frame, k=k, metrics=SECTION_METRICS)
    catalogue = [m for m in table.columns if _reduction(m) == "catalogue"]
    exposure = long_tail_exposure(frames, train_frame, k=k, bins=bins)
    heads, reference = _bins(exposure, train_frame)
    shares = {name: g["share"].to_numpy(np.float64) for name, g in
              exposure.groupby("model", sort=False)}
    top = most_recommended(frames, k=k, n=top_n, titles=_titles(titles))
    return {
        "k": k,
        "columns": [str(c) for c in table.columns],
        "catalogue": catalogue,
        "rows": [{"model": str(name), "cells": [numbers.value(v) for v in row]}
                 for name, row in zip(table.index, table.to_numpy(np.float64), strict=True)],
        "bins": heads,
        "exposure": [{"model": "training interactions",
                      "cells": [numbers.share(v) for v in reference] + [""]}]
        + [{"model": name, "cells": [numbers.share(v) for v in s]} for name, s in shares.items()],
        "plot": plots.data_uri(plot_long_tail(shares, heads, reference)),
        "titles": titles is not None,
        "top": [{"model": str(name),
                 "items": [[str(i), "" if t is None else str(t), numbers.count(n), numbers.share(s)]
                           for i, t, n, s in g[["item", "title", "lists",
                                                "share_of_users"]].itertuples(index=False)]}
                for name, g in top.groupby("model", sort=False)],
    }


def plot_long_tail(shares: Mapping[str, np.ndarray], labels: Sequence[str],
                   reference: np.ndarray | None = None) -> Any:
    """One line per model: the share of its recommendation slots in each popularity-rank
    group of items (``labels``; a last ``unseen`` value for items without training rows),
    with the training interactions' share as a dashed grey line.

    Example:
        >>> fig = plot_long_tail({"pop": np.array([1.0, 0.0, 0.0])}, ["1-5", "6-10"],
        ...                      np.array([0.8, 0.2]))
        >>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        ['training interactions', 'pop']
    """
    from receval.report import plots

    with plots.plot_settings():
        fig = plots._figure(8.0, 4.0)
        ax = fig.subplots()
        groups = [*labels, "unseen"]
        x = np.arange(len(groups))
        if reference is not None:
            ax.plot(x[:len(reference)], reference, linestyle="--", color="#999999",
                    label="training interactions")
        for i, (name, values) in enumerate(shares.items()):
            ax.plot(x[:len(values)], values, marker="o", color=plots._color(i), label=name)
        ax.set_xticks(x, groups, rotation=30, ha="right")
        ax.set_xlabel("items by training popularity rank (most popular first)")
        ax.set_ylabel("share of recommendations")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend()
    return fig


def _held(results: Mapping[str, Result]) -> list[str]:
    """The beyond-accuracy metrics every result holds, in the first result's order."""
    if not results:
        return []
    first = next(iter(results.values()))
    names = [m for m in first.metrics or list(first.summary) if parse_beyond(m) is not None]
    return [m for m in names if all(m in r.summary for r in results.values())]


def _reduction(name: str) -> str:
    spec = parse_beyond(name)
    return spec.entry.reduction if spec is not None else "user"


def _lists(preds: Any, result: Result | None, train: Any) -> pd.DataFrame:
    """A model's predictions as pandas, for the users its evaluation covered, without the
    training rows when those were excluded."""
    frame = preds.to_pandas() if hasattr(preds, "to_pandas") and not isinstance(
        preds, pd.DataFrame) else pd.DataFrame(preds)
    if result is not None and len(result.per_user):
        frame = frame[frame["user"].isin(result.per_user["user"])]
    if train is not None and len(frame):
        import pyarrow as pa

        def ids(values: pd.Series) -> Any:  # receval's id arrays: int64 numbers, Arrow text
            arr = values.to_numpy()
            return arr.astype(np.int64) if arr.dtype.kind in "iu" else pa.array(
                arr.astype(str))

        inside = train.in_train(ids(frame["user"]), ids(frame["item"]))
        frame = frame[~inside]
    return frame.reset_index(drop=True)


def _bins(exposure: pd.DataFrame, train: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """The groups' labels (popularity ranks) and the share of training interactions in each
    (the same groups as :func:`~receval.beyond.report_data.long_tail_exposure`)."""
    first = exposure[exposure["model"] == exposure["model"].iloc[0]]
    groups = first[first["bin"] != "unseen"]
    labels = [f"{a}" if a == b else f"{a}\u2013{b}"
              for a, b in zip(groups["rank_from"], groups["rank_to"], strict=True)]
    counts = np.sort(train["item"].value_counts().to_numpy())[::-1]
    totals = [counts[a - 1:b].sum() for a, b in zip(groups["rank_from"], groups["rank_to"],
                                                     strict=True)]
    return labels, np.asarray(totals, dtype=np.float64) / max(int(counts.sum()), 1)


def _titles(titles: Any) -> Mapping[Any, str] | pd.Series | None:
    if titles is None or isinstance(titles, Mapping | pd.Series):
        return titles
    if isinstance(titles, pd.DataFrame):
        if "item" not in titles.columns:
            raise ReceValError(f"the item table has no column 'item' (columns: "
                               f"{', '.join(map(str, titles.columns))})")
        others = [c for c in titles.columns if c != "item"]
        column = "title" if "title" in others else (others[0] if others else None)
        if column is None:
            raise ReceValError("the item table has no title column besides the item")
        return pd.Series(titles[column].to_numpy(), index=titles["item"].to_numpy())
    raise ReceValError(f"titles must be a dict, a Series or a frame of item, title; got "
                       f"{type(titles).__name__}")
