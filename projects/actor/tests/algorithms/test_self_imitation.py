"""Self-imitation (ppo.self_imitation_coef): the mean action learns the executed actions that paid."""

from __future__ import annotations

import pytest
import torch
from point_rollouts import RecordingEnv, collected

from navi_actor.algorithms.losses import self_imitation_loss
from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.algorithms.update_metrics import SELF_IMITATION_METRIC
from navi_actor.config import PPOConfig
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.storage import RolloutStorage

SMALL = PolicyConfig(
    visit_input=False, temporal_core="gru", azimuth=16, elevation=8, embed_dim=32, vit_dim=32, vit_layers=1
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_loss_weights_positive_advantages_and_clips_the_actions() -> None:
    mean = torch.zeros(3, 4)
    actions = torch.tensor([[2.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5], [1.0, 1.0, 1.0, 1.0]])
    advantages = torch.tensor([2.0, -1.0, 0.0])
    # only the first step counts; its 2.0 reached the physics as 1.0: 2 x 1^2 over 3 x 4 entries
    assert self_imitation_loss(mean, actions, advantages).item() == pytest.approx(2.0 / 12)
    assert self_imitation_loss(mean, actions, -advantages.abs()).item() == 0.0


def test_a_tanh_policy_imitates_in_its_raw_space() -> None:
    """A tanh policy executed tanh(2.0): its raw mean is pulled toward 2.0, not toward a clip at 1."""
    mean, actions = torch.zeros(1, 4), torch.tensor([[2.0, 0.0, 0.0, 0.0]])
    loss = self_imitation_loss(mean, actions, torch.tensor([1.0]), squash="tanh")
    assert loss.item() == pytest.approx(4.0 / 4, rel=1e-3)
    with pytest.raises(ValueError):
        self_imitation_loss(mean, actions, torch.tensor([1.0]), squash="sigmoid")


def _constant_action_policy() -> NaviPolicy:
    torch.manual_seed(4)
    policy = NaviPolicy(SMALL)
    with torch.no_grad():
        policy.actor.mean.weight.mul_(0.01)
        policy.actor.mean.bias.zero_()
    return policy


def _turn_after_training(coef: float) -> tuple[float, list[float]]:
    """Mean yaw after six updates on a rollout whose rewarded steps turned left (0.8) and whose
    others turned right (-0.8); and the self-imitation loss per update (empty when off)."""
    policy = _constant_action_policy()
    storage = collected(policy)
    storage.actions[..., 3] = torch.where(torch.arange(storage.num_steps)[:, None] % 2 == 0, 0.8, -0.8)
    storage.advantages.copy_(torch.where(storage.actions[..., 3] > 0, 1.0, 0.0))
    with torch.no_grad():  # the edited actions' own log-probabilities: PPO ratios start at 1
        storage.log_probs.copy_(policy.evaluate_sequences(
            storage.obs, storage.actions, storage.sequence_states[0], storage.episode_starts
        ).log_prob)  # fmt: skip
    config = PPOConfig(
        epochs=2, num_minibatches=2, learning_rate=3e-3, target_kl=None, entropy_coef=0.0,
        symmetry_coef=0.0, self_imitation_coef=coef,
    )  # fmt: skip
    learner = PPOLearner(policy, config)
    results = [learner.update(storage, torch.Generator().manual_seed(i)).metrics for i in range(6)]
    obs = storage.obs.flatten(0, 1)
    starts = torch.ones(len(obs), dtype=torch.bool)
    turn = policy.act(obs, policy.initial_state(len(obs)), starts).action_mean[:, 3].mean().item()
    return turn, [r[SELF_IMITATION_METRIC] for r in results if SELF_IMITATION_METRIC in r]


def test_the_mean_moves_further_toward_the_actions_with_positive_advantage() -> None:
    plain_turn, none = _turn_after_training(0.0)
    imitating_turn, losses = _turn_after_training(4.0)
    assert PPOConfig().self_imitation_coef == 0.0 and none == []  # off by default, then not reported
    assert losses[-1] < losses[0]
    assert imitating_turn > plain_turn + 0.1, (plain_turn, imitating_turn)  # PPO alone moves less
    assert imitating_turn < 0.8 + 0.05  # toward the executed (clipped) turn, not beyond it


@pytest.mark.parametrize("rewarded", ["lagged", "fresh"])
def test_open_loop_steps_are_not_imitated(rewarded: str) -> None:
    """A step that executed an earlier tick's chunk entry (ppo.open_loop_fraction) is no target for
    this tick's own mean: advantage only on such steps gives a zero loss, on fresh steps a positive one."""
    torch.manual_seed(0)
    policy = NaviPolicy(SMALL.model_copy(update={"action_chunk": 4}))
    env = RecordingEnv(4, azimuth=16, elevation=8, max_steps=11)
    storage = RolloutStorage(
        32, 4, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size, sequence_length=8
    )
    RolloutCollector(env, policy, storage, seed=0, open_loop_fraction=1.0).collect(0.99, 0.95)
    lagged = storage.lags > 0
    assert lagged.any() and (~lagged).any()
    storage.advantages.copy_((lagged if rewarded == "lagged" else ~lagged).float())
    config = PPOConfig(
        epochs=1, num_minibatches=2, target_kl=None, open_loop_fraction=1.0, self_imitation_coef=1.0
    )
    loss = (
        PPOLearner(policy, config)
        .update(storage, torch.Generator().manual_seed(0))
        .metrics[SELF_IMITATION_METRIC]
    )
    assert (loss == 0.0) if rewarded == "lagged" else (loss > 0.0), loss
