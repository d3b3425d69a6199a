"""Debiased offline metrics: IPS and SNIPS versions of P, R, nDCG, AP, RBP and hit rate for
missing-not-at-random implicit feedback (Yang, Cui, Xuan, Wang, Belongie & Estrin, RecSys 2018).

A relevant truth row ``i`` of user ``u`` was observed with propensity ``p_i``; its weight is
``w_i = min(1 / p_i, clip)``. docs/debiased-metrics.md ("The formulas") has every form:

* IPS weighs each hit by ``w_i`` and keeps the plain denominator (``k``, the observed count
  ``|S*|``, the ideal DCG of ``min(k, |S*|)`` items): unbiased for P and RBP when the
  propensities are right in absolute terms, and free to exceed 1 (counted per metric in
  ``Result.counts["debias"]["above_range"]``, marked in the summary, warned);
* SNIPS is the weighted value over its weighted maximum (what the user's heaviest relevant
  items would give in the best list) times the plain metric's maximum for the user: scale-free
  (weights all equal give the plain metric exactly: such a user keeps the plain value as the
  engine computed it) and inside the plain range. It normalises within each user, where Yang
  et al. normalise once over all users.

With every ``w_i = 1`` both are today's metric. The ranked lists are the engine's
(``top_items``: ties, thresholds, protocol and duplicates as in every metric), so
``engine="numba"`` and ``engine="torch"`` give the same numbers. Every debiased result holds
the weights' diagnostics (:func:`diagnostics`: effective sample size, largest weight and its
share) in ``Result.counts["debias"]``; concentrated weights are warned, naming
``propensity_clip=``.

The propensity model: ``"uniform"`` (``p_i = 1``: today's numbers, bit for bit: nothing is
recomputed), ``("popularity", gamma)`` (Yang et al. eq. 15, ``p_i = (n_i / max n)^((gamma +
1) / 2)`` with ``n_i`` the item's training rows; ``gamma`` fitted with
:func:`estimate_gamma` for ``("popularity", "estimate")``) or the name of a truth column.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numba
import numpy as np
import pandas as pd

from receval import audit
from receval.dispatch import ranked_lists
from receval.exceptions import ReceValError
from receval.measures.family import Family
from receval.measures.rbp import PARAMETER as RBP_PARAMETER
from receval.measures.spec import MetricSpec

if TYPE_CHECKING:
    from receval.options import Options
    from receval.result import RecordedOptions, Result
    from receval.shaping import Prepared

DEBIAS = ("ips", "snips")
#: the families with an IPS form, by the code of the kernel below
FAMILY_CODES: dict[Family, int] = {Family.PRECISION: 0, Family.RECALL: 1, Family.NDCG: 2,
                                   Family.AP: 3, Family.RBP: 4, Family.HIT: 5}
FAMILY_NAMES = "P, R, nDCG, AP, RBP, hit (hit rate)"
#: ``ap_normalizer=`` by the kernel's code
AP_NORMALIZERS = ("min_k_relevant", "relevant", "hits", "k", "min_returned_relevant")
#: Yang et al. fit gamma on the top 50 of each list, without the 0.5% most popular items
GAMMA_LIST_DEPTH = 50
GAMMA_EXCLUDE_QUANTILE = 0.005


@dataclass(frozen=True)
class Debias:
    """The resolved debiasing request: estimator, propensity model and clipping.

    Example:
        >>> Debias.of("snips", ("popularity", 1.5), None).record()
        {'debias': 'snips', 'propensity': {'model': 'popularity', 'gamma': 1.5}, \
'propensity_clip': None}
    """

    debias: str
    model: str  # "uniform", "popularity" or "column"
    gamma: float | None = None  # None with "estimate" until fitted
    column: str | None = None
    clip: float | None = None
    estimated: bool = False

    @classmethod
    def of(cls, debias: Any, propensity: Any, clip: Any) -> Debias:
        """Validate ``debias=``, ``propensity=`` and ``propensity_clip=`` (one-line errors)."""
        if debias is None:
            raise ReceValError("propensity= and propensity_clip= weigh the debiased metrics: "
                               "pass debias='ips' or debias='snips' too")
        if debias not in DEBIAS:
            raise ReceValError(f"debias={debias!r} is not one of 'ips', 'snips' (or None)")
        if propensity is None:
            raise ReceValError(f"debias={debias!r} needs propensity=: 'uniform', "
                               "('popularity', gamma), ('popularity', 'estimate') or the name "
                               "of a truth column")
        if clip is not None and (isinstance(clip, bool) or not _finite(clip)
                                 or float(clip) < 1):
            raise ReceValError(f"propensity_clip={clip!r} must be a number >= 1 (the largest "
                               "weight 1/propensity kept; a propensity is at most 1)")
        clip = None if clip is None else float(clip)
        if propensity == "uniform":
            return cls(debias, "uniform", clip=clip)
        if isinstance(propensity, tuple | list) and len(propensity) == 2 \
                and propensity[0] == "popularity":
            gamma = propensity[1]
            if gamma == "estimate":
                return cls(debias, "popularity", clip=clip, estimated=True)
            if isinstance(gamma, bool) or not _finite(gamma) or float(gamma) < -1:
                raise ReceValError(f"propensity=('popularity', {gamma!r}): gamma must be a "
                                   "number >= -1 or 'estimate'")
            return cls(debias, "popularity", gamma=float(gamma), clip=clip)
        if isinstance(propensity, str) and propensity not in ("popularity", ""):
            return cls(debias, "column", column=propensity, clip=clip)
        raise ReceValError(f"propensity={propensity!r} is not 'uniform', ('popularity', gamma), "
                           "('popularity', 'estimate') or the name of a truth column")

    def record(self) -> RecordedOptions:
        """What ``Result.options`` records."""
        model: Any = self.model
        if self.model == "popularity":
            model = {"model": "popularity", "gamma": self.gamma}
            if self.estimated:
                model["gamma_estimated"] = True
        elif self.model == "column":
            model = {"model": "column", "column": self.column}
        return {"debias": self.debias, "propensity": model, "propensity_clip": self.clip}


def _finite(x: Any) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def check(specs: list[MetricSpec], *, engine: str, strata: Any, truth_is_spark: bool) -> None:
    """Refuse, in one line, what the debiased metrics cannot do."""
    if engine == "spark" or truth_is_spark:
        raise ReceValError("debias= is not available on Spark (the weights do not reach the "
                           "executors): evaluate the pandas/Arrow tables (engine='numba')")
    if strata is not None:
        raise ReceValError("debias= with strata= is not available yet: evaluate each group")
    other = [s.name for s in specs if s.family not in FAMILY_CODES]
    if other:
        raise ReceValError(f"metric {other[0]!r} has no IPS form ({len(other)} such metric(s)); "
                           f"debias= takes the families {FAMILY_NAMES}")


def check_options(per_spec: list[Options], options: Options) -> None:
    """Refuse, in one line, the options a weighted metric cannot honour (a non-uniform
    propensity; every metric's options, a profile's per-metric ones included)."""
    if any(o != options for o in per_spec):
        raise ReceValError("debias= with a profile whose options differ per metric is not "
                           "available: pass the options yourself, without profile=")
    for name, bad, why in (("ties", "average", "needs the ranked lists"),
                           ("average", "micro", "is a per-user estimator"),
                           ("nonpositive_scores", "irrelevant", "reads hits from the lists"),
                           ("duplicates", "keep", "weighs each relevant item once"),
                           ("gain", "linear", "weighs binary relevance"),
                           ("gain", "exponential", "weighs binary relevance"),
                           ("discount", "log2_max2", "uses the log2(r + 1) discount"),
                           ("discount", "geometric", "uses the log2(r + 1) discount"),
                           ("ideal", "k", "normalises by the weighted achievable ideal")):
        if getattr(options, name) == bad:
            raise ReceValError(f"debias= with {name}={bad!r} is not available: the debiased "
                               f"metric {why}")


def popularity_propensity(train_items: np.ndarray, items: np.ndarray,
                          gamma: float) -> np.ndarray:
    """Yang et al. 2018 eq. 15: ``p_i = (n_i / max n)^((gamma + 1) / 2)``, ``n_i`` the
    training rows of item ``i`` (an item never trained on counts as one row: its weight is
    the largest).

    Example:
        >>> popularity_propensity(np.array([1, 1, 1, 1, 2]), np.array([1, 2, 3]), 1.0).tolist()
        [1.0, 0.25, 0.25]
    """
    counts = pd.Series(np.asarray(train_items)).value_counts()
    if len(counts) == 0:
        raise ReceValError("propensity=('popularity', ...) needs training rows: train= is "
                           "empty")
    n = counts.reindex(pd.Index(items), fill_value=1).to_numpy(dtype=np.float64)
    top = float(counts.max())
    return np.asarray((n / top) ** ((gamma + 1.0) / 2.0), dtype=np.float64)


def estimate_gamma(train_items: Any, shown: Any) -> float:
    """Yang et al.'s fit of the presentation exponent ``gamma``: the least-squares slope of
    ``log f(n)`` on ``log n``, ``n`` an item's training rows and ``f(n)`` the mean number of
    times the items with ``n`` rows are ``shown`` (the items of the top 50 of every list),
    the 0.5% most popular items left out.

    Example:
        >>> train = np.repeat([1, 2, 3, 4], [8, 4, 2, 1])
        >>> round(estimate_gamma(train, [1, 2, 3, 4, 1, 2, 1, 1, 2, 1, 1, 1, 1, 2, 3]), 6)
        1.0
    """
    counts = pd.Series(np.asarray(train_items)).value_counts().astype(np.float64)
    freq = pd.Series(np.asarray(shown)).value_counts()
    freq = freq.reindex(counts.index, fill_value=0).astype(np.float64)
    keep = counts <= counts.quantile(1.0 - GAMMA_EXCLUDE_QUANTILE)
    levels = freq[keep].groupby(counts[keep]).mean()
    levels = levels[levels > 0]
    if len(levels) < 2:
        raise ReceValError("propensity=('popularity', 'estimate'): fewer than two training "
                           "popularity levels appear in the lists; pass gamma as a number")
    x = np.log(levels.index.to_numpy(dtype=np.float64))
    y = np.log(levels.to_numpy(dtype=np.float64))
    x = x - x.mean()
    return float(x @ (y - y.mean()) / (x @ x))


@numba.njit(cache=True)
def _debiased(top: np.ndarray, n_list: np.ndarray, ptr: np.ndarray, rel_items: np.ndarray,
              rel_w: np.ndarray, fam: np.ndarray, ks: np.ndarray, params: np.ndarray,
              prec_returned: bool, recall_capped: bool, ap_norm: int, snips: bool,
              log2_rank: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Per user (rows) and metric (columns): the debiased value; NaN keeps the plain value
    (a user without an observed relevant item, a zero denominator, or, for SNIPS, a user
    whose weights are all equal: each SNIPS form then is the plain metric)."""
    n_users, width = top.shape
    out = np.full((n_users, len(fam)), np.nan)
    hw = np.zeros(width)
    most = 1
    for u in range(n_users):
        most = max(most, ptr[u + 1] - ptr[u])
    scaled = np.empty(most)  # SNIPS: the user's weights over their largest, then sorted
    ascending = np.empty(most)
    heaviest = np.empty(most)
    for u in range(n_users):
        lo, hi = ptr[u], ptr[u + 1]
        m = hi - lo
        if m == 0:
            continue
        w = rel_w[lo:hi]
        ws = w  # IPS reads no weighted ideal
        if snips:
            wmax = np.max(w)
            if wmax == np.min(w):
                continue  # every SNIPS form is scale-free: the plain value, as computed
            for t in range(m):  # the heaviest weighs 1 (each form is a ratio: the same value)
                scaled[t] = w[t] / wmax
                ascending[t] = scaled[t]
            ascending[:m].sort()
            for t in range(m):  # heaviest first: the weighted ideals
                heaviest[t] = ascending[m - 1 - t]
            w = scaled[:m]
            ws = heaviest[:m]
        mine = rel_items[lo:hi]
        order = np.argsort(mine, kind="mergesort")
        sorted_items = mine[order]
        for r in range(width):
            hw[r] = 0.0
            item = top[u, r]
            if item < 0:
                continue
            pos = np.searchsorted(sorted_items, item)
            if pos < m and sorted_items[pos] == item:
                hw[r] = w[order[pos]]
        for c in range(len(fam)):
            cut = ks[c] > 0
            k = ks[c] if cut else width
            kk = min(k, width)
            f = fam[c]
            if f == 0 or f == 1:  # P@k, R@k: the weighed hits
                num = 0.0
                for r in range(kk):
                    num += hw[r]
                if f == 0:
                    den = min(k, n_list[u]) if prec_returned else k
                    j = min(den, m)
                else:
                    den = min(k, m) if (recall_capped and cut) else m
                    j = den
                if den == 0:
                    continue
                if not snips:
                    out[u, c] = num / den
                    continue
                ideal = 0.0  # the heaviest j relevant items, all in the top k
                for r in range(j):
                    ideal += ws[r]
                out[u, c] = min(num * (j / ideal) / den, j / den)
            elif f == 2:  # nDCG@k, binary gains
                num = 0.0
                for r in range(kk):
                    if hw[r] > 0.0:
                        num += hw[r] / log2_rank[r]
                j = min(k, m) if cut else m
                idcg = 0.0
                for r in range(j):
                    idcg += (ws[r] if snips else 1.0) / log2_rank[r]
                out[u, c] = min(num / idcg, 1.0) if snips else num / idcg
            elif f == 3:  # AP@k: w_i (1 + weight ranked above) / rank; SNIPS: w_i (w_i + ...)
                num = 0.0
                above = 0.0
                hits = 0
                for r in range(kk):
                    if hw[r] > 0.0:
                        above += hw[r] if snips else 0.0
                        num += hw[r] * ((0.0 if snips else 1.0) + above) / (r + 1.0)
                        above += 0.0 if snips else hw[r]
                        hits += 1
                if ap_norm == 0:
                    den = min(k, m) if cut else m
                elif ap_norm == 1:
                    den = m
                elif ap_norm == 2:
                    den = hits
                elif ap_norm == 3:
                    den = k if cut else n_list[u]
                else:  # min_returned_relevant
                    den = min(m, min(k, n_list[u]))
                if den == 0:
                    continue
                if not snips:
                    out[u, c] = num / den
                    continue
                j = min(min(k, m) if cut else m, den)
                ideal = 0.0  # the heaviest j relevant items at ranks 1..j, heaviest first
                prefix = 0.0
                for r in range(j):
                    prefix += ws[r]
                    ideal += ws[r] * prefix / (r + 1.0)
                out[u, c] = min(num * (j / ideal) / den, j / den)
            elif f == 4:  # RBP@p over the whole list
                p = params[c]
                num = 0.0
                for r in range(width):
                    if hw[r] > 0.0:
                        num += hw[r] * (1.0 - p) * p ** r
                if not snips:
                    out[u, c] = num
                    continue
                ideal = 0.0
                plain = 0.0  # the plain ideal: every relevant item ranked first
                for r in range(m):
                    ideal += ws[r] * (1.0 - p) * p ** r
                    plain += (1.0 - p) * p ** r
                out[u, c] = min(num * (plain / ideal), plain)
            else:  # HR@k: the first hit's weight (SNIPS: over the heaviest, 1)
                num = 0.0
                for r in range(kk):
                    if hw[r] > 0.0:
                        num = hw[r]
                        break
                out[u, c] = min(num, 1.0) if snips else num
    return out


def truth_weights(debias: Debias, prepared: Prepared, users: np.ndarray, ptr: np.ndarray,
                  items: np.ndarray, *, truth: Any, read_column: Any,
                  train_items: Any) -> np.ndarray:
    """The weight ``min(1 / p, clip)`` of each relevant truth row (``users`` x ``items``
    codes, CSR ``ptr``); a non-positive or missing propensity is refused in one line."""
    if debias.model == "popularity":
        assert debias.gamma is not None
        prop = popularity_propensity(train_items, prepared.items.decode(items), debias.gamma)
    else:
        assert debias.column is not None
        table = read_column(debias.column)
        owner = np.repeat(np.arange(len(users)), np.diff(ptr))
        t_users = _codes(prepared.users.ids, table[0])
        t_items = _codes(prepared.items.ids, table[1])
        width = int(np.max(items, initial=-1)) + 1
        # rows of users or items with no relevant truth row here weigh nothing
        known = ((t_users >= 0) & (t_users <= np.max(users, initial=-1))
                 & (t_items >= 0) & (t_items < width))
        # one int64 key per (user, item) code pair; the first row of a repeated pair counts
        t_keys, first_row = np.unique(t_users[known] * width + t_items[known],
                                      return_index=True)
        t_prop = np.asarray(table[2], dtype=np.float64)[known][first_row]
        keys = np.asarray(users, dtype=np.int64)[owner] * width + items
        at = np.minimum(np.searchsorted(t_keys, keys), max(len(t_keys) - 1, 0))
        found = (t_keys[at] == keys) if len(t_keys) else np.zeros(len(keys), dtype=bool)
        prop = np.where(found, t_prop[at] if len(t_keys) else np.nan, np.nan)
    def user_of(row: int) -> Any:
        who = np.repeat(np.arange(len(users)), np.diff(ptr))  # each row's user (CSR)
        return _id(prepared.users, users[who[row]])

    return clipped_weights(prop, debias, user_of, lambda row: _id(prepared.items, items[row]))


def clipped_weights(prop: np.ndarray, debias: Debias, user_of: Callable[[int], Any],
                    item_of: Callable[[int], Any]) -> np.ndarray:
    """The weight ``min(1 / p, clip)`` of each propensity ``p``, the one check and clip of
    both doors (:func:`truth_weights` for the lists and :func:`apply_lists` for the score
    matrix). A propensity outside (0, 1] or none (NaN: a row the column does not hold) is
    refused in one line naming the first such row's user and item (``user_of(row)``,
    ``item_of(row)``) and how many there are.

    Example:
        >>> req = Debias("ips", "column", column="p", clip=4.0)
        >>> clipped_weights(np.array([0.5, 0.1]), req, str, str).tolist()
        [2.0, 4.0]
        >>> clipped_weights(np.array([0.5, 0.0]), req, lambda r: "u1", lambda r: "i9")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: propensity 'p': 1 relevant truth row(s) have a \
propensity outside (0, 1] or none (first: 0.0 for user 'u1', item 'i9')
    """
    bad = ~((prop > 0) & (prop <= 1))  # NaN (a row the column does not hold) included
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        what = debias.column if debias.model == "column" else "popularity"
        raise ReceValError(f"propensity {what!r}: {int(bad.sum())} relevant truth row(s) have "
                           f"a propensity outside (0, 1] or none (first: {float(prop[first])!r} "
                           f"for user {user_of(first)!r}, item {item_of(first)!r})")
    weights = 1.0 / prop
    if debias.clip is not None:
        weights = np.minimum(weights, debias.clip)
    return np.asarray(weights, dtype=np.float64)


def _id(dictionary: Any, code: Any) -> Any:
    """One code's id, as a plain Python value (for messages)."""
    return _plain(dictionary.decode(np.array([code], dtype=np.int64))).tolist()[0]


def _codes(dictionary_ids: np.ndarray | None, ids: Any) -> np.ndarray:
    """The codes of ``ids`` in an encoding whose ids are ``dictionary_ids`` (``None``: the
    codes are the ids); ``-1`` for an id it does not hold."""
    values = _plain(ids)
    if dictionary_ids is None:
        return values.astype(np.int64) if values.dtype != object else \
            np.full(len(values), -1, dtype=np.int64)
    return np.asarray(pd.Index(_plain(dictionary_ids)).get_indexer(values), dtype=np.int64)


def _plain(ids: Any) -> np.ndarray:
    arr = np.asarray(ids)
    return arr.astype(object) if arr.dtype.kind in "OUS" else arr.astype(np.int64)


def apply(result: Result, debias: Debias, specs: list[MetricSpec], prepared: Prepared,
          options: Options, *, engine: str, device: Any, truth: Any,
          read_column: Any, train_items: Any, per_spec: list[Options] | None = None) -> Debias:
    """Replace ``result``'s metric columns and summary by their debiased values (uniform
    propensities: nothing is recomputed) and return the request as resolved (``gamma``
    fitted where asked), whose :meth:`Debias.record` the plan records in ``result.options``:
    this writes no option (:func:`receval.finalize.record_profile` is the one place).
    ``result.counts["debias"]`` gets the weights' diagnostics (:func:`diagnostics`)."""
    if not specs:
        return debias
    from receval.beyond.attach import relevant_rows

    t = prepared.truth
    if debias.model == "uniform":  # every weight 1: the numbers stay, the diagnostics say so
        users = _result_users(result, prepared, audit.select_users(prepared, options))[0]
        ptr, _ = relevant_rows(t.indptr, t.items, t.values, users, options.relevance_threshold)
        record_diagnostics(result, debias, np.ones(int(ptr[-1])), {})
        return debias
    check_options(per_spec or [], options)
    selected = audit.select_users(prepared, options)
    longest = int(np.max(np.diff(prepared.predictions.indptr), initial=0))
    if options.max_list is not None:
        longest = min(longest, int(options.max_list))
    prepared, out = ranked_lists(prepared, selected, options, depth(debias, specs, longest),
                                 engine, device)
    users, rows = _result_users(result, prepared, selected)
    ptr, items = relevant_rows(t.indptr, t.items, t.values, users, options.relevance_threshold)
    assert out.top_items is not None
    top = np.ascontiguousarray(out.top_items[rows], dtype=np.int64)
    if debias.estimated:
        head = top[:, :GAMMA_LIST_DEPTH]
        shown = _plain(prepared.items.decode(head[head >= 0]))
        debias = Debias(debias.debias, "popularity", clip=debias.clip, estimated=True,
                        gamma=estimate_gamma(train_items, shown))
    weights = truth_weights(debias, prepared, users, ptr, np.asarray(items, dtype=np.int64),
                            truth=truth, read_column=read_column, train_items=train_items)
    _replace(result, debias, specs, options, top,
             np.asarray(out.n_list, dtype=np.int64)[rows], ptr, np.asarray(items, np.int64),
             weights)
    return debias


def _result_users(result: Result, prepared: Prepared,
                  selected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The codes of the result's users, in its order (``users="relevant"`` keeps those with a
    relevant item), and their rows among ``selected``."""
    codes = dict(zip(_plain(prepared.users.decode(selected)).tolist(), range(len(selected)),
                     strict=True))
    rows = np.array([codes[u] for u in _plain(result.per_user["user"].to_numpy()).tolist()],
                    dtype=np.int64)
    return selected[rows], rows


#: the weights are "concentrated" (a warning naming ``propensity_clip=``) when the effective
#: sample size falls below this share of the weighted rows, or (from MIN_ROWS rows) the
#: largest weight holds more than MAX_SHARE of their total: receval.offpolicy's rule
ESS_SHARE = 0.01
MAX_SHARE = 0.1
MIN_ROWS = 100
#: the largest value of every debiased family's plain metric
PLAIN_MAX = 1.0


def diagnostics(weights: np.ndarray, clip: float | None = None) -> dict[str, Any]:
    """The weights' diagnostics, as :func:`receval.offpolicy.estimate` gives them: the
    weighted (relevant truth) ``rows``, ``ess`` (effective sample size, (sum w)^2 / sum w^2),
    ``max_weight``, ``max_weight_share`` (its share of the total), ``mean_weight`` and
    ``at_clip`` (rows whose weight is the clip; 0 without one).

    Example:
        >>> d = diagnostics(np.array([50.0, 1.0]))
        >>> d["rows"], round(d["ess"], 4), d["max_weight"], round(d["max_weight_share"], 4)
        (2, 1.04, 50.0, 0.9804)
    """
    n = len(weights)
    total = float(np.sum(weights))
    top = float(np.max(weights)) if n else math.nan
    return {"rows": n, "ess": total * total / float(np.sum(weights * weights)) if n else math.nan,
            "max_weight": top, "max_weight_share": top / total if n else math.nan,
            "mean_weight": total / n if n else math.nan,
            "at_clip": int(np.sum(weights >= clip)) if clip is not None else 0}


def concentrated(d: Mapping[str, Any]) -> bool:
    """Whether the weights are concentrated: ``ess`` below :data:`ESS_SHARE` of the rows, or
    (from :data:`MIN_ROWS` rows) the largest weight above :data:`MAX_SHARE` of the total.

    Example:
        >>> concentrated(diagnostics(np.array([50.0, 1.0]))), concentrated(diagnostics(
        ...     np.ones(200)))
        (False, False)
        >>> concentrated(diagnostics(np.r_[np.ones(199), 1000.0]))
        True
    """
    n = d["rows"]
    if not n:
        return False
    return bool(d["ess"] < ESS_SHARE * n or (d["max_weight_share"] > MAX_SHARE
                                             and n >= MIN_ROWS))


def record_diagnostics(result: Result, debias: Debias, weights: np.ndarray,
                       above: dict[str, int]) -> None:
    """``result.counts["debias"]``: the estimator, the weights' :func:`diagnostics` and, for
    IPS, ``above_range`` (metric -> users whose value exceeds the plain metric's range);
    warned (``silence=["debias"]``) when the weights are concentrated or a value is above its
    range."""
    from receval import checks

    record = {"estimator": debias.debias, **diagnostics(weights, debias.clip),
              "above_range": dict(above)}
    result.counts["debias"] = record
    if concentrated(record):
        checks.warn(checks.DebiasWarning,
                    f"debias={debias.debias!r}: the weights 1/propensity are concentrated "
                    f"(effective sample size {record['ess']:.1f} of {record['rows']:,} relevant "
                    f"rows; the largest weight, {record['max_weight']:.4g}, holds "
                    f"{100 * record['max_weight_share']:.0f}% of the total): bound them with "
                    "propensity_clip= (--propensity-clip)")
    shown = {m: n for m, n in above.items() if n}
    if shown:
        listed = ", ".join(f"{m} {n:,}" for m, n in shown.items())
        checks.warn(checks.DebiasWarning,
                    f"debias='ips': users with a value above the metric's range of 1 ({listed}; "
                    "IPS divides by the observed count, not the weights: see "
                    "docs/debiased-metrics.md); debias='snips' stays inside it")


def _replace(result: Result, debias: Debias, specs: list[MetricSpec], options: Options,
             top: np.ndarray, n_list: np.ndarray, ptr: np.ndarray, items: np.ndarray,
             weights: np.ndarray) -> None:
    """Put the debiased values of ``specs`` (the ranked codes ``top`` of the result's users,
    in its order; their relevant codes ``items`` in CSR ``ptr``, weighed) in ``result``, and
    the weights' diagnostics in ``result.counts["debias"]``."""
    from receval.measures.discounts import DISCOUNT_CODES, log2_ranks

    fam = np.array([FAMILY_CODES[s.family] for s in specs], dtype=np.int64)
    ks = np.array([s.k or 0 for s in specs], dtype=np.int64)
    params = np.array([s.param if s.param is not None else RBP_PARAMETER[1] for s in specs])
    ap_norm = AP_NORMALIZERS.index(options.ap_normalizer)
    longest = max(top.shape[1], int(np.max(np.diff(ptr), initial=0)), 1)
    values = _debiased(top, n_list, ptr, items, weights, fam, ks, params,
                       options.effective_precision_denominator == "returned",
                       options.recall_denominator == "capped", ap_norm,
                       debias.debias == "snips", log2_ranks(longest, DISCOUNT_CODES["log2"]))
    above: dict[str, int] = {}
    changed = False
    for c, spec in enumerate(specs):
        column = result.per_user[spec.name].to_numpy(dtype=np.float64, copy=True)
        defined = ~np.isnan(values[:, c])
        if debias.debias == "ips":
            above[spec.name] = int(np.sum(values[defined, c] > PLAIN_MAX))
        if not defined.any():  # every user keeps the plain value: so does the summary
            continue
        changed = True
        column[defined] = values[defined, c]
        result.per_user[spec.name] = column
        if options.empty == "skip":
            kept = column[~np.isnan(column)]
            result.summary[spec.name] = float(np.mean(kept)) if len(kept) else math.nan
        else:
            result.summary[spec.name] = float(np.mean(column)) if len(column) else math.nan
    if changed:
        result.sums = None  # the exact sums are of the plain metric
    record_diagnostics(result, debias, weights, above)


def depth(debias: Debias, specs: list[MetricSpec], longest: int) -> int:
    """How deep the ranked lists are read: the largest cutoff (RBP: the whole list,
    ``longest``), at least :data:`GAMMA_LIST_DEPTH` when gamma is fitted."""
    return max([s.k if s.k and s.family is not Family.RBP else longest for s in specs]
               + [GAMMA_LIST_DEPTH if debias.estimated else 1, 1])


def apply_lists(result: Result, debias: Debias, specs: list[MetricSpec], options: Options,
                top: np.ndarray, n_list: np.ndarray, ptr: np.ndarray, items: np.ndarray,
                users: np.ndarray, rel_ids: np.ndarray, item_ids: np.ndarray, *,
                read_column: Any, train_items: Any) -> Debias:
    """:func:`apply` for ranked lists given as codes (``evaluate_scores``: columns of the
    score matrix, ``item_ids`` their items): ``top`` the result's users' lists in its order,
    ``n_list`` their lengths, ``items`` (CSR ``ptr``) their relevant truth rows' codes (a
    code no list holds for an item outside ``item_ids``), with their ``users`` and items
    (``rel_ids``) as ids. Returns the request as resolved (``gamma`` fitted where asked);
    writes no option."""
    if not specs:
        return debias
    if debias.model == "uniform":  # every weight 1: the numbers stay, the diagnostics say so
        record_diagnostics(result, debias, np.ones(int(ptr[-1])), {})
        return debias
    if debias.estimated:
        head = top[:, :GAMMA_LIST_DEPTH]
        debias = Debias(debias.debias, "popularity", clip=debias.clip, estimated=True,
                        gamma=estimate_gamma(train_items, _plain(item_ids[head[head >= 0]])))
    if debias.model == "popularity":
        assert debias.gamma is not None
        prop = popularity_propensity(train_items, _plain(rel_ids), debias.gamma)
    else:
        assert debias.column is not None
        t_users, t_items, t_prop = read_column(debias.column)
        table = pd.Series(np.asarray(t_prop, dtype=np.float64),
                          index=pd.MultiIndex.from_arrays([_plain(t_users), _plain(t_items)]))
        table = table[~table.index.duplicated()]  # the first row of a repeated pair counts
        wanted = pd.MultiIndex.from_arrays([_plain(users), _plain(rel_ids)])
        prop = table.reindex(wanted).to_numpy(dtype=np.float64)
    weights = clipped_weights(prop, debias,
                              lambda row: _plain(users[row:row + 1]).tolist()[0],
                              lambda row: _plain(rel_ids[row:row + 1]).tolist()[0])
    _replace(result, debias, specs, options, np.ascontiguousarray(top, dtype=np.int64),
             np.asarray(n_list, dtype=np.int64), ptr, np.asarray(items, dtype=np.int64),
             np.asarray(weights, dtype=np.float64))
    return debias


def read_truth_column(truth: Any, predictions: Any, column: str,
                      columns: Mapping[str, Any]) -> tuple[Any, Any, np.ndarray]:
    """The truth's (user, item, ``column``) arrays, read as :func:`receval.evaluate` reads the
    truth (a missing column is a one-line error)."""
    from receval.data.columns import read_sides

    truth_columns = dict(columns.get("truth_columns") or {})
    truth_columns["rating"] = column
    try:
        t, _ = read_sides(truth, predictions, user_col=columns["user_col"],
                          item_col=columns["item_col"], rating_col=column,
                          score_col=columns["score_col"], truth_columns=truth_columns,
                          prediction_columns=columns.get("prediction_columns"),
                          rating_required=True)
    except ReceValError as exc:
        raise ReceValError(f"propensity={column!r} names no usable truth column: {exc}") \
            from None
    assert t.values is not None
    return t.users, t.items, t.values


def request(given: Mapping[str, Any], specs: list[MetricSpec], per_spec: list[Options],
            options: Options, train: Any) -> Debias:
    """``evaluate_scores``'s validated ``debias=`` request (``given``: its ``debias``,
    ``propensity``, ``propensity_clip``), refused in one line as ``evaluate`` refuses it."""
    req = Debias.of(given.get("debias"), given.get("propensity"), given.get("propensity_clip"))
    check(specs, engine="torch", strata=None, truth_is_spark=False)
    if req.model != "uniform":
        check_options(per_spec, options)
    if req.model == "popularity" and train is None:
        raise ReceValError("propensity=('popularity', ...) needs the training data: pass "
                           "train= (item popularity is counted there)")
    return req


def matrix_depth(req: Debias | None, specs: list[MetricSpec], n_items: int,
                 options: Options) -> int:
    """How deep ``evaluate_scores`` ranks for ``req`` (:func:`depth`; 0 without one)."""
    if req is None:
        return 0
    longest = n_items if options.max_list is None else min(n_items, int(options.max_list))
    return depth(req, specs, max(longest, 1))


def apply_matrix(result: Result, req: Debias, specs: list[MetricSpec], options: Options,
                 ranked: list[tuple[np.ndarray, np.ndarray]], judged: Any, n_items: int,
                 item_ids: np.ndarray, truth: Any, train_items: Any, *, user_col: str,
                 item_col: str) -> Debias:
    """:func:`apply_lists` for ``evaluate_scores``: ``ranked`` its blocks' top columns and
    list lengths, ``judged`` its truth grouped by user (``users``, the relevant rows'
    ``g_indptr``, ``g_cols``, ``g_items``)."""
    from receval.data.columns import read_columns

    if not specs:
        return req
    if req.model == "uniform":  # every weight 1: the numbers stay, the diagnostics say so
        record_diagnostics(result, req, np.ones(int(judged.g_indptr[-1])), {})
        return req
    # a relevant item outside the matrix's columns: a code no list holds
    codes = np.where(judged.g_cols >= 0, judged.g_cols,
                     n_items + np.arange(len(judged.g_cols)))
    owner = np.repeat(np.arange(len(judged.users)), np.diff(judged.g_indptr))

    def read_column(column: str) -> tuple[Any, Any, np.ndarray]:
        try:
            cols = read_columns(truth, side="truth", user_col=user_col, item_col=item_col,
                                value_col=column, value_required=True)
        except ReceValError as exc:
            raise ReceValError(f"propensity={column!r} names no usable truth column: "
                               f"{exc}") from None
        assert cols.values is not None
        return cols.users, cols.items, cols.values

    return apply_lists(result, req, specs, options, np.concatenate([t for t, _ in ranked]),
                       np.concatenate([n for _, n in ranked]), judged.g_indptr, codes,
                       judged.users[owner], judged.g_items, item_ids,
                       read_column=read_column, train_items=train_items)
