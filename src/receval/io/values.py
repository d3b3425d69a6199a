"""Bad values in a side that has been read: missing or empty ids, ids that are not integers
exactly representable in int64, scores that are not finite numbers, infinite ratings.

Every message names the side, the column, where the first bad row is (a file's line number, a
frame's 0-based row index) and how many rows are bad in all. The same checks serve files
(:mod:`receval.io`) and frames (:mod:`receval.data.columns`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from receval.exceptions import ReceValError
from receval.scalars import plain

#: where a 0-based row is: ``"row 3"`` (a frame) or ``"line 5 of t.csv"`` (a file)
Where = Callable[[int], str]
INT64_LIMIT = 2.0**63


def frame_row(row: int) -> str:
    """Where a row of a frame is: its 0-based index.

    Example:
        >>> frame_row(3)
        'row 3'
    """
    return f"row {row}"


def bad_rows(side: str, column: str, where: str, count: int, holds: str, rule: str = "",
             note: str = "") -> str:
    """The one-line message for ``count`` bad rows, the first of which is at ``where``.

    Example:
        >>> bad_rows("predictions", "score", "line 1210 of p.csv", 50, "nan",
        ...          "; scores must be finite numbers")
        "predictions column 'score' holds nan at line 1210 of p.csv (50 bad rows in all); \
scores must be finite numbers"
    """
    rows = "1 bad row" if count == 1 else f"{count} bad rows"
    note = f"{note}; " if note else ""
    return f"{side} column {column!r} holds {holds} at {where} ({note}{rows} in all){rule}"


def first_and_count(masks: Iterable[np.ndarray]) -> tuple[int, int]:
    """The index of the first ``True`` across consecutive chunks of a mask, and how many.

    Example:
        >>> first_and_count([np.array([False, False]), np.array([False, True, True])])
        (3, 2)
    """
    first, count, offset = -1, 0, 0
    for mask in masks:
        n = int(np.count_nonzero(mask))
        if n and first < 0:
            first = offset + int(np.argmax(mask))
        count += n
        offset += len(mask)
    return first, count


def float_id_problems(values: np.ndarray) -> np.ndarray:
    """Float ids that are not exact integers representable in int64 (NaN, 1.5, 1e19).

    Example:
        >>> float_id_problems(np.array([1.0, 1.5, 1e19, np.nan, -2.0**63])).tolist()
        [False, True, True, True, False]
    """
    with np.errstate(invalid="ignore"):
        return ~((values >= -INT64_LIMIT) & (values < INT64_LIMIT)
                 & (values == np.floor(values)))


def uint_id_problems(values: np.ndarray) -> np.ndarray:
    """Unsigned ids >= 2^63, which int64 cannot hold (they would wrap to negative ids).

    Example:
        >>> uint_id_problems(np.array([1, 2**63], dtype=np.uint64)).tolist()
        [False, True]
    """
    return values > np.uint64(2**63 - 1)


def _value_at(col: pa.ChunkedArray, row: int) -> object:
    return col[row].as_py()


def check_id_column(col: pa.ChunkedArray, side: str, name: str,
                    where: Where, *, empty_ok: bool = False) -> pa.ChunkedArray:
    """An id column as int64 or string, or a one-line error for the first bad id.

    Integer types narrow to int64 (unsigned values >= 2^63 are an error), floats narrow when
    every value is an exact integer within int64, binary is decoded as UTF-8; a missing id is
    an error, and so is an empty one unless ``empty_ok``.

    Example:
        >>> check_id_column(pa.chunked_array([[1.0, 2.0]]), "truth", "user", frame_row).type
        DataType(int64)
        >>> check_id_column(pa.chunked_array([[1.0, 1e19]]), "truth", "user", frame_row)
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: truth column 'user' holds 1e+19 at row 1 \
(1 bad row in all); ids must be integers within int64 or strings
    """
    t = col.type
    if pa.types.is_dictionary(t):
        kept = _text_dictionary(col, empty_ok)
        if kept is not None:
            return kept
        col = pc.cast(col, t.value_type)
        t = col.type
    if col.null_count:
        first, count = first_and_count(
            c.is_null().to_numpy(zero_copy_only=False) for c in col.chunks)
        raise ReceValError(bad_rows(side, name, where(first), count, "a missing id"))
    if pa.types.is_boolean(t):
        raise ReceValError(f"{side} column {name!r} holds booleans, not ids")
    if pa.types.is_integer(t):
        if pa.types.is_unsigned_integer(t) and t.bit_width == 64:
            _raise_if(col, side, name, where,
                      (uint_id_problems(c.to_numpy(zero_copy_only=False)) for c in col.chunks))
        return col if t == pa.int64() else pc.cast(col, pa.int64())
    if pa.types.is_floating(t):
        _raise_if(col, side, name, where, (float_id_problems(
            c.to_numpy(zero_copy_only=False).astype(np.float64, copy=False))
            for c in col.chunks))
        return pc.cast(col, pa.int64())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        col = _decode_utf8(col, side, name, where)
        t = col.type
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        col = pc.cast(col, pa.string())
        t = col.type
    if not pa.types.is_string(t):
        raise ReceValError(
            f"{side} column {name!r} has type {t}; ids must be integers or strings")
    if empty_ok:
        return col
    empty = [pc.equal(c, "").to_numpy(zero_copy_only=False) for c in col.chunks]
    first, count = first_and_count(empty)
    if count:
        raise ReceValError(bad_rows(side, name, where(first), count, "an empty id"))
    return col


def _text_dictionary(col: pa.ChunkedArray, empty_ok: bool) -> pa.ChunkedArray | None:
    """A dictionary-encoded text id column with nothing to report, kept encoded (as
    ``dictionary<string>``): the checks read its few distinct values, not every row. ``None``
    when it needs the row-by-row path (numbers, missing or empty ids: the message names a row).

    Example:
        >>> col = pa.chunked_array([pa.array(["a", "b", "a"]).dictionary_encode()])
        >>> _text_dictionary(col, False).type
        DictionaryType(dictionary<values=string, indices=int32, ordered=0>)
        >>> _text_dictionary(pa.chunked_array([pa.array(["a", ""]).dictionary_encode()]), False)
    """
    t = col.type
    if not (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)):
        return None
    if col.null_count or any(c.dictionary.null_count for c in col.chunks):
        return None
    if not empty_ok and any(pc.any(pc.equal(c.dictionary, "")).as_py() for c in col.chunks
                            if len(c.dictionary)):
        return None
    if pa.types.is_large_string(t.value_type):
        return col.cast(pa.dictionary(t.index_type, pa.string()))
    return col


def _raise_if(col: pa.ChunkedArray, side: str, name: str, where: Where,
              masks: Iterable[np.ndarray]) -> None:
    first, count = first_and_count(masks)
    if count:
        raise ReceValError(bad_rows(
            side, name, where(first), count, repr(_value_at(col, first)),
            "; ids must be integers within int64 or strings"))


def _decode_utf8(col: pa.ChunkedArray, side: str, name: str, where: Where) -> pa.ChunkedArray:
    try:
        return pc.cast(col, pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    bad = []
    for chunk in col.chunks:
        mask = np.zeros(len(chunk), dtype=bool)
        for i, value in enumerate(chunk.to_pylist()):
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                mask[i] = True
        bad.append(mask)
    first, count = first_and_count(bad)
    raise ReceValError(bad_rows(side, name, where(max(first, 0)), count,
                                repr(_value_at(col, max(first, 0))),
                                "; binary ids must be UTF-8 text"))


def check_value_column(values: np.ndarray | pa.ChunkedArray, side: str, name: str,
                       where: Where, users: pa.ChunkedArray | np.ndarray | None = None) -> None:
    """Predictions: every score (or rank) a finite number; truth: no infinite rating (a
    missing rating, NaN, is allowed: the row is dropped and counted).

    Example:
        >>> check_value_column(np.array([0.5, np.nan, np.nan]), "predictions", "score",
        ...                    frame_row)
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: predictions column 'score' holds nan at row 1 \
(2 bad rows in all); scores must be finite numbers
    """
    chunks = ([values] if isinstance(values, np.ndarray)
              else [c.to_numpy(zero_copy_only=False) for c in values.chunks])
    if side == "predictions":
        masks = [~np.isfinite(c) for c in chunks]
        rule = "; scores must be finite numbers"
    else:
        masks = [np.isinf(c) for c in chunks]
        rule = "; ratings must be finite (a missing rating is dropped)"
    first, count = first_and_count(masks)
    if not count:
        return
    flat = values if isinstance(values, np.ndarray) else None
    value = flat[first] if flat is not None else values[first].as_py()
    value = float("nan") if value is None else value
    note = ""
    if users is not None:
        note = f"user {plain(users[first])!r}"
    raise ReceValError(bad_rows(side, name, where(first), count, str(value), rule, note))
