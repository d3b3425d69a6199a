"""User codes read through the ids while grouping (issue 24): the column of one code
per row is not written for dense integer ids or string ids, and grouping through the ids gives
the CSR that grouping the written codes gives (stable order, every user's rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import receval
from receval.data import csr
from receval.data.csr import Codes, group_by_user
from receval.data.encode import user_codes


def _reference(codes: np.ndarray, n_users: int, items: np.ndarray, values: np.ndarray
               ) -> tuple[list[int], list[int], list[float]]:
    """The CSR from first principles: a stable argsort of the written codes."""
    order = np.argsort(codes, kind="stable")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=n_users))])
    return indptr.tolist(), items[order].tolist(), values[order].tolist()


def _ids(kind: str, rng: np.random.Generator, n: int) -> tuple[object, object]:
    users = rng.integers(0, 300, n)
    if kind == "dense":  # every id in the range used, offset from 0
        users = np.concatenate([np.arange(300), users]) + 10_000
    elif kind == "gaps":  # ids with holes: written out through the table
        users = users * 7 - 50
    elif kind == "strings":  # text ids, some dictionary entries unused by this side
        text = pa.array([f"u{u:04d}" for u in users])
        return text, pa.array(["u9999", *[f"u{u:04d}" for u in users[:5]]]).dictionary_encode()
    return users, users[: max(1, n // 10)].copy()


@pytest.mark.parametrize("kind", ["dense", "gaps", "strings"])
@pytest.mark.parametrize("sort", [False, True])
def test_grouping_through_the_ids_equals_grouping_the_written_codes(kind: str, sort: bool,
                                                                   monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    monkeypatch.setattr(csr, "_BUCKET_ROWS", 64)  # many buckets even on a small input
    rng = np.random.default_rng(24)
    a, b = _ids(kind, rng, 300_000)
    ta, tb, _, n_users = user_codes(a, b)
    for side in (ta, tb):
        written = side.codes()
        if sort:  # the sorted input's path (no sort, a count per user)
            order = np.argsort(written, kind="stable")
            side = Codes(side.raw[order], side.lo, side.table, side.dtype)
            written = written[order]
        items = rng.integers(0, 10**6, len(written))
        values = rng.random(len(written))
        got = group_by_user(side, n_users, items, values)
        want = _reference(written, n_users, items, values)
        assert (got.indptr.tolist(), got.items.tolist(), got.values.tolist()) == want


def test_default_evaluation_writes_no_column_of_user_codes(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    calls = []
    original = Codes.codes

    def counted(self: Codes) -> np.ndarray:
        calls.append(len(self))
        return original(self)

    monkeypatch.setattr(Codes, "codes", counted)
    rng = np.random.default_rng(5)
    users = np.repeat(np.arange(200), 10)
    pred = pd.DataFrame({"user": users, "item": rng.integers(0, 50, len(users)),
                         "score": rng.random(len(users))}).drop_duplicates(["user", "item"])
    truth = pd.DataFrame({"user": np.arange(200), "item": rng.integers(0, 50, 200)})
    plain = receval.evaluate(truth, pred, ["nDCG@5", "AP@5"])
    as_text = receval.evaluate(truth.astype({"user": str}), pred.astype({"user": str}),
                               ["nDCG@5", "AP@5"])
    assert calls == []
    assert np.array_equal(plain.per_user[["nDCG@5", "AP@5"]].to_numpy(),
                          as_text.per_user.sort_values(
                              "user", key=lambda s: s.astype(int))[["nDCG@5", "AP@5"]].to_numpy())
    # an option that reorders the rows reads the codes of every row: written out then
    receval.evaluate(truth, pred, ["nDCG@5"], ties="item_ascending")
    assert calls == [len(truth), len(pred)]
