"""A gate over a monitor's decisions (:attr:`receval.monitor.core.Monitor.decisions`).

A gate file with ``monitor = "monitor.json"`` (what ``receval monitor -f json`` prints, or
``Monitor.to_json()``) instead of ``truth`` and ``predictions`` checks the anytime-valid
decisions: ``"P@10 >= baseline - 0.01"`` holds when the low end of the variant's confidence
sequence for the difference with the baseline is at least -0.01 (no worse by more than
0.01, valid however often the gate is run); ``"P@10 >= baseline"``: the variant is better
(the sequence excludes 0, the decision reads ``stop``); ``<=`` reads the high end. The
variant goes in brackets (``"P@10[B] >= baseline"``); without one, or with ``[*]``, each
variant is checked. The level is the monitor's ``confidence``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from receval import numbers
from receval.exceptions import ReceValError
from receval.gates.grammar import OPS, parse_check
from receval.gates.outcome import Gate, Outcome

#: the keys a monitor gate may have
KEYS = ("name", "monitor", "checks")


def _decisions(source: Any, base: Path) -> tuple[list[dict[str, Any]], float]:
    """The decisions rows and the monitor's confidence, from a JSON path, JSON text's dict
    or a :class:`receval.monitor.core.Monitor`."""
    if hasattr(source, "decisions") and hasattr(source, "options"):
        data = json.loads(source.to_json())
    elif isinstance(source, Mapping):
        data = dict(source)
    else:
        path = Path(source)
        if not path.is_absolute():
            path = base / path
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ReceValError(f"monitor file {str(path)!r} does not exist") from None
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise ReceValError(
                f"monitor file {str(path)!r} is not a monitor's JSON output ({type(err).__name__})"
            ) from None
    if not isinstance(data, dict) or "decisions" not in data:
        raise ReceValError(
            "the monitor output has no decisions: write it with receval monitor "
            "-f json (a run with --variant-col)"
        )
    confidence = float(data.get("options", {}).get("confidence", 0.95))
    return list(data["decisions"]), confidence


def check_monitor(data: Mapping[str, Any], name: str, path: Path | None) -> Gate:
    """The checks of a monitor gate (see the module text).

    Example:
        >>> out = {"decisions": [{"variant": "B", "baseline": "A", "metric": "P@10",
        ...     "delta": 0.02, "cs_low": 0.005, "cs_high": 0.035}],
        ...     "options": {"confidence": 0.95}}
        >>> gate = check_monitor({"monitor": out, "checks": ["P@10 >= baseline",
        ...                       "P@10[B] <= baseline + 0.03"]}, "ab", None)
        >>> [(o.name, o.passed) for o in gate.outcomes]
        [('P@10[B] >= baseline', True), ('P@10[B] <= baseline + 0.03', False)]
    """
    where = path.name if path is not None else "gate"
    unknown = [k for k in data if k not in KEYS]
    if unknown:
        raise ReceValError(
            f"{where}: unknown key {unknown[0]!r} in a monitor gate; it has {', '.join(KEYS)}"
        )
    raw = data.get("checks")
    if not isinstance(raw, list) or not raw:
        raise ReceValError(
            f"{where}: 'checks' must be a non-empty list such as \"P@10 >= baseline - 0.01\""
        )
    rows, confidence = _decisions(data["monitor"], path.parent if path else Path())
    outcomes = []
    for i, text in enumerate(raw):
        e = parse_check(text, f"{where} (check {i + 1})")
        if e.kind != "baseline":
            raise ReceValError(
                f"{where} (check {i + 1}): check {text!r}: a monitor gate "
                "checks the decisions against the baseline (e.g. "
                f"'{e.subject if e.kind == 'metric' else 'P@10'} >= baseline - "
                "0.01')"
            )
        mine = [r for r in rows if r.get("metric") == e.subject]
        if e.group not in (None, "*"):
            mine = [r for r in mine if str(r.get("variant")) == e.group]
        if not mine:
            shown = sorted({f"{r.get('metric')}[{r.get('variant')}]" for r in rows})
            raise ReceValError(
                f"{where} (check {i + 1}): check {text!r}: no decision for it "
                f"(decisions: {', '.join(shown) or 'none yet'})"
            )
        for r in mine:
            outcomes.append(_outcome(e, r, confidence))
    return Gate(name, outcomes, confidence)


def _outcome(e: Any, row: dict[str, Any], confidence: float) -> Outcome:
    def num(key: str) -> float:
        value = row.get(key)
        return math.nan if value is None else float(value)

    delta, low, high = num("delta"), num("cs_low"), num("cs_high")
    end, which = (low, "low") if e.op in (">=", ">") else (high, "high")
    passed = not math.isnan(end) and OPS[e.op](end, e.bound)
    variant = str(row.get("variant"))
    text = (
        e.text
        if e.group not in (None, "*")
        else e.text.replace(f"{e.subject}[*]", e.subject).replace(
            e.subject, f"{e.subject}[{variant}]", 1
        )
    )
    return Outcome(
        e,
        text,
        variant,
        delta,
        low,
        high,
        passed,
        f"difference {numbers.delta(delta)} ({variant} vs {row.get('baseline')}, "
        f"every closed window so far); its {confidence:.0%} confidence sequence's "
        f"{which} end is {numbers.delta(end)}, needs {e.op} {e.bound:+g}",
    )
