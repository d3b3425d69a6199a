"""Run by tests/test_offpolicy_obp.py with the Python of OBP's own venv (.ci/obp.sh): Open
Bandit Pipeline 0.5.7's synthetic bandit and slate datasets and every estimator of OBP that
receval.offpolicy has, written to an .npz (inputs and OBP's estimates) for the test to compare.

Usage: python obp_crosscheck.py OUT.npz
"""

import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")

from obp.dataset import (  # noqa: E402
    SyntheticBanditDataset,
    SyntheticSlateBanditDataset,
    linear_behavior_policy,
    logistic_reward_function,
)
from obp.dataset.synthetic_slate import linear_behavior_policy_logit  # noqa: E402
from obp.ope import (  # noqa: E402
    DirectMethod,
    DoublyRobust,
    DoublyRobustWithShrinkage,
    InverseProbabilityWeighting,
    SelfNormalizedDoublyRobust,
    SelfNormalizedInverseProbabilityWeighting,
    SelfNormalizedSlateIndependentIPS,
    SelfNormalizedSlateRewardInteractionIPS,
    SelfNormalizedSlateStandardIPS,
    SlateCascadeDoublyRobust,
    SlateIndependentIPS,
    SlateRewardInteractionIPS,
    SlateStandardIPS,
    SwitchDoublyRobust,
)
from obp.utils import softmax  # noqa: E402

out: dict[str, np.ndarray] = {}

# --- the one-slot bandit --------------------------------------------------------------
ds = SyntheticBanditDataset(n_actions=8, dim_context=3, reward_type="binary",
                            reward_function=logistic_reward_function,
                            behavior_policy_function=linear_behavior_policy, beta=-1.5,
                            random_state=12345)
bf = ds.obtain_batch_bandit_feedback(n_rounds=3000)
q = bf["expected_reward"]
rng = np.random.default_rng(7)
q_hat = np.clip(q + rng.normal(0, 0.1, q.shape), 0, 1)[:, :, None]
eps = 0.2
greedy = np.zeros_like(q)
greedy[np.arange(q.shape[0]), q.argmax(axis=1)] = 1.0
policies = {"softmax": softmax(4.0 * q), "eps": (1 - eps) * greedy + eps / q.shape[1]}
for k in ("action", "reward", "pscore"):
    out[f"bandit_{k}"] = bf[k]
out["bandit_expected_reward"] = q
out["bandit_q_hat"] = q_hat[:, :, 0]
for name, dist in policies.items():
    ad = dist[:, :, None]
    out[f"bandit_{name}_dist"] = dist
    common = {"reward": bf["reward"], "action": bf["action"], "action_dist": ad,
              "pscore": bf["pscore"]}
    with_q = {**common, "estimated_rewards_by_reg_model": q_hat}
    out[f"bandit_{name}_ips"] = InverseProbabilityWeighting().estimate_policy_value(**common)
    out[f"bandit_{name}_ips_clip"] = InverseProbabilityWeighting(
        lambda_=3.0).estimate_policy_value(**common)
    out[f"bandit_{name}_snips"] = SelfNormalizedInverseProbabilityWeighting(
    ).estimate_policy_value(**common)
    out[f"bandit_{name}_dm"] = DirectMethod().estimate_policy_value(
        action_dist=ad, estimated_rewards_by_reg_model=q_hat)
    out[f"bandit_{name}_dr"] = DoublyRobust().estimate_policy_value(**with_q)
    out[f"bandit_{name}_dr_clip"] = DoublyRobust(lambda_=3.0).estimate_policy_value(**with_q)
    out[f"bandit_{name}_sndr"] = SelfNormalizedDoublyRobust().estimate_policy_value(**with_q)
    out[f"bandit_{name}_switch_dr"] = SwitchDoublyRobust(lambda_=3.0).estimate_policy_value(
        **with_q)
    for lam in (0.5, 5.0, 100.0):
        out[f"bandit_{name}_dros_{lam}"] = DoublyRobustWithShrinkage(
            lambda_=lam).estimate_policy_value(**with_q)

# --- slates: Plackett-Luce (not factorizable) and independent slots (factorizable) ----
for kind, factorizable in (("pl", False), ("indep", True)):
    sds = SyntheticSlateBanditDataset(n_unique_action=6, len_list=3, dim_context=2,
                                      reward_type="binary",
                                      reward_structure="cascade_additive",
                                      base_reward_function=logistic_reward_function,
                                      behavior_policy_function=linear_behavior_policy_logit,
                                      is_factorizable=factorizable, random_state=12345)
    sbf = sds.obtain_batch_bandit_feedback(n_rounds=400, return_pscore_item_position=True)
    logit = np.random.default_rng(11).normal(0, 1, (400, 6))
    e_slate, e_item, e_cascade = sds.obtain_pscore_given_evaluation_policy_logit(
        action=sbf["action"], evaluation_policy_logit_=logit, return_pscore_item_position=True)
    p = f"slate_{kind}"
    for k in ("slate_id", "action", "reward", "position", "pscore", "pscore_cascade",
              "pscore_item_position"):
        out[f"{p}_{k}"] = sbf[k]
    out[f"{p}_logit"] = logit
    out[f"{p}_e_slate"], out[f"{p}_e_item"], out[f"{p}_e_cascade"] = e_slate, e_item, e_cascade
    base = {"slate_id": sbf["slate_id"], "reward": sbf["reward"], "position": sbf["position"]}
    out[f"{p}_sips"] = SlateStandardIPS(len_list=3).estimate_policy_value(
        **base, pscore=sbf["pscore"], evaluation_policy_pscore=e_slate)
    out[f"{p}_sn_sips"] = SelfNormalizedSlateStandardIPS(len_list=3).estimate_policy_value(
        **base, pscore=sbf["pscore"], evaluation_policy_pscore=e_slate)
    out[f"{p}_iips"] = SlateIndependentIPS(len_list=3).estimate_policy_value(
        **base, pscore_item_position=sbf["pscore_item_position"],
        evaluation_policy_pscore_item_position=e_item)
    out[f"{p}_snips"] = SelfNormalizedSlateIndependentIPS(len_list=3).estimate_policy_value(
        **base, pscore_item_position=sbf["pscore_item_position"],
        evaluation_policy_pscore_item_position=e_item)
    out[f"{p}_rips"] = SlateRewardInteractionIPS(len_list=3).estimate_policy_value(
        **base, pscore_cascade=sbf["pscore_cascade"],
        evaluation_policy_pscore_cascade=e_cascade)
    out[f"{p}_sn_rips"] = SelfNormalizedSlateRewardInteractionIPS(
        len_list=3).estimate_policy_value(**base, pscore_cascade=sbf["pscore_cascade"],
                                          evaluation_policy_pscore_cascade=e_cascade)
    # Cascade-DR: a reward model for every action at every slot below the logged prefix
    q_hat = np.random.default_rng(13).uniform(0, 1, 400 * 3 * 6)
    dist = sds.calc_evaluation_policy_action_dist(action=sbf["action"],
                                                  evaluation_policy_logit_=logit)
    out[f"{p}_q_hat"] = q_hat
    out[f"{p}_cascade_dr"] = SlateCascadeDoublyRobust(
        len_list=3, n_unique_action=6).estimate_policy_value(
        **base, action=sbf["action"], pscore_cascade=sbf["pscore_cascade"],
        evaluation_policy_pscore_cascade=e_cascade, q_hat=q_hat,
        evaluation_policy_action_dist=dist)

np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
print("ok", len(out))
