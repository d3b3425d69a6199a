"""Whether the numba kernels are already compiled and cached, so the first run can say why it
takes a while ("compiling receval's kernels, first run only").

numba caches each compiled function next to its source (``__pycache__/*.nbi`` index, ``*.nbc``
code); an index written for other source (an upgrade) is stale and compiles again.
"""

from __future__ import annotations

from typing import Any

#: what the first run prints, on stderr, while numba compiles
NOTICE = "compiling receval's kernels (first run only, about 15 s; later runs load them)"


def kernels_cached() -> bool:
    """Whether the evaluation kernel has a cached compilation for its current source.

    Reads numba's cache index without compiling anything; ``True`` when that cannot be told
    (a numba whose cache layout differs), so no false notice is printed.

    Example:
        >>> isinstance(kernels_cached(), bool)
        True
    """
    from receval.engines import numba_engine

    return _has_cached_code(numba_engine._evaluate_block)


def _has_cached_code(dispatcher: Any) -> bool:
    try:
        index = dispatcher._cache._cache_file._load_index()
    except Exception:  # numba's private cache layout changed: do not claim a compile
        return True
    return bool(index)
