"""Every column of a file, for the commands that keep or look at more than the scored columns
(``receval split`` writes every column back; the monitor's logs, the off-policy log and target,
a gate's strata file): CSV, TSV, Parquet or JSON Lines, gzip or not, a pipe read once.

The rules are :mod:`receval.io`'s: the id columns of a text file are read as text and become
int64 only when every id is a canonical integer (``007`` and ``7`` stay two ids); the ``'``
receval's CSV writers put before a formula-like cell is taken off. Every other CSV column is a
number only when each of its cells is written as one would write that number (``00501`` keeps
its zero: it is text, a zip code, not 501): int64 when every cell is a canonical integer,
float64 when every cell is a plain decimal, else text exactly as read. In a numeric column the
usual missing-value words (empty, ``NA``, ``NaN``, ``null``...) are missing. Parquet and JSON
Lines columns keep the types the file gives them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from receval.exceptions import ReceValError
from receval.io.detect import detect_format, sniff_delimiter
from receval.io.formulas import restore_array
from receval.io.ids import narrow
from receval.io.source import check_file, head_lines, one_line, open_stream

#: the texts a cell of a numeric column reads as missing (pandas' defaults)
NA_TEXT = (
    "",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "<NA>",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "None",
    "n/a",
    "nan",
    "null",
)
#: a cell that is an integer as one writes it (no leading zero, no sign on zero, 18 digits)
_INT = r"^(0|-?[1-9][0-9]{0,17})$"
#: a cell that is a decimal number as one writes it (no leading zero before other digits)
_FLOAT = r"^[-+]?(0|[1-9][0-9]*)?(\.[0-9]+)?([eE][-+]?[0-9]+)?$|^[-+]?(inf|Inf|infinity)$"
#: schema metadata key: where the table comes from (for error messages naming a line)
FRAME_SOURCE = b"receval.frame_source"


def read_frame(
    path: str | os.PathLike[str],
    side: str,
    *,
    ids: Sequence[str] = (),
    format: str = "auto",
    delimiter: str | None = None,
    formats: Sequence[str] = ("csv", "tsv", "parquet", "jsonl"),
    empty_ok: bool = False,
) -> pa.Table:
    """Every column of the file at ``path`` as an Arrow table (see the module's rules); the
    ``ids`` columns narrowed to int64 only when every id is canonical; a file without rows is
    an error unless ``empty_ok``. Every problem is a
    one-line :class:`~receval.exceptions.ReceValError` naming the file.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
        >>> _ = p.write_text("user,item,zip,rating\\n1,007,00501,4.5\\n2,7,10001,NA\\n")
        >>> t = read_frame(p, "interactions", ids=("user", "item"))
        >>> t.to_pydict()
        {'user': [1, 2], 'item': ['007', '7'], 'zip': ['00501', '10001'], 'rating': [4.5, None]}
    """
    source = check_file(Path(path), side)
    kind = detect_format(source, side, format)
    if kind not in formats:
        names = ", ".join({"jsonl": "JSON Lines"}.get(f, f.upper()) for f in formats)
        raise ReceValError(
            f"{side} file {path}: the {kind} format holds no {side} to read here; use {names}"
        )
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(source)
        elif kind == "jsonl":
            import pyarrow.json as pajson

            stream, _ = open_stream(source, side)
            with stream:
                table = pajson.read_json(stream)
        else:
            table = _read_text(source, side, kind, delimiter)
    except pa.ArrowInvalid as err:
        raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None
    except (OSError, EOFError) as err:
        raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None
    text = kind in ("csv", "tsv")
    for i, name in enumerate(table.column_names):
        col = table.column(i)
        if text:
            col = restore_array(col)  # the writers' neutralising ' comes off every text cell
            col = narrow(col.combine_chunks()) if name in ids else _typed(col)
        elif name in ids:
            col = narrow(col.combine_chunks())
        table = table.set_column(i, table.field(i).with_type(col.type), col)
    if table.num_rows == 0 and not empty_ok:
        raise ReceValError(f"{side} file {path} has no rows")
    where = {"path": str(source), "kind": "csv" if text else kind, "header_lines": 1 if text else 0}
    return table.replace_schema_metadata(
        {**(table.schema.metadata or {}), FRAME_SOURCE: json.dumps(where).encode()}
    )


def _read_text(source: Path, side: str, kind: str, delimiter: str | None) -> pa.Table:
    """A CSV/TSV file with every column as text (nothing guessed yet)."""
    import csv

    import pyarrow.csv as pacsv

    lines = head_lines(source, side)
    if delimiter is None:
        delimiter = "\t" if kind == "tsv" else sniff_delimiter(lines)
    elif delimiter.lower() in ("\\t", "tab"):
        delimiter = "\t"
    names = next(csv.reader([lines[0].lstrip("\ufeff")], delimiter=delimiter))
    stream, _ = open_stream(source, side)
    with stream:
        return pacsv.read_csv(
            stream,
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()),
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )


def _typed(col: pa.ChunkedArray | pa.Array) -> pa.Array | pa.ChunkedArray:
    """A text column as int64 or float64 when every cell is written as such a number (missing
    words missing), else text as read, an empty cell missing.

    Example:
        >>> _typed(pa.array(["1", "NA", "3"])).to_pylist()
        [1, None, 3]
        >>> _typed(pa.array(["00501", "10001"])).to_pylist()
        ['00501', '10001']
        >>> _typed(pa.array(["4.5", "1", ""])).to_pylist()
        [4.5, 1.0, None]
        >>> _typed(pa.array(["NA", "", "x"])).to_pylist()
        ['NA', None, 'x']
    """
    if len(col) == 0 or not pa.types.is_string(col.type):
        return col
    missing = pc.is_in(col, pa.array(NA_TEXT))
    present = pc.filter(col, pc.invert(missing))
    for pattern, kind in ((_INT, pa.int64()), (_FLOAT, pa.float64())):
        if len(present) == 0 or not pc.all(pc.match_substring_regex(present, pattern)).as_py():
            continue
        try:
            return _cast(col, missing, kind)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            break
    return _cast(col, pc.equal(col, ""), col.type)


def _cast(col: pa.ChunkedArray | pa.Array, missing: pa.Array, kind: pa.DataType) -> pa.Array:
    """``col`` cast to ``kind`` with its missing words as nulls."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    cleaned = pc.if_else(missing, pa.scalar(None, pa.string()), arr)
    return pc.cast(cleaned, kind)
