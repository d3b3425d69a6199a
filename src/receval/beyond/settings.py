"""The named switches of the beyond-accuracy metrics (:class:`BeyondOptions`) and the bundles
that reproduce a library (:data:`PROFILES`).

Every switch names a place where libraries disagree (anchors: Microsoft Recommenders 1.2.1
``python_evaluation``, RecTools 0.19 ``rectools.metrics``, Elliot, Evidently, LensKit,
RecBole); docs/beyond-accuracy.md gives each formula and source.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from receval.exceptions import ReceValError

#: the allowed values of each string switch
CHOICES: dict[str, tuple[str, ...]] = {
    "catalogue": ("train+truth", "train", "features", "recommended"),
    "coverage": ("share", "count"),
    "coverage_outside": ("drop", "count"),
    "entropy_normalize": ("none", "distinct"),
    "gini_scope": ("catalogue", "recommended"),
    "gini_form": ("G", "1-G"),
    "gini_denominator": ("n", "n-1"),
    "novelty_popularity": ("interactions", "users"),
    "novelty_cold": ("zero", "one", "skip"),
    "novelty_average": ("users", "slots"),
    "popularity": ("interactions", "users"),
    "arp_normalize": ("none", "interactions", "max"),
    "arp_cold": ("zero", "skip"),
    "similarity": ("features", "cooccurrence", "hamming"),
    "diversity_short": ("undefined", "zero"),
    "diversity_divisor": ("pairs", "items"),
    "serendipity": ("auralist", "rectools", "evidently"),
    "serendipity_relevance": ("truth", "all"),
    "empty": ("inherit", "zero", "one", "skip", "nan", "error"),
    "exposure_discount": ("trec", "log2", "rbp", "reciprocal", "uniform"),
    "fairness_population": ("list", "catalogue"),
    "calibration_smooth": ("list", "both", "none"),
    "calibration_discount": ("none", "reciprocal", "radio"),
    "calibration_style": ("exact", "snippet"),
    "calibration_history": ("rows", "items"),
    "calibration_js": ("divergence", "distance"),
    "ee_model": ("gerr", "rbp"),
    "ee_ties": ("list", "permute"),
}


@dataclass(frozen=True)
class BeyondOptions:
    """The switches of the beyond-accuracy metrics; the defaults follow docs/semantics.md
    section 11.

    Attributes:
        catalogue: the item set ``I``: ``"train+truth"`` (items of the training data or the
            truth), ``"train"`` (training items: Microsoft Recommenders), ``"features"`` (the
            items of ``item_features``), ``"recommended"`` (items in any list).
        coverage: ``"share"`` (``|union of lists| / |I|``) or ``"count"`` (Elliot; RecTools
            without ``normalize``).
        coverage_outside: recommended items outside ``I``: ``"drop"`` from the numerator
            (Evidently; the share stays <= 1) or ``"count"`` them (Microsoft Recommenders).
        entropy_base: the logarithm's base of ``distributional_coverage`` (2; RecBole: e).
        entropy_normalize: ``"distinct"`` divides by the number of distinct recommended items
            (RecBole ``ShannonEntropy``).
        gini_scope: ``"catalogue"`` (every item of ``I``, unexposed ones as 0: LensKit) or
            ``"recommended"`` (Evidently).
        gini_form: ``"G"`` or ``"1-G"`` (Elliot).
        gini_denominator: ``"n"`` (LensKit) or ``"n-1"`` (Elliot, Evidently).
        novelty_popularity: ``"interactions"`` (``-log p``, ``p`` = the item's training rows /
            all training rows: Microsoft Recommenders) or ``"users"`` (distinct users / training
            users: RecTools ``MeanInvUserFreq``).
        novelty_cold: an item absent from training adds ``"zero"`` (Microsoft Recommenders),
            counts as ``"one"`` user (RecTools) or is ``"skip"``-ped (Evidently).
        novelty_average: the summary is the mean over ``"users"`` of their list means
            (RecTools) or over every recommendation ``"slots"`` (Microsoft Recommenders).
        novelty_base: the logarithm's base (2).
        popularity: ARP's popularity and the short head: training ``"interactions"``
            (RecTools, RecBole) or distinct ``"users"`` (Elliot).
        arp_normalize: ``"interactions"`` divides ARP by the training rows (RecTools
            ``normalize=True``), ``"max"`` by the largest item popularity (Evidently
            ``normalize_arp=True``).
        arp_cold: an item absent from training adds popularity ``"zero"`` (RecTools) or is
            ``"skip"``-ped (Evidently).
        head_share: the short head H is the most popular items holding this share of the
            training popularity (Elliot ``pop_ratio`` 0.8); the long tail is the rest.
        tail_ratio: ``None`` (default): the long tail of APLT/ACLT is the complement of the
            short head. A number (RecBole ``TailPercentage``'s ``tail_ratio``): above 1, the
            training items with at most that many interactions; in (0, 1], the
            ``max(floor(ratio n), 1)`` least popular of the n training items (ties by item
            code). Items absent from training are never in it (RecBole counts only them).
        catalogue_pad: items added to the catalogue's size in coverage and Gini, never
            recommended (RecBole counts its ``[PAD]`` item id: 1).
        similarity: item similarity for diversity and serendipity: cosine of ``"features"``
            or training ``"cooccurrence"`` cosine ``c(i,j) / sqrt(c_i c_j)`` (Microsoft
            Recommenders' default); ``"hamming"``: diversity is the mean Hamming distance of
            the raw feature values (RecTools ``PairwiseHammingDistanceCalculator``).
        diversity_short: a list of fewer than two items is ``"undefined"`` (NaN, then the
            ``empty`` policy; LensKit) or scores ``"zero"`` (RecTools).
        diversity_divisor: the pairs' sum of distances over the number of pairs
            (``"pairs"``: their mean, Ziegler et al.) or over the list's length (``"items"``:
            Evidently's ``DiversityMetric``, 0 for a list of one item).
        serendipity: ``"auralist"`` (Microsoft Recommenders), ``"rectools"`` or
            ``"evidently"`` (see docs/beyond-accuracy.md).
        serendipity_relevance: rel(i) is 1 for items in the user's truth (``"truth"``) or for
            ``"all"`` items (Microsoft Recommenders without ``col_relevance``).
        empty: how undefined per-user values reduce: ``"inherit"`` the ``empty=`` of
            ``evaluate`` or one of its values for these metrics only.
        exposure_discount: the browsing model of ``group_exposure`` and ``AWRF``: ``"trec"``
            1/log2(max(r, 2)) (TREC Fair 2022), ``"log2"`` 1/log2(r + 1), ``"rbp"``
            ``rbp_patience``^(r - 1), ``"reciprocal"`` 1/r, ``"uniform"``.
        rbp_patience: RBP's persistence p (0.5, expeval's default).
        fairness_target: the target group distribution of ``group_exposure`` and ``AWRF``:
            ``"uniform"``, ``"catalogue"`` (the catalogue's group shares) or a dict group ->
            weight.
        protected_group: the protected group of rND/rKL/rRD (``None``: the group with the
            fewest catalogue items, ties to the first name).
        fairness_population: rND/rKL/rRD compare each prefix with the ``"list"``'s own
            protected share (Yang & Stoyanovich: the ranking is the population) or the
            ``"catalogue"``'s.
        fairness_step: rND/rKL/rRD's cut points are multiples of it (10 in the paper).
        calibration_alpha: the smoothing weight alpha (0.01, Steck's).
        calibration_smooth: ``"list"`` (Steck: q~ = (1 - alpha) q + alpha p), ``"both"``
            (RADio: each side mixed with the other) or ``"none"``.
        calibration_discount: the list's rank weights: ``"none"`` (Steck), ``"reciprocal"``
            (1/r), ``"radio"`` (1/r / H~_n, RADio's approximate harmonic number).
        calibration_base: the logarithm's base (e; 2 for RADio and the snippet).
        calibration_history: the history's weights: each training ``"rows"`` (a repeated
            interaction counts again; default) or each distinct item once (``"items"``).
        calibration_style: ``"exact"`` or ``"snippet"``: the widely copied
            ``compute_kl_divergence`` (log2, distributions rounded to 3 decimals).
        calibration_js: ``calibration_js`` as the Jensen-Shannon ``"divergence"`` or its
            square root, the ``"distance"`` (RADio).
        ee_model: expected exposure's browsing model, ``"gerr"`` (expeval's default) or
            ``"rbp"``; ``ee_patience`` p and ``ee_utility`` u (0.5 and 0.5, expeval's).
        ee_ties: expected exposure of the ``"list"`` as ranked, or each item's expectation
            over every order of the tied scores (``"permute"``, exact:
            :mod:`receval.beyond.tied_exposure`; ``receval.evaluate`` only).

    Example:
        >>> BeyondOptions(gini_form="1-G").gini_form
        '1-G'
        >>> BeyondOptions(novelty_cold="nan")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: beyond option novelty_cold='nan' is not one of 'zero', 'one', 'skip'
    """  # noqa: E501

    catalogue: str = "train+truth"
    coverage: str = "share"
    coverage_outside: str = "drop"
    entropy_base: float = 2.0
    entropy_normalize: str = "none"
    gini_scope: str = "catalogue"
    gini_form: str = "G"
    gini_denominator: str = "n"
    novelty_popularity: str = "interactions"
    novelty_cold: str = "zero"
    novelty_average: str = "users"
    novelty_base: float = 2.0
    popularity: str = "interactions"
    arp_normalize: str = "none"
    arp_cold: str = "zero"
    head_share: float = 0.8
    tail_ratio: float | None = None
    catalogue_pad: int = 0
    similarity: str = "features"
    diversity_short: str = "undefined"
    diversity_divisor: str = "pairs"
    serendipity: str = "auralist"
    serendipity_relevance: str = "truth"
    empty: str = "inherit"
    exposure_discount: str = "trec"
    rbp_patience: float = 0.5
    fairness_target: Any = "uniform"
    protected_group: Any = None
    fairness_population: str = "list"
    fairness_step: int = 10
    calibration_alpha: float = 0.01
    calibration_smooth: str = "list"
    calibration_discount: str = "none"
    calibration_base: float = math.e
    calibration_style: str = "exact"
    calibration_history: str = "rows"
    calibration_js: str = "divergence"
    ee_model: str = "gerr"
    ee_patience: float = 0.5
    ee_utility: float = 0.5
    ee_ties: str = "list"

    def __post_init__(self) -> None:
        for name, allowed in CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ReceValError(f"beyond option {name}={value!r} is not one of "
                                   f"{', '.join(map(repr, allowed))}")
        for name in ("entropy_base", "novelty_base"):
            base = getattr(self, name)
            if not isinstance(base, int | float) or not base > 1:
                raise ReceValError(f"beyond option {name}={base!r} must be a number > 1")
        if not 0 < self.head_share <= 1:
            raise ReceValError(f"beyond option head_share={self.head_share!r} must be in (0, 1]")
        tr = self.tail_ratio
        if tr is not None and (isinstance(tr, bool) or not isinstance(tr, int | float)
                               or not 0 < tr < math.inf):
            raise ReceValError(f"beyond option tail_ratio={tr!r} must be None or a positive "
                               f"number (above 1: a count; in (0, 1]: a share of items)")
        pad = self.catalogue_pad
        if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
            raise ReceValError(f"beyond option catalogue_pad={pad!r} must be an integer >= 0")
        if not 0 < self.rbp_patience < 1:
            raise ReceValError(f"beyond option rbp_patience={self.rbp_patience!r} must be in "
                               f"(0, 1)")
        if not (0 < self.ee_patience < 1 and 0 <= self.ee_utility < 1):
            raise ReceValError(f"beyond options ee_patience={self.ee_patience!r} must be in "
                               f"(0, 1), ee_utility={self.ee_utility!r} in [0, 1)")
        if not 0 <= self.calibration_alpha <= 1:
            raise ReceValError(f"beyond option calibration_alpha={self.calibration_alpha!r} "
                               f"must be in [0, 1]")
        if not isinstance(self.calibration_base, int | float) or not self.calibration_base > 1:
            raise ReceValError(f"beyond option calibration_base={self.calibration_base!r} "
                               f"must be a number > 1")
        if isinstance(self.fairness_step, bool) or not isinstance(self.fairness_step, int) \
                or self.fairness_step < 1:
            raise ReceValError(f"beyond option fairness_step={self.fairness_step!r} must be a "
                               f"positive integer")
        target = self.fairness_target
        if isinstance(target, Mapping):  # hashable and comparable: sorted pairs
            object.__setattr__(self, "fairness_target",
                               tuple(sorted(target.items(), key=lambda kv: str(kv[0]))))
        elif not (target in ("uniform", "catalogue") or isinstance(target, tuple)):
            raise ReceValError(f"beyond option fairness_target={target!r} is not 'uniform', "
                               f"'catalogue' or a dict group -> weight")

    def to_dict(self) -> dict[str, Any]:
        """Every switch, for ``Result.options``.

        Example:
            >>> BeyondOptions().to_dict()["catalogue"]
            'train+truth'
        """
        return asdict(self)


#: Microsoft Recommenders 1.2.1 python_evaluation: catalog_coverage (distinct recommended /
#: distinct train items, not intersected), distributional_coverage (log2 over slots), novelty
#: (interactions, cold items 0, pooled over slots), diversity and serendipity (co-occurrence
#: cosine; users without pairs or without training items are dropped: empty "skip"; relevance
#: 1 without col_relevance)
RECOMMENDERS = BeyondOptions(
    catalogue="train", coverage_outside="count", novelty_popularity="interactions",
    novelty_cold="zero", novelty_average="slots", similarity="cooccurrence",
    diversity_short="undefined", serendipity="auralist", serendipity_relevance="all",
    empty="skip")

#: RecTools 0.19 rectools.metrics: CatalogCoverage (count; normalize=True: / len(catalog)),
#: MeanInvUserFreq (users, cold = 1 user, per-user mean), AvgRecPopularity (interaction
#: counts), Serendipity (popularity rank of interaction counts), IntraListDiversity (Hamming
#: distance of the features, short lists 0)
RECTOOLS = BeyondOptions(
    catalogue="train+truth", coverage="count", coverage_outside="count",
    novelty_popularity="users", novelty_cold="one",
    novelty_average="users", popularity="interactions", serendipity="rectools",
    similarity="hamming", diversity_short="zero", empty="skip")

#: Evidently 0.7 (legacy recsys metrics): coverage of the training items, Gini over recommended
#: items with n - 1, novelty and ARP on distinct users with cold items skipped, serendipity
#: normalised by the training history (users without a relevant listed item left out)
EVIDENTLY = BeyondOptions(
    catalogue="train", coverage="share", coverage_outside="drop", gini_scope="recommended",
    gini_denominator="n-1", novelty_popularity="users", novelty_cold="skip",
    novelty_average="users", popularity="users", arp_cold="skip", serendipity="evidently",
    similarity="features", diversity_divisor="items", empty="skip")

#: RecBole 1.2.1 recbole/evaluator/metrics.py: ItemCoverage (distinct / data.num_items, which
#: counts the [PAD] id), AveragePopularity (training interaction counts, cold 0, mean over k),
#: ShannonEntropy (natural log over the slots, divided by the distinct items), GiniIndex (every
#: item of num_items, [PAD] included, n), TailPercentage (tail_ratio, default 0.1)
RECBOLE = BeyondOptions(
    catalogue="train+truth", coverage="share", coverage_outside="count", catalogue_pad=1,
    entropy_base=math.e, entropy_normalize="distinct", gini_scope="catalogue",
    gini_form="G", gini_denominator="n", popularity="interactions", arp_normalize="none",
    arp_cold="zero", tail_ratio=0.1)

#: LensKit (lenskit/lkpy src/lenskit/metrics/ranking/_pop.py): MeanPopRank counts distinct
#: users by default (count="users")
LENSKIT = BeyondOptions(popularity="users")

#: tool name (as the ``profile=`` of evaluate) -> its beyond switches
PROFILES: dict[str, BeyondOptions] = {"recommenders": RECOMMENDERS, "rectools": RECTOOLS,
                                      "evidently": EVIDENTLY, "recbole": RECBOLE,
                                      "lenskit": LENSKIT}


def resolve(profile: str | None, given: BeyondOptions | Mapping[str, Any] | str | None
            ) -> BeyondOptions:
    """The switches in effect: the profile's (or the defaults), then those ``given``: a
    :class:`BeyondOptions`, a dict of switches, or a tool's name (``"rectools"``,
    ``"recommenders"``) for its bundle. ``profile`` is :func:`receval.evaluate`'s: a tool
    with a bundle here brings it.

    Example:
        >>> resolve("rectools", {"coverage": "share"}).coverage
        'share'
        >>> resolve(None, "rectools").novelty_popularity
        'users'
        >>> resolve(None, None) == BeyondOptions()
        True
    """
    base = PROFILES.get((profile or "").strip().lower(), BeyondOptions())
    if given is None:
        return base
    if isinstance(given, BeyondOptions):
        return given
    if isinstance(given, str):
        if given.strip().lower() not in PROFILES:
            raise ReceValError(f"unknown beyond profile {given!r}; known: "
                               f"{', '.join(sorted(PROFILES))}")
        return PROFILES[given.strip().lower()]
    if not isinstance(given, Mapping):
        raise ReceValError(f"beyond= takes a dict of switches, BeyondOptions or a tool's name; "
                           f"got {type(given).__name__}")
    known = {f.name for f in fields(BeyondOptions)}
    unknown = sorted(set(given) - known)
    if unknown:
        raise ReceValError(f"unknown beyond option {unknown[0]!r}; known: "
                           f"{', '.join(sorted(known))}")
    return replace(base, **dict(given))
