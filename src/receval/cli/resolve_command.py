"""The ``receval resolve`` command: generated titles to catalogue ids, evaluated, with the
resolution's counts and rates printed beside the metrics (docs/generated.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from receval.cli.common import _errors_exit_2, _metrics_option, _stdout, main
from receval.cli.options_table import option, shared
from receval.io.output import atomic_output, check_outputs
from receval.io.terminal import safe_text


@main.command()
@click.argument("generated", metavar="GENERATED")
@click.argument("truth", metavar="[TRUTH]", required=False)
@click.option(
    "--catalogue",
    required=True,
    metavar="FILE",
    help="The catalogue: item and title columns (the year inside the title, "
    "MovieLens style, or a year column; aliases as more rows of an item).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0),
    default=0.9,
    show_default=True,
    help="The similarity (0-1) a fuzzy or TF-IDF match needs.",
)
@click.option(
    "--match",
    "method",
    type=click.Choice(("exact", "normalised", "fuzzy", "tfidf")),
    default="fuzzy",
    show_default=True,
    help="The last stage tried: exact, normalised, fuzzy (rapidfuzz) or tfidf "
    "(RecAI RecLM-eval's TF-IDF matching; its threshold is 0.6).",
)
@click.option(
    "--scorer",
    type=click.Choice(("ratio", "token_sort_ratio", "token_set_ratio", "WRatio", "QRatio")),
    default="ratio",
    show_default=True,
    help="The rapidfuzz scorer of --match fuzzy.",
)
@click.option(
    "--history",
    "history_file",
    default=None,
    metavar="FILE",
    help="Each user's history (user, item): resolved items in it are counted.",
)
@click.option(
    "--candidates",
    "candidates_file",
    default=None,
    metavar="FILE",
    help="Each user's candidates (user, item): resolved items outside are counted.",
)
@click.option(
    "--slots",
    type=click.Choice(("keep", "close")),
    default="keep",
    show_default=True,
    help="keep: every generated row holds its rank (an unresolved title is a miss "
    "there); close: the resolved items ranked among themselves.",
)
@click.option(
    "--resolved-out",
    default=None,
    metavar="FILE",
    help="Write every generated row with its item, how it matched and its flags "
    "(.csv or .parquet).",
)
@click.option("--text-col", default="text", show_default=True, help="The generated text column.")
@click.option(
    "--title-col", default="title", show_default=True, help="The catalogue's title column."
)
@_metrics_option(beyond=False)
@shared("user_col", "item_col")
@option("format", choices=("table", "json"), what="the metrics and the counts")
@_errors_exit_2
def resolve(
    generated: str,
    truth: str | None,
    catalogue: str,
    threshold: float,
    method: str,
    scorer: str,
    history_file: str | None,
    candidates_file: str | None,
    slots: str,
    resolved_out: str | None,
    text_col: str,
    title_col: str,
    metrics: tuple[str, ...],
    user_col: str,
    item_col: str,
    fmt: str,
    **params: Any,
) -> None:
    """Resolve generated titles (GENERATED: user, rank, text) to catalogue items and, with
    TRUTH (user, item), evaluate the resolved lists; the counts of each match and flag are
    printed beside the metrics.

    \b
    receval resolve answers.csv test.csv --catalogue movies.csv --item-col movieId \\
        -m nDCG@10 -m R@10 --history train.csv
    receval resolve answers.jsonl --catalogue games.jsonl --match tfidf --threshold 0.6
    """
    from receval import text

    outputs = check_outputs(
        {"--resolved-out": (resolved_out, (".csv", ".parquet"))},
        [generated, catalogue, *([truth] if truth else [])],
    )
    g = text.resolve(
        generated,
        catalogue,
        threshold=threshold,
        method=method,
        history=history_file,
        candidates=candidates_file,
        scorer=scorer,
        key=user_col,
        text_col=text_col,
        item_col=item_col,
        title_col=title_col,
    )
    result = None
    if truth is not None:
        result = text.evaluate(truth, g, list(metrics), slots=slots, item_col=item_col)
    if "--resolved-out" in outputs:
        _write_table(g.table, outputs["--resolved-out"])
    if fmt == "json":
        out = (
            result.to_dict()
            if result is not None
            else {
                "counts": {"generated": g.counts, "generated_rates": g.rates()},
                "options": {"resolve": g.options},
            }
        )
        click.echo(json.dumps(out, default=str))
        return
    console = _stdout()
    if result is not None:
        table = Table("metric", "value", box=None)
        for name, value in result.summary.items():
            table.add_row(Text(safe_text(name)), "-" if math.isnan(value) else f"{value:.4f}")
        console.print(table)
    console.print(counts_table(g.counts, g.rates(), g.options))


def counts_table(
    counts: dict[str, int | None], rates: dict[str, float | None], options: dict[str, Any]
) -> Table:
    """The resolution's counts and rates, one row each ('-' where not measured).

    Example:
        >>> t = counts_table({"generated": 2, "exact": 1}, {"exact": 0.5},
        ...                  {"method": "fuzzy", "threshold": 0.9})
        >>> t.row_count
        2
    """
    title = f"generated titles ({options['method']}, threshold {options['threshold']})"
    table = Table(title, "count", "rate", box=None)
    for name, count in counts.items():
        rate = rates.get(name)
        table.add_row(
            name,
            "-" if count is None else str(count),
            "" if name == "generated" else "-" if rate is None else f"{rate:.4f}",
        )
    return table


def _write_table(table: Any, path: Path) -> None:
    """The resolution table, tied items as ``a|b``, written whole or not at all."""
    frame = table.copy()
    frame["tied"] = [None if t is None else "|".join(map(str, t)) for t in frame["tied"]]
    with atomic_output(path, "--resolved-out") as tmp:
        if path.suffix == ".parquet":  # one type per column: ids as text, None kept
            frame["item"] = [None if i is None else str(i) for i in frame["item"]]
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)
