"""Turn a DataFrame, an Arrow table or a file into the three columns receval works on.

Whatever comes in (pandas, polars, pyarrow, a CSV or Parquet path), what comes out is a
:class:`Columns`: user ids, item ids and one value column (rating or score), each a numpy
array (numbers) or a pyarrow array (strings), never more columns than needed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa

from receval.exceptions import ReceValError

IdArray: TypeAlias = np.ndarray | pa.Array


@dataclass
class Columns:
    """One side of the evaluation (truth or predictions) as plain arrays.

    ``values`` is ``None`` when the value column is absent and optional (implicit truth).
    """

    side: str
    users: IdArray
    items: IdArray
    values: np.ndarray | None

    def __len__(self) -> int:
        return len(self.users)


def read_columns(
    source: Any,
    *,
    side: str,
    user_col: str,
    item_col: str,
    value_col: str | None,
    value_required: bool,
    fallback_rank_col: str | None = None,
) -> Columns:
    """Read the user, item and value columns of ``source``.

    ``source`` is a pandas or polars DataFrame, a pyarrow Table or RecordBatch, a dict of
    arrays, or a path to a CSV/TSV/Parquet file. When ``value_col`` is missing and
    ``fallback_rank_col`` is present, the score is ``-rank`` (rank 1 scores highest).

    Example:
        >>> import pandas as pd
        >>> cols = read_columns(pd.DataFrame({"user": [1], "item": [2], "score": [0.5]}),
        ...     side="predictions", user_col="user", item_col="item", value_col="score",
        ...     value_required=True)
        >>> cols.values.tolist()
        [0.5]
    """
    table = _as_table(source, side)
    names = _column_names(table)
    wanted = [user_col, item_col]
    missing = [c for c in wanted if c not in names]
    value_name = value_col
    negate = False
    if value_col is not None and value_col not in names:
        if fallback_rank_col is not None and fallback_rank_col in names:
            value_name, negate = fallback_rank_col, True
        elif value_required:
            missing.append(value_col)
        else:
            value_name = None
    if missing:
        raise ReceValError(
            f"{side} has no column {', '.join(map(repr, missing))}; "
            f"its columns are: {', '.join(map(str, names)) or '(none)'}"
        )
    if _n_rows(table) == 0:
        raise ReceValError(f"{side} is empty (no rows)")
    users = _id_column(table, user_col, side)
    items = _id_column(table, item_col, side)
    values = None
    if value_name is not None:
        values = _value_column(table, value_name, side)
        if negate:
            values = -values
    return Columns(side=side, users=users, items=items, values=values)


# --- sources ---------------------------------------------------------------------------------


def _as_table(source: Any, side: str) -> Any:
    """Paths become Arrow tables; DataFrames and tables pass through."""
    if isinstance(source, str | os.PathLike):
        return read_file(Path(source), side)
    if isinstance(source, dict):
        try:
            return pa.table(source)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as err:
            raise ReceValError(f"{side}: cannot read the dict as columns: {err}") from None
    if isinstance(source, pa.RecordBatch):
        return pa.Table.from_batches([source])
    module = type(source).__module__.split(".")[0]
    if module == "polars" and type(source).__name__ == "LazyFrame":
        return source.collect()
    if module in {"pandas", "polars", "pyarrow"}:
        return source
    raise TypeError(
        f"{side} must be a pandas/polars DataFrame, a pyarrow Table, a dict of arrays or a "
        f"path to a CSV/Parquet file; got {type(source).__name__}"
    )


def read_file(path: Path, side: str) -> pa.Table:
    """Read a CSV/TSV (delimiter from the extension or sniffed) or Parquet file.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
        >>> _ = p.write_text("user,item\\nu1,i1\\n")
        >>> read_file(p, "truth").num_rows
        1
    """
    if not path.exists():
        raise ReceValError(f"{side} file not found: {path}")
    if path.is_dir() or path.stat().st_size == 0:
        raise ReceValError(f"{side} file is empty: {path}")
    suffixes = [s.lower() for s in path.suffixes]
    try:
        if ".parquet" in suffixes or ".pq" in suffixes:
            import pyarrow.parquet as pq

            return pq.read_table(path)
        import pyarrow.csv as pacsv

        delimiter = "\t" if ".tsv" in suffixes else _sniff_delimiter(path)
        return pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter=delimiter))
    except (pa.ArrowInvalid, OSError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ReceValError(f"cannot read {side} file {path}: {first}") from None


def _sniff_delimiter(path: Path) -> str:
    import gzip

    opener = gzip.open if path.suffix.lower() == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        header = fh.readline()
    counts = {d: header.count(d) for d in (",", "\t", ";", "|")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def _column_names(table: Any) -> list[str]:
    if isinstance(table, pa.Table):
        return list(table.column_names)
    return [str(c) for c in table.columns]


def _n_rows(table: Any) -> int:
    if isinstance(table, pa.Table):
        return int(table.num_rows)
    return int(table.shape[0])


# --- columns ---------------------------------------------------------------------------------


def _raw_column(table: Any, name: str) -> np.ndarray | pa.Array:
    """A column as numpy (numbers, bools) or as a pyarrow array (anything else)."""
    if isinstance(table, pa.Table):
        chunked = table.column(name)
        arr = chunked.combine_chunks() if chunked.num_chunks != 1 else chunked.chunk(0)
        return _arrow_to_numpy_if_numeric(arr)
    module = type(table).__module__.split(".")[0]
    series = table[name]
    if module == "pandas":
        kind = getattr(series.dtype, "kind", "O")
        if kind in "iufb" and series.dtype != object:
            # a numpy float column reads as is, NaN included (no scan of 10^8 values); only
            # pandas' nullable floats need their missing values turned into NaN
            if kind == "f" and not isinstance(series.dtype, np.dtype) and series.hasnans:
                return series.to_numpy(dtype=np.float64)
            try:
                return series.to_numpy()
            except ValueError:  # nullable integer with missing values
                return series.to_numpy(dtype=np.float64, na_value=np.nan)
        arr = pa.array(series, from_pandas=True)
        # a pandas 3 ``str`` column built by pd.concat is several Arrow chunks
        return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    # polars
    if series.dtype.is_numeric() or str(series.dtype) == "Boolean":
        if series.null_count():
            return series.cast(float).fill_null(float("nan")).to_numpy()
        return series.to_numpy()
    return _arrow_to_numpy_if_numeric(series.to_arrow())


def _arrow_to_numpy_if_numeric(arr: pa.Array) -> np.ndarray | pa.Array:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        if arr.null_count:
            return arr.cast(pa.float64()).fill_null(float("nan")).to_numpy(zero_copy_only=False)
        return arr.to_numpy(zero_copy_only=False)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        arr = arr.cast(pa.string())
    return arr


def _id_column(table: Any, name: str, side: str) -> IdArray:
    col = _raw_column(table, name)
    if isinstance(col, np.ndarray):
        if col.dtype.kind == "b":
            raise ReceValError(f"{side} column {name!r} holds booleans, not ids")
        if col.dtype.kind == "f":
            bad = ~np.isfinite(col) | (col != np.round(col))
            if bad.any():
                row = int(np.argmax(bad))
                raise ReceValError(
                    f"{side} column {name!r} must hold integer or string ids; "
                    f"row {row} holds {col[row]!r}"
                )
            return col.astype(np.int64)
        return col.astype(np.int64, copy=False)
    if not (pa.types.is_string(col.type) or pa.types.is_binary(col.type)):
        try:
            col = col.cast(pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise ReceValError(
                f"{side} column {name!r} has type {col.type}; ids must be integers or strings"
            ) from None
    if col.null_count:
        row = int(np.argmax(col.is_null().to_numpy(zero_copy_only=False)))
        raise ReceValError(f"{side} column {name!r} has a missing id at row {row}")
    return col


def _value_column(table: Any, name: str, side: str) -> np.ndarray:
    col = _raw_column(table, name)
    if not isinstance(col, np.ndarray):
        try:
            col = col.cast(pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            values = col.to_pylist()
            for row, value in enumerate(values):
                try:
                    float(value)
                except (TypeError, ValueError):
                    raise ReceValError(
                        f"{side} column {name!r} must be numeric; row {row} holds {value!r}"
                    ) from None
            raise ReceValError(f"{side} column {name!r} must be numeric") from None
    return np.ascontiguousarray(col, dtype=np.float64)
