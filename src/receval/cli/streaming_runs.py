"""``--memory-budget`` of ``receval evaluate`` and ``receval compare``: each predictions file
streamed with the truth file (:mod:`receval.streaming`, docs/streaming.md), within the budget
given or, unset, when the files would not fit in memory. With ``--report``, one more pass
over each predictions file counts what the report reads from the lists themselves (each
item's rows, the deepest list: :func:`receval.streaming.facts.list_facts`)."""

from __future__ import annotations

from typing import Any

from receval.cli.common import _Runs, _semantics, cut_at_depth
from receval.exceptions import ReceValError


def streamed_unasked(params: dict[str, Any], report: str | None) -> bool:
    """No ``--memory-budget``, but files that would not fit in memory (and nothing a budget
    refuses asked on the command line): streamed within the automatic budget.

    Example:
        >>> streamed_unasked({"truth": "/no/t.csv", "predictions": ("/no/p.csv",)}, None)
        False
    """
    if (
        params.get("no_header")
        or params.get("delimiter")
        or params.get("engine") not in (None, "numba")
        or params.get("train")
    ):
        return False
    from receval.streaming import would_not_fit

    return any(would_not_fit(str(params["truth"]), str(p)) for p in params["predictions"])


def evaluate_files_streaming(
    metrics: list[str],
    params: dict[str, Any],
    report: str | None = None,
    asked: list[str] | None = None,
) -> _Runs:
    """Each predictions file evaluated with the truth file by :func:`receval.evaluate` under
    ``params["memory_budget"]``; what a budget cannot take is refused in one line.

    With ``report``, ``metrics`` holds the report's curve cutoffs besides the ``asked``
    ones: each file's are cut at its deepest list and its most predicted items kept
    (:func:`receval.streaming.facts.list_facts`), as the in-memory path does from the whole table; ties across a
    cutoff are said for the asked cutoffs only.

    Example:
        >>> evaluate_files_streaming(["P@1"], {"no_header": True})
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: --memory-budget cannot take --no-header: the streamed files are read with their header and sniffed delimiter
    """  # noqa: E501
    import warnings

    import receval
    from receval import io
    from receval.exceptions import UndefinedMetricWarning
    from receval.io.wanted import parse_columns_flag
    from receval.streaming.budget import auto_budget, chunk_rows, parse_budget
    from receval.streaming.facts import list_facts

    for flag, given in (
        ("--no-header", params.get("no_header")),
        ("--delimiter", params.get("delimiter")),
    ):
        if given:
            raise ReceValError(
                f"--memory-budget cannot take {flag}: the streamed files are "
                "read with their header and sniffed delimiter"
            )
    kwargs = _semantics(params)
    kwargs.update(_inputs(metrics, params))
    columns = {
        "user_col": params["user_col"],
        "item_col": params["item_col"],
        "rating_col": params["rating_col"],
        "score_col": params["score_col"],
        "truth_columns": parse_columns_flag(params.get("truth_columns"), "truth"),
        "prediction_columns": parse_columns_flag(params.get("prediction_columns"), "predictions"),
    }
    extra = report is not None and asked is not None and set(asked) != set(metrics)
    if extra:
        kwargs["silence"] = sorted({*kwargs.get("silence", ()), "ties"})
    runs = _Runs({}, {"truth": str(params["truth"])}, {}, [])
    paths = list(params["predictions"])
    budget = params.get("memory_budget")
    rows = chunk_rows(auto_budget() if budget is None else parse_budget(budget))
    for name, path in zip(io.model_names(paths), paths, strict=True):
        these = metrics
        if report is not None:
            top, deepest = list_facts(str(params["truth"]), str(path), columns, chunk_rows=rows)
            runs.top_items[name] = top
            these = cut_at_depth(metrics, asked, deepest) if extra else metrics
        with warnings.catch_warnings():  # said once per model by _warn_undefined
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            runs.results[name] = receval.evaluate(
                str(params["truth"]),
                str(path),
                these,
                **kwargs,
                **columns,
                memory_budget=params.get("memory_budget"),
            )
        if extra and "ties" not in params.get("silence", ()):
            _asked_ties(runs.results[name], asked or [], metrics)
        runs.inputs[f"predictions: {name}"] = str(path)
    runs.strata = kwargs.get("strata")
    return runs


def _inputs(metrics: list[str], params: dict[str, Any]) -> dict[str, Any]:
    """The beyond-accuracy and training inputs as given (``receval.evaluate`` refuses them
    under a budget, in one line) and ``--strata`` (a file read with the truth's id type when
    the truth is Parquet; else its ids narrowed as a text file's are)."""
    from pathlib import Path

    from receval.beyond.names import parse_beyond
    from receval.cli.common import _beyond_kwargs, _read_strata

    out = _beyond_kwargs(params, [n for n in metrics if parse_beyond(n) is not None])
    if params.get("train") or params.get("exclude_train"):
        out.update(train=params.get("train"), exclude_train=bool(params.get("exclude_train")))
    strata = params.get("strata")
    if strata and Path(strata).exists():
        import pyarrow as pa
        import pyarrow.dataset as ds

        try:
            kind = (
                ds.dataset(params["truth"], format="parquet").schema.field(params["user_col"]).type
            )
        except (pa.ArrowException, KeyError, OSError):  # a text file: ids as the file reads
            kind = pa.int64()
        strata = _read_strata(strata, params, text_ids=not pa.types.is_integer(kind))
    if params.get("strata"):
        out["strata"] = strata
    return out


def _asked_ties(result: Any, asked: list[str], metrics: list[str]) -> None:
    """The ties-at-cutoff warning for the asked cutoffs only (the curve cutoffs were
    silenced), as the in-memory path gives it."""
    from receval import checks
    from receval.beyond.names import parse_beyond
    from receval.measures.spec import parse_metrics

    accuracy = [n for n in asked if parse_beyond(n) is None]
    cutoffs = {s.k for s in parse_metrics(accuracy)} if accuracy else set()
    tied = result.counts["ties_at_cutoff"]
    checks.check_ties({k: n for k, n in tied.items() if k in cutoffs}, result.options["ties"])
