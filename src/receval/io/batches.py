"""A Parquet file read in batches of rows, in the file's order, and its footer's facts (column
names, number of rows): the off-policy log under a memory budget reads its inputs through
these. Every problem is one line naming the file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from receval.exceptions import ReceValError
from receval.io.source import one_line


def open_parquet(path: Path, side: str) -> pq.ParquetFile:
    """The Parquet file at ``path`` opened for batch reads (its footer read), or one line naming
    the ``side`` and the file.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "t.parquet"
        >>> pq.write_table(pa.table({"request": [1, 2]}), p)
        >>> open_parquet(p, "log").metadata.num_rows
        2
    """
    try:
        return pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)
    except (pa.ArrowInvalid, OSError) as err:
        raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None


def parquet_schema(path: Path, side: str) -> pa.Schema:
    """The file's Arrow schema (from its footer).

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "t.parquet"
        >>> pq.write_table(pa.table({"request": [1, 2]}), p)
        >>> parquet_schema(p, "log").names, parquet_rows(p, "log")
        (['request'], 2)
    """
    return open_parquet(path, side).schema_arrow


def parquet_rows(path: Path, side: str) -> int:
    """The file's number of rows (from its footer)."""
    return int(open_parquet(path, side).metadata.num_rows)


def parquet_batches(path: Path, side: str, rows: int) -> Iterator[pa.Table]:
    """The file's rows, ``rows`` at a time, in its order (column chunks streamed through a
    small buffer, not read whole).

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "t.parquet"
        >>> pq.write_table(pa.table({"request": [1, 2, 3]}), p)
        >>> [t.num_rows for t in parquet_batches(p, "log", 2)]
        [2, 1]
    """
    try:
        for batch in open_parquet(path, side).iter_batches(batch_size=max(int(rows), 1)):
            yield pa.Table.from_batches([batch])
    except (pa.ArrowInvalid, OSError) as err:
        raise ReceValError(f"cannot read {side} file {path}: {one_line(err)}") from None


def is_parquet(path: Path) -> bool:
    """Whether ``path`` is a file that starts with Parquet's magic bytes.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "t.parquet"
        >>> pq.write_table(pa.table({"request": [1]}), p)
        >>> is_parquet(p), is_parquet(p.with_suffix(".csv"))
        (True, False)
    """
    if not path.is_file():
        return False
    with open(path, "rb") as fh:
        return fh.read(4) == b"PAR1"
