"""The main job: `receval demo` shows the whole offline workflow (data, split and its leakage
audit, a popularity floor and a model, evaluation with the training items excluded, a paired
comparison), its numbers are seeded and hang together, and its hint's commands run."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from receval.baselines import most_popular
from receval.cli import main
from receval.cli.demo_command import NEXT_COMMANDS, SECTIONS
from receval.demo import (
    ALPHA,
    COMPARED,
    DemoRun,
    item_item,
    make_ratings,
    metric_names,
    run_demo,
)
from receval.split import temporal_user


def _flat(text: str) -> str:
    """The text with every run of whitespace as one space (rich wraps at the width)."""
    return " ".join(text.split())


@pytest.fixture(scope="module")
def demo_run() -> DemoRun:
    return run_demo()


@pytest.fixture(scope="module")
def demo_output() -> str:
    out = CliRunner().invoke(main, ["demo"])
    assert out.exit_code == 0, out.output
    return out.output


def test_the_ratings_are_seeded_skewed_and_well_formed() -> None:
    a = make_ratings(300, 200, seed=3)
    assert a.equals(make_ratings(300, 200, seed=3))
    assert not a.equals(make_ratings(300, 200, seed=4))
    assert list(a.columns) == ["user", "item", "rating", "timestamp"]
    assert a["rating"].isin([1, 2, 3, 4, 5]).all()
    assert not a.duplicated(["user", "item"]).any()
    per_user = a.groupby("user").size()
    assert per_user.min() >= 15 and per_user.max() <= 119
    # popularity skew at the demo's size: the 10% most frequent items hold about a third of
    # the rows (MovieLens 100K: about 40%), the most frequent item 10x the median one
    counts = make_ratings(seed=3)["item"].value_counts().to_numpy()
    assert counts[: len(counts) // 10].sum() > 0.3 * counts.sum()
    assert counts[0] > 10 * np.median(counts)


def test_item_item_matches_a_direct_count() -> None:
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"user": rng.integers(0, 12, 80), "item": rng.integers(0, 15, 80)})
    train = train.drop_duplicates().reset_index(drop=True)
    users = [3, 0, 7]
    got = item_item(train, users, k=3)
    items_of = train.groupby("user")["item"].apply(set).to_dict()
    users_of = train.groupby("item")["user"].apply(set).to_dict()
    for u in users:
        # score(u, j) = sum over u's items i != j of |users(i) & users(j)| / n_j ** alpha
        scores = {j: sum(len(users_of[i] & users_of[j]) for i in items_of[u] if i != j)
                  / len(users_of[j]) ** ALPHA for j in users_of}
        want = sorted(scores, key=lambda j: (-scores[j], j))[: 3 + len(items_of[u])]
        mine = got[got["user"] == u]
        assert mine["item"].tolist() == want
        assert np.allclose(mine["score"], [scores[j] for j in want], rtol=1e-12, atol=0)
    assert got["user"].drop_duplicates().tolist() == users


def test_the_demo_numbers_are_the_same_for_a_seed() -> None:
    a, b = run_demo(seed=3, n_users=400, n_items=300), run_demo(seed=3, n_users=400, n_items=300)
    for name in a.results:
        assert a.results[name].summary == b.results[name].summary
        assert a.results[name].per_user.equals(b.results[name].per_user)
    assert a.comparison.table.equals(b.comparison.table)
    c = run_demo(seed=4, n_users=400, n_items=300)
    assert c.results["item-item"].summary != a.results["item-item"].summary


@pytest.mark.parametrize("seed", [1, 2])
def test_the_model_beats_popularity_at_small_sizes(seed: int) -> None:
    run = run_demo(seed=seed, n_users=400, n_items=300)
    table = run.comparison.table
    assert (table["ci_low"] > 0).all() and (table["p_adjusted"] < 0.05).all()


def test_the_model_beats_popularity_in_the_demo(demo_run: DemoRun) -> None:
    table = demo_run.comparison.table
    assert table["metric"].tolist() == list(COMPARED)
    assert (table["model"] == "item-item").all() and (table["baseline"] == "popular").all()
    assert (table["ci_low"] > 0).all() and (table["p_adjusted"] < 0.05).all()
    assert (table["wins"] > table["losses"]).all()
    model, kept = demo_run.results["item-item"], demo_run.results["item-item, training items kept"]
    for name in metric_names():
        assert 0.0 <= demo_run.results["popular"].summary[name] < model.summary[name] <= 1.0
        # the training items, left in, take places a held-out item could have had
        assert kept.summary[name] < model.summary[name]


def _hand_precision_recall(lists: pd.DataFrame, train: pd.DataFrame, test: pd.DataFrame,
                           k: int) -> tuple[float, float]:
    """P@k and R@k with the training items removed, counted directly (users: the test's)."""
    seen = set(zip(train["user"], train["item"], strict=True))
    relevant = test[test["rating"] >= 4].groupby("user")["item"].apply(set).to_dict()
    p, r = [], []
    for user, group in lists.groupby("user", sort=True):
        top = [i for i in group["item"] if (user, i) not in seen][:k]
        hits = len(set(top) & relevant.get(user, set()))
        p.append(hits / k)
        r.append(hits / len(relevant[user]) if user in relevant else 0.0)
    assert len(p) == test["user"].nunique()
    return float(np.mean(p)), float(np.mean(r))


def test_the_demo_metrics_match_a_direct_count(demo_run: DemoRun) -> None:
    train, test = demo_run.split.train, demo_run.split.test
    users = np.sort(test["user"].unique())
    # the floor as the demo says it is built, and the model's lists as given
    floor = most_popular(train, users, 10)
    for name, lists in (("popular", floor), ("item-item", demo_run.predictions["item-item"])):
        p, r = _hand_precision_recall(lists, train, test, 10)
        summary = demo_run.results[name].summary
        assert summary["P@10"] == pytest.approx(p, abs=1e-12)
        assert summary["R@10"] == pytest.approx(r, abs=1e-12)


def test_the_printed_audit_is_the_splits_audit(demo_output: str) -> None:
    # recomputed here from the seeded log, not taken from the demo
    split = temporal_user(make_ratings(seed=7), test_fraction=0.2, seed=7)
    flat = _flat(demo_output)
    for line in split.lines():
        assert _flat(line) in flat
    moved = split.audit["time"]["train_after_test_start"]
    assert moved > 0 and f"{moved:,} training rows are dated after the first test row" in flat


def test_the_printed_train_audit_counts_the_training_items(demo_run: DemoRun,
                                                          demo_output: str) -> None:
    lists, train = demo_run.predictions["item-item"], demo_run.split.train
    in_train = lists.merge(train[["user", "item"]], on=["user", "item"]).shape[0]
    assert in_train > 0
    assert (f"Train audit: {in_train:,} of {len(lists):,} item-item rows are the user's "
            f"training items ({in_train:,} removed by exclude_train)") in _flat(demo_output)


def test_the_demo_prints_every_section_in_order(demo_run: DemoRun, demo_output: str) -> None:
    flat = _flat(demo_output)
    places = [flat.index(f"{section}") for section in SECTIONS]
    assert places == sorted(places)
    for text in ("P@5", "nDCG@10", "Hit@10", "popular", "item-item",
                 "item-item, training items kept", "better/tied/worse", "Holm",
                 "--relevance-threshold 4", *NEXT_COMMANDS):
        assert text in flat, text
    for row in demo_run.comparison.table.itertuples(index=False):
        assert f"{row.metric} │ {row.delta:+.4f} │ [{row.ci_low:+.4f}, {row.ci_high:+.4f}]" in flat
    model = demo_run.results["item-item"].summary
    assert f"nDCG@10 │ {demo_run.results['popular'].summary['nDCG@10']:.4f} │ " \
           f"{model['nDCG@10']:.4f} │" in flat


def test_the_demo_seed_option_changes_the_data() -> None:
    out = CliRunner().invoke(main, ["demo", "--seed", "3"])
    assert out.exit_code == 0, out.output
    assert "receval demo (seed 3)" in out.output
    split = temporal_user(make_ratings(seed=3), test_fraction=0.2, seed=3)
    assert _flat(split.lines()[1]) in _flat(out.output)


def test_the_hint_commands_run_on_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    make_ratings(150, 120, seed=5).to_csv("ratings.csv", index=False)
    runner = CliRunner()
    for command in NEXT_COMMANDS:
        if command.startswith("receval evaluate"):  # the split exists: write the two models
            train, test = pd.read_csv("train.csv"), pd.read_csv("test.csv")
            users = sorted(test["user"].unique())
            item_item(train, users, 10).to_csv("run.csv", index=False)
            most_popular(train, users, k=10).to_csv("popular.csv", index=False)
        argv = command.split()
        assert argv[0] == "receval"
        out = runner.invoke(main, argv[1:])
        assert out.exit_code == 0, (command, out.output)
    assert "nDCG@10" in out.output and "popular" in out.output


def test_every_pair_of_models_is_evaluated_on_the_same_users(demo_run: DemoRun) -> None:
    for a, b in itertools.combinations(demo_run.results.values(), 2):
        assert a.per_user["user"].equals(b.per_user["user"])
