"""A plain-Python reference for receval's beyond-accuracy metrics under their default switches,
typed in from the definitions of docs/beyond-accuracy.md ("Definitions"), one list at a time,
with sets and loops: nothing here imports receval.

Inputs: ``lists`` user -> the ranked top-k list (a list of items, possibly shorter than k),
``train`` (user, item) rows, ``relevant`` user -> their relevant truth items, ``truth_items``
every item of the truth (relevant or not), ``features`` item -> a set of categories.

Defaults (``BeyondOptions()``): the catalogue ``I`` is the training items plus every truth
item; coverage is the share of ``I`` listed (items outside ``I`` dropped); entropy in base 2
over the recommended items; Gini over ``I`` plus the recommended items (unexposed: 0), ``G``
with denominator n; novelty ``-log2 p``, p = the item's training rows / all training rows, a
cold item adding 0 but counting; diversity 1 - the mean cosine of the multi-hot categories (a
list shorter than two: undefined); serendipity "auralist" with the truth's relevant items;
ARP on training rows (cold: 0); the short head holds 80% of the training rows.

The exposure-fairness and calibration metrics (docs/fairness.md) call the oracles of
``fairness.py`` (typed in from the papers) with the defaults of ``BeyondOptions()``: the item
groups are the categories of ``features`` (no ``item_groups=``), an item of ``m`` categories
in each with 1/m, an item without any in none, the group names every category named, in
name order; browsing model "trec", uniform target; the protected group of rND/rKL/rRD the
group with the fewest catalogue items (ties: the first name), cut points every 10 ranks
(``fairness_step``; none in a list shorter than 10, so every value is undefined there), the
list itself as the population; calibration against the user's training rows, alpha 0.01
smoothing the list, no rank weights, natural logarithms, the JS divergence; expected
exposure gerr with p = u = 0.5 over the user's relevant items.

Entry point: :func:`beyond_value` -> ``(summary value, {user: value or None})``; ``None`` per
user for the catalogue-level metrics (they are one number over all lists).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import combinations

try:
    from tests.reference import fairness as fair
except ImportError:  # pragma: no cover - run from tests/
    from reference import fairness as fair  # type: ignore[no-redef]

#: the exposure-fairness and calibration metrics of one number over all lists
FAIR_CATALOGUE = ("group_exposure",)
#: the metrics of one number over all lists
CATALOGUE = ("coverage", "distributional_coverage", "gini", "personalization", "PopREO",
             "PopRSP", *FAIR_CATALOGUE)
#: the per-user exposure-fairness, calibration and expected-exposure metrics
FAIR_USER = ("AWRF", "nDCG_AWRF", "rND", "rKL", "rRD", "calibration", "calibration_js",
             *(f"EE_{x}{n}" for x in "LDR" for n in ("", "_norm", "_group")))
#: every metric this reference defines (canonical names, as receval's beyond registry names
#: them)
DEFINED = (*CATALOGUE, "novelty", "diversity", "serendipity", "ARP", "APLT", "ACLT",
           *FAIR_USER)
HEAD_SHARE = 0.8
#: BeyondOptions().fairness_step: rND/rKL/rRD's cut points are its multiples
FAIRNESS_STEP = 10


def _groups(features: Mapping[object, set[object]]
            ) -> tuple[dict[object, list[object]], list[object]]:
    """Each item's groups (its categories) and every group's name, in receval's name order
    (by type name, then as text)."""
    item_groups = {i: sorted(cats, key=str) for i, cats in features.items() if cats}
    names = sorted({g for cats in item_groups.values() for g in cats},
                   key=lambda g: (str(type(g)), str(g)))
    return item_groups, names


def _protected(item_groups: Mapping[object, list[object]], names: Sequence[object],
               catalogue: set[object]) -> object:
    """The group with the fewest catalogue items among the groups with any (ties: the first
    name); without grouped catalogue items, the fewest items of all."""
    def count(g: object, items: set[object] | None) -> int:
        return sum(g in gs for i, gs in item_groups.items() if items is None or i in items)

    scope: set[object] | None = catalogue
    if not any(count(g, catalogue) for g in names):
        scope = None
    held = [(count(g, scope), j) for j, g in enumerate(names) if count(g, scope) > 0]
    return names[min(held)[1]]


def _none(x: float) -> float | None:
    return None if math.isnan(x) else x


def fairness_value(
    metric: str,
    lists: Mapping[object, list[object]],
    train: Sequence[tuple[object, object]],
    relevant: Mapping[object, set[object]],
    catalogue: set[object],
    features: Mapping[object, set[object]],
    fairness_step: int = FAIRNESS_STEP,
) -> tuple[float | None, dict[object, float | None]]:
    """The exposure-fairness, calibration or expected-exposure ``metric`` of ``lists``
    (already cut to k) under the default switches (but ``fairness_step``), from the oracles
    of ``fairness.py``."""
    item_groups, names = _groups(features)
    if metric.startswith("EE_") and metric.endswith("_group"):
        return None, {u: _none(float(fair.expected_exposure_group(
            items, relevant.get(u, set()), item_groups, names)[metric]))
            for u, items in lists.items()}
    if metric.startswith("EE_"):
        return None, {u: _none(float(fair.expected_exposure(items, relevant.get(u, set()))[
            metric])) for u, items in lists.items()}
    uniform = fair.target("uniform", item_groups, sorted(catalogue, key=str), names)
    if metric == "group_exposure":
        shares = fair.group_exposure(list(lists.values()), item_groups, names, "trec")
        return _none(fair.exposure_gap(shares, uniform)), {}
    per_user: dict[object, float | None] = {}
    if metric in ("rND", "rKL", "rRD"):
        protected = _protected(item_groups, names, catalogue)
        for u, items in lists.items():
            flags = [protected in item_groups.get(i, []) for i in items]
            per_user[u] = _none(fair.ranked_fairness(metric, flags, fairness_step))
        return None, per_user
    history: dict[object, list[object]] = {}
    for u, i in train:  # every training row counts (calibration_history="rows")
        history.setdefault(u, []).append(i)
    for u, items in lists.items():
        if metric == "AWRF":
            value = fair.awrf(items, item_groups, names, uniform, "trec")
        elif metric == "nDCG_AWRF":
            value = fair.ndcg_awrf(items, relevant.get(u, set()), item_groups, names, uniform,
                                   "trec")
        elif metric in ("calibration", "calibration_js"):
            value = fair.calibration(history.get(u, []), items, item_groups, names,
                                     alpha=0.01, smooth="list", list_weights="none",
                                     base=math.e,
                                     js="divergence" if metric == "calibration_js" else None)
        else:
            raise ValueError(f"the beyond reference does not define {metric!r}")
        per_user[u] = _none(value)
    return None, per_user


def _cosine(a: set[object], b: set[object]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def beyond_value(
    metric: str,
    k: int,
    lists: Mapping[object, list[object]],
    train: Sequence[tuple[object, object]],
    relevant: Mapping[object, set[object]],
    truth_items: set[object],
    features: Mapping[object, set[object]],
    *,
    fairness_step: int = FAIRNESS_STEP,
) -> tuple[float | None, dict[object, float | None]]:
    """The metric over ``lists`` (each already cut to its top k): the catalogue value, or
    (``None``, the per-user values) for a per-user metric. ``fairness_step``: rND/rKL/rRD's
    (the one switch the matrix also sets: at the default no 3-item list has a cut point)."""
    lists = {u: list(items[:k]) for u, items in lists.items()}
    catalogue = {i for _, i in train} | set(truth_items)
    if metric in FAIR_CATALOGUE or metric in FAIR_USER:
        return fairness_value(metric, lists, train, relevant, catalogue, features,
                              fairness_step)
    exposure = Counter(i for items in lists.values() for i in items)
    pop = Counter(i for _, i in train)  # training rows per item
    total_rows = len(train)
    train_of: dict[object, set[object]] = {}
    for u, i in train:
        train_of.setdefault(u, set()).add(i)
    # the short head: items by popularity, descending, the shortest prefix with 80% of it;
    # the long tail: every other item, cold ones included
    ranked = sorted(pop, key=lambda i: -pop[i])
    head: set[object] = set()
    held = 0
    for item in ranked:
        if held >= HEAD_SHARE * total_rows:
            break
        head.add(item)
        held += pop[item]

    if metric == "coverage":
        return len(set(exposure) & catalogue) / len(catalogue), {}
    if metric == "distributional_coverage":
        slots = sum(exposure.values())
        return -sum(x / slots * math.log2(x / slots) for x in exposure.values()), {}
    if metric == "gini":
        values = sorted([exposure.get(i, 0) for i in catalogue | set(exposure)])
        n = len(values)
        total = sum(values)
        if total == 0:
            return None, {}
        return sum((2 * (j + 1) - n - 1) * x for j, x in enumerate(values)) / (n * total), {}
    if metric == "personalization":
        users = [u for u, items in lists.items() if items]
        pairs = list(combinations(users, 2))
        if not pairs:
            return None, {}
        overlap = [len(set(lists[a]) & set(lists[b])) / k for a, b in pairs]
        return 1 - sum(overlap) / len(overlap), {}
    if metric in ("PopRSP", "PopREO"):
        rates = []
        for group in (head, catalogue - head):
            if metric == "PopRSP":
                num = sum(len(set(items) & group) for items in lists.values())
                den = sum(len((group & catalogue) - train_of.get(u, set())) for u in lists)
            else:
                num = sum(len(set(items) & group & relevant.get(u, set()))
                          for u, items in lists.items())
                den = sum(len((group & relevant.get(u, set())) - train_of.get(u, set()))
                          for u in lists)
            if den == 0:
                return None, {}
            rates.append(num / den)
        mean = sum(rates) / 2
        std = math.sqrt(sum((r - mean) ** 2 for r in rates) / 2)
        return (std / mean if mean else None), {}

    per_user: dict[object, float | None] = {}
    for u, items in lists.items():
        if metric == "novelty":
            per_user[u] = _mean([-math.log2(pop[i] / total_rows) if pop[i] else 0.0
                                 for i in items])
        elif metric == "ARP":
            per_user[u] = _mean([float(pop[i]) for i in items])
        elif metric == "APLT":
            per_user[u] = _mean([float(i not in head) for i in items])
        elif metric == "ACLT":
            per_user[u] = float(sum(i not in head for i in items))
        elif metric == "diversity":
            pairs = list(combinations(items, 2))
            sims = [_cosine(features.get(a, set()), features.get(b, set())) for a, b in pairs]
            per_user[u] = None if not pairs else 1 - sum(sims) / len(sims)
        elif metric == "serendipity":
            history = train_of.get(u, set())
            if not history or not items:
                per_user[u] = None
                continue
            terms = []
            for i in items:
                unexpected = 1 - sum(_cosine(features.get(i, set()), features.get(j, set()))
                                     for j in history) / len(history)
                terms.append(unexpected * (1.0 if i in relevant.get(u, set()) else 0.0))
            per_user[u] = sum(terms) / len(terms)
        else:
            raise ValueError(f"the beyond reference does not define {metric!r}")
    return None, per_user
