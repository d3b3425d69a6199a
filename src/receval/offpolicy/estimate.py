"""``estimate()``: what would each target policy earn online, estimated from the served log."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval import numbers
from receval.accumulate import ExactSum
from receval.checks import OffPolicyWeightsWarning, silence, warn
from receval.exceptions import ReceValError
from receval.offpolicy.estimators import ESTIMATORS, Context, Terms
from receval.offpolicy.intervals import bootstrap, normal
from receval.offpolicy.logs import Log, _first_bad, _number, read_log, request_codes
from receval.offpolicy.policies import ItemCodes, Resolved, _join, resolve
from receval.offpolicy.sums import EstimateSums, exact_sums
from receval.scalars import plain

#: the options ``estimate`` takes besides its named arguments
OPTIONS = ("clip", "switch_threshold", "rule", "epsilon", "temperature", "examination",
           "logger", "alpha", "silence", "window", "origin", "time_unit", "shrinkage",
           "repeats")
#: ``repeats=``: a served list shows each item once (``"refuse"``, the default) or may show an
#: item at several positions (``"allow"``: slates drawn slot by slot)
REPEATS = ("refuse", "allow")
#: the estimators whose weights are not normalised: they get the blow-up warning
UNNORMALISED = ("ips", "iips", "dr", "dros", "sips", "rips", "cascade_dr", "pi", "pbm")
#: a target's weights "blow up" when the effective sample size falls below this share of
#: the weighted rows, or one weight holds more than MAX_SHARE of their total
ESS_SHARE = 0.01
MAX_SHARE = 0.1
COLUMNS = ("target", "estimator", "value", "ci_low", "ci_high", "ess", "max_weight",
           "max_weight_share", "mean_weight", "support_missing", "se", "normal_low",
           "normal_high", "n_requests", "n_rows", "target_rows_dropped", "weights_blow_up")


@dataclass
class OffPolicyResult:
    """The estimates, one row per (target, estimator): ``value``, the bootstrap interval
    (``ci_low``, ``ci_high``), the normal interval (``normal_low``, ``normal_high``) and its
    standard error ``se``, and the diagnostics of the importance weights: ``ess`` (effective
    sample size, (sum w)^2 / sum w^2 over the weighted rows), ``max_weight`` and its share of
    the total ``max_weight_share``, ``mean_weight`` (near 1 when the target's mass lies where
    the logger showed items) and ``support_missing`` (requests where the target puts mass on
    an item the log never shows); ``target_rows_dropped`` counts the target's rows for
    requests the log does not hold (ignored). ``options`` records what was used, and
    ``reward_model_rows_dropped`` the reward model's rows for no logged request or a position
    no list reaches."""

    table: pd.DataFrame
    options: dict[str, Any] = field(default_factory=dict)
    #: the exact sums of each row, keyed by (the ``by`` values..., target, estimator)
    sums: dict[tuple[Any, ...], EstimateSums] = field(default_factory=dict, repr=False)

    def merged(self) -> pd.DataFrame:
        """The estimates and diagnostics of all the groups together (per target and
        estimator), from the merged exact sums: equal bit for bit to the estimate of the whole
        log (no interval: those do not merge).

        Example:
            >>> import pandas as pd
            >>> log = pd.DataFrame({"request": [1, 2], "item": "a", "position": 1,
            ...     "reward": [1.0, 0.0], "propensity": [0.5, 0.25], "day": [1, 2]})
            >>> new = pd.DataFrame({"request": [1, 2], "item": "a", "position": 1,
            ...                     "probability": 1.0})
            >>> r = estimate(log, {"a": new}, estimators=["ips"], n_resamples=0, by="day")
            >>> r.table["value"].tolist(), r.merged()["value"].tolist()
            ([2.0, 0.0], [1.0])
        """
        return merge_sums(self.sums)

    def __repr__(self) -> str:
        return f"OffPolicyResult(\n{self.table.to_string(index=False)}\n)"

    def to_csv(self) -> str:
        """The table as CSV through :func:`receval.io.text_tables.csv_text`, as every command
        writes one: every text cell (targets, estimators, ``by`` values) with its control
        characters escaped and a ``'`` before a formula; floats at full precision.

        Example:
            >>> import pandas as pd
            >>> r = OffPolicyResult(pd.DataFrame({"target": ["=a"], "by": ["\\t=1"],
            ...                                   "value": [0.5]}))
            >>> r.to_csv().splitlines()
            ['target,by,value', "'=a,\\\\x09=1,0.5"]
        """
        from receval.io.text_tables import csv_text

        rows = self.table.itertuples(index=False, name=None)
        return csv_text(self.table.columns, rows)

    def to_json(self) -> str:
        """The estimates and the options as JSON (NaN as null).

        Example:
            >>> import pandas as pd, json
            >>> json.loads(OffPolicyResult(pd.DataFrame({"value": [float("nan")]})).to_json())
            {'estimates': [{'value': None}], 'options': {}}
        """
        rows = [{k: (None if isinstance(v, float) and not math.isfinite(v) else plain(v))
                 for k, v in row.items()} for row in self.table.to_dict(orient="records")]
        return json.dumps({"estimates": rows, "options": self.options}, default=str)


def merge_sums(sums: Mapping[tuple[Any, ...], EstimateSums]) -> pd.DataFrame:
    """Merge the sums of (..., target, estimator) keys over everything before the target
    (groups of one call, or several calls' :attr:`OffPolicyResult.sums` on disjoint logs):
    one row per (target, estimator) with ``value``, the diagnostics, ``support_missing``,
    ``n_requests`` and ``n_rows``.

    Example:
        >>> import numpy as np
        >>> s = EstimateSums.of(1, [np.array([1.0])], [], None, 0, 1)
        >>> merge_sums({("d1", "t", "dm"): s, ("d2", "t", "dm"): s})["n_requests"].tolist()
        [2]
    """
    merged: dict[tuple[str, str], EstimateSums] = {}
    for key in sums:  # exact: the order does not matter
        k = (str(key[-2]), str(key[-1]))
        merged[k] = merged[k].merge(sums[key]) if k in merged else sums[key]
    rows = [{"target": t, "estimator": e, "value": s.value(), **s.diagnostics(),
             "support_missing": s.support_missing, "n_requests": s.n, "n_rows": s.rows}
            for (t, e), s in merged.items()]
    return pd.DataFrame(rows, columns=["target", "estimator", "value", "ess", "max_weight",
                                       "max_weight_share", "mean_weight", "support_missing",
                                       "n_requests", "n_rows"])


#: the default estimators; dr is left out (and the options say so) when no reward model is given
DEFAULT_ESTIMATORS = ("ips", "snips", "dr")


def estimate(log: Any, targets: Mapping[str, Any], *,
             estimators: Iterable[str] = DEFAULT_ESTIMATORS,
             reward_model: Any = None, seed: int = 0,
             n_resamples: int = 1000, by: str | Iterable[str] | None = None,
             memory_budget: str | int | None = None, narrow_ids: bool = False,
             **options: Any) -> OffPolicyResult:
    """Off-policy estimates of each target's value (expected total reward per served list)
    from the served log, with intervals and weight diagnostics.

    ``log``: one row per shown item (``request``, ``item``, ``position`` 1-based, ``reward``,
    ``propensity``, optionally ``propensity_prefix`` / ``propensity_slate``). ``targets``:
    name -> a probability table (``request``, ``item``, ``position``, ``probability``; absent
    rows are 0; optionally ``probability_prefix`` / ``probability_slate`` on the logged rows),
    a score table (``request``, ``item``, ``score``) with ``rule=``, or a
    :class:`~receval.offpolicy.Policy`. ``reward_model``: ``request``, ``item``, ``position``,
    ``prediction`` (without ``request``: the same for every request; without ``position``:
    the same at every position). Options: ``clip``, ``switch_threshold`` (10), ``shrinkage``
    (dros' lambda), ``rule`` / ``epsilon`` / ``temperature`` (score tables), ``examination``
    and ``logger`` (pbm), ``alpha`` (0.05), ``silence``; ``window`` / ``origin`` (monitor's
    calendar windows of ``served_at`` for ``by="window"``); ``repeats``: ``"refuse"`` (default:
    a served list shows each item once, as the monitor reads it) or ``"allow"`` (slates whose
    positions are drawn independently, as Open Bandit Pipeline's ``indep`` logs, may show an
    item at several positions). ``by``: the log's columns (constant
    within a request) that group the requests: one row per group, target and estimator, each
    group's interval from its own random stream; ``OffPolicyResult.sums`` merge exactly.
    Left at its default,
    ``estimators`` drops ``dr`` when no reward model is given (``options["left_out"]`` says so).
    ``memory_budget`` (``"2GiB"``): ``log`` is a Parquet file (targets, reward model and
    ``logger=`` tables or Parquet files) read in partitions of requests within the budget,
    the numbers those of the in-memory path bit for bit
    (:mod:`receval.offpolicy.streamed`, docs/streaming.md); ``narrow_ids``: read the files'
    text ids as the command line does (int64 when every id of a file is canonical).

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"request": [1, 2, 3, 4], "item": ["a", "b", "a", "b"],
        ...     "position": 1, "reward": [1, 0, 0, 1], "propensity": 0.5})
        >>> new = pd.DataFrame({"request": [1, 2, 3, 4], "item": "a", "position": 1,
        ...                     "probability": 1.0})
        >>> r = estimate(log, {"always a": new}, estimators=["ips", "snips"], n_resamples=0)
        >>> r.table[["target", "estimator", "value", "ess"]]
             target estimator  value  ess
        0  always a       ips    0.5  2.0
        1  always a     snips    0.5  2.0
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ReceValError(f"unknown option {unknown[0]!r}; known: {', '.join(OPTIONS)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ReceValError(f"seed must be a non-negative integer, got {seed!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 0:
        raise ReceValError(f"n_resamples must be a non-negative integer, got {n_resamples!r}")
    names = [estimators] if isinstance(estimators, str) else list(estimators)
    left_out = []
    if estimators is DEFAULT_ESTIMATORS and reward_model is None:
        names, left_out = ["ips", "snips"], ["dr (no reward_model)"]
    bad = [e for e in names if e not in ESTIMATORS]
    if bad or not names:
        raise ReceValError(f"unknown estimator {bad[0] if bad else None!r}; known: "
                           f"{', '.join(ESTIMATORS)}")
    if not isinstance(targets, Mapping) or not targets:
        raise ReceValError("targets must be a non-empty mapping name -> table")
    clip = options.get("clip")
    if clip is not None and not (isinstance(clip, int | float) and clip > 0):
        raise ReceValError(f"clip must be a number > 0; got {clip!r}")
    threshold = options.get("switch_threshold", 10.0)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or \
            not math.isfinite(threshold) or threshold <= 0:
        raise ReceValError(f"switch_threshold must be a finite number > 0; got {threshold!r}")
    threshold = float(threshold)
    alpha = float(options.get("alpha", 0.05))
    if not 0 < alpha < 1:
        raise ReceValError(f"alpha must be in (0, 1); got {alpha!r}")
    by_cols = _by_columns(by)
    if memory_budget is not None:
        import sys

        from receval.offpolicy.streamed import streamed

        return streamed(sys.modules[__name__], log, targets, names=names, left_out=left_out,
                        reward_model=reward_model, seed=seed, n_resamples=n_resamples,
                        by_cols=by_cols, clip=clip, threshold=threshold, alpha=alpha,
                        memory_budget=memory_budget, narrow_ids=narrow_ids, options=options)
    with silence(options.get("silence")):
        repeats = options.get("repeats", REPEATS[0])
        if repeats not in REPEATS:
            raise ReceValError(f"repeats must be 'refuse' or 'allow', got {repeats!r}")
        data = read_log(_with_window(log, by_cols, options), by=by_cols,
                        repeats=repeats == "allow")
        items = ItemCodes(data.items)
        model = _RewardModel(reward_model, data, items) if reward_model is not None else None
        logger = None
        if "logger" in options:
            logger = resolve("logger", options["logger"], data, items, options=options)
        groups = _groups(data, by_cols)
        rows = []
        all_sums: dict[tuple[Any, ...], EstimateSums] = {}
        # per group, every target's terms: one bootstrap draws each resample's requests once
        # for all of them (the intervals are those of separate calls: same stream, same sums)
        pending: list[list[tuple[Terms, dict[str, Any]]]] = [[] for _ in groups]
        for target in sorted(targets, key=str):
            resolved = resolve(str(target), targets[target], data, items, options=options)
            ctx = _context(data, resolved, model, logger, options, clip, threshold)
            terms = {name: ESTIMATORS[name](ctx) for name in names}
            warned = False
            for g, (key, requests, table_rows) in enumerate(groups):
                part = _Part(data, requests, table_rows)
                sub = {name: part.terms(term) for name, term in terms.items()}
                part.precompute(sub.values())
                new_rows = []
                for name, term in sub.items():
                    sums = part.sums(term, resolved)
                    all_sums[(*key, str(target), name)] = sums
                    row = _row(str(target), name, term, sums, math.nan, math.nan, resolved,
                               alpha)
                    row["weights_blow_up"] = name in UNNORMALISED and _blows_up(row)
                    new_rows.append({**dict(zip(by_cols, key, strict=True)), **row})
                    pending[g].append((Terms(term.c, term.ratios), new_rows[-1]))
                rows.extend(new_rows)
                if not warned:
                    warned = _warn_weights(str(target), new_rows)
            del terms, ctx  # the per-row arrays: only the per-request terms wait
        for g, (key, _, _) in enumerate(groups):
            stream_names = tuple(f"{c}={v}" for c, v in zip(by_cols, key, strict=True))
            intervals = bootstrap([t for t, _ in pending[g]], n_resamples, seed, alpha,
                                  stream_names)
            for (_, row), (low, high) in zip(pending[g], intervals, strict=True):
                row["ci_low"], row["ci_high"] = low, high
            pending[g] = []
    table = pd.DataFrame(rows, columns=[*by_cols, *COLUMNS])
    used = {"estimators": names, "seed": seed, "n_resamples": n_resamples, "alpha": alpha,
            "clip": clip, "switch_threshold": threshold, "by": list(by_cols),
            "ci_method": "bootstrap percentile over requests", "left_out": left_out,
            "reward_model_rows_dropped": model.dropped if model is not None else 0}
    if "window" in by_cols and "window" in options:
        used["window"] = options["window"]
    return OffPolicyResult(table, used, all_sums)


def _context(data: Log, target: Resolved, model: _RewardModel | None, logger: Resolved | None,
             options: dict[str, Any], clip: float | None, threshold: float) -> Context:
    cache: dict[str, np.ndarray] = {}

    def once(key: str, fn: Any) -> Any:
        def get() -> np.ndarray:
            if key not in cache:
                cache[key] = fn()
            return cache[key]
        return get

    q_fn = dm_fn = pbm_fn = next_fn = None
    if model is not None:
        q_fn = once("q", model.on_log)
        dm_fn = once("dm", lambda: model.expected(target))
        next_fn = once("next", lambda: target.next_expectation(model.predict, "cascade_dr"))
    if logger is not None and "examination" in options:
        theta = np.asarray(options["examination"], dtype=np.float64)
        pbm_fn = once("pbm", lambda: _item_weight(target, data, theta)
                      / _item_weight(logger, data, theta, logger=True))
    shrinkage = options.get("shrinkage")
    if shrinkage is not None and (isinstance(shrinkage, bool)
                                  or not isinstance(shrinkage, int | float) or not shrinkage > 0):
        raise ReceValError(f"shrinkage must be a number > 0 (inf: dr); got {shrinkage!r}")
    return Context(data, target, clip, threshold, q_fn, dm_fn, pbm_fn,
                   None if shrinkage is None else float(shrinkage), next_fn)


def _item_weight(policy: Resolved, data: Log, theta: np.ndarray, logger: bool = False
                 ) -> np.ndarray:
    """sum_j theta_j P(logged item at j) on each logged row."""
    mass = policy.mass(False, theta)
    n_items = np.int64(max(int(data.item.max()),
                           int(mass["item"].max()) if mass["item"].size else 0) + 1)
    at = _join(data.request * n_items + data.item, mass["request"] * n_items + mass["item"])
    out = np.where(at >= 0, mass["probability"][np.maximum(at, 0)], 0.0)
    if logger and (out <= 0).any():
        raise ReceValError(f"logger= gives {int((out <= 0).sum())} logged row(s) probability 0 "
                           "at every position (the logger did show them)")
    return out


class _RewardModel:
    """The reward model's predictions, keyed by (request, item[, position])."""

    def __init__(self, frame: pd.DataFrame, data: Log, items: ItemCodes,
                 top: int | None = None) -> None:
        """``top``: the largest position of the whole log (streamed: of every partition);
        unset, of ``data``."""
        if not isinstance(frame, pd.DataFrame):
            raise ReceValError(f"reward_model must be a table; got {type(frame).__name__}")
        missing = [c for c in ("item", "prediction") if c not in frame.columns]
        if missing:
            raise ReceValError(f"reward_model has no column {missing[0]!r}; columns: "
                               f"{', '.join(map(str, frame.columns))}")
        frame = frame.reset_index(drop=True)
        # without a request column the model is the same for every request
        self.by_request = "request" in frame.columns or (
            data.keys is not None and {"user", "served_at"} <= set(frame.columns))
        req = (request_codes(frame, data, "reward_model") if self.by_request
               else np.zeros(len(frame), np.int64))
        self.by_position = "position" in frame.columns
        keep = req >= 0
        if self.by_position:
            pos = _number(frame, "position", "reward_model")
            bad = (pos < 1) | (pos != np.floor(pos))
            if bad.any():
                raise _first_bad(frame, bad, "with a 'position' that is not an integer >= 1",
                                 "reward_model")
            top = int(data.position.max()) if top is None else top
            keep &= pos <= top  # positions no list reaches are never read
        self.dropped = int((~keep).sum())
        frame = frame[keep].reset_index(drop=True)
        self.data = data
        self.items = items
        self.request = req[keep].astype(np.int64)
        self.item = items.codes(frame["item"])
        # items the targets add later get larger codes: the model has none of them
        self.n_known = len(items.index)
        self.n_items = np.int64(self.n_known + 1)
        self.top = np.int64((int(data.position.max()) if top is None else top) + 1)
        self.position = (_number(frame, "position", "reward_model").astype(np.int64)
                         if self.by_position else np.zeros(len(frame), np.int64))
        self.prediction = _number(frame, "prediction", "reward_model")
        self.key = self._key(self.request, self.item, self.position)
        self.dense: np.ndarray | None = None
        srt = np.sort(self.key)
        if (srt[1:] == srt[:-1]).any():
            dup = pd.Series(self.key).duplicated().to_numpy()
            raise _first_bad(frame, dup, "repeating a (request, item"
                             + (", position)" if self.by_position else ")"), "reward_model")

    def _key(self, req: np.ndarray, item: np.ndarray, pos: np.ndarray) -> np.ndarray:
        pos = pos if self.by_position else np.zeros_like(pos)
        req = req if self.by_request else np.zeros_like(req)
        return (req * self.n_items + item) * self.top + np.minimum(pos, self.top)

    def _find(self, req: np.ndarray, item: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """The model's row of each (request, item, position), else -1: a direct look-up
        when the model is the same for every request (its keys are small), else a join."""
        known = item < self.n_known
        if known.all():
            return self._find_known(req, item, pos)
        return np.where(known, self._find_known(req, np.where(known, item, 0), pos), -1)

    def _find_known(self, req: np.ndarray, item: np.ndarray, pos: np.ndarray) -> np.ndarray:
        if self.by_request:
            return _join(self._key(req, item, pos), self.key)
        if self.dense is None:
            size = int(self.key.max()) + 1 if self.key.size else 0
            self.dense = np.full(size, -1, dtype=np.int64)
            self.dense[self.key] = np.arange(self.key.size)
        key = self._key(req, item, pos)
        inside = key < self.dense.size
        return np.where(inside, self.dense[np.where(inside, key, 0)], -1)

    def predict(self, req: np.ndarray, item: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """The predictions of (request, item, position) codes; one line naming the first
        missing one."""
        at = self._find(req, item, pos)
        if (at < 0).any():
            i = int(np.flatnonzero(at < 0)[0])
            raise ReceValError(
                f"reward_model has no prediction for {int((at < 0).sum())} (request, item, "
                "position) row(s) cascade_dr needs (every candidate at every logged position); "
                f"first: request {plain(self.data.requests[req[i]])!r}, item "
                f"{plain(self.items.index[int(item[i])])!r}, position {int(pos[i])}")
        return self.prediction[at]

    def on_log(self) -> np.ndarray:
        d = self.data
        at = self._find(d.request, d.item, d.position)
        if (at < 0).any():
            i = int(np.flatnonzero(at < 0)[0])
            first = plain(d.requests[d.request[i]])
            raise ReceValError(f"reward_model has no prediction for {int((at < 0).sum())} "
                               f"logged row(s); first: request {first!r}, "
                               f"item {plain(d.items[d.item[i]])!r}, position {d.position[i]}")
        return self.prediction[at]

    def expected(self, target: Resolved) -> np.ndarray:
        """DM_i = sum over the target's mass of probability x prediction, per request."""
        mass = target.mass(self.by_position, None)
        positive = mass["probability"] > 0
        if not positive.all():
            mass = {c: v[positive] for c, v in mass.items()}
        req = mass["request"]
        pos = mass["position"] if self.by_position else np.zeros(req.size, np.int64)
        at = self._find(req, mass["item"], pos)
        if (at < 0).any():
            i = int(np.flatnonzero(at < 0)[0])
            raise ReceValError(
                f"reward_model has no prediction for {int((at < 0).sum())} (request, item"
                f"{', position' if self.by_position else ''}) row(s) where target "
                f"{target.name!r} puts mass; first: request "
                f"{plain(self.data.requests[req[i]])!r}, item "
                f"{plain(self.items.index[int(mass['item'][i])])!r}"
                + (f", position {pos[i]}" if self.by_position else ""))
        contrib = mass["probability"] * self.prediction[at]
        return np.bincount(req, weights=contrib, minlength=self.data.n_requests)


def _row(target: str, name: str, term: Terms, sums: EstimateSums, low: float, high: float,
         resolved: Resolved, alpha: float) -> dict[str, Any]:
    value = sums.value()
    se, nlo, nhi = normal(term, alpha, value)
    return {"target": target, "estimator": name, "value": value, "ci_low": low,
            "ci_high": high, **sums.diagnostics(), "support_missing": sums.support_missing,
            "se": se, "normal_low": nlo, "normal_high": nhi, "n_requests": sums.n,
            "n_rows": sums.rows, "target_rows_dropped": resolved.dropped}


def _by_columns(by: str | Iterable[str] | None) -> tuple[str, ...]:
    if by is None:
        return ()
    cols = (by,) if isinstance(by, str) else tuple(by)
    bad = [c for c in cols if not isinstance(c, str) or c in COLUMNS]
    if bad or len(set(cols)) != len(cols):
        raise ReceValError(f"by= takes the log's column names (e.g. 'window', 'variant'), "
                           f"each once; got {by!r}")
    return cols


def _with_window(log: Any, by: tuple[str, ...], options: dict[str, Any]) -> Any:
    """The log with a ``window`` column (the start of monitor's calendar window of each
    row's ``served_at``) when ``by`` names one the log lacks, or when ``window=`` is given."""
    if "window" not in by or not isinstance(log, pd.DataFrame):
        return log
    if "window" in log.columns and "window" not in options:
        return log
    if "served_at" not in log.columns:
        raise ReceValError("by='window' needs the log's 'window' column or its 'served_at' "
                           "(with window=, monitor's calendar windows)")
    from receval.monitor.inputs import times
    from receval.monitor.windows import parse_window

    windows = parse_window(options.get("window", "7D"), options.get("origin"))
    # monitor's reading of times: numbers only with their unit (time_unit=)
    start = windows.start_of(times(log["served_at"].reset_index(drop=True), "log",
                                   "served_at", options.get("time_unit")))
    return log.assign(window=pd.to_datetime(start, utc=True))


def _groups(data: Log, by: tuple[str, ...]
            ) -> list[tuple[tuple[Any, ...], np.ndarray | None, np.ndarray | None]]:
    """Per group of requests (sorted by its values): its key, its requests and its rows
    (None for the one group of the whole log)."""
    if not by or data.groups is None:
        return [((), None, None)]
    codes, uniques = pd.MultiIndex.from_frame(data.groups).factorize(sort=True)
    row_code = codes[data.request]
    out: list[tuple[tuple[Any, ...], np.ndarray | None, np.ndarray | None]] = []
    for g, key in enumerate(uniques):
        key = key if isinstance(key, tuple) else (key,)
        out.append((tuple(_variant_value(v) for v in key), np.flatnonzero(codes == g),
                    np.flatnonzero(row_code == g)))
    return out


def _variant_value(value: Any) -> Any:
    value = plain(value)
    return None if isinstance(value, float) and math.isnan(value) else value


class _Part:
    """One group's share of each per-request and per-row array (the same array once), and
    their exact sums (each array summed once)."""

    def __init__(self, data: Log, requests: np.ndarray | None, rows: np.ndarray | None):
        self.data, self.requests, self.rows = data, requests, rows
        self.cut: dict[int, np.ndarray] = {}
        self.summed: dict[int, ExactSum] = {}
        self.weight_sums: dict[int, tuple[ExactSum, ExactSum, ExactSum]] = {}
        self.keep: list[np.ndarray] = []

    def _cut(self, x: np.ndarray) -> np.ndarray:
        if self.requests is None:
            return x
        if id(x) not in self.cut:
            self.keep.append(x)
            idx = self.requests if x.size == self.data.n_requests else self.rows
            self.cut[id(x)] = x[idx]
        return self.cut[id(x)]

    def terms(self, term: Terms) -> Terms:
        return Terms(self._cut(term.c), [(self._cut(a), self._cut(b), self._cut(m))
                                         for a, b, m in term.ratios],
                     None if term.weights is None else self._cut(term.weights))

    def precompute(self, terms: Iterable[Terms]) -> None:
        """The exact sums of every array of ``terms`` not summed yet, in a few batched
        passes (and of each weight array's w, w^2 and |w|)."""
        arrays: dict[int, np.ndarray] = {}
        weights: dict[int, np.ndarray] = {}
        for t in terms:
            for x in (t.c, *(y for r in t.ratios for y in r)):
                if id(x) not in self.summed:
                    arrays[id(x)] = x
            w = t.weights
            if w is not None and w.size and id(w) not in self.weight_sums:
                weights[id(w)] = w
        for key, total in zip(arrays, exact_sums(list(arrays.values())), strict=True):
            self.keep.append(arrays[key])
            self.summed[key] = total
        for key, w in weights.items():
            s1, s2, s3 = exact_sums([w, w * w, np.abs(w)])
            self.keep.append(w)
            self.weight_sums[key] = (s1, s2, s3)

    def _sum(self, x: np.ndarray) -> ExactSum:
        if id(x) not in self.summed:
            self.keep.append(x)
            self.summed[id(x)] = exact_sums([x])[0]
        return self.summed[id(x)]

    def sums(self, term: Terms, resolved: Resolved) -> EstimateSums:
        w = term.weights
        weight_sums = None
        if w is not None and w.size:
            if id(w) not in self.weight_sums:
                self.keep.append(w)
                s1, s2, s3 = exact_sums([w, w * w, np.abs(w)])
                self.weight_sums[id(w)] = (s1, s2, s3)
            weight_sums = self.weight_sums[id(w)]
        support = resolved.support_requests
        missing = (int(np.count_nonzero(support if self.requests is None
                                        else support[self.requests]))
                   if support is not None else resolved.support_missing)
        rows = self.data.n_rows if self.rows is None else int(self.rows.size)
        return EstimateSums.of(int(term.c.size), [], [(self._sum(a), self._sum(b), self._sum(m))
                                                     for a, b, m in term.ratios],
                               w, missing, rows, c_sum=self._sum(term.c),
                               weight_sums=weight_sums)


def _blows_up(row: dict[str, Any]) -> bool:
    """Whether a row's weights blow up: its effective sample size below ESS_SHARE of its
    weighted rows, or (from 100 rows) one weight holding more than MAX_SHARE of the total."""
    if not np.isfinite(row["ess"]):
        return False
    n = row["n_requests"] if row["estimator"] in ("sips", "pi") else row["n_rows"]
    # a tiny log always has a large largest share: the share rule needs 100 rows
    return bool(row["ess"] < ESS_SHARE * n or (row["max_weight_share"] > MAX_SHARE
                                                 and n >= 100))


def _warn_weights(target: str, rows: list[dict[str, Any]]) -> bool:
    """One warning per target whose unnormalised weights blow up, naming what to use;
    whether it warned."""
    for row in rows:
        if row["estimator"] not in UNNORMALISED or not np.isfinite(row["ess"]):
            continue
        n = row["n_requests"] if row["estimator"] in ("sips", "pi") else row["n_rows"]
        if _blows_up(row):
            warn(OffPolicyWeightsWarning,
                 f"target {target!r}: the importance weights of {row['estimator']} blow up "
                 f"(effective sample size {numbers.number(row['ess'], 'size')} of "
                 f"{numbers.count(n)} rows; the largest weight, {row['max_weight']:.4g}, holds "
                 f"{numbers.share(row['max_weight_share'])} of the total): prefer snips or sndr "
                 "(self-normalised), switch_dr, or clip=")
            return True
    return False
