"""The drift view: each metric per window with its interval, against a reference window's band.

The band is the reference window's bootstrap interval ``[ci_low, ci_high]``. With
``rule="interval"`` (default) a window is flagged when its own interval lies wholly outside the
band (no overlap: two windows of the same distribution are flagged rarely, well under 5% of the
time); with ``rule="value"`` when its value does (strictly below the band or above it: with
narrow bands, about one window in six of an unchanged system). A window without an interval is
judged by its value. The reference is the first window of each variant, or the window that
starts at ``reference``. A window without a value, or a reference without an interval, is
never flagged; nor is an open window still waiting for feedback when every list counts (the
default ``min_feedback=None``: its clicked lists count first, so it reads high until it
closes).

The flag is an alarm: it reads the metric's declared direction
(:func:`receval.beyond.names.direction`, ``direction`` in the table). A window outside the band
on the worse side (below it for a higher-is-better metric such as P@k, above it for a
lower-is-better one such as RMSE, MAE, rND or calibration) has ``change="worse"`` and is
flagged; one outside on the better side has ``change="better"`` and is not (an improvement is
no alarm); ``change`` is ``""`` inside the band or where nothing is judged.

A reference window without any evaluated list has no band: a named one (``reference=``) is an
error, the default first window a warning (code ``empty-reference``) that names the first
window with evaluated lists to pass as ``reference=`` (``--reference``). The default only warns
because the drift view is drawn by ``receval monitor``'s table and report, which should still
show the windows.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from receval.checks import EmptyReferenceWarning, warn
from receval.exceptions import ReceValError

if TYPE_CHECKING:
    from receval.monitor.core import Monitor

#: the columns of the drift table
DRIFT_COLUMNS = ("window_start", "variant", "metric", "value", "ci_low", "ci_high",
                 "reference_start", "band_low", "band_high", "flag", "direction", "change",
                 "users_evaluated")


RULES = ("interval", "value")


def drift_table(result: Monitor, reference: Any = None, rule: str = "interval") -> pd.DataFrame:
    """One row per (window, variant, metric): see the module text.

    Example:
        >>> import receval, pandas as pd
        >>> imp = pd.DataFrame({"user": [1, 2, 3], "item": [1, 1, 1], "rank": [1, 1, 1],
        ...     "served_at": pd.to_datetime(["2024-01-01", "2024-01-01", "2024-01-09"])})
        >>> fb = pd.DataFrame({"user": [1, 2, 3], "item": [1, 1, 1], "value": [1, 0, 0],
        ...     "at": pd.to_datetime(["2024-01-01", "2024-01-01", "2024-01-09"])})
        >>> m = receval.monitor(imp, fb, "P@1", window="W", relevance_threshold=1)
        >>> m.drift()[["value", "band_low", "band_high", "flag"]].values.tolist()
        [[0.5, 0.0, 1.0, False], [0.0, 0.0, 1.0, False]]
        >>> m.drift(rule="value")[["change", "flag", "direction"]].values.tolist()
        [['', False, 'higher'], ['', False, 'higher']]
    """
    if rule not in RULES:
        raise ReceValError(f"drift rule {rule!r} is not one of {', '.join(RULES)}")
    frame = result.windows
    variant_col = result.options.get("variant_col")
    variants = frame[variant_col] if variant_col else pd.Series([None] * len(frame))
    ref_start = None
    if reference is not None:
        try:
            ref_start = pd.Timestamp(reference)
        except (ValueError, TypeError):
            raise ReceValError(f"reference {reference!r} is not a time") from None
        ref_start = ref_start.tz_localize("UTC") if ref_start.tzinfo is None \
            else ref_start.tz_convert("UTC")
        if not (frame["window_start"] == ref_start).any():
            starts = ", ".join(str(s) for s in frame["window_start"].drop_duplicates()[:5])
            raise ReceValError(f"reference window {str(ref_start)!r} is not one of the "
                               f"windows ({starts}{', ...' if len(frame) > 5 else ''})")
    rows = []
    every_list = result.options.get("min_feedback") is None
    for variant in list(dict.fromkeys(variants.tolist())):
        mine = frame[(variants == variant).to_numpy() if variant is not None
                     else variants.isna().to_numpy()]
        if ref_start is None:
            ref = mine.iloc[0] if len(mine) else None
        else:
            hit = mine[mine["window_start"] == ref_start]
            ref = hit.iloc[0] if len(hit) else None
        if ref is not None and int(ref["users_evaluated"]) == 0:
            _empty_reference(ref, mine, variant, named=ref_start is not None)
        for metric in result.metrics:
            better = _direction(metric)
            low_band = float(ref[f"{metric}_ci_low"]) if ref is not None else math.nan
            high_band = float(ref[f"{metric}_ci_high"]) if ref is not None else math.nan
            for _, w in mine.iterrows():
                value = float(w[metric])
                low, high = float(w[f"{metric}_ci_low"]), float(w[f"{metric}_ci_high"])
                if rule == "value" or math.isnan(low):
                    low = high = value
                provisional = every_list and not w["closed"] and w["users_waiting"] > 0
                judged = not (math.isnan(value) or math.isnan(low_band) or provisional)
                change = ""
                if judged and (high < low_band or low > high_band):
                    up = low > high_band
                    change = "better" if up == (better == "higher") else "worse"
                rows.append({"window_start": w["window_start"], "variant": variant,
                             "metric": metric, "value": value,
                             "ci_low": float(w[f"{metric}_ci_low"]),
                             "ci_high": float(w[f"{metric}_ci_high"]),
                             "reference_start": None if ref is None else ref["window_start"],
                             "band_low": low_band, "band_high": high_band,
                             "flag": change == "worse", "direction": better, "change": change,
                             "users_evaluated": int(w["users_evaluated"])})
    out = pd.DataFrame(rows, columns=list(DRIFT_COLUMNS))
    if not variant_col:
        out = out.drop(columns="variant")
    else:
        out = out.rename(columns={"variant": variant_col})
    return out


def _direction(metric: str) -> str:
    """The metric's declared direction (``"higher"`` or ``"lower"``), read from its entry.

    Example:
        >>> _direction("P@10"), _direction("MAE"), _direction("rND@10")
        ('higher', 'lower', 'lower')
    """
    from receval.beyond.names import direction

    return direction(metric)


def _empty_reference(ref: pd.Series, windows: pd.DataFrame, variant: Any, named: bool) -> None:
    """The reference window has no evaluated list: an error if named, else a warning; both
    name the first window that has some."""
    start = ref["window_start"]
    who = "" if variant is None else f" of variant {variant!r}"
    counts = f"{int(ref['users_waiting'])} waiting, {int(ref['users_unjudged'])} unjudged"
    usable = windows.loc[windows["users_evaluated"] > 0, "window_start"]
    hint = (f"pass reference= (--reference) another window start, e.g. "
            f"'{usable.iloc[0].isoformat()}'" if len(usable)
            else "no window has an evaluated list yet")
    text = (f"drift: reference window {start.isoformat()}{who} has no evaluated list "
            f"({counts}), so there is no band and no window can be flagged; {hint}")
    if named:
        raise ReceValError(text)
    warn(EmptyReferenceWarning, text)
