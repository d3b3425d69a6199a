"""The monitor's HTML report: windows, drift table and plot, variant comparisons; one offline
file from a jinja2 template (autoescape on; figures as SVG data URIs; no script)."""

from __future__ import annotations

import base64
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from receval._version import __version__

if TYPE_CHECKING:
    from receval.monitor.core import Monitor

TEMPLATES = Path(__file__).parent / "templates"


def _num(value: Any, spec: str = ".4f") -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "" if math.isnan(v) else format(v, spec)


def _duration(ns: Any) -> str:
    import pandas as pd

    return "" if ns is None else str(pd.Timedelta(int(ns), unit="ns"))


def render_monitor(result: Monitor, path: str | Path | None = None, reference: Any = None,
                   title: str = "receval monitor") -> str:
    """The report as an HTML string, also written atomically to ``path`` when given.

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
    import jinja2

    from receval.report.plots import to_bytes

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             keep_trailing_newline=True)
    variant_col = result.options.get("variant_col")
    table = result.drift(reference)
    windows = []
    for _, w in result.windows.iterrows():
        windows.append({
            "start": str(w["window_start"].date()) if w["window_start"].hour == 0
            else str(w["window_start"]),
            "variant": "" if not variant_col else str(w[variant_col]),
            "values": [(_num(w[m]), f"[{_num(w[f'{m}_ci_low'])}, {_num(w[f'{m}_ci_high'])}]")
                       for m in result.metrics],
            "evaluated": int(w["users_evaluated"]), "waiting": int(w["users_waiting"]),
            "unjudged": int(w["users_unjudged"]), "closed": bool(w["closed"])})
    drift = [{"start": str(r["window_start"].date()),
              "variant": "" if not variant_col else str(r[variant_col]),
              "metric": r["metric"], "value": _num(r["value"]),
              "band": f"[{_num(r['band_low'])}, {_num(r['band_high'])}]",
              "flag": bool(r["flag"])} for _, r in table.iterrows()]
    comparisons = [{"start": str(r["window_start"].date()), "variant": str(r["variant"]),
                    "baseline": str(r["baseline"]), "metric": r["metric"],
                    "delta": _num(r["delta"], "+.4f"),
                    "ci": f"[{_num(r['ci_low'], '+.4f')}, {_num(r['ci_high'], '+.4f')}]",
                    "p": _num(r["p_value"], ".3g"), "p_adjusted": _num(r["p_adjusted"], ".3g"),
                    "n": f"{int(r['n'])} / {int(r['baseline_n'])}"}
                   for _, r in result.comparisons.iterrows()]
    figure = ""
    if len(result.windows):
        svg = to_bytes(result.plot(reference=reference), "svg")
        figure = "data:image/svg+xml;base64," + base64.b64encode(svg).decode()
    o = result.options
    page = env.get_template("monitor.html.j2").render(
        title=title, version=__version__, metrics=result.metrics, variant_col=variant_col,
        windows=windows, drift=drift, comparisons=comparisons, figure=figure,
        flagged=sum(1 for d in drift if d["flag"]), counts=result.counts,
        settings={"window": o.get("window"),
                  "step": _duration(o.get("step")) if o.get("step") != o.get("width")
                  else "calendar windows",
                  "attribution": _duration(o.get("attribution")),
                  "lateness": _duration(o.get("lateness")),
                  "min_feedback": o.get("min_feedback"), "resamples": o.get("n_resamples"),
                  "confidence": o.get("confidence"), "seed": o.get("seed"),
                  "options": ", ".join(f"{k}={v!r}" for k, v in o.get("options", {}).items())
                  or "defaults"})
    if path is not None:
        from receval.io.output import atomic_output

        with atomic_output(path, "report") as tmp:
            tmp.write_text(page, encoding="utf-8")
    return page
