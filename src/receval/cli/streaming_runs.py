"""``--memory-budget`` of ``receval evaluate`` and ``receval compare``: each predictions file
streamed with the truth file (:mod:`receval.streaming`, docs/streaming.md), within the budget
given or, unset, when the files would not fit in memory."""

from __future__ import annotations

from typing import Any

from receval.cli.common import _Runs, _semantics
from receval.exceptions import ReceValError


def streamed_unasked(params: dict[str, Any], report: str | None) -> bool:
    """No ``--memory-budget``, but files that would not fit in memory (and nothing a budget
    refuses asked on the command line): streamed within the automatic budget.

    Example:
        >>> streamed_unasked({"truth": "/no/t.csv", "predictions": ("/no/p.csv",)}, None)
        False
    """
    if (
        report
        or params.get("no_header")
        or params.get("delimiter")
        or params.get("engine") not in (None, "numba")
        or params.get("train")
    ):
        return False
    from receval.streaming import would_not_fit

    return any(would_not_fit(str(params["truth"]), str(p)) for p in params["predictions"])


def evaluate_files_streaming(
    metrics: list[str], params: dict[str, Any], report: str | None = None
) -> _Runs:
    """Each predictions file evaluated with the truth file by :func:`receval.evaluate` under
    ``params["memory_budget"]``; what a budget cannot take is refused in one line.

    Example:
        >>> evaluate_files_streaming(["P@1"], {"no_header": True})
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: --memory-budget cannot take --no-header: the streamed files are read with their header and sniffed delimiter, and the report reads every list at once
    """  # noqa: E501
    import warnings

    import receval
    from receval import io
    from receval.exceptions import UndefinedMetricWarning
    from receval.io.wanted import parse_columns_flag

    for flag, given in (
        ("--report", report),
        ("--no-header", params.get("no_header")),
        ("--delimiter", params.get("delimiter")),
    ):
        if given:
            raise ReceValError(
                f"--memory-budget cannot take {flag}: the streamed files are "
                "read with their header and sniffed delimiter, and the report "
                "reads every list at once"
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
    runs = _Runs({}, {"truth": str(params["truth"])}, {}, [])
    paths = list(params["predictions"])
    for name, path in zip(io.model_names(paths), paths, strict=True):
        with warnings.catch_warnings():  # said once per model by _warn_undefined
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            runs.results[name] = receval.evaluate(
                str(params["truth"]),
                str(path),
                metrics,
                **kwargs,
                **columns,
                memory_budget=params.get("memory_budget"),
            )
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
