"""Properties every receval result must have, whatever the input.

The ranges, the growth in k and the row order under the order-free tie policies are declared
by each registry entry and checked for every entry by tests/test_registry_properties.py;
here, what the entries do not declare:

- the order of the users (their ids sort the other way round) does not change any number,
  for every tie policy; nor does the order of the rows under ``stable`` when no score is
  tied;
- ``ties="average"`` is the mean over every ordering of the tied items (brute force with
  itertools.permutations), for every metric, AP over its own hits included;
- pessimistic <= average <= optimistic, for every metric where moving a relevant item up
  cannot lower the value (not AP over its hits: see the counterexample below).
"""

from __future__ import annotations

import itertools
import math
import random
import warnings

import hypothesis.strategies as st
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

import receval

try:
    from tests.reference import oracle
    from tests.reference.data import TIED_SCORES, datasets, options
except ImportError:  # pytest run from elsewhere: tests/ itself is on sys.path
    from reference import oracle
    from reference.data import TIED_SCORES, datasets, options

RANKING = [
    "P@1", "P@3", "P@10", "R@2", "R@5", "R", "F1@3", "F0.5@2", "F2@5",
    "AP@1", "AP@3", "MAP@5", "MAP", "nDCG@1", "nDCG@3", "nDCG", "RR@2", "MRR",
    "Hit@1", "Hit@4", "Hit", "Rprec",
]  # fmt: skip
TIES = ["stable", "item", "pessimistic", "optimistic", "average"]
TOL = 1e-12

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)


def evaluate(truth_rows, pred_rows, metrics, **opts):
    truth = pd.DataFrame(truth_rows, columns=["user", "item", "rating"])
    preds = pd.DataFrame(pred_rows, columns=["user", "item", "score"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", receval.UndefinedMetricWarning)
        return receval.evaluate(truth, preds, metrics, **opts)


def per_user(result):
    """user -> {metric: value}."""
    return {row.pop("user"): row for row in result.per_user.to_dict("records")}


def run_or_none(data, metrics, **opts):
    """The result, or None where the input is refused (no user selected)."""
    try:
        return evaluate(data.truth, data.predictions, metrics, **opts)
    except receval.ReceValError as err:
        assert "no user" in str(err)
        return None


def same(a: float, b: float, tol: float = TOL) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol


# --- row order and user order ----------------------------------------------------------------


def _relabel_users(rows, mapping):
    return [(mapping[u], i, v) for u, i, v in rows]


@pytest.mark.parametrize("ties", TIES)
@SETTINGS
@given(data=st.data())
def test_row_and_user_order_do_not_matter(ties, data):
    if ties == "stable":  # input order breaks ties: only lists without ties qualify
        scores = st.floats(-5, 5, allow_nan=False, width=32)
        d = data.draw(datasets(scores=scores))
        seen = set()
        d.predictions = [r for r in d.predictions if (r[0], r[2]) not in seen
                         and not seen.add((r[0], r[2]))]
    else:
        d = data.draw(datasets())
    opts = data.draw(options(ties=ties, empty=st.sampled_from(["zero", "one", "skip"])))
    metrics = [*RANKING, "RMSE", "MAE"]
    base = run_or_none(d, metrics, **opts)
    if base is None:
        return
    want = per_user(base)
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    truth, preds = d.truth[:], d.predictions[:]
    rng.shuffle(truth)
    rng.shuffle(preds)

    if ties == "stable":  # no tie: the same rows in another order (the order-free tie
        # policies: tests/test_registry_properties.py, every family)
        shuffled = evaluate(truth, preds, metrics, **opts)
        assert per_user(shuffled).keys() == want.keys()
        for user, row in per_user(shuffled).items():
            for name in metrics:
                assert same(row[name], want[user][name]), (user, name)
        for name in metrics:
            assert same(shuffled.summary[name], base.summary[name]), name

    # the same users under ids that sort the other way round (users come in another order)
    ids = sorted({u for u, _, _ in d.truth + d.predictions}, key=str)
    kind = type(ids[0])
    mapping = {u: kind(f"z{len(ids) - n:03d}") if kind is str else -n
               for n, u in enumerate(ids)}
    reordered = evaluate(_relabel_users(truth, mapping), _relabel_users(preds, mapping),
                         metrics, **opts)
    got = per_user(reordered)
    for user, row in want.items():
        for name in metrics:
            assert same(got[mapping[user]][name], row[name]), (user, name)
    for name in metrics:
        assert same(reordered.summary[name], base.summary[name], 1e-9), name


# --- average ties = the mean over all orderings ------------------------------------------------


def _user_rows(truth_rows, pred_rows, opts):
    """The oracle's ranked rows (stable order) and L, ideal gains for user ``u``."""
    o = oracle.Opts(**opts)
    truth = {i: r for _, i, r in truth_rows}
    rt = o.relevance_threshold
    thr = -math.inf if rt is None else float(rt)
    rel = {i: r >= thr for i, r in truth.items()}
    rows = [oracle.Row(i, s, rel.get(i, False), oracle.gain_of(truth.get(i, 0.0),
                                                              rel.get(i, False), o.gain))
            for _, i, s in pred_rows]
    ideal = [oracle.gain_of(r, True, o.gain) for i, r in truth.items() if rel[i]]
    return oracle.rank(rows, "stable"), sum(rel.values()), ideal, o


@st.composite
def small_user(draw):
    """One user, at most 6 predictions, scores from 2-3 values: big tie groups."""
    n_items = draw(st.integers(1, 8))
    items = st.integers(0, n_items - 1)
    truth = [("u", i, float(draw(st.sampled_from([1, 2, 3, 4, 5]))))
             for i in draw(st.lists(items, unique=True, min_size=1, max_size=5))]
    values = draw(st.lists(st.sampled_from(TIED_SCORES), min_size=1, max_size=3, unique=True))
    preds = [("u", i, draw(st.sampled_from(values)))
             for i in draw(st.lists(items, unique=True, min_size=1, max_size=6))]
    return truth, preds


ALL_CUTS = [*RANKING, "P@2", "P@4", "P@5", "AP@2", "AP@4", "nDCG@2", "nDCG@4", "RR@3",
            "Hit@2", "R@1", "R@3"]


@pytest.mark.parametrize("ap_normalizer", ["min_k_relevant", "relevant", "hits", "k"])
@settings(SETTINGS, max_examples=80)
@given(case=small_user(), gain=st.sampled_from(["binary", "linear", "exponential"]),
       threshold=st.sampled_from([None, 3.0]),
       pden=st.sampled_from(["k", "returned"]), rden=st.sampled_from(["relevant", "capped"]))
def test_average_ties_equal_the_mean_over_every_ordering(case, gain, threshold, pden, rden,
                                                         ap_normalizer):
    truth, preds = case
    opts = dict(ap_normalizer=ap_normalizer, gain=gain, relevance_threshold=threshold,
                precision_denominator=pden, recall_denominator=rden, empty="skip")
    result = evaluate(truth, preds, ALL_CUTS, ties="average", **opts)
    got = per_user(result)["u"]
    ranked, n_rel, ideal, o = _user_rows(truth, preds, opts)
    for name in ALL_CUTS:
        metric = oracle.parse(name)

        def value(ordering, metric=metric):
            v = oracle.metric_on_ranking(metric, [r.rel for r in ordering],
                                         [r.gain for r in ordering], n_rel, ideal, o)
            return math.nan if v.value is None else v.value

        want = oracle.brute_force_average(ranked, value)
        assert same(got[name], want, 1e-9), (name, got[name], want)


@pytest.mark.parametrize("metric", ["AP@2", "AP@3", "AP@4", "MAP@5", "MAP", "P@2", "R@3",
                                    "F1@3", "F0.5@4", "nDCG@3", "nDCG", "RR@3", "MRR",
                                    "Hit@2", "Rprec"])
def test_average_ties_by_permuting_the_input_rows(metric):
    """The same list under 720 user ids, one per ordering of the tied items, ranked with
    ``stable`` ties: their mean is what ``average`` must give. The cut at 2, 3 and 4 falls
    inside the tie group (ranks 2-7)."""
    truth_items = {"a": 5.0, "b": 3.0, "c": 4.0, "d": 2.0}
    top, tied, last = ("x", 9.0), ["a", "b", "y", "c", "z", "w"], ("d", 1.0)
    truth, preds = [], []
    for n, perm in enumerate(itertools.permutations(tied)):
        user = f"u{n:03d}"
        truth += [(user, i, r) for i, r in truth_items.items()]
        preds += [(user, *top), *[(user, i, 5.0) for i in perm], (user, *last)]
    for norm in ("min_k_relevant", "relevant", "hits", "k"):
        for gain in ("binary", "exponential"):
            opts = dict(ap_normalizer=norm, gain=gain, relevance_threshold=3.0)
            stable = evaluate(truth, preds, [metric], ties="stable", **opts)
            average = evaluate(truth[:4], preds[:8], [metric], ties="average", **opts)
            want = math.fsum(stable.per_user[metric]) / len(stable.per_user)
            assert same(average.summary[metric], want, 1e-12), (norm, gain)


# --- pessimistic <= average <= optimistic ------------------------------------------------------


@SETTINGS
@given(data=datasets(), opts=options(empty="zero"),
       ap_normalizer=st.sampled_from(["min_k_relevant", "relevant", "k"]))
def test_pessimistic_le_average_le_optimistic(data, opts, ap_normalizer):
    opts["ap_normalizer"] = ap_normalizer
    got = {}
    for ties in ("pessimistic", "average", "optimistic"):
        result = run_or_none(data, RANKING, **{**opts, "ties": ties})
        if result is None:
            return
        got[ties] = result
    low, mid, high = (per_user(got[t]) for t in ("pessimistic", "average", "optimistic"))
    for user in mid:
        for name in RANKING:
            assert ordered(low[user][name], mid[user][name], high[user][name]), (user, name)
    for name in RANKING:
        s = [got[t].summary[name] for t in ("pessimistic", "average", "optimistic")]
        assert ordered(*s), name


def ordered(*values: float) -> bool:
    """Non-decreasing, or all NaN (undefined does not depend on the order of ties)."""
    if any(math.isnan(v) for v in values):
        return all(math.isnan(v) for v in values)
    return all(a <= b + 1e-12 for a, b in itertools.pairwise(values))


def test_ap_over_its_hits_can_be_higher_when_pessimistic():
    """Why AP with ap_normalizer='hits' is left out above: a relevant item pulled into the cut
    from a tie group adds a low precision to the mean. Ranks: rel, non, non, then a tie of
    {rel, non} at ranks 4-5, k = 4. Optimistic: (1/1 + 2/4) / 2 = 0.75; pessimistic: 1/1."""
    truth = [("u", "r1", 1.0), ("u", "r2", 1.0)]
    preds = [("u", "r1", 9.0), ("u", "n1", 8.0), ("u", "n2", 7.0),
             ("u", "r2", 5.0), ("u", "n3", 5.0)]
    values = {t: evaluate(truth, preds, ["AP@4"], ap_normalizer="hits", ties=t).summary["AP@4"]
              for t in ("pessimistic", "average", "optimistic")}
    assert values["optimistic"] == 0.75
    assert values["pessimistic"] == 1.0
    assert values["average"] == pytest.approx((0.75 + 1.0) / 2, abs=1e-12)
