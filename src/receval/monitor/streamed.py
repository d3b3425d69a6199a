"""``monitor(..., memory_budget=)``: Parquet logs read in pieces of time
(:mod:`receval.streaming.logs`), each piece added to an in-memory state as a later run adds its
logs; the numbers are those of one run over the whole logs, bit for bit (every piece's rows are
later than the pieces before: no feedback arrives after its list closed). The state holds only
what is still open (lists within an attribution period of the watermark, the values of open
windows), so the memory is a piece's rows and that, not the logs'.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from receval.exceptions import ReceValError
from receval.io.batches import parquet_schema
from receval.monitor.inputs import read_feedback, read_impressions, times
from receval.monitor.state import State
from receval.streaming.budget import chunk_rows, parse_budget
from receval.streaming.logs import LogSide, check_parquet, pieces

__all__ = ["check_parquet", "order_kind", "run_in_pieces"]
from receval.streaming.spill import SpillFolder


def order_kind(path: Path, score_col: str | None) -> str:
    """``"rank"`` or ``"score"``, from the impressions file's columns as
    :func:`~receval.monitor.inputs.read_impressions` decides it.

    Example:
        >>> import tempfile, pyarrow as pa, pyarrow.parquet as pq
        >>> p = Path(tempfile.mkdtemp()) / "i.parquet"
        >>> pq.write_table(pa.table({"rank": [1]}), p)
        >>> order_kind(p, None)
        'rank'
    """
    if score_col is None:
        names = parquet_schema(Path(path), "impressions").names
        score_col = "score" if "score" in names else "rank"
    return "rank" if score_col == "rank" else "score"


def run_in_pieces(
    advance: Callable[..., Any],
    one_zone: Callable[[list[tuple[str, str, str | None]]], str | None],
    params: dict[str, Any],
    impressions: Any,
    feedback: Any,
    memory_budget: str | int,
    *,
    read: dict[str, Any],
    spill_dir: str | Path | None = None,
    count: int | None = None,
) -> tuple[Any, pd.DataFrame]:
    """The monitor of both logs, piece by piece: ``advance`` is the run's
    ``_Run.advance``, ``one_zone`` the check that the logs' times are written one way,
    ``read`` the column arguments of ``monitor``; ``count`` overrides the number of pieces
    (tests). Returns the last piece's result (its counts say ``streaming``) and every piece's
    late feedback rows."""
    budget = parse_budget(memory_budget)
    imp_path = check_parquet(impressions, "impressions")
    fb_path = check_parquet(feedback, "feedback")
    served_col, time_col, unit = read["served_col"], read["time_col"], read["time_unit"]
    ids = (read["user_col"], read["item_col"])
    sides = [
        LogSide(
            "impressions",
            imp_path,
            served_col,
            ids,
            lambda c: times(c, "impressions", served_col, unit),
        ),
        LogSide("feedback", fb_path, time_col, ids, lambda c: times(c, "feedback", time_col, unit)),
    ]
    rows = chunk_rows(budget)
    st = State(params=params)
    out, late, n = None, [], 0
    zones: list[tuple[str, str, str | None]] = []
    with SpillFolder(spill_dir) as folder:
        n, each = pieces(sides, budget, folder, chunk_rows=rows, count=count)
        for imp_table, fb_table in each:
            imps, kind, imp_zone = read_impressions(
                imp_table,
                user_col=read["user_col"],
                item_col=read["item_col"],
                score_col=read["score_col"],
                served_col=served_col,
                variant_col=read["variant_col"],
                time_unit=unit,
            )
            fb, fb_zone = read_feedback(
                fb_table,
                user_col=read["user_col"],
                item_col=read["item_col"],
                value_col=read["value_col"],
                time_col=time_col,
                time_unit=unit,
            )
            if kind != params["order"]:
                raise ReceValError(
                    f"impressions: pieces of the log ordered by {kind} and {params['order']}"
                )
            zones += [("impressions", served_col, imp_zone), ("feedback", time_col, fb_zone)]
            zone = one_zone(zones)
            if out is not None and not len(imps) and not len(fb):
                continue
            out, st, late_rows = advance(st, imps, fb, zone)
            late.append(late_rows)
    assert out is not None
    out.counts["lists_replayed"] = 0
    out.counts["streaming"] = {
        "mode": "time pieces",
        "partitions": n,
        "passes": 3,
        "budget_bytes": budget,
    }
    return out, pd.concat(late, ignore_index=True) if len(late) > 1 else late[0]
