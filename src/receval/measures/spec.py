"""Metric names: the aliases people write (from the registry) and the parser.

A metric is a family (precision, recall, ...) plus a cutoff ``k`` (and ``beta`` for F-beta).
Names are case-insensitive: ``P@10``, ``precision@10``, ``nDCG@5``, ``MRR``, ``F0.5@10``.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

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
    #: the real parameter of a family that takes one after ``@`` (``RBP@0.8``), or ``None``
    #: (its default)
    param: float | None = field(default=None, repr=False)

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
        if self.param is not None:
            return f"{base}@{self.param:g}"
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
        >>> parse_metric("NDCG10")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: unknown metric 'NDCG10'; did you mean 'nDCG@10'?
    """
    if not isinstance(name, str):
        raise TypeError(f"a metric name must be a string; got {type(name).__name__}")
    text = name.strip()
    trec = from_trec_eval(text)
    if trec is not None and trec != text:
        spec = parse_metric(trec)
        return MetricSpec(name=text, family=spec.family, k=spec.k, beta=spec.beta,
                          param=spec.param)
    base, sep, cut = text.partition("@")
    key = base.strip().lower()
    if key in ALIASES and ALIASES[key] in PARAMETRIC:
        return _parametric(text, ALIASES[key], cut.strip() if sep else None)
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
        glued = re.fullmatch(r"(?P<base>.*?[a-z])[_\-.]?(?P<k>\d+)", key) if k is None else None
        if glued and ALIASES.get(glued["base"]) not in (None, *UNCUT):
            # a cutoff written without its '@' ('NDCG10'): the canonical name with it
            guess = f"{CANONICAL[ALIASES[glued['base']]]}@{glued['k']}"
            hint = f"; did you mean {guess!r}?"
        elif close:
            guess = close[0] if k is None or ALIASES.get(close[0]) in UNCUT else f"{close[0]}@{k}"
            hint = f"; did you mean {guess!r}?"
        if base.strip() in TREC_EVAL_UNSUPPORTED or _TREC_CUT.match(base.strip()):
            hint += (f" ({base.strip()!r} is a trec_eval measure receval does not have; its "
                     f"trec_eval names: {', '.join(TREC_EVAL_NAMES)})")
        raise ReceValError(f"unknown metric {name!r}{hint}")
    if family in UNCUT and k is not None:
        raise ReceValError(f"metric {name!r}: {CANONICAL[family]} takes no cutoff")
    if family in NEED_K and k is None:
        raise ReceValError(f"metric {name!r} needs a cutoff, e.g. {base}@10")
    return MetricSpec(name=text, family=family, k=k, beta=beta)


#: families with a real parameter after ``@`` in place of a cutoff (``RBP@0.8``)
PARAMETRIC = frozenset(f for f, e in ENTRIES.items() if e.parameter is not None)


def _parametric(text: str, family: Family, written: str | None) -> MetricSpec:
    """A metric of a family whose ``@`` holds a real parameter in its range (or none: the
    default).

    Example:
        >>> _parametric("rbp@0.8", Family.RBP, "0.8").param
        0.8
    """
    entry = ENTRIES[family]
    assert entry.parameter is not None
    pname, _default, low, high, low_open, high_open = entry.parameter
    if written is None:
        return MetricSpec(name=text, family=family, k=None)
    try:
        value = float(written)
    except ValueError:
        raise ReceValError(f"metric {text!r}: {pname} {written!r} is not a number") from None
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if not math.isfinite(value) or too_low or too_high:
        span = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ReceValError(f"metric {text!r}: {pname} must be in {span}; got {written}")
    return MetricSpec(name=text, family=family, k=None, param=value)


# --- trec_eval's measure names -----------------------------------------------------------------

#: trec_eval measure -> receval metric (no cutoff or parameter)
TREC_EVAL_PLAIN = {
    "map": "AP", "ndcg": "nDCG", "Rprec": "Rprec", "recip_rank": "RR", "bpref": "bpref",
    "11pt_avg": "11pt_avg", "num_rel": "num_rel", "num_ret": "num_ret", "rbp": "RBP",
    "rbp_resid": "RBP_resid", "gm_map": "gm_AP", "num_rel_ret": "num_rel_ret",
}
#: trec_eval measure with a cutoff ``name_k`` (or ``name.k``) -> receval family name
TREC_EVAL_CUT = {"P": "P", "recall": "R", "map_cut": "AP", "ndcg_cut": "nDCG",
                 "success": "Hit", "num_rel_ret": "num_rel_ret"}
#: trec_eval measure with a real parameter ``name_x`` -> receval family name
TREC_EVAL_PARAM = {"iprec_at_recall": "iprec", "Rprec_mult": "Rprec_mult"}
#: every trec_eval name receval accepts, as the error message lists them
TREC_EVAL_NAMES = (*TREC_EVAL_PLAIN, *(f"{n}_k" for n in TREC_EVAL_CUT),
                   *(f"{n}_x" for n in TREC_EVAL_PARAM))
#: trec_eval 9/10 measures receval does not compute
TREC_EVAL_UNSUPPORTED = frozenset({
    "G", "Rndcg", "binG", "gm_bpref", "infAP", "ndcg_rel", "num_q", "relstring",
    "runid", "set_F", "set_P", "set_map", "set_recall", "set_relative_P", "utility",
    "num_nonrel_judged_ret", "yaap", "ndcg_p", "relative_P", "unj", "Runj", "P_avgjg",
    "map_avgjg", "Rprec_mult_avgjg", "prefs_simp", "prefs_pair", "prefs_avgjg",
    "num_nonjudged_ret"})
_TREC_CUT = re.compile(r"^(relative_P|unj|relstring)[._]\d+$")
_TREC_NAME = re.compile(r"^(?P<base>[A-Za-z0-9_]+?)[._](?P<arg>\d+(?:\.\d+)?|\.\d+)$")


def from_trec_eval(name: str) -> str | None:
    """The receval metric of a trec_eval measure name (``P_10``, ``P.10``,
    ``ndcg_cut_10``, ``iprec_at_recall_0.50``, ``recip_rank``), or ``None`` for another name.

    Example:
        >>> from_trec_eval("ndcg_cut_10"), from_trec_eval("Rprec_mult_0.50")
        ('nDCG@10', 'Rprec_mult@0.50')
        >>> from_trec_eval("P@10") is None
        True
    """
    if name in TREC_EVAL_PLAIN:
        return TREC_EVAL_PLAIN[name]
    match = _TREC_NAME.match(name)
    if match is None:
        return None
    base, arg = match.group("base"), match.group("arg")
    if base in TREC_EVAL_CUT and arg.isdigit():
        return f"{TREC_EVAL_CUT[base]}@{arg}"
    if base in TREC_EVAL_PARAM:
        return f"{TREC_EVAL_PARAM[base]}@{arg}"
    return None


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
        >>> [m.canonical for m in parse_metrics("P.5,10,iprec_at_recall.0.5")]  # trec_eval -m
        ['P@5', 'P@10', 'iprec@0.5']
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
                # a trec_eval name's cutoffs repeat as its receval name's ('P.5,10')
                base = (from_trec_eval(piece) or piece).partition("@")[0]
                specs.append(parse_metric(piece))
    if not specs:
        raise ReceValError("no metric requested; pass e.g. metrics=['P@10', 'nDCG@10']")
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ReceValError(f"metric {spec.name!r} is requested twice")
        seen.add(spec.name)
    return specs
