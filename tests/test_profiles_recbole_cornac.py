"""profile="recbole" and profile="cornac" against the tools themselves.

RecBole 1.2.1 and Cornac 3.0.1 each live in their own virtual environment (``.ci/recbole.sh``,
``.ci/cornac.sh``: RecBole pins old numpy idioms and pulls ray and tensorboard, Cornac pulls
powerlaw); each test writes its data to JSON, runs the tool in a subprocess and reads its
numbers back, and skips only when that environment is absent.

- RecBole: its metric classes (``recbole.evaluator.metrics``) on the ``DataStruct`` its
  ``Collector`` builds (``rec.topk``: the top-k hit matrix and each user's positive count;
  ``rec.items``; ``data.num_items``, which counts the ``[PAD]`` id; ``data.count_items``, the
  training interaction counts), at ``metric_decimal_place=15``; the top-k metrics and the
  beyond-accuracy ones (ItemCoverage, AveragePopularity, ShannonEntropy, GiniIndex,
  TailPercentage with a count threshold and with a share).
- Cornac: ``cornac.eval_methods.base_method.ranking_eval`` itself, with a model whose scores
  are the predictions, on ``BaseMethod.from_splits`` data: which users it evaluates, the
  candidates it ranks and every metric's mean and per-user values.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval
from receval.exceptions import UndefinedMetricWarning

RECBOLE_PYTHON = Path(os.environ.get("RECBOLE_VENV", "/tmp/recbole-venv")) / "bin" / "python"
CORNAC_PYTHON = Path(os.environ.get("CORNAC_VENV", "/tmp/cornac-venv")) / "bin" / "python"
SILENCE = ["undefined", "ties", "no-match", "id-mismatch", "train-items", "train-overlap",
           "train-future"]
TOL = 1e-12


def _run_tool(python: Path, script: str, data: dict[str, Any], tmp_path: Path,
              setup: str) -> dict[str, Any]:
    if not python.exists():
        pytest.skip(f"no environment at {python.parent.parent}: run bash {setup}")
    (tmp_path / "in.json").write_text(json.dumps(data))
    (tmp_path / "tool.py").write_text(script)
    done = subprocess.run([str(python), str(tmp_path / "tool.py"), str(tmp_path / "in.json")],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _close(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or abs(got - want) <= TOL


# --- RecBole ---------------------------------------------------------------------------------

_RECBOLE_SCRIPT = r"""
import json, sys
from collections import Counter
import numpy as np
np.float = float  # RecBole 1.2.1 still says np.float, which NumPy 1.24 removed
import torch
from recbole.evaluator.collector import DataStruct
from recbole.evaluator.metrics import (Hit, MRR, MAP, Recall, NDCG, Precision, ItemCoverage,
    AveragePopularity, ShannonEntropy, GiniIndex, TailPercentage)

d = json.load(open(sys.argv[1]))
lists = np.array(d["lists"], dtype=np.int64)          # (users, max k) internal item ids
positives = [set(p) for p in d["positives"]]
hit = np.array([[i in positives[u] for i in row] for u, row in enumerate(lists)])
pos_len = np.array([len(p) for p in positives]).reshape(-1, 1)
data = DataStruct()
data.set("rec.topk", torch.cat([torch.from_numpy(hit.astype(np.int64)),
                                torch.from_numpy(pos_len)], dim=1))
data.set("rec.items", torch.from_numpy(lists))
data.set("data.num_items", d["num_items"])
data.set("data.count_items", Counter({int(k): v for k, v in d["count_items"].items()}))
out = {}
for tail in d["tail_ratios"]:
    config = {"topk": d["topk"], "metric_decimal_place": 15, "tail_ratio": tail}
    for cls in (Hit, MRR, MAP, Recall, NDCG, Precision, ItemCoverage, AveragePopularity,
                ShannonEntropy, GiniIndex, TailPercentage):
        for name, value in cls(config).calculate_metric(data).items():
            key = f"{name}|{tail}" if cls is TailPercentage else name
            out[key] = float(value)
print(json.dumps(out))
"""

#: RecBole's metric name -> receval's (beyond-accuracy names as RecBole spells them)
RECBOLE_NAMES = {"hit": "Hit", "mrr": "RR", "map": "AP", "recall": "R", "ndcg": "nDCG",
                 "precision": "P", "itemcoverage": "itemcoverage",
                 "averagepopularity": "averagepopularity", "shannonentropy": "shannonentropy",
                 "giniindex": "giniindex", "tailpercentage": "tailpercentage"}
RECBOLE_TOPK = [1, 3, 5, 10]


def _recbole_data(seed: int) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame,
                                      pd.DataFrame]:
    """Items 1..n (0 is RecBole's [PAD]); every item in the training data or some truth (so
    receval's catalogue is RecBole's dataset); some items never trained (cold); each user a
    full list of max(topk) distinct untrained items and 1-5 positives, some outside it."""
    rng = np.random.default_rng(seed)
    n_users, n_items, k = 24, 40, max(RECBOLE_TOPK)
    items = np.arange(1, n_items + 1)
    cold = set(rng.choice(items, 6, replace=False).tolist())
    warm = [i for i in items.tolist() if i not in cold]
    train = {u: set(rng.choice(warm, int(rng.integers(1, 8)), replace=False).tolist())
             for u in range(n_users)}
    lists, positives = [], []
    for u in range(n_users):
        free = [i for i in items.tolist() if i not in train[u]]
        order = rng.permutation(free).tolist()
        lists.append(order[:k])
        n_pos = int(rng.integers(1, 6))
        pos = set(rng.choice(order[: k + 8], n_pos, replace=False).tolist())
        positives.append(sorted(pos))
    seen = set().union(*train.values(), *map(set, positives))
    for i in items.tolist():  # every item in the dataset: train or some truth
        if i not in seen:
            positives[-1].append(i)
    counts = {str(i): sum(i in t for t in train.values()) for i in warm}
    counts = {i: c for i, c in counts.items() if c}
    data = {"lists": lists, "positives": positives, "num_items": n_items + 1,
            "count_items": counts, "topk": RECBOLE_TOPK, "tail_ratios": [2, 0.3]}
    truth = pd.DataFrame([(f"u{u}", i) for u, p in enumerate(positives) for i in p],
                         columns=["user", "item"])
    preds = pd.DataFrame([(f"u{u}", i, float(k - r)) for u, row in enumerate(lists)
                          for r, i in enumerate(row)], columns=["user", "item", "score"])
    train_rows = pd.DataFrame([(f"u{u}", i) for u, t in train.items() for i in sorted(t)],
                              columns=["user", "item"])
    return data, truth, preds, train_rows


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recbole_metrics(tmp_path: Path, seed: int) -> None:
    """Every top-k and beyond-accuracy mean RecBole prints, at k = 1, 3, 5, 10, with
    profile='recbole' (whose beyond switches are RecBole's), TailPercentage at tail_ratio 2
    (a count threshold) and 0.3 (a share of the trained items)."""
    data, truth, preds, train = _recbole_data(seed)
    want = _run_tool(RECBOLE_PYTHON, _RECBOLE_SCRIPT, data, tmp_path, ".ci/recbole.sh")
    # the data's count ties at the share cut are broken the same way (ids are codes' order)
    got: dict[str, float] = {}
    for tail in data["tail_ratios"]:
        names = [f"{RECBOLE_NAMES[n.split('@')[0]]}@{n.split('@')[1]}"
                 for n in want if "|" not in n]
        names += [f"tailpercentage@{k}" for k in RECBOLE_TOPK]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            r = receval.evaluate(truth, preds, sorted(set(names)), profile="recbole",
                                 train=train, beyond={"tail_ratio": tail}, silence=SILENCE)
        for name, value in r.summary.items():
            got[f"{name}|{tail}" if name.startswith("tail") else name] = value
    compared = 0
    for name, value in want.items():
        base, _, rest = name.partition("@")
        ours = f"{RECBOLE_NAMES[base]}@{rest}"
        assert _close(got[ours], value), (name, got[ours], value)
        compared += 1
    assert compared == 11 * len(RECBOLE_TOPK) + len(RECBOLE_TOPK)  # tail at two ratios


def test_recbole_profile_beyond_switches_differ_from_the_defaults() -> None:
    """Without the profile receval's coverage divides by the catalogue (no [PAD]), its entropy
    is in bits and not divided by the distinct items, and its long tail is the short head's
    complement: the profile is what makes the numbers RecBole's."""
    data, truth, preds, train = _recbole_data(0)
    names = ["coverage@10", "distributional_coverage@10", "gini@10", "APLT@10"]
    kw = {"train": train, "silence": SILENCE}
    prof = receval.evaluate(truth, preds, names, profile="recbole", **kw).summary
    plain = receval.evaluate(truth, preds, names, **kw).summary
    assert all(prof[n] != plain[n] for n in names)
    n = data["num_items"] - 1
    assert prof["coverage@10"] * (n + 1) == pytest.approx(plain["coverage@10"] * n, rel=1e-12)


# --- Cornac ----------------------------------------------------------------------------------

_CORNAC_SCRIPT = r"""
import json, sys
import numpy as np
import cornac
from cornac.eval_methods import BaseMethod
from cornac.eval_methods.base_method import ranking_eval
from cornac.metrics import NDCG, NCRR, MRR, Precision, Recall, FMeasure, HitRatio, MAP

d = json.load(open(sys.argv[1]))
train = [tuple(r) for r in d["train"]]
test = [tuple(r) for r in d["test"]]
bm = BaseMethod.from_splits(train_data=train, test_data=test, exclude_unknowns=True,
                            rating_threshold=1.0)
scores = {(u, i): s for u, i, s in d["scores"]}


class Fixed(cornac.models.Recommender):
    # the predictions as a model: score(user) is every item's score
    def __init__(self):
        super().__init__(name="fixed", trainable=False)

    def score(self, user_idx, item_idx=None):
        u = self.users[user_idx]
        out = np.array([scores[(u, self.items[j])] for j in range(len(self.items))])
        return out if item_idx is None else out[item_idx]


model = Fixed()
model.fit(bm.train_set)
model.users = {v: k for k, v in bm.train_set.uid_map.items()}
model.items = {v: k for k, v in bm.train_set.iid_map.items()}
metrics = []
for k in d["ks"]:
    metrics += [Precision(k=k), Recall(k=k), FMeasure(k=k), NDCG(k=k), NCRR(k=k), HitRatio(k=k)]
metrics += [NDCG(), NCRR(), MRR(), MAP()]
avg, per_user = ranking_eval(model, metrics, bm.train_set, bm.test_set, rating_threshold=1.0,
                             exclude_unknowns=True)
out = {"mean": {}, "per_user": {}}
for m, a, per in zip(metrics, avg, per_user):
    out["mean"][m.name] = float(a)
    out["per_user"][m.name] = {model.users[u]: float(v) for u, v in per.items()}
print(json.dumps(out))
"""

CORNAC_KS = [1, 3, 5, 10, 20]


def _cornac_name(name: str) -> str:
    base, _, k = name.partition("@")
    ours = {"Precision": "P", "Recall": "R", "F1": "F1", "NDCG": "nDCG", "NCRR": "NCRR",
            "HitRatio": "Hit", "MRR": "RR", "MAP": "AP"}[base]
    return ours if k in ("", "-1") else f"{ours}@{k}"


def _cornac_data(seed: int) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """30 items, 25 users with 2-6 training items (ratings 1-5) and 0-5 test items among the
    trained ones (ratings 0-5: 0 is not positive at rating_threshold 1, so some users have no
    positive and Cornac skips them); every (user, item) a distinct score."""
    rng = np.random.default_rng(seed)
    n_users, n_items = 25, 30
    items = [f"i{j}" for j in range(n_items)]
    train, test, scores = [], [], []
    for u in range(n_users):
        mine = rng.choice(items, int(rng.integers(2, 7)), replace=False).tolist()
        train += [(f"u{u}", i, float(rng.integers(1, 6))) for i in mine]
    known = sorted({i for _, i, _ in train})
    for u in range(n_users):
        mine = {i for v, i, _ in train if v == f"u{u}"}
        free = [i for i in known if i not in mine]
        n_test = int(rng.integers(0, 6)) if u else 3  # u0: three test items, none positive
        for i in rng.choice(free, n_test, replace=False).tolist():
            test.append((f"u{u}", i, float(rng.integers(0, 6)) if u else 0.0))
    values = rng.permutation(n_users * n_items) / 7.0
    for u in range(n_users):
        for j, i in enumerate(items):
            scores.append((f"u{u}", i, float(values[u * n_items + j])))
    data = {"train": train, "test": test, "scores": scores, "ks": CORNAC_KS}
    truth = pd.DataFrame(test, columns=["user", "item", "rating"])
    trained = {(u, i) for u, i, _ in train}
    # Cornac's candidates: every known item but the user's training positives
    preds = pd.DataFrame([(u, i, s) for u, i, s in scores
                          if i in set(known) and (u, i) not in trained],
                         columns=["user", "item", "score"])
    return data, truth, preds


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cornac_ranking_eval(tmp_path: Path, seed: int) -> None:
    """Every metric's mean and every user's value from Cornac's own ranking_eval equal
    receval's with profile='cornac' (users with no positive left out, as Cornac skips them)."""
    data, truth, preds = _cornac_data(seed)
    want = _run_tool(CORNAC_PYTHON, _CORNAC_SCRIPT, data, tmp_path, ".ci/cornac.sh")
    names = {m: _cornac_name(m) for m in want["mean"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        r = receval.evaluate(truth, preds, list(names.values()), profile="cornac",
                             silence=SILENCE)
    per_user = r.per_user.set_index("user")
    users = set(next(iter(want["per_user"].values())))
    assert set(per_user.index) == users
    assert len(users) < truth["user"].nunique()  # some test users had no positive
    for m, ours in names.items():
        assert _close(r.summary[ours], want["mean"][m]), (m, r.summary[ours], want["mean"][m])
        for u, v in want["per_user"][m].items():
            assert _close(float(per_user.loc[u, ours]), v), (m, u)
    assert len(names) == 6 * len(CORNAC_KS) + 4


def test_ncrr_worked_example() -> None:
    """Relevant a, c, f; ranking a b c d e: CRR@5 = 1 + 1/3, ICRR = 1 + 1/2 + 1/3; at k = 2
    the ideal is over min(3, 2) = 2 ranks: 1 / (1 + 1/2)."""
    truth = {"user": ["u"] * 3, "item": ["a", "c", "f"]}
    preds = {"user": ["u"] * 5, "item": list("abcde"), "score": [5.0, 4, 3, 2, 1]}
    r = receval.evaluate(truth, preds, ["NCRR@5", "NCRR@2", "NCRR"])
    assert r.summary == pytest.approx({"NCRR@5": (4 / 3) / (11 / 6), "NCRR@2": 1 / 1.5,
                                       "NCRR": (4 / 3) / (11 / 6)}, abs=1e-15)


# --- the tools' own test files, transcribed (they run without the tools) ---------------------


def _lists_frame(lists: dict[str, list[Any]]) -> pd.DataFrame:
    return pd.DataFrame([(u, i, float(len(items) - r)) for u, items in lists.items()
                         for r, i in enumerate(items)], columns=["user", "item", "score"])


def test_recbole_own_topk_test_values() -> None:
    """RecBole's tests/metrics/test_topk_metrics.py (RUCAIBox/RecBole 319b6873): four users
    with hit rows [0 0 0], [1 1 1], [1 0 1], [0 0 1] and 1, 3, 4, 2 positives; each metric's
    per-user values at k = 1, 2, 3 as that file types them."""
    lists = {"a": ["x1", "x2", "x3"], "b": ["p", "q", "r"], "c": ["s", "y1", "t"],
             "d": ["y2", "y3", "v"]}
    truth = pd.DataFrame([("a", "m"), ("b", "p"), ("b", "q"), ("b", "r"), ("c", "s"),
                          ("c", "t"), ("c", "m1"), ("c", "m2"), ("d", "v"), ("d", "m3")],
                         columns=["user", "item"])
    l2, l3, l4 = 1 / np.log2(2), 1 / np.log2(3), 1 / np.log2(4)
    want = {
        "Hit": [[0, 0, 0], [1, 1, 1], [1, 1, 1], [0, 0, 1]],
        "nDCG": [[0, 0, 0], [1, 1, 1], [1, l2 / (l2 + l3), (l2 + l4) / (l2 + l3 + l4)],
                 [0, 0, l4 / (l2 + l3)]],
        "RR": [[0, 0, 0], [1, 1, 1], [1, 1, 1], [0, 0, 1 / 3]],
        "AP": [[0, 0, 0], [1, 1, 1], [1, 1 / 2, (1 / 3) * (1 + 2 / 3)], [0, 0, (1 / 3) * (1 / 2)]],
        "R": [[0, 0, 0], [1 / 3, 2 / 3, 1], [1 / 4, 1 / 4, 2 / 4], [0, 0, 1 / 2]],
        "P": [[0, 0, 0], [1, 1, 1], [1, 1 / 2, 2 / 3], [0, 0, 1 / 3]],
    }
    names = [f"{m}@{k}" for m in want for k in (1, 2, 3)]
    r = receval.evaluate(truth, _lists_frame(lists), names, profile="recbole", silence=SILENCE)
    per_user = r.per_user.set_index("user")
    for m, rows in want.items():
        for u, row in zip("abcd", rows, strict=True):
            for k, value in zip((1, 2, 3), row, strict=True):
                assert per_user.loc[u, f"{m}@{k}"] == pytest.approx(value, abs=1e-15), (m, u, k)


def test_recbole_own_beyond_test_values() -> None:
    """The same file's ItemCoverage (7/8), AveragePopularity, GiniIndex and ShannonEntropy on
    five lists of items 1..7 with training counts item k -> k - 1 for k = 2..6 (items 1 and 7
    never trained) and num_items 8 (seven items and [PAD]). Items 1 and 7 join the catalogue
    through the truth, as RecBole's dataset holds them. (Its TailPercentage case gives item 1 a
    count of 0 inside the counter, which a RecBole Counter of training rows never holds.)"""
    lists = {"u0": [5, 7, 3], "u1": [4, 5, 2], "u2": [2, 3, 5], "u3": [1, 4, 6],
             "u4": [5, 3, 7]}
    train = pd.DataFrame([(f"t{k}_{j}", k) for k in range(2, 7) for j in range(k - 1)],
                         columns=["user", "item"])
    truth = pd.DataFrame([("u0", 1), ("u1", 7), ("u2", 2), ("u3", 3), ("u4", 4)],
                         columns=["user", "item"])
    names = ["coverage@3", "gini@3", "distributional_coverage@3", "ARP@1", "ARP@2", "ARP@3"]
    r = receval.evaluate(truth, _lists_frame(lists), names, profile="recbole", train=train,
                         silence=SILENCE)
    pop = {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5, 7: 0}
    arp = np.array([[np.mean([pop[i] for i in row[:k]]) for k in (1, 2, 3)]
                    for row in lists.values()])
    assert arp.tolist() == [[4, 2, 2], [3, 3.5, 8 / 3], [1, 1.5, 7 / 3], [0, 1.5, 8 / 3],
                            [4, 3, 2]]  # the file's matrix
    p = np.array([1, 2, 3, 2, 4, 1, 2]) / 15
    assert r.summary == pytest.approx({
        "coverage@3": 7 / 8,
        "gini@3": (-7 * 0 - 5 * 1 - 3 * 1 - 1 * 2 + 1 * 2 + 3 * 2 + 5 * 3 + 7 * 4) / (8 * 15),
        "distributional_coverage@3": float(-np.mean(p * np.log(p))),
        "ARP@1": arp[:, 0].mean(), "ARP@2": arp[:, 1].mean(), "ARP@3": arp[:, 2].mean()},
        abs=1e-15)


def test_cornac_own_ranking_test_values() -> None:
    """Cornac's tests/cornac/metrics/test_ranking.py (PreferredAI/cornac 1124f7b0), in its
    notation: a ground-truth mask over items 1..3 and a ranking (the comments' 1-based items).
    Without k the list is the whole ranking (k = 3 here)."""
    def one(relevant: list[int], ranking: list[int], metric: str) -> float:
        truth = pd.DataFrame({"user": ["u"] * len(relevant), "item": relevant,
                              "rating": [1.0] * len(relevant)})
        r = receval.evaluate(truth, _lists_frame({"u": ranking}), [metric], profile="cornac",
                             silence=SILENCE)
        return r.summary[metric]

    cases = [  # (relevant, ranking, metric, Cornac's expected value)
        ([1], [1], "nDCG", 1.0), ([1, 3], [1, 3, 2], "nDCG", 1.0),
        ([3], [2, 3, 1], "nDCG@2", 1 / np.log2(3)),  # the file: 0.63 to 2 decimals
        ([1], [1], "NCRR", 1.0), ([1, 3], [1, 3, 2], "NCRR", 1.0),
        ([1, 3], [2, 3, 1], "NCRR", (1 / 3 + 1 / 2) / (1 + 1 / 2)),
        ([3], [2, 3, 1], "NCRR@2", 0.5),
        ([1], [1], "RR", 1.0), ([1, 3], [1, 3, 2], "RR", 1.0), ([1, 3], [2, 3, 1], "RR", 0.5),
        ([1], [1], "P@1", 1.0), ([1, 3], [1, 3, 2], "P@3", 2 / 3),
        ([3], [2, 3, 1], "P@3", 1 / 3), ([3], [2, 3, 1], "P@2", 0.5),
        ([1], [1], "R@1", 1.0), ([1, 3], [1, 3, 2], "R@3", 1.0), ([3], [2, 3, 1], "R@3", 1.0),
        ([3], [2, 3, 1], "R@2", 1.0),
        ([1], [1], "F1@1", 1.0), ([1, 3], [1, 3, 2], "F1@3", 4 / 5),
        ([3], [2, 3, 1], "F1@3", 1 / 2), ([3], [2, 3, 1], "F1@2", 2 / 3),
        ([1], [2, 3], "F1@2", 0.0),
    ]
    for relevant, ranking, metric, value in cases:
        assert one(relevant, ranking, metric) == pytest.approx(value, abs=1e-15), (
            relevant, ranking, metric)
    assert round(one([3], [2, 3, 1], "nDCG@2"), 2) == 0.63
