"""What the Parquet footers of a local input say, read on the driver before any Spark job.

For inputs given as local Parquet paths (a file or a folder of them), the footers hold each
file's row count and, per column chunk, its null count: the Spark engine then needs no
counting job for ``partitions="auto"``, and no per-row null check in the shuffle (``g``, the
count of nulls that would shift the packed lists) when no column it packs holds a null.
Anything the footers do not state (no statistics, a remote path, a frame) is unknown, and the
engine counts and checks as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass(frozen=True)
class Footers:
    """A Parquet input's rows and, per column, whether every row group states zero nulls."""

    rows: int
    no_nulls: frozenset[str]


def read_footers(source: Any) -> Footers | None:
    """The footers of a local Parquet file or folder (every file Spark reads there: hidden
    and ``_``-prefixed ones left out); ``None`` for anything else or when a file is no Parquet
    receval can read.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> folder = tempfile.mkdtemp()
        >>> pq.write_table(pa.table({"user": [1, 2], "score": [0.5, None]}), f"{folder}/a.parquet")
        >>> f = read_footers(f"{folder}/a.parquet")
        >>> f.rows, sorted(f.no_nulls)
        (2, ['user'])
        >>> read_footers(folder).rows, read_footers("s3://bucket/x.parquet"), read_footers(None)
        (2, None, None)
    """
    if not isinstance(source, str | os.PathLike):
        return None
    path = Path(os.fspath(source))
    if "://" in os.fspath(source) or not path.exists():
        return None
    # every file Spark would read (not only *.parquet: a file that is no Parquet makes the
    # answer unknown, so no file's nulls go unseen)
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*") if p.is_file()
        and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts))
    if not files:
        return None
    rows, no_nulls = 0, None
    try:
        for file in files:
            meta = pq.ParquetFile(file).metadata
            rows += meta.num_rows
            clean = set(_no_null_columns(meta))
            no_nulls = clean if no_nulls is None else no_nulls & clean
    except (OSError, ValueError, pa.ArrowException):  # not a Parquet footer: unknown
        return None
    return Footers(rows=rows, no_nulls=frozenset(no_nulls or ()))


def _no_null_columns(meta: Any) -> Iterable[str]:
    """The top-level columns whose every row group states a null count of 0."""
    schema = meta.schema
    for j in range(meta.num_columns):
        column = schema.column(j)
        if "." in column.path:  # a nested column: not an id or value the engine packs
            continue
        stated = True
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(j).statistics
            if stats is None or not stats.has_null_count or stats.null_count != 0:
                stated = False
                break
        if stated:
            yield column.name
