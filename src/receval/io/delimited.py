"""CSV and TSV: the delimiter is sniffed, only the wanted columns are parsed, the file streams.

Ids are parsed as strings and narrowed to integers batch by batch (see :mod:`receval.io.ids`);
an id is never a missing value (an item called ``NA`` stays an item; an empty id is an error).
Values are parsed as float64, where an empty field, ``NA``, ``NaN``, ``null``... are missing.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from receval.exceptions import ReceValError
from receval.io import ids
from receval.io.detect import sniff_delimiter
from receval.io.source import Progress, head_lines, one_line, open_stream
from receval.io.wanted import Wanted

BLOCK_SIZE = 8 << 20


def read_delimited(
    path: Path,
    wanted: Wanted,
    *,
    delimiter: str | None = None,
    header: bool = True,
    progress: Progress | None = None,
) -> pa.Table:
    """Read the wanted columns of a CSV/TSV file (gzip or not) as ``user, item, value``.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
        >>> _ = p.write_text('user,item,score,title\\n1,"a,b",0.5,x\\n')
        >>> read_delimited(p, Wanted.predictions()).to_pylist()
        [{'user': 1, 'item': 'a,b', 'score': 0.5}]
    """
    lines = head_lines(path, wanted.side)
    delimiter = _unescape(delimiter) if delimiter else sniff_delimiter(lines)
    first = next(csv.reader(lines[:1], delimiter=delimiter))
    names = first if header else wanted.positional(len(first))
    columns = wanted.resolve(names, path)
    types = {src: pa.string() if out in ids.ID_COLUMNS else pa.float64()
             for out, src in columns.items()}
    read_options = pacsv.ReadOptions(
        block_size=BLOCK_SIZE, column_names=None if header else names
    )
    parse_options = pacsv.ParseOptions(delimiter=delimiter)
    convert_options = pacsv.ConvertOptions(
        include_columns=list(columns.values()), column_types=types, strings_can_be_null=False,
    )
    stream, done = open_stream(path, wanted.side)
    chunks: dict[str, list[pa.Array]] = {out: [] for out in columns}
    try:
        with stream:
            reader = pacsv.open_csv(stream, read_options, parse_options, convert_options)
            for batch in reader:
                for out, src in columns.items():
                    col = batch.column(src)
                    if out in ids.ID_COLUMNS:
                        _check_ids(col, src, wanted.side, path)
                        col = ids.narrow(col)
                    chunks[out].append(col)
                if progress is not None:
                    progress(done())
    except pa.ArrowInvalid as err:
        raise _explain(err, path, wanted, columns, delimiter, read_options) from None
    except (OSError, EOFError) as err:
        raise ReceValError(f"cannot read {wanted.side} file {path}: {one_line(err)}") from None
    table = pa.table({out: _combine(out, chunks[out]) for out in columns})
    if table.num_rows == 0:
        raise ReceValError(f"{wanted.side} file {path} has a header but no rows")
    return table


def _check_ids(col: pa.Array, name: str, side: str, path: Path) -> None:
    if len(col) and pc.any(pc.equal(col, "")).as_py():
        raise ReceValError(f"{side} column {name!r} of {path} has an empty id")


def _combine(out: str, chunks: list[pa.Array]) -> pa.ChunkedArray:
    if out in ids.ID_COLUMNS:
        return ids.combine(chunks)
    return pa.chunked_array(chunks, pa.float64())


def _unescape(delimiter: str) -> str:
    """``\\t`` and ``tab`` typed on a command line mean a tab."""
    text = {"\\t": "\t", "tab": "\t", "space": " "}.get(delimiter.lower(), delimiter)
    if len(text) != 1:
        raise ReceValError(f"delimiter must be one character; got {delimiter!r}")
    return text


def _explain(err: pa.ArrowInvalid, path: Path, wanted: Wanted, columns: dict[str, str],
             delimiter: str, read_options: pacsv.ReadOptions) -> ReceValError:
    """A one-line message for a parse or conversion error, naming the row when it can."""
    message = one_line(err)
    match = re.search(r"CSV column #(\d+).*invalid value '(.*)'", message)
    if match is None:
        return ReceValError(f"cannot read {wanted.side} file {path}: {message}")
    bad = match.group(2)
    name = next((src for out, src in columns.items() if out not in ids.ID_COLUMNS), "?")
    row = _first_non_numeric(path, wanted, name, delimiter, read_options)
    header_lines = 0 if read_options.column_names else 1
    where = f" line {row + 1 + header_lines}" if row is not None else ""
    return ReceValError(
        f"{wanted.side} column {name!r} must be numeric; {path}{where} holds {bad!r}"
    )


def _first_non_numeric(path: Path, wanted: Wanted, name: str, delimiter: str,
                       read_options: pacsv.ReadOptions) -> int | None:
    """The 0-based data row of the first value that is not a number (error path only)."""
    try:
        stream, _ = open_stream(path, wanted.side)
        with stream:
            table = pacsv.read_csv(
                stream, read_options, pacsv.ParseOptions(delimiter=delimiter),
                pacsv.ConvertOptions(include_columns=[name], column_types={name: pa.string()}),
            )
    except pa.ArrowInvalid:
        return None
    col = table.column(name)
    number = pc.match_substring_regex(
        col, r"^\s*([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[-+]?(nan|NaN|inf|Inf|infinity))\s*$"
    )
    missing = pc.is_in(col, pa.array(pacsv.ConvertOptions().null_values))
    numeric = pc.or_(number, missing).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(~numeric)
    return int(bad[0]) if len(bad) else None
