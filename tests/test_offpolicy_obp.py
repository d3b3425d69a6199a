"""receval.offpolicy against Open Bandit Pipeline 0.5.7 (run in its own venv, .ci/obp.sh):
on OBP's synthetic bandit and slate datasets, every estimator OBP has that receval has agrees
to 1e-10. Skipped only when the venv is absent (set OBP_VENV to move it)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.exceptions import ReceValError
from receval.offpolicy import Policy, estimate

VENV = Path(os.environ.get("OBP_VENV", "/tmp/obp-venv"))
SCRIPT = Path(__file__).parent / "reference" / "obp_crosscheck.py"
TOL = 1e-10


@pytest.fixture(scope="module")
def obp(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    python = VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no OBP venv at {VENV} (bash .ci/obp.sh makes it)")
    out = tmp_path_factory.mktemp("obp") / "obp.npz"
    done = subprocess.run([str(python), str(SCRIPT), str(out)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    with np.load(out) as data:
        return {k: data[k] for k in data.files}


def _values(result: pd.DataFrame) -> dict[str, float]:
    return dict(zip(result["estimator"], result["value"], strict=True))


def _bandit_inputs(d: dict[str, np.ndarray]) -> tuple[pd.DataFrame, pd.DataFrame]:
    n, k = d["bandit_q_hat"].shape
    log = pd.DataFrame({"request": np.arange(n), "item": d["bandit_action"], "position": 1,
                        "reward": d["bandit_reward"], "propensity": d["bandit_pscore"]})
    model = pd.DataFrame({"request": np.repeat(np.arange(n), k), "item": np.tile(np.arange(k), n),
                          "position": 1, "prediction": d["bandit_q_hat"].ravel()})
    return log, model


def _dense(dist: np.ndarray, column: str) -> pd.DataFrame:
    n, k = dist.shape
    return pd.DataFrame({"request": np.repeat(np.arange(n), k), "item": np.tile(np.arange(k), n),
                         "position": 1, column: dist.ravel()})


BANDIT = ["ips", "snips", "dm", "dr", "sndr", "switch_dr"]


@pytest.mark.parametrize("policy", ["softmax", "eps"])
def test_bandit_estimators_match_obp(obp: dict[str, np.ndarray], policy: str) -> None:
    log, model = _bandit_inputs(obp)
    target = _dense(obp[f"bandit_{policy}_dist"], "probability")
    got = _values(estimate(log, {"t": target}, estimators=BANDIT, reward_model=model,
                           n_resamples=0, switch_threshold=3.0, silence="weights").table)
    for name in BANDIT:
        assert got[name] == pytest.approx(float(obp[f"bandit_{policy}_{name}"]), abs=TOL,
                                          rel=0), name
    clipped = _values(estimate(log, {"t": target}, estimators=["ips", "dr"], reward_model=model,
                               n_resamples=0, clip=3.0, silence="weights").table)
    assert clipped["ips"] == pytest.approx(float(obp[f"bandit_{policy}_ips_clip"]), abs=TOL, rel=0)
    assert clipped["dr"] == pytest.approx(float(obp[f"bandit_{policy}_dr_clip"]), abs=TOL, rel=0)


@pytest.mark.parametrize("policy", ["softmax", "eps"])
@pytest.mark.parametrize("lam", [0.5, 5.0, 100.0])
def test_dros_matches_obp(obp: dict[str, np.ndarray], policy: str, lam: float) -> None:
    log, model = _bandit_inputs(obp)
    target = _dense(obp[f"bandit_{policy}_dist"], "probability")
    got = _values(estimate(log, {"t": target}, estimators=["dros", "dr"], reward_model=model,
                           n_resamples=0, shrinkage=lam, silence="weights").table)
    assert got["dros"] == pytest.approx(float(obp[f"bandit_{policy}_dros_{lam}"]), abs=TOL,
                                        rel=0)
    assert got["dros"] != got["dr"]  # the shrinkage changed something


@pytest.mark.parametrize("policy", ["softmax", "eps"])
def test_bandit_rules_from_scores_match_obp(obp: dict[str, np.ndarray], policy: str) -> None:
    """The same targets given as scores and a rule: OBP's softmax(4 q) and 0.2-greedy on q."""
    log, model = _bandit_inputs(obp)
    scores = _dense(obp["bandit_expected_reward"], "score").drop(columns="position")
    rule = (Policy(scores, "softmax", temperature=0.25) if policy == "softmax"
            else Policy(scores, "epsilon_greedy", epsilon=0.2))
    got = _values(estimate(log, {"t": rule}, estimators=BANDIT, reward_model=model,
                           n_resamples=0, switch_threshold=3.0, silence="weights").table)
    for name in BANDIT:
        assert got[name] == pytest.approx(float(obp[f"bandit_{policy}_{name}"]), abs=TOL,
                                          rel=0), name


SLATE = ["sips", "sn_sips", "iips", "snips", "rips", "sn_rips"]


def _slate_log(d: dict[str, np.ndarray], p: str) -> pd.DataFrame:
    return pd.DataFrame({"request": d[f"{p}_slate_id"], "item": d[f"{p}_action"],
                         "position": d[f"{p}_position"] + 1, "reward": d[f"{p}_reward"],
                         "propensity": d[f"{p}_pscore_item_position"],
                         "propensity_prefix": d[f"{p}_pscore_cascade"],
                         "propensity_slate": d[f"{p}_pscore"]})


#: OBP's independent slots may draw one item at several positions of a slate: receval refuses
#: such a log unless told (``repeats="allow"``); Plackett-Luce slates never repeat an item
_REPEATS = {"pl": "refuse", "indep": "allow"}


@pytest.mark.parametrize("kind", ["pl", "indep"])
def test_slate_estimators_match_obp(obp: dict[str, np.ndarray], kind: str) -> None:
    p = f"slate_{kind}"
    log = _slate_log(obp, p)
    target = log[["request", "item", "position"]].assign(
        probability=obp[f"{p}_e_item"], probability_prefix=obp[f"{p}_e_cascade"],
        probability_slate=obp[f"{p}_e_slate"])
    got = _values(estimate(log, {"t": target}, estimators=SLATE, n_resamples=0,
                           silence="weights", repeats=_REPEATS[kind]).table)
    for name in SLATE:
        assert got[name] == pytest.approx(float(obp[f"{p}_{name}"]), abs=TOL, rel=0), name


@pytest.mark.parametrize("kind", ["pl", "indep"])
def test_slate_rules_from_scores_match_obp(obp: dict[str, np.ndarray], kind: str) -> None:
    """OBP's evaluation policy from logits: Plackett-Luce (not factorizable) or independent
    softmax slots (factorizable); receval computes the prefix and slate probabilities."""
    p = f"slate_{kind}"
    log = _slate_log(obp, p)
    logit = obp[f"{p}_logit"]
    n, k = logit.shape
    scores = pd.DataFrame({"request": np.repeat(np.arange(n), k), "item": np.tile(np.arange(k), n),
                           "score": logit.ravel()})
    rule = "plackett_luce" if kind == "pl" else "softmax"
    names = ["sips", "sn_sips", "rips", "sn_rips"] + (["iips", "snips"] if kind == "indep" else [])
    got = _values(estimate(log, {"t": Policy(scores, rule, temperature=1.0)}, estimators=names,
                           n_resamples=0, silence="weights", repeats=_REPEATS[kind]).table)
    for name in names:
        assert got[name] == pytest.approx(float(obp[f"{p}_{name}"]), abs=TOL, rel=0), name


@pytest.mark.parametrize("kind", ["pl", "indep"])
def test_cascade_dr_matches_obp(obp: dict[str, np.ndarray], kind: str) -> None:
    """OBP's Cascade-DR with a reward model for every action at every slot, the target
    Plackett-Luce (not factorizable) or independent softmax slots (factorizable)."""
    p = f"slate_{kind}"
    log = _slate_log(obp, p)
    logit = obp[f"{p}_logit"]
    n, k = logit.shape
    scores = pd.DataFrame({"request": np.repeat(np.arange(n), k), "item": np.tile(np.arange(k), n),
                           "score": logit.ravel()})
    model = pd.DataFrame({"request": np.repeat(np.arange(n), 3 * k),
                          "position": np.tile(np.repeat(np.arange(1, 4), k), n),
                          "item": np.tile(np.arange(k), 3 * n),
                          "prediction": obp[f"{p}_q_hat"]})
    rule = "plackett_luce" if kind == "pl" else "softmax"
    got = _values(estimate(log, {"t": Policy(scores, rule, temperature=1.0)},
                           estimators=["cascade_dr", "rips"], reward_model=model, n_resamples=0,
                           silence="weights", repeats=_REPEATS[kind]).table)
    assert got["cascade_dr"] == pytest.approx(float(obp[f"{p}_cascade_dr"]), abs=TOL, rel=0)
    assert got["cascade_dr"] != got["rips"]
    if kind == "indep":  # the same log refused by default, in one line naming the option
        with pytest.raises(ReceValError, match="repeats='allow'"):
            estimate(log, {"t": Policy(scores, rule, temperature=1.0)}, estimators=["rips"],
                     n_resamples=0, silence="weights")
