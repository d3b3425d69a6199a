"""receval.sequential against Cornac 3.0.1's NextItemEvaluation (``mode="last"`` and ``"next"``).

Cornac runs in its own environment (``bash .ci/cornac.sh``); the test writes the data and a
fixed score table to JSON, runs Cornac's own ``next_item_evaluation.ranking_eval`` in a
subprocess with a model that returns those scores, and compares every number. Cornac scores a
test session from its second item, so each user's Cornac test session starts with the user's
last training event; it ranks every known item and keeps the history in the list
(``history="keep"``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import receval

CORNAC_PYTHON = Path(os.environ.get("CORNAC_VENV", "/tmp/cornac-venv")) / "bin" / "python"
KS = [1, 3, 5, 10]
TOL = 1e-12

_SCRIPT = r"""
import json, sys
import numpy as np
import cornac
from cornac.eval_methods import NextItemEvaluation
from cornac.eval_methods.next_item_evaluation import ranking_eval
from cornac.metrics import NDCG, MRR, Precision, Recall, HitRatio

d = json.load(open(sys.argv[1]))
train = [tuple(r) for r in d["train"]]
test = [tuple(r) for r in d["test"]]
scores = {(u, s): dict(zip(items, vals)) for u, s, items, vals in d["scores"]}
out = {}
for mode in ("last", "next"):
    ev = NextItemEvaluation.from_splits(train_data=train, test_data=test, fmt="USIT",
                                        exclude_unknowns=True, mode=mode)

    class Fixed(cornac.models.NextItemRecommender):
        # the predictions as a model: the score table of (user, step)
        def __init__(self):
            super().__init__(name="fixed", trainable=False)

        def score(self, user_idx, history_items, **kwargs):
            table = scores[(users[user_idx], len(history_items))]
            return np.array([table[items[j]] for j in range(len(items))])

    users = {v: k for k, v in ev.train_set.uid_map.items()}
    items = {v: k for k, v in ev.train_set.iid_map.items()}
    model = Fixed()
    model.fit(ev.train_set)
    metrics = []
    for k in d["ks"]:
        metrics += [Precision(k=k), Recall(k=k), NDCG(k=k), HitRatio(k=k)]
    metrics += [NDCG(), MRR()]
    avg, _ = ranking_eval(model, metrics, ev.train_set, ev.test_set, mode=mode,
                          exclude_unknowns=True)
    avg_u, _ = ranking_eval(model, metrics, ev.train_set, ev.test_set, mode=mode,
                            exclude_unknowns=True, user_based=True)
    out[mode] = {"mean": {m.name: float(a) for m, a in zip(metrics, avg)},
                 "by_user": {m.name: float(a) for m, a in zip(metrics, avg_u)}}
print(json.dumps(out))
"""


def _data(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Users with 2-6 training and 1-5 test events over 15 items, every item in training;
    one distinct random score per (user, step, item)."""
    rng = np.random.default_rng(seed)
    n_items = 15
    train, test, scores = [], [], []
    t = 0
    for u in range(12):
        for _ in range(int(rng.integers(2, 7))):
            t += 1
            train.append((f"u{u}", int(rng.integers(n_items)), t))
        for _ in range(int(rng.integers(1, 6))):
            t += 1
            test.append((f"u{u}", int(rng.integers(n_items)), t))
    for i in range(n_items):  # every item known to training
        t += 1
        train.append(("filler", i, t))
    tr = pd.DataFrame(train, columns=["user", "item", "timestamp"])
    te = pd.DataFrame(test, columns=["user", "item", "timestamp"])
    steps = te.groupby("user").cumcount() + 1
    for u, s in zip(te["user"], steps, strict=True):
        vals = rng.permutation(n_items * 7)[:n_items] / 7.0  # distinct: no tie
        scores.append((u, int(s), list(range(n_items)), vals.tolist()))
    return tr, te, pd.DataFrame(scores, columns=["user", "step", "items", "values"])


def _cornac_input(tr: pd.DataFrame, te: pd.DataFrame, scores: pd.DataFrame) -> dict[str, Any]:
    """Cornac's USIT tuples: the training events as one session per user; each user's test
    session starts with their last training event (Cornac scores from the second item)."""
    train = [(u, f"{u}-train", int(i), int(t)) for u, i, t in tr.itertuples(index=False)]
    test = []
    for u, rows in te.groupby("user", sort=False):
        last = tr[tr["user"] == u].iloc[-1]
        test.append((u, f"{u}-test", int(last["item"]), int(last["timestamp"])))
        test += [
            (u, f"{u}-test", int(i), int(t))
            for i, t in zip(rows["item"], rows["timestamp"], strict=True)
        ]
    return {
        "train": train,
        "test": test,
        "ks": KS,
        "scores": [
            (u, int(s), items, vals) for u, s, items, vals in scores.itertuples(index=False)
        ],
    }


def _names(k: int) -> dict[str, str]:
    return {
        f"Precision@{k}": f"P@{k}",
        f"Recall@{k}": f"R@{k}",
        f"NDCG@{k}": f"nDCG@{k}",
        f"HitRatio@{k}": f"hit@{k}",
    }


@pytest.mark.parametrize("seed", [0, 1])
def test_next_item_evaluation_equal(tmp_path: Path, seed: int) -> None:
    """Every mean of Cornac's NextItemEvaluation (per session and user_based) equals
    receval.sequential's (macro over queries, over users) under "last" and "next"."""
    if not CORNAC_PYTHON.exists():
        pytest.skip(f"no environment at {CORNAC_PYTHON.parent.parent}: run bash .ci/cornac.sh")
    tr, te, scores = _data(seed)
    (tmp_path / "in.json").write_text(json.dumps(_cornac_input(tr, te, scores)))
    (tmp_path / "tool.py").write_text(_SCRIPT)
    done = subprocess.run(
        [str(CORNAC_PYTHON), str(tmp_path / "tool.py"), str(tmp_path / "in.json")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    want = json.loads(done.stdout.strip().splitlines()[-1])
    names = {"NDCG@-1": "nDCG", "MRR": "MRR"}
    for k in KS:
        names.update(_names(k))
    long = scores.explode(["items", "values"]).rename(columns={"items": "item", "values": "score"})
    long["item"] = long["item"].astype(np.int64)
    long["score"] = long["score"].astype(np.float64)
    for mode in ("last", "next"):
        q = receval.sequential.queries(tr[tr["user"] != "filler"], te, protocol=mode)
        r = receval.sequential.evaluate(q, long, list(names.values()), history="keep")
        assert r.counts["queries"] == (te["user"].nunique() if mode == "last" else len(te))
        for cornac_name, ours in names.items():
            got, by_user = r.summary[ours], r.summary_by_user[ours]
            assert abs(got - want[mode]["mean"][cornac_name]) <= TOL, (mode, ours)
            assert abs(by_user - want[mode]["by_user"][cornac_name]) <= TOL, (mode, ours)
