"""The monitor's numba passes (receval.monitor.kernels) against references written from their
definitions with plain Python loops and dicts, on random logs with repeated keys, lists split
into several runs, equal values and ties at the ends of the attribution period."""

from __future__ import annotations

import math

import numpy as np
import pytest

from receval.monitor.kernels import (
    PairKeys,
    by_time_then_user,
    group_order,
    judge_and_count,
    list_rows,
    repeats_in_runs,
    window_columns,
)


def _judge_reference(user, item, served, fb_user, fb_item, at, value, span):
    out = [math.nan] * len(user)
    judging = [False] * len(fb_user)
    early = [False] * len(user)
    for i in range(len(user)):
        for f in range(len(fb_user)):
            if (user[i], item[i]) != (fb_user[f], fb_item[f]):
                continue
            if served[i] - span <= at[f] < served[i]:
                early[i] = True
            if served[i] <= at[f] <= served[i] + span:
                judging[f] = True
                if math.isnan(out[i]) or value[f] > out[i]:
                    out[i] = value[f]
    return out, judging, early


def _count_reference(early, served, values, before):
    # impressions served before ``before`` with feedback dated before serving and no value
    return sum(e and s < before and math.isnan(v)
               for e, s, v in zip(early, served.tolist(), values, strict=True))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("spread", "fb_users"), [(1, 7), (1, 2), (10**12, 7)])
def test_judge_and_count_matches_the_definition(seed: int, spread: int, fb_users: int) -> None:
    # users 0..6 (keys looked up among their user's keys), two users with feedback (75 keys
    # each: sorted by key as one block; impressions of users without any), or 10**12 apart
    # (more users than per-user arrays would hold: the open-addressing table)
    rng = np.random.default_rng(seed)
    n, m, span = 400, 150, 5
    user, item = rng.integers(0, 6, n) * spread, rng.integers(0, 8, n)
    served = rng.integers(0, 30, n)
    fb_user, fb_item = rng.integers(0, fb_users, m) * spread, rng.integers(0, 9, m)
    at = rng.integers(0, 40, m)
    value = rng.integers(1, 4, m).astype(float)  # equal values: the first one is kept
    width = 9
    ref = _judge_reference(user, item, served, fb_user, fb_item, at, value, span)
    counts = []
    # the rows served before a time (none, some, all; the earliest int64: none counted)
    for before in (np.iinfo(np.int64).min, 0, 15, 31):
        out, judging, n_early = judge_and_count(PairKeys(user, item, 0, 0, width), served,
                                                fb_user * width + fb_item, at, value, span,
                                                before)
        np.testing.assert_array_equal(out, np.array(ref[0]))
        assert judging.tolist() == ref[1]
        assert n_early == _count_reference(ref[2], served, ref[0], before)
        counts.append(n_early)
    assert judging.any() and not np.isnan(out).all()
    assert counts[0] == 0 and 0 < counts[2] < counts[3]  # the mark splits the early rows


@pytest.mark.parametrize("far_user", [False, True])
def test_judge_and_count_skips_negative_codes_and_no_value(far_user: bool) -> None:
    # a user or item the feedback does not hold (-1) never matches, even where its key would
    # equal a feedback key (-1 * 2 + 3 == 1 * 2 - 1 == 1); without values no impression has
    # one, so every early one served before the mark is counted. With a feedback user far
    # off (more users than per-user arrays hold), keys are looked up in the hash table.
    keys = PairKeys(np.array([0, -1, 1, 0]), np.array([1, 3, -1, 1]), 0, 0, 2)
    served = np.array([0, 5, 5, 5])
    fb_key, at = np.array([1, 1]), np.array([0, 3])
    if far_user:
        fb_key, at = np.append(fb_key, 2 * 2**21), np.append(at, 0)
    out, judging, n_early = judge_and_count(keys, served, fb_key, at, None, 4, 6)
    assert np.isnan(out).all()
    # both judge row 0; row 3 was served after one (3: early)
    assert judging.tolist() == [True, True] + [False] * far_user
    assert n_early == 1
    assert judge_and_count(keys, served, fb_key, at, None, 4, 5).n_early == 0


def _list_rows_reference(user, served, judged):
    codes: dict[tuple[int, int], int] = {}
    first, counts, starts = [], [], []
    for i, pair in enumerate(zip(user.tolist(), served.tolist(), strict=True)):
        if i == 0 or (user[i], served[i]) != (user[i - 1], served[i - 1]):
            starts.append(i)
        if pair not in codes:
            codes[pair] = len(codes)
            first.append(i)
            counts.append(0)
        counts[codes[pair]] += int(not np.isnan(judged[i]))
    return [codes[p] for p in zip(user.tolist(), served.tolist(), strict=True)], first, \
        counts, starts


def _check_list_rows(user, served, judged):
    found = list_rows(user, served, judged)
    code, first, counts, starts = _list_rows_reference(user, served, judged)
    assert found.codes.tolist() == code
    assert found.codes is found.codes  # built once
    assert found.run_code.tolist() == [code[i] for i in starts]
    assert found.first.tolist() == first
    assert found.judged.tolist() == counts
    assert found.starts.tolist() == starts
    return found


@pytest.mark.parametrize("seed", range(4))
def test_list_rows_numbers_lists_in_order_of_first_appearance(seed: int) -> None:
    rng = np.random.default_rng(seed)
    runs = rng.integers(1, 5, 300)  # run lengths; a (user, served) may come back later
    user = np.repeat(rng.integers(0, 20, 300), runs)
    served = np.repeat(rng.integers(0, 5, 300), runs)
    judged = np.where(rng.random(len(user)) < 0.3, 1.0, np.nan)
    found = _check_list_rows(user, served, judged)
    assert len(found.starts) > len(found.first)  # some list came back in a later run


@pytest.mark.parametrize("seed", range(4))
def test_list_rows_with_each_users_lists_in_time_order(seed: int) -> None:
    # a log written day by day: each user's runs in served order (the per-user path), a list
    # split into runs with other users' rows between them, user ids far from 0; then the
    # same log with one run moved back in time late in it (the hash table from the start)
    rng = np.random.default_rng(seed)
    n_runs = 400
    user = rng.integers(10**9, 10**9 + 30, n_runs)
    served = np.sort(rng.integers(0, 60, n_runs))  # equal times: one list in several runs
    runs = rng.integers(1, 5, n_runs)
    judged = np.where(rng.random(int(runs.sum())) < 0.3, 1.0, np.nan)
    found = _check_list_rows(np.repeat(user, runs), np.repeat(served, runs), judged)
    assert len(found.starts) > len(found.first)
    late = served.copy()
    late[350] = late[0] - 1  # before this user's... every user's lists: goes back in time
    _check_list_rows(np.repeat(user, runs), np.repeat(late, runs), judged)


def test_repeats_in_runs_short_and_long_runs() -> None:
    assert not repeats_in_runs(np.array([0, 3]), np.array([1, 2, 3, 1, 2, 3]))
    assert repeats_in_runs(np.array([0, 3]), np.array([1, 2, 3, 1, 2, 2]))
    long = np.arange(100)
    assert not repeats_in_runs(np.array([0]), long)
    assert repeats_in_runs(np.array([0]), np.append(long, 57))
    assert not repeats_in_runs(np.array([], np.int64), np.array([], np.int64))


def test_group_order_is_flatnonzero_per_group() -> None:
    rng = np.random.default_rng(3)
    group_of = rng.integers(-1, 4, 50)
    row_key = rng.integers(0, 50, 1000)
    rows, bounds = group_order(group_of, row_key, 4)
    for g in range(4):
        expected = [i for i in range(len(row_key)) if group_of[row_key[i]] == g]
        assert rows[bounds[g]:bounds[g + 1]].tolist() == expected
    assert bounds[-1] == int((group_of[row_key] >= 0).sum())


def test_judge_and_count_in_blocks_on_threads_matches_a_merge() -> None:
    # enough impressions for several blocks of work: the same values as a pandas merge
    import pandas as pd

    rng = np.random.default_rng(11)
    n, m, span = 600_000, 40_000, 50
    imp = pd.DataFrame({"user": rng.integers(0, 3000, n), "item": rng.integers(0, 200, n),
                        "served": rng.integers(0, 1000, n), "row": np.arange(n)})
    fb = pd.DataFrame({"user": rng.integers(0, 3000, m), "item": rng.integers(0, 200, m),
                       "at": rng.integers(0, 1100, m), "value": rng.random(m), "f": np.arange(m)})
    pairs = imp.merge(fb, on=["user", "item"])
    hit = pairs[(pairs["served"] <= pairs["at"]) & (pairs["at"] <= pairs["served"] + span)]
    best = hit.groupby("row")["value"].max()
    expected = np.full(n, np.nan)
    expected[best.index.to_numpy()] = best.to_numpy()
    early = pairs[(pairs["served"] - span <= pairs["at"]) & (pairs["at"] < pairs["served"])]
    early_rows = np.unique(early["row"].to_numpy())
    for before in (500, 1000):
        out, judging, n_early = judge_and_count(
            PairKeys(imp["user"].to_numpy(), imp["item"].to_numpy(), 0, 0, 200),
            imp["served"].to_numpy(), fb["user"].to_numpy() * 200 + fb["item"].to_numpy(),
            fb["at"].to_numpy(), fb["value"].to_numpy(), span, before)
        np.testing.assert_array_equal(out, expected)
        assert set(np.flatnonzero(judging)) == set(hit["f"])
        counted = early_rows[(imp["served"].to_numpy()[early_rows] < before)
                             & np.isnan(expected[early_rows])]
        assert n_early == len(counted) > 0


def _check_window_columns(group_of, row_list, n_groups, item, order, judged):
    # the rows' lists given by runs (a list may come back in a later run)
    starts = np.flatnonzero(np.diff(row_list, prepend=-1) != 0)
    out = window_columns(group_of, row_list[starts], starts, n_groups, item, order, judged)
    for g in range(n_groups):
        rows = np.flatnonzero(group_of[row_list] == g)
        part = slice(out.bounds[g], out.bounds[g + 1])
        np.testing.assert_array_equal(out.list[part], row_list[rows])
        np.testing.assert_array_equal(out.item[part], item[rows])
        np.testing.assert_array_equal(out.order[part], order[rows])
        rows = rows[~np.isnan(judged[rows])]
        part = slice(out.truth_bounds[g], out.truth_bounds[g + 1])
        np.testing.assert_array_equal(out.truth_list[part], row_list[rows])
        np.testing.assert_array_equal(out.truth_item[part], item[rows])
        np.testing.assert_array_equal(out.truth_value[part], judged[rows])
    assert out.bounds[-1] == int((group_of[row_list] >= 0).sum())
    return out


def test_window_columns_groups_the_columns_in_row_order() -> None:
    rng = np.random.default_rng(5)
    group_of = rng.integers(-1, 3, 40)
    row_list = rng.integers(0, 40, 500)
    item, order = rng.integers(0, 10**12, 500), rng.random(500)
    judged = np.where(rng.random(500) < 0.5, np.nan, rng.random(500))
    out = _check_window_columns(group_of, row_list, 3, item, order, judged)
    assert 0 < out.truth_bounds[-1] < out.bounds[-1]


def test_window_columns_in_blocks_on_threads_keeps_row_order() -> None:
    # enough rows for several blocks of work: each group's rows in row order across blocks
    rng = np.random.default_rng(8)
    n = 700_000
    group_of = rng.integers(-1, 5, 200_000)
    # 190k runs of rows of one list (several blocks of runs); a group's rows in every block
    row_list = np.sort(rng.integers(0, 200_000, n))
    item, order = rng.integers(0, 10**12, n), rng.random(n)
    judged = np.where(rng.random(n) < 0.9, np.nan, rng.integers(1, 6, n).astype(float))
    _check_window_columns(group_of, row_list, 5, item, order, judged)
    empty = window_columns(group_of, row_list[:0], row_list[:0], 0, item[:0], order[:0],
                           judged[:0])
    assert empty.bounds.tolist() == [0] and empty.truth_bounds.tolist() == [0]


@pytest.mark.parametrize("times", [3, 50, 5000])
def test_by_time_then_user_is_lexsort(times: int) -> None:
    # many rows of one time (sorted as a block), a few, or one; equal pairs in row order
    rng = np.random.default_rng(times)
    served = rng.integers(0, times, 4000) * 10**9
    user = rng.integers(-50, 50, 4000)
    np.testing.assert_array_equal(by_time_then_user(served, user), np.lexsort((user, served)))
