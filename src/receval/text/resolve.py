"""``resolve()``: generated titles in, catalogue ids out, with how each was matched and the
rates that say how far the lists can be trusted."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.sequential.frames import as_frame
from receval.text.catalogue import Catalogue
from receval.text.matching import SCORERS, resolve_texts

METHODS = ("exact", "normalised", "fuzzy", "tfidf")
HOW = ("exact", "normalised", "fuzzy", "unresolved", "ambiguous")
FLAGS = ("duplicate", "in_history", "out_of_candidates")


@dataclass
class Resolved:
    """What :func:`resolve` returns.

    Attributes:
        predictions: ``user`` (or ``query``), ``item``, ``rank``: the resolved rows, the
            first occurrence of an item in a list by rank, flagged rows kept with their
            original ranks; ready for :func:`receval.evaluate`.
        table: every generated row: its key, ``rank``, ``text``, ``item`` (``None`` unless
            resolved), ``how`` (exact, normalised, fuzzy, unresolved, ambiguous),
            ``similarity`` (0-1: 1 for exact and normalised; the best score found for
            unresolved, NaN where nothing was scored), ``tied`` (an ambiguous row's items) and
            the flags ``duplicate``, ``in_history``, ``out_of_candidates``.
        counts: ``generated`` and the rows of each ``how`` (they add up to it), and the
            flagged resolved rows: ``duplicate``, ``in_history`` and ``out_of_candidates``
            (``None`` when ``history=`` / ``candidates=`` was not given).
        options: ``threshold``, ``method``, ``scorer``, the key column.
    """

    predictions: pd.DataFrame
    table: pd.DataFrame
    counts: dict[str, int | None]
    options: dict[str, Any] = field(default_factory=dict)

    def rates(self) -> dict[str, float | None]:
        """Each count over ``generated`` (``None`` where the count is).

        Example:
            >>> g = resolve({"user": [1, 1], "rank": [1, 2], "text": ["Heat", "Hate"]},
            ...             {"item": [7], "title": ["Heat"]}, method="exact")
            >>> g.rates()["unresolved"]
            0.5
        """
        n = self.counts["generated"] or 0
        return {
            k: (None if v is None else (v / n if n else math.nan))
            for k, v in self.counts.items()
            if k != "generated"
        }


def resolve(
    generated: Any,
    catalogue: Any,
    threshold: float = 0.9,
    method: str = "fuzzy",
    *,
    history: Any = None,
    candidates: Any = None,
    scorer: str = "ratio",
    key: str | None = None,
    rank_col: str = "rank",
    text_col: str = "text",
    item_col: str = "item",
    title_col: str = "title",
    year_col: str = "year",
) -> Resolved:
    """Resolve generated titles to catalogue items.

    ``generated`` has a key (``user`` or ``query``; ``key=`` names another), ``rank`` and
    ``text``; ``catalogue`` has ``item`` and ``title`` (the year inside the title,
    MovieLens style, or a ``year`` column; aliases as more rows of the same item). Tables are
    DataFrames, dicts of columns or paths.

    The stages, in order, each deciding a row or passing it on:

    1. exact: the text (trimmed) equals a title or alias as given;
    2. normalised: equal once both are normalised (:func:`receval.text.normalise.normalise`:
       NFKC, case, punctuation, leading article, ``"Title, The"``); a trailing ``(1999)``
       is ignored unless both sides give one, then it must agree;
    3. fuzzy: the normalised forms scored by rapidfuzz's ``scorer`` (``"ratio"``,
       ``"token_sort_ratio"``, ``"token_set_ratio"``, ``"WRatio"``, ``"QRatio"``; on 0-1),
       against the titles sharing the text's rarest words (or its first or last three
       characters), resolved at ``threshold`` or above.

    ``method="exact"`` stops after 1, ``"normalised"`` after 2, ``"fuzzy"`` (default) runs all
    three; ``"tfidf"`` runs 1 then RecAI RecLM-eval's TF-IDF cosine over character 3-grams
    (:mod:`receval.text.tfidf`; RecLM-eval's threshold is 0.6). A stage that finds two or more
    items at its best is **ambiguous**: the row is left out, never silently picked.

    Flags on resolved rows: ``duplicate`` (the item came earlier in the list),
    ``in_history`` (``history=``: key, item) and ``out_of_candidates`` (``candidates=``: key,
    item; a key without candidate rows is not checked, as RecLM-eval does not check a list
    without candidates).

    Example:
        >>> cat = {"item": [1, 2, 3], "title": ["Matrix, The (1999)", "Heat (1995)", "Up (2009)"]}
        >>> gen = {"user": ["u"] * 5, "rank": [1, 2, 3, 4, 5],
        ...        "text": ["Heat (1995)", "the matrix", "The Matrx", "Heat", "Zardoz"]}
        >>> g = resolve(gen, cat, threshold=0.9)
        >>> g.table[["text", "item", "how", "duplicate"]].values.tolist()
        [['Heat (1995)', 2, 'exact', False], ['the matrix', 1, 'normalised', False], \
['The Matrx', 1, 'fuzzy', True], ['Heat', 2, 'normalised', True], ['Zardoz', None, \
'unresolved', False]]
        >>> g.predictions.values.tolist()
        [['u', 2, 1], ['u', 1, 2]]
        >>> g.counts["fuzzy"], g.counts["duplicate"], g.counts["in_history"]
        (1, 2, None)
    """
    if method not in METHODS:
        raise ReceValError(f"method={method!r} is not one of {', '.join(map(repr, METHODS))}")
    if scorer not in SCORERS:
        raise ReceValError(f"scorer={scorer!r} is not one of {', '.join(map(repr, SCORERS))}")
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not (0.0 <= float(threshold) <= 1.0)
    ):
        raise ReceValError(f"threshold={threshold!r}: a similarity on 0-1")
    gen = as_frame(generated, "generated")
    key = key or ("query" if "query" in gen.columns and "user" not in gen.columns else "user")
    for col in (key, rank_col, text_col):
        if col not in gen.columns:
            have = ", ".join(repr(str(c)) for c in gen.columns)
            raise ReceValError(f"generated: missing column {col!r} (columns: {have})")
    if not pd.api.types.is_numeric_dtype(gen[rank_col]):
        raise ReceValError(
            f"generated: column {rank_col!r} holds ranks: numbers, got {gen[rank_col].dtype}"
        )
    cat = Catalogue.of(
        as_frame(catalogue, "catalogue"), item_col=item_col, title_col=title_col, year_col=year_col
    )
    text = gen[text_col].astype(object).where(gen[text_col].notna(), "").astype(str).str.strip()
    codes, uniques = pd.factorize(text)
    matches = resolve_texts(uniques.tolist(), cat, float(threshold), method, scorer)
    table = pd.DataFrame(
        {
            key: gen[key].to_numpy(),
            "rank": gen[rank_col].to_numpy(),
            "text": gen[text_col].to_numpy(),
        }
    )
    table["item"] = pd.Series([m.item for m in matches], dtype=object).to_numpy()[codes]
    table["how"] = np.array([m.how for m in matches], dtype=object)[codes]
    table["similarity"] = np.array([m.similarity for m in matches], dtype=np.float64)[codes]
    table["tied"] = pd.Series([m.tied for m in matches], dtype=object).to_numpy()[codes]
    _flag(table, key, history, candidates, item_col)
    kept = table[(table["how"].isin(["exact", "normalised", "fuzzy"])) & ~table["duplicate"]]
    predictions = pd.DataFrame(
        {
            key: kept[key].to_numpy(),
            "item": _typed(kept["item"], cat.rows["item"]),
            "rank": kept["rank"].to_numpy(),
        }
    )
    counts: dict[str, int | None] = {"generated": len(table)}
    counts.update({how: int((table["how"] == how).sum()) for how in HOW})
    counts["duplicate"] = int(table["duplicate"].sum())
    counts["in_history"] = None if history is None else int(table["in_history"].sum())
    counts["out_of_candidates"] = (
        None if candidates is None else int(table["out_of_candidates"].sum())
    )
    return Resolved(
        predictions=predictions,
        table=table,
        counts=counts,
        options={
            "threshold": float(threshold),
            "method": method,
            "scorer": scorer if method == "fuzzy" else None,
            "key": key,
        },
    )


def _flag(table: pd.DataFrame, key: str, history: Any, candidates: Any, item_col: str) -> None:
    """The flag columns, on resolved rows only: a later occurrence of an item in its list
    (by rank, then row order), an item of the key's history, an item not among its
    candidates."""
    resolved = table["how"].isin(["exact", "normalised", "fuzzy"]).to_numpy()
    order = np.lexsort((np.arange(len(table)), table["rank"].to_numpy()))
    dup = np.zeros(len(table), dtype=bool)
    pairs = table.iloc[order][[key, "item"]]
    dup[order] = pairs.duplicated().to_numpy() & resolved[order]
    table["duplicate"] = dup
    table["in_history"] = _member(table, key, history, "history", item_col) & resolved
    if candidates is None:
        table["out_of_candidates"] = False
        return
    frame = as_frame(candidates, "candidates")
    listed = table[key].isin(frame[key]).to_numpy() if key in frame.columns else False
    outside = ~_member(table, key, frame, "candidates", item_col)
    table["out_of_candidates"] = outside & resolved & listed  # keys without candidates: unchecked


def _member(table: pd.DataFrame, key: str, other: Any, side: str, item_col: str) -> np.ndarray:
    """Per row: whether (key, item) is a row of ``other`` (all False without one)."""
    if other is None:
        return np.zeros(len(table), dtype=bool)
    frame = as_frame(other, side)
    for col in (key, item_col):
        if col not in frame.columns:
            have = ", ".join(repr(str(c)) for c in frame.columns)
            raise ReceValError(f"{side}: missing column {col!r} (columns: {have})")
    known = set(zip(frame[key].tolist(), frame[item_col].tolist(), strict=True))
    return np.array(
        [(k, i) in known for k, i in zip(table[key].tolist(), table["item"].tolist(), strict=True)],
        dtype=bool,
    )


def _typed(items: pd.Series, like: pd.Series) -> np.ndarray:
    """The resolved items in the catalogue's own type (integer ids stay integers)."""
    try:
        return items.to_numpy().astype(like.dtype)
    except (TypeError, ValueError):
        return items.to_numpy()
