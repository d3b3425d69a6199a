"""CSV and TSV: the delimiter is sniffed, only the wanted columns are parsed, the file streams.

Ids are parsed as strings and narrowed to integers batch by batch (see :mod:`receval.io.ids`);
an id is never a missing value (an item called ``NA`` stays an item; an empty id is an error).
The ``'`` receval's writers put before an id that starts like a spreadsheet formula (``'-a``)
is taken off again (:func:`receval.io.formulas.restore_array`), so the file reads back as the
ids it was written from.
Values are parsed as float64, where an empty field, ``NA``, ``NaN``, ``null``... are missing.
"""

from __future__ import annotations

import csv
import gzip
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from receval.exceptions import ReceValError
from receval.io.detect import sniff_delimiter
from receval.io.formulas import restore_array
from receval.io.ids import ID_COLUMNS, combine, narrow
from receval.io.lines import locator
from receval.io.source import Progress, head_lines, is_gzip, one_line, open_stream
from receval.io.values import bad_rows
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
    first = next(csv.reader([lines[0].lstrip("\ufeff")], delimiter=delimiter))
    names = first if header else wanted.positional(len(first))
    columns = wanted.resolve(names, path)
    types = {src: pa.string() if out in ID_COLUMNS else pa.float64()
             for out, src in columns.items()}
    read_options = pacsv.ReadOptions(
        block_size=BLOCK_SIZE, column_names=None if header else names
    )
    ragged: list[int] = []

    def skip_ragged(row: pacsv.InvalidRow) -> str:
        ragged.append(row.actual_columns)
        return "skip"

    parse_options = pacsv.ParseOptions(delimiter=delimiter, invalid_row_handler=skip_ragged)
    convert_options = pacsv.ConvertOptions(
        include_columns=list(columns.values()), column_types=types, strings_can_be_null=False,
    )
    stream, done = open_stream(path, wanted.side)
    chunks: dict[str, list[pa.Array]] = {out: [] for out in columns}
    quoted = False
    try:
        # the reader closed on every path, an error's included: its read-ahead runs on Arrow's
        # native threads, which must not be torn down at exit with a task in flight
        with stream, pacsv.open_csv(stream, read_options, parse_options,
                                    convert_options) as reader:
            for batch in reader:
                for out, src in columns.items():
                    col = batch.column(src)
                    if out in ID_COLUMNS:
                        quoted = quoted or _holds_quote(col)
                        # the ' a receval writer put before a formula-like id comes off
                        col = narrow(restore_array(col))
                    chunks[out].append(col)
                if progress is not None:
                    progress(done())
    except pa.ArrowInvalid as err:
        raise _explain(err, path, wanted, columns, delimiter, read_options) from None
    except (OSError, EOFError) as err:
        raise ReceValError(f"cannot read {wanted.side} file {path}: {one_line(err)}") from None
    if ragged:
        raise _ragged(path, wanted.side, delimiter, len(names), len(ragged), header)
    if quoted:
        _check_quoting(path, wanted.side, delimiter)
    table = pa.table({out: _combine(out, chunks[out]) for out in columns})
    if table.num_rows == 0:
        raise ReceValError(f"{wanted.side} file {path} has a header but no rows")
    return table


def _holds_quote(col: pa.Array) -> bool:
    """Whether a parsed id holds a quote: a sign of malformed quoting (checked afterwards)."""
    return bool(len(col)) and bool(pc.any(pc.match_substring(col, '"')).as_py())


def _csv_lines(path: Path, side: str) -> Iterator[str]:
    """The decompressed file as text lines, for Python's csv module (error paths only)."""
    try:
        opener = gzip.open if is_gzip(path) else open
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as fh:
            yield from fh
    except (OSError, EOFError) as err:
        raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None


def _check_quoting(path: Path, side: str, delimiter: str) -> None:
    """An error naming the line of the first malformed quote (``"u,1,"i,1",0.9``), if any:
    Arrow reads such a line leniently, as other ids."""
    reader = csv.reader(_csv_lines(path, side), delimiter=delimiter, strict=True)
    try:
        for _ in reader:
            pass
    except csv.Error as err:
        raise ReceValError(
            f"cannot read {side} file {path}: malformed quoting at line {reader.line_num} "
            f"({one_line(err)}); a quoted field must be closed and followed by "
            f"{delimiter!r} or the end of the line"
        ) from None


def _ragged(path: Path, side: str, delimiter: str, expected: int, count: int,
            header: bool) -> ReceValError:
    """An error naming the first line whose number of fields is not the header's."""
    reader = csv.reader(_csv_lines(path, side), delimiter=delimiter)
    line, found = None, None
    try:
        for i, row in enumerate(reader):
            if not row or (header and i == 0):
                continue
            if len(row) != expected:
                line, found = reader.line_num, len(row)
                break
    except csv.Error:
        pass
    where = f" at line {line}" if line is not None else ""
    fields = f"{found} field{'s' * (found != 1)}" if found is not None else "another count"
    rows = "1 bad row" if count == 1 else f"{count} bad rows"
    return ReceValError(
        f"{side} file {path} has {fields}{where} where the header has {expected} ({rows} in "
        f"all; is the delimiter {delimiter!r} right?)"
    )


def _combine(out: str, chunks: list[pa.Array]) -> pa.ChunkedArray:
    if out in ID_COLUMNS:
        return combine(chunks)
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
    name = next((src for out, src in columns.items() if out not in ID_COLUMNS), "?")
    found = _first_non_numeric(path, wanted, name, delimiter, read_options)
    if found is None:
        return ReceValError(f"{wanted.side} column {name!r} must be numeric; {path} holds "
                            f"{bad!r}")
    row, count = found
    header_lines = 0 if read_options.column_names else 1
    where = locator(path, "csv", header_lines)(row)
    return ReceValError(bad_rows(wanted.side, name, where, count, repr(bad),
                                 f"; {name!r} must be numeric"))


def _first_non_numeric(path: Path, wanted: Wanted, name: str, delimiter: str,
                       read_options: pacsv.ReadOptions) -> tuple[int, int] | None:
    """The 0-based data row of the first value that is not a number, and how many there are
    (error path only)."""
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
    return (int(bad[0]), len(bad)) if len(bad) else None
