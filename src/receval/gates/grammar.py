"""The grammar of a gate's checks (:mod:`receval.gates`): a check string -> an
:class:`Expectation`, without ``eval``."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from receval.exceptions import ReceValError

#: the sections of Result.counts a count check may name
COUNT_SECTIONS = ("users", "rows", "train", "undefined", "averaged", "ties_at_cutoff")

#: the comparisons, as functions
OPS: dict[str, Callable[[Any, Any], bool]] = {">=": operator.ge, ">": operator.gt,
                                              "<=": operator.le, "<": operator.lt,
                                              "==": operator.eq}

#: a check: subject, optional [group], operator, bound
CHECK = re.compile(r"^\s*(?P<subject>[^\s\[\]<>=!]+)\s*(?:\[(?P<group>[^\]]*)\])?\s*"
                    r"(?P<op>>=|<=|==|>|<)\s*(?P<bound>.*?)\s*$")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_BOUND = re.compile(rf"^(?:(?P<number>{_NUMBER})|baseline(?:\s*(?P<sign>[-+])\s*"
                    rf"(?P<margin>{_NUMBER[5:]}))?)$")
_COUNT = re.compile(r"^[A-Za-z_]\w*(?:\.\w+)+$")


@dataclass(frozen=True)
class Expectation:
    """One parsed check: ``subject op bound``.

    Attributes:
        text: the check as written.
        kind: ``"metric"`` (against a number), ``"baseline"`` (the paired difference against a
            margin) or ``"count"`` (a count of ``Result.counts``).
        subject: the metric name, or the count's path (``("users", "without_match")``).
        op: ``>=``, ``>``, ``<=``, ``<`` or ``==``.
        bound: the number, or for ``baseline`` the margin (``baseline - 0.01``: -0.01).
        group: ``None`` (every user), a group of ``strata`` or ``"*"`` (each group).
        where: where it was written (``gate.toml line 7``, ``check 2``).
    """

    text: str
    kind: str
    subject: Any
    op: str
    bound: float
    group: str | None = None
    where: str = ""

    @property
    def metric(self) -> str | None:
        return None if self.kind == "count" else str(self.subject)


def parse_check(text: str, where: str = "check") -> Expectation:
    """Read one check (the grammar of :mod:`receval.gates`); a check that cannot be read is a
    :class:`~receval.exceptions.ReceValError` naming ``where``.

    Example:
        >>> e = parse_check("nDCG@10[cold] >= baseline - 0.01")
        >>> e.kind, e.subject, e.op, e.bound, e.group
        ('baseline', 'nDCG@10', '>=', -0.01, 'cold')
        >>> parse_check("users.without_match == 0").subject
        ('users', 'without_match')
        >>> parse_check("nDCG@10 => 0.1", "gate.toml line 4")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: gate.toml line 4: cannot read the check 'nDCG@10 => \
0.1': write SUBJECT OP BOUND with OP one of >=, >, <=, <, == (e.g. 'nDCG@10 >= 0.09')
    """
    if not isinstance(text, str):
        raise ReceValError(f"{where}: a check is a string such as 'nDCG@10 >= 0.09', got "
                           f"{text!r}")
    match = CHECK.match(text)
    if match is None or not match["bound"]:
        raise ReceValError(f"{where}: cannot read the check {text!r}: write SUBJECT OP BOUND "
                           "with OP one of >=, >, <=, <, == (e.g. 'nDCG@10 >= 0.09')")
    subject, op, raw_group = match["subject"], match["op"], match["group"]
    bound_match = _BOUND.match(match["bound"])
    if bound_match is None:
        raise ReceValError(f"{where}: check {text!r}: the bound {match['bound']!r} is neither "
                           "a number nor 'baseline', 'baseline - NUMBER' or 'baseline + NUMBER'")
    group = None
    if raw_group is not None:
        group = raw_group.strip().strip("'\"")
        if not group:
            raise ReceValError(f"{where}: check {text!r}: name a group between the brackets "
                               "(or * for each group)")
    first = subject.split(".", 1)[0]
    if _COUNT.match(subject) and first in COUNT_SECTIONS:
        if bound_match["number"] is None:
            raise ReceValError(f"{where}: check {text!r}: a count is compared with a number, "
                               "not with the baseline")
        if group is not None:
            raise ReceValError(f"{where}: check {text!r}: counts are over every user; "
                               "drop the [group]")
        return Expectation(text, "count", tuple(subject.split(".")), op,
                           float(bound_match["number"]), None, where)
    _check_metric(subject, text, where)
    if bound_match["number"] is not None:
        return Expectation(text, "metric", subject, op, float(bound_match["number"]), group,
                           where)
    if op == "==":
        raise ReceValError(f"{where}: check {text!r}: '==' against the baseline cannot be "
                           "shown by an interval; use >= or <= with a margin")
    margin = float(bound_match["margin"] or 0.0)
    return Expectation(text, "baseline", subject, op,
                       -margin if bound_match["sign"] == "-" else margin, group, where)


def _check_metric(name: str, text: str, where: str) -> None:
    from receval.beyond.names import parse_beyond
    from receval.measures.spec import parse_metric

    if parse_beyond(name) is not None:
        return
    try:
        parse_metric(name)
    except ReceValError as err:
        raise ReceValError(f"{where}: check {text!r}: {err} (a count is "
                           f"{'|'.join(COUNT_SECTIONS)}.NAME, e.g. users.without_match)") from None

