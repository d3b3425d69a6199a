"""The off-policy log built from monitor's inputs: the served impressions (with the logger's
propensity of each shown item) and the feedback, joined by monitor's attribution rule.

A served list (a request) is what one user was served at one time: the impressions of one
(user, ``served_at``), as in :mod:`receval.monitor.core`. An impression's reward is the largest
feedback value of its (user, item) dated ``served_at <= at <= served_at + attribution`` (0
when there is none; with ``relevance_threshold``, 1 when that value reaches it, else 0): the
rule, its readers and its windows are monitor's own (:mod:`receval.monitor.attribution`,
:mod:`receval.monitor.inputs`, :mod:`receval.monitor.windows`). A list whose attribution
period is not over at the latest event (monitor's watermark) may still earn rewards: it is left
out by default (``open_lists="drop"``) and counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.monitor.attribution import attribute, one_zone
from receval.monitor.inputs import as_frame, read_feedback, read_impressions
from receval.monitor.windows import parse_attribution, parse_window
from receval.scalars import plain

#: the logger's probability columns taken over from the impressions when present
EXTRA = ("propensity_prefix", "propensity_slate")


def log_from_monitor(impressions: Any, feedback: Any, *, propensity_col: str = "propensity",
                     attribution: str = "7D", lateness: str = "0s", window: str = "7D",
                     origin: str | pd.Timestamp | None = None, variant_col: str | None = None,
                     relevance_threshold: float | None = None, open_lists: str = "drop",
                     user_col: str = "user", item_col: str = "item",
                     score_col: str | None = None, served_col: str = "served_at",
                     value_col: str = "value", time_col: str = "at",
                     time_unit: str | None = None) -> pd.DataFrame:
    """The log :func:`~receval.offpolicy.estimate` reads, from monitor's impressions (``user``,
    ``item``, ``rank`` or ``score``, ``served_at``, the logger's ``propensity_col`` and
    optionally ``propensity_prefix`` / ``propensity_slate`` and ``variant_col``) and feedback
    (``user``, ``item``, ``value``, ``at``): the inputs, times and options of
    :func:`receval.monitor` (see the module for the rule).

    The columns: ``request`` (an integer per list, in the order of (``served_at``, user)),
    ``user``, ``served_at`` (UTC), ``item``, ``position`` (the rank; or 1 for the highest
    score), ``reward``, ``propensity`` [, ``propensity_prefix``, ``propensity_slate``],
    ``window`` (the start of monitor's calendar window of ``served_at``) [, ``variant``].
    Targets and reward models may name a list by its ``request`` or by ``user`` and
    ``served_at``. ``frame.attrs["counts"]``: impressions and feedback read, lists kept, lists
    still open (left out unless ``open_lists="keep"``), impressions rewarded, feedback rows
    that judged no impression.

    Example:
        >>> imp = pd.DataFrame({"user": [1, 1, 2], "item": ["a", "b", "a"], "rank": [1, 2, 1],
        ...     "served_at": pd.to_datetime(["2024-01-01"] * 2 + ["2024-01-02"]),
        ...     "propensity": [0.5, 0.4, 0.5]})
        >>> fb = pd.DataFrame({"user": [1, 2], "item": ["b", "a"], "value": [1.0, 1.0],
        ...                    "at": pd.to_datetime(["2024-01-01 10:00", "2024-01-20 00:00"])})
        >>> log = log_from_monitor(imp, fb, attribution="1D")
        >>> log[["request", "user", "item", "position", "reward"]].values.tolist()
        [[0, 1, 'a', 1, 0.0], [0, 1, 'b', 2, 1.0], [1, 2, 'a', 1, 0.0]]
        >>> log.attrs["counts"]["feedback_unattributed"]
        1
    """
    if open_lists not in ("drop", "keep"):
        raise ReceValError(f"open_lists must be 'drop' or 'keep'; got {open_lists!r}")
    span = parse_attribution(attribution)
    hold = span + (0 if lateness in ("0s", "0", 0) else parse_attribution(lateness, "lateness"))
    windows = parse_window(window, origin)
    frame = as_frame(impressions, "impressions", (user_col, item_col)).reset_index(drop=True)
    if propensity_col not in frame.columns:
        raise ReceValError(f"impressions: no column {propensity_col!r} (the logging policy's "
                           "probability of each shown item at its position; "
                           "propensity_col= names it); columns: "
                           f"{', '.join(map(str, frame.columns))}")
    imps, kind, imp_zone = read_impressions(frame, user_col=user_col, item_col=item_col,
                                            score_col=score_col, served_col=served_col,
                                            variant_col=variant_col, time_unit=time_unit)
    fb, fb_zone = read_feedback(feedback, user_col=user_col, item_col=item_col,
                                value_col=value_col, time_col=time_col, time_unit=time_unit)
    one_zone([("impressions", served_col, imp_zone), ("feedback", time_col, fb_zone)])
    if not len(imps):
        raise ReceValError("impressions: no served item to build a log from")
    value, judging = attribute(imps[["user", "item", "served"]], fb, span)
    served = imps["served"].to_numpy(dtype=np.int64)
    # lists: (user, served_at), numbered in the order of (served_at, user)
    user_code, _ = pd.factorize(imps["user"], sort=True)
    list_key = pd.MultiIndex.from_arrays([served, user_code])
    codes, uniques = list_key.factorize(sort=True)
    codes = codes.astype(np.int64)
    if variant_col is not None:
        variant = imps["variant"].to_numpy()
        first = np.full(len(uniques), -1, np.int64)
        first[codes[::-1]] = np.arange(len(codes))[::-1]
        differs = ~pd.Series(variant).eq(pd.Series(variant[first[codes]])).to_numpy()
        if differs.any():
            row = int(np.flatnonzero(differs)[0])
            raise ReceValError(
                f"impressions: column {variant_col!r} differs within one served list (user "
                f"{plain(imps['user'].iloc[row])!r}) at row {row} ({int(differs.sum())} rows "
                "differ from their list's first row)")
    position = _positions(imps["order"].to_numpy(), codes, kind)
    max_time = max(int(served.max()), int(fb["at"].max()) if len(fb) else int(served.max()))
    open_rows = served >= max_time - hold
    reward = np.where(np.isnan(value), 0.0, value)
    if relevance_threshold is not None:
        reward = (reward >= relevance_threshold).astype(np.float64) * ~np.isnan(value)
    out = pd.DataFrame({"request": codes, "user": imps["user"],
                        "served_at": pd.to_datetime(served, utc=True), "item": imps["item"],
                        "position": position, "reward": reward,
                        "propensity": frame[propensity_col].to_numpy()})
    for column in EXTRA:
        if column in frame.columns:
            out[column] = frame[column].to_numpy()
    out["window"] = pd.to_datetime(windows.start_of(served), utc=True)
    if variant_col is not None:
        out["variant"] = imps["variant"].to_numpy()
    n_open = len(np.unique(codes[open_rows]))
    if open_lists == "drop" and open_rows.any():
        out = out[~open_rows]
        _, dense = np.unique(out["request"].to_numpy(), return_inverse=True)
        out = out.assign(request=dense.astype(np.int64))
    out = out.sort_values(["request", "position"], kind="stable", ignore_index=True)
    out.attrs["counts"] = {
        "impressions_read": len(imps), "feedback_read": len(fb),
        "lists": int(out["request"].nunique()),
        "lists_open_" + ("dropped" if open_lists == "drop" else "kept"): n_open,
        "impressions_rewarded": int((out["reward"].to_numpy() != 0).sum()),
        "feedback_unattributed": int(len(fb) - judging.sum())}
    return out


def _positions(order: np.ndarray, codes: np.ndarray, kind: str) -> np.ndarray:
    """The rank (1 = top) of each impression: the ``rank`` column as it is (whole numbers
    >= 1), or the order of the scores within its list (highest first, ties in row order)."""
    if kind == "rank":
        bad = (order < 1) | (order != np.floor(order))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ReceValError(f"impressions: column 'rank' is not a whole number >= 1 at row "
                               f"{row} (value {plain(order[row])!r}; {int(bad.sum())} bad rows)")
        return order.astype(np.int64)
    by = np.lexsort((np.arange(order.size), -order, codes))
    start = np.searchsorted(codes[by], codes[by], side="left")
    position = np.empty(order.size, np.int64)
    position[by] = np.arange(order.size) - start + 1
    return position
