"""Which differences in a summary are significant: paired tests between every two models.

For each metric whose summary is the mean of the per-user values (macro averaging) and each
pair of models (the earlier one in the given order as the baseline), the per-user values are
paired by user and compared as :func:`receval.compare` compares them
(:func:`receval.stats.pairing.pair_values`: the same streams, the same numbers), and the
p-values are corrected across every (pair x metric) together. A model's value is then marked
with the letter of each model it is significantly better than, in the metric's declared
direction (:func:`receval.beyond.names.direction`: lower is better for RMSE, MAE and the
error, gap and concentration measures), like
ranx's superscripts; nothing is marked where the difference is not significant after the
correction. The letters are a, b, c, ... in the order of the models.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from receval.beyond.names import catalogue_level, direction
from receval.exceptions import ReceValError
from receval.result import Result
from receval.stats.corrections import adjust
from receval.stats.pairing import align, pair_values

#: the tests and corrections as a footnote names them
TEST_NAMES = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test",
              "randomization": "paired randomization test (sign flips)",
              "bootstrap": "paired bootstrap test"}
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni",
                    "none": "no"}
_SUPERSCRIPT = dict(zip("abcdefghijklmnoprstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ", strict=True))


@dataclass
class Significance:
    """The paired tests behind a summary.

    Attributes:
        letters: model -> its letter.
        marks: (model, metric) -> the letters of the models it is significantly better than.
        table: one row per (baseline, model, metric): ``baseline``, ``model``, ``metric``,
            ``delta`` (model - baseline), ``ci_low``, ``ci_high``, ``p_value``, ``p_adjusted``,
            ``n``.
        options: ``test``, ``correction``, ``alpha``, ``resamples``, ``seed``.
        skipped: metrics not tested (their summary is not a mean of per-user values; the
            catalogue-level beyond-accuracy metrics among them, shown per model unmarked).
    """

    letters: dict[str, str]
    marks: dict[tuple[str, str], str]
    table: pd.DataFrame
    options: dict[str, Any]
    skipped: list[str] = field(default_factory=list)

    def footnote(self) -> str:
        """What a mark means, with the test, the correction, the resamples and the seed.

        Example:
            >>> import receval
            >>> r = receval.evaluate({"user": [1, 2], "item": [1, 1]},
            ...     {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1"])
            >>> significance({"x": r, "y": r}, ["P@1"]).footnote()[:44]
            'ᵃ, ᵇ: significantly better than model a, b ('
        """
        o = self.options
        shown = ", ".join(superscript(x) for x in self.letters.values())
        text = (f"{shown}: significantly better than model "
                f"{', '.join(self.letters.values())} ({TEST_NAMES[o['test']]} on the per-user "
                f"values, paired by user; {CORRECTION_NAMES[o['correction']]} correction across "
                f"{len(self.table):,} comparison{'' if len(self.table) == 1 else 's'}, "
                f"adjusted p < {o['alpha']:g}")
        if o["resamples"]:
            text += (f"; intervals: paired bootstrap percentile, {o['resamples']:,} resamples, "
                     f"seed {o['seed']}")
        text += "); no mark: no significant difference"
        catalogue = [m for m in self.skipped if catalogue_level(m)]
        others = [m for m in self.skipped if m not in catalogue]
        if others:
            text += f"; not tested (not a mean over users): {', '.join(others)}"
        if catalogue:
            text += (f"; not tested (one number over all lists, no per-user values): "
                     f"{', '.join(catalogue)}")
        return text


def superscript(letters: str) -> str:
    """``letters`` as Unicode superscripts (``"ab"`` -> ``"ᵃᵇ"``).

    Example:
        >>> superscript("ac")
        'ᵃᶜ'
    """
    return "".join(_SUPERSCRIPT.get(ch, ch) for ch in letters)


def _letter(i: int) -> str:
    alphabet = "abcdefghijklmnoprstuvwxyz"  # no q: Unicode has no superscript q
    return alphabet[i] if i < len(alphabet) else alphabet[i // len(alphabet) - 1] + \
        alphabet[i % len(alphabet)]


def _per_user_mean(result: Result, metric: str) -> bool:
    if catalogue_level(metric) or metric not in result.per_user.columns:
        return False
    values = result.per_user[metric].to_numpy(dtype=np.float64)
    if not (~np.isnan(values)).any():
        return False
    return math.isclose(float(np.nanmean(values)), result.summary[metric], rel_tol=1e-9,
                        abs_tol=1e-12)


#: the options that weigh a debiased metric (receval.debias): models compared must share them
WEIGHING = ("debias", "propensity", "propensity_clip")


def weighed_alike(models: dict[str, Result]) -> bool:
    """Whether every model's metrics were weighed alike (the same ``debias``, propensity
    model, fitted gamma included, and clip): a difference between models weighed differently
    is not the models' alone, so no letter is drawn between them.

    Example:
        >>> import receval
        >>> t = {"user": [1], "item": [1], "p": [0.5]}
        >>> p = {"user": [1], "item": [1], "score": [1.0]}
        >>> a = receval.evaluate(t, p, ["P@1"], debias="snips", propensity="p")
        >>> weighed_alike({"a": a, "b": a}), weighed_alike({"a": a, "b": receval.evaluate(
        ...     t, p, ["P@1"])})
        (True, False)
    """
    first = next(iter(models.values()))
    return all(all(r.options.get(k) == first.options.get(k) for k in WEIGHING)
               for r in models.values())


def significance(models: dict[str, Result], metrics: Sequence[str], *, test: str = "t",
                 correction: str = "holm", alpha: float = 0.05, n_resamples: int = 1000,
                 seed: int = 0) -> Significance | None:
    """Paired tests between every two models on ``metrics`` (see the module); ``None`` with
    fewer than two models, when the models were not evaluated on the same users, or when
    their debiased metrics were weighed differently (:func:`weighed_alike`).
    ``n_resamples=0`` computes no interval (then the test must be ``t`` or ``wilcoxon``).

    Example:
        >>> import receval
        >>> truth = {"user": list(range(40)), "item": [1] * 40}
        >>> a = {"user": list(range(40)), "item": [2] * 40, "score": [1.0] * 40}
        >>> b = {"user": list(range(40)), "item": [1] * 30 + [2] * 10, "score": [1.0] * 40}
        >>> s = significance({"a": receval.evaluate(truth, a, ["P@1"], silence="no-match"),
        ...                   "b": receval.evaluate(truth, b, ["P@1"])}, ["P@1"])
        >>> s.marks[("b", "P@1")], s.marks[("a", "P@1")]
        ('a', '')
    """
    names = list(models)
    if len(names) < 2 or not weighed_alike(models):
        return None
    try:
        aligned = align({name: models[name].per_user for name in names})
    except ReceValError:
        return None
    tested = [m for m in metrics if all(_per_user_mean(models[n], m) for n in names)]
    rows = []
    for metric in tested:
        for i, base in enumerate(names):
            for model in names[i + 1:]:
                a = aligned[base][metric].to_numpy(dtype=np.float64)
                b = aligned[model][metric].to_numpy(dtype=np.float64)
                row = pair_values(a, b, baseline=base, model=model, metric=metric, test=test,
                                  alpha=alpha, n_resamples=n_resamples, seed=seed,
                                  better=direction(metric))
                rows.append({"baseline": base, "model": model, "metric": metric,
                             **{k: row[k] for k in ("delta", "ci_low", "ci_high", "p_value",
                                                    "n")}})
    table = pd.DataFrame(rows, columns=["baseline", "model", "metric", "delta", "ci_low",
                                        "ci_high", "p_value", "p_adjusted", "n"])
    table["p_adjusted"] = adjust(table["p_value"].to_numpy(dtype=float), correction)
    letters = {name: _letter(i) for i, name in enumerate(names)}
    marks = {(name, m): "" for name in names for m in metrics}
    for r in table.itertuples(index=False):
        if not r.p_adjusted < alpha or r.delta == 0:
            continue
        lower_better = direction(str(r.metric)) == "lower"
        winner, loser = (r.model, r.baseline) if (r.delta > 0) != lower_better else \
            (r.baseline, r.model)
        marks[(winner, r.metric)] = "".join(sorted(marks[(winner, r.metric)] + letters[loser]))
    return Significance(letters=letters, marks=marks, table=table,
                        options={"test": test, "correction": correction, "alpha": alpha,
                                 "resamples": n_resamples, "seed": seed},
                        skipped=[m for m in metrics if m not in tested])


def family(models: dict[str, Result], metrics: Sequence[str] | None = None, *,
           n_resamples: int = 0, seed: int = 0) -> Significance | None:
    """The family of comparisons every output of a run tests: paired t-tests between every
    two models on ``metrics`` (default: the first model's metrics, as the summary shows them),
    Holm across every (pair x metric) whose value is a mean over users (:func:`significance`);
    ``None`` for one model. The terminal's letters, the HTML report's badges and the audit
    record of JSON and the trackers (:func:`receval.report.audit.audit_record`) all come from
    here, so they test one family; ``n_resamples`` adds intervals (the report's plots), which
    change no p-value of the t-test.

    Example:
        >>> import receval
        >>> r = receval.evaluate({"user": [1, 2], "item": [1, 1]},
        ...     {"user": [1, 2], "item": [1, 2], "score": [1.0, 1.0]}, ["P@1", "MRR"])
        >>> family({"a": r}) is None, len(family({"a": r, "b": r}).table)
        (True, 2)
    """
    if len(models) < 2:
        return None
    first = next(iter(models.values()))
    asked = list(metrics) if metrics else (first.metrics or list(first.summary))
    return significance(models, asked, n_resamples=n_resamples, seed=seed)
