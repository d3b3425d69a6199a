"""The fast ingest paths (issue 24): Parquet row groups, dictionary-encoded string ids,
categorical frames and input already sorted by user give the values of the plain path, and
each input pass happens once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import receval
import receval.io.values

METRICS = ["P@3", "R@3", "nDCG@3", "AP@3", "RR@5"]


def _frames(n_users: int = 60, seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users), 8)
    pred = pd.DataFrame({"user": users, "item": rng.integers(0, 40, len(users)),
                         "score": rng.random(len(users))})
    pred = pred.drop_duplicates(["user", "item"])
    truth = pd.DataFrame({"user": np.repeat(np.arange(n_users), 3),
                          "item": rng.integers(0, 40, 3 * n_users)}).drop_duplicates()
    order = rng.permutation(len(pred))
    return truth.reset_index(drop=True), pred.iloc[order].reset_index(drop=True)


def _write(frame: pd.DataFrame, path: Path, row_group_size: int = 50) -> Path:
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                   row_group_size=row_group_size)
    return path


def _per_user(result: receval.Result) -> pd.DataFrame:
    return result.per_user.sort_values("user").reset_index(drop=True)


def test_parquet_row_groups_give_the_frame_values(tmp_path: Path) -> None:
    truth, pred = _frames()
    expected = _per_user(receval.evaluate(truth, pred, METRICS))
    got = _per_user(receval.evaluate(str(_write(truth, tmp_path / "t.parquet")),
                                     str(_write(pred, tmp_path / "p.parquet")), METRICS))
    assert pq.ParquetFile(tmp_path / "p.parquet").metadata.num_row_groups > 3
    pd.testing.assert_frame_equal(expected, got)


def test_parquet_scores_are_checked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """receval.io checks the values of a file (naming its line); reading the columns again
    must not scan them a second time."""
    truth, pred = _frames()
    t = _write(truth, tmp_path / "t.parquet")
    p = _write(pred, tmp_path / "p.parquet")
    calls: list[str] = []
    original = receval.io.values.check_value_column

    def counting(values: object, side: str, *args: object, **kwargs: object) -> None:
        calls.append(side)
        original(values, side, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(receval.io.values, "check_value_column", counting)
    monkeypatch.setattr(receval.io, "check_value_column", counting)
    monkeypatch.setattr(receval.data.columns, "check_value_column", counting)
    receval.evaluate(str(t), str(p), METRICS)
    assert calls.count("predictions") == 1
    bad = pred.copy()
    bad.loc[5, "score"] = np.inf
    with pytest.raises(receval.ReceValError, match="holds inf"):
        receval.evaluate(str(t), str(_write(bad, tmp_path / "bad.parquet")), METRICS)


def _string_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    truth, pred = _frames()
    for frame in (truth, pred):
        frame["user"] = "u" + frame["user"].astype(str)
        # '007' and '7' are two ids: zero-padded and plain item ids side by side
        frame["item"] = np.where(frame["item"] % 2 == 0, frame["item"].map("{:03d}".format),
                                 frame["item"].astype(str))
    pred.loc[pred["item"] == "007", "item"] = "7"  # a prediction of '7' never hits truth '007'
    return truth, pred


def test_category_ids_give_the_values_of_strings() -> None:
    truth, pred = _string_frames()
    expected = _per_user(receval.evaluate(truth, pred, METRICS))
    got = _per_user(receval.evaluate(truth.astype({"user": "category", "item": "category"}),
                                     pred.astype({"user": "category", "item": "category"}),
                                     METRICS))
    pd.testing.assert_frame_equal(expected, got, check_dtype=False)


_CATEGORY_READ = """
import numpy as np, pandas as pd, pyarrow as pa
from receval.data.columns import read_columns
rows, distinct = 40_000, 100
names = pd.Index([f"{'x' * 60}{i}" for i in range(distinct)], dtype=object)
ids = pd.Series(pd.Categorical.from_codes(np.arange(rows) % distinct, categories=names))
frame = pd.DataFrame({"user": ids, "item": ids, "score": np.arange(rows, dtype=float)})
cols = read_columns(frame, side="predictions", user_col="user", item_col="item",
                    value_col="score", value_required=True)
assert len(cols.users) == rows
print(pa.default_memory_pool().max_memory())
"""


def test_category_ids_are_not_decoded_row_by_row() -> None:
    """A ``category`` column of long ids is read as its codes: Arrow never holds a string per
    row (the old path decoded every row, then encoded them again). Its own process, so the
    Arrow pool's peak is this read's."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(receval.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", _CATEGORY_READ], capture_output=True,
                          text=True, check=True, env=env)
    assert int(done.stdout.split()[-1]) < 10 * 40_000  # the decoded strings: 60+ bytes a row


def test_integer_categories_stay_integer_ids() -> None:
    truth, pred = _frames()
    expected = _per_user(receval.evaluate(truth, pred, METRICS))
    got = _per_user(receval.evaluate(truth.astype({"user": "category", "item": "category"}),
                                     pred.astype({"user": "category", "item": "category"}),
                                     METRICS))
    assert got["user"].dtype.kind == "i"
    pd.testing.assert_frame_equal(expected, got)


def test_polars_categorical_and_arrow_dictionary_ids() -> None:
    pl = pytest.importorskip("polars")
    truth, pred = _string_frames()
    expected = _per_user(receval.evaluate(truth, pred, METRICS))
    as_cat = [pl.col("user").cast(pl.Categorical), pl.col("item").cast(pl.Categorical)]
    got = _per_user(receval.evaluate(pl.from_pandas(truth).with_columns(as_cat),
                                     pl.from_pandas(pred).with_columns(as_cat), METRICS))
    pd.testing.assert_frame_equal(expected, got, check_dtype=False)
    table = pa.Table.from_pandas(pred, preserve_index=False)
    chunked = pa.chunked_array([c.dictionary_encode() for c in table.column("item").chunks]
                               + [pa.array(["zz1", "zz2"], table.column("item").type)
                                  .dictionary_encode()])
    extra = pd.DataFrame({"user": ["u0", "u0"], "item": ["zz1", "zz2"], "score": [-1.0, -2.0]})
    table = pa.concat_tables([table, pa.Table.from_pandas(extra, preserve_index=False)])
    table = table.set_column(1, "item", chunked)
    plain = pd.concat([pred, extra], ignore_index=True)
    pd.testing.assert_frame_equal(_per_user(receval.evaluate(truth, plain, METRICS)),
                                  _per_user(receval.evaluate(truth, table, METRICS)),
                                  check_dtype=False)


def test_dictionary_ids_still_name_a_missing_or_empty_id() -> None:
    truth, pred = _string_frames()
    bad = pred.copy()
    bad["item"] = bad["item"].astype("category")
    bad.loc[4, "item"] = None
    with pytest.raises(receval.ReceValError, match="row 4"):
        receval.evaluate(truth, bad, METRICS)


def test_monitor_reads_integer_ids_and_tz_aware_times() -> None:
    """receval.monitor's inputs: int64 ids are used as they are, and tz-aware times (read
    from their stored UTC ticks now, no conversion per row) give the same ns."""
    from receval.monitor.inputs import _ids, times

    users = pd.Series(np.arange(1000, dtype=np.int64))
    out = _ids(users, "impressions", "user")
    assert out.tolist() == users.tolist()
    assert np.shares_memory(out.to_numpy(), users.to_numpy())
    at = pd.Series(pd.to_datetime(np.arange(5) * 10**9, utc=True)).dt.tz_convert("Asia/Tokyo")
    assert times(at, "feedback", "at").tolist() == (np.arange(5) * 10**9).tolist()


def test_parquet_string_ids_in_row_groups_stay_exact(tmp_path: Path) -> None:
    """Text ids read from Parquet row groups are encoded chunk by chunk: '007' and '7' stay
    two ids and the values are those of the frames."""
    truth, pred = _string_frames()
    truth = pd.concat([truth, pd.DataFrame({"user": ["ux"], "item": ["007"]})],
                      ignore_index=True)
    pred = pd.concat([pred, pd.DataFrame({"user": ["ux", "ux"], "item": ["7", "007"],
                                          "score": [0.9, 0.5]})], ignore_index=True)
    expected = _per_user(receval.evaluate(truth, pred, METRICS))
    got = _per_user(receval.evaluate(str(_write(truth, tmp_path / "t.parquet")),
                                     str(_write(pred, tmp_path / "p.parquet")), METRICS))
    pd.testing.assert_frame_equal(expected, got, check_dtype=False)
    assert got.set_index("user").loc["ux", "RR@5"] == 0.5  # '7' at rank 1 is not '007'
