"""The audit of a run as every output carries it: one record, made here, that the terminal's
lines, the HTML report, the JSON summary (``--format json``) and the trackers (MLflow, DVC,
``--log json``: :mod:`receval.tracking`) all hold, so that no output drops a count, a warning
or a comparison that another shows.

The record (:func:`audit_record`) has the keys :data:`AUDIT_KEYS`:

- ``models``: per model, ``lines`` (the audit lines the terminal prints:
  :func:`receval.report.tables.audit_lines`) and ``counts`` (``Result.counts``, JSON-ready);
- ``warnings``: the run's warnings, each once, as ``{"code", "message"}`` (``code``: what
  ``silence=`` / ``--silence`` takes); by default the models' own
  (:attr:`receval.result.Result.warnings`), or those the command printed;
- ``tests``: the family of comparisons (:func:`receval.report.significance.family`: paired
  t-tests between every two models, Holm across every pair x metric that is a mean over
  users), with the keys :data:`TESTS_KEYS`, or ``None`` for one model or models that cannot
  be paired.
"""

from __future__ import annotations

import math
import warnings as _warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from receval.beyond.names import catalogue_level
from receval.result import Result

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
    from receval.report.tables import audit_lines

    given = dict(models)
    said = (
        warnings
        if warnings is not None
        else (w for r in given.values() for w in getattr(r, "warnings", ()))
    )
    return {
        "models": {
            name: {"lines": audit_lines(r), "counts": _plain(r.counts)} for name, r in given.items()
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
        {k: _plain(v) for k, v in row.items()}
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
        {k: _plain(v) for k, v in row.items()}
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


def _plain(value: Any) -> Any:
    """JSON-ready: numpy scalars as Python numbers, non-finite floats as ``None``, keys as
    text."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
