"""Files bigger than memory: ``receval.evaluate(truth_path, predictions_path, ...,
memory_budget="2GiB")`` and ``receval evaluate --memory-budget 2GiB``.

Both files are read in chunks (:mod:`receval.io.chunks`); users are evaluated batch by batch,
either in one pass over files sorted by user (:mod:`receval.streaming.ordered`) or after
partitioning both sides by a hash of the user into spill files
(:mod:`receval.streaming.spill`); the batches' exact sums are merged
(:mod:`receval.streaming.plan`). The numbers are those of the in-memory path bit for bit.
Per-user values past a share of the budget are spilled to Parquet and read back, or written
straight to a file, when asked for (:mod:`receval.streaming.peruser`).
The budget (:mod:`receval.streaming.budget`) sizes the chunks and partitions; unset, it is a
share of the machine's memory, and the path is taken when the inputs would not fit.
See docs/streaming.md.
"""

from __future__ import annotations

from typing import Any

from receval.streaming.budget import auto_budget, parse_budget, would_not_fit

# the plan reuses the Spark engine's per-partition step: loaded when a file is streamed, not
# when ``would_not_fit`` is asked for every evaluation (``import receval`` stays light)
_FROM_PLAN = ("ORDERS", "REFUSED", "evaluate_files")


def __getattr__(name: str) -> Any:
    if name in _FROM_PLAN:
        from receval.streaming import plan

        return getattr(plan, name)
    raise AttributeError(f"module 'receval.streaming' has no attribute {name!r}")


__all__ = ["ORDERS", "REFUSED", "auto_budget", "evaluate_files", "parse_budget", "would_not_fit"]
