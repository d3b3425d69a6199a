"""The ``receval sample`` command: the shared candidates of a sampled evaluation."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.text import Text

from receval.cli.common import _errors_exit_2, err_console, main
from receval.cli.options_table import option, shared
from receval.io.output import TABLE_SUFFIXES, atomic_output, check_outputs, sigterm_as_exit
from receval.io.terminal import safe_text
from receval.sampled import STRATEGIES


@main.command()
@option("train", dest="train_path", required=True,
        help="Training interactions (user, item): never drawn as a user's negatives.")
@click.option("--test", "test_path", required=True, metavar="FILE",
              help="Test interactions: each test user's test items are candidates.")
@click.option("--negatives", "n_negatives", type=click.IntRange(1), default=100,
              show_default=True, help="Negatives sampled per test user.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="uniform",
              show_default=True, help="uniform, or proportional to training count ** --alpha.")
@click.option("--alpha", type=float, default=1.0, show_default=True)
@shared("seed")
@option("items", dest="items_path",
        help="The catalogue: a file with an item column (default: the items of train and "
             "test).")
@option("out", required=True, help="The candidates table (.csv, .tsv or .parquet): user, item.")
@shared("user_col", "item_col", "delimiter")
@_errors_exit_2
def sample(train_path: str, test_path: str, n_negatives: int, strategy: str, alpha: float,
           seed: int, items_path: str | None, out: str, **params: Any) -> None:
    """Write the candidates every model scores: each test user's test items plus sampled
    negatives (not the user's training or test items), seeded.

    \b
    receval sample --train train.csv --test test.csv --negatives 100 -o candidates.csv
    """
    import pyarrow as pa

    from receval.io.output import write_table
    from receval.sampled import ATTRS_KEY, sample_candidates
    from receval.split import read_interactions

    inputs = [p for p in (train_path, test_path, items_path) if p]
    target = check_outputs({"--out": (out, TABLE_SUFFIXES)}, inputs)["--out"]
    cols = {"user_col": params["user_col"], "item_col": params["item_col"],
            "delimiter": params["delimiter"]}
    train = read_interactions(train_path, **cols)
    test = read_interactions(test_path, **cols)
    items = None
    if items_path:
        from receval.exceptions import ReceValError

        catalogue = read_interactions(items_path, **cols)
        if params["item_col"] not in catalogue.columns:
            raise ReceValError(f"--items file {items_path} has no column "
                               f"{params['item_col']!r}")
        items = catalogue[params["item_col"]].drop_duplicates()
    candidates = sample_candidates(train, test, n_negatives, strategy=strategy, alpha=alpha,
                                   seed=seed, items=items, user_col=params["user_col"],
                                   item_col=params["item_col"])
    info = candidates.attrs[ATTRS_KEY]
    with sigterm_as_exit(), atomic_output(target, "--out") as tmp:
        write_table(pa.Table.from_pandas(candidates, preserve_index=False), tmp, atomic=False)
    click.echo(json.dumps(info))
    err_console.print(Text(f"candidates written to {safe_text(out)} ({len(candidates)} rows)"),
                      highlight=False, soft_wrap=True)
