"""Gates: declarative expectations on a run or a comparison, checked in CI.

A gate is a small TOML file (syntax in full: docs/gates.md) naming the data and the checks::

    truth = "test.csv"
    predictions = "new.csv"
    baseline = "prod.csv"         # optional: checks against it use the paired interval
    confidence = 0.95
    checks = [
      "nDCG@10 >= 0.05",
      "nDCG@10 >= baseline - 0.01",
      "users.without_match <= 25",
    ]

:func:`check` evaluates the model (and the baseline), checks every expectation and returns a
:class:`Gate`: each check with its value, its interval and whether it holds, as text, a table
or JUnit XML (``receval check gate.toml --junit gate.xml`` exits 3 when a check fails).

The expressions are read by a tiny grammar (never ``eval``)::

    check    := subject OP bound
    subject  := METRIC [ "[" GROUP | "*" "]" ]     a metric (of the model under test)
              | SECTION "." NAME ["." NAME]        a count of Result.counts
    bound    := NUMBER | "baseline" [ ("+" | "-") NUMBER ]
    OP       := ">=" | ">" | "<=" | "<" | "=="

- ``METRIC OP NUMBER``: the model's value (its mean over users, as ``evaluate`` reports it)
  against the number; the interval shown beside it (bootstrap percentile at ``confidence``) is
  information, the check compares the value.
- ``METRIC OP baseline [+|- m]``: the paired difference d = model - baseline per user
  (:func:`receval.compare`, its bootstrap percentile interval at level ``confidence``). With
  ``>=`` (or ``>``) the check holds only when the interval's LOWER end is >= (>) ``-m`` (``+m``):
  ``nDCG@10 >= baseline - 0.01`` at 0.95 holds when the data rule out, at 95% two-sided (97.5%
  one-sided), a loss of more than 0.01. With ``<=`` (``<``) the UPPER end must be <= (<) the
  margin. ``==`` is refused (no interval proves equality).
- ``[GROUP]``: the value (or difference) within one group of ``strata``; ``[*]``: one check per
  group (the groups of the model's evaluation, ``(none)`` included when present).
- ``SECTION.NAME``: a count of :attr:`receval.result.Result.counts` (``users.without_match``,
  ``rows.predictions_dropped_duplicates``, ``train.truth_in_train`` with ``train``, ...),
  compared exactly.
"""


from receval.gates.grammar import Expectation, parse_check
from receval.gates.outcome import Gate, Outcome, verdict
from receval.gates.run import check, load

__all__ = ["Expectation", "Gate", "Outcome", "check", "load", "parse_check", "verdict"]
