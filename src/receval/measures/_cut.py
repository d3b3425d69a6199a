"""The one rule for where a cutoff falls in a user's picture."""

from __future__ import annotations

import numba

#: ``k == NO_CUTOFF`` means the whole list (``MRR``, ``MAP`` without ``@k``).
NO_CUTOFF = 0


@numba.njit(cache=True, nogil=True)
def cut(k: int, n_ranks: int) -> int:
    """The prefix index for cutoff ``k`` in a picture of ``n_ranks`` ranks."""
    return n_ranks if k == NO_CUTOFF else min(k, n_ranks)
