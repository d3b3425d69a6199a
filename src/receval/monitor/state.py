"""The monitor's state file: what a later run needs so it never rereads history.

One Parquet file, written atomically (:func:`receval.io.output.atomic_output`). Its rows are the
pending impressions (lists whose attribution period is not over), the feedback that can still
judge them, and the per-list values of the lists already closed in windows still open (the
bootstrap resamples them); a ``kind`` column tells them apart. Its schema metadata holds, as
JSON, the parameters of the run (a later run must ask the same), the largest event time seen,
each open window's exact sums (:meth:`receval.accumulate.Accumulator.to_dict`) and counts, and
the final rows of the closed windows (floats as hexadecimal text: exact).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from receval.accumulate import Accumulator
from receval.exceptions import ReceValError
from receval.io.output import atomic_output

FORMAT = "receval.monitor.state"
VERSION = 1
META_KEY = b"receval.monitor"
PENDING, FEEDBACK, VALUES = 0, 1, 2


@dataclass
class Bucket:
    """One (window, variant): the closed lists' exact sums, their per-list values (``user``,
    ``served`` and one column per metric) and the counts of closed lists."""

    sums: Accumulator
    values: pd.DataFrame
    evaluated: int = 0
    unjudged: int = 0


@dataclass
class State:
    """Everything a run carries to the next (see the module text).

    Example:
        >>> s = State(params={"window": "7D"})
        >>> s.max_time is None and s.pending.empty
        True
    """

    params: dict[str, Any]
    max_time: int | None = None
    pending: pd.DataFrame = field(default_factory=pd.DataFrame)
    feedback: pd.DataFrame = field(default_factory=pd.DataFrame)
    buckets: dict[tuple[int, Any], Bucket] = field(default_factory=dict)
    closed_rows: list[dict[str, Any]] = field(default_factory=list)
    closed_comparisons: list[dict[str, Any]] = field(default_factory=list)
    late: dict[str, int] = field(default_factory=lambda: {"impressions": 0, "feedback": 0})


def hex_floats(row: dict[str, Any]) -> dict[str, Any]:
    """Floats as exact hexadecimal text (``float.hex``), for JSON.

    Example:
        >>> hex_floats({"a": 0.1, "b": 2}) == {"a": {"hex": (0.1).hex()}, "b": 2}
        True
    """
    return {k: {"hex": float(v).hex()} if isinstance(v, float | np.floating) else v
            for k, v in row.items()}


def unhex_floats(row: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`hex_floats`.

    Example:
        >>> unhex_floats(hex_floats({"a": math.nan}))["a"]
        nan
    """
    return {k: float.fromhex(v["hex"]) if isinstance(v, dict) and "hex" in v else v
            for k, v in row.items()}


def _array(values: pd.Series | None, n: int, kind: pa.DataType | None = None) -> pa.Array:
    if values is None:
        return pa.nulls(n, kind or pa.null())
    return pa.array(values.reset_index(drop=True), from_pandas=True)


def _column(parts: list[tuple[pd.Series | None, int]], name: str) -> pa.ChunkedArray:
    """One column of the state table from its parts (``None``: nulls)."""
    arrays = [_array(s, n) for s, n in parts if s is not None]
    kind = arrays[0].type if arrays else pa.null()
    for a in arrays:
        if a.type != kind and a.type != pa.null():
            if kind == pa.null():
                kind = a.type
            elif pa.types.is_integer(a.type) and pa.types.is_integer(kind):
                kind = pa.int64()
            else:
                raise ReceValError(f"monitor state: column {name!r} mixes {kind} and {a.type} "
                                   "(ids of one type in impressions and feedback)")
    return pa.chunked_array([_array(s, n, kind).cast(kind) for s, n in parts], type=kind)


def write_state(state: State, path: str | Path, metric_names: list[str]) -> None:
    """Write ``state`` to ``path`` (Parquet) atomically.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "state.parquet"
        >>> write_state(State(params={"metric_names": []}, max_time=5), p, [])
        >>> read_state(p).max_time
        5
    """
    values = [(key, b.values) for key, b in state.buckets.items() if len(b.values)]
    n_p, n_f = len(state.pending), len(state.feedback)
    n_v = sum(len(v) for _, v in values)
    parts_kind = np.concatenate([np.full(n_p, PENDING, np.int8), np.full(n_f, FEEDBACK, np.int8),
                                 np.full(n_v, VALUES, np.int8)])

    def col(frame: pd.DataFrame, name: str) -> pd.Series | None:
        return frame[name] if name in frame.columns and len(frame) else None

    value_frames = [v for _, v in values]
    columns: dict[str, Any] = {"kind": pa.array(parts_kind)}
    columns["user"] = _column([(col(state.pending, "user"), n_p),
                               (col(state.feedback, "user"), n_f),
                               *[(col(v, "user"), len(v)) for v in value_frames]], "user")
    columns["item"] = _column([(col(state.pending, "item"), n_p),
                               (col(state.feedback, "item"), n_f), (None, n_v)], "item")
    columns["time"] = _column([(col(state.pending, "served"), n_p),
                               (col(state.feedback, "at"), n_f),
                               *[(col(v, "served"), len(v)) for v in value_frames]], "time")
    columns["x"] = _column([(col(state.pending, "order"), n_p),
                            (col(state.feedback, "value"), n_f), (None, n_v)], "x")
    variants = [pd.Series([key[1]] * len(v)) for key, v in values]
    columns["variant"] = _column([(col(state.pending, "variant"), n_p), (None, n_f),
                                  *[(s, len(s)) for s in variants]], "variant")
    for j, name in enumerate(metric_names):
        columns[f"m{j}"] = _column([(None, n_p), (None, n_f),
                                    *[(col(v, name), len(v)) for v in value_frames]], name)
    meta = {
        "format": FORMAT, "version": VERSION, "params": state.params, "max_time": state.max_time,
        "late": state.late,
        "buckets": [{"window": key[0], "variant": key[1], "sums": b.sums.to_dict(),
                     "evaluated": b.evaluated, "unjudged": b.unjudged}
                    for key, b in state.buckets.items()],
        "closed_rows": [hex_floats(r) for r in state.closed_rows],
        "closed_comparisons": [hex_floats(r) for r in state.closed_comparisons],
    }
    table = pa.table(columns)
    table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    with atomic_output(path, "state") as tmp:
        pq.write_table(table, tmp)


def read_state(path: str | Path) -> State:
    """The state written by :func:`write_state` (see its example)."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as err:
        raise ReceValError(f"state {str(path)!r} is not a receval monitor state file: "
                           f"{str(err).splitlines()[0] if str(err) else type(err).__name__}"
                           ) from None
    raw = (table.schema.metadata or {}).get(META_KEY)
    meta = json.loads(raw) if raw else {}
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ReceValError(f"state {str(path)!r} is not a receval monitor state file "
                           f"(format {FORMAT!r}, version {VERSION})")
    kind = table.column("kind").to_numpy()
    params = meta["params"]
    names = params["metric_names"]

    def rows(k: int, cols: dict[str, str]) -> pd.DataFrame:
        sub = table.filter(pa.array(kind == k))
        return pd.DataFrame({new: sub.column(old).to_pandas() for old, new in cols.items()})

    pending_cols = {"user": "user", "item": "item", "x": "order", "time": "served"}
    if params.get("variant_col") is not None:
        pending_cols["variant"] = "variant"
    pending = rows(PENDING, pending_cols)
    feedback = rows(FEEDBACK, {"user": "user", "item": "item", "x": "value", "time": "at"})
    value_cols = {"user": "user", "time": "served", "variant": "variant",
                  **{f"m{j}": name for j, name in enumerate(names)}}
    values = rows(VALUES, value_cols)
    buckets: dict[tuple[int, Any], Bucket] = {}
    for b in meta["buckets"]:
        key = (int(b["window"]), b["variant"])
        mine = values[_same(values["variant"], b["variant"])] if len(values) else values
        if len(mine):
            mine = mine[_window_of(mine["served"], params) == key[0]]
        buckets[key] = Bucket(Accumulator.from_dict(b["sums"]),
                              mine.drop(columns="variant").reset_index(drop=True),
                              int(b["evaluated"]), int(b["unjudged"]))
    return State(params=params, max_time=meta["max_time"], pending=pending, feedback=feedback,
                 buckets=buckets, closed_rows=[unhex_floats(r) for r in meta["closed_rows"]],
                 closed_comparisons=[unhex_floats(r) for r in meta["closed_comparisons"]],
                 late={k: int(v) for k, v in meta["late"].items()})


def _same(series: pd.Series, value: Any) -> np.ndarray:
    if value is None:
        return series.isna().to_numpy()
    return (series == value).to_numpy()


def _window_of(served: pd.Series, params: dict[str, Any]) -> np.ndarray:
    t = served.to_numpy(dtype=np.int64)
    origin, width = int(params["origin"]), int(params["step"])
    return origin + np.floor_divide(t - origin, width) * width


def check_params(state: State, params: dict[str, Any], path: str | Path) -> None:
    """A state continues only the run that made it: the same metrics, windows, options...

    Example:
        >>> check_params(State(params={"window": "7D"}), {"window": "1D"}, "s.parquet")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: state 's.parquet' was made with window='7D', this run asks window='1D'; start a new state file
    """  # noqa: E501
    for key in [*params, *(k for k in state.params if k not in params)]:
        old, new = state.params.get(key), params.get(key)
        if json.dumps(old, sort_keys=True) != json.dumps(new, sort_keys=True):
            raise ReceValError(f"state {str(path)!r} was made with {key}={old!r}, this run asks "
                               f"{key}={new!r}; start a new state file")


def is_nan(value: Any) -> bool:
    """``value`` is a float NaN.

    Example:
        >>> is_nan(math.nan), is_nan("x")
        (True, False)
    """
    return isinstance(value, float) and math.isnan(value)
