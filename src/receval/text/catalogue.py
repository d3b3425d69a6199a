"""The catalogue as the matching stages read it: each title or alias as given, normalised,
with its year, and the blocks the fuzzy stage draws its candidates from."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.text.normalise import normalise

#: a query is scored against the titles sharing its rarest tokens (this many) ...
RARE_TOKENS = 2
#: ... and, when it has no token any title has, or one token only, the titles sharing its
#: first or its last characters (this many) ...
AFFIX = 3
#: ... and the titles this short or shorter (a query of up to SHORT + 2 characters)
SHORT = 4


@dataclass
class Catalogue:
    """Titles and aliases, one row each: ``item``, ``text`` (trimmed), ``norm``, ``year``.

    Example:
        >>> c = Catalogue.of(pd.DataFrame({"item": [1, 1], "title": ["Heat (1995)", "Heat"]}))
        >>> c.rows[["item", "text", "norm", "year"]].values.tolist()
        [[1, 'Heat (1995)', 'heat', 1995], [1, 'Heat', 'heat', None]]
    """

    rows: pd.DataFrame
    #: the distinct normalised titles, and per title the row numbers that hold it
    norms: list[str] = field(default_factory=list, repr=False)
    #: per distinct normalised title: its (item, year) pairs, in catalogue order
    entries: list[list[tuple[Any, Any]]] = field(default_factory=list, repr=False)
    _blocks: dict[str, tuple[list[str], np.ndarray]] | None = field(default=None, repr=False)

    @classmethod
    def of(
        cls,
        table: pd.DataFrame,
        *,
        item_col: str = "item",
        title_col: str = "title",
        year_col: str = "year",
    ) -> Catalogue:
        """Read ``item_col`` and ``title_col`` (and ``year_col`` when there is one: the year
        of a title that gives none in brackets)."""
        for col in (item_col, title_col):
            if col not in table.columns:
                have = ", ".join(repr(str(c)) for c in table.columns)
                raise ReceValError(f"catalogue: missing column {col!r} (columns: {have})")
        titles = table[title_col]
        if titles.isna().any():
            raise ReceValError(f"catalogue: {int(titles.isna().sum())} rows have no title")
        text = titles.astype(str).str.strip()
        forms = [normalise(t) for t in text.tolist()]
        year = pd.array([y for _, y in forms], dtype=object)
        if year_col in table.columns:
            given = table[year_col].to_numpy()
            year = pd.array(
                [
                    y if y is not None else (None if pd.isna(g) else int(g))
                    for y, g in zip(year, given, strict=True)
                ],
                dtype=object,
            )
        rows = pd.DataFrame(
            {
                "item": table[item_col].to_numpy(),
                "text": text.to_numpy(),
                "norm": [n for n, _ in forms],
                "year": year,
            }
        )
        codes, uniques = pd.factorize(rows["norm"])
        entries: list[list[tuple[Any, Any]]] = [[] for _ in range(len(uniques))]
        for code, item, y in zip(codes, rows["item"].tolist(), rows["year"], strict=True):
            entries[code].append((item, y))
        return cls(rows=rows, norms=list(uniques), entries=entries)

    def blocks(self) -> dict[str, tuple[list[str], np.ndarray]]:
        """Block key -> (its normalised titles, their numbers): a key per token
        (``"w:matrix"``), per first and per last :data:`AFFIX` characters (``"p:mat"``,
        ``"s:rix"``), and ``"short"``: the titles of up to :data:`SHORT` characters."""
        if self._blocks is None:
            members: dict[str, list[int]] = defaultdict(list)
            for i, norm in enumerate(self.norms):
                for token in set(norm.split()):
                    members["w:" + token].append(i)
                if norm:
                    members["p:" + norm[:AFFIX]].append(i)
                    members["s:" + norm[-AFFIX:]].append(i)
                if 0 < len(norm) <= SHORT:
                    members["short"].append(i)
            self._blocks = {
                key: ([self.norms[i] for i in ids], np.asarray(ids, dtype=np.int64))
                for key, ids in members.items()
            }
        return self._blocks

    def keys(self, norm: str) -> list[str]:
        """The blocks a query is scored against: those of its rarest tokens, and those of
        its first and last characters when it has one token or no token any title has.

        Example:
            >>> c = Catalogue.of(pd.DataFrame({"item": [1, 2], "title": ["Red Heat", "Heat"]}))
            >>> c.keys("red heat"), c.keys("heap")
            (['w:red', 'w:heat'], ['p:hea', 'short'])
        """
        blocks = self.blocks()
        tokens = set(norm.split())
        known = sorted((len(blocks["w:" + t][1]), t) for t in tokens if "w:" + t in blocks)
        keys = ["w:" + t for _, t in known[:RARE_TOKENS]]
        if len(tokens) <= 1 or not known:
            keys += [k for k in ("p:" + norm[:AFFIX], "s:" + norm[-AFFIX:]) if k in blocks]
            if len(norm) <= SHORT + 2 and "short" in blocks:
                keys.append("short")
        return keys

    def choices(self, norm: str) -> tuple[list[str], np.ndarray]:
        """The normalised titles of the query's blocks (:meth:`keys`) and their numbers
        (the same title may come twice)."""
        blocks = self.blocks()
        strings: list[str] = []
        ids: list[np.ndarray] = []
        for key in self.keys(norm):
            s, i = blocks[key]
            strings += s
            ids.append(i)
        return strings, np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)

    def items_of(self, norm_id: int, year: Any) -> list[Any]:
        """The distinct items of a normalised title whose year agrees with ``year`` (a year
        missing on either side agrees), in catalogue order."""
        return list(
            dict.fromkeys(
                item for item, y in self.entries[norm_id] if year is None or y is None or y == year
            )
        )
