"""What the Parquet footers of a local input say, read on the driver before any Spark job.

For inputs given as local Parquet paths (a file or a folder of them), the footers hold each
file's row count and, per column chunk, its null count: the Spark engine then needs no
counting job for ``partitions="auto"``, and no per-row null check in the shuffle (``g``, the
count of nulls that would shift the packed lists) when no column it packs holds a null;
and where every file has one schema of plain columns (integers, floats, strings, booleans),
that schema is handed to Spark's reader, which then infers none (measured on a quiet
2-core machine: 0.056 s per input, 0.013 s with the schema). Anything the footers do not
state (no statistics, a remote path, a frame, another column type) is unknown, and the engine
counts, checks and lets Spark infer as before.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass(frozen=True)
class Footers:
    """A Parquet input's rows, its columns whose every row group states zero nulls, and the
    Arrow schema every file shares (``None`` where the files differ or the folder is
    partitioned: ``key=value`` folders are columns Spark adds)."""

    rows: int
    no_nulls: frozenset[str]
    schema: pa.Schema | None = None


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
    schema: pa.Schema | None = None
    partitioned = any("=" in part for p in files if p != path
                      for part in p.relative_to(path).parts[:-1])
    try:
        for n, file in enumerate(files):
            with pq.ParquetFile(file) as opened:  # the footer only; the file closed after
                meta = opened.metadata
                rows += meta.num_rows
                clean = set(_no_null_columns(meta))
                no_nulls = clean if no_nulls is None else no_nulls & clean
                if n == 0:
                    schema = _schema(opened)
                elif schema is not None and schema != _schema(opened):
                    schema = None
    except (OSError, ValueError, pa.ArrowException):  # not a Parquet footer: unknown
        return None
    return Footers(rows=rows, no_nulls=frozenset(no_nulls or ()),
                   schema=None if partitioned else schema)


#: the Arrow types of plain columns and the Spark types Spark's Parquet reader infers for them
#: (``ParquetToSparkSchemaConverter``: INT32 annotated INT(8) and INT(16) are ``byte`` and
#: ``short``); any other type (unsigned, timestamps, decimals, binary, nested) is left to Spark
_PLAIN_TYPES = {pa.int8(): "byte", pa.int16(): "short", pa.int32(): "integer",
                pa.int64(): "long", pa.float32(): "float", pa.float64(): "double",
                pa.string(): "string", pa.bool_(): "boolean"}

#: where Spark's writer keeps the schema it wrote (Spark reads its types from there)
_SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"


def _schema(opened: pq.ParquetFile) -> pa.Schema:
    """The file's Arrow schema, with Spark's own record of it (when Spark wrote the file) as
    the schema's only metadata: two files agree when both do."""
    spark = (opened.metadata.metadata or {}).get(_SPARK_SCHEMA_KEY)
    schema = opened.schema_arrow.remove_metadata()
    return schema if spark is None else schema.with_metadata({_SPARK_SCHEMA_KEY: spark})


def spark_schema(footers: Footers | None) -> Any:
    """The Spark schema Spark's Parquet reader infers for the input (every column nullable),
    when every column is plain (:data:`_PLAIN_TYPES`) and, for files Spark wrote, Spark's
    record of the schema says the same with no field metadata (``char``/``varchar`` columns
    carry some); ``None`` otherwise (Spark infers it).

    Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> pq.write_table(pa.table({"user": pa.array([1], pa.int16()), "item": ["a"]}),
        ...                f"{folder}/a.parquet")
        >>> spark_schema(read_footers(folder)).simpleString()
        'struct<user:smallint,item:string>'
        >>> pq.write_table(pa.table({"at": pa.array([1], pa.timestamp("us"))}),
        ...                f"{folder}/b.parquet")
        >>> spark_schema(read_footers(f"{folder}/b.parquet")) is None
        True
    """
    schema = None if footers is None else footers.schema
    if schema is None or not all(f.type in _PLAIN_TYPES for f in schema):
        return None
    if len({f.name.lower() for f in schema}) != len(schema):  # Spark refuses these itself
        return None
    from pyspark.sql.types import StructType

    inferred = StructType.fromJson({"type": "struct", "fields": [
        {"name": f.name, "type": _PLAIN_TYPES[f.type], "nullable": True, "metadata": {}}
        for f in schema]})
    written = (schema.metadata or {}).get(_SPARK_SCHEMA_KEY)
    if written is not None:
        try:
            recorded = StructType.fromJson(json.loads(written))
        except (ValueError, KeyError, TypeError):
            return None
        if [(f.name, f.dataType, f.metadata) for f in recorded] != [
                (f.name, f.dataType, {}) for f in inferred]:
            return None
    return inferred


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
