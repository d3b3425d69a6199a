"""Target (and logging) policies, evaluated only where the estimators need them: on the logged
rows, and, for the direct method, on the items the policy puts mass on.

A policy is a probability table (``request``, ``item``, ``position``, ``probability``; absent
rows are 0) or a score table (``request``, ``item``, ``score``) with the rule that turns the
scores of a request's candidates into a distribution over the request's L logged positions:

- ``topk``: the L best-scored candidates in order (ties: the smaller item first), with
  probability 1;
- ``epsilon_greedy`` (``epsilon``): the top-L ranking with probability 1 - epsilon, else a
  uniformly random ranking of the candidates, so P(a at k) = (1 - eps) [rank a = k] + eps / n;
- ``softmax`` (``temperature``): every position draws independently from
  softmax(score / temperature) (the one-slot bandit policy; with L = 1 it is OBP's);
- ``plackett_luce`` (``temperature``): positions drawn in turn without replacement from the
  softmax of the candidates left; its prefix and slate probabilities are exact, its position
  marginals beyond the top have no closed form (give them as a probability table).

Never a dense requests x items array: a score table holds only each request's candidates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.offpolicy.logs import Log, _first_bad, _number, request_codes

RULES = ("topk", "epsilon_greedy", "softmax", "plackett_luce")


@dataclass(frozen=True)
class Policy:
    """A policy given as scores and a rule (see the module), for ``targets`` or ``logger=``.

    Example:
        >>> import pandas as pd
        >>> p = Policy(pd.DataFrame({"request": [1], "item": ["x"], "score": [0.3]}),
        ...            "softmax", temperature=0.5)
        >>> p.rule, p.temperature
        ('softmax', 0.5)
    """

    scores: pd.DataFrame
    rule: str = "topk"
    epsilon: float | None = None
    temperature: float | None = None

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ReceValError(f"unknown rule {self.rule!r}; known: {', '.join(RULES)}")
        if self.rule == "epsilon_greedy" and (self.epsilon is None
                                              or not 0 <= self.epsilon <= 1):
            raise ReceValError(f"rule 'epsilon_greedy' needs epsilon= in [0, 1]; got "
                               f"{self.epsilon!r}")
        if self.rule in ("softmax", "plackett_luce") and (self.temperature is None
                                                          or not self.temperature > 0):
            raise ReceValError(f"rule {self.rule!r} needs temperature= > 0; got "
                               f"{self.temperature!r}")


class ItemCodes:
    """Item codes shared by the log, the policies and the reward model: the log's items first
    (codes below :attr:`n_logged`), items seen only elsewhere appended as they come."""

    def __init__(self, logged: pd.Index) -> None:
        self.index = logged
        self.n_logged = len(logged)

    def sort_rank(self) -> np.ndarray:
        """Each code's rank among the items in sorted order (code order when they do not
        sort): ties between scores go to the smaller item."""
        try:
            order = np.argsort(self.index.to_numpy(), kind="stable")
        except TypeError:
            order = np.arange(len(self.index))
        rank = np.empty(len(self.index), dtype=np.int64)
        rank[order] = np.arange(len(self.index))
        return rank

    def codes(self, values: pd.Series) -> np.ndarray:
        codes = self.index.get_indexer(values)
        new = codes < 0
        if new.any():
            extra = pd.Index(pd.unique(values[new])).difference(self.index, sort=False)
            self.index = self.index.append(extra)
            codes = self.index.get_indexer(values)
        return codes.astype(np.int64)


def _join(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """For each key of ``left``, the row of ``right`` holding it (unique keys), else -1."""
    order = np.argsort(right, kind="stable")
    srt = right[order]
    at = np.searchsorted(srt, left)
    at = np.minimum(at, max(srt.size - 1, 0))
    found = (srt.size > 0) & (srt[at] == left) if srt.size else np.zeros(left.size, bool)
    return np.where(found, order[at] if srt.size else -1, -1)


@numba.njit(cache=True, nogil=True)
def _segment_cumprod(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for r in range(starts.size - 1):
        acc = 1.0
        for i in range(starts[r], starts[r + 1]):
            acc *= x[i]
            out[i] = acc
    return out


@numba.njit(cache=True, nogil=True)
def _segment_cumsum_before(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per segment, the sum of the values before each row (0 at the segment's first row)."""
    out = np.empty_like(x)
    for r in range(starts.size - 1):
        acc = 0.0
        for i in range(starts[r], starts[r + 1]):
            out[i] = acc
            acc += x[i]
    return out


@numba.njit(cache=True, nogil=True)
def _rank_groups(starts: np.ndarray, score: np.ndarray, tie: np.ndarray, item: np.ndarray
                 ) -> tuple[np.ndarray, int]:
    """Within each group [starts[g], starts[g+1]): the rows ordered by score descending, ties
    by ``tie`` ascending (a permutation of all rows), and the first row repeating an item of
    its group (-1 when none)."""
    perm = np.empty(score.size, dtype=np.int64)
    dup = -1
    for g in range(starts.size - 1):
        s, e = starts[g], starts[g + 1]
        if e == s:
            continue
        if e - s <= 32:  # small groups: an insertion sort, no allocation
            for a in range(s, e):
                v = a
                b = a - 1
                while b >= s and (score[perm[b]] < score[v] or (
                        score[perm[b]] == score[v] and tie[perm[b]] > tie[v])):
                    perm[b + 1] = perm[b]
                    b -= 1
                perm[b + 1] = v
            if dup < 0:
                for a in range(s, e):
                    for b in range(s, a):
                        if item[a] == item[b]:
                            dup = a
                            break
                    if dup >= 0:
                        break
            continue
        idx = np.argsort(-score[s:e], kind="mergesort")
        # equal scores: insertion sort of each run by the tie key
        j = 0
        while j < idx.size:
            k = j + 1
            while k < idx.size and score[s + idx[k]] == score[s + idx[j]]:
                k += 1
            for a in range(j + 1, k):
                v = idx[a]
                b = a - 1
                while b >= j and tie[s + idx[b]] > tie[s + v]:
                    idx[b + 1] = idx[b]
                    b -= 1
                idx[b + 1] = v
            j = k
        for a in range(idx.size):
            perm[s + a] = s + idx[a]
        if dup < 0:
            items = np.sort(item[s:e])
            for a in range(1, items.size):
                if items[a] == items[a - 1]:
                    dup = s + a
                    break
    return perm, dup


@numba.njit(cache=True, nogil=True)
def _find_in_groups(log_starts: np.ndarray, log_item: np.ndarray, starts: np.ndarray,
                    item: np.ndarray) -> np.ndarray:
    """For each logged row, the row of its request's group holding its item, else -1 (both
    grouped by request; a linear scan of small groups, a binary search of large ones)."""
    out = np.full(log_item.size, -1, dtype=np.int64)
    for g in range(log_starts.size - 1):
        s, e = starts[g], starts[g + 1]
        if e == s:
            continue
        if e - s <= 64:
            for r in range(log_starts[g], log_starts[g + 1]):
                for j in range(s, e):
                    if item[j] == log_item[r]:
                        out[r] = j
                        break
        else:
            order = np.argsort(item[s:e])
            srt = item[s:e][order]
            for r in range(log_starts[g], log_starts[g + 1]):
                at = np.searchsorted(srt, log_item[r])
                if at < srt.size and srt[at] == log_item[r]:
                    out[r] = s + order[at]
    return out


@numba.njit(cache=True, nogil=True)
def _softmax_groups(starts: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """exp(z - the group's max), its sum per group, and the softmax per row."""
    e = np.empty_like(z)
    p = np.empty_like(z)
    total = np.zeros(starts.size - 1)
    for g in range(starts.size - 1):
        s, t = starts[g], starts[g + 1]
        if t == s:
            continue
        top = z[s]
        for j in range(s, t):
            top = max(top, z[j])
        acc = 0.0
        for j in range(s, t):
            e[j] = np.exp(z[j] - top)
            acc += e[j]
        total[g] = acc
        for j in range(s, t):
            p[j] = e[j] / acc
    return e, total, p


@numba.njit(cache=True, nogil=True)
def _next_expectation(log_starts: np.ndarray, log_at: np.ndarray, cstart: np.ndarray,
                      e: np.ndarray, total: np.ndarray, p1: np.ndarray, rank: np.ndarray,
                      q: np.ndarray, rule: int) -> np.ndarray:
    """Per logged row (request i, position k): sum over the request's candidates a of
    pi(a at k | the logged items at 1..k-1) q[a, k]; ``q`` holds, per logged row, one value
    per candidate of its request (in candidate order). rule 0: topk (the k-th ranked), 1:
    softmax (independent positions), 2: Plackett-Luce (the logged prefix taken out)."""
    out = np.zeros(log_at.size)
    at_q = 0
    for i in range(log_starts.size - 1):
        s, t = cstart[i], cstart[i + 1]
        taken = 0.0
        for r in range(log_starts[i], log_starts[i + 1]):
            k = r - log_starts[i] + 1
            acc = 0.0
            for a in range(s, t):
                if rule == 0:
                    prob = 1.0 if rank[a] == k else 0.0
                elif rule == 1:
                    prob = p1[a]
                else:
                    prob = 0.0
                    left = total[i] - taken
                    if left > 0:
                        prob = e[a] / left
                        for j in range(log_starts[i], r):  # already placed: no mass
                            if log_at[j] == a:
                                prob = 0.0
                                break
                acc += prob * q[at_q + a - s]
            out[r] = acc
            at_q += t - s
            if log_at[r] >= 0:
                taken += e[log_at[r]]
    return out


@dataclass
class Resolved:
    """A policy on the log: ``p`` = P(logged item at logged position) per logged row; prefix /
    slate probabilities of the logged list (None with the reason when unavailable);
    ``marginal_error``: why ``p`` is unavailable (Plackett-Luce below the top), else None."""

    name: str
    p: np.ndarray | None
    prefix: np.ndarray | None
    slate: np.ndarray | None
    missing: str = ""
    marginal_error: str | None = None
    support_missing: int = 0
    dropped: int = 0
    #: per request, whether the policy puts mass on an item the log never shows
    support_requests: np.ndarray | None = None
    _mass: Any = field(default=None, repr=False)
    _next: Any = field(default=None, repr=False)

    def next_expectation(self, predict: Any, estimator: str) -> np.ndarray:
        """Per logged row at position k: sum_a pi(a at k | the logged items above) q(a, k),
        ``predict(request, item, position)`` giving q (cascade_dr)."""
        if self._next is None:
            raise ReceValError(f"estimator {estimator!r} needs target {self.name!r} as scores "
                               "with rule 'plackett_luce', 'softmax' or 'topk' (its choice at "
                               "each position given the items above) on a log whose requests "
                               "hold positions 1..L")
        return np.asarray(self._next(predict))

    def need(self, what: str, estimator: str) -> np.ndarray:
        value = {"p": self.p, "prefix": self.prefix, "slate": self.slate}[what]
        if value is None:
            reason = self.marginal_error if what == "p" else self.missing
            raise ReceValError(f"estimator {estimator!r} needs the {what} probabilities of "
                               f"target {self.name!r}: {reason}")
        return value

    def mass(self, by_position: bool, theta: np.ndarray | None = None
             ) -> dict[str, np.ndarray]:
        """The policy's mass as columns (no DataFrame: millions of rows): request, item,
        position, probability when ``by_position``, else per (request, item) the sum over the
        request's positions of theta_k P(item at k) (theta = 1 when None)."""
        out = self._mass(by_position, theta)
        if isinstance(out, pd.DataFrame):
            return {c: out[c].to_numpy() for c in out.columns}
        return dict(out)


def _per_pair(req: np.ndarray, item: np.ndarray, prob: np.ndarray) -> pd.DataFrame:
    """The sum of ``prob`` per (request, item), sorted by both: each pair's values added in
    row order, whatever the other pairs' rows (pandas' grouped sum is not: its compensated
    sum of a group changes with how the groups' rows interleave), so a request's mass is the
    same in the whole log and in any part of it holding the request.

    Example:
        >>> _per_pair(np.array([1, 0, 1]), np.array([2, 5, 2]), np.array([0.5, 1.0, 0.25]))
           request  item  probability
        0        0     5         1.00
        1        1     2         0.75
    """
    width = np.int64(int(item.max()) + 1 if item.size else 1)
    keys, at = np.unique(req.astype(np.int64) * width + item, return_inverse=True)
    total = np.bincount(at.ravel(), weights=prob, minlength=keys.size)
    return pd.DataFrame({"request": keys // width, "item": keys % width, "probability": total})


def _theta(theta: np.ndarray | None, length: np.ndarray) -> np.ndarray:
    """theta_1..theta_Lmax (ones when None)."""
    top = int(length.max())
    if theta is None:
        return np.concatenate([[0.0], np.ones(top)])
    t = np.asarray(theta, dtype=np.float64)
    if t.size < top:
        raise ReceValError(f"examination= has {t.size} value(s) but the log has position {top}")
    return np.concatenate([[0.0], t[:top]])


def resolve(name: str, spec: Any, log: Log, items: ItemCodes, *, options: dict[str, Any]
            ) -> Resolved:
    """A target given as a probability table, a score table (with ``rule=`` from the options),
    or a :class:`Policy`, evaluated on the log.

    Example:
        >>> import pandas as pd
        >>> from receval.offpolicy.logs import read_log
        >>> log = read_log(pd.DataFrame({"request": [1, 1], "item": ["a", "b"],
        ...     "position": [1, 2], "reward": [1, 0], "propensity": [0.5, 0.5]}))
        >>> scores = pd.DataFrame({"request": [1, 1], "item": ["a", "b"], "score": [1., 2.]})
        >>> resolve("t", Policy(scores, "topk"), log, ItemCodes(log.items), options={}).p
        array([0., 0.])
    """
    if isinstance(spec, Policy):
        return _from_scores(name, spec, log, items)
    if isinstance(spec, dict) and "scores" in spec:
        return _from_scores(name, Policy(**spec), log, items)
    if not isinstance(spec, pd.DataFrame):
        raise ReceValError(f"target {name!r} must be a table (pandas DataFrame) or a Policy; "
                           f"got {type(spec).__name__}")
    if "probability" in spec.columns:
        return _from_table(name, spec, log, items)
    if "score" in spec.columns:
        rule = options.get("rule", "topk")
        return _from_scores(name, Policy(spec, rule, options.get("epsilon"),
                                         options.get("temperature")), log, items)
    raise ReceValError(f"target {name!r} has neither 'probability' nor 'score'; columns: "
                       f"{', '.join(map(str, spec.columns))}")


def _encode(name: str, frame: pd.DataFrame, log: Log, items: ItemCodes, columns: tuple[str, ...]
            ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, int]:
    missing = [c for c in columns if c not in frame.columns and c != "request"]
    if missing:
        raise ReceValError(f"{name} has no column {missing[0]!r}; columns: "
                           f"{', '.join(map(str, frame.columns))}")
    frame = frame.reset_index(drop=True)
    req = request_codes(frame, log, name)
    keep = req >= 0
    if len(frame) and not keep.any():
        column = "request" if "request" in frame.columns else "user"
        theirs = ", ".join(map(repr, log.requests[:3].tolist()))
        raise ReceValError(f"{name}: none of its {len(frame)} row(s) names a request of the log "
                           f"(first: {column} {frame[column].iloc[0]!r}; the log's: {theirs}"
                           f"{', ...' if log.n_requests > 3 else ''}); ids match exactly, a "
                           "text id never equals a number")
    dropped = int((~keep).sum())
    frame = frame[keep].reset_index(drop=True)
    return frame, req[keep].astype(np.int64), items.codes(frame["item"]), dropped


def _from_table(name: str, table: pd.DataFrame, log: Log, items: ItemCodes) -> Resolved:
    what = f"target {name!r}"
    frame, req, item, dropped = _encode(what, table, log, items,
                                        ("request", "item", "position", "probability"))
    pos = _number(frame, "position", what)
    if ((pos < 1) | (pos != np.floor(pos))).any():
        raise _first_bad(frame, (pos < 1) | (pos != np.floor(pos)),
                         "with a 'position' that is not an integer >= 1", what)
    pos = pos.astype(np.int64)
    prob = _number(frame, "probability", what)
    bad = (prob < 0) | (prob > 1)
    if bad.any():
        raise _first_bad(frame, bad, "with a 'probability' outside [0, 1]", what)
    n_items = np.int64(len(items.index) + 1)
    top = np.int64(max(int(log.position.max()), int(pos.max()) if pos.size else 1) + 1)
    slot = req * top + pos  # a position shows one item: its probabilities add up to <= 1
    slots, inverse = np.unique(slot, return_inverse=True)
    total = np.bincount(inverse, weights=prob, minlength=slots.size)
    over = total > 1 + 1e-9
    if over.any():
        bad = over[inverse]
        first = int(np.flatnonzero(bad)[0])
        raise _first_bad(frame, bad, f"at a position whose probabilities add up to more "
                         f"than 1 ({float(total[inverse[first]]):g} at position "
                         f"{int(pos[first])}; {int(over.sum())} such position(s) in all)", what)
    key = (req * n_items + item) * top + pos
    srt = np.sort(key)
    if (srt[1:] == srt[:-1]).any():
        dup = pd.Series(key).duplicated().to_numpy()
        raise _first_bad(frame, dup, "repeating a (request, item, position)", what)
    log_key = (log.request * n_items + log.item) * top + log.position
    at = _join(log_key, key)
    hit = at >= 0

    def on_log(column: str) -> np.ndarray | None:
        if column not in frame.columns:
            return None
        # read on the rows the log holds; elsewhere (other items) the column may be empty
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
        used = np.zeros(len(frame), dtype=bool)
        used[at[hit]] = True
        bad = used & ~((values >= 0) & (values <= 1))
        if bad.any():
            raise _first_bad(frame, bad, f"on a logged row with a {column!r} that is not a "
                             "probability in [0, 1]", what)
        return np.where(hit, values[np.maximum(at, 0)], 0.0)

    p = np.where(hit, prob[np.maximum(at, 0)], 0.0)
    positive = prob > 0
    unlogged = positive & (item >= items.n_logged)
    support_requests = np.bincount(req[unlogged], minlength=log.n_requests) > 0
    support = int(np.count_nonzero(support_requests))
    prefix, slate = on_log("probability_prefix"), on_log("probability_slate")
    if slate is not None:  # one value per list: the one on its last logged row
        slate = slate[np.repeat(log.starts[1:] - 1, log.length)]

    def mass(by_position: bool, theta: np.ndarray | None) -> pd.DataFrame:
        within = positive & (pos <= log.length[req])
        out = pd.DataFrame({"request": req[within], "item": item[within],
                            "position": pos[within], "probability": prob[within]})
        if by_position:
            return out
        t = _theta(theta, log.length)
        return _per_pair(out["request"].to_numpy(), out["item"].to_numpy(),
                         out["probability"].to_numpy() * t[out["position"].to_numpy()])

    return Resolved(name, p, prefix, slate,
                    missing="give 'probability_prefix' / 'probability_slate' columns on the "
                            "logged rows, or the target as scores with a rule",
                    support_missing=support, dropped=dropped,
                    support_requests=support_requests, _mass=mass)


def _from_scores(name: str, policy: Policy, log: Log, items: ItemCodes) -> Resolved:
    what = f"target {name!r}"
    frame, req, item, dropped = _encode(what, policy.scores, log, items,
                                        ("request", "item", "score"))
    score = _number(frame, "score", what)
    # rank within request: score descending, ties by the item (in sorted order)
    n_req = log.n_requests
    if req.size > 1 and (req[1:] < req[:-1]).any():
        by_request = np.argsort(req, kind="stable")
        req, item, score = req[by_request], item[by_request], score[by_request]
    n_cand = np.bincount(req, minlength=n_req).astype(np.int64)
    cstart = np.concatenate([[0], np.cumsum(n_cand)]).astype(np.int64)
    order, dup_at = _rank_groups(cstart, score, items.sort_rank()[item], item)
    if dup_at >= 0:  # the error path: pandas names the row
        bad = frame.duplicated(["request", "item"]).to_numpy()
        raise _first_bad(frame, bad, "repeating a (request, item)", what)
    req, item, score = req[order], item[order], score[order]
    rank: np.ndarray = np.arange(req.size) - cstart[req] + 1
    rule = policy.rule
    temp = policy.temperature or 1.0
    # softmax probabilities within request (max subtracted: no overflow)
    if rule in ("softmax", "plackett_luce") and req.size:
        with np.errstate(over="ignore"):
            z = score / temp
        if not np.isfinite(z).all():
            bad = ~np.isfinite(z)
            raise _first_bad(frame.iloc[order].reset_index(drop=True), bad,
                             f"whose score / temperature ({temp!r}) overflows; use a larger "
                             "temperature or smaller scores", what)
        e, total, p1 = _softmax_groups(cstart, z)
    else:
        e = p1 = np.zeros(req.size)
        total = np.zeros(n_req)
    eps = policy.epsilon or 0.0
    at = _find_in_groups(log.starts, log.item, cstart, item)
    hit = at >= 0
    a = np.maximum(at, 0)
    lrank = np.where(hit, rank[a], 0)
    ncand_row = n_cand[log.request]
    marginal_error = None
    if rule == "topk":
        p = (lrank == log.position).astype(np.float64)
    elif rule == "epsilon_greedy":
        p = np.where(hit, (1 - eps) * (lrank == log.position) + eps / np.maximum(ncand_row, 1),
                     0.0)
        p = np.where(log.position <= ncand_row, p, 0.0)
    elif rule == "softmax":
        p = np.where(hit, p1[a], 0.0)
    else:  # plackett_luce: exact at the top only
        p = np.where(hit, p1[a], 0.0)
        if (log.position > 1).any():
            marginal_error = ("Plackett-Luce position marginals below the top have no closed "
                              "form; use rips / sips, or give the marginals as a probability "
                              "table")
            p = None
    prefix = slate = None
    missing = ""
    if log.contiguous():
        if rule == "topk":
            prefix = _segment_cumprod((lrank == log.position).astype(np.float64), log.starts)
        elif rule == "epsilon_greedy":
            match = _segment_cumprod((lrank == log.position).astype(np.float64), log.starts)
            found = _segment_cumprod(hit.astype(np.float64), log.starts)
            step = np.where(log.position <= ncand_row,
                            1.0 / np.maximum(ncand_row - log.position + 1, 1), 0.0)
            uniform = _segment_cumprod(step, log.starts) * found
            prefix = (1 - eps) * match + eps * uniform
        elif rule == "softmax":
            prefix = _segment_cumprod(np.where(hit, p1[a], 0.0), log.starts)
        else:
            el = np.where(hit, e[a], 0.0)
            before = _segment_cumsum_before(el, log.starts)
            denom = total[log.request] - before
            step = np.where(hit & (denom > 0), el / np.where(denom > 0, denom, 1.0), 0.0)
            prefix = _segment_cumprod(step, log.starts)
        slate = prefix[np.repeat(log.starts[1:] - 1, log.length)]
    else:
        missing = "the log's requests do not all hold positions 1..L without a gap"
    length = log.length[req]
    within = rank <= length
    mass_on = within if rule == "topk" else np.ones(req.size, dtype=bool)
    unlogged = mass_on & (item >= items.n_logged)
    support_requests = np.bincount(req[unlogged], minlength=log.n_requests) > 0
    support = int(np.count_nonzero(support_requests))

    def mass(by_position: bool, theta: np.ndarray | None) -> dict[str, np.ndarray]:
        t = _theta(theta, log.length)
        if rule == "plackett_luce" and int(log.length.max()) > 1:
            raise ReceValError(f"{what}: the direct method and pbm need Plackett-Luce position "
                               "marginals below the top, which have no closed form; give the "
                               "target as a probability table")
        if rule == "topk":
            out = {"request": req[within], "item": item[within], "position": rank[within],
                   "probability": np.ones(int(within.sum()))}
            if not by_position:
                out["probability"] = t[out.pop("position")]
            return out
        if not by_position:
            cum = np.cumsum(t)  # cum[L] = theta_1 + ... + theta_L
            reach = np.minimum(length, n_cand[req])
            if rule == "epsilon_greedy":
                prob = ((1 - eps) * np.where(within, t[np.minimum(rank, t.size - 1)], 0.0)
                        + eps * cum[reach] / n_cand[req])
            else:  # softmax, or plackett_luce with one position
                prob = p1 * cum[length]
            return {"request": req, "item": item, "probability": prob}
        # by position: every candidate at every position 1..L of its request
        reps = length
        rows = np.repeat(np.arange(req.size), reps)
        k = np.arange(rows.size) - np.repeat(np.cumsum(reps) - reps, reps) + 1
        if rule == "epsilon_greedy":
            prob = (1 - eps) * (rank[rows] == k) + np.where(k <= n_cand[req[rows]],
                                                            eps / n_cand[req[rows]], 0.0)
        else:
            prob = p1[rows]
        return {"request": req[rows], "item": item[rows], "position": k, "probability": prob}

    next_fn = None
    if rule in ("topk", "softmax", "plackett_luce") and log.contiguous():
        code = {"topk": 0, "softmax": 1, "plackett_luce": 2}[rule]

        def next_fn(predict: Any) -> np.ndarray:
            # every candidate of the request at every logged position of it
            per_row = n_cand[log.request]
            rows = np.repeat(np.arange(log.n_rows), per_row)
            first = np.repeat(cstart[log.request], per_row)
            cand = first + np.arange(rows.size) - np.repeat(np.cumsum(per_row) - per_row,
                                                           per_row)
            q = predict(log.request[rows], item[cand], log.position[rows])
            return _next_expectation(log.starts, at, cstart, e, total, p1, rank, q, code)

    return Resolved(name, p, prefix, slate, missing=missing, marginal_error=marginal_error,
                    support_missing=support, dropped=dropped,
                    support_requests=support_requests, _mass=mass, _next=next_fn)
