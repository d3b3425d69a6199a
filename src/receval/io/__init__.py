"""Read truth and predictions files into Arrow tables that :func:`receval.evaluate` accepts.

Formats: CSV and TSV (delimiter sniffed; header, or ``header=False`` for positional columns),
Parquet, JSON Lines, TREC qrels and runs; any text format may be gzip-compressed. Each reader
loads only the columns it needs and returns ``user``, ``item`` and ``rating`` (truth) or
``score`` (predictions; ``rank`` when the file has a rank column and no score).

Example:
    >>> import tempfile, pathlib, receval
    >>> from receval.io import read_truth, read_predictions
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "test.qrels").write_text("q1 0 d1 1\\nq1 0 d2 0\\n")
    >>> _ = (d / "bm25.run").write_text("q1 Q0 d2 1 2.0 bm25\\nq1 Q0 d1 2 1.0 bm25\\n")
    >>> truth, run = read_truth(d / "test.qrels"), read_predictions(d / "bm25.run")
    >>> receval.evaluate(truth, run, ["P@1", "MRR"], relevance_threshold=1).summary
    {'P@1': 0.0, 'MRR': 0.5}
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa

from receval.io.delimited import read_delimited
from receval.io.detect import FORMATS, detect_format
from receval.io.features import read_item_features
from receval.io.ids import ID_COLUMNS, align_id_types
from receval.io.jsonl import read_jsonl
from receval.io.lines import locator
from receval.io.parquet import read_parquet
from receval.io.source import Progress, check_file
from receval.io.trec import read_trec
from receval.io.values import Where, check_id_column, check_value_column
from receval.io.wanted import Wanted

#: schema metadata key of a table read from a file: its side, path, columns and those asked for
SOURCE_KEY = b"receval.source"

__all__ = [
    "FORMATS",
    "SOURCE_KEY",
    "Progress",
    "align_id_types",
    "detect_format",
    "model_names",
    "read_item_features",
    "read_predictions",
    "read_table",
    "read_truth",
]


def read_truth(
    path: str | Path,
    *,
    format: str = "auto",
    user_col: str = "user",
    item_col: str = "item",
    rating_col: str = "rating",
    columns: Mapping[str, str] | None = None,
    header: bool = True,
    delimiter: str | None = None,
    progress: Progress | None = None,
) -> pa.Table:
    """Read a truth file: ``user``, ``item`` and, when the file has one, ``rating``.

    ``columns`` (``{"user": "userId", "item": "movieId", "rating": "r"}``) overrides the
    ``*_col`` names. Ids that are canonical integers in every row are int64, else strings
    (``"007"`` and ``"7"`` stay two ids). Bad values are errors naming the file's line.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.tsv"
        >>> _ = p.write_text("uid\\tiid\\tstars\\nu1\\ti1\\t4\\n")
        >>> read_truth(p, user_col="uid", item_col="iid", rating_col="stars").to_pylist()
        [{'user': 'u1', 'item': 'i1', 'rating': 4.0}]
    """
    wanted = Wanted.truth(user_col=user_col, item_col=item_col, rating_col=rating_col,
                          columns=columns)
    return read_table(path, wanted, format=format, header=header, delimiter=delimiter,
                      progress=progress)


def read_predictions(
    path: str | Path,
    *,
    format: str = "auto",
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    columns: Mapping[str, str] | None = None,
    header: bool = True,
    delimiter: str | None = None,
    progress: Progress | None = None,
) -> pa.Table:
    """Read a predictions file: ``user``, ``item`` and ``score`` (or ``rank``, 1 = best).

    ``columns`` (``{"user": ..., "item": ..., "score": ...}``) overrides the ``*_col`` names.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
        >>> _ = p.write_text("u1,i1,0.5\\n")
        >>> read_predictions(p, header=False).to_pylist()
        [{'user': 'u1', 'item': 'i1', 'score': 0.5}]
    """
    wanted = Wanted.predictions(user_col=user_col, item_col=item_col, score_col=score_col,
                                columns=columns)
    return read_table(path, wanted, format=format, header=header, delimiter=delimiter,
                      progress=progress)


def read_table(
    path: str | Path,
    wanted: Wanted,
    *,
    format: str = "auto",
    header: bool = True,
    delimiter: str | None = None,
    progress: Progress | None = None,
) -> pa.Table:
    """Read one side in any supported format (see :func:`read_truth`, :func:`read_predictions`).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
        >>> _ = p.write_text('{"user": "a", "item": "x"}\\n')
        >>> read_table(p, Wanted.truth()).column_names
        ['user', 'item']
    """
    path = check_file(path, wanted.side)
    kind = detect_format(path, wanted.side, format)
    if kind == "parquet":
        table = read_parquet(path, wanted, progress=progress)
    elif kind == "jsonl":
        table = read_jsonl(path, wanted, progress=progress)
    elif kind == "trec":
        table = read_trec(path, wanted.side, progress=progress)
    else:
        if kind == "tsv" and delimiter is None:
            delimiter = "\t"
        table = read_delimited(path, wanted, delimiter=delimiter, header=header,
                               progress=progress)
    line_kind = {"tsv": "csv", "csv": "csv"}.get(kind, kind)
    where = locator(path, line_kind, 1 if line_kind == "csv" and header else 0)
    names = {} if kind == "trec" else wanted.asked()
    table = _checked(table, wanted.side, names, where)
    return _with_source(table, wanted, path, kind)


def _checked(table: pa.Table, side: str, names: dict[str, str], where: Where) -> pa.Table:
    """Ids narrowed to int64 or strings and values checked, or an error naming the line."""
    for i, out in enumerate(table.column_names):
        name = names.get(out, out)
        if out in ID_COLUMNS:
            table = table.set_column(i, out, check_id_column(table.column(i), side, name,
                                                             where))
        else:
            check_value_column(table.column(i), side, name, where, users=table.column("user"))
    return table


def _with_source(table: pa.Table, wanted: Wanted, path: Path, kind: str) -> pa.Table:
    """``table`` carrying where it comes from, so a later message names the file's columns,
    and its format (Parquet and JSON Lines store an id's type; text formats do not)."""
    source = {"side": wanted.side, "path": str(path), "found": list(wanted.found),
              "asked": wanted.asked(), "format": kind}
    return table.replace_schema_metadata({SOURCE_KEY: json.dumps(source).encode()})


def model_names(paths: Sequence[str | Path]) -> list[str]:
    """One name per predictions file: its stem (``runs/bm25.run.gz`` -> ``bm25``), made unique
    with the parent folder, then a counter.

    Example:
        >>> model_names(["a/run.csv", "b/run.csv", "bm25.run.gz"])
        ['a/run', 'b/run', 'bm25']
    """
    stems = [_stem(Path(p)) for p in paths]
    names = [
        f"{Path(p).parent.name}/{s}" if stems.count(s) > 1 and Path(p).parent.name else s
        for p, s in zip(paths, stems, strict=True)
    ]
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if names.count(name) == 1 else f"{name}#{seen[name]}")
    return out


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".gzip"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return Path(name).stem or name
