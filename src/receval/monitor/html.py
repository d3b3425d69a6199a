"""The monitor's HTML report: windows, drift table and plot, variant comparisons; one offline
file from a jinja2 template (autoescape on; figures as SVG data URIs; no script)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING, Any

from receval import numbers
from receval._version import __version__
from receval.monitor.cells import NOTE, interval_cell, value_cell

if TYPE_CHECKING:
    from receval.monitor.core import Monitor

TEMPLATES = Path(__file__).parent / "templates"


def _duration(ns: Any) -> str:
    """A duration as the flags write one (``7D``, ``12h``, ``0s``), not ``7 days 00:00:00``.

    Example:
        >>> _duration(7 * 86_400 * 10**9), _duration(0), _duration(90 * 60 * 10**9), _duration(None)
        ('7D', '0s', '90min', '')
        >>> _duration(1_500_000_000)
        '1.5s'
    """
    if ns is None:
        return ""
    value = int(ns)
    for unit, size in (("D", 86_400 * 10**9), ("h", 3_600 * 10**9), ("min", 60 * 10**9),
                       ("s", 10**9)):
        if value and value % size == 0:
            return f"{value // size}{unit}"
    return f"{value / 10**9:g}s"


def _start(ts: Any) -> str:
    return str(ts.date()) if ts.hour == 0 and ts.minute == 0 else str(ts)


def _drift_summary(table: Any, metrics: list[str], variant_col: str | None) -> list[dict]:
    """The drift table collapsed: one row per (variant, metric) with the reference window, its
    band and the windows flagged (the per-window rows are the windows table's drift column)."""
    out = []
    keys = [None] if not variant_col else list(dict.fromkeys(table[variant_col]))
    for key in keys:
        part = table if key is None else table[table[variant_col] == key]
        for metric in metrics:
            rows = part[part["metric"] == metric]
            if not len(rows):
                continue
            first = rows.iloc[0]
            ref = first["reference_start"]
            band = interval_cell(first["band_low"], first["band_high"], 2)
            flagged = rows.loc[rows["flag"], "window_start"]
            at_ref = rows.loc[rows["window_start"] == ref, "value"]
            why = "no interval" if len(at_ref) and at_ref.notna().all() else \
                "no evaluated list in the reference"
            out.append({"variant": "" if key is None else str(key), "metric": metric,
                        "reference": "n/a" if ref is None else _start(ref),
                        "band": band if band != "n/a" else f"n/a ({why})",
                        "judged": int(rows["value"].notna().sum()),
                        "flagged": ", ".join(_start(t) for t in flagged) or "none"})
    return out


def _offpolicy_section(offpolicy: Any, options: dict[str, Any]) -> Any:
    """The off-policy section's HTML (the report's fragment, escaped there), or ""."""
    if offpolicy is None:
        return ""
    import markupsafe

    from receval.report.offpolicy import section_html

    table = getattr(offpolicy, "table", offpolicy)
    used = getattr(offpolicy, "options", {})  # the estimate's own level, else the run's
    confidence = round(1 - used["alpha"], 12) if "alpha" in used \
        else float(options.get("confidence", 0.95))
    return markupsafe.Markup(section_html(table, confidence,
                                          used.get("n_resamples", options.get("n_resamples"))))


def render_monitor(result: Monitor, path: str | Path | None = None, reference: Any = None,
                   title: str = "receval monitor", offpolicy: Any = None) -> str:
    """The report as an HTML string, also written atomically to ``path`` when given.

    ``offpolicy``: off-policy estimates per window (an estimate result or its table, e.g.
    :func:`receval.offpolicy.monitor_windows.monitor_estimates`), shown in a section of their
    own, the fragment of :mod:`receval.report.offpolicy`.

    Example:
        >>> import receval, pandas as pd
        >>> imp = pd.DataFrame({"user": ["<b>"], "item": [1], "rank": [1],
        ...     "served_at": pd.to_datetime(["2024-01-01"])})
        >>> fb = pd.DataFrame({"user": ["<b>"], "item": [1], "value": [1.0],
        ...     "at": pd.to_datetime(["2024-01-01"])})
        >>> page = render_monitor(receval.monitor(imp, fb, "P@1", n_resamples=0),
        ...                       title="<i>x</i>")
        >>> "&lt;i&gt;x&lt;/i&gt;" in page and "<i>x</i>" not in page
        True
    """
    from receval.report.page import environment
    from receval.report.plots import to_bytes

    env = environment(TEMPLATES)  # the report's: autoescape, CSP, number formats
    variant_col = result.options.get("variant_col")
    table = result.drift(reference)
    windows = []
    for _, w in result.windows.iterrows():
        n = int(w["users_evaluated"])
        mine = table[table["window_start"] == w["window_start"]]
        if variant_col:
            mine = mine[mine[variant_col] == w[variant_col]]
        windows.append({
            "start": _start(w["window_start"]),
            "variant": "" if not variant_col else str(w[variant_col]),
            "values": [(value_cell(w[m]),
                        interval_cell(w[f"{m}_ci_low"], w[f"{m}_ci_high"], n))
                       for m in result.metrics],
            "evaluated": n, "waiting": int(w["users_waiting"]),
            "unjudged": int(w["users_unjudged"]), "closed": bool(w["closed"]),
            "outside": ", ".join(mine.loc[mine["flag"], "metric"])})
    drift = _drift_summary(table, result.metrics, variant_col)
    comparisons = [{"start": str(r["window_start"].date()), "variant": str(r["variant"]),
                    "baseline": str(r["baseline"]), "metric": r["metric"],
                    "delta": numbers.delta(r["delta"]),
                    "ci": interval_cell(r["ci_low"], r["ci_high"], 2, "delta"),
                    "p": numbers.p_value(r["p_value"]),
                    "p_adjusted": numbers.p_value(r["p_adjusted"]),
                    "n": f"{numbers.count(r['n'])} / {numbers.count(r['baseline_n'])}",
                    "lists": f"{numbers.count(r['lists'])} / "
                             f"{numbers.count(r['baseline_lists'])}"}
                   for _, r in result.comparisons.iterrows()]
    decisions = _decisions(result)
    figure = ""
    if len(result.windows):
        svg = to_bytes(result.plot(reference=reference), "svg")
        figure = "data:image/svg+xml;base64," + base64.b64encode(svg).decode()
    o = result.options
    section = _offpolicy_section(offpolicy, o)
    page = env.get_template("monitor.html.j2").render(
        title=title, version=__version__, metrics=result.metrics, variant_col=variant_col,
        windows=windows, drift=drift, comparisons=comparisons, figure=figure,
        decisions=decisions, unit=o.get("unit", "user"),
        flagged=sum(1 for w in windows if w["outside"]),
        cells_note=NOTE, counts=result.counts, offpolicy=section,
        settings={"window": o.get("window"),
                  "step": _duration(o.get("step")) if o.get("step") != o.get("width")
                  else "calendar windows",
                  "attribution": _duration(o.get("attribution")),
                  "lateness": _duration(o.get("lateness")),
                  "min_feedback": o.get("min_feedback") or "none: every list counts",
                  "resamples": o.get("n_resamples"),
                  "confidence": o.get("confidence"), "seed": o.get("seed"),
                  **({"comparison unit": o.get("unit", "user"),
                      "planned users (decisions)": o.get("planned_users")}
                     if variant_col else {}),
                  "options": ", ".join(f"{k}={v!r}" for k, v in o.get("options", {}).items())
                  or "defaults"})
    if path is not None:
        from receval.io.output import atomic_output

        with atomic_output(path, "report") as tmp:
            tmp.write_text(page, encoding="utf-8")
    return page


def _decisions(result: Any) -> dict[str, Any] | None:
    """The decisions section: one row per (variant, metric) with the reading, and the line
    naming the method; ``None`` without variants.

    Example:
        >>> import receval, pandas as pd
        >>> imp = pd.DataFrame({"user": [1], "item": [1], "rank": [1],
        ...     "served_at": pd.to_datetime(["2024-01-01"])})
        >>> fb = pd.DataFrame({"user": [1], "item": [1], "value": [1.0],
        ...     "at": pd.to_datetime(["2024-01-01"])})
        >>> _decisions(receval.monitor(imp, fb, "P@1", n_resamples=0)) is None
        True
    """
    from receval.monitor.ab import describe, reading

    o = result.options
    if not o.get("variant_col"):
        return None
    rows = [{"variant": str(r["variant"]), "baseline": str(r["baseline"]),
             "metric": r["metric"], "delta": numbers.delta(r["delta"]),
             "cs": interval_cell(r["cs_low"], r["cs_high"], 2, "delta"),
             "p": numbers.p_value(r["p_always_valid"]),
             "users": f"{numbers.count(r['users'])} / {numbers.count(r['baseline_users'])}",
             "looks": int(r["looks"]), "reading": reading(r),
             "reduction": "" if r["variance_reduction"] != r["variance_reduction"]
             else f"{r['variance_reduction']:.0%}"}
            for _, r in result.decisions.iterrows()]
    return {"rows": rows, "method": describe(o.get("planned_users", 10_000),
                                             o.get("confidence", 0.95))}
