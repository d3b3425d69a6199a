"""Group rows by user: compressed sparse rows (CSR) built by a parallel, stable bucket sort.

Rows keep their input order within a user (the ``stable`` tie policy relies on it). Input that is
already sorted by user is detected and used without copying.

Why a bucket sort: scattering 10^8 shuffled rows straight to their final places touches a random
cache line and, worse, a random memory page per row. Two passes are faster than one: the first
deals rows into at most 256 buckets of consecutive users (as many sequential write streams),
the second sorts each bucket by user while it sits in cache. Both passes run on all cores
(GIL-free numba functions on a few threads, :mod:`receval.parallel`), and
the second works in place, so the only extra memory is two bytes per row.

The big arrays are allocated inside numba (:func:`fresh`), on ordinary 4 KiB pages: numpy asks
the kernel for huge pages, and on the virtual machines measured (issue 24) a fresh huge page
often costs several times more to fault in than the same memory in small pages (zeroing memory
the host has to hand back first). At 1M users x 100 rows, first call in a process, grouping took
3.2-4.6 s of system time with huge pages and 0.7-0.8 s without.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt

from receval import parallel
from receval.parallel import block_bounds, run_blocks

# A bucket of consecutive users should hold about this many rows: its items and values
# (16 bytes a row) then stay in cache while they are sorted by user.
_BUCKET_ROWS = 1 << 15
# ... but pass 2 writes to every bucket at once: thousands of write streams thrash the TLB.
_MAX_BUCKETS = 256
# Users per bucket are at most 2**16: a row's user within its bucket fits in a uint16.
_MAX_BUCKET_BITS = 16


def fresh(n: int, dtype: npt.DTypeLike) -> np.ndarray:
    """An uninitialised array of ``n`` values on ordinary pages (see the module's notes).

    Example:
        >>> a = fresh(3, np.uint16)
        >>> a.shape, a.dtype.name, a.flags.writeable
        ((3,), 'uint16', True)
    """
    return _empty(n, np.zeros(0, dtype=dtype))


@numba.njit(cache=True, nogil=True)
def _empty(n: int, proto: np.ndarray) -> np.ndarray:
    return np.empty(n, dtype=proto.dtype)


@dataclass(frozen=True)
class Codes:
    """Each row's user code read from its id: ``table[raw - lo]``, or ``raw - lo`` when
    ``table`` is ``None``. Grouping reads the codes this way, so a column of 10^8 codes is never
    written out: dense integer ids are their codes shifted, dictionary-encoded strings are
    their dictionary's codes read through one small table.

    Example:
        >>> c = Codes(np.array([12, 10, 12]), 10, np.array([0, -1, 1], dtype=np.int32))
        >>> c.codes().tolist(), len(c), Codes(np.array([5, 4]), 4).codes().tolist()
        ([1, 0, 1], 3, [1, 0])
    """

    raw: np.ndarray
    lo: int = 0
    table: np.ndarray | None = None
    #: the dtype of :meth:`codes` when there is no table (``None``: the ids' own)
    dtype: type | None = None

    def __len__(self) -> int:
        return len(self.raw)

    def codes(self) -> np.ndarray:
        """The codes written out, one per row."""
        if self.table is None:
            shifted = self.raw - self.lo if self.lo else self.raw
            return shifted if self.dtype is None else shifted.astype(self.dtype, copy=False)
        out = fresh(len(self.raw), self.table.dtype)
        run_blocks(_lookup_block, block_bounds(len(self.raw), min_size=1 << 16), self.raw,
                   self.lo, self.table, out)
        return out


@numba.njit(cache=True, nogil=True)
def _lookup_block(block: int, start: int, stop: int, raw: np.ndarray, lo: int,
                  table: np.ndarray, out: np.ndarray) -> None:
    for i in range(start, stop):
        out[i] = table[raw[i] - lo]


@dataclass
class CSR:
    """Rows grouped by user code: user ``u`` owns ``items[indptr[u]:indptr[u+1]]``.

    Example:
        >>> m = group_by_user(np.array([1, 0, 1]), 2, np.array([7, 8, 9]), np.array([.1, .2, .3]))
        >>> m.indptr.tolist(), m.items.tolist(), m.values.tolist()
        ([0, 1, 3], [8, 7, 9], [0.2, 0.1, 0.3])
    """

    indptr: np.ndarray
    items: np.ndarray
    values: np.ndarray

    @property
    def n_users(self) -> int:
        """Number of user rows (some may be empty)."""
        return len(self.indptr) - 1

    def lengths(self) -> np.ndarray:
        """Rows per user."""
        return np.diff(self.indptr)


def group_by_user(codes: np.ndarray | Codes, n_users: int, items: np.ndarray,
                  values: np.ndarray) -> CSR:
    """Stable sort of ``(items, values)`` by user ``codes`` (``0 <= code < n_users``) into a CSR.

    ``codes`` may be any integer array (``int32`` codes halve the memory traffic), or
    :class:`Codes` read through their table (no array of codes is written).

    Example:
        >>> m = group_by_user(Codes(np.array([11, 10, 11]), 10, np.array([0, 1])), 2,
        ...                   np.array([7, 8, 9]), np.array([.1, .2, .3]))
        >>> m.indptr.tolist(), m.items.tolist()
        ([0, 1, 3], [8, 7, 9])
    """
    if not isinstance(codes, Codes):
        codes = Codes(codes)
    raw, lo = codes.raw, codes.lo
    mapped = codes.table is not None
    table = codes.table if codes.table is not None else np.zeros(1, dtype=np.int32)
    if raw.dtype.kind not in "iu" or raw.dtype.itemsize > 8 or raw.dtype == np.uint64:
        raw = raw.astype(np.int64)
    raw = np.ascontiguousarray(raw)
    items = np.ascontiguousarray(items, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    n = len(raw)
    if n == 0 or _is_sorted(raw, lo, table, mapped):
        indptr = np.zeros(n_users + 1, dtype=np.int64)
        if not mapped and lo == 0:
            np.cumsum(np.bincount(raw, minlength=n_users), out=indptr[1:])
        elif n:
            _count_users(raw, lo, table, mapped, indptr)  # indptr[code + 1] += 1
            np.cumsum(indptr, out=indptr)
        return CSR(indptr, items, values)
    bits = _bucket_bits(n, n_users)
    n_buckets = (n_users + (1 << bits) - 1) >> bits
    n_chunks = max(1, min(parallel.n_threads(), n // 100_000))
    step = (n + n_chunks - 1) // n_chunks
    chunks = [(c * step, min(n, (c + 1) * step)) for c in range(n_chunks)]
    indptr = np.zeros(n_users + 1, dtype=np.int64)
    out_items = fresh(n, np.int64)
    out_values = fresh(n, np.float64)
    local = fresh(n, np.uint16)
    # pass 1: rows per (chunk of the input, bucket); then where each chunk's rows of each
    # bucket go: bucket by bucket, chunks in input order (stable)
    counts = np.zeros((n_chunks, n_buckets), dtype=np.int64)
    run_blocks(_count_buckets, chunks, raw, lo, table, mapped, bits, counts)
    bucket_start = _bucket_offsets(counts)
    # pass 2: deal the rows into their buckets, keeping each row's user within the bucket
    run_blocks(_deal, chunks, raw, lo, table, mapped, items, values, bits, counts, out_items,
               out_values, local)
    # pass 3: sort each bucket by user, in place through a scratch copy that stays in cache
    max_rows = int(np.diff(bucket_start).max(initial=0))
    run_blocks(_sort_buckets, block_bounds(n_buckets), bucket_start, bits, max_rows, local,
               indptr, out_items, out_values)
    return CSR(indptr, out_items, out_values)


def _bucket_bits(n_rows: int, n_users: int) -> int:
    """log2 of the users per bucket: about ``_BUCKET_ROWS`` rows, at most ``_MAX_BUCKETS``."""
    rows_per_user = max(n_rows / max(n_users, 1), 1e-9)
    bits = 0
    while bits < _MAX_BUCKET_BITS and (
        (2 << bits) * rows_per_user <= _BUCKET_ROWS or (n_users >> bits) > _MAX_BUCKETS
    ):
        bits += 1
    return bits


@numba.njit(cache=True, nogil=True, inline="always")
def _code(raw: np.ndarray, i: int, lo: int, table: np.ndarray, mapped: bool) -> int:
    """Row ``i``'s user code (see :class:`Codes`)."""
    return table[raw[i] - lo] if mapped else raw[i] - lo


@numba.njit(cache=True, nogil=True)
def _is_sorted(raw: np.ndarray, lo: int, table: np.ndarray, mapped: bool) -> bool:
    previous = _code(raw, 0, lo, table, mapped) if len(raw) else 0
    for i in range(1, len(raw)):
        code = _code(raw, i, lo, table, mapped)
        if code < previous:
            return False
        previous = code
    return True


@numba.njit(cache=True, nogil=True)
def _count_users(raw: np.ndarray, lo: int, table: np.ndarray, mapped: bool,
                 out: np.ndarray) -> None:
    for i in range(len(raw)):
        out[_code(raw, i, lo, table, mapped) + 1] += 1


@numba.njit(cache=True, nogil=True)
def _count_buckets(chunk: int, first: int, stop: int, raw: np.ndarray, lo: int,
                   table: np.ndarray, mapped: bool, bits: int, counts: np.ndarray) -> None:
    for i in range(first, stop):
        counts[chunk, _code(raw, i, lo, table, mapped) >> bits] += 1


@numba.njit(cache=True, nogil=True)
def _bucket_offsets(counts: np.ndarray) -> np.ndarray:
    """Turn ``counts[chunk, bucket]`` into each chunk's first row in each bucket; return the
    buckets' starts (and the total at the end)."""
    n_chunks, n_buckets = counts.shape
    bucket_start = np.empty(n_buckets + 1, dtype=np.int64)
    total = 0
    for b in range(n_buckets):
        bucket_start[b] = total
        for c in range(n_chunks):
            cnt = counts[c, b]
            counts[c, b] = total
            total += cnt
    bucket_start[n_buckets] = total
    return bucket_start


@numba.njit(cache=True, nogil=True)
def _deal(chunk: int, first: int, stop: int, raw: np.ndarray, lo: int, table: np.ndarray,
          mapped: bool, items: np.ndarray, values: np.ndarray, bits: int, counts: np.ndarray,
          out_items: np.ndarray, out_values: np.ndarray, local: np.ndarray) -> None:
    low = (1 << bits) - 1
    for i in range(first, stop):
        u = _code(raw, i, lo, table, mapped)
        b = u >> bits
        pos = counts[chunk, b]
        counts[chunk, b] = pos + 1
        out_items[pos] = items[i]
        out_values[pos] = values[i]
        local[pos] = u & low


@numba.njit(cache=True, nogil=True)
def _sort_buckets(block: int, b_lo: int, b_hi: int, bucket_start: np.ndarray, bits: int,
                  max_rows: int, local: np.ndarray, indptr: np.ndarray, out_items: np.ndarray,
                  out_values: np.ndarray) -> None:
    """Counting sort of buckets ``b_lo:b_hi`` by user, filling their users' ``indptr``."""
    n_users = len(indptr) - 1
    tmp_items = np.empty(max_rows, dtype=np.int64)
    tmp_values = np.empty(max_rows, dtype=np.float64)
    start = np.empty((1 << bits) + 1, dtype=np.int64)
    for b in range(b_lo, b_hi):
        lo = bucket_start[b]
        hi = bucket_start[b + 1]
        first_user = b << bits
        n_local = min(1 << bits, n_users - first_user)
        for j in range(n_local + 1):
            start[j] = 0
        for i in range(lo, hi):
            start[local[i] + 1] += 1
        start[0] = lo
        for j in range(n_local):
            start[j + 1] += start[j]
            indptr[first_user + j + 1] = start[j + 1]
        if n_local == 1:
            continue
        for i in range(hi - lo):
            tmp_items[i] = out_items[lo + i]
            tmp_values[i] = out_values[lo + i]
        for i in range(hi - lo):
            j = local[lo + i]
            pos = start[j]
            start[j] = pos + 1
            out_items[pos] = tmp_items[i]
            out_values[pos] = tmp_values[i]


def drop_duplicates(csr: CSR, keep: str) -> tuple[CSR, int]:
    """Keep one row per (user, item): the ``"first"`` in input order or the ``"max"`` value.

    Returns the new CSR and the number of rows dropped.

    Example:
        >>> m = CSR(np.array([0, 3]), np.array([5, 6, 5]), np.array([1.0, 2.0, 3.0]))
        >>> out, dropped = drop_duplicates(m, "max")
        >>> out.items.tolist(), out.values.tolist(), dropped
        ([6, 5], [2.0, 3.0], 1)
    """
    mask = _keep_mask(csr.indptr, csr.items, csr.values, keep == "max")
    kept_before = np.zeros(len(mask) + 1, dtype=np.int64)
    np.cumsum(mask, out=kept_before[1:])
    indptr = kept_before[csr.indptr]
    return CSR(indptr, csr.items[mask], csr.values[mask]), int(len(mask) - mask.sum())


@numba.njit(cache=True)
def _keep_mask(
    indptr: np.ndarray, items: np.ndarray, values: np.ndarray, by_max: bool
) -> np.ndarray:
    mask = np.zeros(len(items), dtype=np.bool_)
    for u in range(len(indptr) - 1):
        a, b = indptr[u], indptr[u + 1]
        order = np.argsort(items[a:b], kind="mergesort")
        i = 0
        while i < len(order):
            best = order[i]
            j = i + 1
            while j < len(order) and items[a + order[j]] == items[a + best]:
                if by_max and values[a + order[j]] > values[a + best]:
                    best = order[j]
                j += 1
            mask[a + best] = True
            i = j
    return mask
