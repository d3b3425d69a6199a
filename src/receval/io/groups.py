"""Reading a user -> group file (``--strata``): CSV, TSV or Parquet, a user column and a group
column, for :func:`receval.strata.as_mapping`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from receval.exceptions import ReceValError


def read_user_groups(path: str | Path, *, user_col: str = "user", delimiter: str | None = None,
                     text_ids: bool = False) -> pd.DataFrame:
    """The user -> group file as a frame with its user column named ``user``, its user ids text
    when the evaluation's are (``text_ids``).

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "groups.csv"
        >>> _ = path.write_text("uid,group\\n7,a\\n8,b\\n")
        >>> read_user_groups(path, user_col="uid", text_ids=True).values.tolist()
        [['7', 'a'], ['8', 'b']]
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        frame = pd.read_parquet(path)
    else:
        frame = pd.read_csv(path, sep=delimiter or ("\t" if suffix == ".tsv" else ","),
                            dtype=str if text_ids else None)
    if user_col not in frame.columns:
        raise ReceValError(f"strata file {path} has no column {user_col!r} (columns: "
                           f"{', '.join(map(str, frame.columns))})")
    if text_ids:  # string ids: the file's ids as text too
        frame[user_col] = frame[user_col].astype(str)
    return frame.rename(columns={user_col: "user"})
