"""The ``receval demo`` command: the guided first run, the whole offline workflow."""

from __future__ import annotations

import time

from rich.markup import escape
from rich.table import Table

from receval import numbers
from receval.cli.common import (
    _compile_notice,
    _errors_exit_2,
    console,
    main,
)
from receval.cli.options_table import option
from receval.compare import CORRECTION_NAMES, TEST_NAMES
from receval.demo import (
    ALPHA,
    CUTOFFS,
    FAMILIES,
    RELEVANCE_THRESHOLD,
    TEST_FRACTION,
    DemoRun,
)

#: the headings of the printed sections, in order (the tests look for them)
SECTIONS = ("1. Data", "2. Split", "3. Models", "4. Evaluation", "5. Comparison", "Next:")
#: the hint's commands: the workflow on one's own files
NEXT_COMMANDS = (
    "receval split ratings.csv --method temporal-user --test-fraction 0.2 "
    "--train-out train.csv --test-out test.csv",
    "receval evaluate -t test.csv -p run.csv --train train.csv --exclude-train "
    "-m P@10 -m nDCG@10 --relevance-threshold 4",
    "receval compare -t test.csv -p popular.csv -p run.csv --baseline popular "
    "--train train.csv --exclude-train -m P@10 -m nDCG@10 --relevance-threshold 4",
)


@main.command()
@option("seed", default=7)
@_errors_exit_2
def demo(seed: int, **params: object) -> None:
    """The offline workflow on seeded synthetic data: split, leakage audit, a popularity
    baseline and a model, evaluation without training items, paired comparison."""
    from receval.demo import run_demo

    started = time.perf_counter()
    _compile_notice()
    with console.status("generating, splitting, training, evaluating, comparing..."):
        run = run_demo(seed=seed)
    elapsed = time.perf_counter() - started
    for part in _sections(run, elapsed):
        # a command is one line however narrow the terminal (copied, it still runs)
        console.print(part, highlight=False, soft_wrap=isinstance(part, _Command))


class _Command(str):
    """A line of the hint that is a command."""


def _sections(run: DemoRun, elapsed: float) -> list[object]:
    """What the demo prints, in order: text (rich markup) and tables."""
    ratings, split = run.ratings, run.split
    model, kept = run.results["item-item"], run.results["item-item, training items kept"]
    leak = model.counts["train"]
    audit = "\n".join(f"  {escape(line)}" for line in split.lines())
    global_leak = split.audit["time"]["train_after_test_start"]
    rows = model.counts["rows"]
    return [
        f"[bold]receval demo[/bold] (seed {run.seed}): the offline workflow on synthetic data, "
        f"nothing downloaded.\n\n[bold]{SECTIONS[0]}[/bold]: {len(ratings):,} interactions "
        f"(user, item, 1-5 stars, timestamp) of {ratings['user'].nunique():,} users on "
        f"{ratings['item'].nunique():,} items; power-law item popularity, each user likes a "
        "few genres.",
        f"\n[bold]{SECTIONS[1]}[/bold]: [bold]receval.split.temporal_user(ratings, "
        f"test_fraction={TEST_FRACTION}, seed={run.seed})[/bold], each user's latest "
        f"{TEST_FRACTION:.0%} to test. Its leakage audit:\n{audit}",
        f"  A per-user split shares no timeline: {global_leak:,} training rows are dated after "
        "the first test row, so a model learns from other users' future; "
        "--method temporal-global cuts one date for everyone.",
        f"\n[bold]{SECTIONS[2]}[/bold], trained on the training rows: [italic]popular[/italic] = "
        f"receval.baselines.most_popular(train, users, k={max(CUTOFFS)}) (the floor; never a "
        "user's own training items); [italic]item-item[/italic] = co-occurrences with the "
        f"user's training items / (the item's training users)^{ALPHA} (numpy, "
        "receval.demo.item_item), whose lists still hold the user's training items, as a "
        "model's raw output does.",
        f"\n[bold]{SECTIONS[3]}[/bold]: receval.evaluate(test, predictions, metrics, "
        f"relevance_threshold={RELEVANCE_THRESHOLD}, train=train, exclude_train=True). "
        f"Relevant = rating >= {RELEVANCE_THRESHOLD}; "
        f"{model.counts['users']['without_relevant']} of {model.counts['users']['evaluated']:,} "
        "users have no relevant test item and score 0. Train audit: "
        f"{leak['predictions_in_train']:,} of {rows['predictions']:,} item-item rows are the "
        f"user's training items ({rows['predictions_excluded_train']:,} removed by "
        f"exclude_train), {leak['truth_in_train']} test rows are training rows, "
        f"{leak['users_without_train']} users and {leak['items_without_train']} items are cold, "
        f"{leak['train_after_test']} training rows are dated after their user's first test row.",
        _metric_table(run),
        f"Without exclude_train the training items take places in the top k: item-item nDCG@10 "
        f"{numbers.value(kept.summary['nDCG@10'])} instead of "
        f"{numbers.value(model.summary['nDCG@10'])} (a warning "
        "says so when train= is given).",
        f"\n[bold]{SECTIONS[4]}[/bold]: receval.compare(None, {{'popular': popular_result, "
        "'item-item': model_result}, metrics, baseline='popular'), users paired:",
        _comparison_table(run),
        f"{_footnote(run)}. All in {elapsed:.1f} s.",
        f"\n[bold]{SECTIONS[5]}[/bold] the same on your files (ratings.csv: user, item, "
        "rating, timestamp):",
        *(_Command(f"  [bold]{escape(command)}[/bold]") for command in NEXT_COMMANDS),
        "popular.csv: receval.baselines.most_popular(train, test_users, k=10) written with "
        ".to_csv. In Python each step is one call: receval.split.temporal_user, "
        "receval.baselines.most_popular, receval.evaluate(test, predictions, metrics, "
        "relevance_threshold=4, train=train, exclude_train=True), receval.compare. With star "
        "ratings in the truth, the threshold says which ratings are relevant (here >= 4); "
        "without a rating column every truth row is relevant.",
    ]


def _metric_table(run: DemoRun) -> Table:
    table = Table(title="the metrics (mean over users)")
    table.add_column("metric", style="bold")
    for name in run.results:
        table.add_column(name, justify="right")
    for family in FAMILIES:
        for k in CUTOFFS:
            name = f"{family}@{k}"
            table.add_row(name, *(numbers.value(r.summary[name]) for r in run.results.values()),
                          end_section=k == CUTOFFS[-1])
    return table


def _comparison_table(run: DemoRun) -> Table:
    """One row per metric: the difference, its interval, the corrected p-value, and how many
    users the model serves better, as well, worse (the means are in the metric table)."""
    comparison = run.comparison
    level = 1 - comparison.options["alpha"]
    table = Table(title="item-item minus popular, per user")
    for header in ("metric", "delta", f"{level:.0%} CI", "p adjusted", "better/tied/worse"):
        table.add_column(header, justify="left" if header == "metric" else "right")
    for r in comparison.table.itertuples(index=False):
        table.add_row(str(r.metric), numbers.delta(r.delta),
                      numbers.interval(r.ci_low, r.ci_high, "delta"), numbers.p_value(r.p_adjusted),
                      "/".join(map(numbers.count, (r.wins, r.ties, r.losses))))
    return table


def _footnote(run: DemoRun) -> str:
    o = run.comparison.options
    n = int(run.comparison.table["n"].iloc[0])
    return (f"Test: {TEST_NAMES[o['test']]} over {n:,} users; p-values corrected by "
            f"{CORRECTION_NAMES[o['correction']]} across the {len(run.comparison.table)} rows; "
            "interval: paired bootstrap percentile, "
            f"{o['resamples']:,} resamples, seed {o['seed']}")
