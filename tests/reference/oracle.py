"""A plain-Python reference for every receval metric, written from docs/semantics.md.

Nothing here imports receval: each definition is typed in from the formulas of docs/semantics.md
(sections 2-8) and the option list of the public API, one user at a time, with no prefix sums,
no numba and no shared helpers, so that a mistake in receval cannot hide in both places.

The ``average`` tie policy is computed by brute force: the mean of the metric over every
ordering of the tied items (each tie group independently). :func:`brute_force_average` uses
``itertools.permutations`` and is meant for small cases; :func:`evaluate` uses the distinct
arrangements of each group's labels instead, which gives the same mean (every distinct
arrangement of a multiset is produced by the same number of permutations) and stays fast.

Entry point: :func:`evaluate`, which takes rows as plain tuples and returns an
:class:`Outcome` (summary, per-user values, undefined counts, the row and user audit), or
raises an :class:`OracleError` where receval must refuse the input.

Definitions that docs/semantics.md leaves to an option or to the implementation, as the public API
documents them:

- micro averaging sums each user's numerator and denominator (an undefined value adds 0 to
  both; the empty policy does not apply); micro F is F of micro P and micro R; under
  ``average`` ties the sums are of expected numerators and denominators;
- F is undefined when P or R is (nothing returned with the ``returned`` denominator, or no
  relevant item);
- nDCG is undefined when the ideal DCG is 0 (no relevant item, or every gain 0);
- AP over its hits is 0 when there is no hit; AP over ``k`` without a cutoff divides by the
  list length;
- RMSE and MAE pool every (user, item) pair on both sides of the evaluated users, before the
  protocol and the score threshold; they are never set by the empty policy.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

# --- metric names ----------------------------------------------------------------------------

FAMILIES = {
    "p": "P",
    "precision": "P",
    "r": "R",
    "recall": "R",
    "ap": "AP",
    "map": "AP",
    "ndcg": "nDCG",
    "rr": "RR",
    "mrr": "RR",
    "hit": "Hit",
    "rprec": "Rprec",
    "hits": "hits",
    "dcg": "DCG",
    "rmse": "RMSE",
    "mae": "MAE",
    "ncrr": "NCRR",
}
RANKING = ("P", "R", "F", "AP", "nDCG", "RR", "Hit", "Rprec", "hits", "DCG", "num_rel_ret",
           "NCRR")
POOLED = ("RMSE", "MAE")

_NAME = re.compile(r"^(?P<base>[A-Za-z]+?)(?P<beta>\d+(?:\.\d+)?)?(?:@(?P<k>\d+))?$")


@dataclass(frozen=True)
class Metric:
    """One metric: family, cutoff (``None`` = the whole list) and beta (F only)."""

    name: str
    family: str
    k: int | None
    beta: float = 1.0
    param: float | None = None


#: the trec_eval / ir_measures families (issue 14): lower-case name -> (family, what follows
#: ``@``: "cut" a cutoff k, "param" a real parameter, "none" nothing)
TREC = {
    "bpref": ("bpref", "none"),
    "rbp": ("RBP", "param"),
    "rbp_resid": ("RBP_resid", "param"),
    "err": ("ERR", "cut"),
    "judged": ("Judged", "cut"),
    "iprec": ("iprec", "param"),
    "11pt_avg": ("11pt_avg", "none"),
    "rprec_mult": ("Rprec_mult", "param"),
    "num_rel": ("num_rel", "none"),
    "num_ret": ("num_ret", "none"),
    "num_rel_ret": ("num_rel_ret", "cut"),
    "gm_map": ("gm_AP", "cut"),
    "gm_ap": ("gm_AP", "cut"),
}
#: their defaults where ``@`` is left out: RBP's persistence, iprec's recall level,
#: Rprec_mult's multiple of R
DEFAULT_PARAM = {"RBP": 0.9, "RBP_resid": 0.9, "iprec": 0.0, "Rprec_mult": 1.0}
#: the families read from the judged items of the list (truth rows, whatever their rating)
JUDGED = ("bpref", "RBP", "RBP_resid", "ERR", "Judged", "iprec", "11pt_avg", "Rprec_mult")
#: trec_eval's floor of a value under the geometric mean (MIN_GEO_MEAN)
GEO_FLOOR = 1e-5


def parse(name: str) -> Metric:
    """``P@3``, ``F0.5@2``, ``MAP``, ``MRR``, ``Rprec``, ``RMSE``, ``RBP@0.8``, ``bpref``...

    >>> parse("F0.5@2")
    Metric(name='F0.5@2', family='F', k=2, beta=0.5, param=None)
    >>> parse("RBP@0.8")
    Metric(name='RBP@0.8', family='RBP', k=None, beta=1.0, param=0.8)
    """
    base, at, tail = name.partition("@")
    if base.lower() in TREC:
        family, kind = TREC[base.lower()]
        if kind == "none" and at:
            raise ValueError(f"oracle: {family} takes nothing after '@'")
        if kind == "cut":
            return Metric(name, family, int(tail) if at else None)
        if kind == "param":
            return Metric(name, family, None, param=float(tail) if at
                          else DEFAULT_PARAM[family])
        return Metric(name, family, None)
    m = _NAME.match(name)
    if m is None:
        raise ValueError(f"oracle does not know metric {name!r}")
    base, beta, k = m.group("base").lower(), m.group("beta"), m.group("k")
    cutoff = int(k) if k is not None else None
    if base == "f":
        return Metric(name, "F", cutoff, float(beta) if beta else 1.0)
    if beta is not None or base not in FAMILIES:
        raise ValueError(f"oracle does not know metric {name!r}")
    return Metric(name, FAMILIES[base], cutoff)


# --- options ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Opts:
    """The options of ``receval.evaluate`` with their documented defaults."""

    relevance_threshold: float | str | None = None
    score_threshold: float | None = None
    protocol: str = "full"
    ties: str = "stable"
    precision_denominator: str | None = None
    recall_denominator: str = "relevant"
    ap_normalizer: str = "min_k_relevant"
    gain: str = "binary"
    empty: str = "zero"
    average: str = "macro"
    users: str = "truth"
    duplicates: str = "error"
    discount: str = "log2"  # "log2": log2(r + 1); "log2_max2": log2(max(r, 2)) (LensKit)
    ideal: str = "achievable"  # "k": IDCG@k = the DCG of k relevant items of gain 1
    err_max_grade: float | str = "user"  # ERR's g_max: the user's top rating, or a number
    all_skipped: str = "nan"  # the summary when empty="skip" leaves no value: NaN, or 0
    persistence: float = 0.9  # p of discount="geometric"
    iprec_rounding: str = "plus_0.9"  # iprec's c: floor(x R + 0.9), or x R to the nearest

    @property
    def precision_den(self) -> str:
        if self.precision_denominator is not None:
            return self.precision_denominator
        return "returned" if self.score_threshold is not None else "k"


class OracleError(Exception):
    """The reference says this input (or this option) must be refused."""


class DuplicateRow(OracleError):
    pass


class NoUser(OracleError):
    pass


class Undefined(OracleError):
    pass


# --- one user's metric on one fixed ranking --------------------------------------------------


@dataclass(frozen=True)
class Value:
    """A per-user value (``None`` = undefined) and the numerator / denominator that micro
    averaging sums. For F, ``num``/``den`` are precision's and ``den2`` recall's denominator."""

    value: float | None
    num: float
    den: float
    den2: float = 0.0


def gain_of(rating: float, relevant: bool, scheme: str) -> float | Fraction:
    """nDCG gain: 0 for a non-relevant item; 1, the rating, or 2^rating - 1 otherwise.

    Graded gains are exact fractions (2^rating - 1 an exact integer for a whole rating), so
    that ratings of 1024 or 5000 give the exact nDCG where floats overflow."""
    if not relevant:
        return 0.0
    if scheme == "binary":
        return 1.0
    if scheme == "linear":
        return Fraction(rating)
    if float(rating).is_integer() and rating >= 0:
        return Fraction(2 ** int(rating) - 1)
    return Fraction(2.0 ** float(rating) - 1.0)


def sqrt_of(x: Fraction) -> float:
    """The square root of an exact non-negative fraction, to about 120 bits, as a float (no
    overflow on the way: only the result must fit)."""
    if x == 0:
        return 0.0
    p, q = x.numerator, x.denominator
    bits = max(0, 120 + (q.bit_length() - p.bit_length()) // 2 + 2)
    return float(Fraction(math.isqrt(p * 4**bits // q), 2**bits))


def rank_discount(rank: int, scheme: str, p: float = 0.9) -> float:
    """The DCG denominator of 1-based ``rank``: log2(rank + 1), log2(max(rank, 2)), or
    1 / p^(rank - 1) (the gain weighs p^(rank - 1), RBP's user)."""
    if scheme == "geometric":
        return 1.0 / p ** (rank - 1)
    if scheme == "log2_max2":
        return math.log2(max(rank, 2))
    assert scheme == "log2", scheme
    return math.log2(rank + 1)


def metric_on_ranking(
    metric: Metric,
    rels: Sequence[bool],
    gains: Sequence[float],
    n_relevant: int,
    ideal_gains: Sequence[float],
    opts: Opts,
) -> Value:
    """docs/semantics.md section 6 for one user whose list, in rank order, has relevance ``rels``
    and nDCG gains ``gains``; ``n_relevant`` is L_u, ``ideal_gains`` the gains of all the
    user's relevant truth items."""
    n = len(rels)
    k = metric.k
    c = n if k is None else min(k, n)
    hits = sum(1 for j in range(c) if rels[j])
    L = n_relevant
    fam = "AP" if metric.family == "gm_AP" else metric.family

    def precision() -> Value:
        assert k is not None
        d = k if opts.precision_den == "k" else min(k, n)
        if d == 0:
            return Value(None, hits, 0.0)
        return Value(hits / d, hits, d)

    def recall() -> Value:
        if L == 0:
            return Value(None, 0.0, 0.0)
        d = min(k, L) if (opts.recall_denominator == "capped" and k is not None) else L
        return Value(hits / d, hits, d)

    if fam == "P":
        return precision()
    if fam == "R":
        return recall()
    if fam == "F":
        p, r = precision(), recall()
        if p.value is None or r.value is None:
            return Value(None, p.num, p.den, r.den)
        if p.value + r.value == 0:
            return Value(0.0, p.num, p.den, r.den)
        b2 = metric.beta**2
        f = (1 + b2) * p.value * r.value / (b2 * p.value + r.value)
        return Value(f, p.num, p.den, r.den)
    if fam == "num_rel_ret":  # trec_eval: relevant items retrieved (in the top k)
        retrieved = float(sum(1 for j in range(c) if rels[j]))
        return Value(retrieved, retrieved, 1.0)
    if fam == "NCRR":  # Cornac: sum of 1/rank over the top-k hits / sum_{i <= min(L, k)} 1/i
        if L == 0:
            return Value(None, 0.0, 0.0)
        crr = sum(1.0 / (j + 1) for j in range(c) if rels[j])
        icrr = sum(1.0 / i for i in range(1, (L if k is None else min(L, k)) + 1))
        return Value(crr / icrr, crr, icrr)
    if fam == "hits":  # docs/semantics.md section 2: hits@k, a count, defined for every user
        return Value(float(hits), float(hits), 1.0)
    if fam == "DCG":  # section 6's DCG@k = sum_{j<=k} g_j / log2(j+1), unnormalised
        pp = opts.persistence
        exact = sum((Fraction(gains[j]) / Fraction(rank_discount(j + 1, opts.discount, pp))
                     for j in range(c)), Fraction(0))
        try:
            dcg_value = float(exact)
        except OverflowError:  # beyond the float range: receval says inf
            dcg_value = math.inf
        return Value(dcg_value, dcg_value, 1.0)
    if L == 0:
        return Value(None, 0.0, 0.0)
    if fam == "AP":
        total = 0.0
        seen = 0
        for j in range(1, c + 1):
            if rels[j - 1]:
                seen += 1
                total += seen / j  # P@j * h_j
        norm = opts.ap_normalizer
        if norm == "min_k_relevant":
            d = L if k is None else min(k, L)
        elif norm == "relevant":
            d = L
        elif norm == "k":
            d = n if k is None else k
        elif norm == "min_returned_relevant":  # LensKit: min(L, items returned in the top k)
            d = min(L, n if k is None else min(k, n))
        else:
            d = hits
        if d == 0:
            return Value(0.0, total, 0.0)
        return Value(total / d, total, d)
    if fam == "Rprec":
        h = sum(1 for j in range(min(L, n)) if rels[j])
        return Value(h / L, h, L)
    if fam == "nDCG":
        ideal = sorted(ideal_gains, reverse=True)
        top = len(ideal) if k is None else min(k, len(ideal))
        disc = opts.discount
        pp = opts.persistence
        if opts.ideal == "k" and k is not None:  # k relevant items of gain 1 (binary only)
            assert opts.gain == "binary"
            ideal, top = [1.0] * k, k
        if not ideal or ideal[0] < 2**900:  # floats, as docs/semantics.md writes it
            dcg = sum(float(gains[j]) / rank_discount(j + 1, disc, pp) for j in range(c))
            idcg = sum(float(ideal[j]) / rank_discount(j + 1, disc, pp) for j in range(top))
            if idcg <= 0:
                return Value(None, dcg, 0.0)
            return Value(dcg / idcg, dcg, idcg)
        # huge graded gains (ratings near 1024 and up): exact fractions, beyond float range
        dcg_x = sum((Fraction(gains[j]) / Fraction(rank_discount(j + 1, disc, pp))
                     for j in range(c)), Fraction(0))
        idcg_x = sum((Fraction(ideal[j]) / Fraction(rank_discount(j + 1, disc, pp))
                      for j in range(top)), Fraction(0))
        return Value(float(dcg_x / idcg_x), dcg_x, idcg_x)
    if fam == "RR":
        for j in range(c):
            if rels[j]:
                return Value(1.0 / (j + 1), 1.0 / (j + 1), 1.0)
        return Value(0.0, 0.0, 1.0)
    if fam == "Hit":
        v = 1.0 if hits > 0 else 0.0
        return Value(v, v, 1.0)
    raise ValueError(f"not a ranking metric: {metric.name}")


def trec_measure(metric: Metric, ranked: Sequence[Row], n_relevant: int, n_judged: int,
                 top_rating: float, iprec_rounding: str = "plus_0.9",
                 protocol: str = "full") -> Value:
    """The trec_eval / ir_measures families on one user's ranked list (fixed order), each
    typed in from its definition: ``ranked`` rows carry relevance, judged (a truth row) and
    the truth rating; ``n_judged`` counts the user's truth rows, ``top_rating`` is the highest
    rating of their relevant items."""
    fam = metric.family
    n = len(ranked)
    R = n_relevant
    rels = [r.rel for r in ranked]
    if fam == "num_rel":
        return Value(float(R), float(R), 1.0)
    if fam == "num_ret":
        return Value(float(n), float(n), 1.0)
    if fam == "Judged":  # judged share of the top min(k, n)
        c = n if metric.k is None else min(metric.k, n)
        judged = sum(1 for r in ranked[:c] if r.judged)
        return Value(judged / c if c else None, float(judged), float(c))
    if fam in ("RBP", "RBP_resid"):
        p = metric.param
        assert p is not None
        if fam == "RBP":  # (1 - p) sum_i rel_i p^(i-1)
            v = (1 - p) * sum(p ** i for i in range(n) if rels[i])
        else:  # 1 - (1 - p) sum over the judged ranks of p^(i-1)
            v = 1 - (1 - p) * sum(p ** i for i in range(n) if ranked[i].judged)
        return Value(v, v, 1.0)
    if fam in ("iprec", "11pt_avg"):
        return _interpolated_precision(metric, rels, R, iprec_rounding, protocol)
    if R == 0:
        return Value(None, 0.0, 0.0)
    if fam == "bpref":
        N = n_judged - R  # judged non-relevant items of the user
        total = 0.0
        nonrel_above = 0
        for row in ranked:
            if not row.judged:
                continue  # unjudged items are skipped
            if row.rel:
                if nonrel_above == 0:
                    total += 1.0
                else:
                    total += 1 - min(nonrel_above, R) / min(N, R)
            else:
                nonrel_above += 1
        return Value(total / R, total, float(R))
    if fam == "ERR":  # stopping probability R_r = (2^g - 1) / 2^g_max, g at most g_max
        c = n if metric.k is None else min(metric.k, n)
        total, still = 0.0, 1.0
        for j in range(c):
            g = min(max(ranked[j].rating, 0.0), max(top_rating, 0.0)) if rels[j] else 0.0
            stop = (2.0 ** g - 1) / 2.0 ** top_rating if rels[j] else 0.0
            total += still * stop / (j + 1)
            still *= 1 - stop
        return Value(total, total, 1.0)
    if fam == "Rprec_mult":  # hits in the top c over c, c = floor(x R + 0.9)
        assert metric.param is not None
        c = math.floor(metric.param * R + 0.9)
        if c == 0:
            return Value(None, 0.0, 0.0)
        hits = sum(1 for j in range(min(c, n)) if rels[j])
        return Value(hits / c, float(hits), float(c))
    raise ValueError(f"not a trec_eval family: {metric.name}")


def _interpolated_precision(metric: Metric, rels: Sequence[bool], R: int,
                            rounding: str, protocol: str) -> Value:
    """iprec@x and 11pt_avg (trec_eval m_iprec_at_recall.c): undefined only where -J
    (protocol "known") leaves an empty list and the level asks for c = 0 relevant items (the
    precision of an empty list, 0/0); trec_eval -c ranks one unjudged placeholder for a topic
    with no run, so an empty list is 0 otherwise."""
    n = len(rels)

    def count(x: float) -> int:
        if rounding == "nearest":  # C lround: half away from zero
            return math.floor(Fraction(x * R) + Fraction(1, 2))
        return math.floor(x * R + 0.9)

    def interpolated(x: float) -> float | None:
        # the best precision at or after the rank holding c relevant items (the list's end
        # included); 0 when the list never holds c
        c = count(x)
        if n == 0:
            return None if c == 0 and protocol == "known" else 0.0
        seen, start = 0, 1
        for j in range(n):
            if seen >= c:
                break
            if rels[j]:
                seen += 1
                start = j + 1
        if seen < c:
            return 0.0
        return max(sum(rels[:j]) / j for j in range(max(start, 1), n + 1))

    if metric.family == "iprec":
        assert metric.param is not None
        v = interpolated(metric.param)
    else:
        points = [interpolated(i / 10) for i in range(11)]
        v = None if None in points else sum(p for p in points if p is not None) / 11
    return Value(v, 0.0 if v is None else v, 0.0 if v is None else 1.0)


# --- ties ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One prediction of a user's list: item id, score, relevance and nDCG gain."""

    item: object
    score: float
    rel: bool
    gain: float
    judged: bool = False  # the item has a truth row (whatever its rating)
    rating: float = 0.0  # its truth rating (0 without one)


def rank(rows: Sequence[Row], ties: str) -> list[Row]:
    """Highest score first; ties by the named policy: ``pessimistic``/``optimistic`` by
    relevance and gain, then, under every policy but ``stable`` (which keeps the input
    order), by item id descending as ``item`` orders (``average``: which tied items a cut
    list holds; its metrics average over the orders)."""
    rows = list(rows)
    if ties != "stable":  # trec_eval's item order: item id descending
        rows.sort(key=lambda r: r.item, reverse=True)
    if ties == "pessimistic":  # relevant (and higher-gain) items last
        rows.sort(key=lambda r: (r.rel, r.gain))
    elif ties == "optimistic":  # relevant (and higher-gain) items first
        rows.sort(key=lambda r: (r.rel, r.gain), reverse=True)
    rows.sort(key=lambda r: -r.score)  # Python's sort is stable
    return rows


def tie_groups(ranked: Sequence[Row]) -> list[list[Row]]:
    """Consecutive runs of equal score in a ranked list."""
    groups: list[list[Row]] = []
    for row in ranked:
        if groups and groups[-1][0].score == row.score:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def brute_force_average(
    ranked: Sequence[Row], f: Callable[[list[Row]], float]
) -> float:
    """Mean of ``f(ordering)`` over every ordering of the tied items (itertools.permutations
    of each tie group, all combinations). For small cases only."""
    groups = tie_groups(ranked)
    total = 0.0
    count = 0
    for combo in itertools.product(*(itertools.permutations(g) for g in groups)):
        ordering = [row for group in combo for row in group]
        total += f(ordering)
        count += 1
    return total / count


def _distinct_arrangements(labels: list[tuple[bool, float]]) -> Iterator[tuple]:
    """Every distinct ordering of a multiset of labels, each once."""
    counts: dict[tuple[bool, float], int] = {}
    for lab in labels:
        counts[lab] = counts.get(lab, 0) + 1
    keys = sorted(counts)
    n = len(labels)
    out: list[tuple[bool, float]] = []

    def rec() -> Iterator[tuple]:
        if len(out) == n:
            yield tuple(out)
            return
        for key in keys:
            if counts[key]:
                counts[key] -= 1
                out.append(key)
                yield from rec()
                out.pop()
                counts[key] += 1

    return rec()


def label_orderings(ranked: Sequence[Row]) -> list[list[tuple[bool, float]]]:
    """All distinct (relevance, gain) sequences reachable by reordering tied items. Each has
    the same probability under a uniformly random order of every tie group."""
    groups = tie_groups(ranked)
    per_group = [list(_distinct_arrangements([(r.rel, r.gain) for r in g])) for g in groups]
    return [[lab for arr in combo for lab in arr] for combo in itertools.product(*per_group)]


# --- one user --------------------------------------------------------------------------------


def user_values(
    truth: dict[object, float],
    predictions: list[tuple[object, float]],
    metrics: Sequence[Metric],
    opts: Opts,
) -> tuple[dict[str, Value], int]:
    """Every metric for one user: ``truth`` maps item -> rating (deduplicated, no missing
    rating), ``predictions`` lists (item, score) in input order (deduplicated).
    Returns the values and L_u."""
    rt = opts.relevance_threshold
    if rt is None:
        thr = -math.inf
    elif rt == "user_mean":
        thr = math.fsum(truth.values()) / len(truth) if truth else -math.inf
    else:
        thr = float(rt)  # type: ignore[arg-type]
    relevant = {item: rating >= thr for item, rating in truth.items()}
    n_rel = sum(relevant.values())
    ideal = [gain_of(rating, True, opts.gain) for item, rating in truth.items() if relevant[item]]

    rows = []
    for item, score in predictions:
        if opts.protocol == "known" and item not in truth:
            continue
        if opts.score_threshold is not None and score < opts.score_threshold:
            continue
        rel = relevant.get(item, False)
        rows.append(Row(item, score, rel, gain_of(truth.get(item, 0.0), rel, opts.gain),
                        item in truth, truth.get(item, 0.0)))
    ranked = rank(rows, opts.ties)

    out: dict[str, Value] = {}
    # gm_AP per user is AP itself (the geometric mean is the summary's)
    ranking_metrics = [m for m in metrics if m.family in RANKING or m.family == "gm_AP"]
    if opts.ties == "average":
        orderings = label_orderings(ranked)
        for m in ranking_metrics:
            vals = [
                metric_on_ranking(m, [r for r, _ in o], [g for _, g in o], n_rel, ideal, opts)
                for o in orderings
            ]
            defined = {v.value is None for v in vals}
            assert len(defined) == 1, "definedness cannot depend on the order of ties"
            mean = _mean
            out[m.name] = Value(
                None if vals[0].value is None else mean([v.value for v in vals]),  # type: ignore[misc]
                mean([v.num for v in vals]),
                mean([v.den for v in vals]),
                mean([v.den2 for v in vals]),
            )
    else:
        rels = [r.rel for r in ranked]
        gains = [r.gain for r in ranked]
        for m in ranking_metrics:
            out[m.name] = metric_on_ranking(m, rels, gains, n_rel, ideal, opts)

    top_rating = max((r for item, r in truth.items() if relevant[item]), default=0.0)
    if opts.err_max_grade != "user":  # ERR's fixed scale (gdeval: 4)
        top_rating = float(opts.err_max_grade)
    for m in metrics:
        if (m.family in JUDGED or m.family == "NCRR") and opts.ties == "average":
            raise OracleError(f"{m.name} reads the judged items' ranks, which average ties "
                              "do not fix")
        if m.family in JUDGED or m.family in ("num_rel", "num_ret"):
            out[m.name] = trec_measure(m, ranked, n_rel, len(truth), top_rating,
                                       opts.iprec_rounding, opts.protocol)
    pairs = [(score, truth[item]) for item, score in predictions if item in truth]
    if all(abs(s) < 1e100 and abs(t) < 1e100 for s, t in pairs):
        sq: float | Fraction = sum((s - t) ** 2 for s, t in pairs)
        ab: float | Fraction = sum(abs(s - t) for s, t in pairs)
    else:  # exact fractions: errors near 1e200 square far beyond the float range
        sq = sum(((Fraction(s) - Fraction(t)) ** 2 for s, t in pairs), Fraction(0))
        ab = sum((abs(Fraction(s) - Fraction(t)) for s, t in pairs), Fraction(0))
    for m in metrics:
        if m.family == "RMSE":
            out[m.name] = Value(sqrt_of(Fraction(sq) / len(pairs)) if pairs else None, sq,
                                len(pairs))
        elif m.family == "MAE":
            out[m.name] = Value(float(ab / len(pairs)) if pairs else None, ab, len(pairs))
    return out, n_rel


def _mean(xs: Sequence[float]) -> float:
    if any(isinstance(x, Fraction) for x in xs):  # huge nDCG gains: an exact mean
        return sum((Fraction(x) for x in xs), Fraction(0)) / len(xs)  # type: ignore[return-value]
    return math.fsum(xs) / len(xs)


# --- all users -------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What :func:`evaluate` returns."""

    summary: dict[str, float]
    per_user: dict[object, dict[str, float]]
    undefined: dict[str, int] = field(default_factory=dict)
    audit: dict[str, int] = field(default_factory=dict)
    ties_at_cutoff: dict[int, int] = field(default_factory=dict)


def _group(
    rows: Iterable[tuple[object, object, float]],
) -> dict[object, list[tuple[object, float]]]:
    """Per user, (item, value) in input order."""
    per_user: dict[object, list[tuple[object, float]]] = {}
    for user, item, value in rows:
        per_user.setdefault(user, []).append((item, value))
    return per_user


def _dedupe(
    lst: list[tuple[object, float]], policy: str, side: str, user: object
) -> tuple[list[tuple[object, float]], int]:
    """One row per item, in input order (the first row, or the one with the highest value,
    the first of equals); the rows dropped."""
    keep: dict[object, int] = {}
    dropped = 0
    for pos, (item, value) in enumerate(lst):
        if item not in keep:
            keep[item] = pos
            continue
        dropped += 1
        if policy == "error":
            raise DuplicateRow(f"{side}: user {user!r}, item {item!r}")
        if policy == "max" and value > lst[keep[item]][1]:
            keep[item] = pos
    return [lst[p] for p in sorted(keep.values())], dropped


def evaluate(
    truth_rows: Iterable[tuple[object, object, float]],
    prediction_rows: Iterable[tuple[object, object, float]],
    metrics: Sequence[str],
    **options: object,
) -> Outcome:
    """The reference evaluation. Rows are ``(user, item, rating)`` and ``(user, item, score)``
    in input order; a rating may be NaN (unknown: the row is dropped).

    A duplicate row is an input error (``duplicates="error"``) wherever it is, also among the
    rows of a user who is not evaluated (docs/semantics.md: duplicates are an input error); the
    ``first`` and ``max`` policies drop, and count, the repeated rows of every user, evaluated
    or not. The audit accounts for every row read: kept (the evaluated users' truth, and the
    predictions in their lists) or dropped for one reason."""
    opts = Opts(**options)  # type: ignore[arg-type]
    specs = [parse(m) for m in metrics]
    truth_rows = list(truth_rows)
    kept = [r for r in truth_rows if not (isinstance(r[2], float) and math.isnan(r[2]))]
    t_raw, p_raw = _group(kept), _group(prediction_rows)

    t_users, p_users = set(t_raw), set(p_raw)
    selected = {
        "truth": t_users,
        "relevant": t_users,
        "both": t_users & p_users,
        "predictions": p_users,
        "union": t_users | p_users,
    }[opts.users]
    if not selected:
        raise NoUser(f"no user selected by users={opts.users!r}")
    if opts.duplicates == "error":
        for side, raw in (("truth", t_raw), ("predictions", p_raw)):
            for user, rows in raw.items():
                _dedupe(rows, "error", side, user)
    truth: dict[object, list[tuple[object, float]]] = {}
    preds: dict[object, list[tuple[object, float]]] = {}
    audit = {"truth_duplicates": 0, "prediction_duplicates": 0,
             "truth_missing_rating": len(truth_rows) - len(kept)}
    for user in t_users | p_users:
        truth[user], n = _dedupe(t_raw.get(user, []), opts.duplicates, "truth", user)
        audit["truth_duplicates"] += n
        preds[user], n = _dedupe(p_raw.get(user, []), opts.duplicates, "predictions", user)
        audit["prediction_duplicates"] += n

    values: dict[object, dict[str, Value]] = {}
    n_relevant: dict[object, int] = {}
    for user in sorted(selected):  # type: ignore[type-var]
        v, n_rel = user_values(dict(truth[user]), preds[user], specs, opts)
        if opts.users == "relevant" and n_rel == 0:
            continue
        values[user] = v
        n_relevant[user] = n_rel
    if not values:
        raise NoUser(f"no user selected by users={opts.users!r}")

    # the audit of the evaluated users' predictions
    cuts = sorted({m.k for m in specs if m.family in RANKING and m.family != "Rprec" and m.k})
    ties_at_cut = dict.fromkeys(cuts, 0)
    for user in values:
        in_truth = dict(truth[user])
        listed = [(i, s) for i, s in preds[user] if opts.protocol == "full" or i in in_truth]
        audit["without_truth"] = audit.get("without_truth", 0) + sum(
            i not in in_truth for i, _ in preds[user])
        below = [s for _, s in listed
                 if opts.score_threshold is not None and s < opts.score_threshold]
        audit["below_score_threshold"] = audit.get("below_score_threshold", 0) + len(below)
        scores = sorted((s for _, s in listed if opts.score_threshold is None
                         or s >= opts.score_threshold), reverse=True)
        for k in cuts:
            if k < len(scores) and scores[k - 1] == scores[k]:
                ties_at_cut[k] += 1
    audit["without_relevant"] = sum(n == 0 for n in n_relevant.values())
    audit["truth_kept"] = sum(len(truth[u]) for u in values)
    audit["truth_not_evaluated"] = sum(len(truth[u]) for u in truth if u not in values)
    audit["predictions_not_evaluated"] = sum(len(preds[u]) for u in preds if u not in values)
    audit["predictions_kept"] = sum(
        1 for u in values for i, s in preds[u]
        if (opts.protocol == "full" or i in dict(truth[u]))
        and (opts.score_threshold is None or s >= opts.score_threshold))
    audit["without_predictions"] = sum(not preds[u] for u in values)

    summary: dict[str, float] = {}
    per_user: dict[object, dict[str, float]] = {u: {} for u in values}
    undefined: dict[str, int] = {}
    for m in specs:
        col = {u: values[u][m.name] for u in values}
        if m.family in POOLED:
            num = sum((Fraction(v.num) for v in col.values()), Fraction(0))
            n = sum(v.den for v in col.values())
            if not n:
                summary[m.name] = math.nan
            else:
                summary[m.name] = sqrt_of(num / n) if m.family == "RMSE" else float(num / n)
            for u, v in col.items():
                per_user[u][m.name] = math.nan if v.value is None else v.value
            continue
        undefined[m.name] = sum(v.value is None for v in col.values())
        filled: dict[object, float] = {}
        for u, v in col.items():
            if v.value is not None:
                filled[u] = v.value
            elif opts.empty == "error":
                raise Undefined(f"{m.name} undefined for user {u!r}")
            else:
                filled[u] = {"zero": 0.0, "one": 1.0, "skip": math.nan,
                             "nan": math.nan}[opts.empty]
        for u, x in filled.items():
            per_user[u][m.name] = x
        if m.family == "gm_AP":  # exp of the mean log of max(value, 1e-5), as trec_eval
            logs = [math.log(max(v.value, GEO_FLOOR)) for v in col.values()
                    if v.value is not None]
            n_undef = undefined[m.name]
            if opts.empty == "nan" and n_undef:
                summary[m.name] = math.nan
                continue
            if opts.empty in ("zero", "one"):  # an undefined user counts as 0 or as 1
                logs += [math.log(GEO_FLOOR if opts.empty == "zero" else 1.0)] * n_undef
            summary[m.name] = math.exp(math.fsum(logs) / len(logs)) if logs else math.nan
            continue
        if m.family == "num_rel_ret":  # summed over users, as trec_eval prints it
            summary[m.name] = math.fsum(v.value for v in col.values())  # type: ignore[misc]
            continue
        if opts.empty == "nan" and undefined[m.name]:  # any undefined user: NaN
            summary[m.name] = math.nan
        elif opts.average == "micro":
            summary[m.name] = _micro(m, list(col.values()))
        else:
            used = [x for x in filled.values() if not math.isnan(x)]
            nothing = 0.0 if opts.empty == "skip" and opts.all_skipped == "zero" else math.nan
            summary[m.name] = _mean(used) if used else nothing
    return Outcome(summary, per_user, undefined, audit, ties_at_cut)


def _micro(metric: Metric, vals: list[Value]) -> float:
    """Sum numerators and denominators over users first (docs/semantics.md section 8)."""
    if any(isinstance(v.num, Fraction) for v in vals):  # huge nDCG gains: exact sums
        num_x = sum((Fraction(v.num) for v in vals), Fraction(0))
        den_x = sum((Fraction(v.den) for v in vals), Fraction(0))
        return float(num_x / den_x) if den_x else math.nan
    num = math.fsum(v.num for v in vals)
    den = math.fsum(v.den for v in vals)
    if metric.family != "F":
        return num / den if den else math.nan
    den2 = math.fsum(v.den2 for v in vals)
    if not den or not den2:
        return math.nan
    p, r = num / den, num / den2
    if p + r == 0:
        return 0.0
    b2 = metric.beta**2
    return (1 + b2) * p * r / (b2 * p + r)
