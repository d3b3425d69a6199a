"""The one paired analysis (:mod:`receval.stats.pairing`) and the direction every statistic
reads from the registry entries:

- ``compare`` on MAE and RMSE reports the lower-error model as the winner (wins, P(better),
  the significance letters), checked against the per-user errors written out here;
- a gate's interval against its baseline is compare's bit for bit (the models named by their
  files' stems or by the keys given, the confidence passed as written);
- swapping the two models mirrors every interval exactly (compare's rows, the report's
  significance table, the HTML report's difference interval).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval
from receval.report.html import _difference
from receval.report.significance import significance
from receval.stats.pairing import alpha_of, pair_stream


def _ratings() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Truth ratings of 30 users x 4 items; ``close`` predicts each within 0.5, ``far``
    within 0.5 + 1.0 (so every user's error is lower for ``close``)."""
    rng = np.random.default_rng(7)
    users = np.repeat(np.arange(30), 4)
    items = np.tile(np.arange(4), 30)
    rating = rng.integers(1, 6, users.size).astype(float)
    noise = rng.uniform(-0.5, 0.5, users.size)
    truth = pd.DataFrame({"user": users, "item": items, "rating": rating})
    close = pd.DataFrame({"user": users, "item": items, "score": rating + noise})
    far = close.assign(score=rating + noise + np.sign(noise + 1e-9) * 1.0)
    return truth, close, far


def _user_errors(truth: pd.DataFrame, pred: pd.DataFrame, squared: bool) -> np.ndarray:
    """Per user, the MAE (or RMSE) written from its formula, users ascending."""
    err = (pred["score"] - truth["rating"]).abs()
    if squared:
        return np.sqrt((err**2).groupby(truth["user"]).mean().to_numpy())
    return err.groupby(truth["user"]).mean().to_numpy()


@pytest.mark.parametrize("metric", ["MAE", "RMSE"])
def test_compare_counts_the_lower_error_as_the_win(metric: str) -> None:
    truth, close, far = _ratings()
    squared = metric == "RMSE"
    better = _user_errors(truth, close, squared) < _user_errors(truth, far, squared)
    assert better.all()  # the oracle: every user's error is lower with `close`
    table = receval.compare(truth, {"far": far, "close": close}, [metric], baseline="far",
                            n_resamples=200, relevance_threshold=None).table
    row = table.iloc[0]
    assert row["model"] == "close" and row["delta"] < 0
    assert (row["wins"], row["losses"], row["share_better"]) == (30, 0, 1.0)
    mirror = receval.compare(truth, {"far": far, "close": close}, [metric], baseline="close",
                             n_resamples=200, relevance_threshold=None).table.iloc[0]
    assert (mirror["wins"], mirror["losses"], mirror["share_better"]) == (0, 30, 0.0)


def test_the_significance_letter_goes_to_the_lower_error() -> None:
    """MAE over users of equal size is the mean of the users' MAEs: tested and marked; RMSE
    (pooled, not a mean of the users' values) is left untested, never marked the wrong way."""
    truth, close, far = _ratings()
    models = {name: receval.evaluate(truth, pred, ["MAE", "RMSE"], relevance_threshold=None)
              for name, pred in (("far", far), ("close", close))}
    sig = significance(models, ["MAE", "RMSE"], n_resamples=0)
    assert sig is not None
    assert sig.marks[("close", "MAE")] == "a" and sig.marks[("far", "MAE")] == ""
    assert sig.skipped == ["RMSE"] and sig.marks[("far", "RMSE")] == ""


def test_direction_is_declared_not_guessed_from_the_name() -> None:
    from receval.beyond.names import ENTRIES as BEYOND
    from receval.beyond.names import direction
    from receval.measures.registry import ENTRIES

    for e in ENTRIES.values():
        assert e.better in ("higher", "lower")
        assert direction(e.name if e.cutoff != "required" else f"{e.name}@5") == e.better
    for b in BEYOND.values():
        assert direction(f"{b.name}@5") == b.better
    lower = {e.name for e in ENTRIES.values() if e.better == "lower"}
    assert lower == {"RMSE", "MAE"}
    assert {"rND", "rKL", "rRD", "calibration", "EE_L", "EE_D", "gini"} <= \
        {b.name for b in BEYOND.values() if b.better == "lower"}


# --- gates: compare's interval, bit for bit ----------------------------------------------------


def _lists(seed: int, n_users: int = 60) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    truth = pd.DataFrame({"user": np.repeat(np.arange(n_users), 3),
                          "item": rng.integers(0, 12, 3 * n_users)}).drop_duplicates()

    def run(shift: float) -> pd.DataFrame:
        users = np.repeat(np.arange(n_users), 12)
        items = np.tile(np.arange(12), n_users)
        return pd.DataFrame({"user": users, "item": items,
                             "score": rng.random(users.size) + shift * (items < 6)})

    return truth, run(0.3), run(0.0)


def test_a_gate_interval_is_compare_s_bit_for_bit(tmp_path: Path) -> None:
    truth, svd, pop = _lists(3)
    truth.to_csv(tmp_path / "test.csv", index=False)
    svd.to_csv(tmp_path / "svd.csv", index=False)
    pop.to_csv(tmp_path / "pop.csv", index=False)
    (tmp_path / "gate.toml").write_text(
        'truth = "test.csv"\npredictions = "svd.csv"\nbaseline = "pop.csv"\n'
        'confidence = 0.95\nresamples = 500\nchecks = ["nDCG@5 >= baseline - 1"]\n')
    gate = receval.check(tmp_path / "gate.toml")
    row = receval.compare(truth, {"svd": svd, "pop": pop}, ["nDCG@5"], baseline="pop",
                          n_resamples=500).table.iloc[0]
    outcome = gate.outcomes[0]
    assert (outcome.value, outcome.low, outcome.high) == \
        (row["delta"], row["ci_low"], row["ci_high"])
    # a dict names its models by the keys given: the same numbers
    named = receval.check({"truth": truth, "predictions": {"svd": svd},
                           "baseline": {"pop": pop}, "resamples": 500,
                           "checks": ["nDCG@5 >= baseline - 1"]}).outcomes[0]
    assert (named.low, named.high) == (outcome.low, outcome.high)


def test_the_level_is_passed_as_written() -> None:
    assert alpha_of(0.95) == 0.05 and 1 - 0.95 != 0.05
    assert alpha_of(0.9) == 0.1 and alpha_of(0.99) == 0.01


# --- the mirror: swapping the models negates and swaps the ends --------------------------------


def test_the_stream_is_keyed_by_the_unordered_pair() -> None:
    assert pair_stream(0, "svd", "knn", "P@5").random() == \
        pair_stream(0, "knn", "svd", "P@5").random()


def test_compare_rows_mirror_exactly() -> None:
    truth, svd, knn = _lists(5)
    runs = {"svd": svd, "knn": knn}
    for test in ("t", "bootstrap", "randomization", "wilcoxon"):
        one = receval.compare(truth, runs, ["nDCG@5", "MRR"], baseline="knn", test=test,
                              n_resamples=300).table
        two = receval.compare(truth, runs, ["nDCG@5", "MRR"], baseline="svd", test=test,
                              n_resamples=300).table
        for (_, a), (_, b) in zip(one.iterrows(), two.iterrows(), strict=True):
            assert (a["ci_low"], a["ci_high"]) == (-b["ci_high"], -b["ci_low"])
            assert a["delta"] == -b["delta"] and a["p_value"] == b["p_value"]
            assert (a["wins"], a["losses"]) == (b["losses"], b["wins"])


def test_the_report_difference_interval_mirrors_exactly() -> None:
    truth, svd, knn = _lists(11)
    r = {"svd": receval.evaluate(truth, svd, ["nDCG@5"]),
         "knn": receval.evaluate(truth, knn, ["nDCG@5"])}
    one = _difference("knn", r["knn"], "svd", r["svd"], "nDCG@5", 0)
    two = _difference("svd", r["svd"], "knn", r["knn"], "nDCG@5", 0)
    def ends(text: str) -> tuple[float, float]:
        low, high = text.strip("[]").split(", ")
        return float(low), float(high)

    (lo1, hi1), (lo2, hi2) = ends(one["ci"]), ends(two["ci"])
    assert (lo1, hi1) == (-hi2, -lo2) and lo1 < hi1
    # the unrounded numbers behind them, through the same primitive
    from receval.report.models import paired_differences
    from receval.stats.pairing import pair_values

    d = paired_differences(r["knn"], r["svd"], "nDCG@5")
    a = pair_values(d["baseline"].to_numpy(), d["other"].to_numpy(), baseline="knn",
                    model="svd", metric="nDCG@5", test="t", alpha=0.05, n_resamples=1000,
                    seed=0)
    b = pair_values(d["other"].to_numpy(), d["baseline"].to_numpy(), baseline="svd",
                    model="knn", metric="nDCG@5", test="t", alpha=0.05, n_resamples=1000,
                    seed=0)
    assert (a["ci_low"], a["ci_high"]) == (-b["ci_high"], -b["ci_low"])
    assert one["better"] == two["worse"] and one["worse"] == two["better"]


def test_the_report_significance_table_mirrors_exactly() -> None:
    truth, svd, knn = _lists(13)
    r = {"svd": receval.evaluate(truth, svd, ["nDCG@5"]),
         "knn": receval.evaluate(truth, knn, ["nDCG@5"])}
    one = significance({"knn": r["knn"], "svd": r["svd"]}, ["nDCG@5"])
    two = significance({"svd": r["svd"], "knn": r["knn"]}, ["nDCG@5"])
    assert one is not None and two is not None
    a, b = one.table.iloc[0], two.table.iloc[0]
    assert (a["ci_low"], a["ci_high"]) == (-b["ci_high"], -b["ci_low"])
    # and compare's row is the report's
    row = receval.compare(None, {"knn": r["knn"], "svd": r["svd"]}, ["nDCG@5"],
                          baseline="knn", test="t", n_resamples=1000).table.iloc[0]
    assert (row["ci_low"], row["ci_high"]) == (a["ci_low"], a["ci_high"])
    assert not math.isnan(row["ci_low"])
