"""Encode ids once: users to dense codes ``0..n-1``, items to order-preserving int64 keys.

Users get dense codes shared by truth and predictions (they index the per-user arrays).
Items only need to be compared within a user and ordered for the ``item`` tie policy, so integer
item ids are their own keys (no hashing of 100M rows) and string ids get codes from one sorted
dictionary shared by both sides; either way key order is id order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from receval.data.columns import IdArray
from receval.engines.threads import block_bounds, run_blocks

# Integer ids up to this multiple of the row count are encoded with a direct lookup table.
_DENSE_FACTOR = 4


@dataclass(frozen=True)
class Dictionary:
    """Maps codes back to the original ids. ``ids is None`` means codes are the ids."""

    ids: np.ndarray | None

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """The original ids of ``codes``.

        Example:
            >>> Dictionary(np.array(["a", "b"], dtype=object)).decode(np.array([1, 0])).tolist()
            ['b', 'a']
        """
        return codes if self.ids is None else self.ids[codes]

    @property
    def kind(self) -> str:
        """``"int"`` or ``"str"``: the type of the original ids."""
        return "int" if self.ids is None or self.ids.dtype.kind in "iu" else "str"


def _kind(arr: IdArray) -> str:
    return "int" if isinstance(arr, np.ndarray) else "str"


def check_same_kind(truth: IdArray, predictions: IdArray, what: str) -> None:
    """Raise a ``TypeError`` when truth and predictions use different id types.

    Example:
        >>> check_same_kind(np.array([1]), pa.array(["1"]), "user")
        Traceback (most recent call last):
        ...
        TypeError: user ids of mismatched types: truth has integers, predictions has strings
    """
    kt, kp = _kind(truth), _kind(predictions)
    if kt != kp:
        names = {"int": "integers", "str": "strings"}
        raise TypeError(
            f"{what} ids of mismatched types: truth has {names[kt]}, predictions has {names[kp]}"
        )


def encode_users(
    truth: IdArray, predictions: IdArray
) -> tuple[np.ndarray, np.ndarray, Dictionary, int]:
    """Dense user codes shared by both sides, sorted by id.

    Example:
        >>> t, p, d, n = encode_users(np.array([10, 30]), np.array([30, 20]))
        >>> t.tolist(), p.tolist(), d.decode(np.arange(n)).tolist()
        ([0, 2], [2, 1], [10, 20, 30])
    """
    check_same_kind(truth, predictions, "user")
    if isinstance(truth, np.ndarray) and isinstance(predictions, np.ndarray):
        return _encode_ints(truth, predictions)
    return _encode_strings(truth, predictions)


def encode_items(
    truth: IdArray, predictions: IdArray
) -> tuple[np.ndarray, np.ndarray, Dictionary]:
    """Order-preserving int64 item keys: integer ids as they are, strings via one dictionary.

    Example:
        >>> t, p, d = encode_items(pa.array(["b", "a"]), pa.array(["c", "a"]))
        >>> t.tolist(), p.tolist(), d.ids.tolist()
        ([1, 0], [2, 0], ['a', 'b', 'c'])
    """
    check_same_kind(truth, predictions, "item")
    if isinstance(truth, np.ndarray) and isinstance(predictions, np.ndarray):
        return truth.astype(np.int64, copy=False), predictions.astype(np.int64, copy=False), (
            Dictionary(None)
        )
    t, p, d, _ = _encode_strings(truth, predictions)
    return t, p, d


def _encode_strings(
    truth: IdArray, predictions: IdArray
) -> tuple[np.ndarray, np.ndarray, Dictionary, int]:
    both = pa.concat_arrays([truth, predictions])
    uniques = pc.unique(both)
    uniques = uniques.take(pc.sort_indices(uniques))
    t = pc.index_in(truth, value_set=uniques).to_numpy(zero_copy_only=False).astype(np.int64)
    p = pc.index_in(predictions, value_set=uniques).to_numpy(zero_copy_only=False)
    ids = np.asarray(uniques.to_pylist(), dtype=object)
    return t, p.astype(np.int64), Dictionary(ids), len(ids)


def _encode_ints(
    truth: np.ndarray, predictions: np.ndarray
) -> tuple[np.ndarray, np.ndarray, Dictionary, int]:
    lo, hi = _min_max(truth, predictions)
    span = hi - lo + 1
    if span <= _DENSE_FACTOR * (len(truth) + len(predictions)) + 1024:
        # ids in a narrow range: mark the ones present, number them in order, look them up
        present = np.zeros(span, dtype=np.uint8)
        _mark(truth, lo, present)
        _mark(predictions, lo, present)
        ids = np.flatnonzero(present).astype(np.int64) + lo
        # int32 codes (when they fit) halve the memory traffic of grouping by user
        dtype = np.int32 if len(ids) < 2**31 else np.int64
        table = np.cumsum(present, dtype=dtype) - 1
        return (_lookup(truth, lo, table), _lookup(predictions, lo, table), Dictionary(ids),
                len(ids))
    ids, inverse = np.unique(np.concatenate([truth, predictions]), return_inverse=True)
    inverse = inverse.astype(np.int64)
    return inverse[: len(truth)], inverse[len(truth) :], Dictionary(ids), len(ids)


def _min_max(a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """The smallest and largest value of two non-empty arrays, in one parallel pass each."""
    lows, highs = [], []
    for values in (a, b):
        bounds = block_bounds(len(values), min_size=1 << 16)
        out = np.empty((len(bounds), 2), dtype=values.dtype)
        run_blocks(_block_min_max, bounds, values, out)
        lows.append(out[:, 0].min(initial=values[0]))
        highs.append(out[:, 1].max(initial=values[0]))
    return int(min(lows)), int(max(highs))


@numba.njit(cache=True, nogil=True)
def _block_min_max(block: int, lo: int, hi: int, values: np.ndarray, out: np.ndarray) -> None:
    low = high = values[lo]
    for i in range(lo + 1, hi):
        low = min(low, values[i])
        high = max(high, values[i])
    out[block, 0] = low
    out[block, 1] = high


def _mark(values: np.ndarray, lo: int, present: np.ndarray) -> None:
    """``present[values - lo] = 1``, in parallel blocks."""
    run_blocks(_mark_block, block_bounds(len(values), min_size=1 << 16), values, lo, present)


@numba.njit(cache=True, nogil=True)
def _mark_block(block: int, start: int, stop: int, values: np.ndarray, lo: int,
                present: np.ndarray) -> None:
    # threads may write the same byte at once: they all write 1
    for i in range(start, stop):
        present[values[i] - lo] = 1


def _lookup(values: np.ndarray, lo: int, table: np.ndarray) -> np.ndarray:
    """``table[values - lo]``, into an array numpy allocates (huge pages: cheap to fill)."""
    out = np.empty(len(values), dtype=table.dtype)
    run_blocks(_lookup_block, block_bounds(len(values), min_size=1 << 16), values, lo, table,
               out)
    return out


@numba.njit(cache=True, nogil=True)
def _lookup_block(block: int, start: int, stop: int, values: np.ndarray, lo: int,
                  table: np.ndarray, out: np.ndarray) -> None:
    for i in range(start, stop):
        out[i] = table[values[i] - lo]
