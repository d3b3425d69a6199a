"""The fairness and calibration metrics at the other doors: expected exposure over the tied
orders of scores through evaluate (against the oracle over every order, tests/reference),
the HTML report's Fairness section and the monitor's windows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import receval
from receval.beyond.expected_exposure import expected_exposure_sampled
from receval.beyond.tied_exposure import expected_exposure_tied
from receval.exceptions import ReceValError

try:
    from tests.reference import fairness as oracle
except ImportError:  # pytest run from elsewhere: tests/ itself is on sys.path
    from reference import fairness as oracle  # type: ignore[no-redef]

EE = ("EE_D", "EE_R", "EE_L", "EE_D_norm", "EE_R_norm", "EE_L_norm")


def _tied_case(seed: int, n_users: int = 25):
    """Users with up to 7 scored items, scores on a coarse grid (ties, some across the
    cutoff), one to three relevant items (some never scored)."""
    rng = np.random.default_rng(seed)
    truth, preds = [], []
    for u in range(n_users):
        for i in rng.choice(9, int(rng.integers(1, 4)), replace=False):
            truth.append((u, f"i{i}"))
        for i in rng.choice(9, int(rng.integers(1, 8)), replace=False):
            preds.append((u, f"i{i}", float(rng.integers(1, 4)) / 4))
    return (pd.DataFrame(truth, columns=["user", "item"]),
            pd.DataFrame(preds, columns=["user", "item", "score"]))


@pytest.mark.parametrize(("seed", "k", "model"), [(0, 3, "gerr"), (1, 5, "gerr"),
                                                  (2, 2, "rbp"), (3, 7, "rbp"),
                                                  (4, 4, "gerr")])
def test_ee_over_tied_orders_matches_every_order(seed: int, k: int, model: str) -> None:
    truth, preds = _tied_case(seed)
    names = [f"{n}@{k}" for n in EE]
    beyond = {"ee_ties": "permute", "ee_model": model, "ee_patience": 0.6, "ee_utility": 0.3}
    got = receval.evaluate(truth, preds, names, beyond=beyond, empty="skip").per_user
    for user, rows in preds.groupby("user"):
        relevant = set(truth.item[truth.user == user])
        orders = oracle.tie_orders(dict(zip(rows.item, rows.score, strict=True)), k)
        want = oracle.expected_exposure([], relevant, model, 0.6, 0.3, samples=orders)
        have = got.set_index("user").loc[user]
        for name in EE:
            assert have[f"{name}@{k}"] == pytest.approx(want[name], rel=1e-12, abs=1e-12), (
                user, name)


def test_without_ties_permute_is_the_list() -> None:
    truth, preds = _tied_case(5)
    preds = preds.assign(score=preds.score + np.arange(len(preds)) * 1e-3)
    names = [f"{n}@4" for n in EE]
    a = receval.evaluate(truth, preds, names).per_user
    b = receval.evaluate(truth, preds, names, beyond={"ee_ties": "permute"}).per_user
    assert np.allclose(a[names].to_numpy(), b[names].to_numpy(), rtol=1e-12, atol=1e-15,
                       equal_nan=True)


def test_tied_kernel_equals_the_sampled_kernel_over_every_order() -> None:
    """The closed form against receval's own stochastic-ranking kernel fed every order."""
    scores = {0: 0.5, 1: 0.5, 2: 0.5, 3: 0.2, 4: 0.2}
    orders = oracle.tie_orders(scores, 4)
    tops = np.array([[order + [-1] * (4 - len(order)) for order in orders]])
    truth = (np.array([0, 2]), np.array([1, 3]))
    sampled = expected_exposure_sampled(tops, truth, 5)
    scored = (np.array([0, 5]), np.array(list(scores)), np.array(list(scores.values())))
    assert np.allclose(expected_exposure_tied(scored, truth, 5, 4), sampled, rtol=1e-12)


def test_ee_ties_refusals() -> None:
    truth, preds = _tied_case(0)
    with pytest.raises(ReceValError, match="does not take max_list=2"):
        receval.evaluate(truth, preds, ["EE_L@3"], max_list=2, beyond={"ee_ties": "permute"})
    with pytest.raises(ReceValError, match="ee_ties='permute' reads the scores"):
        receval.beyond.beyond_metrics(preds, ["EE_L@3"], truth=truth,
                                      beyond={"ee_ties": "permute"})
    with pytest.raises(ReceValError, match="ee_ties='both' is not one of 'list', 'permute'"):
        receval.evaluate(truth, preds, ["EE_L@3"], beyond={"ee_ties": "both"})


def _report_case():
    rng = np.random.default_rng(11)
    users = np.arange(40)
    truth = pd.DataFrame({"user": np.repeat(users, 2),
                          "item": [f"i{i}" for _ in users
                                   for i in rng.choice(12, 2, replace=False)]})
    train = pd.DataFrame({"user": np.repeat(users, 3),
                          "item": [f"i{i}" for i in rng.integers(0, 12, 120)]})
    def run(seed):
        r = np.random.default_rng(seed)
        return pd.DataFrame([(u, f"i{i}", 5.0 - j) for u in users
                             for j, i in enumerate(r.choice(12, 5, replace=False))],
                            columns=["user", "item", "score"])
    genres = {f"i{i}": [["drama"], ["comedy"], ["horror", "drama"]][i % 3] for i in range(12)}
    return truth, train, {"pop": run(1), "svd": run(2)}, genres


def test_report_fairness_section_numbers() -> None:
    import html as html_lib
    import re

    from receval.report.html import render_report

    truth, train, runs, genres = _report_case()
    metrics = ["nDCG@5", "group_exposure@5", "AWRF@5", "calibration@5"]
    results = {name: receval.evaluate(truth, preds, metrics, train=train, item_groups=genres,
                                      silence=["train-items", "train-overlap"])
               for name, preds in runs.items()}
    page = render_report(results, metrics=metrics, seed=3)
    assert page.count('<section id="fairness">') == 1
    section = page[page.index('<section id="fairness">'):]
    section = html_lib.unescape(section[:section.index("</section>")])
    names = ["comedy", "drama", "horror"]
    shares = {}
    for name, preds in runs.items():  # the oracle's pooled shares of each model's lists
        lists = [g.sort_values("score", ascending=False).item.tolist()[:5]
                 for _, g in preds.groupby("user")]
        shares[name] = oracle.group_exposure(lists, genres, names)
    for g, group in enumerate(names):
        row = re.search(rf"<tr><td>{group}</td>(.*?)</tr>", section).group(1)
        cells = re.findall(r'<td class="num">([^<]*)</td>', row)
        assert cells[0] == "0.3333"  # the uniform target
        assert cells[1] == f"{shares['pop'][g]:.4f} ({shares['pop'][g] - 1 / 3:+.4f})"
        assert cells[2] == f"{shares['svd'][g]:.4f} ({shares['svd'][g] - 1 / 3:+.4f})"
        assert cells[3] == f"{shares['svd'][g] - shares['pop'][g]:+.4f}"
    want = receval.compare(truth, results, ["AWRF@5", "calibration@5"], baseline="pop",
                           test="t", n_resamples=1000, seed=3).table.set_index("metric")
    for metric in ("AWRF@5", "calibration@5"):
        row = re.search(rf"<tr><td>{metric}</td>(.*?)</tr>", section).group(1)
        cells = re.findall(r'<td class="num">([^<]*)</td>', row)
        w = want.loc[metric]
        assert cells == [f"{results['pop'].summary[metric]:.4f}",
                         f"{results['svd'].summary[metric]:.4f}", f"{w.delta:+.4f}",
                         f"[{w.ci_low:+.4f}, {w.ci_high:+.4f}]", f"{w.p_value:.4f}"]


def test_report_without_fairness_metric_has_no_section() -> None:
    from receval.report.html import render_report

    truth, train, runs, genres = _report_case()
    one = receval.evaluate(truth, runs["pop"], ["nDCG@5", "novelty@5"], train=train,
                           silence=["train-items", "train-overlap"])
    page = render_report({"pop": one})
    assert 'id="fairness"' not in page and "Fairness:" not in page
    alone = receval.evaluate(truth, runs["pop"], ["nDCG@5", "calibration@5"], train=train,
                             item_groups=genres, silence=["train-items", "train-overlap"])
    page = render_report({"pop": alone})
    assert '<section id="fairness">' in page and "&minus;" not in page.split(
        '<section id="fairness">')[1].split("</section>")[0]


def test_cli_report_has_the_fairness_section(tmp_path) -> None:
    from click.testing import CliRunner

    from receval.cli import main

    truth, train, runs, genres = _report_case()
    truth.to_csv(tmp_path / "truth.csv", index=False)
    train.to_csv(tmp_path / "train.csv", index=False)
    runs["pop"].to_csv(tmp_path / "pop.csv", index=False)
    pd.DataFrame({"item": list(genres), "genre": ["|".join(g) for g in genres.values()]}
                 ).to_csv(tmp_path / "items.csv", index=False)
    out = CliRunner().invoke(main, [
        "evaluate", "-t", str(tmp_path / "truth.csv"), "-p", str(tmp_path / "pop.csv"),
        "--train", str(tmp_path / "train.csv"), "--item-features", str(tmp_path / "items.csv"),
        "-m", "nDCG@5", "-m", "group_exposure@5", "-m", "calibration@5", "--report",
        str(tmp_path / "r.html"), "--silence", "train-items", "--silence", "train-overlap"])
    assert out.exit_code == 0, out.output
    page = (tmp_path / "r.html").read_text()
    assert '<section id="fairness">' in page and "group_exposure@5: each item group" in page


def _served(seed: int = 0):
    rng = np.random.default_rng(seed)
    rows = []
    for n in range(40):
        served = pd.Timestamp("2024-01-01") + pd.Timedelta(hours=11 * n)
        for r, i in enumerate(rng.choice(10, 4, replace=False)):
            rows.append((n % 7, i, r + 1, served))
    imp = pd.DataFrame(rows, columns=["user", "item", "rank", "served_at"])
    fb = imp.sample(frac=0.3, random_state=seed)[["user", "item", "served_at"]]
    fb = fb.rename(columns={"served_at": "at"}).assign(value=1.0)
    fb["at"] = fb["at"] + pd.Timedelta(hours=1)
    groups = {i: [["a"], ["b"], ["c", "a"]][i % 3] for i in range(10)}
    train = pd.DataFrame({"user": np.repeat(np.arange(7), 5),
                          "item": rng.integers(0, 10, 35)})
    return imp, fb, groups, train


def test_monitor_windows_match_the_oracle_per_list() -> None:
    imp, fb, groups, train = _served()
    m = receval.monitor(imp, fb, ["P@4", "AWRF@4", "calibration@4", "calibration_js@4"],
                        window="W", item_groups=groups, train=train, n_resamples=0)
    names = ["a", "b", "c"]
    imp = imp.assign(week=imp.served_at.dt.to_period("W-SUN").dt.start_time)
    for row in m.windows.to_dict(orient="records"):
        week = imp[imp.week == row["window_start"].tz_localize(None)]
        awrf, kl, js = [], [], []
        for (user, _), lst in week.groupby(["user", "served_at"]):
            ranked = lst.sort_values("rank").item.tolist()
            history = train.item[train.user == user].tolist()
            awrf.append(oracle.awrf(ranked, groups, names, [1 / 3] * 3))
            kl.append(oracle.calibration(history, ranked, groups, names))
            js.append(oracle.calibration(history, ranked, groups, names, js="divergence"))
        assert (row["users_evaluated"] + row["users_waiting"] + row["users_unjudged"]
                == len(awrf))
        if row["closed"]:  # every list counts once closed
            for got, want in ((row["AWRF@4"], awrf), (row["calibration@4"], kl),
                              (row["calibration_js@4"], js)):
                assert got == pytest.approx(sum(want) / len(want), rel=1e-12)


def test_monitor_fairness_state_in_pieces_is_one_run(tmp_path) -> None:
    imp, fb, groups, train = _served(1)
    metrics = ["AWRF@4", "EE_L@4", "calibration@4", "rND@4"]
    kw = {"window": "W", "item_groups": groups, "train": train, "n_resamples": 50,
          "beyond": {"protected_group": "b", "fairness_step": 1}}
    whole = receval.monitor(imp, fb, metrics, **kw).windows
    cut = imp.served_at.quantile(0.5)
    state = tmp_path / "s.sqlite"
    receval.monitor(imp[imp.served_at < cut], fb[fb["at"] < cut], metrics, state=state, **kw)
    pieces = receval.monitor(imp[imp.served_at >= cut], fb[fb["at"] >= cut], metrics,
                             state=state, **kw).windows
    pd.testing.assert_frame_equal(whole, pieces)


@pytest.mark.parametrize(("metrics", "extra", "message"), [
    (["group_exposure@4"], {}, "'group_exposure@4' is one number over every list of a window"),
    (["novelty@4"], {}, "'novelty@4' is a beyond-accuracy metric, which receval monitor does"),
    (["AWRF@4"], {"item_groups": None}, "metric 'AWRF@4' needs item groups"),
    (["calibration@4"], {"train": None}, "metric 'calibration@4' needs each user's history"),
    (["AWRF@4"], {"beyond": {"fairness_target": "catalogue"}}, "fairness_target='catalogue'"),
    (["rKL@4"], {}, "'rKL@4' needs protected_group= in beyond="),
])
def test_monitor_refuses_what_a_window_cannot_define(metrics, extra, message) -> None:
    imp, fb, groups, train = _served()
    kw = {"item_groups": groups, "train": train, **extra}
    with pytest.raises(ReceValError, match=message.replace("(", r"\(").replace(")", r"\)")):
        receval.monitor(imp, fb, metrics, **kw)


def test_cli_monitor_fairness(tmp_path) -> None:
    import io

    from click.testing import CliRunner

    from receval.cli import main

    imp, fb, groups, train = _served()
    imp.to_csv(tmp_path / "imp.csv", index=False)
    fb.to_csv(tmp_path / "fb.csv", index=False)
    train.to_csv(tmp_path / "train.csv", index=False)
    pd.DataFrame({"item": list(groups), "genre": ["|".join(g) for g in groups.values()]}
                 ).to_csv(tmp_path / "items.csv", index=False)
    base = ["monitor", "-i", str(tmp_path / "imp.csv"), "--feedback", str(tmp_path / "fb.csv"),
            "--window", "W", "--resamples", "0", "-m", "P@4", "-m", "AWRF@4"]
    out = CliRunner().invoke(main, [*base, "-m", "calibration@4", "--item-features",
                                    str(tmp_path / "items.csv"), "--train",
                                    str(tmp_path / "train.csv"), "-f", "csv"])
    assert out.exit_code == 0, out.output
    got = pd.read_csv(io.StringIO(out.stdout))
    want = receval.monitor(imp, fb, ["P@4", "AWRF@4", "calibration@4"], window="W",
                           item_groups=groups, train=train, n_resamples=0).windows
    for name in ("AWRF@4", "calibration@4"):
        assert np.allclose(got[name].to_numpy(), want[name].to_numpy(), rtol=1e-9)
    missing = CliRunner().invoke(main, [*base, "-m", "calibration@4", "--item-features",
                                        str(tmp_path / "items.csv")])
    assert missing.exit_code == 2 and missing.output.strip().splitlines()[-1] == (
        "error: metric 'calibration@4' needs each user's history: pass --train FILE")
    ranked = CliRunner().invoke(main, [*base, "-m", "rND@4", "--item-features",
                                       str(tmp_path / "items.csv")])
    assert ranked.exit_code == 2 and "--beyond protected_group=NAME" in ranked.output


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("model", ["gerr", "rbp"])
def test_group_expected_exposure_matches_the_oracle(seed: int, model: str) -> None:
    from receval.beyond.compute import compute
    from receval.beyond.context import context
    from receval.beyond.groups import read_groups
    from receval.beyond.names import parse_beyond
    from receval.beyond.settings import BeyondOptions

    rng = np.random.default_rng(seed)
    n_items, n_users, k = 12, 30, 6
    top = np.full((n_users, k), -1, dtype=np.int64)
    for u in range(n_users):
        m = int(rng.integers(0, k + 1))
        top[u, :m] = rng.choice(n_items, size=m, replace=False)
    item_groups = {i: sorted(rng.choice(["a", "b", "c"], size=int(rng.choice([0, 1, 1, 2])),
                                        replace=False).tolist()) for i in range(n_items)}
    truth = [sorted(set(rng.choice(n_items, size=int(rng.integers(0, 4))).tolist()))
             for _ in range(n_users)]
    ptr = np.zeros(n_users + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(t) for t in truth])
    ctx = context(np.zeros(0, np.int64), np.zeros(0, np.int64), n_items,
                  row_users=np.arange(n_users),
                  truth=(ptr, np.array([i for t in truth for i in t], dtype=np.int64)))
    ids, align, names = read_groups(item_groups)
    ctx.groups = np.zeros((n_items, len(names)))
    ctx.groups[ids.astype(np.int64)] = align
    ctx.group_names = names
    metrics = [f"EE_{x}_group@{k}" for x in "DRL"]
    per_user, _ = compute([parse_beyond(n) for n in metrics], top, ctx,
                          BeyondOptions(ee_model=model, ee_patience=0.7, ee_utility=0.2))
    for u in range(n_users):
        ranked = [int(c) for c in top[u] if c >= 0]
        want = oracle.expected_exposure_group(ranked, set(truth[u]), item_groups, names,
                                              model, 0.7, 0.2)
        for name in metrics:
            got, exp = per_user[name][u], want[name.split("@")[0]]
            assert (math.isnan(got) and math.isnan(exp)) or got == pytest.approx(
                exp, rel=1e-12, abs=1e-12)


def test_group_expected_exposure_through_evaluate() -> None:
    truth, preds = _tied_case(2)
    groups = {f"i{i}": ["x", "y", "z"][i % 3] for i in range(9)}
    r = receval.evaluate(truth, preds, ["EE_L_group@3", "ee-d-group@3"], item_groups=groups)
    assert set(r.summary) == {"EE_L_group@3", "ee-d-group@3"}
    with pytest.raises(ReceValError, match="'EE_L_group@3' needs item groups"):
        receval.evaluate(truth, preds, ["EE_L_group@3"])
