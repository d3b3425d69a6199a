"""The ``receval explain`` command: how two profiles differ and why."""

from __future__ import annotations

import functools
import json
import math
from typing import Any

import click
from rich.text import Text

from receval.cli.common import (
    _errors_exit_2,
    _input_options,
    _metrics_option,
    _read_predictions,
    _read_truth,
    _semantics,
    _semantics_options,
    _stdout,
    err_console,
    main,
)
from receval.cli.options_table import option
from receval.exceptions import ReceValError
from receval.io.terminal import safe_text


@main.command()
@click.argument("profile_a", metavar="PROFILE_A")
@click.argument("profile_b", metavar="[PROFILE_B]", required=False)
@functools.partial(_input_options, required=False)
@_metrics_option(())
@_semantics_options
@option("format", choices=("table", "json"), what="the comparison")
@_errors_exit_2
def explain(profile_a: str, profile_b: str | None, metrics: tuple[str, ...], fmt: str,
            **params: Any) -> None:
    """Which options differ between two profiles, and on your data how much each one moves
    each metric (PROFILE_B defaults to receval's defaults; 'defaults' names them too).

    Every option flag of 'receval evaluate' (--relevance-threshold, --users, ...) applies to
    both profiles, as it overrides the profile in 'receval evaluate --profile', so the numbers
    explained are those of your own command.

    \b
    receval explain trec_eval ranx
    receval explain trec_eval kaggle -t test.csv -p run.csv -m AP@10 -m nDCG@10
    receval explain ranx -t ratings.csv -p run.csv --relevance-threshold 4
    """
    from receval.explain import explain as explain_profiles
    from receval.profiles import PROFILES

    names = [profile_a, profile_b or "defaults"]
    for name in names:
        if name not in PROFILES and name != "defaults":
            raise ReceValError(f"unknown profile {name!r}; known: defaults, "
                               f"{', '.join(sorted(PROFILES))}")
    if params.get("profile"):
        raise ReceValError("explain takes its profiles as arguments (PROFILE_A [PROFILE_B]), "
                           "not --profile")
    a, b = (None if n == "defaults" else n for n in names)
    if bool(params["truth"]) != bool(params["predictions"]):
        raise ReceValError("give both --truth and --predictions (or neither, for the options)")
    if len(params["predictions"]) > 1:
        raise ReceValError("explain takes one --predictions file")
    kwargs = _semantics(params)  # the options (overrides of both sides), silence, engine
    truth = preds = None
    if params["truth"]:
        # each side's relevance threshold is its profile's unless --relevance-threshold is
        # given: the TREC default of 'evaluate' without a profile is not applied
        truth, _ = _read_truth(params, {"profile": None})
        _, _, truth, preds = next(_read_predictions(params, truth))
    e = explain_profiles(a, b, truth, preds, list(metrics) if metrics else None, **kwargs)
    # piped or redirected: rich would cut the table at 80 columns; print it at its own width
    out = _stdout()
    if fmt == "json":
        click.echo(json.dumps(_explanation_dict(e), indent=2, allow_nan=False))
    elif not e.differences:
        out.print(f"{e.a} and {e.b} use the same options", highlight=False, soft_wrap=True)
    else:
        out.print(e)
    for label, message in e.errors.items():
        err_console.print(Text(f"warning: {label}: {safe_text(message)}", style="yellow"),
                          highlight=False, soft_wrap=True)


def _explanation_dict(e: Any) -> dict[str, Any]:
    """:class:`~receval.explain.Explanation` as plain JSON (undefined numbers are null)."""

    def number(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {
        "a": e.a,
        "b": e.b,
        "overrides": dict(e.overrides),
        "differences": [{"option": d.option, "a": d.a, "b": d.b,
                         "applies_to": d.scope} for d in e.differences],
        "metrics": e.metrics,
        "values": {e.a: {m: number(v) for m, v in e.values_a.items()},
                   e.b: {m: number(v) for m, v in e.values_b.items()}},
        "effects": {o: {m: number(v) for m, v in by.items()} for o, by in e.effects.items()},
        "interaction": {m: number(v) for m, v in e.interaction.items()} if e.metrics else {},
        "errors": e.errors,
    }
