"""The left-right mirror (navi_actor.models.mirror) and the PPO symmetry loss (ppo.symmetry_coef)."""

from __future__ import annotations

import pytest
import torch
from point_rollouts import collected

from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.algorithms.update_metrics import SYMMETRY_METRIC
from navi_actor.config import PPOConfig
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.models.mirror import mirror_action, mirror_observation

SMALL = PolicyConfig(
    visit_input=False, temporal_core="gru", azimuth=16, elevation=8, embed_dim=32, vit_dim=32, vit_layers=1
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_azimuth_bins_map_to_their_mirror_angle_and_twice_is_identity() -> None:
    obs = torch.zeros(2, 3, 16, 8)
    obs[0, 0, 4, 3] = 1.0  # 90 degrees left (bins run counter-clockwise from ahead)
    obs[1, 1, 0, 5] = 7.0  # straight ahead
    mirrored = mirror_observation(obs)
    assert mirrored[0, 0, 12, 3] == 1.0 and mirrored[0].sum() == 1.0  # now 90 degrees right
    assert mirrored[1, 1, 0, 5] == 7.0 and mirrored[1].sum() == 7.0  # ahead stays ahead
    sequence = torch.rand(3, 2, 3, 16, 8)  # [T, B, ...] windows mirror the same way
    assert torch.equal(mirror_observation(sequence)[2, 1], mirror_observation(sequence[2, 1]))
    assert torch.equal(mirror_observation(mirrored), obs)


def test_actions_mirror_lateral_and_yaw_only() -> None:
    action = torch.tensor([[0.5, -0.2, 0.3, 0.9]])  # forward, vertical, lateral, yaw
    assert mirror_action(action)[0].tolist() == pytest.approx([0.5, -0.2, -0.3, -0.9])
    assert torch.equal(mirror_action(mirror_action(action)), action)
    with pytest.raises(ValueError, match="expects"):
        mirror_action(torch.zeros(2, 3))


def _yaw_bias_policy() -> NaviPolicy:
    """A policy that turns left whatever it sees (a large yaw bias on its mean)."""
    torch.manual_seed(2)
    policy = NaviPolicy(SMALL)
    with torch.no_grad():
        policy.actor.mean.bias[3] = 1.5
    return policy


def test_the_symmetry_loss_removes_a_one_way_turn_and_is_reported() -> None:
    policy = _yaw_bias_policy()
    storage = collected(policy)
    storage.advantages.zero_()  # no policy-gradient signal: only the symmetry loss moves the mean
    config = PPOConfig(epochs=2, num_minibatches=2, learning_rate=3e-3, target_kl=None, entropy_coef=0.0)
    learner = PPOLearner(policy, config.model_copy(update={"symmetry_coef": 1.0}))
    obs = storage.obs.flatten(0, 1)
    before = policy.act(obs, policy.initial_state(len(obs)), torch.ones(len(obs), dtype=torch.bool))
    losses = [
        learner.update(storage, torch.Generator().manual_seed(i)).metrics[SYMMETRY_METRIC] for i in range(8)
    ]
    after = policy.act(obs, policy.initial_state(len(obs)), torch.ones(len(obs), dtype=torch.bool))
    assert losses[0] > 1.0  # yaw off by about 3 from its target, averaged over 4 components
    assert losses[-1] < 0.2 * losses[0]
    assert before.action_mean[:, 3].mean() > 1.0
    assert after.action_mean[:, 3].mean().abs() < 0.3 * before.action_mean[:, 3].mean()


def test_the_targets_are_the_mirrored_policy_on_the_mirrored_rollout() -> None:
    policy = _yaw_bias_policy()
    storage = collected(policy)
    learner = PPOLearner(policy, PPOConfig(symmetry_coef=1.0))
    targets = learner._mirrored_means(storage)
    state = storage.sequence_states[0]
    means = []
    for t in range(storage.num_steps):  # act step by step on the mirrored observations
        out = policy.act(mirror_observation(storage.obs[t]), state, storage.episode_starts[t], True)
        state = out.state
        means.append(out.action_mean)
    torch.testing.assert_close(targets, mirror_action(torch.stack(means)), atol=1e-5, rtol=1e-4)
    assert (targets[..., 3] < -1.0).all()  # the left turn's target is a right turn


def test_on_by_default_and_off_at_zero_reports_nothing_and_computes_no_targets() -> None:
    """On by default since 2026-11-30 (the best measured recipe); 0 skips the mirrored replay."""
    assert PPOConfig().symmetry_coef == 0.5
    policy = _yaw_bias_policy()
    storage = collected(policy)
    result = PPOLearner(policy, PPOConfig(epochs=1, num_minibatches=2, symmetry_coef=0.0)).update(storage)
    assert SYMMETRY_METRIC not in result.metrics and storage.mirror_means is None
