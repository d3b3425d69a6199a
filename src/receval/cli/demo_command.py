"""The ``receval demo`` command: the guided first run."""

from __future__ import annotations

import time
import warnings

import click
from rich.table import Table

from receval.cli.common import (
    _compile_notice,
    console,
    main,
)
from receval.demo import CUTOFFS, FAMILIES
from receval.exceptions import UndefinedMetricWarning
from receval.result import Result


@main.command()
@click.option("--seed", default=7, show_default=True, help="Seed of the synthetic data.")
def demo(seed: int) -> None:
    """Evaluate a baseline on seeded synthetic ratings and print the metric table."""
    from receval.demo import run_demo

    started = time.perf_counter()
    _compile_notice()
    with (
        console.status("generating ratings, training the baseline, evaluating..."),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        results = run_demo(seed=seed)
    elapsed = time.perf_counter() - started
    console.print(
        "[bold]receval demo[/bold]: 2,000 synthetic users, 1,000 items (power-law popularity, "
        "1-5 stars), 80/20 split per user, baseline = mean + user bias + item bias.\n"
        "Relevant = true rating >= 3.5. [italic]Rating semantics[/italic]: the test pairs ranked "
        "by predicted rating, recommended only if predicted >= 3.5 (precision over the number "
        "recommended). [italic]Top-k semantics[/italic]: the same lists, every item of the top k "
        "recommended (precision over k). [italic]Full ranking[/italic]: the 15 most popular "
        "unseen items of the whole catalogue (the popularity baseline)."
    )
    console.print(_demo_table(results))
    rating = results["rating semantics"]
    console.print(
        f"RMSE {rating.summary['RMSE']:.4f}   MAE {rating.summary['MAE']:.4f}   "
        f"users evaluated {rating.counts['users']['evaluated']}, "
        f"without a relevant item {rating.counts['users']['without_relevant']} "
        f"(undefined values count as {rating.options['empty']!r}); {elapsed:.1f} s"
    )
    console.print(
        "\nNext: [bold]receval evaluate --truth test.csv --predictions run.csv -m P@10 -m "
        "nDCG@10 --relevance-threshold 4[/bold], or in Python [bold]receval.evaluate(truth_df, "
        "predictions_df, ['P@10', 'nDCG@10'], relevance_threshold=4)[/bold]. With star "
        "ratings in the truth, the threshold says which ratings are relevant (here >= 4); "
        "without a rating column every truth row is relevant. Every option (ties, empty-user "
        "policy, averaging) is listed in the README."
    )


def _demo_table(results: dict[str, Result]) -> Table:
    table = Table(title="baseline on synthetic ratings")
    table.add_column("metric", style="bold")
    for name in results:
        table.add_column(name, justify="right")
    for family in FAMILIES:
        for k in CUTOFFS:
            name = f"{family}@{k}"
            table.add_row(name, *(f"{r.summary[name]:.4f}" for r in results.values()),
                          end_section=k == CUTOFFS[-1])
    return table
