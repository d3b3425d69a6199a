"""Metric names: the aliases people write (from the registry) and the parser.

A metric is a family (precision, recall, ...) plus a cutoff ``k`` (and ``beta`` for F-beta).
Names are case-insensitive: ``P@10``, ``precision@10``, ``nDCG@5``, ``MRR``, ``F0.5@10``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from receval.exceptions import ReceValError
from receval.measures.family import Family
from receval.measures.registry import ENTRIES

#: alias (lower case) -> family, from the registry (F-beta names are parsed with their beta)
ALIASES: dict[str, Family] = {
    alias: family for family, e in ENTRIES.items() for alias in e.aliases
}

CANONICAL: dict[Family, str] = {family: e.name for family, e in ENTRIES.items()}

#: families that take no cutoff at all
UNCUT = frozenset(f for f, e in ENTRIES.items() if e.cutoff == "none")
#: families that need a cutoff
NEED_K = frozenset(f for f, e in ENTRIES.items() if e.cutoff == "required")
#: families whose value is pooled over (user, item) pairs rather than ranked lists
RATING = frozenset(f for f, e in ENTRIES.items() if e.reduction == "pooled")

_F_RE = re.compile(r"^f(?:beta)?(?P<beta>\d+(?:\.\d+)?)?$")


@dataclass(frozen=True)
class MetricSpec:
    """One requested metric: its name as written, its family, cutoff and beta.

    Example:
        >>> parse_metric("nDCG@10")
        MetricSpec(name='nDCG@10', family=<Family.NDCG: 5>, k=10, beta=1.0)
        >>> parse_metric("MRR").k is None
        True
    """

    name: str
    family: Family
    k: int | None
    beta: float = 1.0

    @property
    def canonical(self) -> str:
        """A canonical spelling, e.g. ``P@10``, ``F0.5@10``, ``Rprec``.

        Example:
            >>> parse_metric("precision@10").canonical
            'P@10'
        """
        base = CANONICAL[self.family]
        if self.family is Family.FBETA:
            base = f"F{self.beta:g}"
        return base if self.k is None else f"{base}@{self.k}"


#: the largest cutoff: no list is longer, and every count derived from k fits in an int64
MAX_K = 2**31 - 1


def _parse_k(text: str, name: str) -> int:
    """The cutoff written after ``@``: a positive integer (``10``, ``1e2``) up to ``MAX_K``.

    Example:
        >>> _parse_k("1e2", "P@1e2")
        100
        >>> try:
        ...     _parse_k("9223372036854775808", "P@9223372036854775808")
        ... except ReceValError as err:
        ...     print(str(err).split(": ")[1])
        cutoff 9223372036854775808 is too large (at most 2147483647)
    """
    try:
        value = float(text)
    except (ValueError, OverflowError):
        raise ReceValError(f"metric {name!r}: cutoff {text!r} is not an integer") from None
    if not value.is_integer():  # also inf and nan (1e999)
        raise ReceValError(f"metric {name!r}: cutoff k must be an integer; got {text}")
    if value <= 0:
        raise ReceValError(f"metric {name!r}: cutoff k must be positive; got {text}")
    if value > MAX_K:
        raise ReceValError(f"metric {name!r}: cutoff {text} is too large (at most {MAX_K})")
    return int(value)


def parse_metric(name: str) -> MetricSpec:
    """Parse one metric name (case-insensitive) into a :class:`MetricSpec`.

    Raises a ``ValueError`` that suggests the closest known name for an unknown one.

    Example:
        >>> parse_metric("F0.5@10").beta
        0.5
        >>> parse_metric("HitRate@5").family.name
        'HIT'
    """
    if not isinstance(name, str):
        raise TypeError(f"a metric name must be a string; got {type(name).__name__}")
    text = name.strip()
    base, sep, cut = text.partition("@")
    key = base.strip().lower()
    k = _parse_k(cut.strip(), name) if sep else None
    beta = 1.0
    match = _F_RE.match(key)
    if match and key not in ALIASES:
        family = Family.FBETA
        if match.group("beta"):
            beta = float(match.group("beta"))
        if beta <= 0:
            raise ReceValError(f"metric {name!r}: beta must be positive")
    elif key in ALIASES:
        family = ALIASES[key]
    else:
        # the closest family name, with the cutoff as written ('nDGC@5' -> 'ndcg@5')
        close = difflib.get_close_matches(key, [*ALIASES, "f1", "f0.5", "f2"], n=1, cutoff=0.4)
        hint = ""
        if close:
            guess = close[0] if k is None or ALIASES.get(close[0]) in UNCUT else f"{close[0]}@{k}"
            hint = f"; did you mean {guess!r}?"
        raise ReceValError(f"unknown metric {name!r}{hint}")
    if family in UNCUT and k is not None:
        raise ReceValError(f"metric {name!r}: {CANONICAL[family]} takes no cutoff")
    if family in NEED_K and k is None:
        raise ReceValError(f"metric {name!r} needs a cutoff, e.g. {base}@10")
    return MetricSpec(name=text, family=family, k=k, beta=beta)


_NUMBER = re.compile(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?")


def parse_metrics(names: str | Iterable[str]) -> list[MetricSpec]:
    """Parse metric names; duplicates are an error.

    A comma list may hold whole names (``"P@10,nDCG@10"``) and bare cutoffs, which repeat the
    metric before them: ``"P@5,10,20"`` is three cutoffs of precision.

    Example:
        >>> [m.name for m in parse_metrics(["P@5,10", "MRR"])]
        ['P@5', 'P@10', 'MRR']
        >>> [m.name for m in parse_metrics("AP@10,nDCG@5,10,MRR")]
        ['AP@10', 'nDCG@5', 'nDCG@10', 'MRR']
    """
    if isinstance(names, str):
        names = [names]
    specs: list[MetricSpec] = []
    for raw in names:
        if not isinstance(raw, str):
            raise TypeError(f"a metric name must be a string; got {type(raw).__name__}")
        base = ""
        for piece in raw.split(","):
            piece = piece.strip()
            if base and _NUMBER.fullmatch(piece):  # a bare cutoff: the previous metric's
                specs.append(parse_metric(f"{base}@{piece}"))
            else:
                base = piece.partition("@")[0]
                specs.append(parse_metric(piece))
    if not specs:
        raise ReceValError("no metric requested; pass e.g. metrics=['P@10', 'nDCG@10']")
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ReceValError(f"metric {spec.name!r} is requested twice")
        seen.add(spec.name)
    return specs
