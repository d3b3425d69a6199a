"""Item-item similarity for diversity and serendipity, as numba helpers over plain arrays.

Two kinds (Microsoft Recommenders ``item_sim_measure``):

- ``features``: cosine of item feature vectors (category one-hot / multi-hot, or an
  embedding); rows are scaled to unit length once, so a similarity is a dot product and a
  sum of similarities to a set is one dot product with the set's summed vector.
- ``hamming`` (diversity only): the number of feature positions whose raw values differ, a
  distance (RecTools ``PairwiseHammingDistanceCalculator``).
- ``cooccurrence``: c(i, j) / sqrt(c_i c_j), c(i, j) the training users who hold both items,
  c_i = c(i, i) those who hold i (Zhang et al., Auralist, WSDM 2012). Looked up by binary
  search in the sorted rows of the sparse co-occurrence matrix: O(log d_i) a pair. An item
  without training users has similarity 0 to every item (Microsoft Recommenders' fillna(0)).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from receval.beyond.context import Context
from receval.exceptions import ReceValError

FEATURES = 0
COOCCURRENCE = 1
HAMMING = 2


class SimArrays:
    """The arrays a kernel reads: ``mode``, unit feature rows (or a dummy) and the
    co-occurrence CSR (or dummies)."""

    def __init__(self, ctx: Context, similarity: str) -> None:
        if similarity == "hamming":
            if ctx.raw_features is None:
                raise ReceValError("diversity with similarity='hamming' needs item features: "
                                   "pass item_features=")
            self.mode = HAMMING
            self.feats = ctx.raw_features
            self.ptr = np.zeros(1, np.int64)
            self.idx = np.zeros(0, np.int64)
            self.val = np.zeros(0, np.float64)
            self.diag = np.zeros(0, np.float64)
        elif similarity == "features":
            if ctx.features is None:
                raise ReceValError("diversity/serendipity with similarity='features' need "
                                   "item features: pass item_features= (or choose "
                                   "similarity='cooccurrence' with train=)")
            self.mode = FEATURES
            self.feats = ctx.features
            self.ptr = np.zeros(1, np.int64)
            self.idx = np.zeros(0, np.int64)
            self.val = np.zeros(0, np.float64)
            self.diag = np.zeros(0, np.float64)
        else:
            c = ctx.cooccurrence()
            self.mode = COOCCURRENCE
            self.feats = np.zeros((0, 0), np.float64)
            self.ptr = c.indptr.astype(np.int64)
            self.idx = c.indices.astype(np.int64)
            self.val = c.data.astype(np.float64)
            self.diag = c.diagonal().astype(np.float64)


@numba.njit(cache=True, nogil=True)
def cooc_sim(i: int, j: int, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray,
             diag: np.ndarray) -> float:
    """c(i, j) / sqrt(c_i c_j), 0 where either item has no training user."""
    if diag[i] <= 0 or diag[j] <= 0:
        return 0.0
    lo = ptr[i]
    hi = ptr[i + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        if idx[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    if lo < ptr[i + 1] and idx[lo] == j:
        return val[lo] / math.sqrt(diag[i] * diag[j])
    return 0.0


@numba.njit(cache=True, nogil=True)
def feat_dot(i: int, j: int, feats: np.ndarray) -> float:
    """The dot product of two unit feature rows: their cosine similarity."""
    s = 0.0
    for f in range(feats.shape[1]):
        s += feats[i, f] * feats[j, f]
    return s


@numba.njit(cache=True, nogil=True)
def hamming(i: int, j: int, feats: np.ndarray) -> float:
    """The number of feature positions where two items' raw values differ."""
    d = 0.0
    for f in range(feats.shape[1]):
        if feats[i, f] != feats[j, f]:
            d += 1.0
    return d
