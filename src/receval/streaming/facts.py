"""What a report reads from the lists themselves, counted in one pass over a predictions file
read chunk by chunk (:func:`list_facts`): each item's rows (the most predicted items) and the
longest list; the counts of the chunks summed exactly. ``receval evaluate --report
--memory-budget`` writes them into the report; from Python, pass them to
:func:`receval.report.html.write_report` (``top_items={name: list_facts(...)[0]}``).
"""

from __future__ import annotations

from typing import Any

from receval.io.chunks import ChunkedSource
from receval.io.wanted import Wanted

#: per-user and per-item count tables are merged again once they hold this many rows
_MERGE_ROWS = 1 << 20


def list_facts(
    truth: str, predictions: str, columns: dict[str, Any], n: int = 10, *, chunk_rows: int = 1 << 20
) -> tuple[list[tuple[Any, int]], int]:
    """The report's facts about the lists of ``predictions``, read chunk by chunk: its ``n``
    most predicted items (item, rows), most first then by item, and the most rows any user
    has; what the in-memory path reads from the whole table. The per-chunk counts are
    summed exactly (by item, by user); the items get the type the evaluation gives them
    (int64 only where both files' item ids are integers), before they are ordered.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "t.csv").write_text("user,item\\n1,10\\n")
        >>> _ = (d / "p.csv").write_text("user,item,score\\n1,9,1\\n1,10,2\\n2,10,1\\n")
        >>> list_facts(str(d / "t.csv"), str(d / "p.csv"), {})
        ([(10, 2), (9, 1)], 2)
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    user_col, item_col = columns.get("user_col", "user"), columns.get("item_col", "item")
    wp = Wanted.predictions(
        user_col=user_col,
        item_col=item_col,
        score_col=columns.get("score_col", "score"),
        columns=columns.get("prediction_columns"),
    )
    src = ChunkedSource.open(predictions, wp, chunk_rows=chunk_rows)
    users: list[pa.Table] = []
    items: list[pa.Table] = []

    def merged(parts: list[pa.Table], key: str) -> list[pa.Table]:
        table = pa.concat_tables(parts, promote_options="permissive")
        return [table.group_by(key).aggregate([("n", "sum")]).rename_columns([key, "n"])]

    for chunk in src.chunks():
        for key, parts in (("user", users), ("item", items)):
            counted = chunk.group_by(key).aggregate([(key, "count")])
            parts.append(counted.rename_columns([key, "n"]).select([key, "n"]))
            if sum(p.num_rows for p in parts) > _MERGE_ROWS and len(parts) > 1:
                parts[:] = merged(parts, key)
    deepest = int(pc.max(merged(users, "user")[0].column("n")).as_py() or 0) if users else 0
    del users
    if not items:
        return [], deepest
    table = merged(items, "item")[0]
    as_int = src.int_ids["item"]
    if as_int and not pa.types.is_integer(table.schema.field("item").type):
        wt = Wanted.truth(
            user_col=user_col,
            item_col=item_col,
            rating_col=columns.get("rating_col", "rating"),
            columns=columns.get("truth_columns"),
        )
        truth_src = ChunkedSource.open(truth, wt, chunk_rows=chunk_rows)
        if truth_src.kind != "parquet":
            for _ in truth_src.chunks():  # a text file's id type is known at its end
                pass
        as_int = truth_src.int_ids["item"]
    want = pa.int64() if as_int else pa.string()
    if table.schema.field("item").type != want:
        table = table.set_column(0, "item", pc.cast(table.column("item"), want))
    table = table.sort_by([("n", "descending"), ("item", "ascending")]).slice(0, n)
    return list(
        zip(table.column("item").to_pylist(), table.column("n").to_pylist(), strict=True)
    ), deepest
