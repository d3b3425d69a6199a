"""Beyond-accuracy metrics against the real tools on random data: Microsoft Recommenders 1.2.1
``python_evaluation`` (in this environment) and RecTools 0.19 (in its own virtual
environment, /tmp/rectools-venv by default, made by .ci/rectools.sh: it pins numpy < 2) and
Evidently 0.7.23 (/tmp/evidently-venv, .ci/evidently.sh: it needs pandas < 3).

Microsoft Recommenders 1.2.1 breaks under pandas 3 in two ways, both patched here for the
duration of each call only (``monkeypatch``), so its own code computes every number:

- its reductions end in ``.agg({...})[0]``: a Series indexed by a column name read at
  position 0, a KeyError in pandas 3. The patch gives ``Series.__getitem__`` back the pandas 2
  fallback (an integer key missing from a non-integer index reads by position).
- ``item_pair_sim[col_sim].fillna(0, inplace=True)`` fills a copy under copy-on-write, so item
  pairs without a similarity stay NaN and the per-user means skip them instead of counting 0.
  The patch completes its item-similarity table with an explicit 0 for every pair it lacks,
  which is what the fillna meant: the merge then finds no NaN to fill.
"""

from __future__ import annotations

import json
import os
import subprocess
from itertools import combinations_with_replacement
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import receval

RECTOOLS_PYTHON = Path(os.environ.get("RECTOOLS_VENV", "/tmp/rectools-venv")) / "bin" / "python"
EVIDENTLY_PYTHON = (Path(os.environ.get("EVIDENTLY_VENV", "/tmp/evidently-venv")) / "bin"
                    / "python")

pytestmark = [pytest.mark.filterwarnings("ignore::receval.checks.ReceValWarning"),
              # Recommenders' fillna(inplace=True) on a column, patched around (see above)
              pytest.mark.filterwarnings("ignore::pandas.errors.ChainedAssignmentError")]


def _data(seed: int, n_users: int = 30, n_items: int = 25, k: int = 5):
    """Training rows, held-out truth and top-k lists without training items (Microsoft
    Recommenders refuses lists holding a user's training item), scores distinct."""
    rng = np.random.default_rng(seed)
    train, truth, reco = [], [], []
    for u in range(n_users):
        seen = set(rng.choice(n_items - 3, size=int(rng.integers(1, 8)), replace=False).tolist())
        train += [(u, i) for i in sorted(seen)]
        rest = [i for i in range(n_items) if i not in seen]
        truth += [(u, int(i)) for i in rng.choice(rest, size=int(rng.integers(1, 5)),
                                                  replace=False)]
        m = int(rng.integers(1, k + 1))
        for r, i in enumerate(rng.choice(rest, size=m, replace=False).tolist()):
            reco.append((u, int(i), float(k - r), r + 1))
    train_df = pd.DataFrame(train, columns=["user", "item"])
    truth_df = pd.DataFrame(truth, columns=["user", "item"])
    reco_df = pd.DataFrame(reco, columns=["user", "item", "score", "rank"])
    feats = {i: rng.integers(0, 2, 4).astype(float) + np.eye(4)[i % 4] for i in range(n_items)}
    return train_df, truth_df, reco_df, feats, k


# --- Microsoft Recommenders ----------------------------------------------------------------


@pytest.fixture
def ms(monkeypatch):
    pe = pytest.importorskip("recommenders.evaluation.python_evaluation")
    old_getitem = pd.Series.__getitem__

    def getitem(self, key):  # pandas 2: an int missing from a non-integer index is a position
        if isinstance(key, int) and not pd.api.types.is_integer_dtype(self.index) \
                and key not in self.index:
            return self.iloc[key]
        return old_getitem(self, key)

    monkeypatch.setattr(pd.Series, "__getitem__", getitem)
    original = pe._get_cosine_similarity

    def complete(train_df, item_feature_df=None, item_sim_measure="item_cooccurrence_count",
                 col_item_features="features", col_user="user", col_item="item",
                 col_sim="sim"):
        sim = original(train_df, item_feature_df, item_sim_measure, col_item_features,
                       col_user, col_item, col_sim)
        items = sorted(set(train_df[col_item]) | set(_ALL_ITEMS))
        pairs = pd.DataFrame(list(combinations_with_replacement(items, 2)), columns=["i1", "i2"])
        full = pairs.merge(sim, on=["i1", "i2"], how="left")
        full[col_sim] = full[col_sim].astype(float).fillna(0.0)
        return full

    monkeypatch.setattr(pe, "_get_cosine_similarity", complete)
    return pe


_ALL_ITEMS: list[int] = list(range(25))
COLS = {"col_user": "user", "col_item": "item"}


@pytest.mark.parametrize("seed", [0, 1])
def test_recommenders_coverage_novelty_and_entropy(ms, seed):
    train, truth, reco, _, k = _data(seed)
    r = receval.evaluate(truth, reco.drop(columns="rank"),
                         [f"coverage@{k}", f"distributional_coverage@{k}", f"novelty@{k}"],
                         train=train, profile="recommenders")
    top = reco[["user", "item"]]
    assert r.summary[f"coverage@{k}"] == pytest.approx(ms.catalog_coverage(train, top, **COLS),
                                                       rel=1e-12)
    assert r.summary[f"distributional_coverage@{k}"] == pytest.approx(
        ms.distributional_coverage(train, top, **COLS), rel=1e-12)
    assert r.summary[f"novelty@{k}"] == pytest.approx(ms.novelty(train, top, **COLS), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_recommenders_diversity_and_serendipity(ms, seed):
    train, truth, reco, feats, k = _data(seed)
    top = reco[["user", "item"]]
    features = pd.DataFrame({"item": list(feats), "features": list(feats.values())})
    for measure, beyond in (("item_cooccurrence_count", {}),
                            ("item_feature_vector", {"similarity": "features"})):
        extra = {"item_features": feats} if beyond else {}
        r = receval.evaluate(truth, reco.drop(columns="rank"),
                             [f"diversity@{k}", f"serendipity@{k}"], train=train,
                             profile="recommenders", beyond={
                                 **vars(receval.beyond.settings.RECOMMENDERS), **beyond},
                             **extra)
        want_div = ms.diversity(train, top, item_feature_df=features,
                                item_sim_measure=measure, **COLS)
        want_ser = ms.serendipity(train, top, item_feature_df=features,
                                  item_sim_measure=measure, **COLS)
        assert r.summary[f"diversity@{k}"] == pytest.approx(want_div, rel=1e-9)
        assert r.summary[f"serendipity@{k}"] == pytest.approx(want_ser, rel=1e-9)
    # with a relevance column: rel(i) = 1 for items of the user's truth
    rel = top.merge(truth.assign(relevance=1.0), how="left").fillna({"relevance": 0.0})
    r = receval.evaluate(truth, reco.drop(columns="rank"), [f"serendipity@{k}"], train=train,
                         profile="recommenders", beyond={
                             **vars(receval.beyond.settings.RECOMMENDERS),
                             "serendipity_relevance": "truth"})
    want = ms.serendipity(train, rel, col_relevance="relevance", **COLS)
    assert r.summary[f"serendipity@{k}"] == pytest.approx(want, rel=1e-3)  # its float16 column


# --- RecTools ------------------------------------------------------------------------------

_RECTOOLS_SCRIPT = r"""
import json, sys
import pandas as pd
from rectools import Columns
from rectools.metrics import (AvgRecPopularity, CatalogCoverage, IntraListDiversity,
                              MeanInvUserFreq, Serendipity)
from rectools.metrics.distances import PairwiseHammingDistanceCalculator
d = sys.argv[1]; k = int(sys.argv[2])
ren = {"user": Columns.User, "item": Columns.Item, "rank": Columns.Rank}
reco = pd.read_csv(d + "/reco.csv").rename(columns=ren)
train = pd.read_csv(d + "/train.csv").rename(columns=ren)
truth = pd.read_csv(d + "/truth.csv").rename(columns=ren)
catalog = sorted(set(train[Columns.Item]) | set(truth[Columns.Item]))
features = pd.read_csv(d + "/features.csv").set_index("item")
ild = IntraListDiversity(k=k, distance_calculator=PairwiseHammingDistanceCalculator(features))
out = {
    "coverage": float(CatalogCoverage(k=k).calc(reco, catalog)),
    "coverage_norm": float(CatalogCoverage(k=k, normalize=True).calc(reco, catalog)),
    "miuf": MeanInvUserFreq(k=k).calc_per_user(reco, train).to_dict(),
    "arp": AvgRecPopularity(k=k).calc_per_user(reco, train).to_dict(),
    "arp_norm": AvgRecPopularity(k=k, normalize=True).calc_per_user(reco, train).to_dict(),
    "serendipity": Serendipity(k=k).calc_per_user(reco, truth, train, catalog).to_dict(),
    "ild": ild.calc_per_user(reco).to_dict(),
}
print(json.dumps({key: ({str(u): v for u, v in val.items()} if isinstance(val, dict) else val)
                  for key, val in out.items()}))
"""


def _rectools(tmp_path: Path, train, truth, reco, k, features) -> dict:
    if not RECTOOLS_PYTHON.exists():
        pytest.skip(f"no RecTools environment at {RECTOOLS_PYTHON.parent.parent}: run "
                    f"bash .ci/rectools.sh")
    train.to_csv(tmp_path / "train.csv", index=False)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    reco[["user", "item", "rank"]].to_csv(tmp_path / "reco.csv", index=False)
    features.to_csv(tmp_path / "features.csv", index=False)
    script = tmp_path / "rt.py"
    script.write_text(_RECTOOLS_SCRIPT)
    done = subprocess.run([str(RECTOOLS_PYTHON), str(script), str(tmp_path), str(k)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _per_user(r, name):
    return {str(u): v for u, v in zip(r.per_user["user"], r.per_user[name], strict=True)}


@pytest.mark.parametrize("seed", [0, 1])
def test_rectools_metrics(tmp_path, seed):
    train, truth, reco, _, k = _data(seed)
    # RecTools counts interactions with repeats: add repeated training rows
    train = pd.concat([train, train.iloc[::3]], ignore_index=True)
    rng = np.random.default_rng(seed)
    features = pd.DataFrame({"item": _ALL_ITEMS, **{f"f{j}": rng.integers(0, 3, 25)
                                                     for j in range(4)}})
    want = _rectools(tmp_path, train, truth, reco, k, features)
    preds = reco.drop(columns="rank")
    names = [f"coverage@{k}", f"novelty@{k}", f"ARP@{k}", f"serendipity@{k}", f"diversity@{k}"]
    r = receval.evaluate(truth, preds, names, train=train, beyond="rectools",
                         item_features=features)
    assert r.summary[f"coverage@{k}"] == want["coverage"]
    assert _per_user(r, f"novelty@{k}") == pytest.approx(want["miuf"], rel=1e-12)
    assert _per_user(r, f"ARP@{k}") == pytest.approx(want["arp"], rel=1e-12)
    assert _per_user(r, f"serendipity@{k}") == pytest.approx(want["serendipity"], rel=1e-12)
    assert _per_user(r, f"diversity@{k}") == pytest.approx(want["ild"], rel=1e-12)
    r = receval.evaluate(truth, preds, [f"coverage@{k}", f"ARP@{k}"], train=train,
                         beyond={**vars(receval.beyond.settings.RECTOOLS), "coverage": "share",
                                 "arp_normalize": "interactions"})
    assert r.summary[f"coverage@{k}"] == pytest.approx(want["coverage_norm"], rel=1e-12)
    assert _per_user(r, f"ARP@{k}") == pytest.approx(want["arp_norm"], rel=1e-12)



# --- Evidently ------------------------------------------------------------------------------

_EVIDENTLY_SCRIPT = r"""
import json, sys
import pandas as pd
from sklearn.metrics import pairwise_distances
from evidently.legacy.metrics.recsys.novelty import NoveltyMetric
from evidently.legacy.metrics.recsys.personalisation import PersonalizationMetric
from evidently.legacy.metrics.recsys.popularity_bias import PopularityBias
from evidently.legacy.metrics.recsys.serendipity import SerendipityMetric
from evidently.legacy.pipeline.column_mapping import RecomType
d = sys.argv[1]; k = int(sys.argv[2])
reco = pd.read_csv(d + "/reco.csv")
train = pd.read_csv(d + "/train.csv")
truth = pd.read_csv(d + "/truth.csv")
features = pd.read_csv(d + "/features.csv")
cols = [c for c in features.columns if c != "item"]
stats = train.groupby("item")["user"].nunique()  # its TrainStats
n_users = train["user"].nunique()
pb = PopularityBias(k=k)
arp, _ = pb.get_apr(k, reco, stats, False, "rank", "user", "item")
arp_norm, _ = pb.get_apr(k, reco, stats, True, "rank", "user", "item")
nov_users, nov = NoveltyMetric(k=k).get_miuf(reco, k, RecomType.RANK, "user", "item", "rank",
                                             stats / n_users)
pers, _ = PersonalizationMetric(k=k).get_diversity(reco, "user", "item", "rank", k,
                                                   RecomType.RANK)
# serendipity reads one frame of (user, item) rows with the rank and the target
full = reco.merge(truth.assign(target=1), on=["user", "item"], how="left").fillna({"target": 0})
name_dict = {i: n for n, i in enumerate(features["item"])}
dist = pairwise_distances(features[cols], metric="cosine")
ser_users, ser = SerendipityMetric(k=k, item_features=cols).get_serendipity(
    k, full, RecomType.RANK, train, dist, "rank", "target", "user", "item", name_dict, None)
print(json.dumps({"gini": float(pb.get_gini(k, reco, "rank", "item")),
                  "coverage": float(pb.get_coverage(k, reco, stats, "rank", "item")),
                  "arp": float(arp), "arp_norm": float(arp_norm), "novelty": float(nov),
                  "personalization": float(pers), "serendipity": float(ser)}))
"""


@pytest.mark.parametrize("seed", [3])  # one seed: importing Evidently takes ~10 s
def test_evidently_metrics(tmp_path, seed):
    if not EVIDENTLY_PYTHON.exists():
        pytest.skip(f"no Evidently environment at {EVIDENTLY_PYTHON.parent.parent}: run "
                    f"bash .ci/evidently.sh")
    train, truth, reco, feats, k = _data(seed)
    full = reco.groupby("user").filter(lambda g: len(g) == k)  # its personalization assumes
    features = pd.DataFrame({"item": list(feats), **{f"f{j}": [v[j] for v in feats.values()]
                                                     for j in range(4)}})
    train.to_csv(tmp_path / "train.csv", index=False)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    full[["user", "item", "rank"]].to_csv(tmp_path / "reco.csv", index=False)
    features.to_csv(tmp_path / "features.csv", index=False)
    script = tmp_path / "ev.py"
    script.write_text(_EVIDENTLY_SCRIPT)
    done = subprocess.run([str(EVIDENTLY_PYTHON), str(script), str(tmp_path), str(k)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    want = json.loads(done.stdout.strip().splitlines()[-1])
    names = [f"{m}@{k}" for m in ("gini", "coverage", "ARP", "novelty", "personalization",
                                  "serendipity")]
    r = receval.evaluate(truth[truth.user.isin(full.user)], full.drop(columns="rank"), names,
                         train=train, beyond="evidently", item_features=features)
    for m in ("gini", "coverage", "ARP", "novelty", "personalization", "serendipity"):
        assert r.summary[f"{m}@{k}"] == pytest.approx(want[m.lower()], rel=1e-12), m
    r = receval.evaluate(truth[truth.user.isin(full.user)], full.drop(columns="rank"),
                         [f"ARP@{k}"], train=train, item_features=features,
                         beyond={**vars(receval.beyond.settings.EVIDENTLY),
                                 "arp_normalize": "max"})
    assert r.summary[f"ARP@{k}"] == pytest.approx(want["arp_norm"], rel=1e-12)
