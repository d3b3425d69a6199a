"""Text from data or files made safe to print on a terminal: control characters escaped.

A crafted header or file name can hold escape sequences that clear the screen, set the window
title or move the cursor (``ESC [ 2 J``, ``ESC ] 0 ; title BEL``, the one-byte CSI ``\\x9b``).
:func:`safe_text` writes every such character as a visible ``\\x1b``-style escape, so the
terminal shows it instead of obeying it. Print the result without rich markup
(``markup=False`` or a :class:`rich.text.Text`), so ``[...]`` in a path is shown as is.
"""

from __future__ import annotations

import re

#: C0 controls, DEL, C1 controls (``\x80``-``\x9f``, which include the one-byte CSI ``\x9b``),
#: bidirectional overrides and isolates (they reorder what is shown), line/paragraph separators
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


_BLANKS = re.compile(r"[ \t\r\n\f\v]+")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: str) -> str:
    """``text`` with every control character escaped (``\\x1b``, ``\\x07``, ``\\u202e``).

    Newlines and tabs are escaped too: the result is always one line. Backslashes already in
    the text are left alone, so ordinary Windows paths print unchanged.

    Example:
        >>> safe_text("no column 'user'; columns: '\\x1b]0;pwned\\x07', 'item'")
        "no column 'user'; columns: '\\\\x1b]0;pwned\\\\x07', 'item'"
        >>> print(safe_text("a\\x1b[2Jb\\x9bc\\r\\nd"))
        a\\x1b[2Jb\\x9bc\\x0d\\x0ad
        >>> safe_text("C:\\\\runs\\\\[bold]r.csv")
        'C:\\\\runs\\\\[bold]r.csv'
    """
    return _UNSAFE.sub(_escape, text)


def one_line(text: str) -> str:
    """``text`` as one safe line: runs of blanks and line breaks become one space, then
    :func:`safe_text` escapes what is left.

    Example:
        >>> one_line("cannot parse\\n  line 3:\\x1b[31m red")
        'cannot parse line 3:\\\\x1b[31m red'
    """
    return safe_text(_BLANKS.sub(" ", text).strip(" "))
