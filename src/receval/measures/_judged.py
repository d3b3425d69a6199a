"""What the families over the judged items of a list share (bpref, RBP, ERR, Judged,
interpolated precision, Rprec_mult): the picture's ``judged_*`` fields, read as masks.

A list's judged items are those with a truth row, whatever their rating (trec_eval's
judged documents; ``protocol="known"`` keeps only them, trec_eval ``-J``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from receval.measures._arrays import as_float

if TYPE_CHECKING:
    from receval.picture import Picture

#: the picture fields these families read
JUDGED_READS = ("judged_ranks", "judged_rel", "judged_rating", "n_judged", "n_relevant",
                "n_list", "max_rel_rating")


def relevant_ranks(pic: Picture, xp: Any) -> tuple[Any, Any]:
    """``(ranks, is_hit)``: the judged items' ranks as float64 and where they are relevant.

    Example:
        >>> import numpy as np
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([1]))
        >>> pic.judged_ranks = np.array([[1, 3, 0]]); pic.judged_rel = np.array([[1.0, 0, 0]])
        >>> [a.tolist() for a in relevant_ranks(pic, np)]
        [[[1.0, 3.0, 0.0]], [[True, False, False]]]
    """
    ranks = as_float(pic.judged_ranks, xp)
    return ranks, (pic.judged_ranks > 0) & (pic.judged_rel != 0.0)


def hits_within(pic: Picture, cut: Any, xp: Any) -> Any:
    """Per user, the relevant items ranked at or above ``cut`` (a ``(U,)`` array of ranks).

    Example:
        >>> import numpy as np
        >>> from receval.picture import empty_picture
        >>> pic = empty_picture(1, np.array([1]))
        >>> pic.judged_ranks = np.array([[1, 3, 4]]); pic.judged_rel = np.array([[1.0, 0, 1]])
        >>> hits_within(pic, np.array([3.0]), np).tolist()
        [1.0]
    """
    ranks, hit = relevant_ranks(pic, xp)
    inside = hit & (ranks <= xp.reshape(cut, (-1, 1)))
    return xp.sum(as_float(inside, xp), axis=1)
