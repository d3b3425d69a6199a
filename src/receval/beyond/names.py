"""The beyond-accuracy metric names: their aliases, whether each is per user or over the
catalogue, what it needs, and the parser :func:`split_metrics` that
:func:`receval.evaluate` calls before the accuracy metrics' parser.

A separate table (not :mod:`receval.measures.registry`): these metrics read the top-k lists
plus the training data and item features, which a :class:`~receval.picture.Picture` does not
hold, and :mod:`receval.measures` sits below the layer that has them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from receval.exceptions import ReceValError
from receval.measures.entry import Direction
from receval.measures.spec import parse_metrics
from receval.options import ORDER_FREE_TIES, Ties

if TYPE_CHECKING:
    from receval.beyond.compute import Job
    from receval.beyond.settings import BeyondOptions

#: a metric's function: ``fn(job) -> value``, the per-user values (a float array, NaN where
#: undefined) of a ``"user"`` metric or the number of a ``"catalogue"`` one, from a
#: :class:`receval.beyond.compute.Job` (the lists cut at ``k``, the context, the switches)
BeyondFunction = Callable[["Job"], Any]

#: what a metric's value can read besides its own list (:attr:`BeyondEntry.reads`): the doors
#: that split the data read it to serve each metric (the Spark engine's partitions and driver,
#: :mod:`receval.spark.beyond`) and :func:`receval.beyond.attach.check_inputs` to ask for the
#: inputs (``train=`` for history, popularity, pairs and pooled history)
READS: dict[str, str] = {
    "truth": "the list's judged items",
    "history": "the list's user's training items",
    "popularity": "the whole training data's item popularity (rows and users per item)",
    "pairs": "every training pair (the co-occurrence similarity)",
    "features": "the item features",
    "groups": "the item groups",
    "catalogue": "the catalogue's items (the catalogue switch's set)",
    "exposure": "how many lists hold each item, and how many lists are not empty",
    "ranked_exposure": "how many lists hold each item at each rank",
    "slots": "the slots of every list, pooled",
    "pooled_history": "each user's training items, pooled over every list",
    "every_list": "every list whole (what the entry does not declare otherwise)",
}
#: what an entry without :attr:`BeyondEntry.reads` reads, from its ``needs``
_FROM_NEEDS = {"train": ("history", "popularity"), "truth": ("truth",),
               "features": ("features",), "groups": ("groups",)}


def _compute() -> ModuleType:
    from receval.beyond import compute

    return compute


def _fair_compute() -> ModuleType:
    from receval.beyond import fair_compute

    return fair_compute


def lazy(module: Callable[[], ModuleType], function: str) -> Callable[..., Any]:
    """The function ``function`` of the module ``module()`` returns, imported on its first
    call: this table is read by every evaluation, the computing code (scipy) only when a
    beyond-accuracy metric is asked.

    Example:
        >>> from receval.beyond.compute import Job
        >>> from receval.beyond.context import context
        >>> from receval.beyond.settings import BeyondOptions
        >>> import numpy as np
        >>> job = Job(parse_beyond("coverage@1"), np.array([[0], [0]]),
        ...           context(None, None, 4, catalogue=np.ones(4, bool)), BeyondOptions())
        >>> fn = lazy(_compute, "coverage")
        >>> fn.__name__, fn(job)
        ('compute.coverage', 0.25)
    """

    def call(*args: Any) -> Any:
        return getattr(module(), function)(*args)

    call.__qualname__ = call.__name__ = f"{module.__name__.lstrip('_')}.{function}"
    return call


@dataclass(frozen=True)
class BeyondEntry:
    """One beyond-accuracy metric, declared: what the statistics, the conformance matrix and
    the generated property suite (tests/test_no_quiet_number.py) read of it.

    Attributes:
        name: the canonical spelling (``coverage``; ``coverage@10`` with its cutoff).
        aliases: the lower-case names that mean it.
        reduction: ``"user"`` (a value per user, reduced like the accuracy metrics by the
            exact :class:`~receval.accumulate.Accumulator`, in ``per_user``) or
            ``"catalogue"`` (one number over the union of all lists, in the summary only).
        needs: what it reads besides the lists: ``"train"``, ``"features"`` (or co-occurrence
            from ``train``), ``"truth"``, ``"groups"`` (``item_groups=`` or the categories of
            ``item_features=``).
        better: ``"higher"``, or ``"lower"`` for the concentration, popularity-bias,
            unfairness, miscalibration and exposure-loss measures (Gini, ARP, MeanPopRank,
            PopREO, PopRSP, group_exposure, rND, rKL, rRD, calibration, EE_L, EE_D): which
            value is the better one (wins, P(better), significance marks).
        bounds: ``(low, high)`` that every defined value (per user, or the catalogue's) lies
            in, whatever the inputs and options.
        grows_with_k: whether the value never decreases as ``k`` grows (the lists fixed).
        order_free_ties: the tie policies under which it does not depend on the order of the
            input rows: those that fix which items a list holds (every policy of
            :data:`~receval.options.ORDER_FREE_TIES`: the tied items that make the top k
            follow the item ids). The three are checked by tests/test_registry_properties.py.
        undefined: why a value (a user's, or the catalogue's) can be undefined (NaN, counted
            as undefined): ``""`` where it never is.
        options: the :class:`~receval.beyond.settings.BeyondOptions` switches that change its
            value (tests/test_no_quiet_number.py checks that each is a switch).
        compute: its function (:data:`BeyondFunction`): what
            :func:`receval.beyond.compute.compute` calls for it, whatever the door (evaluate
            on every engine, compare, strata, the CLI, the monitor's windows).
        zero_is_best: whether 0 reads as the best value (a perfectly fair or calibrated
            list): under ``empty="zero"`` its undefined users are left out of the mean instead
            of averaged as a perfect 0 (counted in ``Result.counts["undefined"]`` and warned).
        reasons: for a per-user metric, ``fn(job, rows) -> why``: the reason each of the
            undefined ``rows`` has no value (an object array of texts; ``None``: "undefined"),
            counted in ``Result.counts["undefined"]["reasons"]`` (an empty list is counted
            as such whatever the metric).
        per_list: whether its value reads only the list, the list's judged items, the item
            groups and the list's user's history (no catalogue, no training popularity or
            similarity): :func:`receval.monitor` computes it in each window.
        reads: what its value reads besides its own list, whatever the switches (names of
            :data:`READS`); ``None``: from ``needs`` (``train``: the user's history and the
            training popularity), and ``"every_list"`` for a catalogue metric (the Spark
            engine refuses it until it declares ``"exposure"``). :meth:`reading` adds
            ``reads_if``.
        reads_if: ``fn(options) -> names``: what more it reads under the
            :class:`~receval.beyond.settings.BeyondOptions` ``options`` (the similarity's
            input, a catalogue fairness target...).
        fairness: whether it is a fairness, calibration or expected-exposure measure (the
            report's "Fairness" section, :mod:`receval.report.fairness`).

    Example:
        >>> e = ENTRIES["rND"]
        >>> e.better, e.bounds, e.zero_is_best, e.per_list, e.compute.__name__
        ('lower', (0.0, 1.0), True, True, 'fair_compute.ranked_metric')
        >>> from receval.beyond.settings import BeyondOptions
        >>> sorted(e.reading(BeyondOptions())), sorted(e.reading(BeyondOptions(protected_group="a")))
        (['catalogue', 'groups'], ['groups'])
    """  # noqa: E501

    name: str
    aliases: tuple[str, ...]
    reduction: Literal["user", "catalogue"]
    needs: tuple[str, ...]
    better: Direction = "higher"
    bounds: tuple[float, float] | None = None
    grows_with_k: bool = False
    order_free_ties: tuple[Ties, ...] = ORDER_FREE_TIES
    undefined: str = ""
    options: tuple[str, ...] = ()
    compute: BeyondFunction = field(kw_only=True)
    zero_is_best: bool = field(default=False, kw_only=True)
    reasons: Callable[[Job, Any], Any] | None = field(default=None, kw_only=True)
    per_list: bool = field(default=False, kw_only=True)
    reads: tuple[str, ...] | None = field(default=None, kw_only=True)
    reads_if: Callable[[BeyondOptions], tuple[str, ...]] | None = field(default=None,
                                                                         kw_only=True)
    fairness: bool = field(default=False, kw_only=True)

    def reading(self, options: BeyondOptions | None = None) -> frozenset[str]:
        """What its value reads besides its own list (names of :data:`READS`) under
        ``options`` (``None``: only what it reads whatever the switches).

        Example:
            >>> from receval.beyond.settings import BeyondOptions
            >>> sorted(ENTRIES["diversity"].reading(BeyondOptions(similarity="cooccurrence")))
            ['pairs']
            >>> sorted(ENTRIES["coverage"].reading())
            ['catalogue', 'exposure']
        """
        if self.reads is not None:
            out = set(self.reads)
        else:
            out = {r for n in self.needs for r in _FROM_NEEDS.get(n, (n,))}
            if self.reduction == "catalogue":
                out.add("every_list")
        if self.reads_if is not None and options is not None:
            out.update(self.reads_if(options))
        return frozenset(out)


def _similarity_input(o: BeyondOptions) -> tuple[str, ...]:
    return ("pairs",) if o.similarity == "cooccurrence" else ("features",)


def _serendipity_reads(o: BeyondOptions) -> tuple[str, ...]:
    # the rectools form reads neither the similarity nor the user's history
    return () if o.serendipity == "rectools" else ("history", *_similarity_input(o))


def _slots(o: BeyondOptions) -> tuple[str, ...]:
    return ("slots",) if o.novelty_average == "slots" else ()


def _catalogue_target(o: BeyondOptions) -> tuple[str, ...]:
    target = o.fairness_target
    return ("catalogue",) if isinstance(target, str) and target == "catalogue" else ()


def _protected(o: BeyondOptions) -> tuple[str, ...]:
    # the default protected group is the one with the fewest catalogue items
    return (("catalogue",) if o.protected_group is None or o.fairness_population == "catalogue"
            else ())


_UNIT = (0.0, 1.0)
_NONNEGATIVE = (0.0, math.inf)
_EMPTY = "an empty list"
_EXPOSURE = ("exposure_discount", "rbp_patience", "fairness_target")
_RANKED = ("protected_group", "fairness_population", "fairness_step")
_CALIBRATION = ("calibration_history", "calibration_style", "calibration_alpha",
                "calibration_smooth", "calibration_discount", "calibration_base")
_EE = ("ee_model", "ee_patience", "ee_utility", "ee_ties")
_POPULARITY = ("popularity", "head_share", "tail_ratio")

_C = _compute
_F = _fair_compute
_CAL = lazy(_F, "calibration_metric")
_CAL_WHY = lazy(_F, "calibration_reasons")

ENTRIES: dict[str, BeyondEntry] = {e.name: e for e in (
    BeyondEntry("coverage", ("coverage", "catalog_coverage", "catalogue_coverage",
                             "catalogcoverage", "item_coverage", "itemcoverage"),
                "catalogue", (), bounds=_UNIT, grows_with_k=True,
                undefined="an empty catalogue",
                options=("catalogue", "coverage", "coverage_outside", "catalogue_pad"),
                compute=lazy(_C, "coverage"), reads=("exposure", "catalogue")),
    BeyondEntry("distributional_coverage", ("distributional_coverage", "entropy",
                                            "shannon_entropy", "shannonentropy"),
                "catalogue", (), bounds=_NONNEGATIVE, undefined="no list holds an item",
                options=("entropy_base", "entropy_normalize"),
                compute=lazy(_C, "distributional_coverage"), reads=("exposure",)),
    BeyondEntry("gini", ("gini", "gini_index", "giniindex"), "catalogue", (), "lower", _UNIT,
                undefined="nothing exposed, or a zero denominator",
                options=("catalogue", "gini_scope", "gini_form", "gini_denominator",
                         "catalogue_pad"), compute=lazy(_C, "gini"),
                reads=("exposure", "catalogue")),
    BeyondEntry("novelty", ("novelty", "miuf", "meaninvuserfreq", "mean_inv_user_freq"),
                "user", ("train",), bounds=_NONNEGATIVE,
                undefined="an empty list, or one of cold items only under novelty_cold='skip'",
                options=("novelty_popularity", "novelty_base", "novelty_cold",
                         "novelty_average"), compute=lazy(_C, "novelty"),
                reads=("popularity",), reads_if=_slots),
    BeyondEntry("diversity", ("diversity", "ild", "intra_list_diversity",
                              "intralistdiversity"), "user", ("features",), bounds=_UNIT,
                undefined="a list of fewer than two items (diversity_short='undefined')",
                options=("similarity", "diversity_short"), compute=lazy(_C, "diversity"),
                reasons=lazy(_F, "diversity_reasons"), reads=(), reads_if=_similarity_input),
    BeyondEntry("serendipity", ("serendipity",), "user", ("train", "truth"), bounds=_UNIT,
                undefined="an empty list, or no relevant item the serendipity form can count",
                options=("similarity", "serendipity", "serendipity_relevance"),
                compute=lazy(_C, "serendipity"), reasons=lazy(_F, "serendipity_reasons"),
                reads=("truth", "popularity", "catalogue"), reads_if=_serendipity_reads),
    BeyondEntry("ARP", ("arp", "avgrecpopularity", "average_recommendation_popularity",
                        "averagepopularity", "average_popularity"),
                "user", ("train",), "lower", _NONNEGATIVE,
                undefined="an empty list, or one of cold items only under arp_cold='skip'",
                options=("popularity", "arp_normalize", "arp_cold"), compute=lazy(_C, "arp"),
                reads=("popularity",)),
    BeyondEntry("APLT", ("aplt", "tailpercentage", "tail_percentage"), "user", ("train",),
                bounds=_UNIT, undefined=_EMPTY, options=_POPULARITY,
                compute=lazy(_C, "aplt"), reads=("popularity",)),
    BeyondEntry("MeanPopRank", ("meanpoprank", "mean_pop_rank", "mpr"), "user", ("train",),
                "lower", _UNIT, undefined=_EMPTY, options=("popularity",),
                compute=lazy(_C, "mean_pop_rank"), reads=("popularity",)),
    BeyondEntry("ACLT", ("aclt",), "user", ("train",), bounds=_NONNEGATIVE, grows_with_k=True,
                undefined=_EMPTY, options=_POPULARITY, compute=lazy(_C, "aclt"),
                reads=("popularity",)),
    BeyondEntry("PopREO", ("popreo", "pop_reo"), "catalogue", ("train", "truth"), "lower", _UNIT,
                undefined="a popularity group (head or tail) without a relevant candidate",
                options=_POPULARITY, compute=lazy(_C, "pop_reo"),
                reads=("truth", "popularity", "catalogue", "pooled_history")),
    BeyondEntry("PopRSP", ("poprsp", "pop_rsp"), "catalogue", ("train",), "lower", _UNIT,
                undefined="a popularity group (head or tail) without a candidate",
                options=_POPULARITY, compute=lazy(_C, "pop_rsp"),
                reads=("popularity", "catalogue", "pooled_history")),
    BeyondEntry("personalization", ("personalization", "personalisation"), "catalogue", (),
                bounds=_UNIT, undefined="fewer than two users with a list",
                compute=lazy(_C, "personalization"), reads=("exposure",)),
    # exposure fairness and calibration over item groups (receval.beyond.fairness,
    # receval.beyond.calibration; docs/fairness.md)
    BeyondEntry("group_exposure", ("group_exposure", "groupexposure", "exposure_gap"),
                "catalogue", ("groups",), "lower", _UNIT,
                undefined="no listed item has a group", options=_EXPOSURE,
                compute=lazy(_F, "group_exposure_metric"), fairness=True,
                reads=("groups", "ranked_exposure"), reads_if=_catalogue_target),
    BeyondEntry("AWRF", ("awrf",), "user", ("groups",), bounds=_UNIT,
                undefined="no listed item has a group", options=_EXPOSURE,
                compute=lazy(_F, "awrf_metric"), per_list=True, fairness=True,
                reads=("groups",), reads_if=_catalogue_target),
    BeyondEntry("nDCG_AWRF", ("ndcg_awrf", "ndcgxawrf", "ndcg*awrf", "trec_fair"), "user",
                ("groups", "truth"), bounds=_UNIT,
                undefined="no listed item has a group, or no relevant item",
                options=_EXPOSURE, compute=lazy(_F, "ndcg_awrf_metric"), per_list=True,
                fairness=True, reads=("groups", "truth"), reads_if=_catalogue_target),
    *(BeyondEntry(name, (name.lower(),), "user", ("groups",), "lower", _UNIT,
                  undefined="the list holds no protected item or only protected items (the "
                            "normaliser, the maximum over arrangements, is 0), or no cut point",
                  options=_RANKED, compute=lazy(_F, "ranked_metric"), zero_is_best=True,
                  reasons=lazy(_F, "ranked_reasons"), per_list=True, fairness=True,
                  reads=("groups",), reads_if=_protected)
      for name in ("rND", "rKL", "rRD")),
    BeyondEntry("calibration", ("calibration", "c_kl", "ckl", "miscalibration"), "user",
                ("groups", "train"), "lower", _NONNEGATIVE,
                undefined="no training history, or no listed item with a group",
                options=_CALIBRATION, compute=_CAL, zero_is_best=True, per_list=True,
                reasons=_CAL_WHY, fairness=True, reads=("groups", "history")),
    BeyondEntry("calibration_js", ("calibration_js", "c_js", "cjs"), "user",
                ("groups", "train"), "lower", _UNIT,  # JS divergence <= log(2) <= 1
                undefined="no training history, or no listed item with a group",
                options=(*_CALIBRATION, "calibration_js"), compute=_CAL, zero_is_best=True,
                per_list=True, reasons=_CAL_WHY, fairness=True, reads=("groups", "history")),
    # expected exposure (receval.beyond.expected_exposure), raw and normalised as expeval
    # prints them: EE-R is relevance (higher is better), EE-D disparity and EE-L the loss
    *(BeyondEntry(f"EE_{x}{n}", (f"ee_{x.lower()}{n}", f"ee-{x.lower()}{n}"), "user",
                  ("truth",), "higher" if x == "R" else "lower",
                  bounds=_UNIT if n and x != "L" else _NONNEGATIVE,
                  undefined="no relevant item, or an empty list", options=_EE,
                  compute=lazy(_F, "expected_exposure_metric"), per_list=True,
                  fairness=True, reads=("truth",))
      for x in "LDR" for n in ("", "_norm")),  # EE_L_norm's divisor is not its maximum
    # group expected exposure: the items' exposures and targets summed per item group
    *(BeyondEntry(f"EE_{x}_group", (f"ee_{x.lower()}_group", f"ee-{x.lower()}-group"), "user",
                  ("groups", "truth"), "higher" if x == "R" else "lower", _NONNEGATIVE,
                  undefined="no relevant item, or an empty list", options=_EE,
                  compute=lazy(_F, "group_expected_exposure_metric"), per_list=True,
                  fairness=True, reads=("groups", "truth"))
      for x in "LDR"),
)}

#: every alias -> its entry's name, as the table was declared (:func:`find` reads the table as
#: it is now: an entry added later is found)
ALIASES: dict[str, str] = {a: e.name for e in ENTRIES.values() for a in e.aliases}


def find(alias: str) -> str | None:
    """The name of the entry that ``alias`` (lower case) means, or ``None``.

    Example:
        >>> find("ild"), find("ndcg")
        ('diversity', None)
    """
    name = ALIASES.get(alias)
    if name is not None and name in ENTRIES:
        return name
    return next((e.name for e in ENTRIES.values() if alias in e.aliases), None)

_NUMBER = re.compile(r"\d+")
#: a bare cutoff in a comma list, as the accuracy parser reads one (``P@5,1e2``)
_BARE = re.compile(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class BeyondSpec:
    """One requested beyond-accuracy metric: its name as written, the entry and ``k``.

    Example:
        >>> spec = parse_beyond("Coverage@10")
        >>> spec.metric, spec.k, spec.entry.reduction
        ('coverage', 10, 'catalogue')
    """

    name: str
    metric: str
    k: int

    @property
    def entry(self) -> BeyondEntry:
        """Its :class:`BeyondEntry`."""
        return ENTRIES[self.metric]


def parse_beyond(name: str) -> BeyondSpec | None:
    """The :class:`BeyondSpec` of ``name``, or ``None`` when it is not a beyond-accuracy
    name (so the accuracy parser takes it).

    Example:
        >>> parse_beyond("ILD@5").metric, parse_beyond("nDCG@5") is None
        ('diversity', True)
        >>> parse_beyond("novelty")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: metric 'novelty' needs a cutoff, e.g. novelty@10
    """
    text = name.strip()
    base, sep, cut = text.partition("@")
    metric = find(base.strip().lower())
    if metric is None:
        return None
    if not sep:
        raise ReceValError(f"metric {name!r} needs a cutoff, e.g. {base.strip()}@10")
    if not _NUMBER.fullmatch(cut.strip()) or int(cut) <= 0:
        raise ReceValError(f"metric {name!r}: cutoff k must be a positive integer; got "
                           f"{cut.strip()!r}")
    return BeyondSpec(name=text, metric=metric, k=int(cut))


def direction(name: str) -> Direction:
    """Which value of the metric ``name`` is the better one, as its registry entry declares
    it (:attr:`Entry.better <receval.measures.entry.Entry.better>`,
    :attr:`BeyondEntry.better`): ``"higher"`` or ``"lower"``. A debiased form
    (``IPS(...)``/``SNIPS(...)`` or a name under ``debias=``) has its plain metric's direction.

    Example:
        >>> direction("RMSE"), direction("nDCG@10"), direction("rND@10"), direction("EE_R@5")
        ('lower', 'higher', 'lower', 'higher')
    """
    from receval.measures.registry import ENTRIES as ACCURACY
    from receval.measures.spec import parse_metric

    spec = parse_beyond(name)
    if spec is not None:
        return spec.entry.better
    return ACCURACY[parse_metric(name).family].better


def lower_is_better(name: str) -> bool:
    """Whether a smaller value of the metric ``name`` (accuracy or beyond accuracy) is better,
    as its entry declares (:func:`direction`).

    Example:
        >>> lower_is_better("RMSE"), lower_is_better("nDCG@10"), lower_is_better("ARP@10")
        (True, False, True)
        >>> lower_is_better("novelty@10")
        False
    """
    return direction(name) == "lower"


def catalogue_level(name: str) -> bool:
    """Whether ``name`` is a beyond-accuracy metric of one number over all lists (no
    per-user values to pair or resample).

    Example:
        >>> catalogue_level("coverage@10"), catalogue_level("novelty@10"), catalogue_level("P@5")
        (True, False, False)
    """
    spec = parse_beyond(name)
    return spec is not None and spec.entry.reduction == "catalogue"


def split_metrics(names: str | Iterable[str]) -> tuple[list[str], list[BeyondSpec], list[str]]:
    """Split requested names into accuracy names (for
    :func:`~receval.measures.spec.parse_metrics`) and beyond-accuracy specs, with every name
    in the order requested. Comma lists and bare cutoffs repeat the metric before them, as
    the accuracy parser reads them.

    Example:
        >>> acc, beyond, order = split_metrics(["P@10", "coverage@5,10", "novelty@10"])
        >>> acc, [b.name for b in beyond], order
        (['P@10'], ['coverage@5', 'coverage@10', 'novelty@10'], ['P@10', 'coverage@5', 'coverage@10', 'novelty@10'])
        >>> split_metrics(["P.5,10"])[2]  # a trec_eval list is read whole by the accuracy parser
        ['P.5', 'P@10']
    """  # noqa: E501
    if isinstance(names, str):
        names = [names]
    accuracy: list[str] = []
    beyond: list[BeyondSpec] = []
    order: list[str] = []
    for raw in names:
        if not isinstance(raw, str):
            raise TypeError(f"a metric name must be a string; got {type(raw).__name__}")
        if all(parse_beyond(piece.strip()) is None for piece in raw.split(",")
               if not _BARE.fullmatch(piece.strip())):
            # accuracy only: the accuracy parser reads the whole string (trec_eval's "P.5,10");
            # a name it does not know is left to the piece by piece path and its error
            try:
                parsed = [spec.name for spec in parse_metrics(raw)]
            except ReceValError:
                parsed = None
            if parsed is not None:
                accuracy.append(raw)
                order.extend(parsed)
                continue
        base = ""
        for piece in raw.split(","):
            piece = piece.strip()
            bare = bool(base) and _BARE.fullmatch(piece) is not None
            full = f"{base}@{piece}" if bare else piece
            if not bare:
                base = piece.partition("@")[0]
            spec = parse_beyond(full)
            if spec is None:
                accuracy.append(full)
                order.append(full)
            else:
                beyond.append(spec)
                order.append(spec.name)
    seen: set[str] = set()
    for spec in beyond:
        if spec.name in seen:
            raise ReceValError(f"metric {spec.name!r} is requested twice")
        seen.add(spec.name)
    return accuracy, beyond, order
