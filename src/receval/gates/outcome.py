"""What a gate returns (:mod:`receval.gates`): each check's outcome, as text, table rows or
JUnit XML."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from receval import numbers
from receval.compare import Comparison
from receval.gates.grammar import Expectation
from receval.result import Result


@dataclass
class Outcome:
    """One check's result.

    Attributes:
        expectation: the check.
        name: the check as a test case is named (``[*]`` replaced by the group).
        group: the group it was checked on (``None``: every user).
        value: the model's value, the paired difference (``baseline`` checks) or the count.
        low, high: the interval at the gate's confidence (NaN for counts and catalogue
            metrics).
        passed: whether it holds.
        reason: one line saying why (the value against the bound).
    """

    expectation: Expectation
    name: str
    group: str | None
    value: float
    low: float
    high: float
    passed: bool
    reason: str


@dataclass
class Gate:
    """What :func:`check` returns: every :class:`Outcome`, the Results and the comparison.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> preds = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> gate = receval.check({"truth": truth, "predictions": preds,
        ...                       "checks": ["P@1 >= 0.4", "users.without_match == 0"]})
        >>> gate.passed, [o.passed for o in gate.outcomes]
        (False, [True, False])
    """

    name: str
    outcomes: list[Outcome]
    confidence: float
    results: dict[str, Result] = field(default_factory=dict, repr=False)
    comparison: Comparison | None = field(default=None, repr=False)

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.passed]

    def rows(self) -> list[list[str]]:
        """Each check as text cells: result, check, value, interval, what must hold.

        Example:
            >>> import receval
            >>> gate = receval.check({"truth": {"user": [1], "item": [1]},
            ...     "predictions": {"user": [1], "item": [1], "score": [1.0]},
            ...     "checks": ["P@1 >= 0.5"]})
            >>> gate.rows()
            [['pass', 'P@1 >= 0.5', '1.0000', '[1.0000, 1.0000]', '>= 0.5']]
        """
        return [["pass" if o.passed else "FAIL", o.name, _value(o), _interval(o), _needs(o)]
                for o in self.outcomes]

    def to_text(self) -> str:
        """One line per check, then the verdict.

        Example:
            >>> import receval
            >>> gate = receval.check({"truth": {"user": [1], "item": [1]},
            ...     "predictions": {"user": [1], "item": [1], "score": [1.0]},
            ...     "checks": ["P@1 >= 0.5"]})
            >>> print(gate.to_text())
            pass  P@1 >= 0.5  1.0000  [1.0000, 1.0000]  >= 0.5
            1 check(s), 0 failed
        """
        lines = ["  ".join(c for c in row if c) for row in self.rows()]
        return "\n".join([*lines, verdict(self)])

    def __repr__(self) -> str:
        return f"Gate({self.name!r}, passed={self.passed})\n{self.to_text()}"

    def to_junit(self) -> str:
        """The checks as JUnit XML (one ``testsuite``, a ``testcase`` per check, a ``failure``
        for each check that does not hold), as CI systems read it.

        Example:
            >>> import receval
            >>> gate = receval.check({"truth": {"user": [1], "item": [1]},
            ...     "predictions": {"user": [1], "item": [1], "score": [1.0]},
            ...     "checks": ["P@1 >= 0.5"]})
            >>> print(gate.to_junit().splitlines()[2])
              <testsuite name="gate" tests="1" failures="0" errors="0" skipped="0">
        """
        import xml.etree.ElementTree as ET

        failed = len(self.failures)
        counts = {"tests": str(len(self.outcomes)), "failures": str(failed), "errors": "0"}
        root = ET.Element("testsuites", {"name": "receval check", **counts})
        suite = ET.SubElement(root, "testsuite", {"name": xml_text(self.name), **counts,
                                                  "skipped": "0"})
        for o in self.outcomes:
            case = ET.SubElement(suite, "testcase", {
                "classname": xml_text(f"receval.{self.name}"), "name": xml_text(o.name)})
            if not o.passed:
                failure = ET.SubElement(case, "failure", {"message": xml_text(o.reason),
                                                          "type": "CheckFailed"})
                failure.text = xml_text(f"{o.expectation.where}: {o.expectation.text}\n"
                                        f"{o.reason}")
            out = ET.SubElement(case, "system-out")
            out.text = xml_text("  ".join(c for c in (_value(o), _interval(o), _needs(o)) if c))
        ET.indent(root)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(
            root, encoding="unicode") + "\n"


#: characters XML 1.0 cannot hold (control characters but tab and newlines, surrogates,
#: U+FFFE/U+FFFF), and the C1 controls and bidi overrides the other outputs escape too
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0d\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
                      "\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` with every character XML cannot hold (or that would hide text) written as a
    visible escape (``\\x07``), so the JUnit file stays well-formed.

    Example:
        >>> xml_text("P@1[a\\x07b] >= 0.1\\x01")
        'P@1[a\\\\x07b] >= 0.1\\\\x01'
    """
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256
                        else f"\\u{ord(m.group()):04x}", text)


def verdict(gate: Gate) -> str:
    """The last line: how many checks, how many failed.

    Example:
        >>> verdict(Gate("gate", [], 0.95))
        '0 check(s), 0 failed'
    """
    return f"{len(gate.outcomes)} check(s), {len(gate.failures)} failed"


def _kind(o: Outcome) -> numbers.Kind:
    """How the check's value is written (:mod:`receval.numbers`): a count, a difference from
    a baseline, or a metric's value."""
    kind = o.expectation.kind
    if kind == "count":
        return "count" if float(o.value).is_integer() else "value"
    return "delta" if kind == "baseline" else "value"


def _value(o: Outcome) -> str:
    return numbers.number(o.value, _kind(o))


def _interval(o: Outcome) -> str:
    """The value's interval (``n/a`` when it has none); a count has no interval to show."""
    if o.expectation.kind == "count":
        return ""
    return numbers.interval(o.low, o.high, _kind(o))


def _needs(o: Outcome) -> str:
    e = o.expectation
    if e.kind == "baseline":
        end = "low" if e.op in (">=", ">") else "high"
        return f"{end} {e.op} {e.bound:+g}"
    return f"{e.op} {e.bound:g}"

