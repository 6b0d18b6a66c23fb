"""Open-loop rollouts (ppo.open_loop_fraction): chunk entries executed as a real-time brain does.

What must hold for PPO to stay correct: each executed action's stored log-probability is that of the
distribution it was drawn from (chunk entry ``lag`` of the tick ``lag`` steps back), the learner's
re-evaluation with the stored lags reproduces it exactly before any gradient step (ratios 1), lags
never reach across an episode start or a training-window start, what is executed is what is stored,
and the policy loss then trains the chunk head.
"""

from __future__ import annotations

import pytest
import torch
from point_rollouts import RecordingEnv

from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.config import PPOConfig
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.models.open_loop import OpenLoopSchedule, lagged_distribution
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.storage import RolloutStorage

SMALL = PolicyConfig(
    visit_input=False,
    temporal_core="gru",
    azimuth=16,
    elevation=8,
    embed_dim=32,
    vit_dim=32,
    vit_layers=1,
    action_chunk=4,
)
T, L, B = 32, 8, 4

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def open_loop_rollout(fraction: float, seed: int = 0) -> tuple[NaviPolicy, RolloutStorage, RecordingEnv]:
    torch.manual_seed(seed)
    policy = NaviPolicy(SMALL.model_copy(update={"init_log_std": -1.0}))
    with torch.no_grad():
        assert policy.actor.chunk is not None
        policy.actor.chunk.bias.uniform_(-0.5, 0.5)  # entries clearly unlike the tick's own mean
    env = RecordingEnv(B, azimuth=16, elevation=8, max_steps=11)  # episodes end inside windows
    storage = RolloutStorage(
        T, B, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size, sequence_length=L
    )
    RolloutCollector(env, policy, storage, seed=0, open_loop_fraction=fraction).collect(0.99, 0.95)
    return policy, storage, env


def test_lags_stay_inside_the_episode_the_window_and_the_chunk() -> None:
    _, storage, _ = open_loop_rollout(1.0)
    lags, starts = storage.lags, storage.episode_starts
    assert (lags > 0).float().mean() > 0.4  # most ticks execute a chunk entry
    assert int(lags.max()) == SMALL.action_chunk - 1 and int(lags.min()) == 0
    assert (lags[starts] == 0).all()  # an episode's first tick acts fresh
    positions = torch.arange(T)[:, None].expand(T, B) % L
    assert (lags <= positions).all()  # the source tick is inside the training window
    step = lags[1:] - lags[:-1]
    assert ((lags[1:] == 0) | (step == 1)).all()  # one tick further into the same chunk, or fresh


def test_stored_log_probs_rescore_exactly_with_the_lags_and_not_without() -> None:
    policy, storage, env = open_loop_rollout(1.0)
    executed = torch.stack(env.received)
    assert torch.equal(executed, policy.physics_action(storage.actions))  # stored = executed
    lagged = storage.lags > 0
    with torch.no_grad():
        for window in range(T // L):
            rows = slice(window * L, (window + 1) * L)
            args = (storage.obs[rows], storage.actions[rows], storage.sequence_states[window],
                    storage.episode_starts[rows])  # fmt: skip
            with_lags = policy.evaluate_sequences(*args, storage.lags[rows])
            own = policy.evaluate_sequences(*args)
            assert (with_lags.log_prob - storage.log_probs[rows]).abs().max() < 1e-4  # PPO ratios 1
            gap = (own.log_prob - storage.log_probs[rows]).abs()[lagged[rows]]
            assert gap.numel() == 0 or gap.max() > 1e-2  # the lags matter: another distribution


def test_ppo_on_an_open_loop_rollout_trains_the_chunk_head_through_the_policy_loss() -> None:
    policy, storage, _ = open_loop_rollout(1.0, seed=3)
    assert policy.actor.chunk is not None
    before = policy.actor.chunk.weight.detach().clone()
    config = PPOConfig(epochs=1, num_minibatches=2, chunk_coef=0.0, target_kl=None, open_loop_fraction=1.0)
    learner = PPOLearner(policy, config)
    result = learner.update(storage, torch.Generator().manual_seed(0))
    assert result.metrics["approx_kl"] < 0.05  # starts on-policy: ratios were 1
    assert not torch.equal(before, policy.actor.chunk.weight)  # only the policy loss reaches it here


def test_fraction_zero_acts_fresh_every_tick() -> None:
    _, storage, _ = open_loop_rollout(0.0)
    assert not storage.lags.any()


def test_lagged_distribution_gathers_the_source_entry_and_refuses_lags_outside_the_window() -> None:
    chunk = torch.arange(3 * 1 * 3 * 1, dtype=torch.float32).view(3, 1, 3, 1)  # [T=3, B=1, H=3, A=1]
    log_std = torch.tensor([[[0.1]], [[0.2]], [[0.3]]])
    mean, std = lagged_distribution(chunk, log_std, torch.tensor([[0], [1], [2]]))
    assert mean[:, 0, 0].tolist() == [chunk[0, 0, 0, 0], chunk[0, 0, 1, 0], chunk[0, 0, 2, 0]]
    assert torch.allclose(std[:, 0, 0], torch.tensor([0.1, 0.1, 0.1]))  # the source tick's noise
    with pytest.raises(ValueError, match="lags must be"):
        lagged_distribution(chunk, log_std, torch.tensor([[1], [0], [0]]))  # before the window


def test_a_policy_without_a_chunk_head_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="need a chunk head"):
        OpenLoopSchedule(2, 1, fraction=0.5, sequence_length=8, squash="clip", device=torch.device("cpu"))
