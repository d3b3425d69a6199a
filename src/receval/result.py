"""What an evaluation returns: the numbers, per user, with the audit and the definitions.

Pure data: this module imports nothing from receval above :mod:`receval.exceptions`. Drawing
and the notebook view belong to :mod:`receval.report`, which reads a Result and lends it
:meth:`Result.plot` and :meth:`Result._repr_html_` through :data:`VIEWS` when it loads
(:mod:`receval.evaluation` loads it, and :mod:`receval.tracking`, which lends :meth:`Result.log`
the same way).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

import pandas as pd

from receval import numbers
from receval.exceptions import ReceValError
from receval.options import (
    AllSkipped,
    APNormalizer,
    Average,
    Discount,
    Duplicates,
    Empty,
    EmptyScope,
    Gain,
    Ideal,
    IprecRounding,
    ItemOrder,
    NonpositiveScores,
    PrecisionDenominator,
    Protocol,
    RecallDenominator,
    ScoreDtype,
    Ties,
    TruthScope,
    Users,
)

#: The views a higher layer lends to :class:`Result`, by name: ``"plot"`` (``(result, kind,
#: path, **kwargs) -> Figure``), ``"html"`` (``(result) -> str``) and ``"log"`` (``(result, to,
#: path, name=) -> str``). :mod:`receval.report` and :mod:`receval.tracking` fill it when they
#: are imported, so the arrow points from them to the data, never back.
VIEWS: dict[str, Callable[..., Any]] = {}


class Counts(TypedDict, total=False):
    """:attr:`Result.counts`, typed: what each key of the input audit holds (a plain dict at
    run time, so JSON, ``dict(...)`` and ``counts["users"]["evaluated"]`` work as before).

    Example:
        >>> c: Counts = {"users": {"evaluated": 2}, "rows": {"truth": 3}}
        >>> c["users"]["evaluated"]
        2
    """

    #: users per side, evaluated and not, and why (``seen`` adds up); with ``exclude_train``,
    #: ``emptied_by_exclude_train``: evaluated users whose every prediction was a training item
    users: dict[str, int]
    #: rows per side, kept and dropped, and why (each side adds up)
    rows: dict[str, int]
    #: ``{"policy": empty, "users": {metric: users whose value is undefined}}``, and for the
    #: per-user beyond-accuracy metrics ``"reasons"``: ``{metric: {why: users}}``
    undefined: dict[str, Any]
    #: metric -> users in its mean
    averaged: dict[str, int]
    #: with ``strata=``: ``{"undefined": {group: {metric: users whose value is undefined}},
    #: "not_per_group": {metric: why it has no per-group column}}`` (:mod:`receval.strata`)
    strata: dict[str, Any]
    #: cutoff k -> users whose k-th item ties with the (k+1)-th
    ties_at_cutoff: dict[int, int]
    #: metric -> why its summary value is not a number
    summary_null: dict[str, str]
    #: metric -> users evaluated (a profile whose metrics select different users)
    users_per_metric: dict[str, int]
    #: the training audit (``train=``: :mod:`receval.training`)
    train: dict[str, int]
    #: per metric, the group exposure tables (:mod:`receval.beyond`)
    group_exposure: dict[str, Any]
    #: a Spark partition's catalogue-metric exposure counts, for the driver (popped there)
    exposure: dict[str, Any]
    #: how the files were streamed (``memory_budget=``, :mod:`receval.streaming`): ``mode``
    #: (``sorted`` or ``partitioned``), ``partitions``, ``batches``, ``passes``, ``budget_bytes``
    streaming: dict[str, Any]
    #: how sampled candidates were drawn (:mod:`receval.sampled`)
    sampled: dict[str, Any]
    #: the debiased metrics' weights (:func:`receval.debias.record_diagnostics`)
    debias: dict[str, Any]


class RecordedOptions(TypedDict, total=False):
    """:attr:`Result.options`, typed: every option in force (the fields of
    :class:`receval.options.Options`, their choices its ``Literal`` types), then what the plan
    records besides (a plain dict at run time; ``tests/test_options_recorded.py`` holds the
    keys to :class:`~receval.options.Options`' fields).

    Example:
        >>> o: RecordedOptions = {"ties": "stable", "engine": "numba", "train": None}
        >>> o["ties"]
        'stable'
    """

    relevance_threshold: float | str | None
    score_threshold: float | None
    protocol: Protocol
    ties: Ties
    precision_denominator: PrecisionDenominator | None
    recall_denominator: RecallDenominator
    ap_normalizer: APNormalizer
    gain: Gain
    empty: Empty
    average: Average
    users: Users
    duplicates: Duplicates
    score_dtype: ScoreDtype
    item_order: ItemOrder
    truth_scope: TruthScope
    nonpositive_scores: NonpositiveScores
    empty_scope: EmptyScope
    max_list: int | None
    discount: Discount
    ideal: Ideal
    err_max_grade: float | Literal["user"]
    all_skipped: AllSkipped
    persistence: float
    iprec_rounding: IprecRounding
    #: the receval version, the engine (and torch's device)
    version: str
    engine: str
    device: str | None
    #: each requested metric name -> its canonical name, in request order
    metrics: dict[str, str]
    #: the profile's name, and the options it sets otherwise for some metrics
    profile: str | None
    per_metric: dict[str, dict[str, Any]]
    #: the inputs besides the options (:func:`receval.finalize.recorded_inputs`)
    train: Any
    exclude_train: bool
    item_features: Any
    item_groups: Any
    strata: Any
    beyond: dict[str, Any] | None
    #: IPS/SNIPS (:mod:`receval.debias`)
    debias: str | None
    propensity: Any
    propensity_clip: float | None
    #: sampled candidates (:mod:`receval.sampled`); runs averaged (:func:`receval.compare`)
    sampled: dict[str, Any]
    runs: int


@dataclass
class Result:
    """The outcome of :func:`receval.evaluate`.

    Attributes:
        summary: metric name (as requested) -> mean over the evaluated users.
        per_user: a DataFrame with a ``user`` column and one column per metric (NaN where the
            ``skip`` policy left the user out of that metric). Catalogue-level beyond-accuracy
            metrics (``coverage@k``, ``gini@k``, ``personalization@k``, ...: one number over
            all lists, :mod:`receval.beyond`) are in ``summary`` only, with no column here.
        counts: the input audit: users per side, users evaluated and skipped, rows dropped and
            why, predictions without a truth row, cutoffs that fell inside a tie, and why a
            summary value is not a number (``summary_null``). The rows always add up, per
            side: ``truth`` = ``truth_kept`` + ``truth_dropped_missing_rating`` +
            ``truth_dropped_unpredicted`` + ``truth_dropped_duplicates`` +
            ``truth_not_evaluated``; ``predictions`` = ``predictions_kept`` (in the ranked
            lists) + ``predictions_dropped_duplicates`` +
            ``predictions_ignored_known_protocol`` + ``predictions_below_score_threshold`` +
            ``predictions_not_evaluated`` + ``predictions_excluded_train`` (removed by
            ``exclude_train=True`` before ranking) (a key that is absent counts 0). Duplicates are
            dropped and counted for every user, evaluated or not; ``*_not_evaluated`` are the
            rows left of users who are not evaluated. Users likewise: ``seen`` = ``evaluated``
            + ``not_evaluated_only_in_truth`` + ``not_evaluated_only_in_predictions`` +
            ``not_evaluated_without_relevant`` + ``not_evaluated_rows_dropped``. With
            ``train=``, ``counts["train"]`` holds the training audit (:mod:`receval.training`):
            ``rows``, ``users``, ``items`` of the training data, ``predictions_in_train``,
            ``truth_in_train``, ``users_without_train``, ``items_without_train`` and, with
            timestamps on both sides, ``train_after_test``. :class:`Counts` declares every key.
        options: every option in effect, the receval version and the engine, so a number
            never travels without its definition, and what the plan was given besides:
            ``train``, ``exclude_train``, ``item_features``, ``item_groups``, ``strata`` and
            ``beyond``, each a short description (a path, a name, ``{"rows": n, "users": n}``)
            or ``None`` (:func:`receval.finalize.recorded_inputs`). Written once, with the
            plan; :class:`RecordedOptions` declares every key.
        sums: the exact, mergeable sums the summary was finalised from (a
            :class:`receval.accumulate.Accumulator`; ``None`` when not kept): merge them with
            another set of users' sums and ``finalize`` gives the summary over both, bit for bit
            as one evaluation would (partitions, time windows).
        strata: with ``evaluate(strata=...)``, a DataFrame, one row per group of users:
            ``group``, ``users`` and one column per metric asked for that is a mean over
            users (accuracy, and the per-user beyond-accuracy and fairness metrics);
            catalogue-level metrics are named in ``counts["strata"]["not_per_group"]``;
            ``None`` otherwise (:mod:`receval.strata`).
        strata_sums: with ``strata=``, each group's exact sums (group -> Accumulator; merged,
            they give ``sums``); ``None`` otherwise.
        list_depth: the longest ranked list evaluated (items kept in one user's list), or
            ``None`` where the door does not record it: :func:`receval.compare` warns when
            models' lists of different depths meet on a metric without a cutoff, and builds
            the popular baseline as deep as the deepest model list.
        warnings: the warnings the run raised (not silenced), each once, as ``{"code": ...,
            "message": ...}`` (``code``: what ``silence=`` takes): :func:`receval.evaluate`
            and :func:`receval.evaluate_scores` keep them (:func:`receval.checks.recording`),
            and every output carries them (:func:`receval.report.audit.audit_record`).

    Example:
        >>> import receval
        >>> truth = {"user": [1, 1], "item": [10, 11]}
        >>> preds = {"user": [1, 1], "item": [10, 12], "score": [0.9, 0.8]}
        >>> r = receval.evaluate(truth, preds, ["P@2", "R@2"])
        >>> r.summary
        {'P@2': 0.5, 'R@2': 0.5}
        >>> r.per_user.columns.tolist()
        ['user', 'P@2', 'R@2']
    """

    summary: dict[str, float]
    per_user: pd.DataFrame
    counts: Counts
    options: RecordedOptions
    metrics: list[str] = field(default_factory=list)
    sums: Any = field(default=None, repr=False, compare=False)
    strata: Any = field(default=None, repr=False, compare=False)
    strata_sums: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    list_depth: int | None = field(default=None, repr=False, compare=False)
    warnings: list[dict[str, str]] = field(default_factory=list, repr=False, compare=False)

    def __getitem__(self, metric: str) -> float:
        return self.summary[metric]

    def to_dict(self) -> dict[str, Any]:
        """Summary, counts, options and the run's warnings as plain JSON-ready Python objects.

        A value that is not a finite number (NaN: undefined; inf: beyond the float range)
        becomes ``None``, so JSON never holds ``NaN``/``Infinity`` tokens; why a summary value
        is ``None`` is in ``counts["summary_null"]``.

        Example:
            >>> import receval
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
            >>> sorted(r.to_dict())
            ['counts', 'options', 'summary', 'warnings']
        """
        out = {
            "summary": {k: _json_float(v) for k, v in self.summary.items()},
            "counts": _finite(self.counts),
            "options": _finite(self.options),
            "warnings": [dict(w) for w in self.warnings],  # the run's, as the terminal said
        }
        if self.strata is not None:  # per group of users (strata=): one record per group
            out["strata"] = _finite(self.strata.to_dict(orient="records"))
        return out

    def to_json(self, **kwargs: Any) -> str:
        """The :meth:`to_dict` view as a JSON string (NaN becomes ``null``).

        Example:
            >>> import receval
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
            >>> r.to_json().startswith('{"summary": {"P@1": 1.0}')
            True
        """
        return json.dumps(self.to_dict(), **kwargs)

    def to_parquet(self, path: str | Path) -> None:
        """The per-user values (:attr:`per_user`) to a Parquet file at ``path``; a streamed
        result whose values were spilled writes them from disk without holding them
        (:class:`receval.streaming.peruser.StreamedResult`).

        Example:
            >>> import receval, tempfile, pathlib, pyarrow.parquet as pq
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
            >>> out = pathlib.Path(tempfile.mkdtemp()) / "per_user.parquet"
            >>> r.to_parquet(out); pq.read_table(out).column_names
            ['user', 'P@1']
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pandas(self.per_user, preserve_index=False), str(path))

    def to_pandas(self) -> pd.DataFrame:
        """The summary as a one-column DataFrame indexed by metric.

        Example:
            >>> import receval
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
            >>> r.to_pandas().loc["P@1", "value"]
            np.float64(1.0)
        """
        return pd.DataFrame({"value": pd.Series(self.summary, dtype=float)}).rename_axis(
            "metric"
        )

    def to_polars(self) -> Any:
        """The summary as a polars DataFrame with columns ``metric`` and ``value``.

        Example:
            >>> import receval
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
            >>> r.to_polars().shape
            (1, 2)
        """
        import polars as pl

        return pl.DataFrame(
            {"metric": list(self.summary), "value": [float(v) for v in self.summary.values()]}
        )

    def __repr__(self) -> str:
        width = max((len(k) for k in self.summary), default=6)
        lines = [f"  {k:<{width}}  {numbers.value(v)}" for k, v in self.summary.items()]
        users = self.counts["users"]["evaluated"]
        head = f"Result({users} users; ties={self.options['ties']}, empty={self.options['empty']}"
        return head + f", average={self.options['average']})\n" + "\n".join(lines)

    def _repr_html_(self) -> str | None:
        view = VIEWS.get("html")
        return None if view is None else str(view(self))  # None: the notebook shows the repr

    def log(self, to: str, path: str | None = None, *, name: str | None = None) -> str:
        """Log the metrics (stable keys: ``nDCG@10`` -> ``ndcg_at_10``), the options and the
        receval version (parameters), the per-user values (Parquet) and the counts (JSON) to
        ``to``: ``"mlflow"`` (the active run, or a new one; returns its id), ``"dvc"`` or
        ``"json"`` (files in the folder ``path``, default ``receval-log``; returns it). ``name``
        nests the metrics under a model name. See :mod:`receval.tracking`.

        Example:
            >>> import receval, tempfile
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["nDCG@10"])
            >>> folder = r.log("dvc", tempfile.mkdtemp())
        """
        view = VIEWS.get("log")
        if view is None:
            raise ReceValError("Result.log: no tracker is registered; import receval.tracking "
                               "(or receval) to log")
        return str(view(self, to, path, name=name))

    def plot(self, kind: str, path: str | None = None, **kwargs: Any) -> Any:
        """Draw ``kind`` ("at-k", "pr-curve", "f-beta", "distribution", "comparison") as a
        matplotlib Figure, saved to ``path`` (.png or .svg) when given; see
        :mod:`receval.report.plots` for the keyword arguments of each kind.

        Example:
            >>> import receval
            >>> r = receval.evaluate({"user": [1], "item": [1]},
            ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1,2", "R@1,2"])
            >>> r.plot("pr-curve").axes[0].get_xlabel()
            'recall@k'
        """
        view = VIEWS.get("plot")
        if view is None:
            raise ReceValError("Result.plot: no plot view is registered; import receval.report "
                               "(or receval) to draw")
        return view(self, kind, path, **kwargs)


def _json_float(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float (at any depth) replaced by ``None``."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def null_reasons(summary: dict[str, float], undefined: dict[str, int], used: dict[str, int],
                 empty: str, rating: set[str]) -> dict[str, str]:
    """Why each summary value that JSON shows as ``null`` is not a number.

    Example:
        >>> reasons = null_reasons({"P@1": math.nan, "RMSE": math.inf, "R@1": 0.5},
        ...     {"P@1": 2, "RMSE": 0, "R@1": 0}, {"P@1": 3, "RMSE": 2, "R@1": 3}, "nan", {"RMSE"})
        >>> reasons["P@1"], reasons["RMSE"], "R@1" in reasons
        ("undefined for 2 user(s) and empty='nan'", 'too large for a float (> 1.8e308)', False)
    """
    reasons: dict[str, str] = {}
    for name, value in summary.items():
        if math.isinf(value):
            reasons[name] = "too large for a float (> 1.8e308)"
        elif not math.isnan(value):
            continue
        elif name in rating:
            reasons[name] = "no (user, item) pair has both a rating and a prediction"
        elif used.get(name, 0) == 0:
            reasons[name] = "undefined for every user"
        elif empty == "nan":
            reasons[name] = f"undefined for {undefined.get(name, 0)} user(s) and empty='nan'"
        else:
            reasons[name] = "undefined (no user's numbers add up to a value)"
    return reasons
