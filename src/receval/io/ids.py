"""Id columns read from text: integers only when every value is a plain integer.

Text formats do not say whether ``"007"`` is a number, so ids are parsed as strings and narrowed
to int64 only when every value is canonical (``0`` or ``-?[1-9][0-9]*``, at most 18 digits):
``"007"`` and ``"7"`` then never collapse into one id, and the integer fast path of the core is
kept for the common case. Truth and predictions are then given the same id type.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from receval.exceptions import ReceValError

_CANONICAL_INT = r"^(0|-?[1-9][0-9]{0,17})$"
ID_COLUMNS = ("user", "item")


def narrow(arr: pa.Array) -> pa.Array:
    """``arr`` as int64 when every value is a canonical integer string, else unchanged.

    Example:
        >>> narrow(pa.array(["1", "20"])).type
        DataType(int64)
        >>> narrow(pa.array(["1", "007"])).to_pylist()
        ['1', '007']
    """
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return arr
    if len(arr) == 0 or arr.null_count:
        return arr
    if pc.all(pc.match_substring_regex(arr, _CANONICAL_INT)).as_py():
        return pc.cast(arr, pa.int64())
    return arr


def combine(chunks: list[pa.Array]) -> pa.ChunkedArray:
    """Chunks narrowed one at a time, given one type: int64 if all are, else strings.

    Integers go back to strings exactly, because only canonical strings were narrowed.

    Example:
        >>> combine([pa.array([1, 2]), pa.array(["u3"])]).to_pylist()
        ['1', '2', 'u3']
    """
    if chunks and all(pa.types.is_integer(c.type) for c in chunks):
        return pa.chunked_array(chunks, pa.int64())
    as_text = [pc.cast(c, pa.string()) if not pa.types.is_string(c.type) else c for c in chunks]
    return pa.chunked_array(as_text, pa.string())


#: formats whose files store an id's type (an integer column is integers, not a guess)
TYPED_FORMATS = ("parquet", "jsonl")


def align_id_types(tables: list[pa.Table],
                   sides: tuple[str, ...] = ("truth", "predictions")) -> list[pa.Table]:
    """Give ``user`` and ``item`` one type across tables: strings if any table has strings.

    So a truth file with ids ``1, 2`` and a predictions file with ``1, u2`` still match on
    ``1`` instead of failing on mismatched types: a text file (CSV, TSV, TREC) does not say
    an id's type, and its ids became integers only because every one looked like one. A file
    that stores integer ids (``formats``: Parquet, JSON Lines numbers) against strings on the
    other side is refused, as two frames are and as ``engine="spark"`` does (the format is the
    one :func:`receval.io.read_table` recorded in the table's metadata).

    Example:
        >>> a = pa.table({"user": [1], "item": [2]})
        >>> b = pa.table({"user": ["1"], "item": [2]})
        >>> [t.schema.field("user").type for t in align_id_types([a, b])]
        [DataType(string), DataType(string)]
    """
    out = list(tables)
    for name in ID_COLUMNS:
        types = [t.schema.field(name).type for t in out]
        numeric = [pa.types.is_integer(t) for t in types]
        if all(numeric) or not any(numeric):
            continue
        refuse_typed_integers(name, numeric, [file_format(t) for t in out], sides)
        for i, table in enumerate(out):
            if numeric[i]:
                col = pc.cast(table.column(name), pa.string())
                out[i] = table.set_column(table.schema.get_field_index(name), name, col)
    return out


def refuse_typed_integers(name: str, numeric: list[bool], kinds: list[str],
                          sides: tuple[str, ...] | list[str]) -> None:
    """Refuse a side whose file stores integer ``name`` ids (Parquet, JSON Lines) when another
    side has text ids (``numeric``: per side, whether its ids are integers).

    Example:
        >>> refuse_typed_integers("item", [True, False], ["csv", "csv"], ("truth", "predictions"))
        >>> refuse_typed_integers("item", [False, True], ["csv", "parquet"],
        ...                       ("truth", "predictions"))
        Traceback (most recent call last):
        receval.exceptions.ReceValError: item ids of mismatched types: predictions (parquet) ...
    """
    if all(numeric) or not any(numeric):
        return
    for i, kind in enumerate(kinds):
        if numeric[i] and kind in TYPED_FORMATS:
            other = sides[1 - i] if len(sides) == 2 else "the other side"
            raise ReceValError(
                f"{name} ids of mismatched types: {sides[i]} ({kind}) stores integers, "
                f"{other} has strings; give both files one type (ids in CSV/TSV are "
                "compared as text)")


def file_format(table: pa.Table) -> str:
    """The format :func:`receval.io.read_table` read ``table`` from (``""``: not a file).

    Example:
        >>> file_format(pa.table({"user": [1]}))
        ''
    """
    import json

    raw = (table.schema.metadata or {}).get(b"receval.source")
    return str(json.loads(raw).get("format", "")) if raw else ""
