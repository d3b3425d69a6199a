"""The normalised form of a title: what two spellings of one title have in common.

Unicode NFKC, case folded, a trailing year in brackets taken apart (``"Heat (1995)"``), the
``"Title, The"`` / ``"Title, A"`` / ``"Title, An"`` forms and a leading English article
(the, a, an) dropped, every run of punctuation and whitespace made one space.
"""

from __future__ import annotations

import re
import unicodedata

_YEAR = re.compile(r"^(.*?)\s*[\(\[]\s*(\d{4})\s*[\)\]]\s*$")
_TRAILING_ARTICLE = re.compile(r"^(.*?),\s*(the|a|an)$")
_LEADING_ARTICLE = re.compile(r"^(the|a|an)\s+(?=\S)")
_NOT_WORD = re.compile(r"[\W_]+")


def split_year(text: str) -> tuple[str, int | None]:
    """The text without a trailing bracketed year, and the year (``None`` without one).

    Example:
        >>> split_year("Toy Story (1995)")
        ('Toy Story', 1995)
        >>> split_year("Blade Runner 2049")
        ('Blade Runner 2049', None)
    """
    match = _YEAR.match(text)
    if match is None or not match.group(1):
        return text, None
    return match.group(1), int(match.group(2))


def normalise(text: str) -> tuple[str, int | None]:
    """The normalised title and its year (``None`` when the text gives none).

    Example:
        >>> normalise("Matrix, The (1999)")
        ('matrix', 1999)
        >>> normalise("  THE MATRIX!! ")
        ('matrix', None)
        >>> normalise("Lord of the Rings, The")
        ('lord of the rings', None)
        >>> normalise("Amélie")  # accents are kept; NFKC folds compatibility forms only
        ('amélie', None)
        >>> normalise("Ｓｅ７ｅｎ")
        ('se7en', None)
    """
    folded = unicodedata.normalize("NFKC", str(text)).casefold().strip()
    title, year = split_year(folded)
    match = _TRAILING_ARTICLE.match(title.strip())
    if match is not None and match.group(1):  # "matrix, the" -> "the matrix"
        title = f"{match.group(2)} {match.group(1)}"
    title = _NOT_WORD.sub(" ", title).strip()
    return _LEADING_ARTICLE.sub("", title), year
