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
