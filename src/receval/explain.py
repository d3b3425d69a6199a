"""Why two tools disagree: the options two profiles set differently, and, on given data, how much
each one alone moves each metric (``receval explain`` on the command line).

A layer above :mod:`receval.evaluation` (it calls :func:`receval.evaluate` once per option),
so :mod:`receval.profiles` (which ``evaluate`` reads) stays below it.

Example:
    >>> e = explain(None, "spark")
    >>> [(d.option, d.a, d.b) for d in e.differences]
    [('users', 'truth', 'union')]
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from receval import numbers
from receval.evaluation import evaluate
from receval.exceptions import ReceValError, UndefinedMetricWarning
from receval.measures.spec import CANONICAL, Family, parse_metrics
from receval.options import OPTION_NAMES, UNSET
from receval.profiles import Profile, get

DEFAULT_EXPLAIN_METRICS = ("P@10", "R@10", "AP@10", "nDCG@10", "RR@10")


@dataclass(frozen=True)
class OptionDifference:
    """One option that two profiles set differently, and the metrics it applies to."""

    option: str
    a: Any
    b: Any
    metrics: tuple[str, ...]

    @property
    def scope(self) -> str:
        """``"all"`` when every listed metric family is affected, else the families."""
        return ", ".join(self.metrics) if self.metrics else "all"


@dataclass
class Explanation:
    """What :func:`explain` returns: the differing options and, given data, their effects.

    ``values_a`` / ``values_b``: each metric under ``a`` and under ``b``. ``effects[option]``:
    each metric under ``a`` with only ``option`` switched to ``b``'s value, minus its value under
    ``a``. The effects need not add up to ``b - a``: options interact (an AP normaliser only
    matters once there are hits, say); ``interaction`` holds the remainder.
    """

    a: str
    b: str
    differences: list[OptionDifference]
    metrics: list[str] = field(default_factory=list)
    values_a: dict[str, float] = field(default_factory=dict)
    values_b: dict[str, float] = field(default_factory=dict)
    effects: dict[str, dict[str, float]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def interaction(self) -> dict[str, float]:
        """``b - a`` minus the sum of the one-at-a-time effects, per metric."""
        out = {}
        for m in self.metrics:
            total = self.values_b.get(m, math.nan) - self.values_a.get(m, math.nan)
            out[m] = total - sum(e.get(m, 0.0) for e in self.effects.values()
                                 if not math.isnan(e.get(m, 0.0)))
        return out

    def rows(self) -> list[dict[str, Any]]:
        """One plain dict per differing option (with its effect on each metric), then, given
        data, the rows ``"= <a>"``, ``"= <b>"`` and ``"interaction"``.

        Example:
            >>> rows = explain("ranx", "trec_eval").rows()
            >>> [r["option"] for r in rows]
            ['ties', 'empty', 'users', 'score_dtype', 'item_order']
        """
        out: list[dict[str, Any]] = []
        for d in self.differences:
            row: dict[str, Any] = {"option": d.option, self.a: d.a, self.b: d.b,
                                   "applies to": d.scope}
            for m in self.metrics:
                row[m] = self.effects.get(d.option, {}).get(m, math.nan)
            out.append(row)
        if self.metrics:
            for label, values in ((f"= {self.a}", self.values_a),
                                  (f"= {self.b}", self.values_b),
                                  ("interaction", self.interaction)):
                row = {"option": label, self.a: "", self.b: "", "applies to": ""}
                row.update({m: values.get(m, math.nan) for m in self.metrics})
                out.append(row)
        return out

    def __rich__(self) -> Any:
        from rich.table import Table

        table = Table(title=f"{self.a} vs {self.b}{_with(self.overrides)}")
        columns = ["option", self.a, self.b, "applies to", *self.metrics]
        for c in columns:
            table.add_column(c, justify="right" if c in self.metrics else "left")
        for row in self.rows():
            signed = not row["option"].startswith("= ")
            table.add_row(*(_cell(row[c], c in self.metrics, signed) for c in columns),
                          end_section=row["option"] == self.differences[-1].option
                          if self.differences else False)
        return table

    def __str__(self) -> str:
        return format_explain(self)


def _with(overrides: Mapping[str, Any]) -> str:
    """`` (both with relevance_threshold=2)`` for a table's title; empty without overrides."""
    if not overrides:
        return ""
    return " (both with " + ", ".join(f"{k}={v!r}" for k, v in overrides.items()) + ")"


def _cell(value: Any, numeric: bool, signed: bool) -> str:
    """A cell of the table: a metric's value or effect as :mod:`receval.numbers` writes it
    (``n/a`` when it could not be computed), an option's value as its ``repr``."""
    if isinstance(value, str):
        return value
    if numeric:
        return numbers.delta(value) if signed else numbers.value(value)
    return repr(value)


def _effective(profile: str | Profile | None) -> tuple[str, Profile]:
    if profile is None:
        return "defaults", Profile(name="defaults", tool="receval defaults", version="",
                                   source="", options={})
    p = get(profile)
    return p.name, p


def _full(p: Profile, families: Iterable[Family],
          explicit: Mapping[str, Any]) -> tuple[dict[str, Any], dict[Family, dict[str, Any]]]:
    r = p.resolve(explicit)
    base = r.options.to_dict()
    return base, {f: r.options_for(f).to_dict() for f in families}


def explain(
    a: str | Profile | None,
    b: str | Profile | None = None,
    truth: Any = None,
    predictions: Any = None,
    metrics: str | Iterable[str] | None = None,
    **evaluate_kwargs: Any,
) -> Explanation:
    """Which options differ between profiles ``a`` and ``b`` (``None``: receval's defaults),
    and, given ``truth`` and ``predictions``, how much each metric moves when each differing
    option alone is switched from ``a``'s value to ``b``'s.

    ``evaluate_kwargs`` takes everything :func:`receval.evaluate` takes. The options
    (``relevance_threshold=4``, ``users="both"``, ...) override *both* profiles, as they would
    override the profile in ``evaluate(..., profile=a, **options)``, so the values explained are
    the ones the user's own call gives; an option so set no longer differs. The rest (column
    names, ``silence``, ``engine``) is passed to every :func:`receval.evaluate` call.

    Example:
        >>> e = explain("trec_eval", "kaggle")
        >>> [(d.option, d.a, d.b) for d in e.differences if d.option == "ap_normalizer"]
        [('ap_normalizer', 'relevant', 'min_k_relevant')]
        >>> truth = {"user": ["u"] * 3, "item": ["a", "c", "f"]}
        >>> preds = {"user": ["u"] * 2, "item": ["a", "b"], "score": [2.0, 1.0]}
        >>> e = explain("trec_eval", "kaggle", truth, preds, ["AP@2"])
        >>> round(e.values_a["AP@2"], 4), round(e.values_b["AP@2"], 4)
        (0.3333, 0.5)
        >>> round(e.effects["ap_normalizer"]["AP@2"], 4)
        0.1667
        >>> e = explain("trec_eval", "kaggle", truth, preds, ["AP@2"], ap_normalizer="hits")
        >>> "ap_normalizer" in [d.option for d in e.differences], e.values_a["AP@2"]
        (False, 1.0)
    """
    overrides = {k: v for k, v in evaluate_kwargs.items()
                 if k in OPTION_NAMES and v is not UNSET}
    evaluate_kwargs = {k: v for k, v in evaluate_kwargs.items() if k not in OPTION_NAMES}
    if "profile" in evaluate_kwargs:
        raise ReceValError("explain takes its profiles as a and b, not profile=")
    name_a, pa_ = _effective(a)
    name_b, pb_ = _effective(b)
    if name_a == name_b:
        name_b = f"{name_b} (b)"
    specs = parse_metrics(metrics if metrics is not None else DEFAULT_EXPLAIN_METRICS) \
        if metrics is not None or truth is not None else []
    families = sorted({s.family for s in specs} or set(Family), key=int)
    base_a, fam_a = _full(pa_, families, overrides)
    base_b, fam_b = _full(pb_, families, overrides)
    differences = []
    for opt in OPTION_NAMES:
        differing = [f for f in families if fam_a[f][opt] != fam_b[f][opt]]
        if not differing and base_a[opt] == base_b[opt]:
            continue
        scope = () if len(differing) == len(families) else tuple(CANONICAL[f] for f in differing)
        va = base_a[opt] if base_a[opt] != base_b[opt] else _values(fam_a, differing, opt)
        vb = base_b[opt] if base_a[opt] != base_b[opt] else _values(fam_b, differing, opt)
        differences.append(OptionDifference(opt, va, vb, scope))
    out = Explanation(name_a, name_b, differences, overrides=overrides)
    if truth is None or predictions is None:
        return out
    out.metrics = [s.name for s in specs]
    # a rating column is needed where evaluate(..., **overrides) would need one
    requires = (pa_.requires_rating or pb_.requires_rating
                or overrides.get("relevance_threshold") is not None
                or overrides.get("gain", "binary") != "binary")

    def run(label: str, base: dict[str, Any],
            per: dict[Family, dict[str, Any]]) -> dict[str, float]:
        prof = Profile(
            name=label, tool=label, version="", source="", options=base,
            per_family={CANONICAL[f]: {k: v for k, v in o.items() if base[k] != v}
                        for f, o in per.items() if o != base},
            requires_rating=requires,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            try:
                return dict(evaluate(truth, predictions, out.metrics, profile=prof,
                                     **evaluate_kwargs).summary)
            except (ReceValError, ValueError, TypeError) as err:
                out.errors[label] = str(err)
                return {m: math.nan for m in out.metrics}

    out.values_a = run(name_a, base_a, fam_a)
    out.values_b = run(name_b, base_b, fam_b)
    for d in differences:
        base = dict(base_a, **{d.option: base_b[d.option]})
        per = {f: dict(o, **{d.option: fam_b[f][d.option]}) for f, o in fam_a.items()}
        moved = run(f"{name_a} + {d.option}", base, per)
        out.effects[d.option] = {m: moved[m] - out.values_a[m] for m in out.metrics}
    return out


def _values(per: dict[Family, dict[str, Any]], families: list[Family], opt: str) -> Any:
    values = {per[f][opt] for f in families}
    return values.pop() if len(values) == 1 else sorted(map(str, values))


def format_explain(explanation: Explanation) -> str:
    """A plain-text table of :meth:`Explanation.rows`.

    Example:
        >>> print(format_explain(explain(None, "spark")))  # doctest: +NORMALIZE_WHITESPACE
        option  defaults  spark  applies to
        ------  --------  -----  ----------
        users   truth     union  all
    """
    e = explanation
    columns = ["option", e.a, e.b, "applies to", *e.metrics]

    rows = [[_cell(r[c], c in e.metrics, not r["option"].startswith("= ")) for c in columns]
            for r in e.rows()]
    rows = [[c for c in columns], ["-" * len(c) for c in columns], *rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(columns))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]
    if e.errors:
        lines += [f"! {label}: {msg}" for label, msg in e.errors.items()]
    return "\n".join(lines)


__all__ = [
    "DEFAULT_EXPLAIN_METRICS",
    "Explanation",
    "OptionDifference",
    "explain",
    "format_explain",
]
