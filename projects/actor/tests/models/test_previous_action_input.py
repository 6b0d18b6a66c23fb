"""policy.previous_action_input: the executed action of the previous step enters the core.

What must hold: a new policy is the same function as one without the input; the recurrent state
carries the executed (clipped) action and an episode start clears it; replaying a window from its
stored start state gives the acting log-probabilities (the PPO ratio invariant), also for a window
that starts mid-episode, where only the stored state knows the previous action; open-loop rollouts
and the mirrored symmetry targets read the action that was really executed.
"""

from __future__ import annotations

import pytest
import torch
from point_rollouts import RecordingEnv

from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.config import PPOConfig
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.models.mirror import mirror_action, mirror_observation
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.storage import RolloutStorage

AZ, EL, B = 32, 8, 3

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def config(core: str = "gru", **extra: object) -> PolicyConfig:
    sizes = {"azimuth": AZ, "elevation": EL, "embed_dim": 32, "vit_dim": 32, "vit_layers": 1}
    return PolicyConfig(visit_input=False, temporal_core=core, ssm_head_dim=16, ssm_chunk=8, **sizes, **extra)  # type: ignore[arg-type]


def reading_policy(core: str = "gru", **extra: object) -> NaviPolicy:
    """A policy whose action projection is no longer zero (as after cloning or some PPO updates)."""
    torch.manual_seed(0)
    wide = {"init_log_std": 0.5, "log_std_max": 1.0}
    policy = NaviPolicy(config(core, previous_action_input=True, **wide, **extra)).eval()
    assert policy.action_projection is not None
    with torch.no_grad():
        policy.action_projection.weight.normal_(0.0, 2.0)
    return policy


def test_a_new_reading_policy_is_the_same_function_as_one_without_the_input() -> None:
    torch.manual_seed(0)
    plain = NaviPolicy(config()).eval()
    torch.manual_seed(0)
    reading = NaviPolicy(config(previous_action_input=True)).eval()
    assert reading.action_projection is not None
    assert torch.count_nonzero(reading.action_projection.weight) == 0
    assert reading.state_size == plain.state_size + 4
    state_p, state_r = plain.initial_state(B), reading.initial_state(B)
    start = torch.ones(B, dtype=torch.bool)
    for obs in torch.rand(5, B, 3, AZ, EL, generator=torch.Generator().manual_seed(1)):
        a = plain.act(obs, state_p, start, deterministic=True)
        b = reading.act(obs, state_r, start, deterministic=True)
        torch.testing.assert_close(a.action, b.action)
        torch.testing.assert_close(a.value, b.value)
        torch.testing.assert_close(b.state[:, : plain.state_size], a.state)
        state_p, state_r, start = a.state, b.state, torch.zeros_like(start)


def test_the_state_carries_the_executed_action_and_an_episode_start_clears_it() -> None:
    policy = reading_policy()
    obs = torch.rand(B, 3, AZ, EL, generator=torch.Generator().manual_seed(2))
    core = policy.core.state_size
    torch.manual_seed(3)
    out = policy.act(obs, policy.initial_state(B), torch.ones(B, dtype=torch.bool))
    assert float(out.action.abs().max()) > 1.0  # wide samples: some fall outside the physics range
    torch.testing.assert_close(out.state[:, core:], out.action.clamp(-1.0, 1.0))  # what physics ran
    remembered = torch.zeros(B, policy.state_size)
    remembered[:, core:] = torch.tensor([0.9, -0.4, 0.7, -1.0])
    start = torch.ones(B, dtype=torch.bool)
    fresh = policy.act(obs, policy.initial_state(B), start, deterministic=True)
    cleared = policy.act(obs, remembered, start, deterministic=True)
    torch.testing.assert_close(cleared.action, fresh.action)  # the start forgot the old action
    carried = policy.act(obs, remembered, ~start, deterministic=True)
    assert (carried.value - fresh.value).abs().max() > 1e-3  # without a start the action is read


@pytest.mark.parametrize("core", ["gru", "mamba2"])
def test_replaying_a_window_from_its_stored_state_gives_the_acting_log_probs(core: str) -> None:
    """The PPO ratio invariant, for a window from the episode start and one that starts mid-episode."""
    policy = reading_policy(core)
    T, cut = 12, 5
    obs = torch.rand(T, B, 3, AZ, EL, generator=torch.Generator().manual_seed(4))
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[0] = starts[8, 1] = True  # drone 1 starts a new episode inside the second window
    state, states, actions, log_probs, values = policy.initial_state(B), [], [], [], []
    torch.manual_seed(5)
    for t in range(T):
        out = policy.act(obs[t], state, starts[t])
        states.append(state), actions.append(out.action), log_probs.append(out.log_prob)
        values.append(out.value)
        state = out.state
    actions_t, log_probs_t, values_t = torch.stack(actions), torch.stack(log_probs), torch.stack(values)
    whole = policy.evaluate_sequences(obs, actions_t, states[0], starts)
    torch.testing.assert_close(whole.log_prob, log_probs_t, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(whole.value, values_t, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(whole.final_state, state, atol=1e-4, rtol=1e-4)
    later = policy.evaluate_sequences(obs[cut:], actions_t[cut:], states[cut], starts[cut:])
    torch.testing.assert_close(later.log_prob, log_probs_t[cut:], atol=1e-4, rtol=1e-4)
    forgotten = states[cut].clone()
    forgotten[:, policy.core.state_size :] = 0.0  # the same window without the stored action
    blind = policy.evaluate_sequences(obs[cut:], actions_t[cut:], forgotten, starts[cut:])
    assert (blind.value[0] - later.value[0]).abs().max() > 1e-3  # the stored action reaches step 0


def test_an_open_loop_rollout_stores_the_executed_chunk_entry_as_the_previous_action() -> None:
    policy = reading_policy(action_chunk=4)
    with torch.no_grad():
        assert policy.actor.chunk is not None
        policy.actor.chunk.bias.uniform_(-0.5, 0.5)  # entries clearly unlike the tick's own mean
    env = RecordingEnv(B, azimuth=AZ, elevation=EL, max_steps=11)
    storage = RolloutStorage(
        24, B, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size, sequence_length=8
    )
    collector = RolloutCollector(env, policy, storage, seed=0, open_loop_fraction=1.0)
    collector.collect(0.99, 0.95)
    assert (storage.lags > 0).float().mean() > 0.4  # most ticks executed a chunk entry
    executed = torch.stack(env.received)
    tail = collector.state[:, policy.core.state_size :]
    torch.testing.assert_close(tail, executed[-1])  # the last executed action, not the last draw
    replay = policy.evaluate_sequences(
        storage.obs, storage.actions, storage.sequence_states[0], storage.episode_starts, storage.lags
    )
    torch.testing.assert_close(replay.log_prob, storage.log_probs, atol=1e-4, rtol=1e-4)


def test_the_mirrored_symmetry_targets_read_the_mirrored_previous_action() -> None:
    policy = reading_policy()
    env = RecordingEnv(B, azimuth=AZ, elevation=EL, max_steps=1000)  # no episode starts after step 0
    storage = RolloutStorage(
        16, B, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size, sequence_length=8
    )
    collector = RolloutCollector(env, policy, storage, seed=0)
    collector.collect(0.99, 0.95)
    collector.collect(0.99, 0.95)  # the second rollout starts mid-episode: its state holds an action
    state0 = storage.sequence_states[0]
    core = policy.core.state_size
    assert float(state0[:, core:].abs().min()) > 0.0
    mirrored = policy.mirror_state(state0)
    torch.testing.assert_close(mirrored[:, :core], state0[:, :core])
    torch.testing.assert_close(mirrored[:, core:], mirror_action(state0[:, core:]))
    learner = PPOLearner(policy, PPOConfig(symmetry_coef=0.5))
    expected = policy.evaluate_sequences(
        mirror_observation(storage.obs), mirror_action(storage.actions), mirrored, storage.episode_starts
    )
    torch.testing.assert_close(learner._mirrored_means(storage), mirror_action(expected.action_mean))
