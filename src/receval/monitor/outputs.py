"""What a monitor writes besides its pages: the windows and comparisons as plain records (JSON,
CSV), its options as JSON values, and the late feedback rows (``late_out``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from receval.scalars import plain


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain Python: times as ISO text, non-finite floats as ``None``.

    Example:
        >>> records(pd.DataFrame({"t": [pd.Timestamp(0, tz="UTC")], "P@1": [float("nan")]}))
        [{'t': '1970-01-01T00:00:00+00:00', 'P@1': None}]
    """
    out = []
    for row in frame.to_dict(orient="records"):
        clean: dict[str, Any] = {}
        for k, v in row.items():
            if isinstance(v, pd.Timestamp):
                v = v.isoformat()
            v = plain(v)
            if isinstance(v, float) and not math.isfinite(v):
                v = None
            clean[str(k)] = v
        out.append(clean)
    return out


def jsonable(value: Any) -> Any:
    """An option's value as JSON can hold it: numpy scalars plain, lists kept, anything else
    its ``repr``.

    Example:
        >>> jsonable([np.int64(3), "a", None]), jsonable(print)
        ([3, 'a', None], '<built-in function print>')
    """
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    value = plain(value)
    return value if isinstance(value, str | int | float | bool | type(None)) else repr(value)


def write_late(rows: pd.DataFrame, path: str | Path) -> None:
    """The late feedback rows (times as UTC timestamps) to ``path`` (CSV, TSV or Parquet).

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "late.csv"
        >>> write_late(pd.DataFrame({"user": [1], "at": [0], "reason": ["late"]}), path)
        >>> path.read_text().splitlines()[1]
        '1,1970-01-01 00:00:00.000000000Z,"late"'
    """
    import pyarrow as pa

    from receval.io.output import write_table

    frame = rows.copy()
    frame["at"] = pd.to_datetime(frame["at"].to_numpy(dtype=np.int64), unit="ns", utc=True)
    write_table(pa.Table.from_pandas(frame, preserve_index=False), path, label="late feedback")
