"""Event and prediction tables read into pandas, with one-line errors for what is missing."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from receval.exceptions import ReceValError


def as_frame(obj: Any, side: str) -> pd.DataFrame:
    """``obj`` as a pandas DataFrame: a DataFrame (not copied), a dict of columns, a polars
    frame, a pyarrow Table, or a CSV/TSV/Parquet/JSON Lines path.

    Example:
        >>> as_frame({"user": [1], "item": [2]}, "test").columns.tolist()
        ['user', 'item']
        >>> as_frame(3, "test")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: test: expected a table ... got int
    """
    if isinstance(obj, pd.DataFrame):
        return obj
    if isinstance(obj, str | Path):
        return _read(Path(obj), side)
    if isinstance(obj, dict):
        return pd.DataFrame(obj)
    if hasattr(obj, "to_pandas"):  # polars, pyarrow
        return obj.to_pandas()
    raise ReceValError(
        f"{side}: expected a table (a DataFrame, a dict of columns or a path), "
        f"got {type(obj).__name__}"
    )


#: columns read as ids when a file has them
_ID_COLUMNS = ("user", "item", "session", "query")


def _read(path: Path, side: str) -> pd.DataFrame:
    """A file by its extension; a missing file is a one-line error."""
    if not path.is_file():
        raise ReceValError(f"{side}: no such file: {path}")
    from receval.io.frames import read_frame

    # receval's one reader: ids stay text unless every one is a plain integer (007 is not 7)
    return read_frame(path, side, ids=_ID_COLUMNS).to_pandas()


def require(frame: pd.DataFrame, columns: Iterable[str], side: str) -> None:
    """A one-line error naming the columns ``frame`` lacks.

    Example:
        >>> require(pd.DataFrame({"user": [1]}), ["user", "item"], "train")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: train: missing column 'item' (columns: 'user')
    """
    for col in columns:
        if col not in frame.columns:
            have = ", ".join(repr(str(c)) for c in frame.columns)
            raise ReceValError(f"{side}: missing column {col!r} (columns: {have})")
