"""The monitor's passes over the impressions, one numba loop each (no temporary per row).

- :func:`judge_and_count`: the join of the impressions with the feedback of their (user,
  item) (each impression's largest value within the attribution period, the feedback rows that
  judge one, how many impressions have feedback dated before serving);
- :func:`list_rows`: one code per served list (user, time), in the order of first appearance;
- :func:`repeats_in_runs`: whether a list held in one run of rows serves an item twice;
- :func:`group_order`: the rows grouped by a small code, in row order within each group.

Each returns exactly what the pandas chain it replaces gave (``receval.monitor.core`` calls
them); they only avoid its passes and temporaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numba
import numpy as np

from receval.parallel import block_bounds, run_blocks

#: the low bits of a (user, item) key kept in the prefilter bitmap (2 MB)
_BITMAP_BITS = 24
#: how many more users than rows a range of user ids may span for the per-user arrays
_DENSE_USERS = 1 << 20
#: the fewest rows a block of work on a thread gets
_MIN_BLOCK_ROWS = 1 << 18


class PairKeys(NamedTuple):
    """The impressions' (user, item) keys, computed in the join: ``(user - user_low) * width
    + (item - item_low)``, none where either difference is negative."""

    user: np.ndarray
    item: np.ndarray
    user_low: int
    item_low: int
    width: int


class Judged(NamedTuple):
    """What :func:`judge_and_count` finds: each impression's value, whether each feedback row
    judges an impression, and how many impressions served before the mark have feedback
    dated before serving and no value."""

    values: np.ndarray
    judging: np.ndarray
    n_early: int


def judge_and_count(imp: PairKeys, served: np.ndarray, fb_key: np.ndarray, at: np.ndarray,
                    value: np.ndarray | None, span: int, before: int) -> Judged:
    """Each impression's largest feedback value dated ``served <= at <= served + span`` (NaN
    without one), whether each feedback row judges an impression, and how many impressions
    served before ``before`` have feedback dated ``served - span <= at < served`` and no
    value (the earliest int64 time: none counted). Keys: one int64 per (user, item), equal
    exactly when the pairs are (:class:`PairKeys` for the impressions).

    Example:
        >>> imp = PairKeys(np.array([0, 0, 0]), np.array([5, 5, 5]), 0, 0, 10)
        >>> out, judging, n = judge_and_count(imp, np.array([8, 0, 9]),
        ...     np.array([5, 5]), np.array([12, 4]), np.array([1.0, 3.0]), 5, 9)
        >>> out.tolist(), judging.tolist(), n
        ([1.0, 3.0, 1.0], [True, True], 0)
        >>> judge_and_count(imp, np.array([8, 0, 9]), np.array([5]), np.array([4]),
        ...                 np.array([3.0]), 5, 9).n_early
        1
    """
    out = np.full(len(served), np.nan)
    judging = np.zeros(len(fb_key), dtype=np.bool_)
    if not len(served) or not len(fb_key):
        return Judged(out, judging, 0)
    fb_key = fb_key.astype(np.int64, copy=False)
    width = max(1, int(imp.width))
    n_users = int(fb_key.max()) // width + 1
    dense = int(fb_key.min()) >= 0 and n_users <= len(served) + len(fb_key) + _DENSE_USERS
    # feedback by key; equal keys in row order, so the largest value is found in the order
    # a merge on the key lists them (the first of equal values kept)
    if dense:  # keys of a few users: a counting sort by user, then by key within each
        order, sorted_key, user_start = _order_by_user(fb_key, width, n_users)
    else:
        order = np.argsort(fb_key, kind="stable")
        sorted_key = fb_key[order]
    # what a lookup and a match read, side by side in key order: the key, time, row and
    # value of each feedback row, a user's few rows in a few cache lines
    rows = np.empty((len(order), 4), dtype=np.int64)
    rows[:, 0] = sorted_key
    rows[:, 1] = at[order]
    rows[:, 2] = order
    if value is not None:
        rows[:, 3] = value[order].view(np.int64)
    bits = _key_bits(sorted_key)
    # blocks of impressions on the threads: each writes its rows' values; a feedback row two
    # blocks judge is marked True by both
    blocks = block_bounds(len(served), _MIN_BLOCK_ROWS)
    n_early = np.zeros(max(1, len(blocks)), dtype=np.int64)  # per block
    common = (imp.user, imp.item, np.int64(imp.user_low), np.int64(imp.item_low),
              np.int64(imp.width), served, rows, value is not None, span, bits)
    ends = (out, judging, np.int64(before), n_early)
    if dense:  # a key is looked up among its user's keys (a few, side by side)
        run_blocks(_judge_dense_loop, blocks, *common, user_start, *ends)
    else:  # an open-addressing table of the keys
        run_blocks(_judge_loop, blocks, *common, _key_table(sorted_key), *ends)
    return Judged(out, judging, int(n_early.sum()))


@numba.njit(cache=True, nogil=True)
def _order_by_user(fb_key: np.ndarray, width: int, n_users: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - numba
    # np.argsort(fb_key, kind="stable") for keys user * width + item, the keys in that order,
    # and where each user's segment starts: rows counted into their user's segment in row
    # order (key and row side by side), then each segment sorted by key (stable)
    starts = np.zeros(n_users + 1, dtype=np.int64)
    for j in range(fb_key.size):
        starts[fb_key[j] // width + 1] += 1
    for u in range(n_users):
        starts[u + 1] += starts[u]
    slot = starts[:-1].copy()
    order = np.empty(fb_key.size, dtype=np.int64)
    keys = np.empty(fb_key.size, dtype=np.int64)
    for j in range(fb_key.size):
        u = fb_key[j] // width
        order[slot[u]] = j
        keys[slot[u]] = fb_key[j]
        slot[u] += 1
    for u in range(n_users):
        a, b = starts[u], starts[u + 1]
        if b - a <= 32:  # insertion sort: stable, and cheapest for a few keys
            for x in range(a + 1, b):
                j = order[x]
                key = keys[x]
                y = x - 1
                while y >= a and keys[y] > key:
                    order[y + 1] = order[y]
                    keys[y + 1] = keys[y]
                    y -= 1
                order[y + 1] = j
                keys[y + 1] = key
        else:
            by_key = np.argsort(keys[a:b], kind="mergesort")
            order[a:b] = order[a:b][by_key]
            keys[a:b] = keys[a:b][by_key]
    return order, keys, starts


def _key_bits(sorted_key: np.ndarray) -> np.ndarray:
    """A packed bitmap of the keys' low bits: most impressions have no feedback, and one bit
    read in 2 MB that stay in cache rules them out."""
    bits = np.zeros(1 << (_BITMAP_BITS - 3), dtype=np.uint8)
    _bits_loop(sorted_key, bits)
    return bits


def _key_table(sorted_key: np.ndarray) -> np.ndarray:
    """An open-addressing table from each distinct key to its first and last position in
    ``sorted_key`` (key, first, end side by side: one cache line per lookup)."""
    size = 1
    while size < 2 * len(sorted_key):
        size *= 2
    table = np.full((size, 3), -1, dtype=np.int64)
    _index_loop(sorted_key, table)
    return table


@numba.njit(cache=True, nogil=True)
def _slot(key: np.int64, mask: np.uint64) -> np.uint64:  # pragma: no cover - numba
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return (h ^ (h >> np.uint64(32))) & mask


@numba.njit(cache=True, nogil=True)
def _bits_loop(keys: np.ndarray, bits: np.ndarray) -> None:  # pragma: no cover - numba
    low = np.int64(bits.size * 8 - 1)
    for key in keys:
        b = key & low
        bits[b >> 3] |= np.uint8(1 << (b & 7))


@numba.njit(cache=True, nogil=True)
def _index_loop(sorted_key: np.ndarray, table: np.ndarray) -> None:  # pragma: no cover - numba
    mask = np.uint64(table.shape[0] - 1)
    n = sorted_key.size
    j = 0
    while j < n:
        key = sorted_key[j]
        end = j + 1
        while end < n and sorted_key[end] == key:
            end += 1
        h = _slot(key, mask)
        while table[h, 1] >= 0:
            h = (h + np.uint64(1)) & mask
        table[h, 0] = key
        table[h, 1] = j
        table[h, 2] = end
        j = end


@numba.njit(cache=True, nogil=True)
def _judge_loop(block: int, lo: int, hi: int, user: np.ndarray, item: np.ndarray,
                user_low: np.int64, item_low: np.int64, width: np.int64, served: np.ndarray,
                rows: np.ndarray, has_value: bool, span: int, bits: np.ndarray,
                table: np.ndarray, out: np.ndarray, judging: np.ndarray, before: np.int64,
                n_early: np.ndarray) -> None:  # pragma: no cover - numba
    # a key's feedback rows found in the open-addressing table (``_key_table``)
    low = np.int64(bits.size * 8 - 1)
    mask = np.uint64(table.shape[0] - 1)
    values = rows[:, 3].view(np.float64) if has_value else np.zeros(0)
    for i in range(lo, hi):
        u = user[i] - user_low
        it = item[i] - item_low
        if u < 0 or it < 0:
            continue
        key = u * width + it
        b = key & low
        if not (bits[b >> 3] >> (b & 7)) & 1:
            continue
        h = _slot(key, mask)
        while table[h, 1] >= 0 and table[h, 0] != key:
            h = (h + np.uint64(1)) & mask
        if table[h, 1] < 0:
            continue
        if _match(i, table[h, 1], table[h, 2], served[i], rows, values, has_value, span, out,
                  judging):
            _count_early(block, i, served, out, before, n_early)


@numba.njit(cache=True, nogil=True)
def _judge_dense_loop(block: int, lo: int, hi: int, user: np.ndarray, item: np.ndarray,
                      user_low: np.int64, item_low: np.int64, width: np.int64,
                      served: np.ndarray, rows: np.ndarray, has_value: bool, span: int,
                      bits: np.ndarray, user_start: np.ndarray, out: np.ndarray,
                      judging: np.ndarray, before: np.int64,
                      n_early: np.ndarray) -> None:  # pragma: no cover - numba
    # :func:`_judge_loop` with the key found among its user's keys (``user_start``: where
    # each user's rows start in ``rows``, sorted by key)
    low = np.int64(bits.size * 8 - 1)
    n_users = user_start.size - 1
    values = rows[:, 3].view(np.float64) if has_value else np.zeros(0)
    for i in range(lo, hi):
        u = user[i] - user_low
        it = item[i] - item_low
        if u < 0 or it < 0 or u >= n_users:
            continue
        key = u * width + it
        b = key & low
        if not (bits[b >> 3] >> (b & 7)) & 1:
            continue
        a = user_start[u]
        z = user_start[u + 1]
        while z - a > 16:  # a binary search down to a few keys (a user with many)
            mid = (a + z) >> 1
            if rows[mid, 0] < key:
                a = mid + 1
            else:
                z = mid
        z = user_start[u + 1]
        while a < z and rows[a, 0] < key:  # the first of the user's keys >= key
            a += 1
        end = a
        while end < z and rows[end, 0] == key:
            end += 1
        if end > a and _match(i, a, end, served[i], rows, values, has_value, span, out,
                              judging):
            _count_early(block, i, served, out, before, n_early)


@numba.njit(cache=True, nogil=True)
def _count_early(block: int, i: int, served: np.ndarray, out: np.ndarray, before: np.int64,
                 n_early: np.ndarray) -> None:  # pragma: no cover - numba
    # impression ``i`` has feedback dated before it was served: counted when it was served
    # before the mark and has no value
    if served[i] < before and np.isnan(out[i]):
        n_early[block] += 1


@numba.njit(cache=True, nogil=True)
def _match(i: int, first: int, end: int, s: np.int64, rows: np.ndarray, values: np.ndarray,
           has_value: bool, span: int, out: np.ndarray,
           judging: np.ndarray) -> bool:  # pragma: no cover - numba
    # impression ``i`` (served at ``s``) against the feedback rows ``first:end`` of its key;
    # whether one of them is dated before serving (within ``span``)
    found = False
    is_early = False
    best = np.nan
    for j in range(first, end):
        a = rows[j, 1]
        if s - span <= a and a < s:
            is_early = True
        if s <= a and a <= s + span:
            judging[rows[j, 2]] = True
            if has_value and (not found or values[j] > best):
                best = values[j]
                found = True
    if found:
        out[i] = best
    return is_early


@dataclass(frozen=True, eq=False)
class Lists:
    """The served lists of :func:`list_rows`: each run of rows' list ``run_code`` (numbered
    in the order of first appearance), each list's ``first`` row and number of ``judged``
    rows, the first row of each run of rows of one list (``starts``) and the number of rows.
    A list's code per row is :attr:`codes`: a column the batch run rarely needs whole, so it
    is built on first use only, then kept for the run's other uses (never written)."""

    run_code: np.ndarray
    first: np.ndarray
    judged: np.ndarray
    starts: np.ndarray
    n_rows: int

    @cached_property
    def codes(self) -> np.ndarray:
        """Each row's list code.

        Example:
            >>> Lists(np.array([0, 1, 0]), np.array([0, 2]), np.array([0, 0]),
            ...       np.array([0, 2, 3]), 5).codes.tolist()
            [0, 0, 1, 0, 0]
        """
        return _codes_per_row(self.run_code, self.starts, self.n_rows)


def _codes_per_row(run_code: np.ndarray, starts: np.ndarray, n_rows: int) -> np.ndarray:
    # each run's code repeated over its rows (``starts``: each run's first row)
    return np.repeat(run_code, np.diff(starts, append=n_rows))


def list_rows(user: np.ndarray, served: np.ndarray, judged: np.ndarray) -> Lists:
    """Each row's list (user, served: int64 each), numbered in the order of first appearance
    (as :func:`pandas.factorize` numbers the pairs), with what :class:`Lists` holds; a list's
    rows need not be one run (a log written in pieces).

    Example:
        >>> nan = float("nan")
        >>> lists = list_rows(np.array([1, 1, 2, 1]), np.array([7, 7, 7, 7]),
        ...                   np.array([1.0, nan, nan, 2.0]))
        >>> lists.run_code.tolist(), lists.first.tolist(), lists.judged.tolist()
        ([0, 1, 0], [0, 2], [2, 0])
        >>> lists.starts.tolist(), lists.codes.tolist()
        ([0, 2, 3], [0, 0, 1, 0])
    """
    user = user.astype(np.int64, copy=False)
    served = served.astype(np.int64, copy=False)
    n_runs, low, high = _count_runs(user, served)
    codes = np.empty(n_runs, dtype=np.int64)  # each run's list
    starts = np.empty(n_runs, dtype=np.int64)
    first = np.empty(n_runs, dtype=np.int64)
    counts = np.empty(n_runs, dtype=np.int64)
    n = -1
    if n_runs and high - low < len(user) + _DENSE_USERS:
        # users in a small range (integer ids, text ids' codes): a served time per user
        # instead of a hash table of every list, while each user's lists come in time order
        n = _list_rows_dense(user, served, judged, low, high - low + 1, codes, starts, first,
                             counts)
    if n < 0:  # a user's list served before one of theirs already seen: the hash table
        size = 1
        while size < 2 * n_runs:
            size *= 2
        n = _list_rows_loop(user, served, judged, size, codes, starts, first, counts)
    return Lists(codes, first[:n].copy(), counts[:n].copy(), starts, len(user))


@numba.njit(cache=True, nogil=True)
def _count_runs(user: np.ndarray,
                served: np.ndarray) -> tuple[int, int, int]:  # pragma: no cover - numba
    # the runs of rows of one (user, served), and the users' range
    n = 0
    low = high = user[0] if user.size else 0
    for i in range(user.size):
        if i == 0 or user[i] != user[i - 1] or served[i] != served[i - 1]:
            n += 1
            low = min(low, user[i])
            high = max(high, user[i])
    return n, low, high


@numba.njit(cache=True, nogil=True)
def _list_rows_dense(user: np.ndarray, served: np.ndarray, judged: np.ndarray, low: int,
                     n_users: int, codes: np.ndarray, starts: np.ndarray, first: np.ndarray,
                     counts: np.ndarray) -> int:  # pragma: no cover - numba
    # :func:`_list_rows_loop` for logs where each user's runs come in served order (a run
    # starts the user's latest list or a later one): the latest list of each user is all
    # there is to look up. -1 at the first run that goes back in time (the caller then
    # numbers the lists with the hash table from the start).
    latest = np.empty(n_users, dtype=np.int64)
    latest_code = np.full(n_users, -1, dtype=np.int64)
    n = 0
    r = 0
    code = -1
    for i in range(user.size):
        if i == 0 or user[i] != user[i - 1] or served[i] != served[i - 1]:
            starts[r] = i
            r += 1
            u = user[i] - low
            s = served[i]
            c = latest_code[u]
            if c < 0 or s > latest[u]:
                latest[u] = s
                latest_code[u] = n
                first[n] = i
                counts[n] = 0
                code = n
                n += 1
            elif s == latest[u]:
                code = c
            else:
                return -1
            codes[r - 1] = code
        if not np.isnan(judged[i]):
            counts[code] += 1
    return n


@numba.njit(cache=True, nogil=True)
def _list_rows_loop(user: np.ndarray, served: np.ndarray, judged: np.ndarray, size: int,
                    codes: np.ndarray, starts: np.ndarray, first: np.ndarray,
                    counts: np.ndarray) -> int:  # pragma: no cover - numba
    # open addressing over (user, served): a slot holds the pair and its list's code side by
    # side (one cache line per lookup)
    slots = np.empty((size, 3), dtype=np.int64)
    slots[:, 2] = -1
    mask = np.uint64(size - 1)
    n = 0
    r = 0
    code = -1
    for i in range(user.size):
        if i == 0 or user[i] != user[i - 1] or served[i] != served[i - 1]:
            starts[r] = i
            r += 1
            u, s = user[i], served[i]
            h = np.uint64(u) * np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(s)
            h = (h ^ (h >> np.uint64(31))) * np.uint64(0xBF58476D1CE4E5B9)
            h = (h ^ (h >> np.uint64(29))) & mask
            while True:
                c = slots[h, 2]
                if c < 0:
                    slots[h, 0] = u
                    slots[h, 1] = s
                    slots[h, 2] = n
                    first[n] = i
                    counts[n] = 0
                    code = n
                    n += 1
                    break
                if slots[h, 0] == u and slots[h, 1] == s:
                    code = c
                    break
                h = (h + np.uint64(1)) & mask
            codes[r - 1] = code
        if not np.isnan(judged[i]):
            counts[code] += 1
    return n


def repeats_in_runs(starts: np.ndarray, items: np.ndarray) -> bool:
    """Whether some run of rows (``starts``: each run's first row; the last ends with
    ``items``) holds an item twice.

    Example:
        >>> repeats_in_runs(np.array([0, 2]), np.array([1, 2, 1, 3])), \\
        ...     repeats_in_runs(np.array([0]), np.array([1, 2, 1]))
        (False, True)
    """
    found = np.zeros(max(1, len(starts)), dtype=np.bool_)
    run_blocks(_repeats_loop, block_bounds(len(starts), _MIN_BLOCK_ROWS // 8),
               starts.astype(np.int64, copy=False), items.astype(np.int64, copy=False), found)
    return bool(found.any())


@numba.njit(cache=True, nogil=True)
def _repeats_loop(block: int, lo: int, hi: int, starts: np.ndarray, items: np.ndarray,
                  found: np.ndarray) -> None:  # pragma: no cover - numba
    found[block] = _repeats_between(lo, hi, starts, items)


@numba.njit(cache=True, nogil=True)
def _repeats_between(lo: int, hi: int, starts: np.ndarray,
                     items: np.ndarray) -> bool:  # pragma: no cover - numba
    for r in range(lo, hi):
        a = starts[r]
        b = starts[r + 1] if r + 1 < starts.size else items.size
        if b - a <= 32:  # a served list: pairwise is cheaper than a sort
            for i in range(a, b):
                for j in range(i + 1, b):
                    if items[i] == items[j]:
                        return True
        else:
            run = np.sort(items[a:b])
            for i in range(1, run.size):
                if run[i] == run[i - 1]:
                    return True
    return False


def group_order(group_of: np.ndarray, row_key: np.ndarray,
                n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose key's group (``group_of[row_key]``) is in ``0 .. n_groups - 1``,
    grouped (a counting sort: row order within a group), and each group's bounds in them:
    group ``g``'s rows are ``rows[bounds[g]:bounds[g + 1]]``, i.e.
    ``np.flatnonzero(group_of[row_key] == g)``.

    Example:
        >>> rows, bounds = group_order(np.array([1, -1, 0]), np.array([0, 1, 2, 0]), 2)
        >>> rows.tolist(), bounds.tolist()
        ([2, 0, 3], [0, 1, 3])
    """
    bounds = np.zeros(n_groups + 1, dtype=np.int64)
    group_of = group_of.astype(np.int64, copy=False)
    row_key = row_key.astype(np.int64, copy=False)
    _group_counts(group_of, row_key, bounds)
    rows = np.empty(int(bounds[-1]), dtype=np.int64)
    _group_loop(group_of, row_key, bounds[:-1].copy(), rows)
    return rows, bounds


@numba.njit(cache=True, nogil=True)
def _group_counts(group_of: np.ndarray, row_key: np.ndarray,
                  bounds: np.ndarray) -> None:  # pragma: no cover - numba
    for i in range(row_key.size):
        g = group_of[row_key[i]]
        if g >= 0:
            bounds[g + 1] += 1
    for g in range(1, bounds.size):
        bounds[g] += bounds[g - 1]


@numba.njit(cache=True, nogil=True)
def _group_loop(group_of: np.ndarray, row_key: np.ndarray, next_slot: np.ndarray,
                rows: np.ndarray) -> None:  # pragma: no cover - numba
    for i in range(row_key.size):
        g = group_of[row_key[i]]
        if g >= 0:
            rows[next_slot[g]] = i
            next_slot[g] += 1


def by_time_then_user(served: np.ndarray, user: np.ndarray) -> np.ndarray:
    """The order of rows by ``served``, then by ``user`` (int64 each), equal pairs in row
    order: ``np.lexsort((user, served))``, with one sort by time and the few rows of one time
    sorted by user.

    Example:
        >>> by_time_then_user(np.array([5, 3, 5, 3]), np.array([2, 9, 1, 9])).tolist()
        [1, 3, 2, 0]
    """
    order = np.argsort(served, kind="stable")
    _users_within_times(served.astype(np.int64, copy=False), user.astype(np.int64, copy=False),
                        order)
    return order


@numba.njit(cache=True, nogil=True)
def _users_within_times(served: np.ndarray, user: np.ndarray,
                        order: np.ndarray) -> None:  # pragma: no cover - numba
    # each run of rows of one time (in ``order``) sorted by user, stable
    n = order.size
    a = 0
    while a < n:
        b = a + 1
        while b < n and served[order[b]] == served[order[a]]:
            b += 1
        if b - a > 32:
            run = order[a:b].copy()
            order[a:b] = run[np.argsort(user[run], kind="mergesort")]
        else:
            for x in range(a + 1, b):
                j = order[x]
                y = x - 1
                while y >= a and user[order[y]] > user[j]:
                    order[y + 1] = order[y]
                    y -= 1
                order[y + 1] = j
        a = b


class WindowColumns(NamedTuple):
    """The columns one evaluation per group reads, grouped (row order within a group): the
    predictions' ``list``, ``item`` and ``order`` (group ``g``: ``bounds[g]:bounds[g + 1]``)
    and the truth's (the rows with a value): ``truth_list``, ``truth_item``,
    ``truth_value`` (``truth_bounds``)."""

    bounds: np.ndarray
    list: np.ndarray
    item: np.ndarray
    order: np.ndarray
    truth_bounds: np.ndarray
    truth_list: np.ndarray
    truth_item: np.ndarray
    truth_value: np.ndarray


def window_columns(group_of: np.ndarray, run_code: np.ndarray, starts: np.ndarray,
                   n_groups: int, item: np.ndarray, order: np.ndarray,
                   judged: np.ndarray) -> WindowColumns:
    """The rows grouped by their list's group (``group_of[list]``, none when negative; the
    rows' lists by runs: ``run_code[r]`` from row ``starts[r]`` to the next run's), row
    order within a group, in one pass: the rows' list, item and order, and the list, item
    and value of the rows with a value (``judged`` not NaN). No array of row numbers or of
    the rows' lists, no gather per column, no mask per group.

    Example:
        >>> nan = float("nan")
        >>> out = window_columns(np.array([1, -1, 0]), np.array([0, 1, 2, 0]),
        ...     np.array([0, 1, 2, 3]), 2, np.array([5, 6, 7, 8]),
        ...     np.array([1.0, 1.0, 1.0, 2.0]), np.array([4.0, 3.0, nan, nan]))
        >>> out.bounds.tolist(), out.list.tolist(), out.item.tolist(), out.order.tolist()
        ([0, 1, 3], [2, 0, 0], [7, 5, 8], [1.0, 1.0, 2.0])
        >>> out.truth_bounds.tolist(), out.truth_item.tolist(), out.truth_value.tolist()
        ([0, 0, 1], [5], [4.0])
    """
    group_of = group_of.astype(np.int64, copy=False)
    run_code = run_code.astype(np.int64, copy=False)
    starts = starts.astype(np.int64, copy=False)
    judged = judged.astype(np.float64, copy=False)
    # blocks of runs on the threads: each counts its rows per group, then writes them from
    # its own first slot in each group (groups in order, blocks in row order within a group)
    blocks = block_bounds(len(starts), _MIN_BLOCK_ROWS // 8)
    counts = np.zeros((2, max(1, len(blocks)), n_groups), dtype=np.int64)
    run_blocks(_block_counts, blocks, group_of, run_code, starts, judged, counts)
    slots, bounds = _block_slots(counts[0])
    truth_slots, truth_bounds = _block_slots(counts[1])
    n, n_truth = int(bounds[-1]), int(truth_bounds[-1])
    out = WindowColumns(bounds, np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
                        np.empty(n, dtype=np.float64), truth_bounds,
                        np.empty(n_truth, dtype=np.int64), np.empty(n_truth, dtype=np.int64),
                        np.empty(n_truth, dtype=np.float64))
    run_blocks(_columns_loop, blocks, group_of, run_code, starts, slots, truth_slots,
               item.astype(np.int64, copy=False), order.astype(np.float64, copy=False),
               judged, *out[1:4], *out[5:])
    return out


def _block_slots(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each block's first slot in each group (``counts[block, group]``: its rows there),
    groups in order and blocks in order within a group; and the groups' bounds."""
    n_blocks, n_groups = counts.shape
    ends = np.cumsum(counts.T.ravel())  # group-major: group g, block b at g * blocks + b
    slots = (ends - counts.T.ravel()).reshape(n_groups, n_blocks).T.copy()
    bounds = np.zeros(n_groups + 1, dtype=np.int64)
    bounds[1:] = ends[n_blocks - 1::n_blocks]
    return slots, bounds


@numba.njit(cache=True, nogil=True)
def _block_counts(block: int, lo: int, hi: int, group_of: np.ndarray, run_code: np.ndarray,
                  starts: np.ndarray, judged: np.ndarray,
                  counts: np.ndarray) -> None:  # pragma: no cover - numba
    for r in range(lo, hi):
        g = group_of[run_code[r]]
        if g >= 0:
            end = starts[r + 1] if r + 1 < starts.size else judged.size
            counts[0, block, g] += end - starts[r]
            for i in range(starts[r], end):
                if not np.isnan(judged[i]):
                    counts[1, block, g] += 1


@numba.njit(cache=True, nogil=True)
def _columns_loop(block: int, lo: int, hi: int, group_of: np.ndarray, run_code: np.ndarray,
                  starts: np.ndarray, slots: np.ndarray, truth_slots: np.ndarray,
                  item: np.ndarray, order: np.ndarray, judged: np.ndarray,
                  list_out: np.ndarray, item_out: np.ndarray, order_out: np.ndarray,
                  truth_list: np.ndarray, truth_item: np.ndarray,
                  truth_value: np.ndarray) -> None:  # pragma: no cover - numba
    next_slot = slots[block]  # this block's next slot in each group
    next_truth = truth_slots[block]
    for r in range(lo, hi):
        code = run_code[r]
        g = group_of[code]
        if g < 0:
            continue
        end = starts[r + 1] if r + 1 < starts.size else judged.size
        for i in range(starts[r], end):
            slot = next_slot[g]
            list_out[slot] = code
            item_out[slot] = item[i]
            order_out[slot] = order[i]
            next_slot[g] = slot + 1
            if not np.isnan(judged[i]):
                slot = next_truth[g]
                truth_list[slot] = code
                truth_item[slot] = item[i]
                truth_value[slot] = judged[i]
                next_truth[g] = slot + 1
