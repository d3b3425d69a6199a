"""Log an evaluation or a comparison to the tools a data scientist already uses: MLflow, DVC, or
a plain JSON folder (:meth:`receval.result.Result.log`, :meth:`receval.compare.Comparison.log`,
``--log mlflow|dvc|json`` on the command line).

Every target gets the same five things:

- the metrics under stable keys (:func:`metric_key`: ``nDCG@10`` -> ``ndcg_at_10``, which MLflow
  accepts), per model; a comparison adds, per (model, baseline) pair and metric, the difference
  and its interval and p-values;
- the options in effect and the receval version, as parameters;
- the per-user values, as a Parquet file (``per_user.parquet``; a ``model`` column first when
  there are several models);
- the input audit (``Result.counts``), as JSON (``counts.json``);
- the audit record every output of the run carries (:func:`receval.report.audit.audit_record`:
  each model's audit lines and counts, the run's warnings, the family of comparisons tested),
  as JSON (``audit.json``; ``receval.json``'s ``audit``).

MLflow (``pip install 'receval[mlflow]'``) logs into the active run or starts one, in the
tracking store MLflow is set to (``MLFLOW_TRACKING_URI``, :func:`mlflow.set_tracking_uri`; with
none set, where ``mlflow-skinny`` cannot open MLflow's SQLite default: ``./mlruns``, said in a
warning, :func:`choose_store`); its failures are one line naming what to set (:func:`mlflow_error`);
the files are artifacts under ``receval/``. DVC gets ``metrics.json`` (numbers nested per model,
what ``metrics:`` in ``dvc.yaml`` lists and ``dvc metrics show`` reads) beside ``counts.json``,
``audit.json`` and ``per_user.parquet`` in a folder; ``json`` writes ``receval.json`` (metrics,
parameters, counts, warnings and the audit in one file) and ``per_user.parquet``. Files are
written atomically.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from receval._version import __version__
from receval.exceptions import ReceValError
from receval.io.output import atomic_output
from receval.result import VIEWS, Result
from receval.scalars import json_ready

#: the targets of :func:`log_result` and :func:`log_comparison`
TARGETS = ("mlflow", "dvc", "json")

#: where ``dvc`` and ``json`` write when no folder is given
DEFAULT_FOLDER = "receval-log"

#: the statistics of a comparison row that are logged, per (pair, metric)
COMPARISON_STATS = ("delta", "ci_low", "ci_high", "p_value", "p_adjusted")

#: what MLflow accepts in a metric or parameter key
MLFLOW_KEY = re.compile(r"^[A-Za-z0-9_\-. /]+$")

_OTHER = re.compile(r"[^a-z0-9_.\-]")
_SEGMENT = re.compile(r"[^A-Za-z0-9_.\-]")


def metric_key(name: str) -> str:
    """The stable key of a metric name: ``@`` becomes ``_at_``, letters become lower case, and
    any other character outside ``a-z 0-9 _ . -`` becomes ``_``.

    The key is made from the name as asked (``MAP@10`` -> ``map_at_10``, ``AP@10`` ->
    ``ap_at_10``), so the same request always gives the same key; two names of one request
    that would share a key are refused by :func:`metric_keys`.

    Example:
        >>> [metric_key(n) for n in ("nDCG@10", "P@10", "F0.5@10", "RBP@0.8", "MRR", "R-prec")]
        ['ndcg_at_10', 'p_at_10', 'f0.5_at_10', 'rbp_at_0.8', 'mrr', 'r-prec']
    """
    return _OTHER.sub("_", name.replace("@", "_at_").lower())


def metric_keys(names: Iterable[str]) -> dict[str, str]:
    """``{name: metric_key(name)}``; two names with one key are refused.

    Example:
        >>> metric_keys(["P@10", "nDCG@10"])
        {'P@10': 'p_at_10', 'nDCG@10': 'ndcg_at_10'}
        >>> metric_keys(["P@10", "p@10"])
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: metrics 'P@10' and 'p@10' share the key 'p_at_10'; \
ask for one of them
    """
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for name in names:
        key = metric_key(name)
        if key in seen and seen[key] != name:
            raise ReceValError(f"metrics {seen[key]!r} and {name!r} share the key {key!r}; "
                               "ask for one of them")
        seen[key] = name
        out[name] = key
    return out


def _segment(text: str) -> str:
    """A model or group name as one segment of a key (``/`` separates the segments)."""
    return _SEGMENT.sub("_", str(text)) or "_"


@dataclass
class Record:
    """What is logged, whatever the target: flat metric keys (MLflow), the same numbers nested
    per model (DVC, JSON), parameters, per-user values, counts and the audit record
    (:func:`receval.report.audit.audit_record`)."""

    metrics: dict[str, float]
    nested: dict[str, Any]
    params: dict[str, str]
    per_user: pd.DataFrame
    counts: dict[str, Any]
    audit: dict[str, Any] = field(default_factory=dict)


def record(models: Mapping[str, Result], comparison: Any = None, *,
           nest: bool = True, warnings: Iterable[Any] | None = None) -> Record:
    """The :class:`Record` of ``models`` (name -> Result) and, optionally, the comparison
    between them. The flat keys (MLflow) of a model alone are its metric keys, those of
    several models ``model/metric_key``; the nested numbers (DVC, JSON) are under each model's
    name, unless ``nest=False`` (one model given without a name). The audit is the one record
    every output carries (:func:`receval.report.audit.audit_record`): ``warnings`` are those
    the command printed (default: the results' own, and the comparison's), and the family of
    tests is the comparison's when one is given.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["P@1"])
        >>> rec = record({"svd": r})
        >>> rec.metrics, rec.nested, rec.params["receval_version"] == receval.__version__
        ({'p_at_1': 1.0}, {'svd': {'p_at_1': 1.0}}, True)
        >>> record({"a": r, "b": r}).metrics
        {'a/p_at_1': 1.0, 'b/p_at_1': 1.0}
        >>> list(rec.audit), record({"a": r, "b": r}).audit["tests"]["comparisons"]
        (['models', 'warnings', 'tests'], 1)
    """
    from receval.report.audit import audit_record

    metrics: dict[str, float] = {}
    nested: dict[str, Any] = {}
    owners: dict[str, str] = {}

    def put(key: str, value: Any, owner: str) -> None:
        if key in owners:
            raise ReceValError(f"{owner} and {owners[key]} share the logged key {key!r}; "
                               "rename a model or a group")
        owners[key] = owner
        number = float(value)
        if math.isfinite(number):  # why a value is not a number: counts.json, summary_null
            metrics[key] = number

    # one model alone in a run: its keys as they are (the run is the model)
    several = len(models) > 1 or comparison is not None
    for name, result in models.items():
        keys = metric_keys(result.summary)
        prefix = f"{_segment(name)}/" if several else ""
        inner = {keys[m]: _finite(v) for m, v in result.summary.items()}
        if nest:
            nested[name] = inner
        else:
            nested.update(inner)
        for m, v in result.summary.items():
            put(prefix + keys[m], v, f"model {name!r} metric {m!r}")
    if comparison is not None:
        nested["comparison"] = _comparison_metrics(comparison, put)
    params = {"receval_version": __version__, **_params(models)}
    if comparison is not None:
        params.update({f"compare.{k}": _text(v) for k, v in comparison.options.items()})
    if warnings is None and comparison is not None:  # the models' and the comparison's own
        warnings = [*(w for r in models.values() for w in r.warnings),
                    *getattr(comparison, "warnings", ())]
    audit = audit_record(models, warnings=warnings, comparison=comparison)
    return Record(metrics=metrics, nested=nested, params=params,
                  per_user=_per_user(models), counts=_counts(models, nest), audit=audit)


def _comparison_metrics(comparison: Any, put: Any) -> dict[str, Any]:
    """``{"model_vs_baseline": {metric_key: {stat: value}}}`` (with groups, one level more:
    ``{group: {metric_key: ...}}`` under the pair), each number also ``put`` flat."""
    out: dict[str, Any] = {}
    grouped = "group" in comparison.table.columns
    for row in comparison.table.to_dict(orient="records"):
        pair = f"{row['model']}_vs_{row['baseline']}"
        key = metric_key(str(row["metric"]))
        group = str(row["group"]) if grouped else None
        place = out.setdefault(pair, {})
        path = [_segment(pair)]
        if group is not None and group != "(all)":
            place = place.setdefault("groups", {}).setdefault(group, {})
            path += ["groups", _segment(group)]
        place[key] = {s: _finite(row[s]) for s in COMPARISON_STATS}
        for stat in COMPARISON_STATS:
            put("/".join([*path, key, stat]), row[stat],
                f"{pair} {group or ''} {row['metric']!r} {stat}".replace("  ", " "))
    return out


def _params(models: Mapping[str, Result]) -> dict[str, str]:
    """The options as text: those every model shares under their own name, the others under
    ``model/option``."""
    flat = {name: {k: _text(v) for k, v in r.options.items() if k not in ("version",)}
            for name, r in models.items()}
    keys = list(dict.fromkeys(k for options in flat.values() for k in options))
    out: dict[str, str] = {}
    for key in keys:
        values = {name: options.get(key, "") for name, options in flat.items()}
        if len(set(values.values())) == 1:
            out[key] = next(iter(values.values()))
        else:
            out.update({f"{_segment(name)}/{key}": v for name, v in values.items()})
    return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(json_ready(value), sort_keys=True)


def _per_user(models: Mapping[str, Result]) -> pd.DataFrame:
    frames = [r.per_user.assign(model=name) for name, r in models.items()]
    if not frames:
        return pd.DataFrame({"user": []})
    if len(frames) == 1:
        return frames[0].drop(columns="model")
    frame = pd.concat(frames, ignore_index=True)
    return frame[["model", *[c for c in frame.columns if c != "model"]]]


def _counts(models: Mapping[str, Result], nest: bool) -> dict[str, Any]:
    if not nest:
        return json_ready(next(iter(models.values())).counts)
    return {name: json_ready(r.counts) for name, r in models.items()}


def _finite(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None




# --- the targets ------------------------------------------------------------------------------


def log_result(result: Result, to: str, path: str | Path | None = None, *,
               name: str | None = None, warnings: Iterable[Any] | None = None) -> str:
    """Log one :class:`~receval.result.Result` (see :func:`log`) under the keys
    :func:`metric_key` gives; ``name`` nests its numbers under the model's name in DVC's and
    JSON's files (``{name: {"ndcg_at_10": ...}}``); ``warnings``: those the command printed
    (default: ``result.warnings``).

    Example:
        >>> import receval, tempfile, json, pathlib
        >>> r = receval.evaluate({"user": [1], "item": [1]},
        ...     {"user": [1], "item": [1], "score": [1.0]}, ["nDCG@10"])
        >>> folder = log_result(r, "dvc", tempfile.mkdtemp())
        >>> json.loads((pathlib.Path(folder) / "metrics.json").read_text())
        {'ndcg_at_10': 1.0}
    """
    models = {name or "model": result}
    return log(record(models, nest=name is not None, warnings=warnings), to, path)


def log_models(models: Mapping[str, Result], to: str, path: str | Path | None = None,
               comparison: Any = None, *, warnings: Iterable[Any] | None = None) -> str:
    """Log several models (name -> Result), each nested under its name, and the comparison
    between them when given (see :func:`log`); ``warnings``: those the command printed
    (default: the results' own).

    Example:
        >>> import receval, tempfile, json, pathlib
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> r = receval.evaluate(truth, a, ["P@1"])
        >>> folder = pathlib.Path(log_models({"a": r, "b": r}, "json", tempfile.mkdtemp()))
        >>> json.loads((folder / "receval.json").read_text())["metrics"]
        {'a': {'p_at_1': 0.5}, 'b': {'p_at_1': 0.5}}
    """
    return log(record(models, comparison, warnings=warnings), to, path)


def log_comparison(comparison: Any, to: str, path: str | Path | None = None) -> str:
    """Log a :class:`~receval.compare.Comparison`: each model's metrics and, per (model,
    baseline) pair, metric (and group), the difference, its interval and the p-values under
    ``model_vs_baseline/metric_key/delta`` (``.../ci_low``, ``ci_high``, ``p_value``,
    ``p_adjusted``).

    Example:
        >>> import receval, tempfile, json, pathlib
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> c = receval.compare(truth, {"a": a, "b": a}, ["P@1"])
        >>> folder = pathlib.Path(log_comparison(c, "dvc", tempfile.mkdtemp()))
        >>> json.loads((folder / "metrics.json").read_text())["comparison"]["b_vs_a"]["p_at_1"]
        {'delta': 0.0, 'ci_low': 0.0, 'ci_high': 0.0, 'p_value': 1.0, 'p_adjusted': 1.0}
    """
    return log_models(comparison.results, to, path, comparison)


def log(rec: Record, to: str, path: str | Path | None = None) -> str:
    """Write ``rec`` to ``to``: ``"mlflow"`` (returns the run id), ``"dvc"`` or ``"json"``
    (a folder, ``path`` or :data:`DEFAULT_FOLDER`; returns its path).

    Example:
        >>> log(record({}), "wandb")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: cannot log to 'wandb': choose mlflow, dvc or json
    """
    if to == "mlflow":
        return _to_mlflow(rec)
    if to not in TARGETS:
        raise ReceValError(f"cannot log to {to!r}: choose {', '.join(TARGETS[:-1])} or "
                           f"{TARGETS[-1]}")
    folder = Path(path if path is not None else DEFAULT_FOLDER)
    if folder.exists() and not folder.is_dir():
        raise ReceValError(f"log folder {str(folder)!r} is a file; name a folder")
    if to == "dvc":
        _write_json(folder / "metrics.json", rec.nested)
        _write_json(folder / "counts.json", rec.counts)
        _write_json(folder / "audit.json", rec.audit)
    else:
        _write_json(folder / "receval.json", {"version": __version__, "metrics": rec.nested,
                                              "params": rec.params, "counts": rec.counts,
                                              "warnings": rec.audit.get("warnings", []),
                                              "audit": rec.audit})
    _write_parquet(folder / "per_user.parquet", rec.per_user)
    return str(folder)


#: the files ``--log dvc|json`` writes into its folder
LOG_FILES = {"dvc": ("metrics.json", "counts.json", "audit.json", "per_user.parquet"),
             "json": ("receval.json", "per_user.parquet")}


def log_paths(to: str, path: str | Path | None = None) -> list[Path]:
    """The files :func:`log` would write for ``to`` (none for MLflow), so a command can refuse
    a folder where one of them is an input before any work.

    Example:
        >>> [p.name for p in log_paths("json", "logs")]
        ['receval.json', 'per_user.parquet']
    """
    folder = Path(path if path is not None else DEFAULT_FOLDER)
    return [folder / name for name in LOG_FILES.get(to, ())]


def _write_json(path: Path, value: Any) -> None:
    with atomic_output(path, "log") as tmp:
        tmp.write_text(json.dumps(value, indent=2, allow_nan=False) + "\n", encoding="utf-8")


def _write_parquet(path: Path, frame: pd.DataFrame) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with atomic_output(path, "log") as tmp:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp)


#: said when mlflow is not installed
MLFLOW_HINT = "logging to MLflow needs mlflow: pip install 'receval[mlflow]'"


#: the store receval logs to when MLflow's default cannot be opened (see :func:`choose_store`)
FALLBACK_STORE = "mlruns"


def choose_store(environ: Mapping[str, str], default_uri: str, has_sqlalchemy: bool) -> str | None:
    """The tracking URI receval sets, or None to keep MLflow's: only when ``MLFLOW_TRACKING_URI``
    is not set and MLflow's default store is SQLite, which ``mlflow-skinny`` (the extra
    ``receval[mlflow]`` installs) cannot open without SQLAlchemy: then the file store
    ``./mlruns`` (with ``MLFLOW_ALLOW_FILE_STORE=true``, MLflow 3's opt-in for it).

    Example:
        >>> choose_store({}, "sqlite:///mlflow.db", has_sqlalchemy=False)
        './mlruns'
        >>> choose_store({}, "sqlite:///mlflow.db", has_sqlalchemy=True) is None
        True
        >>> choose_store({"MLFLOW_TRACKING_URI": "http://h:5000"}, "http://h:5000", False) is None
        True
    """
    if environ.get("MLFLOW_TRACKING_URI") or not default_uri.startswith("sqlite:"):
        return None
    return None if has_sqlalchemy else f"./{FALLBACK_STORE}"


def _set_store(mlflow: Any) -> None:
    """Choose the store when MLflow's default cannot be opened, and say so in one line."""
    import importlib.util
    import os
    import warnings

    if mlflow.active_run() is not None:
        return
    uri = choose_store(os.environ, str(mlflow.get_tracking_uri()),
                       importlib.util.find_spec("sqlalchemy") is not None)
    if uri is None:
        return
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow.set_tracking_uri(uri)
    warnings.warn(f"MLflow: logging to the file store {uri} (MLflow's default, SQLite, needs the "
                  "full mlflow package); set MLFLOW_TRACKING_URI to choose the store",
                  UserWarning, stacklevel=4)


def mlflow_error(err: BaseException, environ: Mapping[str, str]) -> ReceValError:
    """An MLflow failure as one line naming what to set.

    Example:
        >>> mlflow_error(Exception("Changing param values is not allowed. Param with key='x'"),
        ...              {"MLFLOW_RUN_ID": "abc"})  # doctest: +ELLIPSIS
        ReceValError("MLflow: run 'abc' (MLFLOW_RUN_ID) already holds a parameter with another ...")
    """
    from receval.io.terminal import one_line

    text = one_line(str(err))
    uri = environ.get("MLFLOW_TRACKING_URI", "")
    if "Changing param values is not allowed" in text and environ.get("MLFLOW_RUN_ID"):
        return ReceValError(f"MLflow: run {environ['MLFLOW_RUN_ID']!r} (MLFLOW_RUN_ID) already "
                            "holds a parameter with another value (receval's options changed): "
                            "unset MLFLOW_RUN_ID to log to a new run")
    if "filesystem tracking backend" in text or "MLFLOW_ALLOW_FILE_STORE" in text:
        return ReceValError(f"MLflow refuses its file store {uri or './mlruns'!r} (maintenance "
                            "mode in MLflow 3): set MLFLOW_ALLOW_FILE_STORE=true, or set "
                            "MLFLOW_TRACKING_URI to a server (http://host:5000)")
    if uri.startswith(("http://", "https://")) and any(
            word in text for word in ("Max retries", "Connection", "connect", "API request")):
        return ReceValError(f"MLflow: cannot reach the tracking server {uri!r} "
                            "(MLFLOW_TRACKING_URI): start it, or set MLFLOW_TRACKING_URI to "
                            "one that answers")
    where = f" (MLFLOW_TRACKING_URI={uri!r})" if uri else ""
    return ReceValError(f"MLflow failed{where}: {text[:300]}; check MLFLOW_TRACKING_URI "
                        "and MLFLOW_RUN_ID")


def _to_mlflow(rec: Record) -> str:
    import os

    try:
        import mlflow
    except ImportError:
        raise ReceValError(MLFLOW_HINT) from None
    environ = dict(os.environ)  # as given (MLflow takes MLFLOW_RUN_ID out when it reads it)
    try:
        return _log_mlflow(mlflow, rec)
    except ReceValError:
        raise
    except Exception as err:  # MlflowException, requests' errors: one line naming the settings
        raise mlflow_error(err, environ) from err


def _log_mlflow(mlflow: Any, rec: Record) -> str:
    _set_store(mlflow)
    active = mlflow.active_run()
    run = active or mlflow.start_run(run_name="receval")
    status = "FAILED"  # a run this call started and could not fill says so
    try:
        mlflow.log_params(rec.params)
        # the run's warnings by code, where the run list shows them (audit.json: the texts)
        mlflow.set_tags({"receval.warnings": ", ".join(dict.fromkeys(
            w["code"] or "other" for w in rec.audit.get("warnings", []))) or "none"})
        if rec.metrics:
            mlflow.log_metrics(rec.metrics)
        with tempfile.TemporaryDirectory() as folder:
            _write_json(Path(folder) / "counts.json", rec.counts)
            _write_json(Path(folder) / "audit.json", rec.audit)
            _write_parquet(Path(folder) / "per_user.parquet", rec.per_user)
            mlflow.log_artifacts(folder, artifact_path="receval")
        status = "FINISHED"
    finally:
        if active is None:
            mlflow.end_run(status)
    return str(run.info.run_id)


VIEWS["log"] = log_result  # lends Result.log (receval.result cannot import this module)
