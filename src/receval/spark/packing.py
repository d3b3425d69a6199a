"""How a partition's users arrive: one row per user of lists (one list per side and column,
or one list of row structs), unpacked into the truth, prediction and training rows; and the
tie check on the packed scores."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _tied(table: pa.Table, preds: pa.Table) -> bool:
    """Whether a user of the partition has two equal scores: from the packed score lists when
    every user's list has one length (top-N lists: a sort of each row), else
    :func:`_has_ties` on the unpacked rows (a sort of the partition's predictions)."""
    if "l_pv" in table.column_names:
        found = _list_ties(table.column("l_pv").combine_chunks())
        if found is not None:
            return found
    return _has_ties(preds)


def _list_ties(lists: pa.ListArray) -> bool | None:
    """Whether a list (one user's scores, nulls left out by ``collect_list``) holds two equal
    values; ``None`` when the non-empty lists differ in length (the caller then sorts the
    rows).

    Example:
        >>> _list_ties(pa.array([[0.5, 0.2, 0.9], [], [0.1, 0.3, 0.1]]))
        True
        >>> _list_ties(pa.array([[0.5, 0.2, 0.9], [0.1, 0.3, 0.2]]))
        False
        >>> _list_ties(pa.array([[0.5, 0.2], [0.1, 0.3, 0.1]])) is None
        True
    """
    lengths = pc.list_value_length(lists).to_numpy(zero_copy_only=False)
    full = lengths[lengths > 0]
    if not len(full) or bool((full != full[0]).any()):
        return None
    values = pc.list_flatten(lists).to_numpy(zero_copy_only=False)
    rows = np.sort(values.reshape(len(full), int(full[0])), axis=1)
    return bool((rows[:, 1:] == rows[:, :-1]).any())


def _has_ties(preds: pa.Table) -> bool:
    """Whether a user has two equal scores (or ranks) among the predictions."""
    if preds.num_rows < 2:
        return False
    pairs = pa.table({"u": preds.column("u"), "v": preds.column("pv")})
    order = pc.sort_indices(pairs, sort_keys=[("u", "ascending"), ("v", "ascending")])
    users = pairs.column("u").take(order).combine_chunks()
    values = pairs.column("v").take(order).combine_chunks()
    same = pc.and_(
        pc.equal(users.slice(1), users.slice(0, len(users) - 1)),
        pc.equal(values.slice(1), values.slice(0, len(values) - 1)),
    )
    return bool(pc.any(same).as_py())


def _columns_sides(table: pa.Table) -> tuple[list[pa.Table], int]:
    """The truth, prediction and training rows (``u``, ``i``, ``tv``/``pv``, ``o``) from one
    row per user of lists, one list per side and column (``columns`` mode: ``l0_i``, ``l1_i``,
    ``l2_i``, ``l0_o``, ...), each side in its rows' order; and the number of rows.

    Example:
        >>> packed = pa.table({"u": [7, 3], "l0_i": [[1], [2, 4]], "l1_i": [[5, 6], []],
        ...                    "l_pv": [[0.5, 0.25], []]})
        >>> sides, n = _columns_sides(packed)
        >>> sides[0].to_pydict(), sides[1].to_pydict(), sides[2].num_rows, n
        ({'u': [7, 3, 3], 'i': [1, 2, 4]}, {'u': [7, 7], 'i': [5, 6], 'pv': [0.5, 0.25]}, 0, 5)
    """
    lists = {
        c: table.column(c).combine_chunks() for c in table.column_names if c.startswith(("l", "a_"))
    }
    users = table.column("u").combine_chunks()
    sides = []
    for f in (0, 1, 2):
        items = lists.get(f"l{f}_i")
        if items is None:
            sides.append({"u": users.slice(0, 0), "i": lists["l0_i"].values.slice(0, 0)})
            if "l0_o" in lists:
                sides[-1]["o"] = lists["l0_o"].values.slice(0, 0)
            continue
        side = {"u": users.take(pc.list_parent_indices(items)), "i": pc.list_flatten(items)}
        if f"l{f}_o" in lists:
            side["o"] = pc.list_flatten(lists[f"l{f}_o"])
        sides.append(side)
    if "a_tv" in lists:
        sides[0]["tv"] = pc.list_flatten(pc.list_flatten(lists["a_tv"]))
    if "l_pv" in lists:
        sides[1]["pv"] = pc.list_flatten(lists["l_pv"])
    return [pa.table(side) for side in sides], sum(len(side["i"]) for side in sides)


def _unpacked(table: pa.Table) -> pa.Table:
    """One row per input row: ``u`` and the fields of the packed ``r`` lists (``struct``
    mode)."""
    lists = table.column("r").combine_chunks()
    flat = pc.list_flatten(lists)
    users = table.column("u").combine_chunks().take(pc.list_parent_indices(lists))
    names = [f.name for f in flat.type]
    return pa.table({"u": users, **dict(zip(names, flat.flatten(), strict=True))})
