"""``compare()``: is model B really better than model A? Paired tests per user, corrected.

Every model is evaluated (or its :class:`~receval.result.Result` taken as given) on one user set
U, the evaluation's, the same for every model: users are paired, never dropped from one side
(users left out of a metric by ``empty="skip"`` are NaN for every model alike and leave the pair
from both sides; ``n`` counts the pairs). For each model against the baseline (or each pair of
models when there is none) and each metric, with d_u = model_u - baseline_u: both means, the
mean difference, its paired bootstrap percentile interval, the test's p-value and its value
corrected across every (pair x metric) row, Cohen's d_z (mean d / sd d), the probability of
superiority ((wins + ties/2) / n) and the wins, ties and losses (docs/semantics.md section 12).

Wins, P(better) and the sign of "better" follow the metric's declared direction
(:func:`receval.beyond.names.direction`: lower is better for RMSE, MAE and the other error,
gap and concentration measures); ``delta`` is always model - baseline.

Reproducible bit for bit: each row is :func:`receval.stats.pairing.pair_values`, its random
stream from ``numpy.random.SeedSequence(seed, spawn_key=...)`` keyed by a stable hash of the
unordered pair of model names and the metric (:func:`receval.stats.pairing.pair_stream`), so
neither the order of the models (a swapped pair's row is the exact mirror) nor anything else in
the call changes a row's numbers; the resampling is exact in distribution and the same on any
number of threads (:mod:`receval.stats.resample`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval import checks, numbers
from receval.beyond.names import direction
from receval.evaluation import evaluate
from receval.exceptions import ReceValError
from receval.finalize import recorded_inputs
from receval.io.text_tables import csv_text, latex_cell, markdown_cell, safe_lines
from receval.measures.spec import RATING, parse_metric, parse_metrics
from receval.result import Result
from receval.stats import MAX_RESAMPLES
from receval.stats.corrections import CORRECTIONS, adjust
from receval.stats.intervals import CI_METHOD
from receval.stats.pairing import align, pair_values
from receval.stats.tests import check_test
from receval.strata import as_mapping, group_rows

#: the columns of :attr:`Comparison.table`, in order
COLUMNS = ("model", "baseline", "metric", "mean", "baseline_mean", "delta", "ci_low", "ci_high",
           "p_value", "p_adjusted", "effect_size", "share_better", "wins", "ties", "losses",
           "n")

#: the name of the most-popular baseline (``baseline="popular"`` with ``train=``), and its depth
#: when no metric asked has a cutoff
POPULAR = "popular"
POPULAR_K = 100

#: the columns added when some model is given as several runs (seeds, folds)
RUN_COLUMNS = ("runs", "run_sd", "baseline_runs", "baseline_run_sd")
RUNS_PAIRING = ("; a model given as several runs is paired through each user's mean over its "
                "runs (run_sd: the standard deviation of the runs' means across runs)")

#: the group of the rows over every user, when the table has strata
ALL = "(all)"

#: the tests and corrections as the footnote names them
TEST_NAMES = {"t": "paired t (scipy ttest_rel)",
              "wilcoxon": "Wilcoxon signed-rank (scipy, zero_method='wilcox')",
              "randomization": "paired randomization (sign flips, p = (b+1)/(B+1))",
              "bootstrap": "paired bootstrap (shift method, p = (b+1)/(B+1))"}
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni",
                    "none": "none"}

#: how the rows of a table with strata are grouped into correction families: ``"separate"``
#: (the overall rows alone, so a breakdown never changes the headline, and the groups' rows
#: together) or ``"all"`` (one family of every row)
CORRECTION_FAMILIES = ("separate", "all")

#: said with every comparison (the pairing rule)
PAIRING = ("users paired on one user set, the evaluation's, the same for every model; a user "
           "undefined for a metric (NaN) leaves that metric's pair from both sides")


@dataclass
class Comparison:
    """What :func:`compare` returns.

    Attributes:
        table: one row per (model, baseline, metric), columns :data:`COLUMNS`; rows sorted by
            baseline, then model, then the metrics in the order asked. With ``strata=``, a
            first column ``group`` (``"(all)"`` first, then each group); with a model given as
            several runs, the last columns :data:`RUN_COLUMNS`.
        options: the test, correction, correction family, alpha, resamples, seed, the
            interval's method and the pairing rule.
        results: the :class:`~receval.result.Result` of each model (for a model given as
            several runs, the per-user mean over its runs).
        runs: the Results of each run of the models given as several runs.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2, 3], "item": [1, 1, 1]}
        >>> a = {"user": [1, 2, 3], "item": [1, 2, 2], "score": [1.0, 1.0, 1.0]}
        >>> c = receval.compare(truth, {"a": a, "b": a}, ["P@1"], baseline="a")
        >>> c.table[["model", "baseline", "delta", "p_value", "n"]].values.tolist()
        [['b', 'a', 0.0, 1.0, 3]]
    """

    table: pd.DataFrame
    options: dict[str, Any]
    results: dict[str, Result] = field(default_factory=dict, repr=False)
    runs: dict[str, list[Result]] = field(default_factory=dict, repr=False)
    #: the run's warnings, each once ({"code", "message"}), the models' evaluations' included
    warnings: list[dict[str, str]] = field(default_factory=list, repr=False)

    def to_dicts(self) -> list[dict[str, Any]]:
        """The rows as plain Python objects, a number that is not finite as ``None``.

        Example:
            >>> import receval
            >>> truth = {"user": [1, 2], "item": [1, 1]}
            >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
            >>> c = receval.compare(truth, {"a": a, "b": a}, ["P@1"])
            >>> c.to_dicts()[0]["effect_size"]
            0.0
        """
        return [{k: numbers.json_number(v) for k, v in row.items()}
                for row in self.table.to_dict(orient="records")]

    def to_json(self, **kwargs: Any) -> str:
        """``{"options": ..., "rows": [...], "warnings": [...]}`` as JSON (NaN as ``null``;
        ``warnings``: the run's, each ``{"code", "message"}``, as :attr:`warnings`).

        Example:
            >>> import receval
            >>> truth = {"user": [1, 2], "item": [1, 1]}
            >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
            >>> receval.compare(truth, {"a": a, "b": a}, ["P@1"]).to_json()[:20]
            '{"options": {"test":'
        """
        return json.dumps({"options": self.options, "rows": self.to_dicts(),
                           "warnings": self.warnings}, allow_nan=False, **kwargs)

    def to_csv(self, *, raw: bool = False) -> str:
        """The table as CSV, full precision, NaN as an empty cell; text cells a spreadsheet
        would run as a formula get a ``'`` in front unless ``raw``.

        Example:
            >>> import receval
            >>> truth = {"user": [1, 2], "item": [1, 1]}
            >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
            >>> receval.compare(truth, {"a": a, "b": a}, ["P@1"]).to_csv().splitlines()[0]
            'model,baseline,metric,mean,baseline_mean,delta,ci_low,ci_high,p_value,\
p_adjusted,effect_size,share_better,wins,ties,losses,n'
        """
        # the one text-table writer: formula cells neutralised, control characters escaped
        return csv_text(list(self.table.columns), (row.values() for row in self.to_dicts()),
                        raw=raw)

    def to_latex(self) -> str:
        """The table as LaTeX (booktabs), see :func:`to_latex`.

        Example:
            >>> import receval
            >>> truth = {"user": [1, 2], "item": [1, 1]}
            >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
            >>> receval.compare(truth, {"a": a, "b": a}, ["P@1"]).to_latex()[1:15]
            'begin{tabular}'
        """
        return to_latex(self)

    def log(self, to: str, path: str | None = None) -> str:
        """Log each model's metrics and, per pair and metric, the difference with its interval
        and p-values, to ``to`` (``"mlflow"``, ``"dvc"`` or ``"json"``), with the options,
        per-user values and counts: see :mod:`receval.tracking`.

        Example:
            >>> import receval, tempfile
            >>> truth = {"user": [1, 2], "item": [1, 1]}
            >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
            >>> folder = receval.compare(truth, {"a": a, "b": a}, ["P@1"]).log(
            ...     "json", tempfile.mkdtemp())
        """
        from receval.tracking import log_comparison

        return log_comparison(self, to, path)

    def to_markdown(self) -> str:
        """A pipe table (numbers as :mod:`receval.numbers` writes them: 4 decimals, p-values 3
        significant digits, ``n/a`` when missing); ``*`` marks a corrected p-value below alpha,
        explained in a footnote.

        Example:
            >>> import receval
            >>> truth = {"user": [1, 2], "item": [1, 1]}
            >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
            >>> c = receval.compare(truth, {"a": a, "b": a}, ["P@1"])
            >>> c.to_markdown().splitlines()[2]
            '| b | a | P@1 | 0.5000 | 0.5000 | +0.0000 | [+0.0000, +0.0000] | 1 | 1 | 0.000 | \
0.500 | 0/2/0 | 2 |'
        """
        header = [markdown_cell(h) for h in cell_header(self)]
        lines = ["| " + " | ".join(header) + " |",
                 "|" + ":---|" * (len(header) - 10) + "---:|" * 10]
        for row in cell_rows(self):
            lines.append("| " + " | ".join(markdown_cell(c) for c in row) + " |")
        lines.append("")
        lines.append(safe_lines(footnote(self)))
        return "\n".join(lines)


def to_latex(comparison: Comparison) -> str:
    r"""The table as a booktabs ``tabular`` (the cells of :func:`cell_rows`, ``*`` marking an
    adjusted p below alpha), the footnote in a last row spanning the columns.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> print(to_latex(receval.compare(truth, {"a": a, "b_2": a}, ["P@1"])).splitlines()[4])
        b\_2 & a & P@1 & 0.5000 & 0.5000 & +0.0000 & [+0.0000, +0.0000] & 1 & 1 & 0.000 & 0.500 & 0/2/0 & 2 \\
    """  # noqa: E501
    header = cell_header(comparison)
    lines = [r"\begin{tabular}{" + "l" * (len(header) - 10) + "r" * 10 + "}", r"\toprule",
             " & ".join(latex_cell(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(latex_cell(c) for c in row) + r" \\" for row in cell_rows(comparison)]
    lines += [r"\bottomrule",
              rf"\multicolumn{{{len(header)}}}{{p{{0.95\linewidth}}}}{{\footnotesize "
              rf"{latex_cell(footnote(comparison))}}} \\", r"\end{tabular}"]
    return "\n".join(lines)



def cell_header(comparison: Comparison) -> list[str]:
    """The headers of :func:`cell_rows` (``group`` first when the table has strata).

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> cell_header(receval.compare(truth, {"a": a, "b": a}, ["P@1"]))[:3]
        ['model', 'baseline', 'metric']
    """
    group = ["group"] if "group" in comparison.table.columns else []
    return [*group, "model", "baseline", "metric", "mean", "baseline mean", "delta",
            f"{1 - comparison.options['alpha']:.0%} CI", "p", "p adjusted", "d_z",
            "P(better)", "W/T/L", "n"]


def cell_rows(comparison: Comparison) -> list[list[str]]:
    """The rows as text cells (for tables): model, baseline, metric, mean, baseline mean,
    delta, interval, p, adjusted p (with ``*`` when below alpha), d_z, P(better), W/T/L, n.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> cell_rows(receval.compare(truth, {"a": a, "b": a}, ["P@1"]))[0][7:9]
        ['1', '1']
    """
    alpha = comparison.options["alpha"]
    grouped = "group" in comparison.table.columns
    out = []
    for r in comparison.table.itertuples(index=False):
        star = "*" if r.p_adjusted < alpha else ""
        out.append([*([str(r.group)] if grouped else []), str(r.model), str(r.baseline),
                    str(r.metric), numbers.value(r.mean), numbers.value(r.baseline_mean),
                    numbers.delta(r.delta), numbers.interval(r.ci_low, r.ci_high, "delta"),
                    numbers.p_value(r.p_value), numbers.p_value(r.p_adjusted) + star,
                    numbers.effect(r.effect_size), numbers.effect(r.share_better),
                    "/".join(map(numbers.count, (r.wins, r.ties, r.losses))),
                    numbers.count(r.n)])
    return out


def footnote(comparison: Comparison) -> str:
    """One line naming the test, the correction, the interval, the resamples and the seed.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> footnote(receval.compare(truth, {"a": a, "b": a}, ["P@1"])).split(";")[0]
        '* adjusted p < 0.05'
    """
    o = comparison.options
    return (f"* adjusted p < {o['alpha']:g}; test: {TEST_NAMES[o['test']]}; correction: "
            f"{CORRECTION_NAMES[o['correction']]} {family_text(comparison)}; "
            f"interval: {o['ci_method']} at {1 - o['alpha']:.0%}; {o['resamples']:,} "
            f"resamples; seed {o['seed']}; d_z = mean / sd of the paired differences; "
            f"P(better) = (wins + ties/2) / n, a win in the metric's direction (lower is better "
            f"for RMSE, MAE and the error, gap and concentration measures); {o['pairing']}")


def family_text(comparison: Comparison) -> str:
    """Which rows each correction ran across, as the footnote says it.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2], "item": [1, 1]}
        >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
        >>> family_text(receval.compare(truth, {"a": a, "b": a}, ["P@1"]))
        'across all 1 rows'
        >>> c = receval.compare(truth, {"a": a, "b": a}, ["P@1"], strata={1: "x", 2: "y"})
        >>> family_text(c)
        'across the 1 overall rows (as without strata), separately across the 2 group rows'
    """
    table = comparison.table
    if "group" not in table.columns:
        return f"across all {len(table)} rows"
    overall = int((table["group"] == ALL).sum())
    if comparison.options.get("correction_family", "all") == "all":
        return (f"across all {len(table)} rows ({overall} overall and {len(table) - overall} "
                "group rows in one family)")
    return (f"across the {overall} overall rows (as without strata), separately across the "
            f"{len(table) - overall} group rows")


def check_pairable(metrics: Iterable[str]) -> None:
    """A one-line error for the first catalogue-level beyond-accuracy metric (coverage@k,
    gini@k, ...): one number over all lists, no per-user values to pair. Per-user beyond
    metrics (novelty@k, diversity@k, ...) are paired like the accuracy metrics.

    Example:
        >>> check_pairable(["P@10", "novelty@10"])
        >>> check_pairable(["coverage@10"])
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: 'coverage@10' is one number over all lists \
(catalogue level): no per-user values to pair; receval.evaluate (receval evaluate) shows it \
per model
    """
    from receval.beyond.names import split_metrics

    for spec in split_metrics(list(metrics))[1]:
        if spec.entry.reduction == "catalogue":
            raise ReceValError(f"{spec.name!r} is one number over all lists (catalogue level): "
                               "no per-user values to pair; receval.evaluate (receval evaluate) "
                               "shows it per model")


#: compare weighs every model alike: a gamma fitted to each model's own lists would not
ESTIMATE_PER_MODEL = ("compare with propensity=('popularity', 'estimate') would weigh each "
                      "model by a gamma fitted to its own lists: evaluate once with it, then "
                      "pass the number in Result.options['propensity']['gamma'] to compare")


def check_list_depths(depths: Mapping[str, int | None], metrics: Iterable[str]) -> None:
    """Warn (``list-depths``) when the models' longest lists (``depths``, ``None``: not
    recorded) differ and a metric of ``metrics`` has no cutoff: MRR, MAP or R-precision read
    the whole list, so a deeper list scores higher for its length alone.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     check_list_depths({"a": 100, "b": 10}, ["P@10", "MRR"])
        >>> str(caught[0].message).split(";")[0]
        'MRR read each whole list, and the lists differ in depth: a 100, b 10'
    """
    whole = [s.name for s in _accuracy_specs(metrics) if not s.k and s.family not in RATING]
    known = {name: d for name, d in depths.items() if d is not None}
    if whole and len(set(known.values())) > 1:
        shown = ", ".join(f"{name} {d}" for name, d in known.items())
        checks.warn(checks.ListDepthsWarning,
                    f"{', '.join(whole)} read each whole list, and the lists differ in depth: "
                    f"{shown}; cut them to one depth (max_list=) or compare at a cutoff")


def _accuracy_specs(metrics: Iterable[str]) -> list[Any]:
    """The accuracy metrics among ``metrics``, parsed."""
    from receval.beyond.names import split_metrics

    accuracy = split_metrics(list(metrics))[0]
    return parse_metrics(accuracy) if accuracy else []


def metric_cutoffs(metrics: Iterable[str]) -> list[int | None]:
    """Every metric's cutoff (``None`` or 0: the whole list), accuracy and beyond alike.

    Example:
        >>> metric_cutoffs(["P@10", "MRR", "novelty@5"])
        [10, None, 5]
    """
    from receval.beyond.names import split_metrics

    accuracy, beyond, _ = split_metrics(list(metrics))
    return [s.k for s in (parse_metrics(accuracy) if accuracy else [])] + [s.k for s in beyond]


@checks.keeps_warnings  # the run's warnings kept on the Comparison (trackers)
def compare(
    truth: Any,
    runs: Mapping[str, Any],
    metrics: str | Iterable[str],
    *,
    baseline: str | None = None,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    strata: Any = None,
    train: Any = None,
    correction_family: str = "separate",
    **options: Any,
) -> Comparison:
    """Compare models on per-user values with paired tests, corrected for multiplicity.

    ``runs`` maps model names to predictions (evaluated here with ``truth``, ``metrics`` and
    ``**options``, the keyword arguments of :func:`receval.evaluate`) or to
    :class:`~receval.result.Result` objects already computed (``truth`` may then be ``None``).
    Each model is compared with ``baseline``, or, without one, each pair once, the model whose
    name sorts first as the baseline. ``test``: ``"t"`` (paired t, scipy), ``"wilcoxon"``
    (signed-rank, scipy; inflates type-I error at recommender scale), ``"randomization"``
    (sign flips) or ``"bootstrap"`` (see :mod:`receval.stats.tests`). ``correction``: ``"holm"``,
    ``"bh"``, ``"bonferroni"`` or ``"none"``, across every row. The interval is the paired
    bootstrap percentile interval at level ``1 - alpha`` from ``n_resamples`` resamples.

    A model may be given as a list of runs (seeds or folds evaluated on the same users): the
    per-user test then pairs each user's mean over the model's runs, and the table gains the
    columns ``runs``, ``run_sd`` (the standard deviation across runs of each run's mean), and
    the same for the baseline (:data:`RUN_COLUMNS`); ``mean`` is the mean over the runs.

    ``baseline="popular"`` with ``train`` (the training interactions): the most-popular
    baseline (:func:`receval.baselines.most_popular`: the items with the most training rows,
    each user's own training items left out, as deep as the deepest model list, or where no
    depth is known the largest cutoff asked, or :data:`POPULAR_K` items) is added as the model
    ``"popular"``, for the evaluation's users, and is the baseline. Models whose lists differ in
    depth, compared on a metric without a cutoff (MRR, MAP, R-precision read the whole list),
    are warned about (``list-depths``). ``train`` also goes to :func:`receval.evaluate` (its
    training audit).

    ``strata``: a user -> group mapping (:func:`receval.strata.as_mapping`: a dict, a Series or a
    frame with a ``user`` and a group column); the table then gains a first column ``group``:
    the rows of every user (group ``"(all)"``) come first, then the same rows on each group's
    users (users the mapping does not name: group ``"(none)"``), each with its own ``n``,
    interval and test. ``correction_family="separate"`` (the default) corrects the overall rows
    as one family, exactly as without ``strata`` (a breakdown never changes the headline's
    adjusted p-values), and the groups' rows as a second family; ``"all"`` corrects every row
    of every group as one family (stricter on the overall rows). A name
    (``"activity"``, ``"cold"``: :func:`receval.training.resolve_strata`) groups the users by
    ``train``.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2, 3, 4], "item": [1, 1, 1, 1]}
        >>> a = {"user": [1, 2, 3, 4], "item": [2, 2, 2, 1], "score": [1.0] * 4}
        >>> b = {"user": [1, 2, 3, 4], "item": [1, 1, 1, 1], "score": [1.0] * 4}
        >>> c = receval.compare(truth, {"a": a, "b": b}, ["P@1"], baseline="a")
        >>> row = c.table.iloc[0]
        >>> row["mean"], row["baseline_mean"], row["delta"], int(row["wins"]), int(row["ties"])
        (np.float64(1.0), np.float64(0.25), np.float64(0.75), 3, 1)
        >>> c.options["test"], c.options["correction"]
        ('t', 'holm')
    """
    check_test(test)
    if correction_family not in CORRECTION_FAMILIES:
        raise ReceValError(f"unknown correction_family {correction_family!r}; known: "
                           f"{', '.join(CORRECTION_FAMILIES)}")
    if correction not in CORRECTIONS:
        raise ReceValError(f"unknown correction {correction!r}; known: {', '.join(CORRECTIONS)}")
    if not 0 < alpha < 1:
        raise ReceValError(f"alpha must be between 0 and 1, got {alpha!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ReceValError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if n_resamples > MAX_RESAMPLES:
        raise ReceValError(f"n_resamples must be at most {MAX_RESAMPLES:,}, got "
                           f"{n_resamples:,} (the p-value's Monte Carlo error is about "
                           "1/sqrt(n_resamples) already)")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ReceValError(f"seed must be a non-negative integer, got {seed!r}")
    if options.get("propensity") == ("popularity", "estimate"):
        raise ReceValError(ESTIMATE_PER_MODEL)
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise ReceValError("compare needs at least one metric")
    check_pairable(names)
    popular = baseline == POPULAR and train is not None and POPULAR not in runs
    if len(runs) + popular < 2:
        raise ReceValError(f"compare needs at least two models, got {len(runs)}")
    if train is not None:  # each model's evaluate() audits and records it too
        options = {**options, "train": train}
    if baseline is not None and baseline not in runs and not popular:
        raise ReceValError(f"baseline {baseline!r} is not one of the models: "
                           f"{', '.join(map(str, runs))}")
    several = {str(name): [_result(truth, r, names, options) for r in run]
               for name, run in runs.items() if isinstance(run, list | tuple)}
    results = {str(name): _runs_mean(str(name), several[str(name)], names)
               if str(name) in several else _result(truth, run, names, options)
               for name, run in runs.items()}
    if popular:
        results[POPULAR] = _popular(truth, train, dict(results), names, options)
    check_list_depths({name: r.list_depth for name, r in results.items()}, names)
    users, values = _aligned(results, names)
    pairs = _pairs(sorted(results), baseline)
    groups: dict[str, np.ndarray | None] = {ALL: None}
    given_strata = strata if strata is None or isinstance(strata, str) else as_mapping(strata)
    if isinstance(strata, str):  # a built-in stratum of the training data: "activity", "cold"
        from receval.training import read_train, resolve_strata

        # the training data read as evaluate read it: its columns may be renamed
        trained = None if train is None else read_train(
            train, user_col=options.get("user_col", "user"),
            item_col=options.get("item_col", "item"), columns=options.get("train_columns"))
        strata = resolve_strata(strata, trained, users.tolist())
    if strata is not None:
        groups.update(group_rows(users, as_mapping(strata)))
    rows = [{"group": group, **_row(model, base, metric, _take(values[model][metric], rows_),
                                    _take(values[base][metric], rows_), test, alpha,
                                    n_resamples, seed, () if rows_ is None else (group,))}
            for group, rows_ in groups.items() for base, model in pairs for metric in names]
    columns = (["group"] if strata is not None else []) + list(COLUMNS)
    if several:
        spread = _run_spread(several, users, names)
        for row, rows_ in zip(rows, (r for r in groups.values() for _ in pairs for _ in names),
                              strict=True):
            for side, key in (("model", ""), ("baseline", "baseline_")):
                runs_, sd = spread(row[side], row["metric"], rows_)
                row[f"{key}runs"], row[f"{key}run_sd"] = runs_, sd
        columns += list(RUN_COLUMNS)
    table = pd.DataFrame(rows, columns=columns)
    table["p_adjusted"] = _adjusted(table, correction, correction_family)
    for column in ("wins", "ties", "losses", "n", *(("runs", "baseline_runs") if several
                                                    else ())):
        table[column] = table[column].astype("int64")
    record = {"test": test, "correction": correction, "correction_family": correction_family,
              "alpha": alpha,
              "resamples": n_resamples, "seed": seed, "ci_method": CI_METHOD,
              "pairing": PAIRING + (RUNS_PAIRING if several else ""),
              **recorded_inputs(train=train, exclude_train=options.get("exclude_train", False),
                                item_features=options.get("item_features"),
                                item_groups=options.get("item_groups"), strata=given_strata,
                                beyond=options.get("beyond"))}
    return Comparison(table=table, options=record, results=results, runs=several)


def _adjusted(table: pd.DataFrame, correction: str, family: str) -> np.ndarray:
    """The corrected p-values: one family of every row, or (``family="separate"`` with strata)
    the overall rows as one family and the groups' rows as another."""
    p = table["p_value"].to_numpy(dtype=float)
    if family == "all" or "group" not in table.columns:
        return adjust(p, correction)
    out = np.empty_like(p)
    overall = (table["group"] == ALL).to_numpy()
    for rows in (overall, ~overall):
        if rows.any():
            out[rows] = adjust(p[rows], correction)
    return out


def _popular(truth: Any, train: Any, results: Mapping[str, Result], metrics: list[str],
             options: dict[str, Any]) -> Result:
    """The most-popular baseline's Result, for the users the models were evaluated on, as
    deep as their deepest list (:func:`receval.baselines.popular_baseline`)."""
    first = next(iter(results.values()))
    from receval.baselines import popular_baseline

    if truth is None:
        raise ReceValError("baseline='popular' needs the truth to evaluate the popular lists")
    user_col, item_col = options.get("user_col", "user"), options.get("item_col", "item")
    lists = popular_baseline(train, first.per_user["user"].tolist(),
                             depths=[r.list_depth for r in results.values()],
                             cutoffs=metric_cutoffs(metrics), default=POPULAR_K,
                             user_col=user_col, item_col=item_col)
    columns = {"user": user_col, "item": item_col, "score": "score"}
    return evaluate(truth, lists, metrics, **{**options, "prediction_columns": columns})


def _runs_mean(name: str, results: list[Result], metrics: list[str]) -> Result:
    """One Result whose per-user values are each user's mean over the runs of a model (a
    value undefined in any run leaves the user's mean undefined: NaN)."""
    if not results:
        raise ReceValError(f"model {name!r}: an empty list of runs")
    users, values = _aligned({f"{name} run {i + 1}": r for i, r in enumerate(results)},
                             metrics)
    per_user = pd.DataFrame({"user": users})
    for m in metrics:
        per_user[m] = np.mean(np.stack([v[m] for v in values.values()]), axis=0)
    summary = {m: float(np.nanmean(per_user[m])) if per_user[m].notna().any() else math.nan
               for m in metrics}
    first = results[0]
    return Result(summary=summary, per_user=per_user, counts=first.counts,
                  options={**first.options, "runs": len(results)}, metrics=list(metrics))


def _run_spread(several: dict[str, list[Result]], users: np.ndarray, metrics: list[str]) -> Any:
    """``spread(model, metric, rows)`` -> (runs, sd across the runs of their means over the
    users ``rows``); one run: (1, NaN)."""
    reference = pd.Index(users)
    stacked = {name: {m: np.stack([r.per_user.set_index("user")[_column(r, m, name)]
                                   .reindex(reference).to_numpy(dtype=float) for r in rs])
                      for m in metrics} for name, rs in several.items()}

    def spread(model: str, metric: str, rows: np.ndarray | None) -> tuple[int, float]:
        if model not in stacked:
            return 1, math.nan
        block = stacked[model][metric]
        block = block if rows is None else block[:, rows]
        keep = ~np.isnan(block).any(axis=0)  # the users paired (as the test pairs them)
        means = block[:, keep].mean(axis=1) if keep.any() else np.full(len(block), np.nan)
        return len(block), float(np.std(means, ddof=1)) if len(block) > 1 else math.nan

    return spread


def _result(truth: Any, run: Any, metrics: list[str], options: dict[str, Any]) -> Result:
    if isinstance(run, Result):
        return run
    if truth is None:
        raise ReceValError("compare needs the truth to evaluate predictions (truth=None is "
                           "only for runs given as Results)")
    return evaluate(truth, run, metrics, **options)


def _column(result: Result, metric: str, model: str) -> str:
    if metric in result.per_user.columns:
        return metric
    canonical = parse_metric(metric).canonical
    for column in result.per_user.columns:
        if column == "user":
            continue
        try:
            if parse_metric(str(column)).canonical == canonical:
                return str(column)
        except ReceValError:
            continue
    raise ReceValError(f"model {model!r}: its Result has no per-user values of {metric!r} "
                       f"(it has {', '.join(map(str, result.per_user.columns[1:]))})")


def _take(values: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    return values if rows is None else values[rows]


def _aligned(results: dict[str, Result],
             metrics: list[str]) -> tuple[np.ndarray, dict[str, dict[str, np.ndarray]]]:
    """The users, and each model's per-user values per metric in their order; every model must
    have been evaluated on the same users (:func:`receval.stats.pairing.align`)."""
    frames = align({name: r.per_user for name, r in results.items()})
    out = {name: {m: frame[_column(results[name], m, name)].to_numpy(dtype=float)
                  for m in metrics} for name, frame in frames.items()}
    return frames[min(frames)]["user"].to_numpy(), out


def _pairs(names: list[str], baseline: str | None) -> list[tuple[str, str]]:
    """(baseline, model) pairs in a canonical order."""
    if baseline is not None:
        return [(baseline, m) for m in names if m != baseline]
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]


def _row(model: str, base: str, metric: str, b: np.ndarray, a: np.ndarray, test: str,
         alpha: float, n_resamples: int, seed: int,
         extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """One row: :func:`receval.stats.pairing.pair_values` in the metric's declared direction."""
    return {"model": model, "baseline": base, "metric": metric,
            **pair_values(a, b, baseline=base, model=model, metric=metric, test=test,
                          alpha=alpha, n_resamples=n_resamples, seed=seed,
                          better=direction(metric), extra=extra)}
