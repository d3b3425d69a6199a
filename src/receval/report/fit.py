"""Text tables that fit the terminal: no cell is ever cut, no mark (``*``, letters) is lost.

rich squeezes a table wider than the console by cutting cells (``0.0…``), which can hide the
``*`` of a significant row. Here every column is as wide as its widest cell (a header may wrap
at its spaces), and when the table is wider than the console:

- :func:`drop_to_fit` leaves out the least important columns, in a given order, until it fits
  (the caller says which ones in a note, and that ``-f markdown`` or ``-f csv`` shows them all);
- :func:`split_to_fit` cuts the columns into several tables, each repeating the key columns.

A console that is not a terminal (a pipe, a file) has no width limit here: the table is whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Group
from rich.table import Table
from rich.text import Text

#: what a rich table adds to its columns' widths with the default box and padding: one space
#: each side of a cell, one border between columns and at each edge
_PAD, _EDGE = 2, 1


def column_width(header: str, cells: Sequence[str], wrap: bool = True) -> int:
    """The width a column needs: its widest cell, or its header (with ``wrap``, the header's
    longest word: it wraps at its spaces), whichever is wider.

    Example:
        >>> column_width("baseline mean", ["0.0546", "0.1"])
        8
        >>> column_width("baseline mean", ["0.0546", "0.1"], wrap=False)
        13
        >>> column_width("p adjusted", ["3.26e-29*"])
        9
    """
    words = max((cell_len(w) for w in (header.split() if wrap else [header])), default=0)
    return max([words, *(cell_len(c) for c in cells)])


def table_width(widths: Sequence[int]) -> int:
    """The width of a rich table (default box and padding) whose columns are ``widths`` wide.

    Example:
        >>> table_width([5, 10])
        22
    """
    return sum(widths) + _PAD * len(widths) + _EDGE * (len(widths) + 1)


def drop_to_fit(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int,
                drop_order: Sequence[str], wrap: bool = True) -> list[int]:
    """The indices of the columns kept so the table fits ``width``: columns named in
    ``drop_order`` are left out first to last until it fits; the others always stay (the
    table may then still be wider than ``width``).

    Example:
        >>> headers = ["metric", "delta", "W/T/L", "p"]
        >>> rows = [["nDCG@10", "+0.0168", "180/313/117", "0.017*"]]
        >>> drop_to_fit(headers, rows, 80, ["W/T/L"])
        [0, 1, 2, 3]
        >>> drop_to_fit(headers, rows, 30, ["W/T/L"])
        [0, 1, 3]
    """
    widths = [column_width(h, [r[i] for r in rows], wrap) for i, h in enumerate(headers)]
    kept = list(range(len(headers)))
    for name in drop_order:
        if table_width([widths[i] for i in kept]) <= width:
            break
        if name in headers and headers.index(name) in kept:
            kept.remove(headers.index(name))
    return kept


def split_to_fit(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int,
                 keys: int = 1, wrap: bool = True) -> list[list[int]]:
    """The columns cut into consecutive parts that each fit ``width`` with the first ``keys``
    columns repeated in every part (a part always has at least one column beyond the keys).

    Example:
        >>> headers = ["metric", "model_a", "model_b", "model_c"]
        >>> rows = [["nDCG@10", "0.1234 ᵇᶜ", "0.1000", "0.0900"]]
        >>> split_to_fit(headers, rows, 100)
        [[0, 1, 2, 3]]
        >>> split_to_fit(headers, rows, 32)
        [[0, 1], [0, 2, 3]]
    """
    widths = [column_width(h, [r[i] for r in rows], wrap) for i, h in enumerate(headers)]
    parts: list[list[int]] = []
    part = list(range(keys))
    for i in range(keys, len(headers)):
        if len(part) > keys and table_width([widths[j] for j in [*part, i]]) > width:
            parts.append(part)
            part = list(range(keys))
        part.append(i)
    parts.append(part)
    return parts


def fixed_table(headers: Sequence[str], rows: Sequence[Sequence[str]], columns: Sequence[int],
                *, right: Sequence[str] = (), bold: Sequence[str] = (),
                title: str | None = None, wrap: bool = True) -> Table:
    """A rich table of ``columns`` (indices into ``headers`` and each row), each column as wide
    as :func:`column_width` says and its cells never wrapped or cut; the cells are shown as
    text (no markup). ``right``: headers of right-aligned columns; ``bold``: bold ones;
    ``wrap``: whether a header may wrap at its spaces (as in :func:`column_width`).

    Example:
        >>> from rich.console import Console
        >>> console = Console(width=40, record=True)
        >>> table = fixed_table(["metric", "p adjusted"], [["MRR", "0.0131*"]], [0, 1],
        ...                     right=["p adjusted"])
        >>> console.print(table)  # doctest: +NORMALIZE_WHITESPACE
        ┏━━━━━━━━┳━━━━━━━━━━┓
        ┃        ┃        p ┃
        ┃ metric ┃ adjusted ┃
        ┡━━━━━━━━╇━━━━━━━━━━┩
        │ MRR    │  0.0131* │
        └────────┴──────────┘
    """
    table = Table(title=None if title is None else Text(title))
    for i in columns:
        table.add_column(Text(headers[i]),
                         width=column_width(headers[i], [r[i] for r in rows], wrap),
                         justify="right" if headers[i] in right else "left",
                         style="bold" if headers[i] in bold else None)
    for row in rows:  # as wide as its column: never wrapped
        table.add_row(*(Text(row[i], no_wrap=True) for i in columns))
    return table


def fit_tables(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, *,
               keys: int = 1, right: Sequence[str] = (), title: str | None = None,
               caption: str | None = None) -> Group:
    """Every column of a table on a terminal ``width`` columns wide, no cell cut: as one table
    when it fits, else as consecutive parts (:func:`split_to_fit`), each repeating the first
    ``keys`` columns (what names a row); headers wrap at their spaces, cells never.

    Example:
        >>> from rich.console import Console
        >>> console = Console(width=36, record=True)
        >>> rows = [["2024-01-01", "0.1234", "[0.1000, 0.2000]", "120"]]
        >>> console.print(fit_tables(["window", "P@10", "interval", "evaluated (n)"], rows, 36,
        ...                          right=["P@10", "interval", "evaluated (n)"]))
        ... # doctest: +NORMALIZE_WHITESPACE
        ┏━━━━━━━━━━━━┳━━━━━━━━┓
        ┃ window     ┃   P@10 ┃
        ┡━━━━━━━━━━━━╇━━━━━━━━┩
        │ 2024-01-01 │ 0.1234 │
        └────────────┴────────┘
        ┏━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━┓
        ┃ window     ┃         interval ┃
        ┡━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━┩
        │ 2024-01-01 │ [0.1000, 0.2000] │
        └────────────┴──────────────────┘
        ┏━━━━━━━━━━━━┳━━━━━━━━━━━┓
        ┃            ┃ evaluated ┃
        ┃ window     ┃       (n) ┃
        ┡━━━━━━━━━━━━╇━━━━━━━━━━━┩
        │ 2024-01-01 │       120 │
        └────────────┴───────────┘
    """
    parts = split_to_fit(headers, rows, width, keys=keys)
    tables = []
    for n, columns in enumerate(parts):
        table = fixed_table(headers, rows, columns, right=right,
                            title=title if n == 0 else None)
        if title is not None:
            table.title_justify = "left"
        if caption is not None and n == len(parts) - 1:
            table.caption = Text(caption)
        tables.append(table)
    return Group(*tables)
