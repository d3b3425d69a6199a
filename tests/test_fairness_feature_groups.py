"""Item groups read from ``item_features`` (no ``item_groups=``) mean what the item features
mean everywhere else (receval.beyond.frames.read_features): ``"a|b"`` is two categories, a
path and ``item_features_columns`` are read as for diversity; ``item_groups="column"`` of a
frame with other columns reads only that column unless a metric needs the features.

Both failed after the fairness merge: the groups were read by their own reader, which took
``"drama|comedy"`` as one group and refused a path, and every features frame was read whole.
"""

from __future__ import annotations

import pandas as pd
import pytest

import receval

try:
    from tests.reference import fairness as oracle
except ImportError:  # pragma: no cover - run from tests/
    from reference import fairness as oracle  # type: ignore[no-redef]

TRAIN = pd.DataFrame({"user": [1, 1, 2, 3, 3], "item": ["a", "b", "a", "c", "e"]})
TRUTH = pd.DataFrame({"user": [1, 2, 3], "item": ["c", "b", "b"]})
PREDS = pd.DataFrame({"user": [1, 1, 1, 2, 2, 3, 3],
                      "item": ["c", "d", "e", "b", "c", "b", "d"],
                      "score": [0.9, 0.8, 0.1, 0.7, 0.6, 0.9, 0.1]})
GENRES = {"a": ["drama"], "b": ["comedy"], "c": ["drama", "comedy"], "d": ["horror"], "e": []}
LISTS = {1: ["c", "d", "e"], 2: ["b", "c"], 3: ["b", "d"]}
NAMES = ["comedy", "drama", "horror"]


def _piped() -> pd.DataFrame:
    return pd.DataFrame({"item": list(GENRES), "genres": ["|".join(g) for g in GENRES.values()],
                         "year": [1990, 1991, 1992, 1993, 1994]})


def test_piped_categories_are_the_groups() -> None:
    frame = _piped()[["item", "genres"]]
    r = receval.evaluate(TRUTH, PREDS, ["AWRF@3", "calibration@3"], train=TRAIN,
                         item_features=frame)
    per = r.per_user.set_index("user")
    for u, ranked in LISTS.items():
        assert per.loc[u, "AWRF@3"] == pytest.approx(
            oracle.awrf(ranked, GENRES, NAMES, [1 / 3] * 3), abs=1e-12)
        history = list(TRAIN.item[TRAIN.user == u])
        assert per.loc[u, "calibration@3"] == pytest.approx(
            oracle.calibration(history, ranked, GENRES, NAMES), abs=1e-12)


def test_a_path_and_its_columns_give_the_groups(tmp_path) -> None:
    path = tmp_path / "items.csv"
    _piped().to_csv(path, index=False)
    want = receval.evaluate(TRUTH, PREDS, ["AWRF@3"], item_groups=GENRES).summary
    got = receval.evaluate(TRUTH, PREDS, ["AWRF@3"], item_features=str(path),
                           item_features_columns={"features": "genres"}).summary
    assert got == pytest.approx(want, abs=1e-12)


def test_a_group_column_leaves_the_others_unread_unless_needed() -> None:
    want = receval.evaluate(TRUTH, PREDS, ["AWRF@3"], item_groups=GENRES).summary
    frame = _piped().assign(genres=list(GENRES.values()))
    got = receval.evaluate(TRUTH, PREDS, ["AWRF@3"], item_features=frame,
                           item_groups="genres").summary
    assert got == pytest.approx(want, abs=1e-12)
    with pytest.raises(receval.ReceValError, match="item_features_columns") as err:
        receval.evaluate(TRUTH, PREDS, ["AWRF@3", "ILD@3"], item_features=frame,
                         item_groups="genres")
    assert "\n" not in str(err.value)


def test_an_embedding_is_no_groups() -> None:
    vectors = {item: [float(j), 1.0] for j, item in enumerate(GENRES)}
    with pytest.raises(receval.ReceValError, match="embedding") as err:
        receval.evaluate(TRUTH, PREDS, ["AWRF@3"], item_features=vectors)
    assert "\n" not in str(err.value)
