"""``compare()``: is model B really better than model A? Paired tests per user, corrected.

Every model is evaluated (or its :class:`~receval.result.Result` taken as given) on one user set
U, the evaluation's, the same for every model: users are paired, never dropped from one side
(users left out of a metric by ``empty="skip"`` are NaN for every model alike and leave the pair
from both sides; ``n`` counts the pairs). For each model against the baseline (or each pair of
models when there is none) and each metric, with d_u = model_u - baseline_u: both means, the
mean difference, its paired bootstrap percentile interval, the test's p-value and its value
corrected across every (pair x metric) row, Cohen's d_z (mean d / sd d), the probability of
superiority ((wins + ties/2) / n) and the wins, ties and losses (SEMANTICS.md section 12).

Reproducible bit for bit: the random stream of each (model, baseline, metric) row comes from
``numpy.random.SeedSequence(seed, spawn_key=...)`` keyed by a stable hash of the three names, so
neither the order of the models nor anything else in the call changes a row's numbers.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval.evaluation import evaluate
from receval.exceptions import ReceValError
from receval.io.formulas import neutralise_cell
from receval.measures.spec import parse_metric
from receval.result import Result
from receval.scalars import plain
from receval.stats.corrections import CORRECTIONS, adjust
from receval.stats.intervals import CI_METHOD, bootstrap_means, percentile_interval
from receval.stats.tests import (
    bootstrap_test,
    check_test,
    randomization_test,
    t_test,
    wilcoxon_test,
)

#: the columns of :attr:`Comparison.table`, in order
COLUMNS = ("model", "baseline", "metric", "mean", "baseline_mean", "delta", "ci_low", "ci_high",
           "p_value", "p_adjusted", "effect_size", "share_better", "wins", "ties", "losses",
           "n")

#: the tests and corrections as the footnote names them
TEST_NAMES = {"t": "paired t (scipy ttest_rel)",
              "wilcoxon": "Wilcoxon signed-rank (scipy, zero_method='wilcox')",
              "randomization": "paired randomization (sign flips, p = (b+1)/(B+1))",
              "bootstrap": "paired bootstrap (shift method, p = (b+1)/(B+1))"}
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni",
                    "none": "none"}

#: said with every comparison (the pairing rule)
PAIRING = ("users paired on one user set, the evaluation's, the same for every model; a user "
           "undefined for a metric (NaN) leaves that metric's pair from both sides")


@dataclass
class Comparison:
    """What :func:`compare` returns.

    Attributes:
        table: one row per (model, baseline, metric), columns :data:`COLUMNS`; rows sorted by
            baseline, then model, then the metrics in the order asked.
        options: the test, correction, alpha, resamples, seed, the interval's method and the
            pairing rule.
        results: the :class:`~receval.result.Result` of each model.

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
        return [{k: _plain(v) for k, v in row.items()}
                for row in self.table.to_dict(orient="records")]

    def to_json(self, **kwargs: Any) -> str:
        """``{"options": ..., "rows": [...]}`` as JSON (NaN as ``null``).

        Example:
            >>> import receval
            >>> truth = {"user": [1, 2], "item": [1, 1]}
            >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
            >>> receval.compare(truth, {"a": a, "b": a}, ["P@1"]).to_json()[:20]
            '{"options": {"test":'
        """
        return json.dumps({"options": self.options, "rows": self.to_dicts()},
                          allow_nan=False, **kwargs)

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
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        cell = (lambda text: text) if raw else neutralise_cell
        writer.writerow(COLUMNS)
        for row in self.to_dicts():
            writer.writerow([cell(v) if isinstance(v, str) else "" if v is None else repr(v)
                             for v in row.values()])
        return buffer.getvalue()

    def to_markdown(self) -> str:
        """A pipe table (4 decimals, p-values 3 significant digits); ``*`` marks a corrected
        p-value below alpha, explained in a footnote.

        Example:
            >>> import receval
            >>> truth = {"user": [1, 2], "item": [1, 1]}
            >>> a = {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}
            >>> c = receval.compare(truth, {"a": a, "b": a}, ["P@1"])
            >>> c.to_markdown().splitlines()[2]
            '| b | a | P@1 | 0.5000 | 0.5000 | +0.0000 | [+0.0000, +0.0000] | 1 | 1 | 0.000 | \
0.500 | 0/2/0 | 2 |'
        """
        header = ["model", "baseline", "metric", "mean", "baseline mean", "delta",
                  f"{1 - self.options['alpha']:.0%} CI", "p", "p adjusted", "d_z",
                  "P(better)", "W/T/L", "n"]
        lines = ["| " + " | ".join(header) + " |", "|:---|:---|:---|" + "---:|" * 10]
        for row in cell_rows(self):
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
        lines.append("")
        lines.append(footnote(self))
        return "\n".join(lines)


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
    out = []
    for r in comparison.table.itertuples(index=False):
        star = "*" if r.p_adjusted < alpha else ""
        out.append([str(r.model), str(r.baseline), str(r.metric), _num(r.mean),
                    _num(r.baseline_mean), _num(r.delta, "+.4f"),
                    f"[{_num(r.ci_low, '+.4f')}, {_num(r.ci_high, '+.4f')}]",
                    _num(r.p_value, ".3g"), _num(r.p_adjusted, ".3g") + star,
                    _num(r.effect_size, ".3f"), _num(r.share_better, ".3f"),
                    f"{r.wins}/{r.ties}/{r.losses}", str(r.n)])
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
            f"{CORRECTION_NAMES[o['correction']]} across all {len(comparison.table)} rows; "
            f"interval: {o['ci_method']} at {1 - o['alpha']:.0%}; {o['resamples']:,} "
            f"resamples; seed {o['seed']}; d_z = mean / sd of the paired differences; "
            f"P(better) = (wins + ties/2) / n; {o['pairing']}")


def _num(value: float, spec: str = ".4f") -> str:
    return "" if math.isnan(value) else format(value, spec)


def _plain(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    return value


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
    if correction not in CORRECTIONS:
        raise ReceValError(f"unknown correction {correction!r}; known: {', '.join(CORRECTIONS)}")
    if not 0 < alpha < 1:
        raise ReceValError(f"alpha must be between 0 and 1, got {alpha!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ReceValError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ReceValError(f"seed must be a non-negative integer, got {seed!r}")
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise ReceValError("compare needs at least one metric")
    if len(runs) < 2:
        raise ReceValError(f"compare needs at least two models, got {len(runs)}")
    if baseline is not None and baseline not in runs:
        raise ReceValError(f"baseline {baseline!r} is not one of the models: "
                           f"{', '.join(map(str, runs))}")
    results = {str(name): _result(truth, run, names, options) for name, run in runs.items()}
    values = _aligned(results, names)
    pairs = _pairs(sorted(results), baseline)
    rows = [_row(model, base, metric, values[model][metric], values[base][metric], test,
                 alpha, n_resamples, seed)
            for base, model in pairs for metric in names]
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table["p_adjusted"] = adjust(table["p_value"].to_numpy(), correction)
    for column in ("wins", "ties", "losses", "n"):
        table[column] = table[column].astype("int64")
    record = {"test": test, "correction": correction, "alpha": alpha,
              "resamples": n_resamples, "seed": seed, "ci_method": CI_METHOD,
              "pairing": PAIRING}
    return Comparison(table=table, options=record, results=results)


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


def _aligned(results: dict[str, Result],
             metrics: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """Each model's per-user values per metric, in one user order; every model must have been
    evaluated on the same users."""
    first = min(results)
    reference = pd.Index(results[first].per_user["user"])
    if reference.has_duplicates:
        raise ReceValError(f"model {first!r}: its per-user values repeat a user")
    out: dict[str, dict[str, np.ndarray]] = {}
    for name in sorted(results):
        frame = results[name].per_user
        users = pd.Index(frame["user"])
        if name != first and (len(users) != len(reference) or not users.equals(reference)):
            only = users.difference(reference, sort=False)
            missing = reference.difference(users, sort=False)
            if len(only) or len(missing) or users.has_duplicates:
                where = (f"user {plain(only[0])!r} is in {name!r} only" if len(only)
                         else f"user {plain(missing[0])!r} is in {first!r} only" if len(missing)
                         else f"model {name!r} repeats a user")
                raise ReceValError(
                    f"models {first!r} and {name!r} were evaluated on different users: {where} "
                    f"({len(only) + len(missing)} users differ in all); pairing needs one user "
                    "set for every model (users='truth' or 'relevant', not 'both')")
            frame = frame.set_index("user").reindex(reference).reset_index()
        out[name] = {m: frame[_column(results[name], m, name)].to_numpy(dtype=float)
                     for m in metrics}
    return out


def _pairs(names: list[str], baseline: str | None) -> list[tuple[str, str]]:
    """(baseline, model) pairs in a canonical order."""
    if baseline is not None:
        return [(baseline, m) for m in names if m != baseline]
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]


def stream(seed: int, model: str, base: str, metric: str) -> np.random.Generator:
    """The random generator of one row: ``SeedSequence(seed, spawn_key=...)`` with the key a
    stable hash (BLAKE2b) of the three names, so it depends on nothing else.

    Example:
        >>> from receval.compare import stream
        >>> a = stream(0, "b", "a", "P@10").random()
        >>> a == stream(0, "b", "a", "P@10").random(), a == stream(0, "a", "b", "P@10").random()
        (True, False)
    """
    digest = hashlib.blake2b(json.dumps([model, base, metric]).encode(), digest_size=16).digest()
    key = tuple(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _row(model: str, base: str, metric: str, b: np.ndarray, a: np.ndarray, test: str,
         alpha: float, n_resamples: int, seed: int) -> dict[str, Any]:
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    d = b - a
    n = int(d.size)
    rng = stream(seed, model, base, metric)
    means = bootstrap_means(d, n_resamples, rng) if n else np.empty(0)
    low, high = percentile_interval(means, alpha)
    if test == "t":
        p = t_test(a, b)
    elif test == "wilcoxon":
        p = wilcoxon_test(a, b)
    elif test == "randomization":
        p = randomization_test(d, n_resamples, rng)
    else:
        p = bootstrap_test(d, means)
    wins, ties = int((d > 0).sum()), int((d == 0).sum())
    nan = float("nan")
    return {
        "model": model, "baseline": base, "metric": metric,
        "mean": float(b.mean()) if n else nan, "baseline_mean": float(a.mean()) if n else nan,
        "delta": float(d.mean()) if n else nan, "ci_low": low, "ci_high": high,
        "p_value": p, "p_adjusted": nan, "effect_size": _effect_size(d),
        "share_better": (wins + ties / 2) / n if n else nan,
        "wins": wins, "ties": ties, "losses": n - wins - ties, "n": n,
    }


def _effect_size(d: np.ndarray) -> float:
    """Cohen's d_z: mean / sd (ddof 1); 0 when every difference is 0, NaN below two users,
    +-inf for a constant nonzero difference."""
    if d.size < 2:
        return float("nan")
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0:
        return 0.0 if mean == 0 else math.copysign(math.inf, mean)
    return mean / sd
