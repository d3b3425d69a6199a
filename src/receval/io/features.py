"""The item features file (``item_features=`` / ``--item-features``): an item column and its
feature column(s), read with the id policy of every other receval reader (``"007"`` and
``"7"`` stay two items) and named the way the other files' columns are named:
``item_features_columns={"item": "movieId", "features": "genres"}`` in Python,
``--item-features-columns item=movieId,features=genres`` on the command line.

What the values mean (categories, ``a|b`` lists, embeddings) is decided in one place,
:func:`receval.beyond.frames.read_features`, for files and frames alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from receval.exceptions import ReceValError
from receval.io.detect import detect_format, sniff_delimiter
from receval.io.ids import narrow
from receval.io.lines import locator
from receval.io.source import check_file, head_lines, one_line
from receval.io.values import check_id_column

#: the roles of ``item_features_columns`` / ``--item-features-columns``
ROLES = ("item", "features")
SIDE = "item features"
FLAG = "--item-features-columns"
ARGUMENT = "item_features_columns"


def features_columns(columns: Mapping[str, str] | None, item_col: str = "item"
                     ) -> tuple[str, str | None]:
    """``(item column, feature column or None: every other column)`` from
    ``item_features_columns``; an unknown role is a one-line error naming both spellings.

    Example:
        >>> features_columns({"item": "movieId", "features": "genres"})
        ('movieId', 'genres')
        >>> features_columns(None, "iid")
        ('iid', None)
        >>> features_columns({"genre": "g"})
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: item_features_columns has an unknown key 'genre'; \
its keys are 'item', 'features' (--item-features-columns likewise)
    """
    if columns is None:
        return item_col, None
    if not isinstance(columns, Mapping):
        raise ReceValError(f"{ARGUMENT} must be a dict such as {{'item': 'movieId', "
                           f"'features': 'genres'}}; got {type(columns).__name__}")
    for key in columns:
        if key not in ROLES:
            raise ReceValError(f"{ARGUMENT} has an unknown key {key!r}; its keys are "
                               f"{', '.join(map(repr, ROLES))} ({FLAG} likewise)")
    return columns.get("item", item_col), columns.get("features")


def parse_features_flag(text: str | None) -> dict[str, str] | None:
    """``"item=movieId,features=genres"`` (an ``--item-features-columns`` value) as a dict.

    Example:
        >>> parse_features_flag("item=movieId, features=genres")
        {'item': 'movieId', 'features': 'genres'}
        >>> parse_features_flag("genres")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: --item-features-columns takes ROLE=NAME pairs \
separated by commas (e.g. item=movieId,features=genres); got 'genres'
    """
    if text is None:
        return None
    out: dict[str, str] = {}
    for pair in text.split(","):
        role, sep, name = (p.strip() for p in pair.partition("="))
        if not sep or not role or not name:
            raise ReceValError(f"{FLAG} takes ROLE=NAME pairs separated by commas "
                               f"(e.g. item=movieId,features=genres); got {text!r}")
        out[role] = name
    features_columns(out)  # the roles checked
    return out


def read_item_features(path: str | Path, *, columns: Mapping[str, str] | None = None,
                       item_col: str = "item", delimiter: str | None = None,
                       side: str = SIDE, fix: str | None = None) -> pa.Table:
    """The item features file (CSV, TSV, Parquet or JSON Lines; gzip welcome) as a table
    with the item column first, named ``item`` (int64 when every id is a canonical integer,
    else text), then the feature column named by ``columns["features"]``, or every other
    column. ``side`` and ``fix`` (the flag that names the item column) are for another item
    table read the same way (the report's ``--items`` titles).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "movies.csv"
        >>> _ = p.write_text('movieId,title,genres\\n007,"Heat, 1995",Action|Crime\\n7,Up,Kids\\n')
        >>> t = read_item_features(p, columns={"item": "movieId", "features": "genres"})
        >>> t.to_pylist()
        [{'item': '007', 'genres': 'Action|Crime'}, {'item': '7', 'genres': 'Kids'}]
        >>> _ = p.write_text('movieId,genres\\n10,Action|Crime\\n7,Kids\\n')
        >>> read_item_features(p, columns={"item": "movieId"}).column("item").type
        DataType(int64)
    """
    file = check_file(path, side)
    item, feature = features_columns(columns, item_col)
    kind = detect_format(file, side)
    try:
        if kind == "parquet":
            table = pq.read_table(file)
        elif kind == "jsonl":
            table = pajson.read_json(file)
        elif kind in ("csv", "tsv"):
            lines = head_lines(file, side)
            sep = delimiter or ("\t" if kind == "tsv" else sniff_delimiter(lines))
            table = pacsv.read_csv(
                file, parse_options=pacsv.ParseOptions(delimiter=sep),
                # ids as text: narrowed to int64 only when canonical ("007" stays "007")
                convert_options=pacsv.ConvertOptions(column_types={item: pa.string()},
                                                     strings_can_be_null=False))
        else:
            raise ReceValError(f"{side} file {file}: a {kind} file holds no item table; use "
                               "CSV, TSV, Parquet or JSON Lines")
    except (pa.ArrowInvalid, OSError) as err:
        raise ReceValError(f"{side} file {file}: {one_line(err)}") from None
    names = table.column_names
    wanted = [item] + ([feature] if feature is not None else [])
    missing = [n for n in wanted if n not in names]
    if missing:
        roles = ",".join(f"{r}=NAME" for r, n in zip(ROLES, wanted, strict=False)
                         if n in missing)
        hint = fix or f"{FLAG} {roles} / {ARGUMENT}={{...}}"
        raise ReceValError(f"{side} file {file} has no column {missing[0]!r}; its "
                           f"columns are: {', '.join(map(repr, names))} (pass {hint})")
    keep = wanted if feature is not None else [item] + [n for n in names if n != item]
    table = table.select(keep)
    where = locator(file, "csv" if kind in ("csv", "tsv") else kind, 1)
    ids = check_id_column(table.column(0), side, item, where)
    return table.set_column(0, "item", pa.chunked_array([narrow(ids.combine_chunks())]))
