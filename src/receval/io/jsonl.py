"""JSON Lines: one object per line; only the wanted fields are parsed (the others are ignored)."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pajson

from receval.exceptions import ReceValError
from receval.io.ids import ID_COLUMNS
from receval.io.source import Progress, head_text, one_line, open_stream
from receval.io.wanted import Wanted

BLOCK_SIZE = 8 << 20


def read_jsonl(path: Path, wanted: Wanted, *, progress: Progress | None = None) -> pa.Table:
    """Read the wanted fields of a JSON Lines file (gzip or not) as ``user, item, value``.

    Field types come from the first lines: integer ids stay integers, any other id is a string,
    values are float64.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "p.jsonl"
        >>> _ = p.write_text('{"user": 1, "item": "a", "score": 2, "meta": [1]}\\n')
        >>> read_jsonl(p, Wanted.predictions()).to_pylist()
        [{'user': 1, 'item': 'a', 'score': 2.0}]
    """
    head = _read(io.BytesIO(head_text(path, wanted.side).encode()), None, path, wanted)
    columns = wanted.resolve(head.column_names, path)
    schema = pa.schema([
        (src, _id_type(head.schema.field(src).type) if out in ID_COLUMNS else pa.float64())
        for out, src in columns.items()
    ])
    stream, done = open_stream(path, wanted.side)
    with stream:
        table = _read(stream, schema, path, wanted, progress, done)
    if table.num_rows == 0:
        raise ReceValError(f"{wanted.side} file {path} has no rows")
    return table.select(list(columns.values())).rename_columns(list(columns))


def _id_type(inferred: pa.DataType) -> pa.DataType:
    return pa.int64() if pa.types.is_integer(inferred) else pa.string()


def _read(source: object, schema: pa.Schema | None, path: Path, wanted: Wanted,
          progress: Progress | None = None,
          done: Callable[[], int] | None = None) -> pa.Table:
    parse = pajson.ParseOptions(
        explicit_schema=schema, unexpected_field_behavior="ignore" if schema else "infer"
    )
    read = pajson.ReadOptions(block_size=BLOCK_SIZE)
    try:
        if schema is None or not hasattr(pajson, "open_json"):  # open_json: pyarrow >= 19
            return pajson.read_json(source, read, parse)
        batches = []
        for batch in pajson.open_json(source, read, parse):
            batches.append(batch)
            if progress is not None and done is not None:
                progress(done())
        return pa.Table.from_batches(batches, schema)
    except pa.ArrowInvalid as err:
        message = one_line(err)
        match = re.search(r"Column\(/(.+?)\) changed from (\w+) to (\w+)", message)
        if match and match.group(2) == "number" and match.group(1) == wanted.value:
            raise ReceValError(
                f"{wanted.side} field {match.group(1)!r} must be numeric in {path}; "
                f"{message.split('JSON parse error: ')[-1]}"
            ) from None
        raise ReceValError(f"cannot read {wanted.side} file {path}: {message}") from None
    except OSError as err:
        raise ReceValError(f"cannot read {wanted.side} file {path}: {one_line(err)}") from None
