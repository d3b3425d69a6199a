"""``monitor()``: offline metrics per time window, from served lists and delayed feedback.

Definitions (docs/semantics.md section 14, made exact here):

- A **list** is what one user was served at one time: the impressions of one (user,
  ``served_at``) (and one variant). Its window is the calendar window of ``served_at``
  (:mod:`receval.monitor.windows`); with ``step``, rolling windows of ``window`` start every
  ``step`` (at each step that holds lists) and a list belongs to each window that holds its
  ``served_at``.
- An impression served at ``s`` is **judged** by the feedback rows of the same (user, item) with
  ``s <= at <= s + attribution`` (both ends included); with several, the largest value
  counts. Its value is the
  truth's rating: ``relevance_threshold``, ``gain`` and every other option mean what they mean
  offline (the keyword arguments go to :func:`receval.evaluate`). Feedback on items the list did
  not hold does not count.
- By default **every list counts**: a list with feedback counts as soon as it has some; a list
  without any is **waiting** while its attribution period runs and, once it is over (the list
  is closed, see the watermark), counts with every impression non-relevant (a click log
  records only what was clicked: leaving out the lists nobody clicked would overstate P@k).
  An open window therefore reads high until it closes (its clicked lists count first): the
  drift view does not flag it. The lists are the
  evaluated "users" (``users="predictions"`` unless ``users=`` is given). With
  ``min_feedback=k``, a list counts only once at least ``k`` of its impressions are judged
  (rating logs, where no feedback means "not seen"); lists short of that are **waiting**
  while their attribution period runs, **unjudged** once it is over; both are counted, never
  dropped.
- A window's numbers are those of ``receval.evaluate(truth, predictions, metrics, **options)``
  on its counted lists, each list one "user" (truth: the judged impressions with their values;
  predictions: every impression of the list with its rank or score). ``users_evaluated`` counts
  lists (a user served twice in a window counts twice).
- **Watermark** ``W = T - attribution - lateness`` (``lateness`` 0 by default), ``T`` the
  largest event time seen (``served_at`` or ``at``, over every run of a state). A list served
  at ``s < W`` is **closed**: its attribution period ended before ``T``, so its values are
  final and go into the window's exact sums; a window ``[start, end)`` is closed when
  ``end <= W``. Impressions dated before the previous run's watermark and feedback rows dated
  before it arrive too late to change anything: they are counted (``Monitor.counts``) and
  ignored; so is feedback that would judge a list an earlier run closed (``late_out``
  receives these rows with the reason).
- Every list is in exactly one of ``users_evaluated``, ``users_waiting`` and
  ``users_unjudged`` (of its calendar window): a closed list that ``evaluate`` leaves out
  (``users="relevant"`` and no relevant judged item) is unjudged.
- **Incremental**: with ``state=path`` (a SQLite file, :mod:`receval.monitor.state`: one
  run at a time, atomic, checksummed; a batch fed twice is applied once), a run reads the
  state, adds the new logs, and writes the state back: open lists' impressions and the
  feedback that can still judge them, closed lists' values of open windows, exact sums, and
  closed windows' final rows. A run over
  logs split in several pieces gives exactly, bit for bit, the numbers of one run over all of
  them, as long as no feedback arrives after its list closed: a feedback row dated ``at``
  must arrive no later than the run whose latest event passes ``at + lateness`` (logs
  delivered a day late: ``lateness="1D"``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from receval.accumulate import Accumulator
from receval.aggregate import reductions
from receval.beyond.names import split_metrics
from receval.data.repeats import repeat_error, repeated
from receval.evaluation import evaluate
from receval.exceptions import (
    IdMismatchWarning,
    NoMatchWarning,
    ReceValError,
    UndefinedMetricWarning,
)
from receval.measures.spec import RATING, parse_metrics
from receval.monitor.ab import DECISION_COLUMNS, Sequence, check_unit, compare_window
from receval.monitor.fairness import INPUTS as FAIRNESS_INPUTS
from receval.monitor.fairness import fairness_specs, window_options
from receval.monitor.inputs import UNITS, read_feedback, read_impressions
from receval.monitor.intervals import resampled_means
from receval.monitor.kernels import (
    Judged,
    Lists,
    PairKeys,
    WindowColumns,
    by_time_then_user,
    group_order,
    judge_and_count,
    list_rows,
    repeats_in_runs,
    window_columns,
)
from receval.monitor.outputs import jsonable as _jsonable  # the writers: monitor/outputs.py
from receval.monitor.outputs import records as _records
from receval.monitor.outputs import write_late as _write_late
from receval.monitor.state import SUFFIXES, Bucket, State, check_params, open_state
from receval.monitor.windows import parse_attribution, parse_window
from receval.options import Options
from receval.randomness import stream
from receval.scalars import plain
from receval.stats.corrections import adjust
from receval.stats.intervals import percentile_interval
from receval.stats.sequential import DEFAULT_PLANNED_USERS

#: the count columns of :attr:`Monitor.windows`
COUNTS = ("users_evaluated", "users_waiting", "users_unjudged")
#: the columns of :attr:`Monitor.comparisons`
COMPARISON_COLUMNS = ("window_start", "variant", "baseline", "metric", "mean", "baseline_mean",
                      "delta", "ci_low", "ci_high", "p_value", "p_adjusted", "n", "baseline_n",
                      "lists", "baseline_lists")


@dataclass
class Monitor:
    """What :func:`monitor` returns.

    Attributes:
        windows: one row per window (and variant): ``window_start``, ``window_end`` (UTC),
            the variant column (when asked), one column per metric (named as asked), its
            interval ``<metric>_ci_low`` / ``<metric>_ci_high``, ``users_evaluated``,
            ``users_waiting``, ``users_unjudged`` (lists, see :mod:`receval.monitor.core`) and
            ``closed``.
        comparisons: with a variant column, one row per (window, variant, metric) against the
            baseline variant (:data:`COMPARISON_COLUMNS`; ``n`` and ``baseline_n`` count the
            units compared: users by default, lists with ``unit="list"``; ``lists`` and
            ``baseline_lists`` the lists); empty otherwise.
        decisions: with a variant column, one row per (variant, metric): the cumulative
            comparison over every closed window so far with its confidence sequence and
            always-valid p-value (:data:`receval.monitor.ab.DECISION_COLUMNS`,
            :mod:`receval.monitor.ab`); empty otherwise.
        counts: the watermark, the largest event time, the late rows ignored
            (``late_impressions_ignored``, ``late_feedback_ignored``), the rows read
            (``impressions_read``, ``feedback_read``, over every run of a state), the log
            batches fed again and skipped (``batches_replayed``), the served lists of a batch
            an earlier run applied, skipped (``lists_replayed``) and the unjudged impressions
            with feedback dated before serving (``impressions_with_feedback_before_serving``).
        options: the parameters of the run.

    Example:
        >>> import receval, pandas as pd
        >>> imp = pd.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 2],
        ...                     "served_at": pd.to_datetime(["2024-01-01"] * 2)})
        >>> fb = pd.DataFrame({"user": [1], "item": [11], "value": [1.0],
        ...                    "at": pd.to_datetime(["2024-01-02"])})
        >>> m = receval.monitor(imp, fb, ["P@2"], window="D", n_resamples=0)
        >>> m.windows[["window_start", "P@2", "users_evaluated"]].values.tolist()
        [[Timestamp('2024-01-01 00:00:00+0000', tz='UTC'), 0.5, 1]]
    """

    windows: pd.DataFrame
    comparisons: pd.DataFrame
    counts: dict[str, Any]
    options: dict[str, Any]
    metrics: list[str] = field(default_factory=list)
    decisions: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=list(DECISION_COLUMNS)))

    def to_json(self, **kwargs: Any) -> str:
        """``{"windows": [...], "comparisons": [...], "counts": ..., "options": ...}`` as JSON:
        times as ISO 8601 text, a number that is not finite as ``null``.

        Example:
            >>> import receval, pandas as pd, json
            >>> imp = pd.DataFrame({"user": [1], "item": [1], "rank": [1],
            ...     "served_at": pd.to_datetime(["2024-01-01"])})
            >>> fb = pd.DataFrame({"user": [1], "item": [1], "value": [1.0],
            ...     "at": pd.to_datetime(["2024-01-01"])})
            >>> out = json.loads(receval.monitor(imp, fb, "P@1", n_resamples=0).to_json())
            >>> out["windows"][0]["window_start"], out["windows"][0]["P@1_ci_low"]
            ('2024-01-01T00:00:00+00:00', None)
        """
        import json

        return json.dumps({"windows": _records(self.windows),
                           "comparisons": _records(self.comparisons),
                           "decisions": _records(self.decisions),
                           "counts": self.counts, "options": self.options},
                          allow_nan=False, **kwargs)

    def to_csv(self, *, raw: bool = False) -> str:
        """The windows as CSV (full precision, NaN as an empty cell, times ISO 8601); text
        cells a spreadsheet would run as a formula get a ``'`` in front unless ``raw``.

        Example:
            >>> import receval, pandas as pd
            >>> imp = pd.DataFrame({"user": [1], "item": [1], "rank": [1],
            ...     "served_at": pd.to_datetime(["2024-01-01"])})
            >>> fb = pd.DataFrame({"user": [1], "item": [1], "value": [1.0],
            ...     "at": pd.to_datetime(["2024-01-01"])})
            >>> receval.monitor(imp, fb, "P@1", n_resamples=0).to_csv().splitlines()[1][:30]
            '2024-01-01T00:00:00+00:00,2024'
        """
        from receval.io.text_tables import csv_text

        # the one text-table writer: formula cells neutralised unless raw, controls escaped
        return csv_text([str(c) for c in self.windows.columns],
                        (row.values() for row in _records(self.windows)), raw=raw)

    def drift(self, reference: Any = None, rule: str = "interval") -> pd.DataFrame:
        """Each metric per window with its interval, the reference window's band and a flag.

        The band is the reference window's interval (``reference``: a window start, default
        the first window of each variant); ``change`` is ``"worse"`` or ``"better"`` when a
        window's interval (``rule="interval"``) or value (``rule="value"``) lies wholly
        outside it, in the metric's declared direction (``direction``), and ``flag`` is true
        on the worse side only. See :func:`receval.monitor.drift.drift_table`.

        Example:
            >>> import receval, pandas as pd
            >>> imp = pd.DataFrame({"user": [1, 2], "item": [1, 1], "rank": [1, 1],
            ...     "served_at": pd.to_datetime(["2024-01-01", "2024-01-02"])})
            >>> fb = pd.DataFrame({"user": [1, 2], "item": [1, 1], "value": [1.0, 1.0],
            ...     "at": pd.to_datetime(["2024-01-01", "2024-01-02"])})
            >>> m = receval.monitor(imp, fb, "P@1", window="D", n_resamples=10)
            >>> m.drift()[["metric", "value", "flag"]].values.tolist()
            [['P@1', 1.0, False], ['P@1', 1.0, False]]
        """
        from receval.monitor.drift import drift_table

        return drift_table(self, reference, rule)

    def plot(self, metric: str | None = None, path: str | Path | None = None,
             reference: Any = None) -> Any:
        """The drift view as a matplotlib Figure (saved to ``path``, .png or .svg, if given);
        see :func:`receval.monitor.plot.drift_plot`.

        Example:
            >>> import receval, pandas as pd
            >>> imp = pd.DataFrame({"user": [1], "item": [1], "rank": [1],
            ...     "served_at": pd.to_datetime(["2024-01-01"])})
            >>> fb = pd.DataFrame({"user": [1], "item": [1], "value": [1.0],
            ...     "at": pd.to_datetime(["2024-01-01"])})
            >>> receval.monitor(imp, fb, "P@1", n_resamples=0).plot().axes[0].get_ylabel()
            'P@1'
        """
        from receval.monitor.plot import drift_plot

        return drift_plot(self, metric, path, reference)

    def to_html(self, path: str | Path | None = None, reference: Any = None,
                offpolicy: Any = None) -> str:
        """The HTML report (windows, drift table and plots, comparisons; with ``offpolicy``,
        the off-policy estimates per window of
        :func:`receval.offpolicy.monitor_windows.monitor_estimates`); written atomically
        to ``path`` when given. See :func:`receval.monitor.html.render_monitor`.

        Example:
            >>> import receval, pandas as pd
            >>> imp = pd.DataFrame({"user": [1], "item": [1], "rank": [1],
            ...     "served_at": pd.to_datetime(["2024-01-01"])})
            >>> fb = pd.DataFrame({"user": [1], "item": [1], "value": [1.0],
            ...     "at": pd.to_datetime(["2024-01-01"])})
            >>> "<html" in receval.monitor(imp, fb, "P@1", n_resamples=0).to_html()
            True
        """
        from receval.monitor.html import render_monitor

        return render_monitor(self, path, reference, offpolicy=offpolicy)


def monitor(
    impressions: Any,
    feedback: Any,
    metrics: str | Iterable[str],
    *,
    window: str = "7D",
    step: str | None = None,
    attribution: str = "7D",
    min_feedback: int | None = None,
    state: str | Path | None = None,
    variant_col: str | None = None,
    baseline: Any = None,
    origin: str | pd.Timestamp | None = None,
    lateness: str = "0s",
    user_col: str = "user",
    item_col: str = "item",
    score_col: str | None = None,
    served_col: str = "served_at",
    value_col: str = "value",
    time_col: str = "at",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    time_unit: str | None = None,
    late_out: str | Path | None = None,
    lock_timeout: float = 600.0,
    unit: str = "user",
    planned_users: int = DEFAULT_PLANNED_USERS,
    covariate: Any = None,
    memory_budget: str | int | None = None,
    _collect: list[pd.DataFrame] | None = None,
    **options: Any,
) -> Monitor:
    """Metrics per calendar window (and variant) from served lists and delayed feedback.

    ``impressions``: one row per served item (``user``, ``item``, ``rank`` (1 best) or
    ``score``, ``served_at``, optionally ``variant_col``); ``feedback``: (``user``, ``item``,
    ``value``, ``at``). DataFrames, Arrow tables, dicts of arrays or CSV/TSV/Parquet/JSON Lines
    paths; times as datetimes (naive = UTC, never mixed with zoned ones), ISO text, or numbers
    since the Unix epoch in ``time_unit`` (``"s"``, ``"ms"``, ``"us"``, ``"ns"``; required for
    a numeric time column), within 1677-09-22 .. 2262-04-11. The definitions (judging
    window ``served_at <= at <= served_at + attribution``, largest value wins, ``min_feedback``,
    waiting and unjudged lists, watermark, state) are in :mod:`receval.monitor.core`.
    ``lateness``: how late feedback may arrive after the latest event passed its time (the
    watermark waits that much longer). ``window``: ``"7D"`` or ``"W"`` (ISO weeks, from
    Monday 00:00 UTC, unless ``origin``), ``"D"`` or any pandas duration; ``step`` (dividing it):
    rolling windows starting every step. Intervals: percentile
    bootstrap over the window's lists (``n_resamples``, 0 for none; seeded per (window, variant,
    metric) from ``seed``); NaN where the summary is not a mean of per-list values (micro
    average, RMSE/MAE). With ``variant_col``, each variant is compared with ``baseline``
    (default: the first in sorted order) per window on the unit that was randomised:
    ``unit="user"`` (default): each variant's mean over lists read as a ratio over its users,
    Welch's t on the delta-method variances and its t interval (variants serve different
    users, so the paired tests of :func:`receval.compare` do not apply);
    ``unit="list"`` only when the lists themselves were randomised (Welch and bootstrap over
    lists); Holm-corrected across every row. ``Monitor.decisions``: the cumulative comparison
    over every closed window so far, looked at each one's end: a confidence sequence and an
    always-valid p-value (:mod:`receval.stats.sequential`; its mixing tuned for
    ``planned_users`` users), valid however often one looks; ``covariate``: each user's
    pre-period value (:mod:`receval.monitor.covariate`) for CUPED, or a pre-period's
    ``(impressions, feedback)``: each user's mean over its closed lists there, computed with
    the same options. ``**options`` go to
    :func:`receval.evaluate`. ``state``: a SQLite file (:mod:`receval.monitor.state`) locked
    for the run (another run waits up to ``lock_timeout`` seconds); a log batch already applied
    to it is skipped (counted in ``counts["batches_replayed"]``). ``late_out``: a CSV, TSV or
    Parquet file that receives this run's late feedback rows, with the reason each was
    ignored. ``memory_budget`` (``"2GiB"``): two Parquet logs read in pieces of time within
    it, with the numbers of one read (:mod:`receval.monitor.streamed`, docs/streaming.md).

    Example:
        >>> import receval, pandas as pd
        >>> served = pd.to_datetime(["2024-01-01 10:00"] * 3 + ["2024-01-08 10:00"] * 2)
        >>> imp = pd.DataFrame({"user": [1, 1, 2, 1, 1], "item": [1, 2, 1, 3, 4],
        ...                     "rank": [1, 2, 1, 1, 2], "served_at": served})
        >>> fb = pd.DataFrame({"user": [1, 2, 1], "item": [2, 1, 4], "value": [5, 1, 4],
        ...     "at": pd.to_datetime(["2024-01-02", "2024-01-09", "2024-01-09"])})
        >>> m = receval.monitor(imp, fb, ["P@2", "MRR"], window="W", relevance_threshold=4,
        ...                     n_resamples=0)
        >>> m.windows[["P@2", "MRR", "users_evaluated", "users_unjudged"]].values.tolist()
        [[0.25, 0.25, 2.0, 0.0], [0.5, 0.5, 1.0, 0.0]]
    """
    names_asked = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names_asked:
        raise ReceValError("monitor needs at least one metric")
    # fairness and calibration per list (receval.monitor.fairness), after the accuracy ones;
    # any other beyond-accuracy metric is refused in one line before any file is read
    fair = [b.name for b in fairness_specs(names_asked, options)]
    accuracy = split_metrics(names_asked)[0]
    specs = parse_metrics(accuracy) if accuracy else []
    names = [s.name for s in specs] + fair
    rating = [s.name for s in specs if s.family in RATING]
    if rating:
        raise ReceValError(
            f"monitor cannot compute {', '.join(rating)}: it compares predicted ratings with "
            "the truth, and a served list holds an order (rank or score), not predicted "
            "ratings; ask ranking metrics (P@k, nDCG@k, MRR, ...)")
    if time_unit is not None and time_unit not in UNITS:
        raise ReceValError(f"time_unit must be one of 's', 'ms', 'us', 'ns'; got {time_unit!r}")
    windows = parse_window(window, origin)
    step_ns = windows.width if step is None else parse_attribution(step, "step")
    if windows.width % step_ns:
        raise ReceValError(f"step {step!r} must divide window {window!r} (rolling windows "
                           "start every step and hold a whole number of steps)")
    span = parse_attribution(attribution)
    late_span = 0 if lateness == 0 else parse_attribution(lateness, "lateness", zero=True)
    if min_feedback is not None and (
            isinstance(min_feedback, bool) or not isinstance(min_feedback, int | np.integer)
            or min_feedback < 1):
        raise ReceValError(f"min_feedback must be a positive integer, got {min_feedback!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 0:
        raise ReceValError(f"n_resamples must be a whole number >= 0, got {n_resamples!r}")
    if not 0 < confidence < 1:
        raise ReceValError(f"confidence must be between 0 and 1, got {confidence!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ReceValError(f"seed must be a non-negative integer, got {seed!r}")
    unit = check_unit(unit)
    if isinstance(planned_users, bool) or not isinstance(planned_users, int | np.integer) \
            or planned_users < 1:
        raise ReceValError(f"planned_users must be a positive whole number, got "
                           f"{planned_users!r}")
    option_names = {f.name for f in fields(Options)} | {"profile", "silence", "engine",
                                                        *FAIRNESS_INPUTS}
    unknown = sorted(set(options) - option_names)
    if unknown:
        raise ReceValError(f"monitor got unknown option(s) {', '.join(unknown)}; known: the "
                           "options of receval.evaluate")
    _refuse_input_paths(state, late_out, impressions, feedback)
    if memory_budget is not None:  # Parquet logs read in pieces of time (docs/streaming.md)
        from receval.monitor import streamed

        if state is not None:
            raise ReceValError("memory_budget reads the logs in pieces into a state of its "
                               "own; with state=, feed the logs to the state file in pieces")
        order_kind = streamed.order_kind(
            streamed.check_parquet(impressions, "impressions"), score_col)
    else:
        imps, order_kind, imp_zone = read_impressions(
            impressions, user_col=user_col, item_col=item_col, score_col=score_col,
            served_col=served_col, variant_col=variant_col, time_unit=time_unit)
        fb, fb_zone = read_feedback(feedback, user_col=user_col, item_col=item_col,
                                    value_col=value_col, time_col=time_col, time_unit=time_unit)
        zone = _one_zone([("impressions", served_col, imp_zone), ("feedback", time_col, fb_zone)])
    params = {
        "metrics": names_asked, "metric_names": names, "window": window,
        "origin": windows.origin, "width": windows.width, "step": step_ns,
        "attribution": span,
        "lateness": late_span,
        "min_feedback": None if min_feedback is None else int(min_feedback),
        "variant_col": variant_col,
        "baseline": plain(baseline), "order": order_kind, "n_resamples": n_resamples,
        "confidence": confidence, "seed": seed,
        "options": {k: _jsonable(v) for k, v in sorted(options.items())
                    if k != "silence" and k not in FAIRNESS_INPUTS[:4]},
    }
    if variant_col is not None:  # a state without variants stays readable as it was
        params.update(unit=unit, planned_users=int(planned_users))
    cov = None
    if isinstance(covariate, tuple) and len(covariate) == 2:  # a pre-period's logs
        users: list[pd.DataFrame] = []
        monitor(covariate[0], covariate[1], names_asked, window=window, attribution=attribution,
                min_feedback=min_feedback, origin=origin, lateness=lateness,
                user_col=user_col, item_col=item_col, score_col=score_col,
                served_col=served_col, value_col=value_col, time_col=time_col,
                n_resamples=0, time_unit=time_unit, _collect=users, **options)
        covariate = users[0]
    if covariate is not None:
        from receval.monitor.covariate import read_covariate

        cov = read_covariate(covariate, names, user_col=user_col if not isinstance(
            covariate, pd.DataFrame) or user_col in covariate.columns else "user")
        params["covariate"] = batch_hash(cov.reset_index(), "covariate")
    run = _Run(specs, names, windows.origin, windows.width, step_ns, span, late_span,
               params["min_feedback"], order_kind, variant_col, baseline, n_resamples,
               confidence, seed, options, unit=unit, planned_users=int(planned_users),
               covariate=cov)
    run.collect = _collect
    if memory_budget is not None:
        out, late_rows = streamed.run_in_pieces(
            run.advance, _one_zone, params, impressions, feedback, memory_budget,
            read={"user_col": user_col, "item_col": item_col, "score_col": score_col,
                  "served_col": served_col, "variant_col": variant_col, "value_col": value_col,
                  "time_col": time_col, "time_unit": time_unit})
        if late_out is not None:
            _write_late(late_rows, late_out)
        return out
    if state is None:
        out, _, late_rows = run.advance(State(params=params), imps, fb, zone, keep=False)
        out.counts["lists_replayed"] = 0
        if late_out is not None:
            _write_late(late_rows, late_out)
        return out
    with open_state(state, lock_timeout) as store:
        st = store.read(names) or State(params=params)
        check_params(st, params, state)
        if st.zone is not None and zone is not None and st.zone != zone:
            raise ReceValError(
                f"state {str(state)!r} holds times {_ZONES[st.zone]}, this run's logs times "
                f"{_ZONES[zone]}; write every time the same way (with its offset, or none)")
        applied = set()
        for side, frame in (("impressions", imps), ("feedback", fb)):
            if not len(frame):
                continue
            digest = batch_hash(frame, side)
            if digest in st.batches:  # fed before: applied once, the replay counted
                st.replayed += 1
                if side == "impressions":
                    imps = imps.iloc[:0]
                else:
                    fb = fb.iloc[:0]
            else:
                applied.add(digest)
        imps, keys, repeated = _new_lists(store, imps)  # a list fed again is applied once
        out, new_state, late_rows = run.advance(st, imps, fb, zone)
        assert new_state is not None
        new_state.batches = st.batches | applied
        store.write(new_state, names)
        store.add_lists(keys, imps["served"].to_numpy())
        if new_state.max_time is not None:  # older lists are late from now on: ignored anyway
            store.forget_lists(new_state.max_time - run.hold)
        out.counts["lists_replayed"] = repeated
        if late_out is not None:
            _write_late(late_rows, late_out)  # before the commit: both or neither
    return out


_ZONES = {"aware": "with a time zone", "naive": "without a time zone (naive)"}


def _new_lists(store: Any, imps: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, int]:
    """The impressions without the served lists (user, served time, variant) an earlier run
    applied, their list keys, and how many lists were dropped (warned)."""
    from receval.monitor.state import list_keys

    if not len(imps):
        return imps, np.zeros(0, dtype=np.int64), 0
    keys = list_keys(imps)
    seen = store.applied_lists(keys)
    repeated = int(np.unique(keys[seen]).size)
    if repeated:
        from receval.checks import ReplayedListsWarning, warn

        warn(ReplayedListsWarning, f"{repeated} served list(s) of this batch (same user, "
             "served_at and variant) were applied by an earlier run: skipped, counted once")
        imps, keys = imps[~seen].reset_index(drop=True), keys[~seen]
    return imps, keys, repeated


def _one_zone(sides: list[tuple[str, str, str | None]]) -> str | None:
    """The time zone kind shared by the logs' time columns (aware and naive never mix)."""
    kinds = {zone: (side, col) for side, col, zone in sides if zone is not None}
    if len(kinds) > 1:
        (a_side, a_col), (n_side, n_col) = kinds["aware"], kinds["naive"]
        raise ReceValError(
            f"{a_side} column {a_col!r} holds times with a time zone and {n_side} column "
            f"{n_col!r} times without one (naive); write every time the same way (with its "
            "offset, or none) so that no time is silently read as UTC")
    return next(iter(kinds), None)


def batch_hash(frame: pd.DataFrame, side: str) -> str:
    """A content hash of a log batch as read: the same rows in any order give the same hash.

    Example:
        >>> a = pd.DataFrame({"user": [1, 2], "at": [5, 6]})
        >>> batch_hash(a, "feedback") == batch_hash(a.iloc[::-1], "feedback")
        True
        >>> batch_hash(a, "feedback") == batch_hash(a.iloc[:1], "feedback")
        False
    """
    import hashlib

    rows = np.sort(pd.util.hash_pandas_object(frame, index=False).to_numpy())
    h = hashlib.sha256(side.encode())
    for col in frame.columns:
        h.update(f"\0{col}:{frame[col].dtype}".encode())
    h.update(rows.tobytes())
    return h.hexdigest()


def _refuse_input_paths(state: str | Path | None, late_out: str | Path | None,
                       *inputs: Any) -> None:
    from receval.io.output import TABLE_SUFFIXES, check_outputs

    paths = [p for p in inputs if isinstance(p, str | Path)]
    if state is not None and Path(state).suffix.lower() in (".parquet", ".pq") \
            and not Path(state).exists():
        raise ReceValError(f"state {str(state)!r}: the state is a SQLite file now; name it "
                           f"{Path(state).stem}.sqlite")
    check_outputs({"state": (state, (*SUFFIXES, ".parquet", ".pq")),
                   "late_out": (late_out, TABLE_SUFFIXES)}, paths)
    if state is not None and late_out is not None and Path(state) == Path(late_out):
        raise ReceValError(f"late_out {str(late_out)!r} is the state file; choose another path")


class _Run:
    """One run: the new logs added to the state, lists judged, closed and evaluated."""

    def __init__(self, specs: list[Any], names: list[str], origin: int, width: int, step: int,
                 span: int, late_span: int,
                 min_feedback: int | None, order_kind: str, variant_col: str | None,
                 baseline: Any,
                 n_resamples: int, confidence: float, seed: int, options: dict[str, Any],
                 unit: str = "user", planned_users: int = DEFAULT_PLANNED_USERS,
                 covariate: pd.DataFrame | None = None):
        self.specs, self.names, self.origin = specs, names, origin
        self.width, self.step, self.span = width, step, span
        self.hold = span + late_span  # the watermark's distance behind the latest event
        self.min_feedback, self.order_kind, self.variant_col = min_feedback, order_kind, \
            variant_col
        self.baseline, self.n_resamples, self.alpha, self.seed = baseline, n_resamples, \
            1 - confidence, seed
        self.options = options
        self.unit, self.planned_users, self.covariate = unit, planned_users, covariate
        self.collect: list[pd.DataFrame] | None = None
        kinds, betas = reductions(specs)
        extra = len(names) - len(specs)  # the per-list fairness metrics: means
        self.kinds, self.betas = kinds + ["mean"] * extra, betas + [1.0] * extra
        self.meanlike = self._meanlike()

    def _meanlike(self) -> dict[str, bool]:
        """Whether each metric's summary is the mean of its per-list values (an interval
        from resampling lists describes it)."""
        from receval.profiles import resolve

        explicit = {k: v for k, v in self.options.items()
                    if k in {f.name for f in fields(Options)}}
        resolved = resolve(self.options.get("profile"), explicit)
        return {s.name: s.family not in RATING and kind != "sum"  # num_rel_ret: a sum
                and resolved.options_for(s.family).average == "macro"
                for s, kind in zip(self.specs, self.kinds, strict=False)} | {
                    n: True for n in self.names[len(self.specs):]}

    # --- the run ---------------------------------------------------------------------------

    def advance(self, st: State, imps: pd.DataFrame, fb: pd.DataFrame,
                zone: str | None = None,
                keep: bool = True) -> tuple[Monitor, State | None, pd.DataFrame]:
        """The new logs added to ``st``: the result, the next state (``None`` unless
        ``keep``: a run without a state file needs none) and this run's late feedback rows
        (with the reason each was ignored)."""
        imps, fb = _align_ids(st, imps, fb)
        tally = dict(st.tally)
        tally["impressions_read"] += len(imps)
        tally["feedback_read"] += len(fb)
        old_mark = None if st.max_time is None else st.max_time - self.hold
        late_parts = [fb.iloc[:0].assign(reason=pd.Series([], dtype=object))]
        if old_mark is not None:
            late_imp = imps["served"].to_numpy() < old_mark
            late_fb = fb["at"].to_numpy() < old_mark
            tally["impressions"] += int(late_imp.sum())
            late_parts.append(fb[late_fb].assign(reason="before_watermark"))
            imps = imps[~late_imp].reset_index(drop=True)
            fb = fb[~late_fb].reset_index(drop=True)
            # feedback that would judge a list closed by an earlier run: too late for it (only
            # feedback dated within an attribution period of the watermark can)
            closed_hit = np.zeros(len(fb), dtype=bool)
            near = np.flatnonzero(fb["at"].to_numpy() < old_mark + self.span)
            if len(near) and len(st.closed):
                _, judging = _judge(st.closed, fb.iloc[near], self.span)
                closed_hit[near] = judging
            late_parts.append(fb[closed_hit].assign(reason="list_closed"))
            tally["feedback"] += int(late_fb.sum()) + int(closed_hit.sum())
        times = [t for t in (st.max_time,
                             int(imps["served"].max()) if len(imps) else None,
                             int(fb["at"].max()) if len(fb) else None) if t is not None]
        if not times:
            raise ReceValError("monitor: no impression and no feedback to read")
        max_time = max(times)
        mark = max_time - self.hold
        n_pending = len(st.pending)
        imps = _concat(st.pending, imps)
        fb = _concat(st.feedback, fb)
        # the impressions with feedback dated before serving are counted once, when their
        # list closes (all the feedback that could be early is in): rows served before the mark
        judged, _, before_served = _judge_and_count(imps, fb, self.span, before=mark)
        # the lists, numbered 0..n-1 (their index), and each run of rows' list
        lists, found = self._lists(imps, judged)
        if self.options.get("duplicates", "error") == "error" and not _one_run_each(
                imps, found.starts, len(lists)):
            _refuse_repeated_items(imps, found.codes, n_pending)
        closed_now = lists["served"].to_numpy() < mark
        tally["before_served"] += before_served
        buckets = dict(st.buckets)
        closed_parts, open_parts = self._evaluate_groups(imps, found, judged, lists,
                                                         closed_now)
        self._fold(buckets, closed_parts)
        if self.collect is not None:  # a pre-period's per-user means (covariate=(imp, fb))
            from receval.monitor.covariate import per_user_means

            self.collect.append(per_user_means(
                [buckets[k].values for k in sorted(buckets, key=_key_order)], self.names))
        rows = list(st.closed_rows)
        comparisons = list(st.closed_comparisons)
        # per step bucket (the window itself for calendar windows): closed lists + open ones
        combined: dict[tuple[int, Any], tuple[Accumulator, pd.DataFrame, int, int, int]] = {}
        for key in set(buckets) | set(open_parts):
            bucket = buckets.get(key) or self._empty_bucket()
            part = open_parts.get(key)
            if part is None:
                combined[key] = (bucket.sums, bucket.values, bucket.evaluated, 0,
                                 bucket.unjudged)
            else:
                combined[key] = (bucket.sums.merge(part.sums),
                                 _concat(bucket.values, part.values),
                                 bucket.evaluated + part.evaluated, part.unjudged,
                                 bucket.unjudged)
        done = {(r["window_start"], r["variant"]) for r in st.closed_rows}
        if self.variant_col is not None and self.baseline is not None:
            self.baseline = _known_baseline(self.baseline, self.variant_col,
                                            {k[1] for k in combined} | {k[1] for k in done})
        by_window: dict[int, dict[Any, tuple[Accumulator, pd.DataFrame]]] = {}
        window_rows: dict[int, list[dict[str, Any]]] = {}
        for key in sorted(combined, key=_key_order):  # a window starts at each step with lists
            if key in done:
                continue
            parts = [combined[k] for k in ((key[0] + j * self.step, key[1])
                                           for j in range(self.width // self.step))
                     if k in combined]
            sums = parts[0][0]
            for other in parts[1:]:
                sums = sums.merge(other[0])
            values = pd.concat([p[1] for p in parts], ignore_index=True) if len(parts) > 1 \
                else parts[0][1]
            if values["user"].dtype == np.int64:  # by time, then the few of a time by user
                values = values.take(by_time_then_user(values["served"].to_numpy(),
                                                       values["user"].to_numpy()))
                values = values.reset_index(drop=True)
            else:
                values = values.sort_values(["served", "user"], kind="stable",
                                            ignore_index=True)
            evaluated = sum(p[2] for p in parts)
            waiting = sum(p[3] for p in parts)
            unjudged = sum(p[4] for p in parts)
            closed = key[0] + self.width <= mark
            row = self._row(key, sums, values, evaluated, waiting, unjudged, closed)
            window_rows.setdefault(key[0], []).append(row)
            by_window.setdefault(key[0], {})[key[1]] = (sums, values)
        # a bucket is kept while a window holding it is open: the last one starts with it
        new_buckets = {key: b for key, b in buckets.items() if key[0] + self.width > mark}
        for start in sorted(window_rows):
            rows.extend(window_rows[start])
            if self.variant_col is not None:
                comparisons.extend(self._compare(start, by_window[start]))
        sequence = self._sequence(st, buckets, window_rows)
        closed_rows = [r for r in rows if r["closed"]]
        closed_comparisons = [c for c in comparisons
                              if c["window_start"] + self.width <= mark]
        new_state = None
        if keep:
            in_pending = ~closed_now[found.codes]
            pending = imps[in_pending]
            # closed lists' impressions that feedback of a later run could still have judged
            recent = imps[~in_pending & (imps["served"].to_numpy() >= mark - self.span)]
            closed = _concat(st.closed, recent[["user", "item", "served"]])
            closed = closed[closed["served"].to_numpy() >= mark - self.span]
            new_state = State(params=st.params, max_time=max_time,
                              pending=pending.reset_index(drop=True),
                              # an attribution period more than can still judge: the
                              # feedback an impression closing later may have been dated
                              # before
                              feedback=fb[fb["at"].to_numpy() >= mark - self.span]
                              .reset_index(drop=True),
                              buckets=new_buckets, closed_rows=closed_rows,
                              closed_comparisons=closed_comparisons, tally=tally,
                              closed=closed.reset_index(drop=True), batches=set(st.batches),
                              replayed=st.replayed, zone=st.zone or zone,
                              id_types=dict(st.id_types),
                              sequence=sequence.to_json() if sequence is not None else {})
        out = Monitor(windows=self._frame(rows), comparisons=self._comparison_frame(comparisons),
                      counts={"max_time": _ts(max_time), "watermark": _ts(mark),
                              "late_impressions_ignored": tally["impressions"],
                              "late_feedback_ignored": tally["feedback"],
                              "impressions_with_feedback_before_serving":
                                  tally["before_served"],
                              "impressions_read": tally["impressions_read"],
                              "feedback_read": tally["feedback_read"],
                              "batches_replayed": st.replayed},
                      options=dict(st.params), metrics=list(self.names))
        if sequence is not None:
            out.decisions = sequence.frame()
        return out, new_state, pd.concat(late_parts, ignore_index=True)

    def _empty_bucket(self) -> Bucket:
        return Bucket(Accumulator.empty(self.names, self.kinds, self.betas),
                      pd.DataFrame({"user": [], "served": np.array([], np.int64),
                                    **{n: np.array([], float) for n in self.names}}))

    def _lists(self, imps: pd.DataFrame, judged: np.ndarray) -> tuple[pd.DataFrame, Lists]:
        """One row per list (user, served): its variant (with a variant column), window and
        judged impressions; and :class:`receval.monitor.kernels.Lists`: the first row of each
        run of rows of one list and its list (codes in the order of first appearance, the
        index of the lists); a code per row only when a path asks for it (``Lists.codes``: 8
        bytes a row, rarely needed whole; built once per run)."""
        user, served = imps["user"].to_numpy(), imps["served"].to_numpy(dtype=np.int64)
        if pd.api.types.is_integer_dtype(imps["user"]):
            user_code = user.astype(np.int64, copy=False)
        else:  # text ids: a code per run's user (a log holds a list's rows together)
            change = np.ones(len(imps), dtype=bool)
            change[1:] = (user[1:] != user[:-1]) | (served[1:] != served[:-1])
            starts = np.flatnonzero(change)
            user_code = np.repeat(pd.factorize(user[starts])[0].astype(np.int64),
                                  np.diff(starts, append=len(imps)))
        found = list_rows(user_code, served, judged)
        n = len(found.first)
        first = found.first
        lists = pd.DataFrame({"user": user[first] if n else [],
                              "served": served[first] if n else np.array([], np.int64)})
        lists["judged"] = found.judged
        if self.variant_col is not None:
            variant = imps["variant"].to_numpy()
            lists["variant"] = variant[first] if n else []
            differs = variant != lists["variant"].to_numpy()[found.codes]
            if differs.any():
                row = int(np.flatnonzero(differs)[0])
                raise ReceValError(
                    f"impressions: column {self.variant_col!r} differs within one served "
                    f"list (user {plain(imps['user'].iloc[row])!r}) at row {row} "
                    f"({int(differs.sum())} rows differ from their list's first row)")
        served = lists["served"].to_numpy(dtype=np.int64)
        lists["window"] = served - np.mod(served - self.origin, self.step)
        return lists, found

    def _fold(self, buckets: dict[tuple[int, Any], Bucket],
              parts: dict[tuple[int, Any], Bucket]) -> None:
        """Add the lists that just closed (evaluated: ``parts``) to their windows' sums."""
        for key, part in parts.items():
            old = buckets.get(key) or self._empty_bucket()
            buckets[key] = Bucket(old.sums.merge(part.sums), _concat(old.values, part.values),
                                  old.evaluated + part.evaluated, old.unjudged + part.unjudged)

    def _evaluate_groups(self, imps: pd.DataFrame, found: Lists, judged: np.ndarray,
                         lists: pd.DataFrame, closed: np.ndarray
                         ) -> tuple[dict[tuple[int, Any], Bucket], dict[tuple[int, Any], Bucket]]:
        """Per (window, variant), the closed lists' buckets and the open ones': the counted
        lists evaluated; ``unjudged`` = lists not counted (short of ``min_feedback``; by
        default, open lists without feedback). ``found``: the rows' lists; ``closed``:
        whether each list is."""
        sides = []  # closed, then open: (lists, groups, counted, their first group number)
        group_of = np.full(len(lists), -1, np.int64)
        keys: list[tuple[int, Any]] = []
        for is_closed, mask in ((True, closed), (False, ~closed)):
            part = lists[mask]
            counted = part["judged"].to_numpy() >= (self.min_feedback or 1)
            if self.min_feedback is None and is_closed:
                counted[:] = True  # no feedback once the period is over: nothing was relevant
            groups = _groups(part, self.variant_col is not None) if len(part) else {}
            list_ids = part.index.to_numpy()
            sides.append((part, groups, counted, len(keys)))
            for key, where in groups.items():
                group_of[list_ids[where[counted[where]]]] = len(keys)
                keys.append((int(key[0]), _variant(key[1])))
        # each group's rows in row order (a counting sort), closed and open lists in one
        # pass, and only the columns evaluate reads: no copy of the impressions per group
        item = imps["item"].to_numpy()
        if imps["item"].dtype == np.int64:  # one pass writes the six columns
            cols = window_columns(group_of, found.run_code, found.starts, len(keys), item,
                                  imps["order"].to_numpy(), judged)
            grouped = None
        else:
            row_list = found.codes
            grouped, bounds = group_order(group_of, row_list, len(keys))
            lists_g, items_g, values = row_list[grouped], item[grouped], judged[grouped]
            has = ~np.isnan(values)
            truth_bounds = np.concatenate([[0], np.cumsum(has)])[bounds]
            cols = WindowColumns(bounds, lists_g, items_g, imps["order"].to_numpy()[grouped],
                                 truth_bounds, lists_g[has], items_g[has], values[has])
        out: list[dict[tuple[int, Any], Bucket]] = []
        for part, groups, counted, first_group in sides:
            side: dict[tuple[int, Any], Bucket] = {}
            for g, where in enumerate(groups.values(), start=first_group):
                use = where[counted[where]]
                unjudged = int(len(where) - len(use))
                if not len(use):
                    bucket = self._empty_bucket()
                    side[keys[g]] = Bucket(bucket.sums, bucket.values, 0, unjudged)
                    continue
                p = slice(cols.bounds[g], cols.bounds[g + 1])
                t = slice(cols.truth_bounds[g], cols.truth_bounds[g + 1])

                def rows(g: int = g) -> np.ndarray:  # the group's rows of imps (for a message)
                    if grouped is not None:
                        return grouped[cols.bounds[g]:cols.bounds[g + 1]]
                    return np.flatnonzero(group_of[found.codes] == g)

                side[keys[g]] = self._evaluate(
                    imps, rows, {"list": cols.list[p], "item": cols.item[p],
                                 "order": cols.order[p]},
                    {"user": cols.truth_list[t], "item": cols.truth_item[t],
                     "rating": cols.truth_value[t]}, part.iloc[use], unjudged)
            out.append(side)
        return out[0], out[1]

    def _evaluate(self, imps: pd.DataFrame, rows: Callable[[], np.ndarray],
                  columns: dict[str, np.ndarray], truth_columns: dict[str, np.ndarray],
                  lists: pd.DataFrame, unjudged: int) -> Bucket:
        """receval.evaluate on these lists, each list one user (its id: the list's row in
        ``lists``); the per-list values come back with the list's user and time. ``columns``:
        the ``list``, ``item`` and ``order`` of the lists' impressions (``rows()`` of
        ``imps``, asked for an error message only); ``truth_columns``: the ``user`` (list),
        ``item`` and ``rating`` of those judged."""
        truth = pd.DataFrame(truth_columns, copy=False)
        options = window_options({"users": "predictions", **self.options}, lists)
        if not len(truth) and options["users"] in ("predictions", "union"):
            # closed lists without any feedback: evaluate refuses an empty truth, so one row
            # for list -1 (no list has it; users="predictions" leaves it out of every mean)
            truth = pd.DataFrame({"user": [-1], "item": columns["item"][:1],
                                  "rating": [0.0]})
        preds = pd.DataFrame({"user": columns["list"], "item": columns["item"],
                              self.order_kind: columns["order"]}, copy=False)
        try:
            with warnings.catch_warnings():
                # per-window calls; the policy's counts are the offline ones
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                # lists nobody clicked are expected in a click log, not a sign of bad ids
                warnings.simplefilter("ignore", IdMismatchWarning)
                warnings.simplefilter("ignore", NoMatchWarning)
                result = evaluate(truth, preds, self.names, **options)
        except ReceValError as err:
            if str(err).startswith("duplicate (user, item) rows in"):
                # the same error, named by user and time
                self._refuse_duplicates(imps.iloc[rows()], preds)
            if not str(err).startswith("no user to evaluate with users='relevant'"):
                raise
            bucket = self._empty_bucket()  # no list has a relevant item: all left out
            return Bucket(bucket.sums, bucket.values, 0, unjudged + len(lists))
        if result.sums is None:  # pragma: no cover - every engine keeps them
            raise ReceValError("monitor needs the exact sums of the evaluation (Result.sums)")
        per = result.per_user
        ids = per["user"].to_numpy()
        at = lists.index.get_indexer(ids)  # each list's row (one lookup for both columns)
        found = lists.iloc[at] if (at >= 0).all() else lists.loc[ids]
        values = pd.DataFrame({"user": found["user"].to_numpy(),
                               "served": found["served"].to_numpy(dtype=np.int64),
                               **{name: per[name].to_numpy(dtype=np.float64)
                                  for name in self.names}}, copy=False)
        evaluated = int(result.counts["users"]["evaluated"])
        # a list evaluate leaves out (users='relevant': no relevant item) is unjudged, so that
        # every list is in exactly one of evaluated / waiting / unjudged
        return Bucket(result.sums, values, evaluated, unjudged + len(lists) - evaluated)

    def _refuse_duplicates(self, imps: pd.DataFrame, preds: pd.DataFrame) -> None:
        """An item served twice in one list, named by the list's user and time (evaluate would
        name the list's internal number)."""
        dup = repeated(pd.factorize(preds["user"])[0], preds["item"].to_numpy())
        if dup.any():
            row = int(np.flatnonzero(dup)[0])
            raise _repeat_error(imps, row, imps.index[row], int(dup.sum()))

    # --- rows --------------------------------------------------------------------------------

    def _row(self, key: tuple[int, Any], sums: Accumulator, values: pd.DataFrame,
             evaluated: int, waiting: int, unjudged: int, closed: bool) -> dict[str, Any]:
        summary = sums.finalize(self._finalize_options())
        row: dict[str, Any] = {"window_start": key[0], "variant": key[1]}
        for name in self.names:
            row[name] = float(summary[name])
        for name in self.names:
            low, high = self._interval(key, name, values[name].to_numpy(dtype=np.float64))
            row[f"{name}_ci_low"], row[f"{name}_ci_high"] = low, high
        row.update(users_evaluated=int(evaluated), users_waiting=int(waiting),
                   users_unjudged=int(unjudged), closed=bool(closed))
        return row

    def _finalize_options(self) -> Options:
        from receval.profiles import resolve

        explicit = {k: v for k, v in self.options.items()
                    if k in {f.name for f in fields(Options)}}
        return resolve(self.options.get("profile"), explicit).options

    def _interval(self, key: tuple[int, Any], name: str,
                  values: np.ndarray) -> tuple[float, float]:
        values = values[~np.isnan(values)]
        if not self.n_resamples or not self.meanlike[name] or not values.size:
            return (math.nan, math.nan)
        rng = stream(self.seed, str(key[0]), repr(key[1]), name)
        means = resampled_means(values, self.n_resamples, rng)
        return percentile_interval(means, self.alpha)

    def _compare(self, start: int,
                 groups: dict[Any, tuple[Accumulator, pd.DataFrame]]) -> list[dict[str, Any]]:
        """Each variant against the baseline in one window, on users (or lists):
        :func:`receval.monitor.ab.compare_window`."""
        return compare_window(start, groups, self.names, self.baseline, self.unit,
                              self.n_resamples, self.alpha, self.seed)

    def _sequence(self, st: State, buckets: dict[tuple[int, Any], Bucket],
                  window_rows: dict[int, list[dict[str, Any]]]) -> Sequence | None:
        """The cumulative comparison carried on to every window closed in this run (a look
        at each one's end, in time order): the closed lists of the buckets between the
        previous look and this one folded per (variant, user), then read
        (:class:`receval.monitor.ab.Sequence`)."""
        if self.variant_col is None:
            return None
        seq = Sequence(self.names, self.planned_users, self.alpha, self.covariate)
        seq.load(st.sequence)
        ends = sorted({start + self.width for start, rows in window_rows.items()
                       if any(r["closed"] for r in rows)})
        keys = sorted(buckets, key=_key_order)
        for end in ends:
            if seq.frontier is not None and end <= seq.frontier:
                continue
            for key in keys:
                if (seq.frontier is None or key[0] >= seq.frontier) \
                        and key[0] + self.step <= end:
                    seq.fold(key[1], buckets[key].values)
            seq.look(end, self.baseline)
        return seq

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        rows = sorted(rows, key=lambda r: (r["window_start"], repr(r["variant"])))
        columns = ["window_start", "window_end", "variant", *self.names,
                   *[f"{n}_ci_{s}" for n in self.names for s in ("low", "high")], *COUNTS,
                   "closed"]
        frame = pd.DataFrame(rows, columns=[c for c in columns if c != "window_end"])
        frame.insert(1, "window_end", frame["window_start"] + self.width)
        for col in ("window_start", "window_end"):
            frame[col] = pd.to_datetime(frame[col].astype(np.int64), unit="ns", utc=True)
        for col in COUNTS:
            frame[col] = frame[col].astype(np.int64)
        frame["closed"] = frame["closed"].astype(bool)
        if self.variant_col is None:
            frame = frame.drop(columns="variant")
        else:
            frame = frame.rename(columns={"variant": self.variant_col})
        return frame

    def _comparison_frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        rows = sorted(rows, key=lambda r: (r["window_start"], repr(r["variant"]),
                                           self.names.index(r["metric"])))
        frame = pd.DataFrame(rows, columns=[c for c in COMPARISON_COLUMNS if c != "p_adjusted"])
        frame.insert(COMPARISON_COLUMNS.index("p_adjusted"), "p_adjusted",
                     adjust(frame["p_value"].to_numpy(dtype=float), "holm") if len(frame)
                     else np.array([], float))
        frame["window_start"] = pd.to_datetime(frame["window_start"].astype(np.int64),
                                               unit="ns", utc=True)
        return frame


def _ts(ns: int) -> str:
    return pd.Timestamp(ns, unit="ns", tz="UTC").isoformat()


def _key_order(key: tuple[int, Any]) -> tuple[int, str]:
    return (key[0], repr(key[1]))


def _concat(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``a`` then ``b`` (``a`` may be an empty state frame without columns)."""
    if a is None or (len(a) == 0 and len(a.columns) == 0):
        return b.reset_index(drop=True)
    if len(b) == 0:
        return a.reset_index(drop=True)
    if len(a) == 0:
        return b.reset_index(drop=True)
    return pd.concat([a, b[a.columns]], ignore_index=True)


def _variant(value: Any) -> Any:
    """A variant as plain Python (``None`` for a missing one)."""
    value = plain(value)
    return None if isinstance(value, float) and math.isnan(value) else value


def _pair_keys(imps: pd.DataFrame, fb: pd.DataFrame) -> tuple[PairKeys, np.ndarray]:
    """One int64 per (user, item) on both sides, equal exactly when the pairs are: the
    feedback's keys, and the impressions' as :class:`receval.monitor.kernels.PairKeys` (a user
    and an item code per row, -1 for one the feedback does not hold; the key computed in the
    join, no array of them). Integer ids: arithmetic on the ids; others: codes from hash
    lookups into the feedback's users and items."""
    cols = [imps["user"], imps["item"], fb["user"], fb["item"]]
    if all(pd.api.types.is_integer_dtype(c) for c in cols) and len(fb):
        lows = [min(int(imps[c].min()), int(fb[c].min())) for c in ("user", "item")]
        highs = [max(int(imps[c].max()), int(fb[c].max())) for c in ("user", "item")]
        width = highs[1] - lows[1] + 1
        if (highs[0] - lows[0] + 1) * width < 2**62:
            u = fb["user"].to_numpy(dtype=np.int64) - lows[0]
            fb_key = u * width + (fb["item"].to_numpy(dtype=np.int64) - lows[1])
            return PairKeys(imps["user"].to_numpy(dtype=np.int64),
                            imps["item"].to_numpy(dtype=np.int64), lows[0], lows[1],
                            width), fb_key
    users = pd.Index(pd.unique(fb["user"]))
    items = pd.Index(pd.unique(fb["item"]))
    width = len(items)
    fb_key = users.get_indexer(fb["user"]).astype(np.int64) * width \
        + items.get_indexer(fb["item"])
    return PairKeys(users.get_indexer(imps["user"]).astype(np.int64),
                    items.get_indexer(imps["item"]).astype(np.int64), 0, 0, width), fb_key


def _judge(imps: pd.DataFrame, fb: pd.DataFrame, span: int) -> tuple[np.ndarray, np.ndarray]:
    """Each impression's value: the largest value of the feedback of its (user, item) with
    ``served <= at <= served + span`` (docs/semantics.md section 14: the end included); NaN
    when there is none. Also whether each feedback row judges an impression.
    """
    judged = _judge_and_count(imps, fb, span, before=np.iinfo(np.int64).min)  # none counted
    return judged.values, judged.judging


def _judge_and_count(imps: pd.DataFrame, fb: pd.DataFrame, span: int, before: int) -> Judged:
    """:func:`_judge`'s values and judging flags, and how many impressions served before
    ``before`` have feedback of their (user, item) dated at most ``span`` before they were
    served (such feedback never judges them: they are counted, see :func:`monitor`) and no
    value.

    Only the impressions whose (user, item) has feedback are joined: both sides' pairs get one
    integer code (hash lookups into the feedback's users and items), so the join is small
    (:func:`receval.monitor.kernels.judge_and_count`).
    """
    if not len(imps) or not len(fb):
        return Judged(np.full(len(imps), np.nan), np.zeros(len(fb), bool), 0)
    for col in ("user", "item"):  # _align_ids gave them one type
        if pd.api.types.is_numeric_dtype(imps[col]) != pd.api.types.is_numeric_dtype(fb[col]):
            raise ReceValError(f"impressions and feedback hold {col} ids of different types "
                               f"({imps[col].dtype} and {fb[col].dtype}): they never match")
    imp_keys, fb_key = _pair_keys(imps, fb)
    # one pass: a bitmap of the feedback keys' low bits, then a hash lookup into the feedback
    # for the few impressions it lets through
    return judge_and_count(imp_keys, imps["served"].to_numpy(dtype=np.int64), fb_key,
                           fb["at"].to_numpy(dtype=np.int64),
                           fb["value"].to_numpy(dtype=np.float64) if "value" in fb.columns
                           else None, span, before)


def _id_kind(series: pd.Series) -> str:
    return "int64" if pd.api.types.is_integer_dtype(series) else "string"


def _align_ids(st: State, imps: pd.DataFrame,
               fb: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One id type per column across both logs and the state, by receval.io's policy
    (:func:`receval.io.ids.align_id_types`): text as soon as any side holds text, the integers
    then written as the text they are (so ``7`` matches ``"7"``, never ``"007"``). The state's
    frames are converted in place and its ``id_types`` updated."""
    frames = [imps, fb, st.pending, st.feedback, st.closed]
    for col in ("user", "item"):
        kinds = {_id_kind(f[col]) for f in frames if col in f.columns and len(f)}
        if col in st.id_types:
            kinds.add(st.id_types[col])
        if not kinds:
            continue
        kind = "string" if "string" in kinds else "int64"
        st.id_types[col] = kind
        if kinds == {kind}:
            continue
        for f in frames:
            if col in f.columns and len(f) and _id_kind(f[col]) != kind:
                f[col] = f[col].astype(str).astype(object)
        if col == "user":
            for bucket in st.buckets.values():
                if len(bucket.values) and _id_kind(bucket.values["user"]) != kind:
                    bucket.values["user"] = bucket.values["user"].astype(str).astype(object)
    return imps, fb


def _groups(lists: pd.DataFrame, by_variant: bool) -> dict[tuple[Any, Any], np.ndarray]:
    """The lists' positions per (window, variant), groups in the order of first appearance
    and positions ascending: ``lists.groupby(["window", "variant"], sort=False).indices``
    (missing variants kept). Without a variant column, grouped by the window alone (pandas
    would group an object column of ``None`` too, the slow part at millions of lists).

    Example:
        >>> lists = pd.DataFrame({"window": [7, 3, 7]})
        >>> {k: v.tolist() for k, v in _groups(lists, False).items()}
        {(7, None): [0, 2], (3, None): [1]}
    """
    if by_variant:
        return lists.groupby(["window", "variant"], dropna=False, sort=False).indices
    codes, windows = pd.factorize(lists["window"].to_numpy(dtype=np.int64), sort=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(windows) + 1))
    return {(int(windows[g]), None): order[bounds[g]:bounds[g + 1]] for g in range(len(windows))}


def _one_run_each(imps: pd.DataFrame, starts: np.ndarray, n_lists: int) -> bool:
    """Whether every list is one run of rows with integer items and no item twice: then
    :func:`_refuse_repeated_items` has nothing to find (a numba pass over the runs instead of
    a sort of every row); otherwise it looks."""
    if not pd.api.types.is_integer_dtype(imps["item"]) or len(starts) != n_lists:
        return False  # text items, or a list split into several runs: the general check
    return not repeats_in_runs(starts, imps["item"].to_numpy())


def _refuse_repeated_items(imps: pd.DataFrame, row_list: np.ndarray, n_pending: int) -> None:
    """An item served twice in one list (user, served_at): one line naming the first repeat
    (its row in this run's impressions) and how many there are. ``row_list``: each row's list
    (the codes of :meth:`_Run._lists`); the pending rows were checked by the run that read
    them, so only the lists holding new rows are."""
    lists = row_list.astype(np.int64, copy=False)
    rows = np.arange(len(imps))
    if n_pending:
        touched = np.zeros(int(lists.max(initial=0)) + 1, dtype=bool)
        touched[lists[n_pending:]] = True
        rows = rows[touched[lists]]
    dup = np.zeros(len(imps), dtype=bool)
    dup[rows] = repeated(lists[rows], imps["item"].to_numpy()[rows])
    if not dup.any():
        return
    row = int(np.flatnonzero(dup)[0])
    raise _repeat_error(imps, row, row - n_pending, int(dup.sum()))


def _repeat_error(imps: pd.DataFrame, row: int, shown: Any, n: int) -> ReceValError:
    """:func:`receval.data.repeats.repeat_error` for the impressions' row ``row`` (``shown``:
    the row number the message names)."""
    return repeat_error("impressions", imps["item"].iloc[row],
                        f"user {plain(imps['user'].iloc[row])!r}, served_at "
                        f"{_ts(int(imps['served'].iloc[row]))}", shown, n,
                        "pass duplicates='first' or 'max' to keep one")


def _known_baseline(baseline: Any, variant_col: str, seen: set[Any]) -> Any:
    """The baseline among the variants seen (a text ``"2"`` names a variant ``2``), or an
    error naming them."""
    if baseline in seen:
        return baseline
    same = [v for v in seen if str(v) == str(baseline)]
    if len(same) == 1:
        return same[0]
    shown = ", ".join(repr(v) for v in sorted(seen, key=repr)) or "(none)"
    raise ReceValError(f"baseline {baseline!r} is not a variant of column {variant_col!r}; "
                       f"variants seen: {shown}")
