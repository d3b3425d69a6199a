"""receval.sampled: seeded candidates, and the corrected estimators of Krichene & Rendle (KDD 2020)
checked against the paper's formulas written here independently."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy.optimize import least_squares

from receval import sampled
from receval.cli import main
from receval.exceptions import ReceValError
from receval.measures.family import Family

# --- an independent oracle: the paper's formulas, nothing from receval -------------------------


def oracle_pmf(n: int, m: int) -> np.ndarray:
    """P(r | R) = C(R-1, r-1) C(n-R, m-r+1) / C(n-1, m): of the m negatives drawn from the
    n - 1 other items, r - 1 come from the R - 1 above the relevant item."""
    out = np.zeros((n, m + 1))
    total = math.comb(n - 1, m)
    for big in range(1, n + 1):
        for small in range(1, m + 2):
            out[big - 1, small - 1] = (math.comb(big - 1, small - 1)
                                       * math.comb(n - big, m - small + 1) / total)
    return out


def oracle_metric(name: str, k: int, rank: float) -> float:
    """The metric of one relevant item at full rank ``rank``."""
    if rank > k:
        return 0.0
    return {"P": 1.0 / k, "R": 1.0, "hit": 1.0, "nDCG": 1.0 / math.log2(rank + 1),
            "AP": 1.0 / rank, "RR": 1.0 / rank}[name]


def oracle_correction(name: str, k: int, n: int, m: int, estimator: str,
                      gamma: float = 0.01) -> np.ndarray:
    a = oracle_pmf(n, m)
    b = np.array([oracle_metric(name, k, big) for big in range(1, n + 1)])
    if estimator == "CLS":  # min ||A x - b||^2 with 0 <= x <= 1, by a generic solver
        x = least_squares(lambda x: a @ x - b, np.full(m + 1, 0.5), bounds=(0.0, 1.0),
                          ftol=1e-15, xtol=1e-15, gtol=1e-15).x
    else:  # minimise sum_R (1/n) [ (E[x_r | R] - M(R))^2 (1 - gamma) + gamma E[x_r^2 | R] ]
        p = 1.0 / n
        lhs = (1 - gamma) * p * a.T @ a + gamma * np.diag(p * a.sum(axis=0))
        x = np.linalg.solve(lhs, (1 - gamma) * p * a.T @ b) / (1 - gamma)
    x = np.clip(x, 0.0, 1.0)
    x[k:] = 0.0
    return x


FAMILIES = {"P": Family.PRECISION, "R": Family.RECALL, "hit": Family.HIT, "nDCG": Family.NDCG,
            "AP": Family.AP, "RR": Family.RR}


def test_pmf_matrix_is_the_hypergeometric_of_the_paper() -> None:
    for n, m in ((7, 3), (40, 6), (25, 24)):
        np.testing.assert_allclose(sampled.pmf_matrix(n, m), oracle_pmf(n, m), atol=1e-12)


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("k", [1, 3, 10])
def test_cls_and_bv_corrections_match_the_formulas(name: str, k: int) -> None:
    n, m = 60, 8
    cls = sampled.correction(FAMILIES[name], k, n, m, "CLS")
    np.testing.assert_allclose(cls, oracle_correction(name, k, n, m, "CLS"), atol=2e-6)
    bv = sampled.correction(FAMILIES[name], k, n, m, "BV")
    np.testing.assert_allclose(bv, oracle_correction(name, k, n, m, "BV"), atol=1e-9)


def test_bv_with_another_gamma_matches_the_formula() -> None:
    bv = sampled.correction(Family.NDCG, 5, 50, 10, "BV", 0.3)
    np.testing.assert_allclose(bv, oracle_correction("nDCG", 5, 50, 10, "BV", 0.3), atol=1e-9)


# --- synthetic data where the full ranking is known -------------------------------------------


def synthetic(n_items: int, n_users: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame,
                                                                pd.DataFrame, np.ndarray]:
    """Train (2 items per user), test (1 item per user) and full-catalogue scores whose full
    rank of each test item (among the items not in the user's train) is known."""
    rng = np.random.default_rng(seed)
    train_rows, test_rows, full_rows, ranks = [], [], [], []
    for u in range(n_users):
        items = rng.permutation(n_items)
        train_rows += [(u, int(i)) for i in items[:2]]
        rest = items[2:]
        # a fair model: the test item's full rank is geometric-ish, often in the top 10
        rank = min(int(rng.geometric(0.08)), len(rest))
        ranks.append(rank)
        order = list(rest)
        target = order.pop(0)
        order.insert(rank - 1, target)
        test_rows.append((u, int(target)))
        full_rows += [(u, int(i), float(len(order) - j)) for j, i in enumerate(order)]
    train = pd.DataFrame(train_rows, columns=["user", "item"])
    test = pd.DataFrame(test_rows, columns=["user", "item"])
    full = pd.DataFrame(full_rows, columns=["user", "item", "score"])
    return train, test, full, np.array(ranks)


def score(candidates: pd.DataFrame, full: pd.DataFrame) -> pd.DataFrame:
    return candidates.merge(full, on=["user", "item"], how="left")


def test_evaluate_sampled_matches_the_oracle_at_the_sampled_ranks() -> None:
    n_items, m = 80, 9
    train, test, full, ranks = synthetic(n_items, 40, 1)
    cands = sampled.sample_candidates(train, test, m, seed=4, items=range(n_items))
    scored = score(cands, full)
    metrics = ["nDCG@5", "R@3", "MRR", "P@2", "MAP@4"]
    r = sampled.evaluate_sampled(test, scored, metrics, n_items=n_items - 2,
                                 full_predictions=full, sampling=cands.attrs["receval.sampled"])
    # the sampled rank of each test item, counted here: 1 + the negatives scored above it
    merged = scored.merge(test.assign(pos=True), on=["user", "item"], how="left")
    small = []
    for _, rows in merged.groupby("user"):
        pos = rows[rows.pos.notna()].score.iloc[0]
        small.append(1 + int((rows[rows.pos.isna()].score >= pos).sum()))
    small = np.array(small)
    assert (small <= ranks).all()
    for metric, (name, k) in zip(metrics, [("nDCG", 5), ("R", 3), ("RR", n_items - 2),
                                           ("P", 2), ("AP", 4)], strict=True):
        for estimator in ("CLS", "BV"):
            x = oracle_correction(name, k, n_items - 2, m, estimator)
            assert r.summary[f"{metric} [{estimator}]"] == pytest.approx(
                x[small - 1].mean(), abs=1e-6)
        exact = np.mean([oracle_metric(name, k, big) for big in ranks])
        assert r.summary[f"{metric} [exact]"] == pytest.approx(exact, abs=1e-12)
        naive = np.mean([oracle_metric(name, k, s) for s in small])
        assert r.summary[f"{metric} [sampled]"] == pytest.approx(naive, abs=1e-12)
        gap = r.counts["sampled"]["gap"][metric]
        assert gap["sampled"] == pytest.approx(naive - exact, abs=1e-12)
    assert r.options["sampled"]["n_negatives"] == m
    assert r.options["sampled"]["strategy"] == "uniform" and r.options["sampled"]["seed"] == 4
    assert r.counts["sampled"]["negatives_per_user"] == {"min": m, "max": m}
    assert list(r.per_user.columns[:2]) == ["user", "nDCG@5 [sampled]"]
    # a candidates table that kept its attrs says how it was drawn by itself
    kept = cands.assign(score=scored.score.to_numpy())
    again = sampled.evaluate_sampled(test, kept, ["R@3"], n_items=n_items - 2)
    assert again.options["sampled"]["seed"] == 4 and again.options["sampled"]["users_short"] == 0


def test_exact_is_the_full_ranking_metric_for_leave_one_out() -> None:
    import receval

    train, test, full, _ = synthetic(60, 30, 2)
    cands = score(sampled.sample_candidates(train, test, 10, items=range(60)), full)
    r = sampled.evaluate_sampled(test, cands, ["nDCG@10", "R@10"], n_items=58,
                                 full_predictions=full)
    plain = receval.evaluate(test, full, ["nDCG@10", "R@10"])
    assert r.summary["nDCG@10 [exact]"] == pytest.approx(plain.summary["nDCG@10"], abs=1e-12)
    assert r.summary["R@10 [exact]"] == pytest.approx(plain.summary["R@10"], abs=1e-12)


def test_corrected_estimates_are_closer_to_the_exact_value_than_naive_on_average() -> None:
    n_items, m = 400, 20
    errors: dict[str, list[float]] = {"sampled": [], "CLS": [], "BV": []}
    for seed in range(4):
        train, test, full, _ = synthetic(n_items, 150, seed)
        cands = score(sampled.sample_candidates(train, test, m, seed=seed,
                                                items=range(n_items)), full)
        r = sampled.evaluate_sampled(test, cands, ["nDCG@10", "R@10"], n_items=n_items - 2,
                                     full_predictions=full)
        for metric in ("nDCG@10", "R@10"):
            for est in errors:
                errors[est].append(abs(r.counts["sampled"]["gap"][metric][est]))
    naive = np.mean(errors["sampled"])
    assert np.mean(errors["CLS"]) < naive / 2
    assert np.mean(errors["BV"]) < naive / 2


def test_metrics_without_a_correction_get_the_naive_value_only() -> None:
    test = pd.DataFrame({"user": [1], "item": [1], "rating": [4.0]})
    cands = pd.DataFrame({"user": [1, 1], "item": [1, 2], "score": [0.5, 0.9]})
    r = sampled.evaluate_sampled(test, cands, ["Rprec", "hit@1"], n_items=10)
    assert set(r.summary) == {"Rprec [sampled]", "hit@1 [sampled]", "hit@1 [CLS]",
                              "hit@1 [BV]"}


def test_relevance_threshold_selects_the_relevant_items() -> None:
    # item 2 (rating 1) is not relevant: it counts neither as relevant nor as a negative
    test = pd.DataFrame({"user": [1, 1], "item": [1, 2], "rating": [5.0, 1.0]})
    cands = pd.DataFrame({"user": [1, 1, 1, 1], "item": [1, 2, 3, 4],
                          "score": [0.5, 0.9, 0.7, 0.1]})
    r = sampled.evaluate_sampled(test, cands, ["hit@2"], n_items=20, relevance_threshold=3)
    x = oracle_correction("hit", 2, 20, 3, "BV")
    assert r.counts["sampled"]["relevant_pairs"] == 1
    assert r.summary["hit@2 [BV]"] == pytest.approx(x[1], abs=1e-9)  # one negative above


# --- the candidates -------------------------------------------------------------------------


def interactions(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    train = pd.DataFrame({"user": rng.integers(0, 30, 300), "item": rng.integers(0, 200, 300)})
    test = pd.DataFrame({"user": rng.integers(0, 30, 60), "item": rng.integers(0, 200, 60)})
    return train.drop_duplicates(), test.drop_duplicates()


@pytest.mark.parametrize("strategy", ["uniform", "popularity"])
def test_candidates_exclude_train_and_test_items_and_hold_the_test_items(strategy: str) -> None:
    train, test = interactions()
    c = sampled.sample_candidates(train, test, 25, strategy=strategy, seed=3)
    for user, rows in c.groupby("user"):
        mine = set(test[test.user == user].item)
        negatives = set(rows.item) - mine
        assert mine <= set(rows.item)
        assert len(negatives) == 25 == len(rows) - len(mine)
        assert not negatives & set(train[train.user == user].item)
        if strategy == "popularity":
            assert negatives <= set(train.item)  # never-trained items have weight 0
    assert set(c.user) == set(test.user)
    assert not c.duplicated().any()


@pytest.mark.parametrize("strategy", ["uniform", "popularity"])
def test_candidates_are_deterministic_and_independent_of_row_order(strategy: str) -> None:
    train, test = interactions()
    a = sampled.sample_candidates(train, test, 10, strategy=strategy, seed=7)
    b = sampled.sample_candidates(train.sample(frac=1.0, random_state=1),
                                  test.sample(frac=1.0, random_state=2), 10,
                                  strategy=strategy, seed=7)
    pd.testing.assert_frame_equal(a, b)
    c = sampled.sample_candidates(train, test, 10, strategy=strategy, seed=8)
    assert not a.equals(c)
    # a user's candidates do not depend on the other users
    one = int(test.user.iloc[0])
    alone = sampled.sample_candidates(train, test[test.user == one], 10, strategy=strategy,
                                      seed=7, items=sorted(set(train.item) | set(test.item)))
    assert alone.item.tolist() == a[a.user == one].item.tolist()


def test_popularity_sampling_favours_popular_items() -> None:
    # item 0 is trained on by 20 users, items 1..40 by one user each
    train = pd.DataFrame({"user": list(range(100, 120)) + list(range(200, 240)),
                          "item": [0] * 20 + list(range(1, 41))})
    test = pd.DataFrame({"user": range(400), "item": [999] * 400})
    pop = sampled.sample_candidates(train, test, 2, strategy="popularity", seed=0)
    uni = sampled.sample_candidates(train, test, 2, strategy="uniform", seed=0)
    # weights 20 vs 1 (x40), 2 drawn without replacement: item 0 is in a list with
    # p = 1/3 + 2/3 * 20/59 = 0.559 (sd over 400 lists: 0.025)
    share = (pop.item == 0).mean() * 3
    assert abs(share - (1 / 3 + 2 / 3 * 20 / 59)) < 0.075
    assert (uni.item == 0).mean() * 3 < 0.2
    assert sampled.sample_candidates(train, test, 2, strategy="popularity", alpha=0.0,
                                     seed=0).item.isin([0]).mean() * 3 < 0.2


def test_a_user_with_too_few_allowed_items_gets_them_all() -> None:
    train = pd.DataFrame({"user": [1, 1], "item": [1, 2]})
    test = pd.DataFrame({"user": [1], "item": [3]})
    c = sampled.sample_candidates(train, test, 5, items=[1, 2, 3, 4, 5])
    assert c.item.tolist() == [3, 4, 5]
    assert c.attrs["receval.sampled"]["users_short"] == 1


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_negatives": 0}, "n_negatives must be a positive integer"),
    ({"strategy": "pop"}, "strategy must be one of uniform, popularity"),
    ({"seed": -2}, "seed must be a non-negative integer"),
    ({"alpha": -1.0}, "alpha must be a finite number >= 0"),
])
def test_bad_sampling_arguments_are_one_line_errors(kwargs, message) -> None:
    train, test = interactions()
    args = {"n_negatives": 3, **kwargs}
    with pytest.raises(ReceValError, match=message.replace("(", r"\(")):
        sampled.sample_candidates(train, test, **args)


def test_evaluate_sampled_bad_input() -> None:
    test = pd.DataFrame({"user": [1], "item": [1]})
    with pytest.raises(ReceValError, match="no column 'score'"):
        sampled.evaluate_sampled(test, pd.DataFrame({"user": [1], "item": [1], "s": [1.0]}),
                                 ["P@1"], n_items=5)
    with pytest.raises(ReceValError, match="n_items must be the catalogue size"):
        sampled.evaluate_sampled(test, pd.DataFrame({"user": [1] * 4, "item": [1, 2, 3, 4],
                                                     "score": [1.0, 2, 3, 4]}),
                                 ["P@1"], n_items=3)


def test_cli_sample_end_to_end(tmp_path) -> None:
    train, test = interactions()
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    out = tmp_path / "cands.csv"
    result = CliRunner().invoke(main, ["sample", "--train", str(tmp_path / "train.csv"),
                                       "--test", str(tmp_path / "test.csv"), "--negatives",
                                       "7", "--seed", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    expected = sampled.sample_candidates(train, test, 7, seed=2)
    written = pd.read_csv(out)
    assert written.values.tolist() == expected.values.tolist()
    assert '"n_negatives": 7' in result.stdout
    refused = CliRunner().invoke(main, ["sample", "--train", str(tmp_path / "train.csv"),
                                        "--test", str(tmp_path / "test.csv"),
                                        "-o", str(tmp_path / "test.csv")])
    assert refused.exit_code == 2 and "is the input file" in refused.output


def test_popularity_sampling_when_the_excluded_items_hold_most_of_the_weight() -> None:
    # alpha=2: item 0 weighs 400 of 440; its 20 users draw from the 40 light items only
    train = pd.DataFrame({"user": list(range(100, 120)) + list(range(200, 240)),
                          "item": [0] * 20 + list(range(1, 41))})
    test = pd.DataFrame({"user": range(100, 120), "item": [999] * 20})
    c = sampled.sample_candidates(train, test, 5, strategy="popularity", alpha=2.0, seed=1)
    negatives = c[c.item != 999]
    assert negatives.groupby("user").size().tolist() == [5] * 20
    assert negatives.item.between(1, 40).all()
    again = sampled.sample_candidates(train.iloc[::-1], test, 5, strategy="popularity",
                                      alpha=2.0, seed=1)
    pd.testing.assert_frame_equal(c, again)
