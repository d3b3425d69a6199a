"""Parquet: only the wanted columns are read, row group by row group; the stored types are
kept."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from receval.exceptions import ReceValError
from receval.io.ids import ID_COLUMNS
from receval.io.source import Progress, one_line
from receval.io.wanted import Wanted


def read_parquet(path: Path, wanted: Wanted, *, progress: Progress | None = None) -> pa.Table:
    """Read the wanted columns of a Parquet file as ``user, item, value``.

    Example:
        >>> import tempfile, pathlib, pyarrow.parquet as pq
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
        >>> pq.write_table(pa.table({"u": [1], "i": ["x"], "ts": [0]}), p)
        >>> read_parquet(p, Wanted.truth(user_col="u", item_col="i")).to_pylist()
        [{'user': 1, 'item': 'x'}]
    """
    try:
        parquet = pq.ParquetFile(path)
        columns = wanted.resolve(parquet.schema_arrow.names, path)
        size, total = path.stat().st_size, max(parquet.metadata.num_rows, 1)
        ids = {columns[out] for out in ID_COLUMNS if out in columns}
        # whole row groups, as many at a time as Arrow has threads: one read decodes its row
        # groups' column chunks in parallel (one group at a time used 3 of 16 cores, and took
        # 5 s more than the frames at 100M rows); iter_batches decodes one batch at a time
        # (1.8x slower on 30M rows on 2 cores); a progress step per read
        parts, seen, step = [], 0, max(1, pa.cpu_count())
        for first in range(0, parquet.metadata.num_row_groups, step):
            groups = range(first, min(first + step, parquet.metadata.num_row_groups))
            part = parquet.read_row_groups(groups, columns=list(columns.values()),
                                           use_threads=True)
            parts.append(_small_offsets(part, ids))
            seen += part.num_rows
            if progress is not None:
                progress(size * seen // total)
        table = pa.Table.from_batches(
            [b for part in parts for b in part.to_batches()],
            parts[0].schema if parts else _small_offsets(
                parquet.schema_arrow.empty_table().select(list(columns.values())), ids).schema,
        )
    except (pa.ArrowInvalid, OSError) as err:
        raise ReceValError(f"cannot read {wanted.side} file {path}: {one_line(err)}") from None
    if table.num_rows == 0:
        raise ReceValError(f"{wanted.side} file {path} has no rows")
    return table.rename_columns(list(columns))


def _small_offsets(part: pa.Table, ids: set[str]) -> pa.Table:
    """``part``'s text id columns with 32-bit offsets (``large_string``, as pandas writes its
    ``str`` columns, and ``string_view`` become ``string``), cast as each part is read: the
    whole column cast at once held both copies of every row's text (the checks cast it
    anyway), and the allocator kept the freed pages.

    Example:
        >>> t = pa.table({"user": pa.array(["a"], pa.large_string()), "x": [1]})
        >>> _small_offsets(t, {"user"}).schema.field("user").type
        DataType(string)
    """
    for i, field in enumerate(part.schema):
        if field.name in ids and (pa.types.is_large_string(field.type)
                                  or pa.types.is_string_view(field.type)):
            part = part.set_column(i, field.with_type(pa.string()),
                                   part.column(i).cast(pa.string()))
    return part
