"""receval.split: invariants, determinism, hand-made audits, and the ``receval split`` CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from receval import split as sp
from receval.cli import main
from receval.exceptions import ReceValError


def ratings(n_users: int = 30, seed: int = 0, ties: bool = True) -> pd.DataFrame:
    """Synthetic interactions with a rating, integer timestamps (some tied) and repeats."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_users):
        n = int(rng.integers(1, 12))
        for _ in range(n):
            t = int(rng.integers(0, 40 if ties else 10**9))
            rows.append((u, int(rng.integers(0, 25)), float(rng.integers(1, 6)), t))
    return pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])


def keys(frame: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, frame[["user", "item", "rating", "timestamp"]].to_numpy().tolist()))


def shuffled(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


SPLITTERS = {
    "random": lambda d, **kw: sp.random_holdout(d, test_fraction=0.3, **kw),
    "random-count": lambda d, **kw: sp.random_holdout(d, test_count=2, **kw),
    "temporal": lambda d, **kw: sp.temporal_user(d, test_fraction=0.3, **kw),
    "temporal-test-ties": lambda d, **kw: sp.temporal_user(d, test_count=2, ties="test", **kw),
    "leave-last": lambda d, **kw: sp.leave_last_out(d, 2, **kw),
    "global": lambda d, **kw: sp.temporal_global(d, test_fraction=0.2,
                                                 validation_fraction=0.1),
    "kfold": lambda d, **kw: sp.kfold_users(d, 3, test_fraction=0.5, **kw)[1],
}


@pytest.mark.parametrize("name", sorted(SPLITTERS))
def test_no_row_lost_or_duplicated(name: str) -> None:
    data = ratings()
    s = SPLITTERS[name](data)
    parts = [s.train, s.test] + ([s.validation] if s.validation is not None else [])
    together = pd.concat(parts)
    # the input's index travels with the rows: every input row exactly once
    assert sorted(together.index) == list(range(len(data)))
    assert keys(together) == keys(data)
    assert s.audit["rows"]["lost"] == 0 and s.audit["rows"]["duplicated"] == 0
    assert s.audit["rows"]["input"] == len(data) == sum(len(p) for p in parts)


@pytest.mark.parametrize("name", sorted(SPLITTERS))
def test_same_rows_shuffled_give_the_same_split(name: str) -> None:
    data = ratings()
    a = SPLITTERS[name](data, **({} if name == "global" else {"seed": 3}))
    for seed in (1, 2):
        b = SPLITTERS[name](shuffled(data, seed), **({} if name == "global" else {"seed": 3}))
        assert keys(a.test) == keys(b.test)
        assert keys(a.train) == keys(b.train)
        assert a.audit == b.audit


def test_exact_repeats_shuffled_give_the_same_split() -> None:
    # rows equal in user, item and time but not in rating: the occurrence key orders them
    data = pd.DataFrame({"user": [1] * 6, "item": [5, 5, 5, 6, 6, 7],
                         "rating": [1.0, 2.0, 3.0, 4.0, 5.0, 1.0], "timestamp": [0] * 6})
    first = sp.random_holdout(data, test_count=3, seed=0)
    for seed in range(5):
        other = sp.random_holdout(shuffled(data, seed), test_count=3, seed=0)
        assert keys(other.test) == keys(first.test)


def test_another_seed_gives_another_split_and_the_same_seed_the_same() -> None:
    data = ratings(60)
    a = sp.random_holdout(data, test_fraction=0.5, seed=0)
    assert keys(sp.random_holdout(data, test_fraction=0.5, seed=0).test) == keys(a.test)
    assert keys(sp.random_holdout(data, test_fraction=0.5, seed=1).test) != keys(a.test)


def test_a_users_split_does_not_depend_on_the_other_users() -> None:
    data = ratings(40)
    full = sp.random_holdout(data, test_fraction=0.4, seed=5)
    half = sp.random_holdout(data[data.user < 20], test_fraction=0.4, seed=5)
    assert keys(full.test[full.test.user < 20]) == keys(half.test)


def test_per_user_counts_round_half_up_and_keep_min_train() -> None:
    # users with 1..6 rows, fraction 0.25: floor(0.25 n + 0.5) = 0,1,1,1,1,2; at most n - 1
    data = pd.DataFrame({"user": np.repeat(np.arange(1, 7), np.arange(1, 7)),
                         "item": np.arange(21)})
    s = sp.random_holdout(data, test_fraction=0.25)
    held = s.test.groupby("user").size().reindex(range(1, 7), fill_value=0).tolist()
    assert held == [0, 1, 1, 1, 1, 2]
    assert s.audit["users"]["kept_whole_in_train"] == 1
    every = sp.random_holdout(data, test_fraction=1.0, min_train=0)
    assert len(every.train) == 0 and every.audit["users"]["only_in_test"] == 6
    assert sp.random_holdout(data, test_fraction=1.0).test.groupby("user").size().tolist() == \
        [1, 2, 3, 4, 5]


def test_temporal_user_takes_the_latest_rows() -> None:
    data = ratings(50, ties=False)
    s = sp.temporal_user(data, test_fraction=0.3)
    for user, rows in data.groupby("user"):
        test = s.test[s.test.user == user]
        train = s.train[s.train.user == user]
        if len(test) and len(train):
            assert train.timestamp.max() < test.timestamp.min()
        n = len(rows)
        assert len(test) == min(int(np.floor(0.3 * n + 0.5)), n - 1)
    assert s.audit["time"]["train_after_test"] == 0


def test_temporal_user_tie_policies_on_a_hand_made_case() -> None:
    # user 1: times 1, 2, 2, 2; last 2 rows by time: the boundary cuts the tie group at 2
    data = pd.DataFrame({"user": [1, 1, 1, 1, 2, 2], "item": [1, 2, 3, 4, 1, 2],
                         "timestamp": [1, 2, 2, 2, 5, 6]})
    rnd = sp.temporal_user(data, test_count=2, ties="random")
    assert len(rnd.test) == 3 and set(rnd.test[rnd.test.user == 1].timestamp) == {2}
    assert rnd.audit["time"]["ties"] == {"policy": "random", "groups_at_boundary": 1,
                                         "rows_in_those_groups": 3}
    to_test = sp.temporal_user(data, test_count=2, ties="test")
    assert sorted(to_test.test[to_test.test.user == 1].item) == [2, 3, 4]
    assert to_test.audit["time"]["ties"]["moved_to_test"] == 1
    to_train = sp.temporal_user(data, test_count=2, ties="train")
    assert to_train.test.user.tolist() == [2]
    assert to_train.audit["time"]["ties"]["moved_to_train"] == 2
    # the seeded tie order: another seed may pick other tied rows, never other counts
    picks = {tuple(sorted(sp.temporal_user(data, test_count=2, seed=s).test.item))
             for s in range(12)}
    assert len(picks) > 1


def test_audit_counts_on_a_hand_made_random_split() -> None:
    # user 3 has one row (kept whole in train); items 6 and 9 appear once each, so the one
    # user 2 holds out is only in test (cold);
    # (1, 5) appears twice, so holding out one copy leaves it in train as well
    data = pd.DataFrame({"user": [1, 1, 2, 2, 3], "item": [5, 5, 6, 9, 7]})
    s = sp.random_holdout(data, test_count=1, seed=0)
    test_pairs = set(zip(s.test.user, s.test.item, strict=True))
    assert (1, 5) in test_pairs and len(test_pairs) == 2
    a = s.audit
    assert a["rows"] == {"input": 5, "train": 3, "test": 2, "lost": 0, "duplicated": 0}
    assert a["users"] == {"input": 3, "train": 3, "test": 2, "only_in_test": 0,
                          "kept_whole_in_train": 1}
    assert a["test_rows_in_train"] == 1
    assert a["items"]["only_in_test"] == 1 == a["items"]["test_rows_cold_item"]
    assert "time" not in a


def test_audit_counts_train_after_test_for_a_random_split() -> None:
    # user 1: times 1..4; whichever rows are held out, the audit's count must be the number
    # of training rows dated after the first test row, computed here directly
    data = pd.DataFrame({"user": [1, 1, 1, 1, 2, 2, 2], "item": [1, 2, 3, 4, 1, 2, 3],
                         "timestamp": [1, 2, 3, 4, 10, 30, 20]})
    for seed in range(6):
        s = sp.random_holdout(data, test_count=2, seed=seed)
        expected_rows, users = 0, 0
        for user in (1, 2):
            first = s.test[s.test.user == user].timestamp.min()
            after = int((s.train[s.train.user == user].timestamp > first).sum())
            expected_rows += after
            users += after > 0
        time = s.audit["time"]
        assert time["train_after_test"] == expected_rows
        assert time["users_train_after_test"] == users
        start = s.test.timestamp.min()
        assert time["train_after_test_start"] == int((s.train.timestamp > start).sum())


def test_temporal_global_cut_and_ties() -> None:
    data = pd.DataFrame({"user": [1, 1, 1, 2, 2, 3], "item": [1, 2, 3, 1, 4, 5],
                         "timestamp": [1, 4, 6, 4, 7, 8]})
    s = sp.temporal_global(data, test_start=6, validation_start=4)
    assert sorted(s.test.timestamp) == [6, 7, 8]
    assert sorted(s.validation.timestamp) == [4, 4]
    assert s.train.timestamp.tolist() == [1]
    t = s.audit["time"]
    assert t["train_at_or_after_test_cut"] == 0 and t["train_after_test_start"] == 0
    assert t["ties"]["at_test_cut"] == 1 and t["ties"]["at_validation_cut"] == 2
    # user 3 and items 4, 5 appear only after the cut
    assert s.audit["users"]["only_in_test"] == 2  # users 2 and 3 (user 2's rows: val, test)
    assert s.audit["items"]["only_in_test"] == 3
    # a fraction: 2 of 6 rows -> the cut is the 5th smallest time (7)
    f = sp.temporal_global(data, test_fraction=2 / 6)
    assert f.audit["parameters"]["test_start"] == 7 and len(f.test) == 2


def test_temporal_global_with_dates() -> None:
    data = pd.DataFrame({"user": ["a", "a", "b"], "item": ["x", "y", "x"],
                         "timestamp": ["2003-01-01", "2003-02-01T10:00:00", "2002-12-31"]})
    s = sp.temporal_global(data, test_start="2003-01-15")
    assert s.test.item.tolist() == ["y"]
    assert s.audit["time"]["test_start"] == "2003-02-01 10:00:00"


def test_kfold_users_partitions_the_users() -> None:
    data = ratings(31)
    folds = sp.kfold_users(data, 4, test_fraction=1.0, min_train=0, seed=2)
    tested = [set(f.test.user) for f in folds]
    assert all(tested)
    assert set().union(*tested) == set(data.user) and sum(map(len, tested)) == 31
    for f, users in zip(folds, tested, strict=True):
        assert not users & set(f.train.user)  # held out whole
        assert f.audit["users"]["only_in_test"] == len(users)
    temporal = sp.kfold_users(data, 4, test_count=1, holdout="temporal", seed=2)
    for f in temporal:
        assert f.audit["time"]["train_after_test"] == 0


def _fold_of_each_user(data: pd.DataFrame, k: int, seed: int) -> dict[object, int]:
    folds = sp.kfold_users(data, k, test_fraction=1.0, min_train=0, seed=seed)
    return {u: f for f, split in enumerate(folds) for u in split.test.user}


@pytest.mark.parametrize("removed", [0, 7, 39])
def test_removing_a_user_moves_no_other_user_to_another_fold(removed: int) -> None:
    """docs/splits.md: removing a user does not change any other user's fold (issue 20; the
    round-robin dealing by hash order moved most of them)."""
    data = ratings(40)
    full = _fold_of_each_user(data, 5, seed=1)
    fewer = _fold_of_each_user(data[data.user != removed], 5, seed=1)
    assert len(full) == 40 and removed not in fewer
    assert fewer == {u: f for u, f in full.items() if u != removed}


def test_kfold_sizes_are_balanced_as_documented() -> None:
    """docs/splits.md: binomial sizes, n/k give or take sqrt(n (1/k)(1 - 1/k)) (one sd)."""
    n, k = 20_000, 5
    data = pd.DataFrame({"user": np.arange(n), "item": np.zeros(n, dtype=np.int64)})
    sizes = np.array([len(f.test) for f in sp.kfold_users(data, k, test_fraction=1.0,
                                                          min_train=0, seed=0)])
    sd = np.sqrt(n * (1 / k) * (1 - 1 / k))  # 56.6
    assert sizes.sum() == n and np.all(np.abs(sizes - n / k) < 4 * sd)


def test_kfold_with_an_empty_fold_is_an_error() -> None:
    data = pd.DataFrame({"user": [1, 2], "item": [1, 1]})
    with pytest.raises(ReceValError, match=r"fold \d of k=2 holds no user \(2 users\)"):
        for seed in range(20):  # some seed puts both users in one fold
            sp.kfold_users(data, 2, test_fraction=1.0, min_train=0, seed=seed)


@pytest.mark.parametrize(("call", "message"), [
    (lambda d: sp.random_holdout(d), "exactly one of test_fraction and test_count"),
    (lambda d: sp.random_holdout(d, test_fraction=1.5), "test_fraction must be in (0, 1]"),
    (lambda d: sp.random_holdout(d, test_count=1, seed=-1), "seed must be"),
    (lambda d: sp.temporal_user(d.drop(columns="timestamp"), test_count=1),
     "needs a timestamp column 'timestamp'"),
    (lambda d: sp.temporal_user(d, test_count=1, ties="first"), "ties must be one of"),
    (lambda d: sp.random_holdout(d, test_count=1, user_col="uid"), "no column 'uid'"),
    (lambda d: sp.temporal_global(d), "give test_start"),
    (lambda d: sp.temporal_global(d, test_start="soon"), "test_start must be a number"),
    (lambda d: sp.temporal_global(d, test_start=5, validation_start=9),
     "validation cut (9.0) is after the test cut"),
    (lambda d: sp.kfold_users(d, 1, test_count=1), "k must be an integer >= 2"),
    (lambda d: sp.random_holdout(d.assign(user=[1, None, 2, 2]), test_count=1),
     "column 'user' has a missing id at row 1 (1 rows in all)"),
    (lambda d: sp.temporal_user(d.assign(timestamp=["1", "x", "y", "2"]), test_count=1),
     "holds 'x' at row 1, neither a number nor a date (2 rows in all)"),
])
def test_bad_input_is_a_one_line_error(call, message: str) -> None:
    data = pd.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 1, 2],
                         "timestamp": [1, 2, 3, 4]})
    with pytest.raises(ReceValError) as err:
        call(data)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_inputs_of_every_kind_give_the_same_split(tmp_path) -> None:
    import polars as pl
    import pyarrow as pa

    data = ratings(10)
    path = tmp_path / "r.csv"
    data.to_csv(path, index=False)
    expected = keys(sp.temporal_user(data, test_count=1).test)
    for source in (pl.from_pandas(data), pa.Table.from_pandas(data), data.to_dict("list"),
                   path):
        assert keys(sp.temporal_user(source, test_count=1).test) == expected


# --- the command line ------------------------------------------------------------------------


def test_cli_split_end_to_end(tmp_path) -> None:
    data = ratings(25)
    src = tmp_path / "ratings.csv"
    data.to_csv(src, index=False)
    train, test, audit = tmp_path / "train.csv", tmp_path / "out" / "test.parquet", \
        tmp_path / "audit.json"
    result = CliRunner().invoke(main, [
        "split", str(src), "--method", "temporal-user", "--test-fraction", "0.2", "--seed", "0",
        "--train-out", str(train), "--test-out", str(test), "--audit-out", str(audit)])
    assert result.exit_code == 0, result.output
    expected = sp.temporal_user(data, test_fraction=0.2, seed=0)
    assert keys(pd.read_csv(train)) == keys(expected.train)
    assert keys(pd.read_parquet(test)) == keys(expected.test)
    assert json.loads(audit.read_text()) == json.loads(json.dumps(expected.audit))
    assert f"rows: {len(data)} in = " in result.output
    assert "train rows dated after their user's first test row" in result.output


def test_cli_split_global_with_validation_and_json(tmp_path) -> None:
    data = ratings(20)
    src = tmp_path / "ratings.tsv"
    data.to_csv(src, index=False, sep="\t")
    out = [str(tmp_path / f"{n}.csv") for n in ("tr", "va", "te")]
    result = CliRunner().invoke(main, [
        "split", str(src), "--method", "temporal-global", "--cut", "30", "--validation-cut",
        "20", "--train-out", out[0], "--validation-out", out[1], "--test-out", out[2],
        "--format", "json"])
    assert result.exit_code == 0, result.output
    audit = json.loads(result.stdout)
    assert audit["rows"]["test"] == int((data.timestamp >= 30).sum())
    assert audit["rows"]["validation"] == int(data.timestamp.between(20, 29).sum())
    assert pd.read_csv(out[1]).timestamp.between(20, 29).all()


def test_cli_split_refuses_to_overwrite_its_input(tmp_path) -> None:
    src = tmp_path / "ratings.csv"
    ratings(5).to_csv(src, index=False)
    before = src.read_bytes()
    result = CliRunner().invoke(main, ["split", str(src), "--method", "random-user",
                                       "--test-count", "1", "--train-out", str(src),
                                       "--test-out", str(tmp_path / "t.csv")])
    assert result.exit_code == 2
    assert "is the input file" in result.output and src.read_bytes() == before
    assert not (tmp_path / "t.csv").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--method", "temporal-user", "--test-count", "1", "--timestamp-col", "ts"],
     "needs a timestamp column 'ts'"),
    (["--method", "random-user", "--test-count", "1", "--cut", "5"],
     "--cut does not apply to --method random-user"),
    (["--method", "random-user", "--test-fraction", "2"], "test_fraction must be in (0, 1]"),
    (["--method", "kfold-user", "--test-count", "1", "--folds", "2", "--fold", "3"],
     "--fold must be in 0..1"),
    (["--method", "random-user", "--test-count", "1", "--validation-out", "v.csv"],
     "--validation-out needs a validation set"),
])
def test_cli_split_bad_input_exits_2_with_one_line(tmp_path, args, message) -> None:
    src = tmp_path / "ratings.csv"
    ratings(5).to_csv(src, index=False)
    args = [a if a != "v.csv" else str(tmp_path / "v.csv") for a in args]
    result = CliRunner().invoke(main, ["split", str(src), *args, "--train-out",
                                       str(tmp_path / "a.csv"), "--test-out",
                                       str(tmp_path / "b.csv")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
    assert not (tmp_path / "a.csv").exists()


@pytest.mark.parametrize("name", ["r.csv.gz", "r.tsv", "r.parquet", "r.jsonl"])
def test_read_interactions_reads_every_column_of_each_format(tmp_path, name: str) -> None:
    data = pd.DataFrame({"user": ["007", "7", "7"], "item": [1, 2, 3],
                         "rating": [4.5, 3.0, 1.0], "timestamp": [3, 1, 2]})
    path = tmp_path / name
    if name.endswith(".parquet"):
        data.to_parquet(path)
    elif name.endswith(".jsonl"):
        data.to_json(path, orient="records", lines=True)
    else:
        data.to_csv(path, index=False, sep="\t" if ".tsv" in name else ",")
    read = sp.read_interactions(path)
    assert read.columns.tolist() == ["user", "item", "rating", "timestamp"]
    assert read.user.tolist() == ["007", "7", "7"]  # "007" and "7" stay two users
    assert read.item.tolist() == [1, 2, 3] and read.timestamp.tolist() == [3, 1, 2]
    assert sp.leave_last_out(path).test.item.tolist() == [3]  # "007" has one row: kept


def test_read_interactions_refuses_a_trec_file(tmp_path) -> None:
    path = tmp_path / "x.qrels"
    path.write_text("q1 0 d1 1\n")
    with pytest.raises(ReceValError, match="the trec format holds no interactions"):
        sp.read_interactions(path)
