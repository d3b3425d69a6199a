"""The audit of a run as every output carries it: one record, made here, that the terminal's
lines, the HTML report, the JSON summary (``--format json``) and the trackers (MLflow, DVC,
``--log json``: :mod:`receval.tracking`) all hold, so that no output drops a count, a warning
or a comparison that another shows.

The record (:func:`audit_record`) has the keys :data:`AUDIT_KEYS`:

- ``models``: per model, ``lines`` (the audit lines the terminal prints, :func:`audit_lines`:
  how the files were streamed, who was evaluated, the training audit, the debiased metrics'
  weights) and ``counts`` (``Result.counts``, JSON-ready);
- ``warnings``: the run's warnings, each once, as ``{"code", "message"}`` (``code``: what
  ``silence=`` / ``--silence`` takes); by default the models' own
  (:attr:`receval.result.Result.warnings`), or those the command printed;
- ``tests``: the family of comparisons (:func:`receval.report.significance.family`: paired
  t-tests between every two models, Holm across every pair x metric that is a mean over
  users), with the keys :data:`TESTS_KEYS`, or ``None`` for one model or models that cannot
  be paired.
"""

from __future__ import annotations

import warnings as _warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from receval.beyond.names import catalogue_level
from receval.result import Result
from receval.scalars import json_ready

#: the keys of :func:`audit_record`; a writer that drops one fails tests/test_audit_outputs.py
AUDIT_KEYS = ("models", "warnings", "tests")
#: the keys of each model's entry
MODEL_KEYS = ("lines", "counts")
#: the keys of the family of tests
TESTS_KEYS = (
    "test",
    "correction",
    "alpha",
    "comparisons",
    "tested",
    "not_tested",
    "letters",
    "marks",
    "rows",
)
#: why a metric of the summary is not in the family
NOT_TESTED = {
    "catalogue": "one number over all lists, no per-user values",
    "other": "not a mean over users",
}


def counts_line(result: Result) -> str:
    """One sentence on who was evaluated and which rows were dropped.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 2], "item": [1, 1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> counts_line(r)
        'users evaluated 2 (in truth 2, in predictions 1, without predictions 1, \
without a relevant item 0); rows: truth 2, predictions 1, none dropped'

    Counts are thousands separated, as in every table (``rows: truth 20,164``).
    """
    from receval.numbers import count as n

    users, rows_ = result.counts["users"], result.counts["rows"]
    # every reason a row is not in the evaluation (Result.counts documents how they add up)
    dropped = {
        k: v
        for k, v in rows_.items()
        if v
        and (
            "dropped" in k
            or "ignored" in k
            or k.endswith(("below_score_threshold", "not_evaluated"))
        )
    }
    skipped = {m: n for m, n in result.counts["undefined"]["users"].items() if n}
    text = (
        f"users evaluated {n(users['evaluated'])} (in truth {n(users['in_truth'])}, in "
        f"predictions {n(users['in_predictions'])}, without predictions "
        f"{n(users['without_predictions'])}, without a relevant item "
        f"{n(users['without_relevant'])}); rows: truth {n(rows_['truth'])}, "
        f"predictions {n(rows_['predictions'])}, "
    )
    text += ", ".join(f"{k.replace('_', ' ')} {n(v)}" for k, v in dropped.items()) or "none dropped"
    if skipped:
        policy = result.counts["undefined"]["policy"]
        shown = ", ".join(f"{m} {n(c)}" for m, c in skipped.items())
        text += f"; users with an undefined value (set by empty={policy!r}): {shown}"
    return text + ties_text(result)


#: the mark beside a summary value that some users' IPS values push above the range
ABOVE_RANGE = "\u2021"


def train_audit_line(counts: Mapping[str, Any], rows: Mapping[str, Any] | None = None) -> str:
    """The training audit (``Result.counts["train"]``) in one line, as the terminal and the
    HTML report print it; ``rows``
    (``counts["rows"]``) adds the prediction rows excluded by ``exclude_train``.

    Example:
        >>> train_audit_line({"rows": 10, "users": 2, "items": 5, "predictions_in_train": 3,
        ...             "truth_in_train": 0, "users_without_train": 1,
        ...             "items_without_train": 2}, {"predictions": 12})
        'train audit: 10 rows, 2 users, 5 items; predictions in train 3 (25% of 12), truth in \
train 0, users without train 1, items without train 2'
    """
    total = (rows or {}).get("predictions")
    share = f" ({counts['predictions_in_train'] / total:.0%} of {total:,})" if total else ""
    parts = [
        f"predictions in train {counts['predictions_in_train']:,}{share}",
        f"truth in train {counts['truth_in_train']:,}",
        f"users without train {counts['users_without_train']:,}",
        f"items without train {counts['items_without_train']:,}",
    ]
    if "train_after_test" in counts:
        parts.append(f"train after test {counts['train_after_test']:,}")
    excluded = (rows or {}).get("predictions_excluded_train")
    if excluded is not None:
        parts.append(f"excluded from the lists {excluded:,} (exclude_train)")
    return (
        f"train audit: {counts['rows']:,} rows, {counts['users']:,} users, "
        f"{counts['items']:,} items; " + ", ".join(parts)
    )


def debias_line(result: Result) -> str | None:
    """The debiased metrics' weights (``Result.counts["debias"]``, :mod:`receval.debias`) in
    one line, as the terminal and the HTML report print it; ``None`` without ``debias=``.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 1], "item": [1, 2], "p": [0.5, 1.0]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"], debias="snips",
        ...     propensity="p")
        >>> debias_line(r)
        'debias=snips weights: 2 relevant truth rows, effective sample size 1.8, largest \
weight 2 (66.7% of the total), mean weight 1.5'
    """
    d = result.counts.get("debias")
    if not d:
        return None
    text = (
        f"debias={d['estimator']} weights: {d['rows']:,} relevant truth rows, effective "
        f"sample size {d['ess']:,.1f}, largest weight {d['max_weight']:,.4g} "
        f"({100 * d['max_weight_share']:.3g}% of the total), mean weight "
        f"{d['mean_weight']:,.4g}"
    )
    if d.get("at_clip"):
        text += f", {d['at_clip']:,} at the clip"
    above = {m: n for m, n in d.get("above_range", {}).items() if n}
    if above:
        text += (
            "; IPS values above the range of 1 (marked "
            + ABOVE_RANGE
            + "): "
            + ", ".join(f"{m} {n:,} users" for m, n in above.items())
        )
    return text


def streaming_line(result: Result) -> str | None:
    """How the files were streamed (``Result.counts["streaming"]``, ``memory_budget=``), or
    ``None`` for a run read in memory.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> streaming_line(r) is None
        True
    """
    how = result.counts.get("streaming")
    if not how:
        return None
    spilled = ", per-user values spilled to disk" if how.get("per_user") == "spilled" else ""
    return (
        f"streamed ({how['mode']}): {how['partitions']:,} partitions, {how['passes']} "
        f"passes over the data, budget {how['budget_bytes'] / 2**20:,.0f} MiB{spilled}"
    )


def audit_lines(result: Result) -> list[str]:
    """Every line of a result's audit, in the order the terminal prints them: how the files
    were streamed (:func:`streaming_line`, with ``memory_budget=``), who was evaluated
    (:func:`counts_line`), the training audit (:func:`train_audit_line`, with ``train=``) and
    the debiased metrics' weights (:func:`debias_line`, with ``debias=``). The HTML report,
    JSON and the trackers carry the same lines (:func:`receval.report.audit.audit_record`).

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"], train={"user": [1],
        ...     "item": [1]})
        >>> [line.split(":")[0] for line in audit_lines(r)]
        ['users evaluated 1 (in truth 1, in predictions 1, without predictions 0, without a \
relevant item 0); rows', 'train audit']
    """
    lines = [counts_line(result)]
    streamed = streaming_line(result)
    if streamed:
        lines.insert(0, streamed)
    if "train" in result.counts:
        lines.append(train_audit_line(result.counts["train"], result.counts["rows"]))
    debiased = debias_line(result)
    if debiased:
        lines.append(debiased)
    return lines


def ties_text(result: Result) -> str:
    """``; tied scores across a cutoff: ...`` when ranks k and k + 1 of some users' lists tie
    (the number then depends on how ties are ordered), else ``""``.

    Example:
        >>> import receval, warnings
        >>> with warnings.catch_warnings():  # the TiesWarning says the same
        ...     warnings.simplefilter("ignore")
        ...     r = receval.evaluate({"user": [1], "item": [1]},
        ...         {"user": [1, 1], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1"])
        >>> ties_text(r).split(" (")[0]
        '; tied scores across a cutoff: 1 user at k=1'
        >>> "ties='average'" in ties_text(r)
        True
    """
    tied = {k: n for k, n in result.counts.get("ties_at_cutoff", {}).items() if n}
    if not tied:
        return ""
    shown = ", ".join(f"{n:,} user{'' if n == 1 else 's'} at k={k}" for k, n in tied.items())
    ties = result.options.get("ties")
    how = (
        f"ties={ties!r} orders them by row order; ties='average' gives the exact expectation"
        if ties in ("stable", "ranx")
        else f"ties={ties!r}"
    )
    return f"; tied scores across a cutoff: {shown} ({how})"


def warning_records(items: Iterable[Any]) -> list[dict[str, str]]:
    """Warnings as the outputs record them, each once, in order: ``{"code", "message"}``
    from records (dicts), caught warnings (``warnings.catch_warnings(record=True)``), warning
    instances, or plain text (code ``""``).

    Example:
        >>> from receval.checks import NoMatchWarning
        >>> warning_records([NoMatchWarning("none"), "said", {"code": "ties", "message": "t"},
        ...                  "said"])  # doctest: +NORMALIZE_WHITESPACE
        [{'code': 'no-match', 'message': 'none'}, {'code': '', 'message': 'said'},
         {'code': 'ties', 'message': 't'}]
    """
    from receval.checks import record_of

    out: list[dict[str, str]] = []
    for item in items:
        if isinstance(item, Mapping):
            rec = {"code": str(item.get("code", "")), "message": str(item["message"])}
        elif isinstance(item, _warnings.WarningMessage):
            rec = record_of(item.message, item.category)
        elif isinstance(item, Warning):
            rec = record_of(item)
        else:
            rec = {"code": "", "message": str(item)}
        if rec not in out:
            out.append(rec)
    return out


def audit_record(
    models: Mapping[str, Result],
    *,
    warnings: Iterable[Any] | None = None,
    metrics: Sequence[str] | None = None,
    comparison: Any = None,
) -> dict[str, Any]:
    """The audit every output of a run carries (see the module): per model its audit lines
    and counts, the run's warnings (``warnings``; default: the models' own, in order) and the
    family of tests on ``metrics`` (default: the first model's metrics), or, given a
    ``comparison`` (:func:`receval.compare`), the family its table corrected together.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> run = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> r = receval.evaluate(truth, run, ["P@1", "coverage@1"], train=truth)
        >>> rec = audit_record({"a": r, "b": r})
        >>> list(rec), [line.split(":")[0] for line in rec["models"]["a"]["lines"]][1:]
        (['models', 'warnings', 'tests'], ['train audit'])
        >>> rec["tests"]["comparisons"], rec["tests"]["not_tested"]
        (1, {'coverage@1': 'one number over all lists, no per-user values'})
        >>> audit_record({"a": r})["tests"] is None
        True
    """
    from receval.report.significance import family

    given = dict(models)
    said = (
        warnings
        if warnings is not None
        else (w for r in given.values() for w in getattr(r, "warnings", ()))
    )
    return {
        "models": {
            name: {"lines": audit_lines(r), "counts": json_ready(r.counts)}
            for name, r in given.items()
        },
        "warnings": warning_records(said),
        "tests": (
            comparison_record(comparison, metrics or _metrics(given))
            if comparison is not None
            else family_record(family(given, metrics))
        ),
    }


def _metrics(models: Mapping[str, Result]) -> list[str]:
    first = next(iter(models.values()), None)
    return [] if first is None else list(first.metrics or first.summary)


def comparison_record(comparison: Any, metrics: Sequence[str] = ()) -> dict[str, Any]:
    """The family a :class:`receval.compare.Comparison` tested, with the keys of
    :func:`family_record` (no letters: compare names each pair); ``metrics``: those of the
    summary, the ones without a row said as not tested.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> c = receval.compare(truth, {"a": a, "b": a}, ["P@1"])
        >>> rec = comparison_record(c, ["P@1"])
        >>> rec["comparisons"], rec["rows"][0]["model"], rec["rows"][0]["baseline"]
        (1, 'b', 'a')
    """
    o = comparison.options
    keep = [
        c
        for c in ("group", "baseline", "model", "metric", "delta", "p_value", "p_adjusted", "n")
        if c in comparison.table.columns
    ]
    rows = [
        {k: json_ready(v) for k, v in row.items()}
        for row in comparison.table[keep].to_dict(orient="records")
    ]
    tested = list(dict.fromkeys(str(r["metric"]) for r in rows))
    return {
        "test": o.get("test"),
        "correction": o.get("correction"),
        "alpha": o.get("alpha"),
        "comparisons": len(rows),
        "tested": tested,
        "not_tested": {
            m: NOT_TESTED["catalogue" if catalogue_level(m) else "other"]
            for m in metrics
            if m not in tested
        },
        "letters": {},
        "marks": {},
        "rows": rows,
    }


def family_record(tests: Any) -> dict[str, Any] | None:
    """The family of tests (a :class:`receval.report.significance.Significance`) as plain
    data, ``None`` for none: the test, the correction, alpha, the number of comparisons the
    correction spans, the metrics tested and those not (with why), the models' letters, each
    value's marks and one row per comparison.

    Example:
        >>> family_record(None) is None
        True
    """
    if tests is None:
        return None
    o = tests.options
    rows = [
        {k: json_ready(v) for k, v in row.items()}
        for row in tests.table[
            ["baseline", "model", "metric", "delta", "p_value", "p_adjusted", "n"]
        ].to_dict(orient="records")
    ]
    marks: dict[str, dict[str, str]] = {}
    for (model, metric), mark in tests.marks.items():
        marks.setdefault(model, {})[metric] = mark
    tested = list(dict.fromkeys(str(r["metric"]) for r in rows))
    return {
        "test": o["test"],
        "correction": o["correction"],
        "alpha": o["alpha"],
        "comparisons": len(rows),
        "tested": tested,
        "not_tested": {
            m: NOT_TESTED["catalogue" if catalogue_level(m) else "other"] for m in tests.skipped
        },
        "letters": dict(tests.letters),
        "marks": marks,
        "rows": rows,
    }
