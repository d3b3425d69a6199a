"""``evaluate_scores`` is ``evaluate``'s pipeline with a score matrix for predictions: on the
conformance matrix's data (tests/test_conformance_matrix.py: heavy ties, excluded pairs, an
emptied row, a truth user without a row, truth items outside the matrix, a truth user the
matrix does not hold) and under each of its option sets, the counts, the warnings, the
per-user values, the summary and the recorded options equal those of ``evaluate`` on the
long table of the matrix's cells outside ``exclude`` -- the accuracy families and the
beyond-accuracy and fairness metrics alike. The values themselves are checked against the
independent reference by the conformance matrix; here the two doors are held to one audit.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from torch_device import TORCH_DEVICE

import receval
from receval.beyond.names import ENTRIES as BEYOND_ENTRIES
from receval.measures.registry import ENTRIES

try:
    from tests.test_conformance_matrix import (
        BEYOND_SETS,
        FAMILY_NAMES,
        OPTION_SETS,
        K,
        case,
        expected_refusal,
        run_door,
    )
except ImportError:  # pragma: no cover - run from tests/
    from test_conformance_matrix import (  # type: ignore[no-redef]
        BEYOND_SETS,
        FAMILY_NAMES,
        OPTION_SETS,
        K,
        case,
        expected_refusal,
        run_door,
    )

pytestmark = pytest.mark.torch_device


def _names(options: dict[str, Any]) -> list[str]:
    """Every family both doors compute under ``options`` (RMSE and MAE too: the matrix's
    scores at the truth's cells against the ratings)."""
    average = options.get("ties") == "average"
    return [
        n
        for e in ENTRIES.values()
        if not (average and not e.ties_average)
        for n in FAMILY_NAMES[e.name]
    ]


def _recorded(fn: Any) -> tuple[receval.Result, list[tuple[str, str]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, sorted((type(w.message).__name__, str(w.message)) for w in caught)


def _both(
    seed: int, metrics: list[str], options: dict[str, Any], **extra: Any
) -> tuple[tuple[receval.Result, list[Any]], tuple[receval.Result, list[Any]]]:
    c = case(seed)
    long = _recorded(lambda: receval.evaluate(c["truth"], c["long"], metrics, **options, **extra))
    matrix = _recorded(
        lambda: receval.evaluate_scores(
            c["truth"],
            c["scores"],
            metrics,
            exclude=c["exclude"],
            user_ids=c["user_ids"],
            item_ids=c["item_ids"],
            device=TORCH_DEVICE,
            **options,
            **extra,
        )
    )
    return long, matrix


def _same_value(got: Any, want: Any) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-13)
    return bool(got == want)


def _check_same(
    long: tuple[receval.Result, list[Any]], matrix: tuple[receval.Result, list[Any]]
) -> None:
    (want, want_warned), (got, got_warned) = long, matrix
    assert got.counts.keys() == want.counts.keys()
    for key in want.counts:
        assert got.counts[key] == want.counts[key], (key, got.counts[key], want.counts[key])
    assert got_warned == want_warned
    assert list(got.summary) == list(want.summary)
    for name, value in want.summary.items():
        assert _same_value(got.summary[name], value), (name, got.summary[name], value)
    pd.testing.assert_frame_equal(got.per_user, want.per_user, rtol=1e-12, atol=1e-13)
    for key in ("metrics", "beyond", "item_features", "item_groups", "train", "profile"):
        assert got.options.get(key) == want.options.get(key), key


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("option_set", list(OPTION_SETS))
def test_counts_warnings_and_values_equal_evaluate(option_set: str, seed: int) -> None:
    options = OPTION_SETS[option_set]
    _check_same(*_both(seed, _names(options), options))


@pytest.mark.parametrize("option_set", list(BEYOND_SETS))
def test_beyond_metrics_counts_and_warnings_equal_evaluate(option_set: str) -> None:
    c = case(0)
    names = [f"{name}@{K}" for name in BEYOND_ENTRIES] + ["P@3"]
    _check_same(
        *_both(0, names, BEYOND_SETS[option_set], train=c["train"], item_features=c["features"])
    )


def test_beyond_metrics_alone_and_the_protected_group_recorded() -> None:
    """Beyond-accuracy metrics without an accuracy metric; the protected group used is
    recorded and its absence from every list warned, as evaluate does."""
    c = case(1)
    _check_same(
        *_both(
            1,
            [f"rND@{K}", f"novelty@{K}"],
            {"relevance_threshold": 3},
            train=c["train"],
            item_features=c["features"],
            beyond={"protected_group": "w", "fairness_step": 1},
        )
    )


@pytest.mark.parametrize("users", ["truth", "relevant", "both", "predictions", "union"])
def test_user_selection_counts_equal_evaluate(users: str) -> None:
    _check_same(*_both(0, ["P@3", "MRR", "nDCG"], {"relevance_threshold": 3, "users": users}))


def test_score_threshold_and_known_protocol_counts_equal_evaluate() -> None:
    for options in (
        {"score_threshold": 1.0},
        {"score_threshold": 1.0, "protocol": "known"},
        {"nonpositive_scores": "irrelevant", "users": "truth"},
    ):
        _check_same(*_both(0, ["P@3", "R@3", "MRR"], {"relevance_threshold": 3, **options}))


def test_ee_ties_permute_is_refused_in_one_line() -> None:
    c = case(0)
    with pytest.raises(receval.ReceValError) as err:
        receval.evaluate_scores(
            c["truth"],
            c["scores"],
            [f"EE_L@{K}"],
            exclude=c["exclude"],
            user_ids=c["user_ids"],
            item_ids=c["item_ids"],
            device=TORCH_DEVICE,
            train=c["train"],
            item_features=c["features"],
            beyond={"ee_ties": "permute"},
        )
    assert "\n" not in str(err.value) and "ee_ties='permute'" in str(err.value)


def test_a_beyond_metric_without_its_input_is_refused_in_one_line() -> None:
    c = case(0)
    with pytest.raises(receval.ReceValError, match="needs the training data"):
        receval.evaluate_scores(
            c["truth"],
            c["scores"],
            [f"novelty@{K}"],
            user_ids=c["user_ids"],
            item_ids=c["item_ids"],
            device=TORCH_DEVICE,
        )


def test_coverage_from_the_matrix_by_hand() -> None:
    """An oracle written from the formula (docs/beyond-accuracy.md): coverage@1 = distinct
    top-1 items / catalogue (train + truth items); novelty@1 = -log2 of the top item's
    share of the training rows, 0 for an item without one (``novelty_cold="zero"``)."""
    truth = {"user": [0, 1, 2], "item": [3, 3, 1]}
    scores = np.array([[0.9, 0.1, 0.2, 0.3], [0.1, 0.9, 0.2, 0.3], [0.1, 0.2, 0.3, 0.9]])
    train = {"user": [0, 1, 2, 3], "item": [0, 0, 1, 2]}
    r = receval.evaluate_scores(
        truth,
        scores,
        ["coverage@1", "novelty@1"],
        train=train,
        device=TORCH_DEVICE,
        silence=["train-items", "train-overlap"],
    )
    # tops: 0, 1, 3; catalogue {0, 1, 2, 3}; shares of the 4 training rows: 2/4, 1/4, cold
    assert r.summary["coverage@1"] == 3 / 4
    want = {0: -math.log2(2 / 4), 1: -math.log2(1 / 4), 2: 0.0}
    got = r.per_user.set_index("user")["novelty@1"]
    for user, value in want.items():
        assert math.isclose(got[user], value, rel_tol=1e-12, abs_tol=1e-15), (user, got[user])


def test_exclude_and_exclude_train_together_equal_evaluate() -> None:
    """``exclude=`` (cells that are not predictions) and ``exclude_train=True`` (the training
    pairs taken out of the rest): the audit of evaluate on the long table with
    ``exclude_train=True``."""
    c = case(0)
    _check_same(
        *_both(
            0,
            ["P@3", "MRR", f"novelty@{K}"],
            {"relevance_threshold": 3},
            train=c["train"],
            exclude_train=True,
        )
    )


def test_a_row_emptied_by_exclude_train_is_counted_and_warned_as_evaluate_does() -> None:
    truth = pd.DataFrame({"user": [0, 1], "item": [2, 3]})
    scores = np.array([[0.9, 0.5, 0.1, 0.2], [0.4, 0.3, 0.2, 0.1]])
    exclude = pd.DataFrame({"user": [0, 0], "item": [2, 3]})  # user 0 lists items 0 and 1
    train = pd.DataFrame({"user": [0, 0, 1], "item": [0, 1, 0]})  # ... both in train
    long = pd.DataFrame(
        {
            "user": [0, 0, 1, 1, 1, 1],
            "item": [0, 1, 0, 1, 2, 3],
            "score": [0.9, 0.5, 0.4, 0.3, 0.2, 0.1],
        }
    )
    want = _recorded(
        lambda: receval.evaluate(truth, long, ["P@1", "MRR"], train=train, exclude_train=True)
    )
    got = _recorded(
        lambda: receval.evaluate_scores(
            truth,
            scores,
            ["P@1", "MRR"],
            exclude=exclude,
            train=train,
            exclude_train=True,
            device=TORCH_DEVICE,
        )
    )
    _check_same(want, got)
    assert got[0].counts["users"]["emptied_by_exclude_train"] == 1
    assert got[0].counts["rows"]["predictions_excluded_train"] == 3
    assert any("exclude_train" in message for _, message in got[1])


@pytest.mark.parametrize("policy", ["first", "max"])
def test_truth_duplicates_dropped_as_evaluate_drops_them(policy: str) -> None:
    c = case(0)
    twice = pd.concat(
        [c["truth"], c["truth"].iloc[::3].assign(rating=lambda t: 5 - t.rating)], ignore_index=True
    )
    (want, want_warned) = _recorded(
        lambda: receval.evaluate(
            twice, c["long"], ["P@3", "nDCG@3", "RMSE"], relevance_threshold=3, duplicates=policy
        )
    )
    got = _recorded(
        lambda: receval.evaluate_scores(
            twice,
            c["scores"],
            ["P@3", "nDCG@3", "RMSE"],
            exclude=c["exclude"],
            user_ids=c["user_ids"],
            item_ids=c["item_ids"],
            device=TORCH_DEVICE,
            relevance_threshold=3,
            duplicates=policy,
        )
    )
    _check_same((want, want_warned), got)
    assert got[0].counts["rows"]["truth_dropped_duplicates"] > 0


def test_truth_duplicates_refused_with_evaluate_s_message() -> None:
    c = case(0)
    twice = pd.concat([c["truth"], c["truth"].iloc[3:4]], ignore_index=True)
    with pytest.raises(receval.ReceValError) as long:
        receval.evaluate(twice, c["long"], ["P@3"])
    with pytest.raises(receval.ReceValError) as matrix:
        receval.evaluate_scores(
            twice,
            c["scores"],
            ["P@3"],
            exclude=c["exclude"],
            user_ids=c["user_ids"],
            item_ids=c["item_ids"],
            device=TORCH_DEVICE,
        )
    assert str(matrix.value) == str(long.value)


def test_the_scores_door_refuses_only_what_every_door_refuses() -> None:
    """Each conformance cell of the scores door (every family's and beyond-accuracy metric's
    sample name x every option set), asked alone: refused exactly where the registry entry
    declares every door refuses (``ties="average"`` for the families that read the ranks of
    the judged items), in one line; ``pytest -s`` prints the count."""
    c = case(0)
    extra = {"train": c["train"], "item_features": c["features"]}
    cells = refused = 0
    for options in OPTION_SETS.values():
        for entry in ENTRIES.values():
            for name in FAMILY_NAMES[entry.name]:
                cells += 1
                expected = expected_refusal(entry, "scores", options)
                try:
                    run_door("scores", 0, [name], options)
                except receval.ReceValError as err:
                    refused += 1
                    assert expected and "\n" not in str(err), (name, options, str(err))
                else:
                    assert not expected, (name, options)
        for name in BEYOND_ENTRIES:
            cells += 1
            run_door("scores", 0, [f"{name}@{K}"], options, **extra)
    print(f"\nconformance cells of evaluate_scores: {refused} refused of {cells}")


def test_debiased_and_beyond_metrics_together_equal_evaluate() -> None:
    """The lists the debiased metrics weigh and those the beyond-accuracy metrics read (a
    deeper top k) come from one pass: both equal evaluate's."""
    c = case(0)
    _check_same(
        *_both(
            0,
            ["P@3", "nDCG@3", "novelty@5", "coverage@5"],
            {"relevance_threshold": 3},
            debias="snips",
            propensity=("popularity", 0.5),
            train=c["train"],
            item_features=c["features"],
        )
    )


def _pair(
    truth: Any, long: Any, scores: Any, metrics: list[str], **options: Any
) -> tuple[tuple[receval.Result, list[Any]], tuple[receval.Result, list[Any]]]:
    """evaluate on ``long`` and evaluate_scores on ``scores`` (case(0)'s rows, columns and
    excluded pairs), each with its warnings."""
    c = case(0)
    want = _recorded(lambda: receval.evaluate(truth, long, metrics, **options))
    got = _recorded(
        lambda: receval.evaluate_scores(
            truth,
            scores,
            metrics,
            exclude=c["exclude"],
            user_ids=c["user_ids"],
            item_ids=c["item_ids"],
            device=TORCH_DEVICE,
            **options,
        )
    )
    return want, got


@pytest.mark.parametrize("users", ["truth", "both", "union"])
def test_nonpositive_scores_are_counted_over_every_row_as_evaluate_counts_them(
    users: str,
) -> None:
    """``nonpositive_scores="irrelevant"``: ``predictions_nonpositive`` counts the scores at or
    below 0 of every row's list, also the rows of users ``users=`` leaves out (three matrix
    rows whose users have no truth row)."""
    c = case(0)
    scores = c["scores"] - 0.5  # 0, 0.5, 1, 1.5 -> -0.5, 0, 0.5, 1
    long = c["long"].assign(score=c["long"]["score"] - 0.5)
    truth = c["truth"][~c["truth"]["user"].isin(c["user_ids"][3:6])]
    want, got = _pair(
        truth,
        long,
        scores,
        ["P@3", "MRR"],
        relevance_threshold=3,
        nonpositive_scores="irrelevant",
        users=users,
    )
    _check_same(want, got)
    # by hand: the cells outside exclude= (the long table's rows) with a score <= 0
    assert got[0].counts["rows"]["predictions_nonpositive"] == int((long["score"] <= 0).sum())


def _ranks_case(broken: bool) -> tuple[Any, Any, Any, Any, Any]:
    """case(0)'s truth with a matrix whose rows are permutations of 1..9 (ranks, 1 = best),
    its long table; ``broken``: one row's 9 becomes 10 (no longer 1..n)."""
    c = case(0)
    rng = np.random.default_rng(5)
    n_users, n_items = c["scores"].shape
    ranks = np.stack([rng.permutation(n_items) + 1 for _ in range(n_users)]).astype(float)
    if broken:
        ranks[4][ranks[4] == n_items] = n_items + 1
    r, col = np.nonzero(np.ones_like(ranks, dtype=bool))
    long = pd.DataFrame(
        {"user": c["user_ids"][r], "item": c["item_ids"][col], "score": ranks[r, col]}
    )
    return c["truth"], long, ranks, c["user_ids"], c["item_ids"]


@pytest.mark.parametrize("broken", [False, True])
def test_ranks_passed_as_a_score_matrix_are_warned_as_evaluate_warns(broken: bool) -> None:
    """Rows that are 1..n within every user's list: evaluate's ranks-as-scores warning (one
    text, :func:`receval.checks.warn_ranks_as_scores`), naming what to pass instead; one row
    that is not 1..n: no warning at either door. Every other count, warning and value equal."""
    truth, long, ranks, user_ids, item_ids = _ranks_case(broken)
    metrics = ["P@3", "MRR"]
    want = _recorded(lambda: receval.evaluate(truth, long, metrics, relevance_threshold=3))
    got = _recorded(
        lambda: receval.evaluate_scores(
            truth,
            ranks,
            metrics,
            user_ids=user_ids,
            item_ids=item_ids,
            device=TORCH_DEVICE,
            relevance_threshold=3,
        )
    )

    def split(warned: list[Any]) -> tuple[list[Any], list[str]]:
        ranked = [m for kind, m in warned if kind == "RanksAsScoresWarning"]
        return [w for w in warned if w[0] != "RanksAsScoresWarning"], ranked

    (want_rest, want_ranked), (got_rest, got_ranked) = split(want[1]), split(got[1])
    _check_same((want[0], want_rest), (got[0], got_rest))
    assert len(want_ranked) == len(got_ranked) == (0 if broken else 1)
    if not broken:
        assert got_ranked[0].startswith(
            "the score matrix holds 1..n within every user's list: ranks passed as scores?"
        )
        assert "n + 1 - rank" in got_ranked[0] and "'rank'" in got_ranked[0]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            receval.evaluate_scores(
                truth,
                ranks,
                metrics,
                user_ids=user_ids,
                item_ids=item_ids,
                device=TORCH_DEVICE,
                relevance_threshold=3,
                silence="ranks-as-scores",
            )
        assert not [w for w in caught if "1..n" in str(w.message)]


def test_truth_scope_drops_unpredicted_rows_before_duplicates_as_evaluate_does() -> None:
    """A truth pair given twice whose item is not predicted (excluded, or outside the matrix):
    ``truth_scope="predicted"`` drops both rows as unpredicted before duplicates are looked
    for (shaping.prepare's order), so it is neither a duplicate nor an error."""
    c = case(0)
    excluded = c["exclude"].iloc[0]
    again = pd.DataFrame(
        {
            "user": [excluded["user"], excluded["user"], c["user_ids"][0], c["user_ids"][0]],
            "item": [excluded["item"], excluded["item"], 99, 99],
            "rating": [4.0, 2.0, 5.0, 5.0],
        }
    )
    truth = pd.concat([c["truth"], again], ignore_index=True)
    for policy in ("error", "first"):
        want, got = _pair(
            truth,
            c["long"],
            c["scores"],
            ["P@3", "nDCG@3"],
            relevance_threshold=3,
            truth_scope="predicted",
            duplicates=policy,
        )
        _check_same(want, got)
        rows = got[0].counts["rows"]
        assert rows["truth_dropped_duplicates"] == 0
        # by hand: the truth rows whose (user, item) is not a cell of the long table
        cells = set(zip(c["long"]["user"], c["long"]["item"], strict=True))
        off = sum((u, i) not in cells for u, i in zip(truth["user"], truth["item"], strict=True))
        assert rows["truth_dropped_unpredicted"] == off


def test_the_duplicate_evaluate_names_is_the_one_refused() -> None:
    """Two repeated pairs: evaluate names the repeat of the first user (in id order) that
    ``users=`` selects, and its smallest repeated item, whatever the input order."""
    c = case(0)
    later, earlier = c["truth"].iloc[-4], c["truth"].iloc[0]
    assert later["user"] > earlier["user"]
    twice = pd.concat([c["truth"].iloc[[-4]], c["truth"], c["truth"].iloc[[0]]], ignore_index=True)
    with pytest.raises(receval.ReceValError) as long:
        receval.evaluate(twice, c["long"], ["P@3"])
    with pytest.raises(receval.ReceValError) as matrix:
        receval.evaluate_scores(
            twice,
            c["scores"],
            ["P@3"],
            exclude=c["exclude"],
            user_ids=c["user_ids"],
            item_ids=c["item_ids"],
            device=TORCH_DEVICE,
        )
    assert str(matrix.value) == str(long.value)
    assert f"user {int(earlier['user'])}, item {int(earlier['item'])}" in str(matrix.value)


@pytest.mark.parametrize("policy", ["first", "max"])
def test_text_ids_and_duplicates_equal_evaluate(policy: str) -> None:
    """Users and items named by text (the dictionary path of the shared grouping), the
    truth's duplicates dropped by the shared code: counts, warnings and values as evaluate's."""
    c = case(1)
    user = {u: f"u{u:03d}" for u in [*c["user_ids"], 7]}
    item = {i: f"i{i:03d}" for i in [*c["item_ids"], 98, 99]}
    truth = c["truth"].assign(user=c["truth"]["user"].map(user), item=c["truth"]["item"].map(item))
    truth = pd.concat(
        [truth, truth.iloc[::4].assign(rating=lambda t: 5 - t.rating)], ignore_index=True
    )
    long = c["long"].assign(user=c["long"]["user"].map(user), item=c["long"]["item"].map(item))
    exclude = c["exclude"].assign(
        user=c["exclude"]["user"].map(user), item=c["exclude"]["item"].map(item)
    )
    metrics = ["P@3", "nDCG@3", "RMSE"]
    want = _recorded(
        lambda: receval.evaluate(truth, long, metrics, relevance_threshold=3, duplicates=policy)
    )
    got = _recorded(
        lambda: receval.evaluate_scores(
            truth,
            c["scores"],
            metrics,
            exclude=exclude,
            user_ids=[user[u] for u in c["user_ids"]],
            item_ids=[item[i] for i in c["item_ids"]],
            device=TORCH_DEVICE,
            relevance_threshold=3,
            duplicates=policy,
        )
    )
    _check_same(want, got)
    # by hand: each pair once, the repeats dropped
    assert got[0].counts["rows"]["truth_dropped_duplicates"] == int(
        truth.duplicated(["user", "item"]).sum()
    )


def test_negative_gains_refused_with_evaluate_s_message() -> None:
    c = case(0)
    truth = c["truth"].assign(rating=c["truth"]["rating"] - 2.0)
    with pytest.raises(receval.ReceValError) as long:
        receval.evaluate(truth, c["long"], ["nDCG@3"], gain="linear", relevance_threshold=-1)
    with pytest.raises(receval.ReceValError) as matrix:
        receval.evaluate_scores(
            truth,
            c["scores"],
            ["nDCG@3"],
            exclude=c["exclude"],
            user_ids=c["user_ids"],
            item_ids=c["item_ids"],
            device=TORCH_DEVICE,
            gain="linear",
            relevance_threshold=-1,
        )
    assert str(matrix.value) == str(long.value)


@pytest.mark.parametrize("broken", [False, True])
def test_ranks_read_block_by_block(broken: bool) -> None:
    """Blocks of 4 rows: a row that is not 1..n in a later block (row 4) stops the warning."""
    truth, _long, ranks, user_ids, item_ids = _ranks_case(broken)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        receval.evaluate_scores(
            truth,
            ranks,
            ["P@3"],
            user_ids=user_ids,
            item_ids=item_ids,
            device=TORCH_DEVICE,
            relevance_threshold=3,
            batch_size=4,
        )
    ranked = [w for w in caught if type(w.message).__name__ == "RanksAsScoresWarning"]
    assert len(ranked) == (0 if broken else 1)
