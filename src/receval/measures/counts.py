"""Counts trec_eval prints per query: ``num_rel`` (the user's relevant items, L) and
``num_ret`` (the ranked list's length after filtering and ``max_list``), whose mean over users
is the summary, and ``num_rel_ret`` (the relevant items retrieved, ``hits`` over the whole
list, or the top k), whose summary is the **sum** over users, as trec_eval's ``all`` line
prints it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import as_float, full
from receval.measures.entry import Entry, Parts
from receval.measures.family import Family

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options
    from receval.picture import Picture


def num_rel(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (L, L, 1).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([], dtype=np.int64)); pic.n_relevant[:] = [3, 0]
        >>> num_rel(pic, -1, parse_metric("num_rel"), Options(), np).value.tolist()
        [3.0, 0.0]
    """
    value = as_float(pic.n_relevant, xp)
    return Parts(value, value, full(value, 1.0, xp))


def num_ret(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (the list's length, itself, 1).

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([], dtype=np.int64)); pic.n_list[:] = 7
        >>> num_ret(pic, -1, parse_metric("num_ret"), Options(), np).value.tolist()
        [7.0]
    """
    value = as_float(pic.n_list, xp)
    return Parts(value, value, full(value, 1.0, xp))


def num_rel_ret(pic: Picture, c: int, spec: MetricSpec, options: Options, xp: Any) -> Parts:
    """Per user: (relevant items retrieved, itself, 1); the summary sums them.

    Example:
        >>> import numpy as np
        >>> from receval.measures.spec import parse_metric
        >>> from receval.options import Options
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(2, np.array([0])); pic.hits[:, 0] = [2.0, 1.0]
        >>> num_rel_ret(pic, 0, parse_metric("num_rel_ret"), Options(), np).value.tolist()
        [2.0, 1.0]
    """
    value = pic.hits[:, c]
    return Parts(value, value, full(value, 1.0, xp))


NUM_REL_ENTRY = Entry(
    family=Family.NUM_REL, name="num_rel", aliases=("num_rel",), cutoff="none",
    reads=("n_relevant",), options=(), reduction="mean", undefined="",
    compute=num_rel, bounds=(0.0, float("inf")))

NUM_RET_ENTRY = Entry(
    family=Family.NUM_RET, name="num_ret", aliases=("num_ret",), cutoff="none",
    reads=("n_list",), options=("protocol",), reduction="mean",
    undefined="", compute=num_ret, bounds=(0.0, float("inf")))

NUM_REL_RET_ENTRY = Entry(
    family=Family.NUM_REL_RET, name="num_rel_ret", aliases=("num_rel_ret",),
    cutoff="optional", reads=("hits",), options=("protocol",), reduction="sum",
    undefined="", compute=num_rel_ret, bounds=(0.0, float("inf")), grows_with_k=True)
