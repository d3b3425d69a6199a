"""What the registry knows of a metric family: one declarative :class:`Entry` per family.

Each family module (``precision.py``, ``ndcg.py``, ...) defines its array function and its
``ENTRY``; :mod:`receval.measures.registry` lists the modules. An array function takes a
:class:`~receval.picture.Picture`, the picture column of the metric's cutoff, the metric, the
options and the array namespace ``xp`` (numpy or torch, :func:`array_api_compat.array_namespace`)
and returns :class:`Parts`: one value per user (NaN where undefined), the numerator and
denominator micro averaging sums, and ``den2`` (F-beta: recall's denominator) or ``None``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from receval.measures.family import Family
from receval.options import ORDER_FREE_TIES

if TYPE_CHECKING:
    from receval.measures.spec import MetricSpec
    from receval.options import Options, Ties
    from receval.picture import Picture


#: which value of a metric is the better one: ``"higher"`` or ``"lower"`` (errors, losses,
#: gaps, concentration)
Direction = Literal["higher", "lower"]


class Parts(NamedTuple):
    """One metric's per-user arrays: value (NaN: undefined), numerator, denominator, ``den2``."""

    value: Any
    num: Any
    den: Any
    den2: Any = None


#: ``fn(picture, column, spec, options, xp) -> Parts``; ``column`` is ``-1`` for a family
#: that takes no cutoff
ArrayFunction = Callable[["Picture", int, "MetricSpec", "Options", Any], Parts]


def _no_extra(options: Options) -> frozenset[str]:
    return frozenset()


@dataclass(frozen=True)
class Entry:
    """One metric family, declared.

    Attributes:
        family: its code.
        name: the canonical spelling (``P``, ``nDCG``); ``P@10`` with a cutoff.
        aliases: the lower-case names that mean it (``precision``, ``p``).
        cutoff: ``"required"`` (``P@k``), ``"optional"`` (``nDCG`` is ``nDCG`` over the whole
            list) or ``"none"`` (``Rprec``, ``RMSE``).
        reads: the picture fields its function reads.
        options: the :class:`~receval.options.Options` fields that change its value (their
            choices are :data:`receval.options.CHOICES`).
        reduction: ``"mean"`` (the users' values averaged, the empty policy applies) or
            ``"pooled"`` (every (user, item) pair counts once, RMSE and MAE) or
            ``"geometric"`` (``exp`` of the mean of ``log(max(value, 1e-5))``, trec_eval's
            ``gm_map``) or ``"sum"`` (the users' values summed, exactly: trec_eval's
            ``num_rel_ret``).
        undefined: why a user's value can be undefined (``""``: it never is).
        compute: the array function.
        extra: optional picture fields it needs under some options (``ap_over_hits``).
        parameter: for a family with a real parameter in place of a cutoff (``RBP@0.8``: the
            persistence ``p``), ``(name, default, low, high, low_open, high_open)``: what
            follows ``@`` is that number (:attr:`MetricSpec.param
            <receval.measures.spec.MetricSpec.param>`), in the range, else the default.
        ties_average: whether it is defined under ``ties="average"`` (the families that read
            the judged items' ranks are not).
        bounds: ``(low, high)`` that every defined per-user value lies in, whatever the
            options (``None``: not declared); tests/test_conformance_matrix.py checks it.
        grows_with_k: whether a user's value never decreases as the cutoff grows (the list
            fixed); a function of the options where that depends on them (recall: only over
            ``recall_denominator="relevant"``); read it through :meth:`grows`. Checked, with
            ``bounds``, by tests/test_conformance_matrix.py and tests/test_registry_properties.py.
        order_free_ties: the tie policies under which its values do not depend on the order
            of the input rows (checked by tests/test_registry_properties.py).
        better: ``"higher"`` or ``"lower"`` (RMSE, MAE): which value is the better one; the
            statistics read it (:func:`receval.compare`'s wins and P(better), the report's
            significance letters, the gates), never the name.
    """

    family: Family
    name: str
    aliases: tuple[str, ...]
    cutoff: Literal["required", "optional", "none"]
    reads: tuple[str, ...]
    options: tuple[str, ...]
    reduction: Literal["mean", "pooled", "geometric", "sum"]
    undefined: str
    compute: ArrayFunction
    extra: Callable[[Options], frozenset[str]] = field(default=_no_extra)
    parameter: tuple[str, float, float, float, bool, bool] | None = None
    ties_average: bool = True
    bounds: tuple[float, float] | None = None
    grows_with_k: bool | Callable[[Options], bool] = False
    order_free_ties: tuple[Ties, ...] = ORDER_FREE_TIES
    better: Direction = "higher"

    def grows(self, options: Options) -> bool:
        """Whether a user's value never decreases as the cutoff grows, under ``options``.

        Example:
            >>> from receval.measures.registry import ENTRIES
            >>> from receval.measures.family import Family
            >>> from receval.options import Options
            >>> r = ENTRIES[Family.RECALL]
            >>> r.grows(Options()), r.grows(Options(recall_denominator="capped"))
            (True, False)
        """
        grows = self.grows_with_k
        return grows(options) if callable(grows) else grows
