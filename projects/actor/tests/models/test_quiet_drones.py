"""Quiet drones (rollout.quiet_drones): narrower samples, their own log-probabilities, a true PPO ratio."""

from __future__ import annotations

import math
from inspect import signature

import pytest
import torch

from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.config import PPOConfig, RolloutConfig
from navi_actor.envs.point import PointGoalEnv
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.models.heads import gaussian_log_prob
from navi_actor.models.quiet_drones import QuietDrones
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.storage import RolloutStorage

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = {
    "temporal_core": "gru",
    "azimuth": 16,
    "elevation": 8,
    "embed_dim": 32,
    "vit_dim": 32,
    "vit_layers": 1,
}


def quiet_rollout(quiet: int, scale: float) -> tuple[NaviPolicy, RolloutStorage]:
    """One 16-step rollout of 64 point-toy drones, the last ``quiet`` of them quiet."""
    torch.manual_seed(0)
    env = PointGoalEnv(64, azimuth=16, elevation=8, max_steps=6)
    policy = NaviPolicy(PolicyConfig(visit_input=False, **SMALL, init_log_std=0.0, log_std_max=0.0))
    storage = RolloutStorage(
        16, 64, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size, sequence_length=8
    )
    collector = RolloutCollector(env, policy, storage, seed=0, quiet_drones=quiet, quiet_noise_scale=scale)
    collector.collect(0.99, 0.95)
    return policy, storage


def test_the_step_shrinks_only_the_quiet_drones_deviation_and_scores_it_under_the_narrower_gaussian() -> None:
    quiet = QuietDrones(4, 1, 0.25, "clip", torch.device("cpu"))
    mean, log_std = torch.zeros(4, 2), torch.full((4, 2), math.log(2.0))
    action = torch.tensor([[2.0, -2.0]] * 4)
    quieted, log_prob = quiet.step(action, mean, log_std)
    torch.testing.assert_close(quieted, torch.tensor([[2.0, -2.0]] * 3 + [[0.5, -0.5]]))
    scales = torch.tensor([0.0, 0.0, 0.0, math.log(0.25)])[:, None]
    expected = gaussian_log_prob(quieted, mean, log_std + scales)
    torch.testing.assert_close(log_prob, expected)
    with pytest.raises(ValueError, match="quiet drones"):
        QuietDrones(4, 4, 0.5, "clip", torch.device("cpu"))
    with pytest.raises(ValueError, match="noise scale"):
        QuietDrones(4, 1, 0.0, "clip", torch.device("cpu"))


def test_the_quiet_drones_fly_closer_to_the_mean_and_their_stored_log_probs_replay() -> None:
    policy, storage = quiet_rollout(quiet=32, scale=0.25)
    loud, hushed = slice(0, 32), slice(32, 64)
    assert (storage.noise_log_scales[:, loud] == 0).all()
    torch.testing.assert_close(storage.noise_log_scales[:, hushed], torch.full((16, 32), math.log(0.25)))
    with torch.no_grad():
        replay = policy.evaluate_sequences(
            storage.obs, storage.actions, storage.sequence_states[0], storage.episode_starts,
            noise_log_scales=storage.noise_log_scales,
        )  # fmt: skip
        blind = policy.evaluate_sequences(
            storage.obs, storage.actions, storage.sequence_states[0], storage.episode_starts
        )
    eps = storage.actions - replay.action_mean  # std 1 (log-std 0)
    assert 0.85 < float(eps[:, loud].std()) < 1.15
    assert 0.2 < float(eps[:, hushed].std()) < 0.3
    torch.testing.assert_close(replay.log_prob, storage.log_probs, atol=1e-4, rtol=1e-4)
    # without the stored scales the quiet drones' actions would be scored under the wide Gaussian:
    # 4 x (log 0.25 + (1 - 0.25^2) / 2) = -3.7 on average below their behaviour log-probabilities
    assert float((blind.log_prob - storage.log_probs)[:, hushed].mean()) < -3.0
    torch.testing.assert_close(blind.log_prob[:, loud], storage.log_probs[:, loud], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(replay.entropy, blind.entropy)  # the bonus is the policy's own entropy


def test_the_learner_scores_quiet_actions_with_their_scale() -> None:
    """Before the policy moves (a vanishing learning rate) every PPO ratio is 1: nothing is clipped."""
    policy, storage = quiet_rollout(quiet=16, scale=0.25)
    learner = PPOLearner(policy, PPOConfig(epochs=1, num_minibatches=2, learning_rate=1e-12, target_kl=None))
    result = learner.update(storage, torch.Generator().manual_seed(0))
    assert result.metrics["clip_fraction"] == 0.0
    assert abs(result.metrics["approx_kl"]) < 1e-6


def test_the_collector_defaults_to_the_settings_quiet_noise_scale() -> None:
    """One default on every path: a collector built without a scale quiets as the settings do."""
    default = signature(RolloutCollector).parameters["quiet_noise_scale"].default
    assert default == RolloutConfig().quiet_noise_scale
