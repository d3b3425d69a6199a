"""The main job: `receval demo` runs end to end and its numbers hang together."""

import math

from click.testing import CliRunner

from receval.cli import main
from receval.demo import make_ratings, metric_names, run_demo, split_per_user


def test_demo_data_are_seeded_and_split_per_user() -> None:
    a, b = make_ratings(seed=3), make_ratings(seed=3)
    assert a.equals(b)
    assert a["rating"].isin([1, 2, 3, 4, 5]).all()
    train, test = split_per_user(a, seed=3)
    assert len(train) + len(test) == len(a)
    assert set(test["user"]) == set(a["user"])
    merged = train.merge(test, on=["user", "item"])
    assert merged.empty


def test_demo_results_are_valid_and_distinct() -> None:
    results = run_demo()
    for result in results.values():
        for name in metric_names():
            assert 0.0 <= result.summary[name] <= 1.0
    rating, topk = results["rating semantics"], results["top-k semantics"]
    # same lists; the score threshold only shortens them, so recall cannot grow
    for k in (3, 10, 15):
        assert rating.summary[f"R@{k}"] <= topk.summary[f"R@{k}"] + 1e-12
    assert math.isfinite(rating.summary["RMSE"]) and rating.summary["RMSE"] > 0


def test_demo_command_prints_the_table() -> None:
    out = CliRunner().invoke(main, ["demo"])
    assert out.exit_code == 0, out.output
    for text in ("P@3", "nDCG@15", "rating semantics", "top-k semantics", "RMSE", "Next:"):
        assert text in out.output
