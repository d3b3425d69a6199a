"""The one path every text table receval prints or returns goes through: CSV, TSV, Markdown, LaTeX.

Names in these tables come from the data and from file names (models, variants, groups,
metrics), so a cell may hold ``=1+2`` or an escape sequence. Every cell is made safe here:

- **control characters** are escaped in every format (``\\x1b`` becomes the four characters
  ``\\x1b``, see :mod:`receval.io.terminal`): what reaches stdout is data, never a terminal
  command, a carriage return that hides a cell, or a line break that invents a row;
- **formula cells** of CSV/TSV (a text cell starting with ``=``, ``+``, ``-``, ``@``) get a ``'``
  in front unless ``raw`` (:mod:`receval.io.formulas`); numbers are never touched. Markdown and
  LaTeX are not opened by spreadsheets cell by cell, and a quote there would be printed, so
  their cells get their own syntax escaped instead (``|``; ``& % $ # _ { } ~ ^ \\``).

Data files (``--per-user``, ``receval split``'s outputs: :func:`receval.io.output.write_table`)
keep every character of an id, quoted as CSV allows, so they read back exactly; their formula
cells are neutralised by the same rule.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from typing import Any

from receval.io.formulas import neutralise_cell
from receval.io.terminal import safe_text

_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
          "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}


def text_cell(value: Any, *, raw: bool = False) -> str:
    """One CSV/TSV cell: a missing or NaN number empty, a float at full precision (``repr``),
    other numbers as they print; text with its control characters escaped and, unless
    ``raw``, a ``'`` before a formula.

    Example:
        >>> [text_cell(v) for v in (None, float("nan"), 0.1, -3, "=1+2", "-a", "a\\x1b[2Jb")]
        ['', '', '0.1', '-3', "'=1+2", "'-a", 'a\\\\x1b[2Jb']
        >>> text_cell("=2", raw=True)
        '=2'
    """
    if value is None:
        return ""
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        value = value.item()
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    if isinstance(value, bool | int):
        return str(value)
    text = safe_text(str(value))
    return text if raw else neutralise_cell(text)


def csv_text(header: Iterable[Any], rows: Iterable[Iterable[Any]], *, raw: bool = False,
             delimiter: str = ",") -> str:
    """A CSV (or, with ``delimiter="\\t"``, TSV) table, every cell through :func:`text_cell`;
    one line per row, each ending in a newline.

    Example:
        >>> print(csv_text(["model", "P@1"], [["=2", 0.5], ["a,b\\n", None]]), end="")
        model,P@1
        '=2,0.5
        "a,b\\x0a",
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    writer.writerow([text_cell(c, raw=raw) for c in header])
    for row in rows:
        writer.writerow([text_cell(c, raw=raw) for c in row])
    return buffer.getvalue()


def markdown_cell(text: str) -> str:
    """A Markdown table cell: control characters escaped, ``|`` escaped.

    Example:
        >>> markdown_cell("a|b\\x07")
        'a\\\\|b\\\\x07'
    """
    return safe_text(str(text)).replace("|", "\\|")


def latex_cell(text: str) -> str:
    """A LaTeX cell: control characters escaped, then LaTeX's special characters.

    Example:
        >>> latex_cell("my_model\\r")
        'my\\\\_model\\\\textbackslash{}x0d'
    """
    return "".join(_LATEX.get(ch, ch) for ch in safe_text(str(text)))


def safe_lines(text: str) -> str:
    """Text made of lines (a footnote, a whole table) with every control character but the
    line breaks escaped.

    Example:
        >>> safe_lines("a\\x1b[2J\\nb\\r")
        'a\\\\x1b[2J\\nb\\\\x0d'
    """
    return "\n".join(safe_text(line) for line in text.split("\n"))
