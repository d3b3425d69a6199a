"""Sampled evaluation done right: shared, seeded candidates and the corrected estimators.

The protocol (docs/semantics.md section 13): each test user's test items plus ``m`` negatives
sampled from the catalogue less the user's training and test items (:func:`sample_candidates`,
uniform or proportional to ``pop(i) ** alpha``, seeded per user so that the candidates depend
on the seed and the user only). Every model scores the same candidates table.

:func:`evaluate_sampled` reports, per metric ``M`` (``nDCG@10``, say), under these names:

- ``"M [sampled]"``: the naive value, :func:`receval.evaluate` on the candidates as if the
  sampled rank were the full rank (what papers with "100 negatives" report);
- ``"M [CLS]"`` and ``"M [BV]"``: the corrected estimates of the full-catalogue value (Krichene
  & Rendle, KDD 2020), for the metrics with a one-relevant-item form: ``P@k``, ``R@k``,
  ``hit@k``, ``nDCG@k``, ``MAP@k`` / ``AP@k`` and ``MRR`` / ``RR@k``;
- ``"M [exact]"``: with ``full_predictions`` (the scores over the whole catalogue), the value
  the corrections estimate, computed from the full ranks; ``counts["sampled"]["gap"]`` holds
  each estimate minus it.

**The corrected estimators.** A relevant item of full rank ``R`` among ``n`` items (``R - 1``
of the other ``n - 1`` items score above it) gets the sampled rank ``r`` among itself and ``m``
negatives drawn without replacement with probability ``P(r | R) = Hypergeom(r - 1; N = n - 1,
K = R - 1, m)``. With ``A[R, r] = P(r | R)`` (``R = 1..n``, ``r = 1..m + 1``), ``b[R] = M(R)``
(``M`` in its one-relevant-item form: ``1/k`` for P, ``1`` for R and hit, ``1/R`` for AP and
RR, ``1/log2(R + 1)`` for nDCG, each 0 past ``k``) and each ``R`` weighted ``1/n``:

- CLS: ``x = argmin over [0, 1]^(m+1) of || A x - b ||^2`` (bounded least squares);
- BV: ``x = ((1 - gamma) A'A + gamma diag(c))^-1 A'b`` with ``c_r = sum_R P(r | R) / n`` and
  ``gamma = 0.01``, the reference code's default;

then ``x`` is clipped to ``[0, 1]`` and set to 0 past ``r = k`` (``R >= r``, so a sampled rank
past ``k`` is a full rank past ``k``), as in the reference code
(``cesarebernardis/WSDM-Cup-2022``, ``CorrectedMetrics.py``; it takes the population as ``n``
where the relevant item's own slot makes it ``n - 1``: a difference of order ``1/n``). A user's
estimate is the mean of ``x[r_i]`` over the user's relevant items ``i``, ``r_i`` being ``i``'s
rank among itself and the user's sampled negatives (other relevant items are not counted, ties
count against ``i``); the summary is the mean over users with a relevant item. When a user has
one relevant item (leave-one-out), this one-relevant-item form is the metric itself.

Example:
    >>> import pandas as pd
    >>> train = pd.DataFrame({"user": [1, 2], "item": [1, 2]})
    >>> test = pd.DataFrame({"user": [1, 2], "item": [2, 3]})
    >>> c = sample_candidates(train, test, 2, items=range(1, 8), seed=0)
    >>> c.groupby("user").size().tolist()
    [3, 3]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from receval.checks import keeps_warnings
from receval.exceptions import ReceValError
from receval.measures.family import Family
from receval.measures.spec import parse_metrics
from receval.randomness import keyed
from receval.result import Result
from receval.split import _as_frame, _hash_values

STRATEGIES = ("uniform", "popularity")
#: the families with a one-relevant-item form ``M(R)`` the estimators can correct
CORRECTABLE = (Family.PRECISION, Family.RECALL, Family.HIT, Family.NDCG, Family.AP, Family.RR)
#: metadata key of the candidates table (``DataFrame.attrs``): how it was sampled
ATTRS_KEY = "receval.sampled"


def sample_candidates(train: Any, test: Any, n_negatives: int = 100, *,
                      strategy: str = "uniform", alpha: float = 1.0, seed: int = 0,
                      items: Iterable[Any] | None = None, user_col: str = "user",
                      item_col: str = "item") -> pd.DataFrame:
    """The candidates every model scores: per test user, the user's test items plus
    ``n_negatives`` items of the catalogue that are neither training nor test items of the
    user, drawn without replacement.

    ``strategy="uniform"`` draws each allowed item alike; ``"popularity"`` draws by successive
    sampling with weights ``count_in_train(i) ** alpha`` (items never trained on are never
    drawn). ``items``: the catalogue (default: every item of ``train`` and ``test``). Each
    user's draw comes from its own stream, seeded by ``(seed, user)``: the candidates do not
    depend on row order or on the other users. A user with fewer allowed items than
    ``n_negatives`` gets them all, counted in ``attrs["receval.sampled"]["users_short"]``.

    Returns a DataFrame ``user, item`` sorted by user and item (nothing says which rows are the
    test items), with ``attrs["receval.sampled"]`` saying how it was drawn.

    Example:
        >>> train = {"user": [1, 1], "item": ["a", "b"]}
        >>> test = {"user": [1], "item": ["c"]}
        >>> c = sample_candidates(train, test, 2, items=["a", "b", "c", "d", "e"])
        >>> c.item.tolist(), c.attrs["receval.sampled"]["strategy"]
        (['c', 'd', 'e'], 'uniform')
    """
    if strategy not in STRATEGIES:
        raise ReceValError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
    if isinstance(n_negatives, bool) or not isinstance(n_negatives, int | np.integer) \
            or n_negatives < 1:
        raise ReceValError(f"n_negatives must be a positive integer; got {n_negatives!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ReceValError(f"seed must be a non-negative integer; got {seed!r}")
    if not isinstance(alpha, int | float) or not math.isfinite(alpha) or alpha < 0:
        raise ReceValError(f"alpha must be a finite number >= 0; got {alpha!r}")
    tr = _as_frame(train, user_col, item_col)[[user_col, item_col]]
    te = _as_frame(test, user_col, item_col)[[user_col, item_col]]
    given = pd.Series(list(items)) if items is not None else None
    pool = pd.concat([tr[item_col], te[item_col]] + ([given] if given is not None else []),
                     ignore_index=True)
    try:
        catalogue = np.asarray(pd.unique(given if given is not None else pool))
        catalogue = np.sort(catalogue)
    except TypeError:
        raise ReceValError("item ids mix types (numbers and text): give them one type") \
            from None
    code = pd.Index(catalogue)
    if not code.is_unique:
        raise ReceValError("items holds an item twice; each catalogue item once")
    n_cat = len(catalogue)
    train_codes = code.get_indexer(tr[item_col])
    test_codes = code.get_indexer(te[item_col])
    weights = cdf = None
    if strategy == "popularity":
        counts = np.bincount(train_codes[train_codes >= 0], minlength=n_cat).astype(np.float64)
        weights = np.where(counts > 0, counts ** float(alpha), 0.0)
        cdf = np.cumsum(weights)
    excluded = pd.concat([pd.DataFrame({"user": tr[user_col].to_numpy(), "code": train_codes}),
                          pd.DataFrame({"user": te[user_col].to_numpy(), "code": test_codes})])
    excluded = excluded[excluded["code"] >= 0]
    by_user = dict(iter(excluded.groupby("user", sort=False)["code"]))
    try:
        users = np.sort(pd.unique(te[user_col].to_numpy()))
    except TypeError:
        raise ReceValError("user ids mix types (numbers and text): give them one type") \
            from None
    user_hash = _hash_values(users)
    out_users: list[np.ndarray] = []
    out_items: list[np.ndarray] = []
    short = 0
    for user, h in zip(users.tolist(), user_hash.tolist(), strict=True):
        taken = np.unique(by_user[user].to_numpy()) if user in by_user else np.empty(0, np.int64)
        rng = keyed(int(seed), int(h))
        drawn = _draw(rng, n_cat, taken, int(n_negatives), weights, cdf)
        short += len(drawn) < n_negatives
        out_users.append(np.repeat(np.asarray([user], dtype=object), len(drawn)))
        out_items.append(catalogue[drawn])
    negatives = pd.DataFrame({user_col: np.concatenate(out_users) if out_users else [],
                              item_col: np.concatenate(out_items) if out_items else []})
    negatives[user_col] = negatives[user_col].astype(te[user_col].dtype)
    negatives[item_col] = negatives[item_col].astype(te[item_col].dtype)
    both = pd.concat([te.drop_duplicates(), negatives], ignore_index=True)
    both = both.sort_values([user_col, item_col], kind="stable").reset_index(drop=True)
    both.attrs[ATTRS_KEY] = {"n_negatives": int(n_negatives), "strategy": strategy,
                             "alpha": float(alpha) if strategy == "popularity" else None,
                             "seed": int(seed), "n_items": n_cat, "users": len(users),
                             "users_short": int(short), "replacement": False,
                             "excluded": "the user's training and test items"}
    return both


def _draw(rng: np.random.Generator, n: int, taken: np.ndarray, m: int,
          weights: np.ndarray | None, cdf: np.ndarray | None = None) -> np.ndarray:
    """``m`` distinct codes in ``0..n-1`` not in ``taken`` (sorted), uniform or weighted
    (``cdf``: the cumulative ``weights``, computed once for every user)."""
    if weights is None:
        # a uniform ordered sample of size m + |taken| holds at least m allowed codes, and the
        # allowed ones among them, in order, are a uniform sample of the allowed codes
        size = min(n, m + len(taken))
        draw = rng.choice(n, size=size, replace=False)
        draw = draw[~np.isin(draw, taken, assume_unique=True)]
        return np.sort(draw[:m])
    assert cdf is not None
    total = float(cdf[-1])
    excluded_mass = float(weights[taken].sum())
    positive = int(np.count_nonzero(weights)) - int(np.count_nonzero(weights[taken]))
    target = min(m, positive)
    if target == 0:
        return np.empty(0, dtype=np.int64)
    if excluded_mass > 0.5 * total:  # rejection would mostly reject: renormalise instead
        w = weights.copy()
        w[taken] = 0.0
        return np.sort(rng.choice(n, size=target, replace=False, p=w / w.sum()))
    # successive sampling: independent weighted draws, excluded and repeated items rejected,
    # first occurrences kept (the distribution of sampling without replacement by weight)
    seen = set(taken.tolist())
    chosen: list[int] = []
    while len(chosen) < target:
        draws = np.searchsorted(cdf, rng.random(2 * (target - len(chosen)) + 8) * total,
                                side="right")
        for d in draws.tolist():
            if d not in seen:
                seen.add(d)
                chosen.append(d)
                if len(chosen) == target:
                    break
    return np.sort(np.asarray(chosen, dtype=np.int64))



# --- evaluation ------------------------------------------------------------------------------


@keeps_warnings  # the run's warnings kept on its Result (every output)
def evaluate_sampled(test: Any, scored_candidates: Any, metrics: str | Iterable[str], *,
                     n_items: int, full_predictions: Any = None, gamma: float = 0.01,
                     sampling: Mapping[str, Any] | None = None, **options: Any) -> Result:
    """Metrics on the scored candidates: naive, corrected (CLS, BV) and, with
    ``full_predictions``, exact (see the module docstring for the definitions and the names).

    ``test``: the test rows (``user``, ``item``, optional ``rating``: with a numeric
    ``relevance_threshold`` only rows rated at least that are relevant); ``scored_candidates``:
    the candidates table with a ``score`` column; ``n_items``: the catalogue size ``n`` of the
    correction; ``sampling``: how the candidates were drawn, for ``options["sampled"]`` (taken
    from the table's ``attrs`` when :func:`sample_candidates` made it). ``options`` go to
    :func:`receval.evaluate` for the naive values.

    Example:
        >>> test = {"user": [1, 2], "item": [1, 2]}
        >>> cands = {"user": [1, 1, 1, 2, 2, 2], "item": [1, 5, 6, 2, 7, 8],
        ...          "score": [0.9, 0.5, 0.1, 0.1, 0.8, 0.7]}
        >>> r = evaluate_sampled(test, cands, ["hit@1"], n_items=10)
        >>> r.summary["hit@1 [sampled]"], round(r.summary["hit@1 [BV]"], 3)
        (0.5, 0.302)
    """
    from receval.evaluation import evaluate

    specs = parse_metrics(metrics)
    if isinstance(n_items, bool) or not isinstance(n_items, int | np.integer) or n_items < 2:
        raise ReceValError(f"n_items must be an integer >= 2 (the catalogue size); "
                           f"got {n_items!r}")
    if not isinstance(gamma, int | float) or not 0 <= gamma <= 1:
        raise ReceValError(f"gamma must be in [0, 1]; got {gamma!r}")
    naive = evaluate(test, scored_candidates, [s.name for s in specs], **options)
    relevant = _relevant(test, options.get("relevance_threshold"))
    cands = _scored(scored_candidates, "scored_candidates")
    ranks, negatives = _sampled_ranks(relevant, cands)
    if len(negatives) and int(negatives.max()) >= n_items:
        raise ReceValError(f"a user has {int(negatives.max())} negatives but n_items is "
                           f"{n_items}; n_items must be the catalogue size")
    full = None
    if full_predictions is not None:
        full = _full_ranks(relevant, _scored(full_predictions, "full_predictions"))
    per_user = naive.per_user.rename(columns={s.name: f"{s.name} [sampled]" for s in specs})
    summary: dict[str, float] = {}
    gaps: dict[str, dict[str, float]] = {}
    users = relevant["user"].to_numpy()
    for spec in specs:
        summary[f"{spec.name} [sampled]"] = naive.summary[spec.name]
        if spec.family not in CORRECTABLE:
            continue
        k = spec.k if spec.k is not None else n_items
        columns: dict[str, np.ndarray] = {}
        for name in ("CLS", "BV"):
            values = np.zeros(len(ranks))
            for m in np.unique(negatives):
                table = correction(spec.family, k, int(n_items), int(m), name, float(gamma))
                rows = negatives == m
                values[rows] = table[ranks[rows] - 1]
            columns[name] = values
        if full is not None:
            columns["exact"] = _target(spec.family, k, full)
        for name, values in columns.items():
            user_means = pd.Series(values).groupby(users, sort=True).mean()
            column = f"{spec.name} [{name}]"
            per_user = per_user.merge(pd.DataFrame({"user": user_means.index,
                                                    column: user_means.to_numpy()}),
                                      on="user", how="left")
            summary[column] = float(user_means.mean()) if len(user_means) else math.nan
        if full is not None:
            exact = summary[f"{spec.name} [exact]"]
            gaps[spec.name] = {name: summary[f"{spec.name} [{name}]"] - exact
                               for name in ("sampled", "CLS", "BV")}
    info = dict(getattr(scored_candidates, "attrs", {}).get(ATTRS_KEY, {}))
    info.update(sampling or {})
    info.update(n_items=int(n_items), gamma=float(gamma),
                corrections="Krichene & Rendle (KDD 2020): CLS, BV; ties count against the "
                            "relevant item")
    counts = naive.counts.copy()
    counts["sampled"] = {
        "relevant_pairs": len(ranks), "users": len(np.unique(users)),
        "negatives_per_user": {"min": int(negatives.min()) if len(negatives) else 0,
                               "max": int(negatives.max()) if len(negatives) else 0},
        "relevant_not_scored": int(np.count_nonzero(ranks < 0)) if len(ranks) else 0,
        "gap": gaps,
    }
    return Result(summary=summary, per_user=per_user, counts=counts,
                  options={**naive.options, "sampled": info}, metrics=list(summary))


def _scored(source: Any, what: str) -> pd.DataFrame:
    frame = _as_frame(source, "user", "item")
    if "score" not in frame.columns:
        raise ReceValError(f"{what} has no column 'score'; its columns are "
                           f"{', '.join(map(repr, map(str, frame.columns)))}")
    scores = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(scores)
    if bad.any():
        first = int(np.argmax(bad))
        raise ReceValError(f"{what} column 'score' holds {frame['score'].iloc[first]!r} at row "
                           f"{first}, not a number ({int(bad.sum())} rows in all)")
    return pd.DataFrame({"user": frame["user"].to_numpy(), "item": frame["item"].to_numpy(),
                         "score": scores})


def _relevant(test: Any, threshold: Any) -> pd.DataFrame:
    """The relevant (user, item) pairs of the test, sorted; all rows unless a numeric
    relevance threshold and a rating column say otherwise."""
    frame = _as_frame(test, "user", "item")
    keep = np.ones(len(frame), dtype=bool)
    if isinstance(threshold, int | float) and not isinstance(threshold, bool) \
            and "rating" in frame.columns:
        keep = pd.to_numeric(frame["rating"], errors="coerce").to_numpy() >= threshold
    elif isinstance(threshold, str):
        raise ReceValError(f"relevance_threshold={threshold!r} is per user; the corrected "
                           "estimators take a number")
    out = frame.loc[keep, ["user", "item"]].drop_duplicates()
    return out.sort_values(["user", "item"], kind="stable").reset_index(drop=True)


def _sampled_ranks(relevant: pd.DataFrame,
                   cands: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per relevant pair: its rank among itself and the user's negatives (the candidates that
    are not relevant items of the user; a tie counts against it; unscored: last), and the
    user's number of negatives."""
    merged = cands.merge(relevant.assign(relevant=True), on=["user", "item"], how="left")
    is_rel = merged["relevant"].notna().to_numpy()
    negs = merged.loc[~is_rel, ["user", "score"]]
    neg_scores = {u: np.sort(g.to_numpy()) for u, g in negs.groupby("user")["score"]}
    rel_scores = dict(zip(zip(merged.loc[is_rel, "user"], merged.loc[is_rel, "item"],
                              strict=True), merged.loc[is_rel, "score"], strict=True))
    ranks = np.empty(len(relevant), dtype=np.int64)
    m = np.empty(len(relevant), dtype=np.int64)
    for row, (user, item) in enumerate(zip(relevant["user"], relevant["item"], strict=True)):
        scores = neg_scores.get(user, np.empty(0))
        m[row] = len(scores)
        score = rel_scores.get((user, item))
        above = len(scores) if score is None else len(scores) - np.searchsorted(
            scores, score, side="left")
        ranks[row] = 1 + above
    return ranks, m


def _full_ranks(relevant: pd.DataFrame, full: pd.DataFrame) -> np.ndarray:
    """Per relevant pair: 1 + the items of the user's full list that are not relevant for the
    user and score at least as high (inf when the list lacks the item)."""
    ranks, _ = _sampled_ranks(relevant, full)
    merged = full.merge(relevant.assign(relevant=True), on=["user", "item"], how="inner")
    scored = set(zip(merged["user"], merged["item"], strict=True))
    out = ranks.astype(np.float64)
    for row, pair in enumerate(zip(relevant["user"], relevant["item"], strict=True)):
        if pair not in scored:
            out[row] = np.inf
    return out


def _target(family: Family, k: int, ranks: np.ndarray) -> np.ndarray:
    """``M(R)`` of each full rank ``R`` in the one-relevant-item form."""
    r = np.asarray(ranks, dtype=np.float64)
    inside = r <= k
    with np.errstate(divide="ignore"):
        if family is Family.PRECISION:
            values = np.full(len(r), 1.0 / k)
        elif family in (Family.RECALL, Family.HIT):
            values = np.ones(len(r))
        elif family in (Family.AP, Family.RR):
            values = 1.0 / r
        else:
            values = 1.0 / np.log2(r + 1.0)
    return np.where(inside, values, 0.0)


@lru_cache(maxsize=8)
def pmf_matrix(n_items: int, m: int) -> np.ndarray:
    """``P(r | R)``: rows ``R = 1..n``, columns ``r = 1..m+1``; hypergeometric (the ``R - 1``
    items above among ``n - 1``, ``m`` drawn): ``C(R-1, r-1) C(n-R, m-r+1) / C(n-1, m)``, by
    log-gamma (``scipy.stats.hypergeom.pmf`` takes a minute for 10^4 x 100); read-only.

    Example:
        >>> pmf_matrix(3, 1).round(3).tolist()
        [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]
    """
    from scipy.special import gammaln

    above = np.arange(n_items, dtype=np.float64)[:, None]  # R - 1
    drawn = np.arange(m + 1, dtype=np.float64)[None, :]  # r - 1
    below, rest = n_items - 1 - above, m - drawn  # n - R, m - r + 1
    ok = (drawn <= above) & (rest <= below)

    def log_comb(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return gammaln(a + 1) - gammaln(b + 1) - gammaln(np.maximum(a - b, 0) + 1)

    with np.errstate(invalid="ignore"):
        log_p = (log_comb(above, drawn) + log_comb(below, rest)
                 - log_comb(np.array(n_items - 1.0), np.array(float(m))))
    out = np.where(ok, np.exp(np.where(ok, log_p, 0.0)), 0.0)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=64)
def correction(family: Family, k: int, n_items: int, m: int, estimator: str,
               gamma: float = 0.01) -> np.ndarray:
    """The corrected value ``x[r - 1]`` of each sampled rank ``r = 1..m+1`` (read-only).

    Example:
        >>> from receval.measures.family import Family
        >>> correction(Family.HIT, 1, 3, 1, "CLS").round(3).tolist()
        [0.8, 0.0]
    """
    from scipy.optimize import lsq_linear

    pmf = pmf_matrix(n_items, m)
    b = _target(family, k, np.arange(1, n_items + 1))
    weight = math.sqrt(1.0 / n_items)
    a_w, b_w = pmf * weight, b * weight
    if estimator == "CLS":
        # ||A x - b||^2 = ||R x - Q'b||^2 + a constant (A = QR): the same bounded problem in
        # m + 1 rows instead of n
        q, r = np.linalg.qr(a_w, mode="reduced")
        x = lsq_linear(r, q.T @ b_w, bounds=(0.0, 1.0), method="bvls").x
    elif estimator == "BV":
        c = pmf.T @ np.full(n_items, 1.0 / n_items)
        x = np.linalg.solve((1.0 - gamma) * a_w.T @ a_w + gamma * np.diag(c), a_w.T @ b_w)
    else:
        raise ReceValError(f"estimator must be 'CLS' or 'BV'; got {estimator!r}")
    x = np.clip(x, 0.0, 1.0)
    x[k:] = 0.0
    x.setflags(write=False)
    return x


__all__ = ["CORRECTABLE", "STRATEGIES", "correction", "evaluate_sampled",
           "pmf_matrix", "sample_candidates"]
