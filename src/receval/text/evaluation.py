"""Resolved lists evaluated: :func:`receval.evaluate` on the resolved items, each generated row
keeping its rank, with the resolution's counts and rates beside the metrics."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd

from receval.checks import keeps_warnings
from receval.evaluation import evaluate as evaluate_flat
from receval.exceptions import ReceValError
from receval.result import Counts, RecordedOptions, Result
from receval.sequential.frames import as_frame
from receval.text.resolve import Resolved

SLOTS = ("keep", "close")


def slotted(g: Resolved, truth_items: Any) -> pd.DataFrame:
    """Every generated row at its rank: resolved first occurrences with their item, every
    other row (unresolved, ambiguous, duplicate) with an id of its own that no truth row
    holds, so that it is a miss at its rank.

    Example:
        >>> from receval.text import resolve
        >>> g = resolve({"user": [1, 1], "rank": [1, 2], "text": ["Zardoz", "Heat"]},
        ...             {"item": [7], "title": ["Heat"]})
        >>> slotted(g, [7]).values.tolist()
        [[1, 6, 1], [1, 7, 2]]
    """
    key = g.options["key"]
    table = g.table
    kept = (
        table["how"].isin(["exact", "normalised", "fuzzy"]).to_numpy()
        & ~table["duplicate"].to_numpy()
    )
    items = g.predictions["item"].to_numpy()
    known = np.asarray(truth_items)
    n_fill = int((~kept).sum())
    integer = np.issubdtype(items.dtype, np.integer) and (
        len(known) == 0 or np.issubdtype(known.dtype, np.integer)
    )
    if integer:  # ids below every id there is
        pool = np.concatenate([items.astype(np.int64), known.astype(np.int64)])
        low = int(pool.min()) if len(pool) else 0
        fill: np.ndarray = low - 1 - np.arange(n_fill, dtype=np.int64)
        column = np.empty(len(table), dtype=np.int64)
    else:
        fill = np.array([f"\x00generated row {i}" for i in np.flatnonzero(~kept)], dtype=object)
        column = np.empty(len(table), dtype=object)
    column[kept] = items
    column[~kept] = fill
    return pd.DataFrame(
        {key: table[key].to_numpy(), "item": column, "rank": table["rank"].to_numpy()}
    )


@keeps_warnings  # the run's warnings kept on its Result (every output)
def evaluate(
    truth: Any, g: Resolved, metrics: Any, *, slots: str = "keep", **options: Any
) -> Result:
    """:func:`receval.evaluate` of the resolved lists against ``truth`` (key, item).

    ``slots="keep"`` (default): every generated row holds its rank; a title that resolved to
    nothing, to several items or to an item already listed is a miss there (RecLM-eval's
    reading). ``slots="close"``: ``g.predictions`` as they are (the resolved items ranked
    among themselves). ``counts["generated"]`` holds ``g.counts`` and ``counts
    ["generated_rates"]`` each over ``generated``; ``options["resolve"]`` the threshold, the
    method, the scorer and the slots.

    Example:
        >>> from receval.text import resolve
        >>> g = resolve({"user": [1, 1], "rank": [1, 2], "text": ["Zardoz", "heat"]},
        ...             {"item": [7], "title": ["Heat (1995)"]})
        >>> r = evaluate({"user": [1], "item": [7]}, g, ["MRR"])
        >>> r.summary, r.counts["generated"]["unresolved"], r.options["resolve"]["slots"]
        ({'MRR': 0.5}, 1, 'keep')
        >>> evaluate({"user": [1], "item": [7]}, g, ["MRR"], slots="close").summary
        {'MRR': 1.0}
    """
    if slots not in SLOTS:
        raise ReceValError(f"slots={slots!r} is not one of 'keep', 'close'")
    key = g.options["key"]
    frame = as_frame(truth, "truth")
    if key not in frame.columns:
        raise ReceValError(f"truth: missing column {key!r} (the generated lists' key)")
    item_col = options.get("item_col", "item")
    if item_col not in frame.columns:
        raise ReceValError(f"truth: missing column {item_col!r}")
    preds = (slotted(g, frame[item_col].to_numpy()) if slots == "keep" else g.predictions).rename(
        columns={"item": item_col}
    )
    if len(preds) == 0:
        raise ReceValError(
            "generated: no row resolved to a catalogue item (see the table's 'how' column)"
        )
    result = evaluate_flat(frame, preds, metrics, user_col=key, **options)
    counts = cast(dict[str, Any], result.counts)
    counts["generated"] = dict(g.counts)
    counts["generated_rates"] = g.rates()
    recorded = cast(dict[str, Any], result.options)
    recorded["resolve"] = {**{k: v for k, v in g.options.items() if k != "key"}, "slots": slots}
    result.counts, result.options = cast(Counts, counts), cast(RecordedOptions, recorded)
    return result
