"""receval.sequential: the queries of "next", "last" and "rest", the history kept or excluded,
and the repeat / explore parts, against an oracle written from the definitions (issue 36):
plain loops over each user's events, the ranked list sorted by hand, P, R, nDCG and RR from
their formulas; parts split by target kind with the whole's denominators and ideal."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import receval
from receval.exceptions import ReceValError

TOL = 1e-12


# --- the oracle ------------------------------------------------------------------------------


def oracle_queries(train: pd.DataFrame, test: pd.DataFrame, protocol: str) -> list[dict[str, Any]]:
    """One dict per query, from the definitions: user, step, time, history (a set and its
    length with repeats) and the targets (distinct, in order)."""
    out = []
    for user in sorted(test["user"].unique()):
        tr = train[train["user"] == user]
        ev = test[test["user"] == user].sort_values("timestamp", kind="stable")
        items, times = list(ev["item"]), list(ev["timestamp"])
        steps = [len(items)] if protocol == "last" else list(range(1, len(items) + 1))
        for s in steps:
            before = list(tr["item"]) + items[: s - 1]
            later = items[s - 1 :] if protocol == "rest" else [items[s - 1]]
            targets = list(dict.fromkeys(later))
            out.append(
                {
                    "user": user,
                    "step": s,
                    "time": times[s - 1],
                    "history": set(before),
                    "history_length": len(before),
                    "targets": targets,
                }
            )
    return out


def oracle_values(
    ranked: list[Any], targets: list[Any], history: set[Any], k: int, only: set[Any] | None = None
) -> dict[str, float]:
    """P@k, R@k, nDCG@k (binary gains, log2 discount, ideal over min(k, |targets|)) and RR
    of one ranked list; with ``only``, the hits and gains of those targets alone over the
    whole's denominators."""
    counted = set(targets) if only is None else only
    top = ranked[:k]
    hits = sum(1 for i in top if i in counted)
    dcg = sum(1 / math.log2(j + 2) for j, i in enumerate(top) if i in counted)
    idcg = sum(1 / math.log2(j + 2) for j in range(min(k, len(targets))))
    first = next((j + 1 for j, i in enumerate(ranked) if i in set(targets)), None)
    return {
        f"P@{k}": hits / k,
        f"R@{k}": hits / len(targets),
        f"nDCG@{k}": dcg / idcg,
        "MRR": 0.0 if first is None else 1 / first,
    }


def oracle(
    train: pd.DataFrame,
    test: pd.DataFrame,
    preds: dict[tuple[Any, int], list[Any]],
    protocol: str,
    k: int,
    history: str,
) -> dict[str, Any]:
    """Summary, parts, counts and the macro over users, from the definitions."""
    rows, reps, exps, by_user = [], [], [], {}
    targets = {"repeat": 0, "explore": 0}
    unreachable = 0
    for query in oracle_queries(train, test, protocol):
        ranked = preds.get((query["user"], query["step"]), [])
        hist = query["history"]
        if history == "exclude":
            unreachable += sum(1 for t in query["targets"] if t in hist and t in ranked)
            ranked = [i for i in ranked if i not in hist]
        rep = {t for t in query["targets"] if t in hist}
        targets["repeat"] += len(rep)
        targets["explore"] += len(query["targets"]) - len(rep)
        whole = oracle_values(ranked, query["targets"], hist, k)
        rows.append(whole)
        reps.append(oracle_values(ranked, query["targets"], hist, k, only=rep))
        exps.append(
            oracle_values(ranked, query["targets"], hist, k, only=set(query["targets"]) - rep)
        )
        by_user.setdefault(query["user"], []).append(whole)
    names = list(rows[0])

    def mean(values: list[dict[str, float]], name: str) -> float:
        return math.fsum(v[name] for v in values) / len(values)

    return {
        "summary": {n: mean(rows, n) for n in names},
        "repeat": {n: mean(reps, n) for n in names if n != "MRR"},
        "explore": {n: mean(exps, n) for n in names if n != "MRR"},
        "by_user": {n: mean([{n: mean(v, n)} for v in by_user.values()], n) for n in names},
        "targets": targets,
        "unreachable": unreachable,
    }


def long_predictions(
    q: receval.sequential.Queries, preds: dict[tuple[Any, int], list[Any]]
) -> pd.DataFrame:
    """The ranked lists as rows keyed by user and step, rank 1 first."""
    rows = [(u, s, item, r + 1) for (u, s), items in preds.items() for r, item in enumerate(items)]
    return pd.DataFrame(rows, columns=["user", "step", "item", "rank"])


# --- hand-worked -----------------------------------------------------------------------------

TRAIN = pd.DataFrame({"user": ["u", "u", "v"], "item": ["a", "b", "a"], "timestamp": [1, 2, 1]})
TEST = pd.DataFrame(
    {"user": ["u", "u", "u", "v"], "item": ["c", "a", "d", "b"], "timestamp": [3, 4, 5, 2]}
)


def test_hand_worked_queries() -> None:
    """u has training a, b and test c, a, d; v training a, test b."""
    q = receval.sequential.queries(TRAIN, TEST, protocol="next")
    assert q.queries[["user", "step", "time", "history_length"]].values.tolist() == [
        ["u", 1, 3, 2],
        ["u", 2, 4, 3],
        ["u", 3, 5, 4],
        ["v", 1, 2, 1],
    ]
    assert q.truth.values.tolist() == [
        [0, "c", "explore"],
        [1, "a", "repeat"],
        [2, "d", "explore"],
        [3, "b", "explore"],
    ]
    assert q.history.groupby("query")["item"].apply(list).tolist() == [
        ["a", "b"],
        ["a", "b", "c"],
        ["a", "b", "c"],
        ["a"],
    ]
    last = receval.sequential.queries(TRAIN, TEST, protocol="last")
    assert last.queries[["user", "step", "history_length"]].values.tolist() == [
        ["u", 3, 4],
        ["v", 1, 1],
    ]
    rest = receval.sequential.queries(TRAIN, TEST, protocol="rest")
    assert rest.truth.groupby("query")["item"].apply(list).tolist() == [
        ["c", "a", "d"],
        ["a", "d"],
        ["d"],
        ["b"],
    ]


def test_hand_worked_rest_parts() -> None:
    """Query 0 of "rest" (u at step 1: targets c, a, d; history a, b; a is a repeat target)
    ranked [a, c, x]: at k = 2 two hits, one of each kind.

    P@2 = 2/2, parts 1/2 + 1/2; R@2 = 2/3, parts 1/3 + 1/3; nDCG@2 = (1 + 1/log2 3) / (1 +
    1/log2 3) = 1, parts 1/(1 + 1/log2 3) (a, rank 1) + (1/log2 3)/(1 + 1/log2 3) (c, rank 2).
    """
    q = receval.sequential.queries(TRAIN, TEST, protocol="rest")
    preds = {"query": [0, 0, 0], "item": ["a", "c", "x"], "rank": [1, 2, 3]}
    r = receval.sequential.evaluate(
        q, preds, ["P@2", "R@2", "nDCG@2", "MRR"], silence=["no-match", "id-mismatch"]
    )
    assert "MRR" not in r.parts["repeat"]  # query 0 mixes kinds: RR does not split
    row = r.per_query.set_index("query").loc[0]
    rep = r.parts_per_query["repeat"].set_index("query").loc[0]
    exp = r.parts_per_query["explore"].set_index("query").loc[0]
    idcg = 1 + 1 / math.log2(3)
    assert (row["P@2"], rep["P@2"], exp["P@2"]) == (1.0, 0.5, 0.5)
    assert abs(row["R@2"] - 2 / 3) <= TOL
    assert abs(rep["R@2"] - 1 / 3) <= TOL and abs(exp["R@2"] - 1 / 3) <= TOL
    assert abs(row["nDCG@2"] - 1.0) <= TOL
    assert abs(rep["nDCG@2"] - 1 / idcg) <= TOL
    assert abs(exp["nDCG@2"] - (1 / math.log2(3)) / idcg) <= TOL
    # repeat: (0, a), (1, a); explore: (0, c), (0, d), (1, d), (2, d), (3, b)
    assert r.counts["targets"] == {"repeat": 2, "explore": 5}


def test_exclude_counts_unreachable_targets() -> None:
    """ "next", history excluded: query 1's target a is in its history and in its list, so it
    is removed (unreachable, a miss); the other removed rows are not targets."""
    q = receval.sequential.queries(TRAIN, TEST, protocol="next")
    preds = {
        "query": [0, 0, 1, 1, 2, 3],
        "item": ["a", "c", "a", "b", "d", "b"],
        "rank": [1, 2, 1, 2, 1, 1],
    }
    keep = receval.sequential.evaluate(q, preds, ["R@1"], history="keep")
    cut = receval.sequential.evaluate(q, preds, ["R@1"], history="exclude")
    assert keep.per_query["R@1"].tolist() == [0.0, 1.0, 1.0, 1.0]
    assert cut.per_query["R@1"].tolist() == [1.0, 0.0, 1.0, 1.0]
    assert (cut.counts["targets_unreachable"], keep.counts["targets_unreachable"]) == (1, 0)
    assert cut.counts["rows"]["predictions_excluded_history"] == 3  # (0, a), (1, a), (1, b)
    assert (cut.options["history"], keep.options["history"]) == ("exclude", "keep")
    assert cut.options["sequential"]["protocol"] == "next"
    assert keep.parts["repeat"]["R@1"] == 0.25 and cut.parts["repeat"]["R@1"] == 0.0


def test_keyed_by_user_and_step() -> None:
    """user + step name the query; rows of a step that is no query ("last") are dropped and
    counted."""
    q = receval.sequential.queries(TRAIN, TEST, protocol="last")
    preds = {"user": ["u", "u", "v"], "step": [3, 1, 1], "item": ["d", "c", "x"], "rank": [1, 1, 1]}
    r = receval.sequential.evaluate(q, preds, ["R@1"])
    assert r.per_query[["user", "step", "R@1"]].values.tolist() == [["u", 3, 1.0], ["v", 1, 0.0]]
    assert r.counts["rows"]["predictions_without_query"] == 1


def test_sessions_are_the_unit() -> None:
    """With a session column the history is the session's earlier events and the steps count
    within the session; the user's other sessions are not history."""
    train = pd.DataFrame({"user": ["u"], "session": ["s0"], "item": ["a"], "timestamp": [0]})
    test = pd.DataFrame(
        {
            "user": ["u", "u", "u"],
            "session": ["s1", "s1", "s2"],
            "item": ["a", "a", "a"],
            "timestamp": [1, 2, 3],
        }
    )
    q = receval.sequential.queries(train, test, protocol="next", session="session")
    assert q.queries[["user", "session", "step", "history_length"]].values.tolist() == [
        ["u", "s1", 1, 0],
        ["u", "s1", 2, 1],
        ["u", "s2", 1, 0],
    ]
    assert q.truth["kind"].tolist() == ["explore", "repeat", "explore"]


def test_sessions_last_and_rest() -> None:
    """Sessions s1 (a, b, a) and s2 (c, a) of one user, s0 in training: "last" asks once per
    session, "rest" targets the session's later events only (s2's are not s1's)."""
    train = pd.DataFrame({"user": ["u"], "session": ["s0"], "item": ["z"], "timestamp": [0]})
    test = pd.DataFrame(
        {
            "user": ["u"] * 5,
            "session": ["s1", "s1", "s1", "s2", "s2"],
            "item": ["a", "b", "a", "c", "a"],
            "timestamp": [1, 2, 3, 4, 5],
        }
    )
    last = receval.sequential.queries(train, test, protocol="last", session="session")
    assert last.queries[["session", "step", "history_length"]].values.tolist() == [
        ["s1", 3, 2],
        ["s2", 2, 1],
    ]
    assert last.truth[["item", "kind"]].values.tolist() == [["a", "repeat"], ["a", "explore"]]
    rest = receval.sequential.queries(train, test, protocol="rest", session="session")
    assert rest.truth.groupby("query")["item"].apply(list).tolist() == [
        ["a", "b"],
        ["b", "a"],
        ["a"],
        ["c", "a"],
        ["a"],
    ]
    assert rest.truth["kind"].tolist() == [
        "explore",
        "explore",
        "explore",
        "repeat",
        "repeat",
        "explore",
        "explore",
        "explore",
    ]
    assert rest.history.groupby("query")["item"].apply(list).to_dict() == {
        1: ["a"],
        2: ["a", "b"],
        4: ["c"],
    }


def test_bad_input_one_line_errors() -> None:
    q = receval.sequential.queries(TRAIN, TEST)
    with pytest.raises(ReceValError, match="protocol='first' is not one of"):
        receval.sequential.queries(TRAIN, TEST, protocol="first")
    with pytest.raises(ReceValError, match="test: missing column 'timestamp'"):
        receval.sequential.queries(TRAIN, TEST.drop(columns="timestamp"))
    with pytest.raises(ReceValError, match="history='drop' is not one of"):
        receval.sequential.evaluate(
            q, {"query": [0], "item": ["a"], "rank": [1]}, ["R@1"], history="drop"
        )
    with pytest.raises(ReceValError, match="key them by 'query' or by 'user' and 'step'"):
        receval.sequential.evaluate(q, {"user": ["u"], "item": ["a"], "rank": [1]}, ["R@1"])
    with pytest.raises(ReceValError, match="expected the queries"):
        receval.sequential.evaluate(TEST, {"query": [0], "item": ["a"], "rank": [1]}, ["R@1"])


def test_inputs_not_overwritten() -> None:
    train, test = TRAIN.copy(), TEST.copy()
    preds = pd.DataFrame({"user": ["u", "v"], "step": [1, 1], "item": ["a", "x"], "rank": [1, 1]})
    before = preds.copy()
    q = receval.sequential.queries(train, test, protocol="rest")
    receval.sequential.evaluate(q, preds, ["R@1"], history="exclude")
    pd.testing.assert_frame_equal(train, TRAIN)
    pd.testing.assert_frame_equal(test, TEST)
    pd.testing.assert_frame_equal(preds, before)


# --- against the oracle, any data ------------------------------------------------------------


@st.composite
def event_data(draw: Any) -> tuple[pd.DataFrame, pd.DataFrame, dict[tuple[Any, int], list[Any]]]:
    """Up to 4 users over 6 items; test timestamps may tie (input order breaks them); lists of
    distinct items, some queries without one."""
    n_users = draw(st.integers(1, 4))
    train, test = [], []
    for u in range(n_users):
        for _ in range(draw(st.integers(0, 4))):
            train.append((u, draw(st.integers(0, 5)), 0))
        for _ in range(draw(st.integers(1, 5))):
            test.append((u, draw(st.integers(0, 5)), draw(st.integers(1, 4))))
    tr = pd.DataFrame(train, columns=["user", "item", "timestamp"]).astype(np.int64)
    te = pd.DataFrame(test, columns=["user", "item", "timestamp"])
    preds = {}
    for u in range(n_users):
        for s in range(1, int((te["user"] == u).sum()) + 1):
            if draw(st.booleans()) or s == 1:
                preds[(u, s)] = draw(st.lists(st.integers(0, 7), max_size=6, unique=True))
    return tr, te, preds


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=event_data(),
    protocol=st.sampled_from(["next", "last", "rest"]),
    history=st.sampled_from(["keep", "exclude"]),
    k=st.integers(1, 4),
)
def test_against_oracle(data: Any, protocol: str, history: str, k: int) -> None:
    """Summary, parts, macro over users and the counts equal the oracle's; the parts add up
    to the whole per query and in the summary."""
    train, test, lists = data
    q = receval.sequential.queries(train, test, protocol=protocol)
    lists = {
        key: v
        for key, v in lists.items()
        if protocol != "last" or key[1] == int((test["user"] == key[0]).sum())
    }
    if not any(lists.values()):
        return
    names = [f"P@{k}", f"R@{k}", f"nDCG@{k}", "MRR"]
    try:
        r = receval.sequential.evaluate(
            q,
            long_predictions(q, lists),
            names,
            history=history,
            silence=["no-match", "id-mismatch", "undefined"],
        )
    except ReceValError as err:  # every listed item was history
        assert history == "exclude" and "no row is left" in str(err)
        return
    want = oracle(train, test, lists, protocol, k, history)
    for name in names:
        assert abs(r.summary[name] - want["summary"][name]) <= TOL, name
        assert abs(r.summary_by_user[name] - want["by_user"][name]) <= TOL, name
    for kind in ("repeat", "explore"):
        for name in names[:3]:
            assert abs(r.parts[kind][name] - want[kind][name]) <= TOL, (kind, name)
    assert r.counts["targets"] == want["targets"]
    assert r.counts["targets_unreachable"] == want["unreachable"]
    for name in names[:3]:
        whole = r.per_query[name].to_numpy()
        rep = r.parts_per_query["repeat"][name].to_numpy()
        exp = r.parts_per_query["explore"][name].to_numpy()
        assert np.all(np.abs(rep + exp - whole) <= TOL)
        assert np.all((rep >= 0) & (exp >= 0) & (rep <= whole + TOL))
        assert abs(r.parts["repeat"][name] + r.parts["explore"][name] - r.summary[name]) <= TOL
    if protocol != "rest":  # one target per query: every metric splits
        assert abs(r.parts["repeat"]["MRR"] + r.parts["explore"]["MRR"] - r.summary["MRR"]) <= TOL
