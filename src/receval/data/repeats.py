"""An item shown twice in one served list: found and refused in one line, the same way for
every reader of served lists (:func:`receval.monitor`'s impressions,
:func:`receval.offpolicy.estimate`'s log).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from receval.exceptions import ReceValError
from receval.scalars import plain


def repeated(lists: np.ndarray, items: Any) -> np.ndarray:
    """Which rows show an item that an earlier row (in row order) of the same list already
    shows: a boolean mask, the first showing of each item not marked.

    ``lists``: each row's list as an integer code (>= 0); ``items``: each row's item (integer
    or any hashable values).

    Example:
        >>> repeated(np.array([0, 0, 1, 0]), np.array([5, 6, 5, 5])).tolist()
        [False, False, False, True]
        >>> repeated(np.array([0, 0]), np.array(["7", "007"], dtype=object)).tolist()
        [False, False]
    """
    lists = np.asarray(lists).astype(np.int64, copy=False)
    values = np.asarray(items)
    n = len(lists)
    if n == 0:
        return np.zeros(0, dtype=bool)
    if values.dtype.kind in "iu":
        codes = values.astype(np.int64) - int(values.min())
    else:
        codes = np.zeros(n, dtype=np.int64)
    width = int(codes.max(initial=0)) + 1
    if values.dtype.kind not in "iu" or width * (int(lists.max(initial=0)) + 1) >= 2**62:
        codes = pd.factorize(values)[0].astype(np.int64)
        width = int(codes.max(initial=0)) + 1
    key = lists * width + codes
    ordered = np.sort(key)  # a sort is several times faster than a hash set here
    if not (ordered[1:] == ordered[:-1]).any():
        return np.zeros(n, dtype=bool)
    return np.asarray(pd.Index(key).duplicated(), dtype=bool)


def repeat_error(source: str, item: Any, where: str, row: Any, n: int, hint: str) -> ReceValError:
    """The one-line error for an item shown twice in one list: the ``source`` read, the first
    repeated ``item``, the list (``where``), its ``row`` and the ``n`` repeated rows in all,
    and what to pass instead (``hint``).

    Example:
        >>> print(repeat_error("log", 5, "request 3", 2, 1, "repeats='allow' keeps them"))
        log: item 5 served twice in one list (request 3) at row 2 (1 repeated rows in all); a list shows each item once: repeats='allow' keeps them
    """  # noqa: E501
    return ReceValError(
        f"{source}: item {plain(item)!r} served twice in one list ({where}) at "
        f"row {plain(row)} ({n} repeated rows in all); a list shows each item "
        f"once: {hint}"
    )
