"""The ``receval split`` command."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import click
from rich.text import Text

from receval.cli.common import _errors_exit_2, _stdout, err_console, main
from receval.cli.options_table import option, shared
from receval.exceptions import ReceValError
from receval.io.output import TABLE_SUFFIXES, atomic_output, check_outputs, sigterm_as_exit
from receval.io.terminal import safe_text
from receval.split import METHODS, TIES


@main.command()
@click.argument("data", metavar="FILE")
@click.option("--method", type=click.Choice(METHODS),
    required=True, help="random-user: a random share of each user's rows; temporal-user: the "
    "last share of each user's rows by time; leave-last-out: each user's last --test-count "
    "rows (default 1); temporal-global: one cut on the timeline (--cut or --test-fraction); "
    "kfold-user: users in --folds folds, this run writes --fold.")
@click.option("--test-fraction", type=float, default=None,
              help="Share of each user's rows (global: of all rows) held out.")
@click.option("--test-count", type=int, default=None, help="Rows held out per user.")
@click.option("--cut", default=None, metavar="TIME",
              help="temporal-global: rows dated at or after TIME are test (a number or a date).")
@click.option("--validation-cut", default=None, metavar="TIME",
              help="temporal-global: rows dated in [TIME, --cut) are validation.")
@click.option("--validation-fraction", type=float, default=None,
              help="temporal-global: share of all rows, just before the test rows, that is "
                   "validation.")
@click.option("--folds", type=int, default=5, show_default=True, help="kfold-user: folds.")
@click.option("--fold", type=int, default=0, show_default=True,
              help="kfold-user: which fold to write (0-based).")
@click.option("--holdout", type=click.Choice(["random", "temporal"]), default="random",
              show_default=True, help="kfold-user: how a test user's rows are held out.")
@click.option("--ties", type=click.Choice(TIES), default="random",
              show_default=True, help="Per-user temporal: rows tied in time across the "
                                      "boundary keep the seeded order, or all go to test / "
                                      "train.")
@click.option("--min-train", type=int, default=1, show_default=True,
              help="Rows each user keeps in train (users with fewer stay whole in train).")
@shared("seed")
@click.option("--train-out", required=True, metavar="FILE",
              help="Training rows (.csv, .tsv or .parquet).")
@click.option("--test-out", required=True, metavar="FILE", help="Test rows.")
@click.option("--validation-out", default=None, metavar="FILE",
              help="Validation rows (temporal-global with a validation cut).")
@click.option("--audit-out", default=None, metavar="FILE",
              help="The leakage audit as JSON.")
@option("format", choices=("text", "json"), default="text", what="the audit")
@shared("user_col", "item_col", "timestamp_col", "delimiter", "raw_csv")
@_errors_exit_2
def split(data: str, method: str, train_out: str, test_out: str, validation_out: str | None,
          audit_out: str | None, fmt: str, raw_csv: bool, **params: Any) -> None:
    """Split interactions into train and test files, seeded, and print the leakage audit.

    \b
    receval split ratings.csv --method temporal-user --test-fraction 0.2 \\
        --train-out train.csv --test-out test.csv
    receval split ratings.csv --method temporal-global --cut 2003-01-01 \\
        --validation-cut 2002-07-01 --train-out tr.csv --validation-out va.csv --test-out te.csv
    """
    import pyarrow as pa

    from receval import split as splits
    from receval.io.output import write_table

    outputs = check_outputs({"--train-out": (train_out, TABLE_SUFFIXES),
                             "--test-out": (test_out, TABLE_SUFFIXES),
                             "--validation-out": (validation_out, TABLE_SUFFIXES),
                             "--audit-out": (audit_out, (".json",))}, [data])
    # the rows are split from a pandas frame, but written from the table as read, taken by
    # position: every column keeps its type and values (an integer column with a gap does not
    # become floats)
    table = splits.read_interactions_table(data, user_col=params["user_col"],
                                           item_col=params["item_col"],
                                           delimiter=params["delimiter"])
    frame = splits.interactions_frame(table, params["user_col"], params["item_col"])
    result = _run(splits, method, frame, params)
    if validation_out and result.validation is None:
        raise ReceValError("--validation-out needs a validation set: temporal-global with "
                           "--validation-cut or --validation-fraction")
    if result.validation is not None and not validation_out:
        raise ReceValError("a validation set was asked for: give --validation-out FILE")
    tables = {"--train-out": result.train, "--test-out": result.test,
              "--validation-out": result.validation}
    # every output to a temporary file first, then all renamed into place (or none)
    with sigterm_as_exit(), contextlib.ExitStack() as stack:
        for flag, frame_out in tables.items():
            if flag in outputs and frame_out is not None:
                tmp = stack.enter_context(atomic_output(outputs[flag], flag))
                rows = table.take(pa.array(frame_out.index.to_numpy(), pa.int64()))
                write_table(rows.replace_schema_metadata(None), tmp, raw=raw_csv, atomic=False)
        if "--audit-out" in outputs:
            tmp = stack.enter_context(atomic_output(outputs["--audit-out"], "--audit-out"))
            tmp.write_text(json.dumps(result.audit, indent=2) + "\n")
    if fmt == "json":
        click.echo(json.dumps(result.audit, indent=2))
    else:
        out = _stdout()
        for line in result.lines():
            out.print(Text(safe_text(line)), highlight=False, soft_wrap=True)
    for flag, path in outputs.items():
        err_console.print(Text(f"{flag[2:].replace('-out', '')} written to {safe_text(str(path))}"),
                          highlight=False, soft_wrap=True)


def _run(splits: Any, method: str, frame: Any, params: dict[str, Any]) -> Any:
    """The splitter of ``method`` with the flags it takes; a flag it does not take is an
    error (a silently ignored --cut would split some other way than asked)."""
    cols = {"user_col": params["user_col"], "item_col": params["item_col"],
            "timestamp_col": params["timestamp_col"]}
    takes = {
        "random-user": {"test_fraction", "test_count", "seed", "min_train"},
        "temporal-user": {"test_fraction", "test_count", "seed", "min_train", "ties"},
        "leave-last-out": {"test_count", "seed", "min_train", "ties"},
        "temporal-global": {"test_fraction", "cut", "validation_cut", "validation_fraction"},
        "kfold-user": {"test_fraction", "test_count", "seed", "min_train", "ties", "folds",
                       "fold", "holdout"},
    }[method]
    for name in ("test_fraction", "test_count", "cut", "validation_cut", "validation_fraction"):
        if params.get(name) is not None and name not in takes:
            raise ReceValError(f"--{name.replace('_', '-')} does not apply to --method {method}")
    common = {k: params[k] for k in ("seed", "min_train")}
    if method == "random-user":
        return splits.random_holdout(frame, test_fraction=params["test_fraction"],
                                     test_count=params["test_count"], **common, **cols)
    if method == "temporal-user":
        return splits.temporal_user(frame, test_fraction=params["test_fraction"],
                                    test_count=params["test_count"], ties=params["ties"],
                                    **common, **cols)
    if method == "leave-last-out":
        return splits.leave_last_out(frame, params["test_count"] or 1, ties=params["ties"],
                                     **common, **cols)
    if method == "temporal-global":
        return splits.temporal_global(frame, test_start=params["cut"],
                                      test_fraction=params["test_fraction"],
                                      validation_start=params["validation_cut"],
                                      validation_fraction=params["validation_fraction"],
                                      **cols)
    folds = splits.kfold_users(frame, params["folds"], test_fraction=params["test_fraction"],
                               test_count=params["test_count"], holdout=params["holdout"],
                               ties=params["ties"], **common, **cols)
    if not 0 <= params["fold"] < len(folds):
        raise ReceValError(f"--fold must be in 0..{len(folds) - 1}; got {params['fold']}")
    return folds[params["fold"]]
