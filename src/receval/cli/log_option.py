"""``--log mlflow|dvc|json`` and ``--log-dir``, shared by evaluate, compare and check: the
results go to a tracker through :mod:`receval.tracking`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import click

from receval.cli.common import err_console
from receval.result import Result


def _log_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--log`` and ``--log-dir``."""
    from receval.tracking import DEFAULT_FOLDER, TARGETS

    f = click.option("--log-dir", metavar="DIR", default=None,
                     help=f"Folder of --log dvc|json (default: {DEFAULT_FOLDER}).")(f)
    return click.option(
        "--log", "log", type=click.Choice(TARGETS), default=None,
        help="Also log the metrics (keys such as ndcg_at_10), the options, the per-user "
             "values (Parquet) and the counts (JSON): mlflow (the run MLflow is set to, "
             "or a new one), dvc (metrics.json nested per model) or json (receval.json).")(f)


def _check_log(params: dict[str, Any], inputs: Iterable[str | Path] = ()) -> None:
    """Before any work: --log-dir only with dvc|json, a folder that is not a file, none of the
    files it would write an input (``inputs``, and every file a parameter names), and mlflow
    importable (its install hint now, not after the evaluation)."""
    from receval.exceptions import ReceValError
    from receval.io.output import check_outputs
    from receval.tracking import MLFLOW_HINT, log_paths

    target, folder = params.get("log"), params.get("log_dir")
    if folder is not None and target != "dvc" and target != "json":
        raise ReceValError("--log-dir is for --log dvc|json (MLflow logs where "
                           "MLFLOW_TRACKING_URI points)")
    if folder is not None and Path(folder).exists() and not Path(folder).is_dir():
        raise ReceValError(f"--log-dir {folder}: a file, not a folder")
    if target in ("dvc", "json"):
        named = [v for value in params.values()
                 for v in (value if isinstance(value, tuple | list) else (value,))
                 if isinstance(v, str | Path) and v and Path(v).exists()]
        check_outputs({f"--log {target} ({path.name})": (path, ())
                       for path in log_paths(target, folder)}, [*inputs, *named])
    if target == "mlflow":
        import importlib.util

        if importlib.util.find_spec("mlflow") is None:
            raise ReceValError(MLFLOW_HINT)


def _log_runs(params: dict[str, Any], models: Mapping[str, Result],
              comparison: Any = None, *, warnings: Iterable[Any] | None = None) -> None:
    """Log ``models`` (and the comparison) when ``--log`` was given, and say where;
    ``warnings``: those the command printed (the log's audit record carries them)."""
    from rich.text import Text

    from receval.io.terminal import safe_text
    from receval.tracking import log_models, log_result

    target = params.get("log")
    if target is None:
        return
    folder = params.get("log_dir")
    if comparison is None and len(models) == 1:
        name, result = next(iter(models.items()))
        where = log_result(result, target, folder, name=name, warnings=warnings)
    else:
        where = log_models(models, target, folder, comparison, warnings=warnings)
    said = f"logged to MLflow run {where}" if target == "mlflow" else f"log written to {where}"
    err_console.print(Text(safe_text(said)), highlight=False, soft_wrap=True)
