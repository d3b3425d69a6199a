"""Encode ids once: users to dense codes ``0..n-1``, items to order-preserving int64 keys.

Users get dense codes shared by truth and predictions (they index the per-user arrays).
Items only need to be compared within a user and ordered for the ``item`` tie policy, so integer
item ids are their own keys (no hashing of 100M rows) and string ids get codes from one sorted
dictionary shared by both sides; either way key order is id order.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from receval.data.columns import IdArray
from receval.data.csr import Codes
from receval.exceptions import ReceValError
from receval.parallel import block_bounds, run_blocks

# Integer ids up to this multiple of the row count are encoded with a direct lookup table.
_DENSE_FACTOR = 4


@dataclass(frozen=True)
class Dictionary:
    """Maps codes back to the original ids. ``source is None`` means codes are the ids.

    Text ids stay an Arrow array (their bytes, not a Python string each) until
    :attr:`ids` is asked for: :meth:`decode` turns only the codes it is given into strings
    (a run with many distinct ids decodes its users once, for the per-user values, and its
    items never).
    """

    source: np.ndarray | pa.Array | None

    @functools.cached_property
    def ids(self) -> np.ndarray | None:
        """Every id, in code order (text ids as Python strings, made on first use).

        Example:
            >>> Dictionary(pa.array(["a", "b"])).ids.tolist()
            ['a', 'b']
        """
        if isinstance(self.source, pa.Array):
            return np.asarray(self.source.to_numpy(zero_copy_only=False))
        return self.source

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """The original ids of ``codes``.

        Example:
            >>> Dictionary(np.array(["a", "b"], dtype=object)).decode(np.array([1, 0])).tolist()
            ['b', 'a']
            >>> Dictionary(pa.array(["a", "b"])).decode(np.array([1, 1])).tolist()
            ['b', 'b']
        """
        if self.source is None:
            return codes
        if isinstance(self.source, pa.Array) and "ids" not in self.__dict__:
            taken = self.source.take(pa.array(np.asarray(codes, dtype=np.int64)))
            return np.asarray(taken.to_numpy(zero_copy_only=False))
        ids = self.ids
        assert ids is not None
        return ids[codes]

    @property
    def kind(self) -> str:
        """``"int"`` or ``"str"``: the type of the original ids."""
        if isinstance(self.source, pa.Array):
            return "str"
        return "int" if self.source is None or self.source.dtype.kind in "iu" else "str"


def _kind(arr: IdArray) -> str:
    return "int" if isinstance(arr, np.ndarray) else "str"


def check_same_kind(truth: IdArray, predictions: IdArray, what: str) -> None:
    """Raise a :class:`~receval.exceptions.ReceValError` when truth and predictions use
    different id types (two frames: receval does not guess whether ``1`` is ``"1"``).

    Example:
        >>> check_same_kind(np.array([1]), pa.array(["1"]), "user")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: user ids of mismatched types: truth has integers, \
predictions has strings; give both sides one type (e.g. .astype(str) on both)
    """
    kt, kp = _kind(truth), _kind(predictions)
    if kt != kp:
        names = {"int": "integers", "str": "strings"}
        raise ReceValError(
            f"{what} ids of mismatched types: truth has {names[kt]}, predictions has "
            f"{names[kp]}; give both sides one type (e.g. .astype(str) on both)"
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
    t, p, d, n = user_codes(truth, predictions)
    return t.codes(), p.codes(), d, n


def user_codes(truth: IdArray, predictions: IdArray) -> tuple[Codes, Codes, Dictionary, int]:
    """The codes of :func:`encode_users`, as each row's id read through a table (no column of
    codes is written: :func:`~receval.data.csr.group_by_user` reads them as it groups).

    Example:
        >>> t, p, d, n = user_codes(np.array([10, 30]), np.array([30, 20]))
        >>> t.codes().tolist(), p.codes().tolist(), n
        ([0, 2], [2, 1], 3)
    """
    check_same_kind(truth, predictions, "user")
    if isinstance(truth, np.ndarray) and isinstance(predictions, np.ndarray):
        return _encode_ints(truth, predictions)
    # int32 user codes (as for integer ids): half the memory of int64 for every row
    return _string_codes(truth, predictions, small_codes=True)


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
    truth: IdArray, predictions: IdArray, small_codes: bool = False
) -> tuple[np.ndarray, np.ndarray, Dictionary, int]:
    """Codes of sorted unique strings, from each side's dictionary (the strings of every row are
    never copied: a dictionary-encoded column is its few distinct values and int32 indices).

    Example:
        >>> t, p, d, n = _encode_strings(pa.array(["b", "a"]).dictionary_encode(),
        ...                              pa.array(["c", "a", "c"]))
        >>> t.tolist(), p.tolist(), d.ids.tolist(), n
        ([1, 0], [2, 0, 2], ['a', 'b', 'c'], 3)
    """
    t, p, d, n = _string_codes(truth, predictions, small_codes)
    return t.codes(), p.codes(), d, n


def _string_codes(
    truth: IdArray, predictions: IdArray, small_codes: bool = False
) -> tuple[Codes, Codes, Dictionary, int]:
    """:func:`_encode_strings`' codes as each row's dictionary index read through the codes of
    its dictionary's values."""
    t_values, t_index = _used_dictionary(truth)
    p_values, p_index = _used_dictionary(predictions)
    uniques = pc.unique(pa.concat_arrays([t_values, p_values]))
    uniques = uniques.take(pc.sort_indices(uniques))
    dtype = np.int32 if small_codes and len(uniques) < 2**31 else np.int64
    t = _recode(t_values, t_index, uniques, dtype)
    p = _recode(p_values, p_index, uniques, dtype)
    # the strings stay Arrow's: decoded to Python strings only where asked (Dictionary.decode)
    return t, p, Dictionary(uniques), len(uniques)


def _used_dictionary(arr: IdArray) -> tuple[pa.Array, Codes]:
    """The distinct values of ``arr`` (only those some row uses) and each row's index into
    them (its index into the full dictionary, read through a table when some are unused)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not isinstance(arr, pa.DictionaryArray):
        arr = pc.dictionary_encode(arr)
    index = arr.indices.to_numpy(zero_copy_only=False)
    values = arr.dictionary
    if values.type != pa.string():
        values = values.cast(pa.string())
    used = np.zeros(len(values), dtype=bool)
    used[index] = True
    if not used.all():
        values = values.filter(pa.array(used))
        # the filtered dictionary keeps its order: old index -> new index
        return values, Codes(index, 0, np.cumsum(used, dtype=np.int64) - 1)
    return values, Codes(index)


def _recode(values: pa.Array, index: Codes, uniques: pa.Array, dtype: type = np.int64) -> Codes:
    """Each row's code among the sorted ``uniques``, via its dictionary's codes."""
    codes = pc.index_in(values, value_set=uniques).to_numpy(zero_copy_only=False)
    codes = codes.astype(dtype)
    # one table from the row's dictionary index straight to its code
    return Codes(index.raw, 0, codes if index.table is None else codes[index.table])


def _encode_ints(truth: np.ndarray, predictions: np.ndarray
                 ) -> tuple[Codes, Codes, Dictionary, int]:
    lo, hi = _min_max(truth, predictions)
    span = hi - lo + 1
    if span <= _DENSE_FACTOR * (len(truth) + len(predictions)) + 1024:
        # ids in a narrow range: mark the ones present, number them in order; each row's
        # code is read through this table when the rows are grouped
        present = np.zeros(span, dtype=np.uint8)
        _mark(truth, lo, present)
        _mark(predictions, lo, present)
        ids = np.flatnonzero(present).astype(np.int64) + lo
        # int32 codes (when they fit) halve the memory traffic of grouping by user
        dtype = np.int32 if len(ids) < 2**31 else np.int64
        if len(ids) == span:  # every id in the range is used: its code is the id - lo
            return (Codes(truth, lo, None, dtype), Codes(predictions, lo, None, dtype),
                    Dictionary(ids), len(ids))
        # gaps: written out once (a table lookup in each pass of grouping costs more)
        table = np.cumsum(present, dtype=dtype) - 1
        return (Codes(Codes(truth, lo, table).codes()),
                Codes(Codes(predictions, lo, table).codes()), Dictionary(ids), len(ids))
    ids, inverse = np.unique(np.concatenate([truth, predictions]), return_inverse=True)
    inverse = inverse.astype(np.int64)
    return (Codes(inverse[: len(truth)]), Codes(inverse[len(truth) :]), Dictionary(ids),
            len(ids))


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
