"""Propensity-stratified evaluation (Jadidinejad et al. 2021; Cornac's
PropensityStratifiedEvaluation): receval.propensity_strata.stratified against an oracle written
from the formula (equal-width propensity bins over the truth rows, each stratum evaluated on its
own rows by tests/reference/debias_oracle.py with unit weights, the strata weighed by their share
of the rows), and its one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from receval.exceptions import ReceValError
from receval.propensity_strata import stratified
from tests.reference import debias_oracle as oracle

METRICS = ["P@5", "R@5", "nDCG@5", "AP@5", "RBP@0.8"]
ORACLE = [("P", 5, 0.0), ("R", 5, 0.0), ("nDCG", 5, 0.0), ("AP", 5, 0.0), ("RBP", None, 0.8)]


def _inputs(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    truth = pd.DataFrame({"user": rng.integers(0, 20, 100),
                          "item": rng.integers(0, 30, 100)}).drop_duplicates(
                              ["user", "item"], ignore_index=True)
    truth["p"] = rng.uniform(0.05, 1.0, len(truth))
    preds = pd.DataFrame({"user": np.repeat(np.arange(20), 10),
                          "item": rng.integers(0, 30, 200)}).drop_duplicates(
                              ["user", "item"], ignore_index=True)
    preds["score"] = rng.permutation(len(preds)).astype(float)
    train = pd.DataFrame({"user": rng.integers(100, 150, 400),
                          "item": rng.integers(0, 30, 400) ** 2 % 31})
    return truth, preds, train


def _oracle(truth: pd.DataFrame, preds: pd.DataFrame, prop: list[float],
            n_strata: int) -> dict[str, list[float]]:
    """Stratum q of a row: floor((p - min) / width), the largest p in the last stratum."""
    low, high = min(prop), max(prop)
    width = (high - low) / n_strata
    stratum = [min(int((p - low) / width), n_strata - 1) for p in prop]
    rows = list(zip(truth["user"], truth["item"], strict=True))
    pred_rows = list(preds[["user", "item", "score"]].itertuples(index=False, name=None))
    per: dict[str, list[float]] = {name: [] for name in METRICS}
    per["rows"] = []
    for q in sorted(set(stratum)):
        mine = [(u, i, 1.0) for (u, i), s in zip(rows, stratum, strict=True) if s == q]
        values = oracle.evaluate(mine, pred_rows, ORACLE, snips=False)
        per["rows"].append(len(mine))
        for name, spec in zip(METRICS, ORACLE, strict=True):
            per[name].append(values[spec])
    return per


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n_strata", [2, 4])
def test_column_propensity_matches_the_oracle(seed: int, n_strata: int) -> None:
    truth, preds, _ = _inputs(seed)
    got = stratified(truth, preds, METRICS, propensity="p", n_strata=n_strata,
                     silence=["id-mismatch"])
    want = _oracle(truth, preds, truth["p"].tolist(), n_strata)
    strata = got[got["stratum"] != "stratified"]
    assert strata["rows"].tolist() == want["rows"]
    assert strata["weight"].tolist() == pytest.approx([n / len(truth) for n in want["rows"]])
    total = got[got["stratum"] == "stratified"].iloc[0]
    assert total["rows"] == len(truth) and total["weight"] == 1.0
    for name in METRICS:
        assert strata[name].tolist() == pytest.approx(want[name], rel=1e-12, abs=1e-15), name
        combined = sum(n * v for n, v in zip(want["rows"], want[name], strict=True)) / len(truth)
        assert total[name] == pytest.approx(combined, rel=1e-12, abs=1e-15), name
    assert got["stratum"].iloc[0] == "Q1"
    assert got["propensity_low"].iloc[0] == truth["p"].min()
    assert got["propensity_high"].iloc[-2] == truth["p"].max()


def test_popularity_propensity_matches_the_oracle() -> None:
    truth, preds, train = _inputs(3)
    gamma = 1.0
    pop = oracle.popularity_propensity(train["item"].tolist(), gamma)
    top = max(train["item"].value_counts())
    prop = [pop.get(i, (1 / top) ** ((gamma + 1) / 2)) for i in truth["item"]]
    got = stratified(truth, preds, METRICS, propensity=("popularity", gamma), train=train,
                     n_strata=3, silence=["id-mismatch"])
    want = _oracle(truth, preds, prop, 3)
    strata = got[got["stratum"] != "stratified"]
    assert strata["rows"].tolist() == want["rows"]
    for name in METRICS:
        assert strata[name].tolist() == pytest.approx(want[name], rel=1e-12, abs=1e-15), name


def test_one_stratum_is_the_plain_evaluation() -> None:
    import receval

    truth, preds, _ = _inputs(4)
    got = stratified(truth, preds, METRICS, propensity="p", n_strata=1)
    plain = receval.evaluate(truth, preds, METRICS)
    assert list(got["stratum"]) == ["Q1", "stratified"]
    for name in METRICS:
        assert got[name].iloc[0] == plain.summary[name]
        assert math.isclose(got[name].iloc[1], plain.summary[name], rel_tol=1e-15)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"propensity": "uniform"}, "needs propensities that differ"),
    ({"propensity": ("popularity", "estimate")}, "needs propensities that differ"),
    ({"propensity": ("popularity", 1.0)}, "needs the training data: pass train="),
    ({"propensity": "nosuch"}, "propensity='nosuch' names no truth column"),
    ({"propensity": "zero"}, "propensity: 1 truth row(s) have a propensity outside (0, 1]"),
    ({"propensity": "p", "n_strata": 0}, "n_strata must be a positive integer"),
    ({"propensity": "p", "debias": "ips"}, "takes no debias="),
])
def test_refusals_are_one_line(kwargs: dict, message: str) -> None:
    truth, preds, _ = _inputs(0)
    truth["zero"] = truth["p"]
    truth.loc[2, "zero"] = 0.0
    with pytest.raises(ReceValError) as err:
        stratified(truth, preds, ["P@5"], **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)
