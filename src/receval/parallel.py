"""Blocks of work on a pool of Python threads, for numba functions that release the GIL.

A bottom-layer module: ``data/`` (encoding, CSR), the engines and the accumulators all split work
with it, so it imports nothing from receval.

numba's ``prange`` gives the same parallelism, but its parallel passes add seconds to every
first compilation (``receval demo`` on a fresh install compiles everything once). A ``nogil``
function called from a few threads costs nothing extra to compile, and blocks are handed out
as threads free up, which balances users of uneven list lengths.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba


def n_threads() -> int:
    """How many threads receval uses: numba's setting (``NUMBA_NUM_THREADS``,
    ``numba.set_num_threads``), so one knob controls every engine.

    Example:
        >>> n_threads() == numba.get_num_threads()
        True
    """
    return int(numba.get_num_threads())


def block_bounds(n: int, min_size: int = 1,
                 blocks_per_thread: int = 8) -> list[tuple[int, int]]:
    """Split ``range(n)`` into contiguous ``(lo, hi)`` blocks, a few per thread, each of at
    least ``min_size`` (small work is one block: starting threads would cost more).

    One thread gets one block (no pool, see :func:`run_blocks`).

    Example:
        >>> bounds = block_bounds(10)
        >>> bounds[0][0], bounds[-1][1], all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        (0, 10, True)
        >>> block_bounds(0), block_bounds(10, min_size=100)
        ([], [(0, 10)])
    """
    threads = n_threads()
    n_blocks = min(-(-n // max(1, min_size)), blocks_per_thread * threads if threads > 1 else 1)
    return [(b * n // n_blocks, (b + 1) * n // n_blocks) for b in range(n_blocks)]


def run_blocks(fn: Callable[..., Any], bounds: list[tuple[int, int]], *args: Any) -> None:
    """Call ``fn(i, lo, hi, *args)`` for each block ``i`` of ``bounds``, on :func:`n_threads`
    threads (in this thread when there is one, or one block).

    Example:
        >>> seen = []
        >>> run_blocks(lambda i, lo, hi: seen.append((i, lo, hi)), [(0, 2), (2, 3)])
        >>> sorted(seen)
        [(0, 0, 2), (1, 2, 3)]
    """
    threads = n_threads()
    if threads == 1 or len(bounds) <= 1:
        for i, (lo, hi) in enumerate(bounds):
            fn(i, lo, hi, *args)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="receval") as pool:
        futures = [pool.submit(fn, i, lo, hi, *args) for i, (lo, hi) in enumerate(bounds)]
        for future in futures:
            future.result()  # re-raises a block's error here
