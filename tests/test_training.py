"""The training data in the picture (issue 13 part A): the leakage audit in
``Result.counts["train"]`` against hand-counted cases, ``exclude_train`` against a pandas
anti-join, the warnings and their silence codes, the strata, the score-matrix path, the command
line and bad input."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval import checks, training
from receval.cli import main
from receval.exceptions import ReceValError

# --- a hand-made case: every count of the audit written by hand ----------------------------------
#
# train pairs: (1,10) t=10  (1,11) t=20  (1,12) t=300  (2,10) t=5  (2,13) t=500  (3,10) t=1
# truth rows:  (1,10) t=100 (1,14) t=200 (2,11) t=400  (5,15) t=50 (5,10) t=60
# predictions: user 1: 10, 12, 14, 16   user 2: 11, 13, 10   user 5: 10, 15
#
# predictions_in_train: (1,10) (1,12) (2,13) (2,10) -> 4
# truth_in_train: (1,10) -> 1
# users_without_train: evaluated users 1, 2, 5 (users="truth"); 5 has no training row -> 1
# items_without_train: truth items 10, 14, 11, 15; 14 and 15 are in no training row -> 2
# train_after_test: user 1's first test row is t=100: (1,12) t=300 is later -> 1;
#   user 2's first test row is t=400: (2,13) t=500 -> 1; user 3 has no test row -> total 2
# train: rows 6, users 3 (1, 2, 3), items 4 (10, 11, 12, 13)

TRAIN = pd.DataFrame({"user": [1, 1, 1, 2, 2, 3], "item": [10, 11, 12, 10, 13, 10],
                      "timestamp": [10, 20, 300, 5, 500, 1]})
TRUTH = pd.DataFrame({"user": [1, 1, 2, 5, 5], "item": [10, 14, 11, 15, 10],
                      "timestamp": [100, 200, 400, 50, 60]})
PREDS = pd.DataFrame({"user": [1, 1, 1, 1, 2, 2, 2, 5, 5],
                      "item": [10, 12, 14, 16, 11, 13, 10, 10, 15],
                      "score": [0.9, 0.8, 0.7, 0.6, 0.9, 0.8, 0.7, 0.9, 0.8]})
HAND = {"rows": 6, "users": 3, "items": 4, "predictions_in_train": 4, "truth_in_train": 1,
        "users_without_train": 1, "items_without_train": 2, "train_after_test": 2}


def quiet(*args: object, **kwargs: object) -> receval.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(*args, **kwargs)  # type: ignore[arg-type]


def test_audit_counts_by_hand() -> None:
    r = quiet(TRUTH, PREDS, ["P@2"], train=TRAIN)
    assert r.counts["train"] == HAND
    assert r.options["exclude_train"] is False
    assert "predictions_excluded_train" not in r.counts["rows"]


def test_audit_without_timestamps_has_no_temporal_count() -> None:
    r = quiet(TRUTH.drop(columns="timestamp"), PREDS, ["P@2"], train=TRAIN)
    assert r.counts["train"] == {k: v for k, v in HAND.items() if k != "train_after_test"}
    r = quiet(TRUTH, PREDS, ["P@2"], train=TRAIN.drop(columns="timestamp"))
    assert "train_after_test" not in r.counts["train"]


def test_audit_with_string_ids_and_datetimes() -> None:
    def text(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(user="u" + frame["user"].astype(str),
                            item="i" + frame["item"].astype(str))

    stamp = {"timestamp": lambda f: pd.to_datetime(f["timestamp"], unit="D")}
    r = quiet(text(TRUTH).assign(**stamp), text(PREDS), ["P@2"],
              train=text(TRAIN).assign(**stamp))
    assert r.counts["train"] == HAND


def test_audit_counts_users_evaluated_by_the_users_option() -> None:
    # users="union": user 5 (no training) and no one else added; users="both" keeps 1, 2, 5
    truth = TRUTH[TRUTH["user"] != 5]
    r = quiet(truth, PREDS, ["P@2"], train=TRAIN, users="union")
    assert r.counts["train"]["users_without_train"] == 1  # user 5, only in the predictions
    r = quiet(truth, PREDS, ["P@2"], train=TRAIN, users="truth")
    assert r.counts["train"]["users_without_train"] == 0


def test_truth_rows_with_missing_rating_are_not_counted() -> None:
    truth = TRUTH.assign(rating=[5.0, np.nan, 4.0, 3.0, 4.0])
    r = quiet(truth, PREDS, ["P@2"], train=TRAIN)
    # (1,14) has no rating: item 14 leaves the truth, so only 15 is a cold truth item
    assert r.counts["train"]["items_without_train"] == 1
    assert r.counts["train"]["truth_in_train"] == 1


def test_train_column_names() -> None:
    train = TRAIN.rename(columns={"user": "uid", "item": "iid", "timestamp": "ts"})
    r = quiet(TRUTH, PREDS, ["P@2"], train=train,
              train_columns={"user": "uid", "item": "iid", "timestamp": "ts"})
    assert r.counts["train"] == HAND


def test_train_from_a_file_with_integer_ids_meets_string_ids(tmp_path: Path) -> None:
    path = tmp_path / "train.csv"
    TRAIN.to_csv(path, index=False)
    truth = TRUTH.astype({"user": str, "item": str})
    preds = PREDS.astype({"user": str, "item": str})
    r = quiet(truth, preds, ["P@2"], train=path)
    assert r.counts["train"] == HAND


def test_truth_file_timestamps(tmp_path: Path) -> None:
    TRUTH.to_csv(tmp_path / "test.csv", index=False)
    TRAIN.to_parquet(tmp_path / "train.parquet")
    r = quiet(tmp_path / "test.csv", PREDS, ["P@2"], train=tmp_path / "train.parquet")
    assert r.counts["train"] == HAND


# --- exclude_train -----------------------------------------------------------------------------


def anti_join(preds: pd.DataFrame, train: pd.DataFrame) -> pd.DataFrame:
    pairs = train[["user", "item"]].drop_duplicates()
    merged = preds.merge(pairs, on=["user", "item"], how="left", indicator=True)
    return merged[merged["_merge"] == "left_only"].drop(columns="_merge")


def test_exclude_train_by_hand() -> None:
    r = quiet(TRUTH, PREDS, ["P@1", "R@2"], train=TRAIN, exclude_train=True)
    # lists left: user 1: 14, 16 (truth 10, 14); user 2: 11 (truth 11); user 5: 10, 15 (both
    # in its truth, and not training pairs of user 5)
    assert r.summary == {"P@1": 1.0, "R@2": (1 / 2 + 1 + 1) / 3}
    rows = r.counts["rows"]
    assert rows["predictions"] == 9
    assert rows["predictions_excluded_train"] == 4
    assert rows["predictions_kept"] == 5
    assert r.options["exclude_train"] is True


def random_case(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n = 300
    train = pd.DataFrame({"user": rng.integers(0, 30, n), "item": rng.integers(0, 40, n)})
    truth = pd.DataFrame({"user": rng.integers(0, 35, 120), "item": rng.integers(0, 45, 120)})
    truth = truth.drop_duplicates(["user", "item"])
    preds = pd.DataFrame({"user": rng.integers(0, 35, 500), "item": rng.integers(0, 45, 500)})
    preds = preds.drop_duplicates(["user", "item"]).assign(
        score=lambda f: rng.random(len(f)).round(2))
    return train, truth, preds


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("users", ["truth", "union"])
def test_exclude_train_is_the_anti_join(seed: int, users: str) -> None:
    train, truth, preds = random_case(seed)
    metrics = ["P@5", "R@10", "MAP@10", "nDCG@10", "MRR"]
    got = quiet(truth, preds, metrics, train=train, exclude_train=True, users=users,
                ties="item")
    kept = anti_join(preds, train)
    want = quiet(truth, kept, metrics, users=users, ties="item")
    assert got.summary == want.summary
    pd.testing.assert_frame_equal(got.per_user, want.per_user)
    excluded = len(preds) - len(kept)
    rows = got.counts["rows"]
    assert rows["predictions_excluded_train"] == excluded
    assert got.counts["train"]["predictions_in_train"] == excluded
    # the rows invariant documented on Result, with the excluded rows
    parts = ("predictions_kept", "predictions_dropped_duplicates",
             "predictions_ignored_known_protocol", "predictions_below_score_threshold",
             "predictions_not_evaluated", "predictions_excluded_train")
    assert rows["predictions"] == len(preds) == sum(rows.get(p, 0) for p in parts)


def test_exclude_train_needs_train_and_a_prediction_left() -> None:
    with pytest.raises(ReceValError, match="exclude_train=True needs the training data"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], exclude_train=True)
    with pytest.raises(ReceValError, match="removes every one of the 9 prediction rows"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], train=PREDS, exclude_train=True)


def test_profile_groups_share_one_exclusion() -> None:
    # a profile with per-metric options evaluates several groups: the audit is written once
    r = quiet(TRUTH.assign(rating=[5, 4, 3, 5, 1]), PREDS, ["P@2", "nDCG@2"], train=TRAIN,
              exclude_train=True, profile="recommenders")
    assert r.counts["rows"]["predictions_excluded_train"] == 4
    assert r.counts["train"]["predictions_in_train"] == 4


# --- warnings ----------------------------------------------------------------------------------


def caught(**kwargs: object) -> dict[str, str]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        receval.evaluate(kwargs.pop("truth", TRUTH), kwargs.pop("preds", PREDS), ["P@2"],
                         **kwargs)  # type: ignore[arg-type]
    return {getattr(w.category, "code", ""): str(w.message) for w in got}


def test_warnings_name_the_option_and_can_be_silenced() -> None:
    got = caught(train=TRAIN)
    assert "exclude_train=True (--exclude-train)" in got["train-items"]
    assert got["train-items"].startswith("4 of 9 prediction rows (44%)")
    assert "is the truth the test set?" in got["train-overlap"]
    assert got["train-future"].startswith("2 of 6 training rows (33%)")
    quiet_codes = caught(train=TRAIN, silence=["train-items", "train-overlap", "train-future"])
    assert not {"train-items", "train-overlap", "train-future"} & set(quiet_codes)
    # excluded: nothing left to warn about the predictions
    assert "train-items" not in caught(train=TRAIN, exclude_train=True)


def test_warnings_only_above_one_percent() -> None:
    # 200 prediction rows, 2 in train (1%): no warning; 3 (1.5%): a warning
    users = np.repeat(np.arange(20), 10)
    preds = pd.DataFrame({"user": users, "item": np.tile(np.arange(100, 110), 20),
                          "score": np.tile(np.arange(10.0), 20)})
    truth = pd.DataFrame({"user": np.arange(20), "item": np.full(20, 100)})
    for n, warned in ((2, False), (3, True)):
        train = pd.DataFrame({"user": np.arange(n), "item": np.full(n, 101)})
        assert ("train-items" in caught(truth=truth, preds=preds, train=train)) is warned


def test_warning_codes_are_known_to_silence() -> None:
    assert {"train-items", "train-overlap", "train-future"} <= set(checks.WARNINGS)
    assert issubclass(checks.TrainItemsWarning, UserWarning)


# --- the score-matrix path ---------------------------------------------------------------------


def test_evaluate_scores_exclude_train_is_exclude() -> None:
    pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    scores = rng.random((6, 8))
    truth = {"user": [0, 0, 1, 2, 3, 5], "item": [1, 2, 3, 4, 0, 7]}
    train = pd.DataFrame({"user": [0, 0, 1, 4, 4, 9], "item": [3, 3, 0, 1, 2, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = receval.evaluate_scores(truth, scores, ["P@2", "nDCG@3"], train=train,
                                      exclude_train=True, device="cpu")
        want = receval.evaluate_scores(truth, scores, ["P@2", "nDCG@3"], exclude=train,
                                       device="cpu")
    assert got.summary == want.summary
    # cells of the 6x8 matrix that are training pairs, each once: (0,3) (1,0) (4,1) (4,2);
    # (9,1) is outside the matrix
    assert got.counts["train"]["predictions_in_train"] == 4
    assert got.counts["rows"]["predictions_excluded_train"] == 4
    assert got.counts["train"]["users_without_train"] == 3  # evaluated 0, 1, 2, 3, 5
    assert got.counts["train"]["truth_in_train"] == 0
    # both: the training pairs leave the cells outside exclude= (here none is left to leave)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both = receval.evaluate_scores(truth, scores, ["P@2", "nDCG@3"], train=train,
                                       exclude=train, exclude_train=True, device="cpu")
    assert both.summary == want.summary
    assert both.counts["train"]["predictions_in_train"] == 0


# --- strata ------------------------------------------------------------------------------------


def test_activity_groups_by_hand() -> None:
    # rows per user: a 1, b 2, c 3, d 3, e 8; quartile edges (inverted CDF over 5 users):
    # ceil(5/4)=2nd -> 2, ceil(10/4)=3rd -> 3, ceil(15/4)=4th -> 3, 5th -> 8
    train = {"user": list("abbcccddd") + ["e"] * 8, "item": range(17)}
    groups = training.activity_groups(train, 4)
    assert dict(groups.values.tolist()) == {
        "a": "Q1 (1-2 rows)", "b": "Q1 (1-2 rows)", "c": "Q2 (3 rows)", "d": "Q2 (3 rows)",
        "e": "Q4 (8 rows)"}
    with_users = training.activity_groups(train, 2, users=["e", "z", "a"])
    assert with_users.values.tolist() == [["e", "Q2 (8 rows)"], ["z", "none (0 rows)"],
                                          ["a", "Q1 (1 row)"]]


def test_cold_start_and_popularity_groups_by_hand() -> None:
    train = {"user": [1, 1, 1, 2, 3, 3], "item": ["x", "x", "y", "x", "z", "w"]}
    cold = training.cold_start_groups(train, [3, 1, 2, 4], n=2)
    assert cold.values.tolist() == [[3, "warm"], [1, "warm"], [2, "cold (<2)"],
                                    [4, "cold (<2)"]]
    # counts: x 3, y 1, z 1, w 1 (6 rows); half of the rows: x alone (3 >= 3)
    pop = training.popularity_groups(train, 0.5)
    assert dict(pop.values.tolist()) == {"w": "tail", "x": "head", "y": "tail", "z": "tail"}
    # 0.6 of 6 rows = 3.6: x and the next item (1 row) reach it; y, z, w tie with it: head
    pop = training.popularity_groups(train, 0.6)
    assert set(pop["group"]) == {"head"}
    truth = pd.DataFrame({"user": [1, 2, 2], "item": ["x", "y", "q"]})
    split = training.truth_by_items(truth, training.popularity_groups(train, 0.5))
    assert split["head"]["item"].tolist() == ["x"] and split["tail"]["item"].tolist() == ["y"]


# --- bad input ---------------------------------------------------------------------------------


def test_train_missing_column_names_the_side_and_column(tmp_path: Path) -> None:
    with pytest.raises(ReceValError, match=r"^train has no column 'item'; its columns are: "
                                           r"'user', 'movie' \(pass --train-columns item=NAME"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], train={"user": [1], "movie": [2]})
    path = tmp_path / "train.csv"
    pd.DataFrame({"uid": [1], "item": [2]}).to_csv(path, index=False)
    with pytest.raises(ReceValError, match=rf"^train file {path} has no column 'user'"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], train=path)
    with pytest.raises(ReceValError, match="train_columns has an unknown key 'score'"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], train=TRAIN, train_columns={"score": "s"})


def test_train_bad_values() -> None:
    with pytest.raises(ReceValError, match=r"train column 'user' holds a missing id at row 1"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], train={"user": [1.0, np.nan], "item": [1, 2]})
    with pytest.raises(ReceValError, match=r"train column 'timestamp' holds 'soon' at row 1 "
                                           r"\(1 bad row in all\); timestamps must be"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], train=pd.DataFrame(
            {"user": [1, 2], "item": [1, 2], "timestamp": [1, "soon"]}))
    with pytest.raises(ReceValError, match="user ids of mismatched types: train has strings"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], train={"user": ["1"], "item": [1]})


# --- the command line --------------------------------------------------------------------------


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"truth": tmp_path / "test.csv", "preds": tmp_path / "run.csv",
             "train": tmp_path / "train.csv"}
    TRUTH.to_csv(paths["truth"], index=False)
    PREDS.to_csv(paths["preds"], index=False)
    TRAIN.rename(columns={"timestamp": "ts"}).to_csv(paths["train"], index=False)
    return paths


def cli(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_cli_train_audit_and_exclusion(files: dict[str, Path]) -> None:
    base = ["evaluate", "-t", files["truth"], "-p", files["preds"], "-m", "P@1", "-m", "R@2",
            "--train", files["train"], "--train-columns", "timestamp=ts"]
    code, out, err = cli(*base, "-f", "json")
    assert code == 0, err
    data = json.loads(out)
    # the truth file's own timestamp column is read for the temporal count
    assert data["counts"]["train"] == HAND
    assert "--exclude-train" in err and "train-overlap" in err
    code, out, err = cli(*base, "--exclude-train", "-f", "json", "--silence", "train-overlap",
                         "--silence", "train-future")
    assert code == 0, err
    data = json.loads(out)
    assert data["summary"] == {"P@1": 1.0, "R@2": (1 / 2 + 1 + 1) / 3}
    assert data["counts"]["rows"]["predictions_excluded_train"] == 4
    assert err == ""
    code, out, err = cli(*base, "--exclude-train")
    assert code == 0, err
    assert ("train audit: 6 rows, 3 users, 4 items; predictions in train 4 (44% of 9), truth "
            "in train 1, users without train 1, items without train 2, train after test 2, "
            "excluded from the lists 4 (exclude_train)") in " ".join(out.split())


def test_cli_train_errors(files: dict[str, Path]) -> None:
    base = ["evaluate", "-t", files["truth"], "-p", files["preds"], "-m", "P@1"]
    code, _, err = cli(*base, "--exclude-train")
    assert code == 2 and err == "error: --exclude-train needs the training data: pass --train " \
                                "FILE\n"
    code, _, err = cli(*base, "--train", files["train"], "--train-columns", "user=uid")
    assert code == 2
    assert err.startswith(f"error: train file {files['train']} has no column 'uid'")
    assert len(err.splitlines()) == 1
    code, _, err = cli(*base, "--train", files["train"], "--train-columns", "uid")
    assert code == 2 and "--train-columns takes ROLE=NAME pairs" in err


def test_cli_compare_takes_train(files: dict[str, Path], tmp_path: Path) -> None:
    other = tmp_path / "other.csv"
    PREDS.assign(score=-PREDS["score"]).to_csv(other, index=False)
    code, out, err = cli("compare", "-t", files["truth"], "-p", files["preds"], "-p", other,
                         "-m", "P@1", "--train", files["train"], "--exclude-train", "-f", "json",
                         "--silence", "train-overlap", "--silence", "ties")
    assert code == 0, err
    (row,) = json.loads(out)["rows"]
    # run.csv after exclusion: P@1 = 1 (test_exclude_train_by_hand); other.csv reversed:
    # user 1: 16 then 14 -> 0, user 2: 11 -> 1, user 5: 15 then 10 -> 1
    means = {row["model"]: row["mean"], row["baseline"]: row["baseline_mean"]}
    assert means == {"run": 1.0, "other": 2 / 3}


def test_resolve_strata_names() -> None:
    groups = training.resolve_strata("activity", TRAIN, [1, 2, 5])
    # rows per user: 1 -> 3, 2 -> 2; inverted-CDF quartiles of (2, 3): 0.25 -> 2, 0.5 -> 2
    # (F(2) = 0.5), 0.75 -> 3, 1 -> 3: 2 rows is Q1, 3 rows first fits under Q3's edge
    assert groups.to_dict() == {1: "Q3 (3 rows)", 2: "Q1 (2 rows)", 5: "none (0 rows)"}
    frame = pd.DataFrame({"user": [1], "group": ["g"]})
    assert training.resolve_strata(frame, None, [1]) is frame


def test_spark_engine_refuses_named_strata_rather_than_ignore_them() -> None:
    # train= itself runs on Spark (tests/test_spark_doors.py); a stratum built from it by name
    # is the local plan's
    with pytest.raises(ReceValError, match=r"^strata='activity' is built from train= by the "
                       r"local plan; on Spark pass the user -> group mapping"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], train=TRAIN, engine="spark", strata="activity")


def test_strata_match_users_across_id_types(tmp_path: Path) -> None:
    # a training file's integer ids meet the evaluation's text ids (as in evaluate)
    path = tmp_path / "train.csv"
    pd.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3]}).to_csv(path, index=False)
    cold = training.cold_start_groups(path, ["1", "2", "3"], n=2)
    assert cold.values.tolist() == [["1", "warm"], ["2", "cold (<2)"], ["3", "cold (<2)"]]


def test_evaluate_resolves_builtin_strata_names() -> None:
    # training rows: user 1 -> 3, user 2 -> 2, user 5 -> 0 (evaluated users 1, 2, 5)
    # per user (no exclusion): P@1 1, 1, 1; R@2: 1 -> 1/2 (10, 12 vs 10, 14), 2 -> 1, 5 -> 1
    r = quiet(TRUTH, PREDS, ["P@1", "R@2"], train=TRAIN, strata="cold:3")
    assert r.strata[["group", "users", "P@1", "R@2"]].values.tolist() == [
        ["cold (<3)", 2, 1.0, 1.0], ["warm", 1, 1.0, 0.5]]
    r = quiet(TRUTH, PREDS, ["R@2"], train=TRAIN, strata="activity")
    assert dict(zip(r.strata["group"], r.strata["R@2"], strict=True)) == {
        "Q1 (2 rows)": 1.0, "Q3 (3 rows)": 0.5, "none (0 rows)": 1.0}
    # with the evaluation's own column names
    renamed = {"user": "uid", "item": "iid"}
    r = quiet(TRUTH.rename(columns=renamed), PREDS.rename(columns=renamed), ["R@2"],
              train=TRAIN.rename(columns=renamed), strata="cold:3", user_col="uid",
              item_col="iid")
    assert r.strata["R@2"].tolist() == [1.0, 0.5]
    with pytest.raises(ReceValError, match="strata='cold' groups users by their training data"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], strata="cold")
    with pytest.raises(ReceValError, match="strata='colder' is not a built-in stratum"):
        receval.evaluate(TRUTH, PREDS, ["P@1"], train=TRAIN, strata="colder")


def test_cli_files_without_header(tmp_path: Path) -> None:
    # no header: user, item, rating, timestamp (MovieLens' order) on both files
    TRUTH.assign(rating=4.0)[["user", "item", "rating", "timestamp"]].to_csv(
        tmp_path / "test.csv", index=False, header=False)
    TRAIN.assign(rating=4.0)[["user", "item", "rating", "timestamp"]].to_csv(
        tmp_path / "train.csv", index=False, header=False)
    PREDS.to_csv(tmp_path / "run.csv", index=False, header=False)
    code, out, err = cli("evaluate", "-t", tmp_path / "test.csv", "-p", tmp_path / "run.csv",
                         "--train", tmp_path / "train.csv", "--no-header", "-m", "P@1",
                         "-f", "json", "--relevance-threshold", "4")
    assert code == 0, err
    assert json.loads(out)["counts"]["train"] == HAND
