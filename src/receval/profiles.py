"""Profiles: one switch that reproduces another tool's numbers (docs/semantics.md section 10).

A :class:`Profile` is a named bundle of :class:`~receval.options.Options`, plus the options a
tool sets differently for some metric families (TensorFlow averages precision micro but AP
macro; Recommenders averages nDCG over every truth user but P/R/MAP over the users on both
sides; torchmetrics >= 1.8 drops non-positive scores from P/R/AP/MRR but not from nDCG).
``receval.evaluate(..., profile="ranx")`` applies one; options passed explicitly override it.
Each bundle cites the tool's source file and the version read; ``tests/test_profiles*.py``
checks every profile against the real tool where it installs, else against its documented
formula, and ``docs/profiles.md`` tabulates the differences. :func:`receval.explain.explain`
says which options differ between two profiles and how much each one moves each metric on
given data.

Example:
    >>> import receval
    >>> truth = {"user": ["u"] * 3, "item": ["a", "c", "f"]}
    >>> preds = {"user": ["u"] * 5, "item": list("abcde"), "score": [5.0, 4, 3, 2, 1]}
    >>> for name in ("trec_eval", "torchmetrics", "kaggle"):
    ...     print(name, round(receval.evaluate(truth, preds, ["AP@10"], profile=name)["AP@10"], 4))
    trec_eval 0.5556
    torchmetrics 0.8333
    kaggle 0.5556
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from receval.exceptions import ReceValError
from receval.measures.spec import CANONICAL, Family
from receval.options import OPTION_NAMES, Options

#: family short names as used in :attr:`Profile.per_family` (the canonical metric prefixes)
FAMILY_BY_NAME: dict[str, Family] = {name: fam for fam, name in CANONICAL.items()}


@dataclass(frozen=True)
class Profile:
    """A tool's semantics as receval options.

    Attributes:
        name: the profile's name (``profile="..."``).
        tool: the tool it reproduces, in words.
        version: the version whose source was read and whose numbers the tests compare with.
        source: the files read (repository and path).
        options: option name -> value, applied to every metric.
        per_family: family short name (``"P"``, ``"R"``, ``"AP"``, ``"nDCG"``, ``"RR"``,
            ``"Hit"``, ``"Rprec"``, ``"F"``, ``"RMSE"``, ``"MAE"``) -> the options that differ
            for that family.
        metrics: (receval metric, the tool's name for it) for every metric the tool offers
            that receval reproduces.
        pinned: family short name -> options the tool applies to that family whatever is
            passed, because the tool's own flag for that option does not reach it (trec_eval's
            ``-l N`` leaves ``ndcg`` and ``ndcg_cut`` at every level > 0): an explicit option
            overrides :attr:`options` and :attr:`per_family`, but not these.
        requires_rating: the truth must carry a rating column (thresholded relevance).
        gaps: what the profile does not reproduce, and why.

    Example:
        >>> PROFILES["ranx"].options["ap_normalizer"]
        'relevant'
    """

    name: str
    tool: str
    version: str
    source: str
    options: Mapping[str, Any]
    per_family: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    metrics: tuple[tuple[str, str], ...] = ()
    pinned: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    requires_rating: bool = False
    gaps: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [n for n in self.options if n not in OPTION_NAMES]
        for fam, opts in (*self.per_family.items(), *self.pinned.items()):
            if fam not in FAMILY_BY_NAME:
                raise ReceValError(f"profile {self.name!r}: unknown metric family {fam!r}")
            unknown += [n for n in opts if n not in OPTION_NAMES]
        if unknown:
            raise ReceValError(f"profile {self.name!r}: unknown options {unknown}")
        Options(**self.options)  # validates the values

    def resolve(self, explicit: Mapping[str, Any] | None = None) -> Resolved:
        """The effective options, with ``explicit`` options overriding the profile's (but not
        its :attr:`pinned` ones).

        Example:
            >>> r = PROFILES["tensorflow"].resolve()
            >>> r.options_for(Family.PRECISION).average, r.options_for(Family.AP).average
            ('micro', 'macro')
            >>> r = PROFILES["trec_eval"].resolve({"relevance_threshold": 2})  # trec_eval -l2
            >>> r.options_for(Family.AP).relevance_threshold
            2
            >>> r.options_for(Family.NDCG).relevance_threshold
            1
        """
        explicit = dict(explicit or {})
        base = Options(**{**self.options, **explicit})
        per: dict[Family, Options] = {}
        for fam_name in {**self.per_family, **self.pinned}:
            opts = {**self.options, **self.per_family.get(fam_name, {}), **explicit,
                    **self.pinned.get(fam_name, {})}
            per[FAMILY_BY_NAME[fam_name]] = Options(**opts)
        return Resolved(self.name, base, per, self.requires_rating)


@dataclass(frozen=True)
class Resolved:
    """The options in force for one evaluation: a base, and those of some metric families."""

    name: str | None
    options: Options
    per_family: Mapping[Family, Options]
    requires_rating: bool = False

    def options_for(self, family: Family) -> Options:
        """The options a metric of ``family`` is computed with."""
        return self.per_family.get(family, self.options)


def _cite(*lines: str) -> str:
    return " ".join(lines)


# --- the bundles -----------------------------------------------------------------------------
# Each bundle states, for its tool: precision's denominator when fewer than k items come back;
# AP's normaliser; ties; what a user with no relevant item gives and whether it is averaged in;
# macro or micro; which users are averaged; graded relevance thresholds; nDCG's gain.

PROFILES: dict[str, Profile] = {}


def _register(profile: Profile) -> Profile:
    PROFILES[profile.name] = profile
    return profile


# trec_eval 9.0.8 as embedded in pytrec_eval-terrier 0.5.11 (usnistgov/trec_eval, tag v9.0.8):
# - m_P.c: P_k = rel_ret@k / k, "nonrelevant docs fill in" when fewer than k are retrieved;
# - m_map_cut.c: sum of P@rank over relevant retrieved within k, divided by num_rel (R);
# - m_ndcg_cut.c: gain = the qrels value (linear), ideal from every judged level > 0, cut at k;
# - m_Rprec.c, m_recip_rank.c (no cutoff), m_success.c, m_recall.c;
# - form_res_rels.c: comp_sim_docno sorts by sim desc, then strcmp(docno2, docno1): doc ids
#   descending *as strings*; duplicate docnos are fatal;
# - trec_format.h (9.0.x): sim is a C float, so scores equal in float32 tie (v10.0 uses double);
# - relevance_level 1 (trec_eval.c): qrels rel >= 1 is relevant; -l N sets it, and it is read
#   by the binary measures only (m_P.c, m_recall.c, m_map.c, m_map_cut.c, m_Rprec.c,
#   m_recip_rank.c, m_success.c, ...: "rel >= epi->relevance_level"); m_ndcg.c and
#   m_ndcg_cut.c take the gain from every level > 0 whatever -l says ("if (gain > 0)", the ideal
#   from form_res_rels' rel_levels): nDCG is pinned at relevance_threshold 1;
# - a query with no relevant doc scores 0 and is averaged in; queries only in the run are
#   ignored and, without -c, queries only in the qrels are skipped (meas_avg.c): users "both".
_TREC_NAN = {"empty": "nan"}
_register(Profile(
    name="trec_eval",
    tool="NIST trec_eval / pytrec_eval",
    version="trec_eval 9.0.8 (pytrec-eval-terrier 0.5.11)",
    source=_cite("usnistgov/trec_eval v9.0.8: m_P.c, m_recall.c, m_map.c, m_map_cut.c,",
                 "m_ndcg.c, m_ndcg_cut.c, m_Rprec.c, m_recip_rank.c, m_success.c,",
                 "form_res_rels.c, trec_format.h"),
    options={
        "relevance_threshold": 1,
        "gain": "linear",
        "ties": "item",
        "item_order": "text",
        "score_dtype": "float32",
        "precision_denominator": "k",
        "ap_normalizer": "relevant",
        "empty": "zero",
        "users": "both",
        "average": "macro",
        "duplicates": "error",
    },
    metrics=(("P@k", "P_k"), ("R@k", "recall_k"), ("AP@k", "map_cut_k"), ("AP", "map"),
             ("Rprec", "Rprec"), ("nDCG@k", "ndcg_cut_k"), ("nDCG", "ndcg"),
             ("RR", "recip_rank"), ("Hit@k", "success_k"), ("bpref", "bpref"),
             ("iprec@x", "iprec_at_recall_x"), ("11pt_avg", "11pt_avg"),
             ("Rprec_mult@x", "Rprec_mult_x"), ("num_rel_ret", "num_rel_ret"),
             ("num_rel", "num_rel"), ("num_ret", "num_ret")),
    # m_iprec_at_recall.c, m_11pt_avg.c: precision at the list's end is num_rel_ret / num_ret,
    # 0/0 = NaN when -J leaves nothing retrieved, kept at the levels asking for 0 relevant
    per_family={"iprec": _TREC_NAN, "11pt_avg": _TREC_NAN},
    pinned={"nDCG": {"relevance_threshold": 1}},
    gaps=(
        "trec_eval 10.0 reads scores as double and rounds iprec's levels to the nearest: "
        "profile='trec_eval10'",
        "trec_eval -c (average over every qrels topic): pass users='truth'",
        "trec_eval -l N is relevance_threshold=N for the binary measures; nDCG keeps every "
        "level > 0 as trec_eval does (to cut nDCG's gains too, leave the profile out)",
        "trec_eval 10.0 without -c exits with an error when a qrels topic has no run",
        "trec_eval -M N is max_list=N; -J is protocol='known'",
        "a qrels row with a negative level is unjudged in trec_eval (bpref, rbp_resid, -J); "
        "in receval every truth row is judged: drop such rows first",
        "trec_eval's rbp takes graded gains scaled to [0, 1] and rbp_resid is 0 when the list "
        "holds no unjudged item; receval's RBP is binary and its residual the paper's",
        "gm_bpref, infAP, relative_P, set_*, G, binG, Rndcg, ndcg_rel, utility are "
        "not computed; num_rel/num_ret are averaged over users (trec_eval sums them; "
        "num_rel_ret is summed, as trec_eval prints it)",
    ),
))

# trec_eval 10.0 (usnistgov/trec_eval tag v10.0, f4253652; CHANGELOG "Breaking fix: change
# uses of int truncation to round/floor"): m_iprec_at_recall.c and m_11pt_avg.c take the level's
# relevant count as lround(x * num_rel) (9.x: (long)(x * num_rel + 0.9)); m_Rprec_mult.c keeps
# + 0.9; trec_format.h reads sim as a double. The rest is 9.0.8's.
_TREC9 = PROFILES["trec_eval"]
_register(dataclasses.replace(
    _TREC9,
    name="trec_eval10",
    tool="NIST trec_eval 10.0",
    version="trec_eval 10.0 (tag v10.0, f4253652)",
    source=_TREC9.source.replace("v9.0.8", "v10.0") + ", CHANGELOG",
    options={**_TREC9.options, "score_dtype": "float64", "iprec_rounding": "nearest"},
    gaps=(
        "trec_eval 10.0 without -c exits with an error when a qrels topic has no run; receval "
        "leaves such users out (users='both')",
        *(g for g in _TREC9.gaps if not g.startswith(("trec_eval 10.0",
                                                      "trec_eval 10.0 without -c"))),
        "rbp, rbp_resid and unj_N (new in 10.0's all_trec): rbp differs as above; unj_N is "
        "1 - Judged@N",
    ),
))


# ranx 0.3.21 (AmenRa/ranx): ranx/metrics/{precision,recall,f1,average_precision,ndcg,
# reciprocal_rank,hit_rate,r_precision,common}.py, ranx/meta/evaluate.py.
# - precision.py: hits@k / k (k > len(run) still divides by k);
# - average_precision.py: sum of P@i over hits in the top k, divided by len(qrels) (R);
# - common.py clean_qrels: only qrels with rel >= rel_lvl (default 1) exist, for every metric,
#   nDCG included (gain = the qrels value: linear for "ndcg", 2^rel - 1 for "ndcg_burges");
# - every metric is 0 for a query with no relevant doc, and it is averaged in (np.mean);
# - evaluate(make_comparable=True) adds an empty run for qrels queries missing from the run and
#   drops run queries missing from the qrels: users "truth";
# - data_structures/run.py, common.py: a Run keeps each query's docs in a numba typed dict, in
#   input order (Run.from_df: row order within each groupby group), sorted by
#   np.argsort([-v for v in values]) in numba: quicksort, unstable above 15 docs.
#   Run.from_df / from_dict sort once, evaluate(make_comparable=True) sorts again
#   (Run.make_comparable ends with self.sort()): ties "ranx" (ranx_order, sorts=2);
#   ids are dict keys: no duplicates.
_register(Profile(
    name="ranx",
    tool="ranx",
    version="ranx 0.3.21",
    source=_cite("AmenRa/ranx 0.3.21: ranx/metrics/*.py, ranx/metrics/common.py,",
                 "ranx/meta/evaluate.py, ranx/data_structures/{run,common}.py"),
    options={
        "relevance_threshold": 1,
        "gain": "linear",
        "ties": "ranx",
        "precision_denominator": "k",
        "ap_normalizer": "relevant",
        "empty": "zero",
        "users": "truth",
        "average": "macro",
        "duplicates": "error",
    },
    metrics=(("P@k", "precision@k"), ("R@k", "recall@k"), ("F1@k", "f1@k"),
             ("AP@k", "map@k"), ("AP", "map"), ("nDCG@k", "ndcg@k"), ("RR@k", "mrr@k"),
             ("RR", "mrr"), ("Hit@k", "hit_rate@k"), ("Rprec", "r-precision")),
    gaps=(
        "ndcg_burges@k is nDCG@k with gain='exponential'",
        "ties='ranx' is a Run under evaluate(make_comparable=True), which sorts twice; "
        "without make_comparable (one sort) or with a plain dict run (np.argsort reversed) "
        "ranx orders tied docs of lists above 15 docs differently: not reproduced",
        "without make_comparable=True ranx asserts equal query sets",
        "hits@k (a raw count), bpref, rbp and the interpolated metrics have no receval metric",
    ),
))

# torchmetrics 1.9.0 (Lightning-AI/torchmetrics): src/torchmetrics/functional/retrieval/
# {precision,recall,average_precision,reciprocal_rank,ndcg,r_precision,hit_rate}.py and
# src/torchmetrics/retrieval/base.py.
# - only the rows given exist (preds, target, indexes): truth_scope "predicted", users are the
#   index groups (the predictions);
# - base.py compute(): a group with no positive target gets empty_target_action ("neg" = 0 by
#   default) for *every* metric, precision included: empty_scope "no_relevant"; with "skip"
#   and every group skipped, compute() returns tensor(0.0): all_skipped "zero";
# - precision.py: relevant in topk(min(k, n)) / k (adaptive_k=True: precision_denominator
#   "returned"); recall.py: / target.sum();
# - average_precision.py: mean over the hits in the top k of hit#/rank: ap_normalizer "hits";
# - since 1.8.0 (PR #3160) P, R, AP and MRR use torch.where(preds > 0, target, 0): a doc with a
#   score <= 0 is never a hit; nDCG, R-precision and HitRate do not (per_family below);
# - ndcg.py: linear target gain, tie-averaged DCG (_tie_average_dcg): ties "average";
#   P/R/AP/MRR use topk/argsort, whose tie order is unspecified (tests use tie-free scores);
# - checks.py casts preds to float32: score_dtype "float32".
_TM_FILTERED = {"nonpositive_scores": "irrelevant"}
_register(Profile(
    name="torchmetrics",
    tool="torchmetrics retrieval metrics",
    version="torchmetrics 1.9.0",
    source=_cite("Lightning-AI/torchmetrics v1.9.0: functional/retrieval/*.py,",
                 "retrieval/base.py, utilities/checks.py"),
    options={
        "relevance_threshold": 1,
        "gain": "linear",
        "ties": "average",
        "score_dtype": "float32",
        "truth_scope": "predicted",
        "precision_denominator": "k",
        "ap_normalizer": "hits",
        "empty": "zero",
        "empty_scope": "no_relevant",
        "all_skipped": "zero",
        "users": "predictions",
        "average": "macro",
        "duplicates": "error",
    },
    per_family={"P": _TM_FILTERED, "R": _TM_FILTERED, "AP": _TM_FILTERED,
                "RR": _TM_FILTERED},
    metrics=(("P@k", "RetrievalPrecision(top_k=k)"), ("R@k", "RetrievalRecall(top_k=k)"),
             ("AP@k", "RetrievalMAP(top_k=k)"), ("AP", "RetrievalMAP()"),
             ("RR@k", "RetrievalMRR(top_k=k)"), ("RR", "RetrievalMRR()"),
             ("nDCG@k", "RetrievalNormalizedDCG(top_k=k)"),
             ("Hit@k", "RetrievalHitRate(top_k=k)"), ("Rprec", "RetrievalRPrecision()")),
    gaps=(
        "ties in P/R/AP/MRR/Hit/R-precision follow torch.topk/argsort, which is unspecified; "
        "receval gives their expectation over tie orders (ties='average')",
        "empty_target_action='pos' / 'skip' / 'error': pass empty='one' / 'skip' / 'error'",
        "adaptive_k=True: pass precision_denominator='returned'",
        "aggregation='median'/'min'/'max' and RetrievalFallOut have no receval counterpart",
        "graded targets must be integers (relevant = target >= 1)",
        "duplicate (query, doc) rows are separate docs in torchmetrics; receval raises",
        "a negative target is a negative gain in torchmetrics' nDCG (targets [2, -1, 1], "
        "scores [0.9, 0.8, 0.7]: 0.877); receval's gains are never below 0 (0.950)",
    ),
))

# TensorFlow v1 metrics (tensorflow/python/ops/metrics_impl.py, tf.compat.v1.metrics in TF
# 2.x): precision_at_k / recall_at_k are streaming *micro* ratios (sum tp / sum (tp + fp),
# sum tp / sum (tp + fn) over every row: _sparse_true_positive_at_k, _sparse_false_positive_at_k,
# _sparse_false_negative_at_k); average_precision_at_k is a macro mean of per-row AP with
# N = min(k, #labels) (_sparse_average_precision_at_top_k, _num_relevant); a row without any
# label gives NaN, which makes the mean NaN; top_k puts the lower class index first on ties.
_register(Profile(
    name="tensorflow",
    tool="TensorFlow v1 precision_at_k, recall_at_k, average_precision_at_k",
    version="TensorFlow 2.21 tf.compat.v1.metrics (metrics_impl.py)",
    source="tensorflow/tensorflow: tensorflow/python/ops/metrics_impl.py",
    options={
        "relevance_threshold": None,
        "ties": "item_ascending",
        "precision_denominator": "k",
        "ap_normalizer": "min_k_relevant",
        "empty": "zero",
        "users": "predictions",
        "average": "micro",
        "duplicates": "error",
    },
    per_family={"AP": {"average": "macro", "empty": "nan"}},
    metrics=(("P@k", "precision_at_k"), ("R@k", "recall_at_k"),
             ("AP@k", "average_precision_at_k")),
    gaps=(
        "not installed here: tested against numbers TensorFlow computed (tests/test_profiles.py)",
        "dense labels padded with -1 count as false negatives in recall_at_k; not modelled",
        "duplicate predictions are deduplicated by P/R but counted twice by AP; receval raises",
        "precision_at_top_k with fewer than k distinct ids divides by the ids given",
    ),
))

# Microsoft Recommenders 1.2.1 (recommenders-team/recommenders):
# recommenders/evaluation/python_evaluation.py.
# - merge_ranking_true_pred: common_users = users in both frames; every rating_true row is
#   relevant (the rating is ignored); top k by a stable multi-key sort (input order on ties);
# - precision_at_k: sum(hits / k) / n_common_users; recall_at_k: sum(hits / actual) / n_users;
# - map_at_k (>= 1.2.0, PR #2004): sum rr / min(actual, k); map: / actual (ap_normalizer
#   "relevant" on AP@k);
# - ndcg_at_k: outer merge with rating_true, so *every* truth user is averaged (users "truth"),
#   score_type binary by default ("raw" = linear, "exp" = exponential gain).
_register(Profile(
    name="recommenders",
    tool="Microsoft Recommenders python_evaluation",
    version="recommenders 1.2.1",
    source="recommenders-team/recommenders 1.2.1: recommenders/evaluation/python_evaluation.py",
    options={
        "relevance_threshold": None,
        "gain": "binary",
        "ties": "stable",
        "precision_denominator": "k",
        "ap_normalizer": "min_k_relevant",
        "empty": "zero",
        "users": "both",
        "average": "macro",
        "duplicates": "error",
    },
    per_family={"nDCG": {"users": "truth"}},
    metrics=(("P@k", "precision_at_k"), ("R@k", "recall_at_k"), ("AP@k", "map_at_k"),
             ("nDCG@k", "ndcg_at_k"), ("RMSE", "rmse"), ("MAE", "mae")),
    gaps=(
        "map (not map_at_k) is AP@k with ap_normalizer='relevant'; <= 1.1.1 map_at_k too",
        "ndcg_at_k score_type='raw' / 'exp': pass gain='linear' / 'exponential'",
        "r_precision_at_k drops users with a top-k hit but none in the top R (NaN) and "
        "users without a top-k hit: not reproduced",
        "duplicate predictions count as separate hits (recall 1.5); receval raises",
        "relevancy_method='by_threshold' uses the threshold as k: not modelled",
    ),
))

# Surprise FAQ precision_recall_at_k (NicolasHug/Surprise examples/precision_recall_at_k.py,
# https://surprise.readthedocs.io/en/stable/FAQ.html, v1.1.1+ after PR #349):
# relevant = true_r >= threshold; recommended = in the top k by est *and* est >= threshold;
# precision = n_rel_and_rec_k / n_rec_k, recall = n_rel_and_rec_k / n_rel, 0 when the
# denominator is 0; only the user's test-set predictions exist (each has its true rating).
_register(Profile(
    name="surprise",
    tool="Surprise FAQ precision_recall_at_k",
    version="Surprise FAQ example, v1.1.1+ (after PR #349)",
    source="NicolasHug/Surprise: examples/precision_recall_at_k.py, doc/source/FAQ.rst",
    options={
        "relevance_threshold": 3.5,
        "score_threshold": 3.5,
        "precision_denominator": "returned",
        "protocol": "known",
        "truth_scope": "predicted",
        "ties": "stable",
        "empty": "zero",
        "users": "predictions",
        "average": "macro",
        "duplicates": "error",
    },
    metrics=(("P@k", "precisions[uid]"), ("R@k", "recalls[uid]"), ("RMSE", "accuracy.rmse"),
             ("MAE", "accuracy.mae")),
    requires_rating=True,
    gaps=("before v1.1.1 an undefined precision or recall was 1: pass empty='one'",),
))

# Spark MLlib RankingMetrics (apache/spark mllib/src/main/scala/org/apache/spark/mllib/
# evaluation/RankingMetrics.scala; pyspark.mllib.evaluation 4.3.0): precisionAt = cnt / k;
# recallAt = cnt / |labSet|; meanAveragePrecisionAt = sum / min(|labSet|, k);
# meanAveragePrecision = sum / |labSet|; ndcgAt binary, ideal over min(|labSet|, k) positions;
# an empty label set gives 0 (with a warning) and is averaged in (RDD.mean), as is an empty
# prediction array: every RDD row counts, users "union" (RankingMetricsSuite.scala: its 50
# expected values hold a row with no label and a row with no prediction); the caller gives the
# order (ties: input order). An RDD built by an inner join is users="both".
_register(Profile(
    name="spark",
    tool="Spark MLlib RankingMetrics / RankingEvaluator",
    version="pyspark 4.3.0 (RankingMetrics.scala)",
    source="apache/spark: mllib/src/main/scala/org/apache/spark/mllib/evaluation/"
           "RankingMetrics.scala",
    options={
        "relevance_threshold": None,
        "gain": "binary",
        "ties": "stable",
        "precision_denominator": "k",
        "ap_normalizer": "min_k_relevant",
        "empty": "zero",
        "users": "union",
        "average": "macro",
        "duplicates": "error",
    },
    metrics=(("P@k", "precisionAt(k)"), ("R@k", "recallAt(k)"),
             ("AP@k", "meanAveragePrecisionAt(k)"), ("AP", "meanAveragePrecision"),
             ("nDCG@k", "ndcgAt(k)")),
    gaps=(
        "duplicate predictions count at every position (P, R, AP, nDCG > 1); receval raises",
        "graded ndcgAt (3.4+) takes the ideal in label order, not sorted: not reproduced",
        "an RDD built by an inner join of predictions and truth (users on both sides only): "
        "pass users='both'",
    ),
))

# LensKit (lenskit/lkpy @ 3bd1c175, src/lenskit/metrics/ranking/{_pr,_map,_dcg,_hit,_recip,
# _weighting}.py, metrics/_collect.py, metrics/bulk.py):
# - _pr.py Precision: good / len(recs[:n]) (NaN for an empty list); Recall: good / min(n,
#   |test|): precision_denominator "returned", recall_denominator "capped";
# - _map.py AveragePrecision: sum of cum_good / rank over hits, / min(|test|, len(recs[:n])):
#   ap_normalizer "min_returned_relevant";
# - _dcg.py NDCG / DCG with LogRankWeight (offset 0): 1 / log2(max(rank, 2)): discount
#   "log2_max2"; binary ideal fixed_dcg(min(n, |test|)): ideal "achievable";
# - _hit.py Hit, _recip.py RecipRank: within recs[:n]; NaN for an empty test list;
# - every test item is relevant (gain 1 unless gain= names a field): no threshold;
# - _collect.py add_collection_measurements measures every output list (a list without test
#   data gets an empty one): users "predictions"; bulk.py RunAnalysis.list_metrics fills a
#   NaN with the metric's default, ListMetric.default = 0.0: empty "zero";
# - the caller orders each list: ties "stable".
_register(Profile(
    name="lenskit",
    tool="LensKit (lkpy) ranking metrics",
    version="lenskit/lkpy 3bd1c175 (2026-08)",
    source=_cite("lenskit/lkpy: src/lenskit/metrics/ranking/_pr.py, _map.py, _dcg.py,",
                 "_hit.py, _recip.py, _weighting.py; src/lenskit/metrics/_collect.py, bulk.py"),
    options={
        "relevance_threshold": None,
        "gain": "binary",
        "discount": "log2_max2",
        "ideal": "achievable",
        "ties": "stable",
        "precision_denominator": "returned",
        "recall_denominator": "capped",
        "ap_normalizer": "min_returned_relevant",
        "empty": "zero",
        "users": "predictions",
        "average": "macro",
        "duplicates": "error",
    },
    metrics=(("P@k", "Precision(n=k)"), ("R@k", "Recall(n=k)"),
             ("AP@k", "AveragePrecision(n=k)"), ("nDCG@k", "NDCG(n=k)"), ("DCG@k", "DCG(n=k)"),
             ("Hit@k", "Hit(n=k)"), ("RR@k", "RecipRank(n=k)"),
             ("MeanPopRank@k", "MeanPopRank(data, n=k)")),
    gaps=(
        "LensKit is not installed here: checked against the expected values of its own tests "
        "(tests/eval/test_rank_*.py), not against the package",
        "graded NDCG (gain='rating') is gain='linear' with every test item relevant; LensKit "
        "clips negative gains to 0, receval refuses a negative gain (or give a threshold)",
        "the summary of the newer MeasurementCollector was not read: the profile fills a NaN "
        "list value with 0 as RunAnalysis.list_metrics(fill_missing=True) does",
        "AP of an empty list: LensKit NaN (then 0), receval 0 (the same once filled)",
        "RBP(n=k, patience=p) is (1 - p) x DCG@k with discount='geometric', persistence=p "
        "(binary); normalize=True is nDCG@k under the same, whose ideal is over min(|test|, "
        "k) ranks where LensKit's is over min(|test|, len(list)): equal when the list holds k "
        "items",
        "MeanPopRank counts distinct users (the profile's beyond popularity='users'); "
        "the other LensKit beyond-accuracy metrics are not reproduced by the profile",
    ),
))

# RecBole 1.2.1 (RUCAIBox/RecBole, recbole/evaluator/{metrics,base_metric,collector}.py):
# - TopkMetric.used_info: a bool matrix of the top max(topk) (torch.topk of the full-sort
#   scores, training items masked to -inf) and each user's positive count; every test
#   interaction is positive (no threshold); only users with a test interaction are evaluated
#   (the test dataloader's users): users "truth";
# - Precision: cumsum / arange(1..k): precision_denominator "k"; Recall: / pos_len;
# - MAP: sum of P@j over hits / min(pos_len, k): ap_normalizer "min_k_relevant";
# - NDCG: binary, ideal over min(pos_len, k), 1/log2(r + 1); MRR@k: first hit within k; Hit;
# - topk_result: the mean over users, rounded to metric_decimal_place (4 by default);
# - ties: torch.topk's order (unspecified): not reproduced.
# Its beyond-accuracy switches are receval.beyond.settings.RECBOLE.
_register(Profile(
    name="recbole",
    tool="RecBole top-k and beyond-accuracy metrics",
    version="RecBole 1.2.1",
    source=_cite("RUCAIBox/RecBole v1.2.1: recbole/evaluator/metrics.py, base_metric.py,",
                 "collector.py"),
    options={
        "relevance_threshold": None,
        "gain": "binary",
        "ties": "stable",
        "precision_denominator": "k",
        "recall_denominator": "relevant",
        "ap_normalizer": "min_k_relevant",
        "empty": "zero",
        "users": "truth",
        "average": "macro",
        "duplicates": "error",
    },
    metrics=(("P@k", "Precision (precision@k)"), ("R@k", "Recall (recall@k)"),
             ("AP@k", "MAP (map@k)"), ("nDCG@k", "NDCG (ndcg@k)"), ("RR@k", "MRR (mrr@k)"),
             ("Hit@k", "Hit (hit@k)"), ("RMSE", "RMSE"), ("MAE", "MAE"),
             ("coverage@k", "ItemCoverage (itemcoverage@k)"),
             ("ARP@k", "AveragePopularity (averagepopularity@k)"),
             ("distributional_coverage@k", "ShannonEntropy (shannonentropy@k)"),
             ("gini@k", "GiniIndex (giniindex@k)"),
             ("APLT@k", "TailPercentage (tailpercentage@k)")),
    gaps=(
        "RecBole rounds every printed mean to metric_decimal_place (4): receval does not round",
        "tied scores: torch.topk's order is unspecified; receval keeps the input order",
        "GAUC, AUC, LogLoss and the sequential/CTR metrics have no receval counterpart",
        "a user with no test interaction is not evaluated by RecBole; receval's users='truth' "
        "averages truth users only, so the same unless the truth holds users with nothing "
        "relevant under a threshold",
        "TailPercentage with tail_ratio <= 1 breaks count ties by RecBole's internal item id "
        "(order of first appearance); receval by its item code",
    ),
))

# Cornac 3.0.1 (PreferredAI/cornac, cornac/metrics/ranking.py, cornac/eval_methods/
# base_method.py ranking_eval):
# - ranking_eval: test users with at least one positive (rating >= rating_threshold, 1.0 by
#   default) are evaluated, others skipped: users "relevant", relevance_threshold 1; each
#   user's candidates are every item but its training/validation positives, ranked by
#   model.rank (argpartition + argsort: ties unspecified); the summary is the mean over users;
# - MeasureAtK: tp / k (Precision), tp / |gt_pos| (Recall), F1 = 2PR/(P+R) or 0; HitRatio;
# - NDCG: gain 2^rel - 1 on binary rel (= binary), ideal over min(|gt_pos|, k), log2(r + 1);
# - NCRR: sum of 1/rank over hits in the top k / sum_{i <= min(|gt_pos|, k)} 1/i;
# - MRR: 1/rank of the first hit in the whole ranking (no cutoff); MAP: over the whole
#   ranking, divided by the positives among the candidates (ranks by rankdata "max").
_register(Profile(
    name="cornac",
    tool="Cornac ranking metrics (ranking_eval)",
    version="Cornac 3.0.1",
    source=_cite("PreferredAI/cornac 3.0.1: cornac/metrics/ranking.py,",
                 "cornac/eval_methods/base_method.py"),
    options={
        "relevance_threshold": 1.0,
        "gain": "binary",
        "ties": "stable",
        "precision_denominator": "k",
        "recall_denominator": "relevant",
        "ap_normalizer": "relevant",
        "empty": "zero",
        "users": "relevant",
        "average": "macro",
        "duplicates": "error",
    },
    # rating metrics: Experiment's default user_based=False pools every test pair, of every
    # test user (ranking_eval's positive-only filter is for the ranking metrics)
    per_family={"MAE": {"users": "truth"}, "RMSE": {"users": "truth"}},
    metrics=(("P@k", "Precision(k)"), ("R@k", "Recall(k)"), ("F1@k", "FMeasure(k)"),
             ("nDCG@k", "NDCG(k)"), ("nDCG", "NDCG()"), ("NCRR@k", "NCRR(k)"),
             ("NCRR", "NCRR()"), ("RR", "MRR()"), ("Hit@k", "HitRatio(k)"), ("AP", "MAP()")),
    gaps=(
        "Cornac ranks every candidate item: give receval every candidate's score (a list "
        "shorter than k, or than the positives, changes NCRR's ideal and MAP's normaliser)",
        "MRR raises ValueError when no positive is ranked at all; receval gives 0",
        "MAP ranks ties by rankdata('max') and NDCG/NCRR by argsort: tied scores are not "
        "reproduced (receval keeps the input order)",
        "AUC (every positive/negative candidate pair, ties counted as misses) needs every "
        "candidate's score: no receval metric",
        "rating metrics: Experiment(user_based=True) averages per-user RMSE/MAE; receval "
        "pools every pair of every test user (Cornac's default user_based=False)",
    ),
))


# Kaggle's apk / mapk (ml_metrics 0.1.4 on PyPI, benhamner/Metrics Python/ml_metrics/
# average_precision.py): score / min(len(actual), k); a prediction counts once (later copies
# keep their rank: "p not in predicted[:i]"); len(actual) counts repeated items; an empty
# `actual` gives 1.0 in the PyPI release (GitHub master returns 0.0); mapk = np.mean over the
# zipped (actual, predicted) pairs, one per solution row: users "truth" (a truth user with
# nothing relevant, under a relevance threshold, is an empty `actual`: 1.0).
_register(Profile(
    name="kaggle",
    tool="Kaggle apk / mapk (ml_metrics)",
    version="ml_metrics 0.1.4 (PyPI)",
    source="benhamner/Metrics: Python/ml_metrics/average_precision.py",
    options={
        "relevance_threshold": None,
        "ties": "stable",
        "ap_normalizer": "min_k_relevant",
        "empty": "one",
        "users": "truth",
        "average": "macro",
        "duplicates": "keep",
    },
    metrics=(("AP@k", "apk(actual, predicted, k)"),),
    gaps=("benhamner/Metrics master returns 0.0 for an empty `actual`: pass empty='zero'",),
))


def get(name: str | Profile) -> Profile:
    """The profile called ``name`` (a :class:`Profile` passes through).

    Example:
        >>> get("spark").options["ap_normalizer"]
        'min_k_relevant'
    """
    if isinstance(name, Profile):
        return name
    if not isinstance(name, str):
        raise TypeError(f"a profile is a name or a Profile; got {type(name).__name__}")
    key = name.strip().lower().replace("-", "_")
    key = {"pytrec_eval": "trec_eval", "trec": "trec_eval", "tf": "tensorflow",
           "trec_eval_10": "trec_eval10", "trec_eval_9": "trec_eval",
           "ml_metrics": "kaggle", "mllib": "spark", "pyspark": "spark"}.get(key, key)
    if key not in PROFILES:
        raise ReceValError(
            f"unknown profile {name!r}; known: {', '.join(sorted(PROFILES))}"
        )
    return PROFILES[key]


def resolve(profile: str | Profile | None, explicit: Mapping[str, Any] | None = None) -> Resolved:
    """The options in force for ``profile`` (``None``: the defaults) and explicit options.

    Example:
        >>> resolve("trec_eval", {"ties": "stable"}).options.ties
        'stable'
        >>> resolve(None).options == Options()
        True
    """
    if profile is None:
        return Resolved(None, Options(**dict(explicit or {})), {})
    return get(profile).resolve(explicit)


# --- ranx's order of tied scores ------------------------------------------------------------


def ranx_order(users: np.ndarray, scores: np.ndarray, sorts: int = 2) -> np.ndarray:
    """The row order ranx gives each user's predictions (``ties="ranx"``): a permutation of
    the rows that puts every user's rows in ranx's rank order (users stay interleaved as they
    come; only the order *within* a user matters to a stable ranking).

    ranx 0.3.21 stores a query's documents in a numba typed dict, in the order they come
    (``Run.from_df``: the frame's row order within each ``groupby`` group; ``Run.from_dict``:
    the dict's order), then sorts each query by ``np.argsort([-v for v in values])`` in numba
    (``data_structures/common.py`` ``sort_dict_by_value``): numba's quicksort, which is not
    stable above 15 items (below, it is an insertion sort). ``Run.from_df`` sorts once and
    ``evaluate(..., make_comparable=True)`` sorts the sorted run again (``Run.make_comparable``
    ends with ``self.sort()``): ``sorts=2``. This runs the same numba ``np.argsort``.

    Example:
        >>> users = np.zeros(20, dtype=np.int64)
        >>> scores = np.array([1.0, 2.0] * 10)  # ties among 20 items: more than 15
        >>> ranx_order(users, scores)[:10]  # the 2.0s first, but not in input order
        array([ 9,  1,  3, 19,  5, 11, 13, 15, 17,  7])
    """
    users = np.asarray(users)
    rows = np.argsort(users, kind="stable")  # each user's rows together, in input order
    if len(rows) == 0:
        return rows.astype(np.int64)
    grouped = users[rows]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    ends = np.r_[starts[1:], len(rows)]
    ordered = _ranx_sorts(rows.astype(np.int64), np.asarray(scores, np.float64)[rows],
                          starts.astype(np.int64), ends.astype(np.int64), sorts)
    # put each user's rows back where that user's rows were, in ranx's order
    out = np.empty(len(rows), dtype=np.int64)
    out[rows] = ordered
    return out


@numba.njit(cache=True)
def _ranx_sorts(rows: np.ndarray, scores: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                sorts: int) -> np.ndarray:  # pragma: no cover - compiled
    out = rows.copy()
    for j in range(len(starts)):
        a, b = starts[j], ends[j]
        values = scores[a:b].copy()
        perm = np.arange(b - a)
        for _ in range(sorts):
            idx = np.argsort(-values)  # ranx: typed_list_argosrt([-v for v in values])
            values = values[idx]
            perm = perm[idx]
        out[a:b] = rows[a:b][perm]
    return out


__all__ = [
    "PROFILES",
    "Profile",
    "Resolved",
    "get",
    "ranx_order",
    "resolve",
]
