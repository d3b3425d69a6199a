"""The matching stages, one distinct generated text at a time: exact, normalised, fuzzy
(rapidfuzz, blocked) or RecLM-eval's TF-IDF; each returns how the text was matched, the item,
the similarity and, for a tie, the tied items."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from receval.exceptions import ReceValError
from receval.text.catalogue import Catalogue
from receval.text.normalise import normalise

#: rapidfuzz scorers by name (scores 0-100, read as 0-1)
SCORERS = ("ratio", "token_sort_ratio", "token_set_ratio", "WRatio", "QRatio")
#: texts scored against the catalogue at a time by method="tfidf"
TFIDF_CHUNK = 2048
#: the most scores one rapidfuzz call of the batched fuzzy stage holds (queries x titles)
BATCH_CELLS = 4_000_000
#: ... and from how many it runs on every core
THREADED_CELLS = 200_000


class Match(NamedTuple):
    """How one text was resolved: ``how`` (exact, normalised, fuzzy, unresolved, ambiguous),
    the item (``None`` unless resolved), the similarity (0-1; NaN where nothing was scored)
    and the tied items of an ambiguous text."""

    how: str
    item: Any
    similarity: float
    tied: tuple[Any, ...] | None = None


def decided(items: list[Any], how: str, similarity: float) -> Match:
    """One item: resolved; several: ambiguous (never a silent pick).

    Example:
        >>> decided([7], "exact", 1.0).item, decided([7, 8], "exact", 1.0).how
        (7, 'ambiguous')
    """
    if len(items) == 1:
        return Match(how, items[0], similarity)
    return Match("ambiguous", None, similarity, tuple(items))


def exact_index(catalogue: Catalogue) -> dict[str, list[Any]]:
    """Each title or alias as given (trimmed) -> its distinct items."""
    out: dict[str, list[Any]] = {}
    for text, item in zip(
        catalogue.rows["text"].tolist(), catalogue.rows["item"].tolist(), strict=True
    ):
        items = out.setdefault(text, [])
        if item not in items:
            items.append(item)
    return out


def scorer_of(name: str) -> Callable[..., float]:
    """The rapidfuzz scorer called ``name``; a one-line error for another name."""
    if name not in SCORERS:
        raise ReceValError(f"scorer={name!r} is not one of {', '.join(map(repr, SCORERS))}")
    from rapidfuzz import fuzz

    return getattr(fuzz, name)  # type: ignore[no-any-return,unused-ignore]


def fuzzy(
    norm: str,
    year: int | None,
    catalogue: Catalogue,
    threshold: float,
    scorer: Callable[..., float],
) -> Match:
    """The best-scoring catalogue title among the query's blocked candidates whose year agrees;
    resolved at ``threshold`` or above, ambiguous when distinct items share the best score.

    Example:
        >>> import pandas as pd
        >>> from rapidfuzz import fuzz
        >>> c = Catalogue.of(pd.DataFrame({"item": [1, 2], "title": ["The Matrix", "Heat"]}))
        >>> fuzzy("matrx", None, c, 0.9, fuzz.ratio)
        Match(how='fuzzy', item=1, similarity=0.9090909090909091, tied=None)
    """
    from rapidfuzz import process

    strings, ids = catalogue.choices(norm)
    if not strings:
        return Match("unresolved", None, float("nan"))
    scores = process.cdist([norm], strings, scorer=scorer, dtype=np.float64)[0] / 100.0
    if year is not None:  # a title whose every entry gives another year is no candidate
        fits = np.array([bool(catalogue.items_of(int(i), year)) for i in ids])
        scores = np.where(fits, scores, -1.0)
    best = float(scores.max())
    if best < threshold:
        return Match("unresolved", None, best if best >= 0 else float("nan"))
    items: list[Any] = []
    for norm_id in dict.fromkeys(ids[scores == best].tolist()):
        items += [i for i in catalogue.items_of(norm_id, year) if i not in items]
    return decided(items, "fuzzy", best)


def fuzzy_batch(
    norms: list[str], catalogue: Catalogue, threshold: float, scorer: Callable[..., float]
) -> list[Match]:
    """:func:`fuzzy` for texts without a year, block by block: each block's queries scored
    against its titles in one multi-threaded rapidfuzz call, each query's best over its blocks.

    Example:
        >>> import pandas as pd
        >>> from rapidfuzz import fuzz
        >>> c = Catalogue.of(pd.DataFrame({"item": [1, 2, 3],
        ...                                "title": ["The Matrix", "Heat", "Heat"]}))
        >>> [m.how for m in fuzzy_batch(["matrx", "heap", "zz"], c, 0.7, fuzz.ratio)]
        ['fuzzy', 'ambiguous', 'unresolved']
    """
    from rapidfuzz import process

    blocks = catalogue.blocks()
    by_key: dict[str, list[int]] = {}
    for q, norm in enumerate(norms):
        for key in catalogue.keys(norm):
            by_key.setdefault(key, []).append(q)
    found_q: list[np.ndarray] = []
    found_s: list[np.ndarray] = []
    found_id: list[np.ndarray] = []
    for key, queries in by_key.items():
        strings, ids = blocks[key]
        step = max(1, BATCH_CELLS // max(len(strings), 1))
        for start in range(0, len(queries), step):
            rows = np.asarray(queries[start : start + step], dtype=np.int64)
            # threads pay off on big blocks only (starting them costs ~0.3 ms a call)
            workers = -1 if len(rows) * len(strings) >= THREADED_CELLS else 1
            scores = (
                process.cdist(
                    [norms[q] for q in rows],
                    strings,
                    scorer=scorer,
                    dtype=np.float64,
                    workers=workers,
                )
                / 100.0
            )
            best = scores.max(axis=1)
            r, c = np.nonzero(scores == best[:, None])
            found_q.append(rows[r])
            found_s.append(best[r])
            found_id.append(ids[c])
    out = [Match("unresolved", None, float("nan")) for _ in norms]
    if not found_q:
        return out
    q_all, s_all, id_all = (
        np.concatenate(found_q),
        np.concatenate(found_s),
        np.concatenate(found_id),
    )
    order = np.lexsort((id_all, -s_all, q_all))
    q_all, s_all, id_all = q_all[order], s_all[order], id_all[order]
    starts = np.flatnonzero(np.r_[True, q_all[1:] != q_all[:-1]])
    ends = np.r_[starts[1:], len(q_all)]
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        best = float(s_all[a])
        if best < threshold:
            out[int(q_all[a])] = Match("unresolved", None, best)
            continue
        tied = id_all[a:b][s_all[a:b] == best]
        items: list[Any] = []
        for norm_id in dict.fromkeys(tied.tolist()):
            items += [i for i in catalogue.items_of(norm_id, None) if i not in items]
        out[int(q_all[a])] = decided(items, "fuzzy", best)
    return out


def resolve_texts(
    texts: list[str], catalogue: Catalogue, threshold: float, method: str, scorer: str
) -> list[Match]:
    """Each distinct text through the stages of ``method`` in order, stopping at the first
    that decides (resolves it or finds a tie)."""
    exact = exact_index(catalogue)
    norm_ids = {n: i for i, n in enumerate(catalogue.norms)}
    score = scorer_of(scorer) if method == "fuzzy" else None
    out: list[Match | None] = []
    pending: list[int] = []  # tfidf: every text not exact; fuzzy: those without a year
    pending_norms: list[str] = []
    for t in texts:
        items = exact.get(t)
        if items:
            out.append(decided(items, "exact", 1.0))
            continue
        if method in ("normalised", "fuzzy"):
            norm, year = normalise(t)
            nid = norm_ids.get(norm)
            found = catalogue.items_of(nid, year) if nid is not None and norm else []
            if found:
                out.append(decided(found, "normalised", 1.0))
                continue
            if method == "fuzzy" and norm:
                assert score is not None
                if year is None:
                    pending.append(len(out))
                    pending_norms.append(norm)
                    out.append(None)
                else:  # the year narrows the candidates: one query at a time
                    out.append(fuzzy(norm, year, catalogue, threshold, score))
                continue
        if method == "tfidf":
            pending.append(len(out))
        out.append(None)
    if pending:
        if method == "tfidf":
            matched = tfidf([texts[i] for i in pending], catalogue, threshold)
        else:
            assert score is not None
            matched = fuzzy_batch(pending_norms, catalogue, threshold, score)
        for i, m in zip(pending, matched, strict=True):
            out[i] = m
    return [m if m is not None else Match("unresolved", None, float("nan")) for m in out]


def tfidf(texts: list[str], catalogue: Catalogue, threshold: float) -> list[Match]:
    """RecLM-eval's matching (:mod:`receval.text.tfidf`): the catalogue title of highest
    cosine, resolved at ``threshold`` or above (RecLM-eval: 0.6); a tie between distinct
    items is ambiguous (RecLM-eval's ``map_index`` takes the first)."""
    from receval.text.tfidf import TfidfIndex

    index = TfidfIndex(catalogue.rows["text"].tolist())
    items = catalogue.rows["item"].tolist()
    out: list[Match] = []
    for start in range(0, len(texts), TFIDF_CHUNK):
        sim = index.similarity(texts[start : start + TFIDF_CHUNK])
        for r in range(sim.shape[0]):
            lo, hi = sim.indptr[r], sim.indptr[r + 1]
            values, cols = sim.data[lo:hi], sim.indices[lo:hi]
            best = float(values.max()) if hi > lo else 0.0
            if hi == lo or best < threshold:
                out.append(Match("unresolved", None, best))
                continue
            tied = list(dict.fromkeys(items[c] for c in np.sort(cols[values == best])))
            out.append(decided(tied, "fuzzy", best))
    return out
