"""Every input form gives the same numbers: pandas, polars, Arrow, dicts, CSV, Parquet."""

from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import receval

METRICS = ["P@3", "R@3", "AP@5", "nDCG@5", "MRR", "Hit@2", "Rprec", "RMSE"]


@pytest.fixture
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(1)
    n_users, n_items = 30, 25
    t_users = np.repeat(np.arange(n_users), 6)
    t_items = np.concatenate([rng.choice(n_items, 6, replace=False) for _ in range(n_users)])
    truth = pd.DataFrame({"user": t_users, "item": t_items,
                          "rating": rng.integers(1, 6, len(t_users)).astype(float)})
    p_users = np.repeat(np.arange(n_users + 2), 8)  # two users only in the predictions
    p_items = np.concatenate([rng.choice(n_items, 8, replace=False) for _ in range(n_users + 2)])
    preds = pd.DataFrame({"user": p_users, "item": p_items,
                          "score": rng.random(len(p_users)).round(3)})
    return truth, preds.sample(frac=1.0, random_state=4).reset_index(drop=True)


def _summary(truth: object, preds: object, **kw: object) -> dict[str, float]:
    return receval.evaluate(truth, preds, METRICS, relevance_threshold=3, **kw).summary


def test_frames_arrow_dicts_agree(tables: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    truth, preds = tables
    expected = _summary(truth, preds)
    assert _summary(pl.from_pandas(truth), pl.from_pandas(preds)) == expected
    assert _summary(pl.from_pandas(truth).lazy(), pl.from_pandas(preds).lazy()) == expected
    assert _summary(pa.Table.from_pandas(truth), pa.Table.from_pandas(preds)) == expected
    assert _summary(truth.to_dict("list"), preds.to_dict("list")) == expected


def test_files_agree(tables: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path) -> None:
    truth, preds = tables
    expected = _summary(truth, preds)
    truth.to_csv(tmp_path / "t.csv", index=False)
    preds.to_csv(tmp_path / "p.tsv", index=False, sep="\t")
    assert _summary(tmp_path / "t.csv", str(tmp_path / "p.tsv")) == pytest.approx(expected)
    pq.write_table(pa.Table.from_pandas(truth), tmp_path / "t.parquet")
    pq.write_table(pa.Table.from_pandas(preds), tmp_path / "p.parquet")
    assert _summary(tmp_path / "t.parquet", tmp_path / "p.parquet") == expected


def test_string_ids_give_the_same_numbers(tables: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    truth, preds = tables
    expected = _summary(truth, preds, ties="average")
    as_str = {"user": lambda d: "u" + d["user"].astype(str),
              "item": lambda d: "i" + d["item"].astype(str)}
    got = _summary(truth.assign(**as_str), preds.assign(**as_str), ties="average")
    assert got == pytest.approx(expected, abs=1e-12)  # users sum in another order


def test_column_names_rank_column_and_implicit_truth(
    tables: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    truth, preds = tables
    renamed = receval.evaluate(
        truth.rename(columns={"user": "uid", "item": "iid", "rating": "stars"}),
        preds.rename(columns={"user": "uid", "item": "iid", "score": "pred"}),
        ["P@3", "nDCG@5"], user_col="uid", item_col="iid", rating_col="stars", score_col="pred",
    )
    plain = receval.evaluate(truth, preds, ["P@3", "nDCG@5"])
    assert renamed.summary == plain.summary
    # a rank column (1 = best) stands in for a missing score column
    ranked = preds.sort_values(["user", "score"], ascending=[True, False])
    ranked = ranked.assign(rank=ranked.groupby("user").cumcount() + 1).drop(columns="score")
    assert receval.evaluate(truth, ranked, ["P@3", "nDCG@5"]).summary == plain.summary
    # implicit truth: no rating column, every row relevant
    assert receval.evaluate(truth.drop(columns="rating"), preds, ["P@3"]).summary == {
        "P@3": plain.summary["P@3"]
    }
    with pytest.raises(ValueError, match="truth has no column 'rating'"):
        receval.evaluate(truth.drop(columns="rating"), preds, ["P@3"], relevance_threshold=3)


def test_user_sets_are_counted(tables: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    truth, preds = tables
    result = receval.evaluate(truth, preds, ["P@3"], users="truth")
    users = result.counts["users"]
    assert users["in_truth"] == 30 and users["in_predictions"] == 32
    assert users["only_in_predictions"] == 2 and users["evaluated"] == 30
    assert len(result.per_user) == 30
    union = receval.evaluate(truth, preds, ["P@3"], users="union")
    assert union.counts["users"]["evaluated"] == 32
    # the two extra users have no relevant item: P@3 = 0 for them
    assert union.summary["P@3"] == pytest.approx(result.summary["P@3"] * 30 / 32)
