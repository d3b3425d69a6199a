"""One side of a file read in bounded chunks, each checked as :func:`receval.io.read_table`
checks the whole file (the streaming path, :mod:`receval.streaming`).

A :class:`ChunkedSource` yields Arrow tables named ``user``, ``item`` and ``rating`` (truth) or
``score``/``rank`` (predictions), the wanted columns only, whose concatenation is the table
:func:`receval.io.read_table` returns, but for the id columns of text files: there the ids
stay text and :attr:`ChunkedSource.int_ids` says, once every chunk has been read, whether the
whole reader would have narrowed them to int64 (every parse batch canonical integers, the rule
of :func:`receval.io.ids.combine`). Parquet's ids have the type the file stores (narrowed as
:func:`receval.io.values.check_id_column` narrows them), known before the first chunk.
Errors name the file's line as the whole reader names it; counts of bad rows are those of the
chunk holding the first.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from receval.exceptions import ReceValError
from receval.io.delimited import (
    BLOCK_SIZE,
    _check_quoting,
    _explain,
    _holds_quote,
    _ragged,
    _unescape,
)
from receval.io.detect import detect_format, sniff_delimiter
from receval.io.formulas import restore_array
from receval.io.ids import ID_COLUMNS, narrow
from receval.io.lines import locator
from receval.io.source import check_file, head_lines, one_line, open_stream
from receval.io.values import check_id_column, check_value_column
from receval.io.wanted import Wanted

#: the formats a chunked read takes
CHUNKED_FORMATS = ("csv", "tsv", "parquet")


@dataclass
class ChunkedSource:
    """One input file, read chunk by chunk (:meth:`chunks`), never whole.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
        >>> _ = p.write_text("user,item,score\\n1,a,0.5\\n2,b,0.25\\n")
        >>> src = ChunkedSource.open(p, Wanted.predictions())
        >>> [t.to_pylist() for t in src.chunks()]
        [[{'user': '1', 'item': 'a', 'score': 0.5}, {'user': '2', 'item': 'b', 'score': 0.25}]]
        >>> src.int_ids
        {'user': True, 'item': False}
    """

    path: Path
    wanted: Wanted
    kind: str
    #: rows per chunk (Parquet; CSV chunks are Arrow's parse blocks)
    chunk_rows: int = 1 << 20
    delimiter: str | None = None
    header: bool = True
    #: output name -> source column, resolved on open
    columns: dict[str, str] = field(default_factory=dict)
    #: per id column: whether the whole reader reads it as int64 (text files: known after
    #: the last chunk; Parquet: from the schema)
    int_ids: dict[str, bool] = field(default_factory=dict)
    #: decode a Parquet chunk's columns on Arrow's threads (faster; tens of MB more held)
    threads: bool = False
    #: the text file's column names (its header, or positional names)
    names: list[str] = field(default_factory=list)

    @classmethod
    def open(
        cls,
        path: str | Path,
        wanted: Wanted,
        *,
        format: str = "auto",
        chunk_rows: int = 1 << 20,
        delimiter: str | None = None,
        header: bool = True,
    ) -> ChunkedSource:
        """The file checked, its format detected and its columns resolved; a one-line error
        for a format other than CSV, TSV or Parquet.

        Example:
            >>> ChunkedSource.open("/no/such.csv", Wanted.truth())
            Traceback (most recent call last):
            ...
            receval.exceptions.ReceValError: truth file not found: /no/such.csv
        """
        checked = check_file(path, wanted.side)
        kind = detect_format(checked, wanted.side, format)
        if kind not in CHUNKED_FORMATS:
            raise ReceValError(
                f"memory_budget streams CSV, TSV and Parquet files; the "
                f"{wanted.side} file {checked} is {kind} (convert it, or "
                "evaluate it in memory without a budget)"
            )
        src = cls(
            checked,
            wanted,
            kind,
            chunk_rows=max(int(chunk_rows), 1),
            delimiter=delimiter,
            header=header,
        )
        if kind == "parquet":
            try:
                names = pq.ParquetFile(checked).schema_arrow
            except (pa.ArrowInvalid, OSError) as err:
                raise ReceValError(
                    f"cannot read {wanted.side} file {checked}: {one_line(err)}"
                ) from None
            src.columns = wanted.resolve(names.names, checked)
            for out in ID_COLUMNS:
                kind_of = names.field(src.columns[out]).type
                if pa.types.is_dictionary(kind_of):
                    kind_of = kind_of.value_type
                src.int_ids[out] = pa.types.is_integer(kind_of) or pa.types.is_floating(kind_of)
        else:
            if kind == "tsv" and delimiter is None:
                src.delimiter = "\t"
            lines = head_lines(checked, wanted.side)
            src.delimiter = _unescape(src.delimiter) if src.delimiter else sniff_delimiter(lines)
            first = next(csv.reader([lines[0].lstrip("\ufeff")], delimiter=src.delimiter))
            src.names = first if header else wanted.positional(len(first))
            src.columns = wanted.resolve(src.names, checked)
        return src

    @property
    def rows(self) -> int | None:
        """The number of rows, from the footer (Parquet), else ``None``.

        Example:
            >>> import tempfile, pathlib
            >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
            >>> pq.write_table(pa.table({"user": [1, 2], "item": [3, 4]}), p)
            >>> ChunkedSource.open(p, Wanted.truth()).rows
            2
        """
        if self.kind != "parquet":
            return None
        return int(pq.ParquetFile(self.path).metadata.num_rows)

    def chunks(self) -> Iterator[pa.Table]:
        """The checked chunks in the file's row order (ids of text files as text)."""
        if self.kind == "parquet":
            yield from self._parquet()
        else:
            yield from self._delimited()

    def _checked(
        self, table: pa.Table, offset: int, where_kind: str, header_lines: int
    ) -> pa.Table:
        where = locator(self.path, where_kind, header_lines)

        def shifted(row: int) -> str:
            return where(row + offset)

        names = self.wanted.asked()
        for i, out in enumerate(table.column_names):
            name = names.get(out, out)
            if out in ID_COLUMNS:
                table = table.set_column(
                    i, out, check_id_column(table.column(i), self.wanted.side, name, shifted)
                )
            else:
                check_value_column(
                    table.column(i), self.wanted.side, name, shifted, users=table.column("user")
                )
        return table

    def _parquet(self) -> Iterator[pa.Table]:
        side, path = self.wanted.side, self.path
        offset = 0
        try:
            # column chunks streamed through a small buffer, not read whole: a row group of
            # 1M rows otherwise costs its compressed size in memory per column
            parquet = pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)
            schema = pa.schema([parquet.schema_arrow.field(src) for src in self.columns.values()])
            if parquet.metadata.num_rows == 0:
                raise ReceValError(f"{side} file {path} has no rows")
            for batch in parquet.iter_batches(
                batch_size=self.chunk_rows,
                columns=list(self.columns.values()),
                use_threads=self.threads,
            ):
                table = pa.Table.from_batches([batch], schema).rename_columns(list(self.columns))
                yield self._checked(table, offset, "parquet", 0)
                offset += batch.num_rows
        except (pa.ArrowInvalid, OSError) as err:
            raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None

    def _delimited(self) -> Iterator[pa.Table]:
        side, path, columns = self.wanted.side, self.path, self.columns
        assert self.delimiter is not None
        types = {
            src: pa.string() if out in ID_COLUMNS else pa.float64() for out, src in columns.items()
        }
        read_options = pacsv.ReadOptions(
            block_size=BLOCK_SIZE, column_names=None if self.header else self.names
        )
        ragged: list[int] = []

        def skip_ragged(row: pacsv.InvalidRow) -> str:
            ragged.append(row.actual_columns)
            return "skip"

        parse = pacsv.ParseOptions(delimiter=self.delimiter, invalid_row_handler=skip_ragged)
        convert = pacsv.ConvertOptions(
            include_columns=list(columns.values()), column_types=types, strings_can_be_null=False
        )
        stream, _ = open_stream(path, side)
        quoted, offset = False, 0
        self.int_ids = {out: True for out in ID_COLUMNS}
        try:
            with stream:
                reader = pacsv.open_csv(stream, read_options, parse, convert)
                for batch in reader:
                    cols = {}
                    for out, src in columns.items():
                        col = batch.column(src)
                        if out in ID_COLUMNS:
                            quoted = quoted or _holds_quote(col)
                            col = restore_array(col)
                            # the whole reader's rule (receval.io.ids.combine), batch by batch
                            self.int_ids[out] &= pa.types.is_integer(narrow(col).type)
                        cols[out] = col
                    if batch.num_rows:
                        yield self._checked(pa.table(cols), offset, "csv", 1 if self.header else 0)
                    offset += batch.num_rows
        except pa.ArrowInvalid as err:
            raise _explain(err, path, self.wanted, columns, self.delimiter, read_options) from None
        except (OSError, EOFError) as err:
            raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None
        if ragged:
            raise _ragged(path, side, self.delimiter, len(self.names), len(ragged), self.header)
        if quoted:
            _check_quoting(path, side, self.delimiter)
        if offset == 0:
            raise ReceValError(f"{side} file {path} has a header but no rows")
