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


# --- one reader for Python and the command line ----------------------------------------------


def _cli_summary(args: list[str]) -> dict[str, float]:
    import json

    from click.testing import CliRunner

    from receval.cli import main

    result = CliRunner().invoke(main, ["evaluate", *args, "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["summary"]


def test_007_and_7_are_two_items_in_python_and_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("user,item\nu1,007\nu2,7\n")
    (tmp_path / "p.csv").write_text("user,item,score\nu1,7,0.9\nu1,007,0.5\nu2,7,0.3\n")
    # u1: 7 is not 007, so the relevant item is at rank 2; u2: 7 at rank 1
    expected = {"P@1": (0 + 1) / 2, "MRR": (1 / 2 + 1) / 2}
    t, p = tmp_path / "t.csv", tmp_path / "p.csv"
    assert receval.evaluate(t, str(p), ["P@1", "MRR"]).summary == expected
    assert _cli_summary(["-t", str(t), "-p", str(p), "-m", "P@1", "-m", "MRR"]) == expected


def test_file_ids_meet_the_other_side_as_the_command_line_reads_them(tmp_path: Path) -> None:
    """Integer ids of a file are compared as text with a side of string ids (both files, or a
    file and a frame), as ``receval evaluate`` does."""
    (tmp_path / "t.csv").write_text("user,item\n1,10\n2,20\n")
    (tmp_path / "p.csv").write_text("user,item,score\nu1,10,0.9\n2,20,0.8\n")
    both_files = receval.evaluate(tmp_path / "t.csv", tmp_path / "p.csv", ["P@1"])
    assert both_files.summary == {"P@1": 0.5}  # user 2 hits; user 1 is not "u1"
    frame = pd.DataFrame({"user": ["1", "2"], "item": ["10", "99"], "score": [0.9, 0.8]})
    assert receval.evaluate(tmp_path / "t.csv", frame, ["P@1"]).summary == {"P@1": 0.5}


def test_per_side_column_names_in_python_and_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("userId,movieId,r\n1,10,4\n1,11,2\n2,10,5\n")
    (tmp_path / "p.csv").write_text("user,item,prediction\n1,11,0.9\n1,10,0.5\n2,10,0.3\n")
    # relevant = r >= 3: user 1 {10} (at rank 2), user 2 {10} (at rank 1)
    expected = {"P@1": 0.5, "MRR": 0.75}
    t, p = tmp_path / "t.csv", tmp_path / "p.csv"
    got = receval.evaluate(t, p, ["P@1", "MRR"], relevance_threshold=3,
                           truth_columns={"user": "userId", "item": "movieId", "rating": "r"},
                           prediction_columns={"score": "prediction"})
    assert got.summary == expected
    frames = receval.evaluate(pd.read_csv(t), pd.read_csv(p), ["P@1", "MRR"],
                              relevance_threshold=3, rating_col="r", user_col="userId",
                              truth_columns={"item": "movieId"},
                              prediction_columns={"user": "user", "item": "item",
                                                  "score": "prediction"})
    assert frames.summary == expected
    assert _cli_summary(["-t", str(t), "-p", str(p), "-m", "P@1", "-m", "MRR",
                         "--relevance-threshold", "3",
                         "--truth-columns", "user=userId,item=movieId,rating=r",
                         "--prediction-columns", "score=prediction"]) == expected


def test_bom_and_blank_padded_headers_are_read_as_meant(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_bytes(b"\xef\xbb\xbfuser,item\r\nu1,i1\r\nu2,i2\r\n")
    (tmp_path / "p.csv").write_text("user, item, score\nu1,i1, 0.5\nu2,i9,0.25\n")
    assert receval.evaluate(tmp_path / "t.csv", tmp_path / "p.csv", ["P@1"]).summary == {
        "P@1": 0.5}


def test_a_200000_character_field_near_the_top_is_read(tmp_path: Path) -> None:
    long_id = "x" * 200_000
    (tmp_path / "t.csv").write_text(f"user,item\nu1,{long_id}\nu2,i2\n")
    (tmp_path / "p.csv").write_text(f"user,item,score\nu1,{long_id},0.5\nu2,i3,0.25\n")
    assert receval.evaluate(tmp_path / "t.csv", tmp_path / "p.csv", ["P@1"]).summary == {
        "P@1": 0.5}
    # the command line sniffs the delimiter with Python's csv module (field limit 131,072)
    assert _cli_summary(["-t", str(tmp_path / "t.csv"), "-p", str(tmp_path / "p.csv"),
                         "-m", "P@1"]) == {"P@1": 0.5}


def test_parquet_binary_and_exact_float_ids(tmp_path: Path) -> None:
    pq.write_table(pa.table({"user": pa.array([b"u1", b"u2"], pa.binary()),
                             "item": pa.array([1.0, 2.0])}), tmp_path / "t.parquet")
    (tmp_path / "p.csv").write_text("user,item,score\nu1,1,0.5\nu2,3,0.25\n")
    # binary user ids are UTF-8 text; float item ids 1.0, 2.0 are the integers 1, 2
    assert receval.evaluate(tmp_path / "t.parquet", tmp_path / "p.csv", ["P@1"]).summary == {
        "P@1": 0.5}
    assert _cli_summary(["-t", str(tmp_path / "t.parquet"), "-p", str(tmp_path / "p.csv"),
                         "-m", "P@1"]) == {"P@1": 0.5}


def test_string_ids_dropped_with_their_rows_are_not_users() -> None:
    """String ids are dictionary-encoded early; a user whose only row is dropped (missing
    rating) must vanish as it does with integer ids."""
    truth = pd.DataFrame({"user": [1, 1, 2, 3], "item": [1, 2, 1, 3],
                          "rating": [4.0, 1.0, 5.0, np.nan]})
    preds = pd.DataFrame({"user": [1, 2, 2], "item": [1, 3, 1], "score": [0.9, 0.8, 0.1]})
    as_text = {"user": lambda d: "u" + d["user"].astype(str),
               "item": lambda d: "i" + d["item"].astype(str)}
    ints = receval.evaluate(truth, preds, ["P@1"], relevance_threshold=3)
    texts = receval.evaluate(truth.assign(**as_text), preds.assign(**as_text), ["P@1"],
                             relevance_threshold=3)
    assert ints.counts["users"] == texts.counts["users"]
    assert ints.counts["users"]["in_truth"] == 2  # user 3's only row has no rating
    assert texts.summary == ints.summary == {"P@1": 0.5}
    assert list(texts.per_user["user"]) == ["u1", "u2"]
