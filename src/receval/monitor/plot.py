"""The drift plot: each metric over the windows with its interval, the reference band shaded
and flagged windows marked (matplotlib, no pyplot; the same plot gives the same bytes)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from receval.exceptions import ReceValError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from receval.monitor.core import Monitor

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


def drift_plot(result: Monitor, metric: str | None = None, path: str | Path | None = None,
               reference: Any = None) -> Figure:
    """One panel per metric (or only ``metric``): the value per window (one line per
    variant) with its interval as error bars, the reference band shaded, flagged windows
    circled in red. Saved to ``path`` (.png or .svg) when given.

    Example:
        >>> import receval, pandas as pd
        >>> imp = pd.DataFrame({"user": [1], "item": [1], "rank": [1],
        ...     "served_at": pd.to_datetime(["2024-01-01"])})
        >>> fb = pd.DataFrame({"user": [1], "item": [1], "value": [1.0],
        ...     "at": pd.to_datetime(["2024-01-01"])})
        >>> fig = drift_plot(receval.monitor(imp, fb, ["P@1", "MRR"], n_resamples=0))
        >>> [ax.get_ylabel() for ax in fig.axes]
        ['P@1', 'MRR']
    """
    from matplotlib.figure import Figure

    from receval.report.plots import plot_settings, to_bytes

    metrics = result.metrics if metric is None else [metric]
    for m in metrics:
        if m not in result.metrics:
            raise ReceValError(f"metric {m!r} is not monitored (monitored: "
                               f"{', '.join(result.metrics)})")
    table = result.drift(reference)
    variant_col = result.options.get("variant_col")
    with plot_settings():
        fig = Figure(figsize=(9, 2.8 * len(metrics)), layout="constrained")
        axes = fig.subplots(len(metrics), 1, squeeze=False)[:, 0]
        for ax, m in zip(axes, metrics, strict=True):
            rows = table[table["metric"] == m]
            groups = [(None, rows)] if not variant_col else \
                [(v, rows[rows[variant_col] == v]) for v in dict.fromkeys(rows[variant_col])]
            for i, (variant, part) in enumerate(groups):
                color = COLORS[i % len(COLORS)]
                x = part["window_start"].dt.tz_localize(None).to_numpy()
                y = part["value"].to_numpy()
                low = (y - part["ci_low"].to_numpy()).clip(min=0)
                high = (part["ci_high"].to_numpy() - y).clip(min=0)
                has_ci = not all(math.isnan(v) for v in part["ci_low"])
                ax.errorbar(x, y, yerr=[low, high] if has_ci else None, marker="o",
                            markersize=4, capsize=3, color=color,
                            label=m if variant is None else f"{variant}")
                if len(part) and not math.isnan(part["band_low"].iloc[0]):
                    ax.axhspan(part["band_low"].iloc[0], part["band_high"].iloc[0],
                               color=color, alpha=0.12, lw=0)
                flagged = part[part["flag"]]
                ax.scatter(flagged["window_start"].dt.tz_localize(None).to_numpy(),
                           flagged["value"].to_numpy(), s=140, facecolors="none",
                           edgecolors="#d62728", linewidths=2, zorder=5)
            ax.set_ylabel(m)
            ax.grid(alpha=0.3)
            if variant_col:
                ax.legend(title=variant_col, fontsize="small")
        axes[-1].set_xlabel("window start (UTC); shaded: reference band; circled: flagged")
    if path is not None:
        from receval.io.output import atomic_output

        suffix = Path(path).suffix.lower()
        if suffix not in (".png", ".svg"):
            raise ReceValError(f"a plot file must end in .png or .svg; got {str(path)!r}")
        with atomic_output(path, "plot") as tmp:
            tmp.write_bytes(to_bytes(fig, suffix[1:]))
    return fig
