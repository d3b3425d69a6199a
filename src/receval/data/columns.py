"""Turn a DataFrame, an Arrow table or a file into the three columns receval works on.

Whatever comes in (pandas, polars, pyarrow, a path read by :mod:`receval.io`), what comes out is a
:class:`Columns`: user ids, item ids and one value column (rating or score), each a numpy
array (numbers) or a pyarrow array (strings), never more columns than needed.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from receval.data.csr import fresh
from receval.exceptions import ReceValError
from receval.io import SOURCE_KEY
from receval.io.values import (
    bad_rows,
    check_id_column,
    check_value_column,
    float_id_problems,
    frame_row,
    uint_id_problems,
)
from receval.io.wanted import Wanted, missing_message
from receval.parallel import run_blocks

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
    #: the value column's name as the user knows it (for messages)
    value_name: str | None = None

    def __len__(self) -> int:
        return len(self.users)


def read_sides(
    truth: Any,
    predictions: Any,
    *,
    user_col: str = "user",
    item_col: str = "item",
    rating_col: str = "rating",
    score_col: str = "score",
    truth_columns: Mapping[str, str] | None = None,
    prediction_columns: Mapping[str, str] | None = None,
    rating_required: bool = False,
) -> tuple[Columns, Columns]:
    """Read both sides: frames as they are, paths through :mod:`receval.io` (the reader of the
    command line, so ``"007"`` and ``"7"`` stay two ids), ids of both sides of one type.

    ``truth_columns`` / ``prediction_columns`` name each side's columns (``{"user": "userId",
    "item": "movieId", "rating": "r"}``); they override the shared ``*_col`` names. When a side
    is read from a file, integer ids of one side are read as text if the other side's ids are
    strings (as ``receval evaluate`` does); two frames with ids of different types are an error.

    Example:
        >>> import pandas as pd
        >>> t, p = read_sides(pd.DataFrame({"userId": [1], "item": [2]}),
        ...                   pd.DataFrame({"user": [1], "item": [2], "pred": [0.5]}),
        ...                   truth_columns={"user": "userId"}, score_col="pred")
        >>> t.users.tolist(), p.values.tolist(), p.value_name
        ([1], [0.5], 'pred')
    """
    wanted = {"truth": Wanted.truth(user_col=user_col, item_col=item_col, rating_col=rating_col,
                                    columns=truth_columns),
              "predictions": Wanted.predictions(user_col=user_col, item_col=item_col,
                                                score_col=score_col, columns=prediction_columns)}
    tables: dict[str, Any] = {}
    from_file: dict[str, bool] = {}
    for side, source in (("truth", truth), ("predictions", predictions)):
        from_file[side] = isinstance(source, str | os.PathLike)
        if from_file[side]:
            from receval import io

            tables[side] = io.read_table(Path(source), wanted[side])
        else:
            tables[side] = _as_table(source, side)
    if all(from_file.values()):
        from receval.io.ids import align_id_types

        tables["truth"], tables["predictions"] = align_id_types(
            [tables["truth"], tables["predictions"]])
    out = {}
    for side, w in wanted.items():
        canonical = from_file[side]
        out[side] = read_columns(
            tables[side], side=side,
            user_col="user" if canonical else w.user,
            item_col="item" if canonical else w.item,
            value_col=w.value_as if canonical else w.value,
            value_required=w.value_required or (side == "truth" and rating_required),
            fallback_rank_col=None if w.rank is None else "rank" if canonical else w.rank,
            value_names={w.value_as: w.value, "rank": w.rank or "rank"},
        )
    t, p = out["truth"], out["predictions"]
    if any(from_file.values()):
        t.users, p.users = _as_one_kind(t.users, p.users)
        t.items, p.items = _as_one_kind(t.items, p.items)
    return t, p


def _as_one_kind(a: IdArray, b: IdArray) -> tuple[IdArray, IdArray]:
    """Integer ids as text when the other side's ids are strings (ids from a file)."""
    if isinstance(a, np.ndarray) == isinstance(b, np.ndarray):
        return a, b
    if isinstance(a, np.ndarray):
        return pa.array(a).cast(pa.string()), b
    return a, pa.array(b).cast(pa.string())


def read_columns(
    source: Any,
    *,
    side: str,
    user_col: str,
    item_col: str,
    value_col: str | None,
    value_required: bool,
    fallback_rank_col: str | None = None,
    value_names: Mapping[str, str] | None = None,
) -> Columns:
    """Read the user, item and value columns of ``source``.

    ``source`` is a pandas or polars DataFrame, a pyarrow Table or RecordBatch, a dict of
    arrays, or a path to a CSV/TSV/Parquet/JSON Lines/TREC file (read by :mod:`receval.io`).
    When ``value_col`` is missing and ``fallback_rank_col`` is present, the score is ``-rank``
    (rank 1 scores highest). ``value_names`` gives the name to show in messages for a value
    column (``{"score": "prediction"}``). Bad values are errors naming the first bad row
    (0-based) and how many rows are bad.

    Example:
        >>> import pandas as pd
        >>> cols = read_columns(pd.DataFrame({"user": [1], "item": [2], "score": [0.5]}),
        ...     side="predictions", user_col="user", item_col="item", value_col="score",
        ...     value_required=True)
        >>> cols.values.tolist()
        [0.5]
    """
    if isinstance(source, str | os.PathLike):
        from receval import io

        reader = io.read_truth if side == "truth" else io.read_predictions
        source = reader(Path(source), columns={"user": user_col, "item": item_col})
        user_col, item_col = "user", "item"
        value_col = "rating" if side == "truth" else "score"
        fallback_rank_col = None if side == "truth" else "rank"
    table = _as_table(source, side)
    names = _column_names(table)
    roles = {"truth": "rating", "predictions": "score"}
    wanted = [("user", user_col), ("item", item_col)]
    missing = [(role, c) for role, c in wanted if c not in names]
    value_name = value_col
    negate = False
    if value_col is not None and value_col not in names:
        if fallback_rank_col is not None and fallback_rank_col in names:
            value_name, negate = fallback_rank_col, True
        elif value_required:
            missing.append((roles[side], value_col))
        else:
            value_name = None
    if missing:
        raise ReceValError(_missing(table, side, missing, names))
    if _n_rows(table) == 0:
        raise ReceValError(f"{side} is empty (no rows)")
    users = _id_column(table, user_col, side)
    items = _id_column(table, item_col, side)
    values = None
    shown = None
    if value_name is not None:
        shown = (value_names or {}).get("rank" if negate else roles[side], value_name)
        values = _value_column(table, value_name, side, shown)
        if not _read_by_receval_io(table):  # receval.io checked them, naming the file's line
            check_value_column(values, side, shown, frame_row, users=users)
        if negate:
            values = -values
    return Columns(side=side, users=users, items=items, values=values, value_name=shown)


def _read_by_receval_io(table: Any) -> bool:
    """Whether ``table`` comes from :func:`receval.io.read_table` (its values are checked)."""
    metadata = table.schema.metadata if isinstance(table, pa.Table) else None
    return bool(metadata and SOURCE_KEY in metadata)


def _missing(table: Any, side: str, missing: list[tuple[str, str]], names: list[str]) -> str:
    """The missing-column message; for a table read from a file, in the file's own names."""
    metadata = table.schema.metadata if isinstance(table, pa.Table) else None
    if metadata and SOURCE_KEY in metadata:
        source = json.loads(metadata[SOURCE_KEY])
        asked = source["asked"]
        in_file = [(role, asked.get(role, name)) for role, name in missing]
        return missing_message(f"{side} file {source['path']}", side, in_file, source["found"])
    return missing_message(side, side, missing, names)


# --- sources ---------------------------------------------------------------------------------


def _as_table(source: Any, side: str) -> Any:
    """Dicts and record batches become Arrow tables; DataFrames and tables pass through."""
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
        f"path to a CSV/TSV/Parquet/JSON Lines/TREC file; got {type(source).__name__}"
    )


def _column_names(table: Any) -> list[str]:
    if isinstance(table, pa.Table):
        return list(table.column_names)
    return [str(c) for c in table.columns]


def _n_rows(table: Any) -> int:
    if isinstance(table, pa.Table):
        return int(table.num_rows)
    return int(table.shape[0])


# --- columns ---------------------------------------------------------------------------------


def _raw_column(table: Any, name: str, side: str, *, keep_dictionary: bool = False
                ) -> np.ndarray | pa.Array | pa.ChunkedArray:
    """A column as numpy (numbers, bools) or as a pyarrow array (anything else).

    With ``keep_dictionary``, a dictionary-encoded column (Parquet read with dictionaries, a
    pandas ``category``, a polars ``Categorical``) comes back as it is, not decoded row by row.
    """
    if isinstance(table, pa.Table):
        chunked = table.column(name)
        if _is_text(chunked.type) or (keep_dictionary and pa.types.is_dictionary(chunked.type)):
            return chunked  # strings are not copied into one chunk (see _id_column)
        if chunked.num_chunks > 1 and _plain_numbers(chunked):
            return _concat_numbers(chunked)
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
        try:
            arr = pa.array(series, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            raise ReceValError(_mixed_types(series, side, name)) from None
        if keep_dictionary and isinstance(arr, pa.ChunkedArray) and _is_text(arr.type):
            return arr  # a pandas 3 ``str`` column read from Parquet: one chunk a row group
        # a pandas 3 ``str`` column built by pd.concat is several Arrow chunks
        arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        if keep_dictionary and pa.types.is_dictionary(arr.type):
            return arr  # a category column: its codes and categories, no string per row
        return arr if not pa.types.is_dictionary(arr.type) else _arrow_to_numpy_if_numeric(arr)
    # polars
    if series.dtype.is_numeric() or str(series.dtype) == "Boolean":
        if series.null_count():
            return series.cast(float).fill_null(float("nan")).to_numpy()
        return series.to_numpy()
    arr = series.to_arrow()
    if keep_dictionary and pa.types.is_dictionary(arr.type):
        return arr
    return _arrow_to_numpy_if_numeric(arr)


def _plain_numbers(chunked: pa.ChunkedArray) -> bool:
    """Integers or floats without missing values: each chunk is a numpy view of its buffer."""
    t = chunked.type
    return bool((pa.types.is_integer(t) or pa.types.is_floating(t)) and not chunked.null_count)


def _concat_numbers(chunked: pa.ChunkedArray) -> np.ndarray:
    """The chunks (a Parquet file's row groups) copied once, in parallel, into one numpy array.

    ``combine_chunks`` would first copy into fresh Arrow memory and then hand numpy a view;
    here each thread copies its chunks' zero-copy views into one array on ordinary pages
    (:func:`receval.data.csr.fresh`: huge pages cost more to fault in on the machines measured).

    Example:
        >>> _concat_numbers(pa.chunked_array([[1, 2], [3]])).tolist()
        [1, 2, 3]
    """
    views = [c.to_numpy(zero_copy_only=True) for c in chunked.chunks]
    out = fresh(len(chunked), views[0].dtype)
    starts = np.cumsum([0] + [len(v) for v in views])
    bounds = [(int(a), int(b)) for a, b in itertools.pairwise(starts)]
    run_blocks(_copy_chunk, bounds, views, out)
    return out


def _copy_chunk(i: int, lo: int, hi: int, views: list[np.ndarray], out: np.ndarray) -> None:
    out[lo:hi] = views[i]  # numpy releases the GIL while it copies


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_string_view(t))


def _mixed_types(series: Any, side: str, name: str) -> str:
    """The message for an object column whose values are of several types (``1`` and ``'1'``)."""
    kinds = [type(v) for v in series.tolist()]
    first = next((i for i, k in enumerate(kinds) if k is not kinds[0]), 0)
    bad = sum(k is not kinds[0] for k in kinds)
    names = f"{kinds[0].__name__} and {kinds[first].__name__}"
    return bad_rows(side, name, frame_row(first), bad, f"{series.iloc[first]!r}",
                    f"; the column mixes {names} values: give it one type "
                    f"(e.g. .astype(str))", note=f"row 0 holds {series.iloc[0]!r}")


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


_ID_RULE = "; ids must be integers within int64 or strings"


def _id_column(table: Any, name: str, side: str) -> IdArray:
    col = _raw_column(table, name, side, keep_dictionary=True)
    if not isinstance(col, np.ndarray) and (
            pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        # encoded first, chunk by chunk into one dictionary: the strings of every row are
        # neither copied into one chunk nor cast to 32-bit offsets (the distinct ones are)
        col = pc.dictionary_encode(col)
    if not isinstance(col, np.ndarray) and pa.types.is_dictionary(col.type):
        col = _dictionary_ids(col)
    if isinstance(col, np.ndarray):
        if col.dtype.kind == "b":
            raise ReceValError(f"{side} column {name!r} holds booleans, not ids")
        if col.dtype.kind == "f":
            bad = float_id_problems(col)
            if bad.any():
                row = int(np.argmax(bad))
                holds = "a missing id" if np.isnan(col[row]) else repr(col[row].item())
                raise ReceValError(bad_rows(side, name, frame_row(row), int(bad.sum()), holds,
                                            _ID_RULE))
            return col.astype(np.int64)
        if col.dtype.kind == "u" and col.dtype.itemsize == 8:
            bad = uint_id_problems(col)
            if bad.any():
                row = int(np.argmax(bad))
                raise ReceValError(bad_rows(side, name, frame_row(row), int(bad.sum()),
                                            repr(col[row].item()), _ID_RULE))
        return col.astype(np.int64, copy=False)
    if not (pa.types.is_string(col.type) or pa.types.is_binary(col.type)
            or pa.types.is_large_binary(col.type) or pa.types.is_dictionary(col.type)):
        try:
            col = col.cast(pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise ReceValError(
                f"{side} column {name!r} has type {col.type}; ids must be integers or strings"
            ) from None
    chunked = col if isinstance(col, pa.ChunkedArray) else pa.chunked_array([col])
    checked = check_id_column(chunked, side, name, frame_row, empty_ok=True)
    if pa.types.is_dictionary(checked.type):
        # already codes: one dictionary for all chunks (row groups), no string per row
        return checked.combine_chunks() if checked.num_chunks != 1 else checked.chunk(0)
    # dictionary-encoded at once: int32 indices and the distinct ids, not a copy of every
    # row's string (the encoder works on the dictionary)
    return pc.dictionary_encode(checked).combine_chunks()


def _dictionary_ids(col: pa.Array | pa.ChunkedArray) -> np.ndarray | pa.Array | pa.ChunkedArray:
    """A dictionary-encoded id column without decoding each row: integer (or float) values
    become a numpy array by one ``take`` of the dictionary (integer ids stay integers), text
    values stay dictionary-encoded (as ``string``); with missing ids, or values of another
    type, the column is decoded and goes the plain way (and its checks).

    Example:
        >>> _dictionary_ids(pa.array([7, 9, 7]).dictionary_encode()).tolist()
        [7, 9, 7]
        >>> _dictionary_ids(pa.array(["b", "a", "b"]).dictionary_encode()).type
        DictionaryType(dictionary<values=string, indices=int32, ordered=0>)
    """
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    value_type = col.type.value_type
    if col.null_count or any(c.dictionary.null_count for c in chunks):
        decoded = [c.dictionary_decode() for c in chunks]
        return _arrow_to_numpy_if_numeric(pa.chunked_array(decoded, value_type).combine_chunks())
    if pa.types.is_integer(value_type) or pa.types.is_floating(value_type):
        parts = [c.dictionary.to_numpy(zero_copy_only=False)[
            c.indices.to_numpy(zero_copy_only=False)] for c in chunks]
        return np.concatenate(parts) if len(parts) != 1 else parts[0]
    if _is_text(value_type):
        if value_type != pa.string():
            chunks = _string_dictionaries(chunks)
        return pa.chunked_array(chunks, pa.dictionary(col.type.index_type, pa.string()))
    decoded = [c.dictionary_decode() for c in chunks]
    return _arrow_to_numpy_if_numeric(pa.chunked_array(decoded, value_type).combine_chunks())


def _string_dictionaries(chunks: list[pa.DictionaryArray]) -> list[pa.DictionaryArray]:
    """Chunks with ``string`` dictionaries; a dictionary the chunks share (``dictionary_encode``
    of a chunked column gives every chunk the same one) is cast once, not once a chunk.

    Example:
        >>> enc = pa.chunked_array([pa.array(["a"], pa.large_string())] * 2).dictionary_encode()
        >>> [c.dictionary.type for c in _string_dictionaries(enc.chunks)]
        [DataType(string), DataType(string)]
    """
    cast: dict[tuple[int, int], pa.Array] = {}
    out = []
    for chunk in chunks:
        key = (chunk.dictionary.buffers()[1].address, len(chunk.dictionary))
        if key not in cast:
            cast[key] = chunk.dictionary.cast(pa.string())
        out.append(pa.DictionaryArray.from_arrays(chunk.indices, cast[key]))
    return out


def _value_column(table: Any, name: str, side: str, shown: str | None = None) -> np.ndarray:
    col = _raw_column(table, name, side)
    if not isinstance(col, np.ndarray):
        try:
            col = col.cast(pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            bad = np.zeros(len(col), dtype=bool)
            for row, value in enumerate(col.to_pylist()):
                try:
                    float(value)
                except (TypeError, ValueError):
                    bad[row] = True
            row = int(np.argmax(bad))
            shown = shown or name
            raise ReceValError(bad_rows(side, shown, frame_row(row), int(bad.sum()),
                                        repr(col[row].as_py()),
                                        f"; {shown!r} must be numeric")) from None
    return np.ascontiguousarray(col, dtype=np.float64)
