"""receval.baselines: the most-popular and random floors, each against an independent oracle
(a brute-force pandas ranking, the anti-join of the training pairs), determinism and bad
input."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import receval
from receval import baselines
from receval.exceptions import ReceValError


def random_train(seed: int, n: int = 400, users: int = 40, items: int = 30,
                 text: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"user": rng.integers(0, users, n), "item": rng.integers(0, items, n)})
    if text:
        frame = frame.assign(user="u" + frame["user"].astype(str),
                             item="i" + frame["item"].astype(str).str.zfill(2))
    return frame


def popular_oracle(train: pd.DataFrame, users: list, k: int) -> pd.DataFrame:
    """For each user: every training item, ordered by (-rows, item id), minus the user's own,
    the first k; score: rows + (n - j) / 2**b, j the item's place in id order, 2**b > n."""
    counts = train["item"].value_counts()
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ids = sorted(counts.index)
    scale = 1
    while scale <= len(ids):
        scale *= 2
    rows = []
    for user in users:
        own = set(train.loc[train["user"] == user, "item"])
        picked = [(item, n) for item, n in order if item not in own][:k]
        rows += [(user, item, n + (len(ids) - ids.index(item)) / scale) for item, n in picked]
    return pd.DataFrame(rows, columns=["user", "item", "score"])


def test_most_popular_by_hand() -> None:
    # rows per item: 10 -> 3, 11 -> 2, 12 -> 2, 13 -> 1; ties (11, 12) by id
    train = {"user": [1, 1, 2, 3, 3, 3, 2, 4], "item": [10, 11, 10, 10, 12, 11, 12, 13]}
    got = baselines.most_popular(train, [1, 5, 3], k=2)
    # score: rows + (4 - place in id order) / 8, so no two items tie
    assert got.values.tolist() == [[1, 12, 2.25], [1, 13, 1.125],  # 1 has 10 and 11
                                   [5, 10, 3.5], [5, 11, 2.375],   # 5 is cold: the catalogue
                                   [3, 13, 1.125]]                 # 3 has 10, 11, 12: one left
    assert got.columns.tolist() == ["user", "item", "score"]


def test_most_popular_scores_never_tie_so_the_default_evaluate_does_not_warn() -> None:
    """Issue 19.6: every item of this training data has 2 rows; the default ties='stable'
    warned that tied scores straddle the cutoff. The tie-break is in the score now."""
    train = pd.DataFrame({"user": np.repeat(np.arange(20), 2),
                          "item": np.tile(np.arange(20), 2)})
    users = list(range(20, 30))  # cold: each gets the whole ranking
    floor = baselines.most_popular(train, users, k=10)
    assert floor.groupby("user")["score"].nunique().eq(10).all()
    assert floor[floor["user"] == 20]["item"].tolist() == list(range(10))
    truth = pd.DataFrame({"user": users, "item": list(range(10))})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = receval.evaluate(truth, floor, ["P@5", "nDCG@10"])
    assert result.summary["P@5"] == 0.1  # user u's item u - 20 is in the top 5 for u < 25


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("text", [False, True])
def test_most_popular_matches_the_oracle(seed: int, text: bool) -> None:
    train = random_train(seed, text=text)
    users = list(pd.unique(train["user"]))[:25]
    users = users + (["cold"] if text else [999])
    got = baselines.most_popular(train, users, k=7)
    want = popular_oracle(train, users, 7)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_most_popular_is_independent_of_row_order_and_names_columns() -> None:
    train = random_train(4)
    shuffled = train.sample(frac=1.0, random_state=1)
    users = [3, 1, 2]
    pd.testing.assert_frame_equal(baselines.most_popular(train, users, 5),
                                  baselines.most_popular(shuffled, users, 5))
    named = baselines.most_popular(train.rename(columns={"user": "uid", "item": "iid"}), users,
                                   5, user_col="uid", item_col="iid")
    assert named.columns.tolist() == ["uid", "iid", "score"]


def test_most_popular_equals_a_full_popularity_list_with_exclude_train() -> None:
    # a naive popularity model lists the whole catalogue for everyone; evaluate's
    # exclude_train must then give the baseline's numbers exactly
    train = random_train(7)
    rng = np.random.default_rng(7)
    truth = pd.DataFrame({"user": rng.integers(0, 40, 150), "item": rng.integers(0, 30, 150)})
    truth = truth.drop_duplicates()
    users = list(pd.unique(truth["user"]))
    counts = train["item"].value_counts()
    catalogue = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    naive = pd.DataFrame([(u, i, n) for u in users for i, n in catalogue],
                         columns=["user", "item", "score"])
    metrics = ["P@5", "R@10", "nDCG@10", "MAP@10"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        excluded = receval.evaluate(truth, naive, metrics, train=train, exclude_train=True,
                                    ties="item_ascending")
        floor = receval.evaluate(truth, baselines.most_popular(train, users, 10), metrics)
    assert excluded.summary == floor.summary


def test_random_excludes_own_items_and_is_uniform() -> None:
    train = random_train(3)
    users = list(range(45))  # 40..44 are cold
    got = baselines.random(train, users, k=6, seed=11)
    pairs = set(zip(train["user"], train["item"], strict=True))
    assert not any((u, i) in pairs for u, i in zip(got["user"], got["item"], strict=True))
    assert not got.duplicated(["user", "item"]).any()
    catalogue = set(train["item"])
    assert set(got["item"]) <= catalogue
    for user, rows in got.groupby("user"):
        own = {i for u, i in pairs if u == user}
        assert len(rows) == min(6, len(catalogue - own))
        assert rows["score"].tolist() == [6.0, 5.0, 4.0, 3.0, 2.0, 1.0][: len(rows)]
    # uniform: 2,000 draws of 3 of 10 items for a cold user; each item expected 600 times
    small = pd.DataFrame({"user": [0] * 10, "item": range(10)})
    drawn = pd.concat([baselines.random(small, [1], k=3, seed=s) for s in range(2000)])
    share = drawn["item"].value_counts() / 2000
    assert share.between(0.3 - 0.04, 0.3 + 0.04).all() and len(share) == 10


def test_random_is_seeded_per_user() -> None:
    train = random_train(5, text=True)
    a = baselines.random(train, ["u1", "u2", "u3"], k=4, seed=3)
    b = baselines.random(train.sample(frac=1.0, random_state=2), ["u3", "u2"], k=4, seed=3)
    by_user = lambda f: {u: r["item"].tolist() for u, r in f.groupby("user")}  # noqa: E731
    assert by_user(b) == {u: v for u, v in by_user(a).items() if u in ("u2", "u3")}
    c = baselines.random(train, ["u1", "u2", "u3"], k=4, seed=4)
    assert by_user(c) != by_user(a)
    pd.testing.assert_frame_equal(a, baselines.random(train, ["u1", "u2", "u3"], k=4, seed=3))


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_bad_k(k: object) -> None:
    train = {"user": [1], "item": [1]}
    with pytest.raises(ReceValError, match="k must be a positive integer"):
        baselines.most_popular(train, [1], k)  # type: ignore[arg-type]
    with pytest.raises(ReceValError, match="k must be a positive integer"):
        baselines.random(train, [1], k)  # type: ignore[arg-type]


def test_bad_train_and_users() -> None:
    with pytest.raises(ReceValError, match=r"^train has no column 'item'"):
        baselines.most_popular({"user": [1], "movie": [1]}, [1], 3)
    with pytest.raises(ReceValError, match="users is empty"):
        baselines.random({"user": [1], "item": [1]}, [], 3)


def test_reachable_from_receval() -> None:
    assert receval.baselines.most_popular is baselines.most_popular
