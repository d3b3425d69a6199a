"""RecAI RecLM-eval's title matching (``method="tfidf"``): TF-IDF cosine over character
3-grams.

From its published source (microsoft/RecAI, ``RecLM-eval/evaluates/TFIDF_model.py``): a title
is cleaned (lower case, every character but ``A-Za-z0-9`` and space removed, whitespace
collapsed), cut into character 3-grams that hold no space, and weighted as scikit-learn's
``TfidfVectorizer`` does by default (raw counts times ``idf = ln((1 + n) / (1 + df)) + 1``,
``n`` catalogue titles, rows scaled to unit length), the vocabulary and ``df`` from the
catalogue's titles; the similarity of two titles is the cosine (the dot product) of their
rows. RecLM-eval counts a generated title as a match at ``sim_threshold=0.6``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

_DROP = re.compile(r"[^A-Za-z0-9 ]+")
_SPACES = re.compile(r"\s+")


def clean(text: str) -> str:
    """RecLM-eval's cleaning: lower case, ``A-Za-z0-9`` and spaces kept, spaces collapsed.

    Example:
        >>> clean("The Witcher® 3: Wild  Hunt")
        'the witcher 3 wild hunt'
    """
    return _SPACES.sub(" ", _DROP.sub("", str(text).lower())).strip()


def trigrams(text: str) -> list[str]:
    """The character 3-grams of the cleaned text that hold no space, in order.

    Example:
        >>> trigrams("Halo 2")
        ['hal', 'alo']
    """
    s = clean(text)
    grams = (s[i : i + 3] for i in range(len(s) - 2))
    return [g for g in grams if " " not in g]


class TfidfIndex:
    """The catalogue's titles as unit-length TF-IDF rows.

    Example:
        >>> index = TfidfIndex(["Halo", "Halo 2", "Portal"])
        >>> s = index.similarity(["halo"])
        >>> [round(float(x), 6) for x in s.toarray()[0]]
        [1.0, 1.0, 0.0]
    """

    def __init__(self, titles: Sequence[str]) -> None:
        vocabulary: dict[str, int] = {}
        rows = [self._counts(trigrams(t), vocabulary, grow=True) for t in titles]
        self.vocabulary = vocabulary
        n = len(titles)
        df = np.zeros(len(vocabulary), dtype=np.float64)
        for cols, _ in rows:
            df[cols] += 1.0
        self.idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
        self.matrix = self._matrix(rows).T.tocsr()

    def _counts(
        self, grams: list[str], vocabulary: dict[str, int], *, grow: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """One title's (columns, raw counts); with ``grow``, new 3-grams join the vocabulary."""
        counts: dict[int, float] = {}
        for g in grams:
            col = vocabulary.get(g)
            if col is None:
                if not grow:
                    continue
                col = vocabulary[g] = len(vocabulary)
            counts[col] = counts.get(col, 0.0) + 1.0
        cols = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        return cols, np.fromiter(counts.values(), dtype=np.float64, count=len(counts))

    def _matrix(self, rows: list[tuple[np.ndarray, np.ndarray]]) -> sp.csr_matrix:
        """Rows of counts times idf, each scaled to unit length (a row of zeros stays zero)."""
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(c) for c, _ in rows])
        cols = np.concatenate([c for c, _ in rows]) if rows else np.zeros(0, np.int64)
        vals = np.concatenate([v for _, v in rows]) if rows else np.zeros(0)
        vals = vals * self.idf[cols]
        row = np.repeat(np.arange(len(rows)), np.diff(indptr))
        norms = np.sqrt(np.bincount(row, weights=vals**2, minlength=len(rows)))
        vals = vals / norms[row]
        return sp.csr_matrix((vals, cols, indptr), shape=(len(rows), len(self.vocabulary)))

    def similarity(self, texts: Sequence[str]) -> sp.csr_matrix:
        """The cosine of each text (row) with each catalogue title (column)."""
        rows = [self._counts(trigrams(t), self.vocabulary, grow=False) for t in texts]
        return (self._matrix(rows) @ self.matrix).tocsr()
