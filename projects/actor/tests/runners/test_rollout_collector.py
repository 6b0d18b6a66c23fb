"""Rollout collection: clipped actions reach physics, raw samples reach the learner, masks line up."""

from __future__ import annotations

import torch
from point_rollouts import RecordingEnv

from navi_actor.envs.point import PointGoalEnv, PointStep
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.storage import RolloutStorage


def make(max_steps: int = 5) -> tuple[RecordingEnv, NaviPolicy, RolloutStorage, RolloutCollector]:
    torch.manual_seed(0)
    env = RecordingEnv(3, azimuth=16, elevation=8, max_steps=max_steps)
    wide = PolicyConfig(
        visit_input=False,
        temporal_core="gru", azimuth=16, elevation=8, embed_dim=32, vit_dim=32, vit_layers=1,
        init_log_std=1.0, log_std_max=1.0,
    )  # fmt: skip
    policy = NaviPolicy(wide)
    storage = RolloutStorage(
        16, 3, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size, sequence_length=8
    )
    return env, policy, storage, RolloutCollector(env, policy, storage, seed=0)


def test_physics_sees_clipped_actions_and_the_learner_the_raw_samples() -> None:
    env, _, storage, collector = make()
    collector.collect(0.99, 0.95)
    executed = torch.stack(env.received)  # [T, B, 4]
    assert executed.abs().max() <= 1.0
    assert storage.actions.abs().max() > 1.0, "std e^1 must produce samples beyond [-1, 1]"
    torch.testing.assert_close(executed, storage.actions.clamp(-1.0, 1.0))


def test_episode_starts_follow_the_previous_step_and_only_truncations_bootstrap() -> None:
    _, _, storage, collector = make(max_steps=5)
    collector.collect(0.99, 0.95)
    done = storage.terminated | storage.truncated
    assert storage.truncated.any()
    assert storage.episode_starts[0].all()  # the first rollout starts every episode
    assert torch.equal(storage.episode_starts[1:], done[:-1])
    assert (storage.final_values[~storage.truncated] == 0).all()
    assert (storage.final_values[storage.truncated] != 0).all()
    first_state = storage.sequence_states[0]
    assert (first_state == 0).all()  # the initial state is the policy's zero state
    collector.collect(0.99, 0.95)  # the next rollout continues the live episodes and state
    assert torch.equal(storage.episode_starts[0], done[-1])


class SceneTaggedEnv(PointGoalEnv):
    """Reports a per-drone scene index the way SdfDagBackend does."""

    def step(self, actions: torch.Tensor) -> PointStep:
        step = super().step(actions)
        step.info["scene_index"] = torch.arange(self.num_actors, dtype=torch.float32) + 7.0
        return step


def test_update_record_carries_active_actors_and_actor0_scene_for_the_dashboard() -> None:
    from navi_actor.algorithms.update_metrics import UpdateResult
    from navi_actor.runners.progress import TrainingCounters, update_record

    torch.manual_seed(0)
    env = SceneTaggedEnv(3, azimuth=16, elevation=8, max_steps=5)
    _, policy, storage, _ = make()
    stats = RolloutCollector(env, policy, storage, seed=0).collect(0.99, 0.95)
    assert stats.num_actors == 3
    assert stats.scene_of_actor0 == 7.0

    result = UpdateResult(metrics={}, timings={}, epochs_run=1, early_stopped=False, learning_rate=1e-3)
    record = update_record(TrainingCounters(), stats, result, 1.0)
    assert record["charts/active_actors"] == 3.0
    assert record["charts/scene"] == 7.0


def test_a_tanh_policy_executes_the_squashed_sample_and_stores_the_raw_one() -> None:
    torch.manual_seed(0)
    env = RecordingEnv(3, azimuth=16, elevation=8, max_steps=5)
    config = PolicyConfig(
        visit_input=False,
        temporal_core="gru", azimuth=16, elevation=8, embed_dim=32, vit_dim=32, vit_layers=1,
        init_log_std=1.0, log_std_max=1.0, action_squash="tanh",
    )  # fmt: skip
    policy = NaviPolicy(config)
    storage = RolloutStorage(
        16, 3, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size, sequence_length=8
    )
    RolloutCollector(env, policy, storage, seed=0).collect(0.99, 0.95)
    executed = torch.stack(env.received)
    assert storage.actions.abs().max() > 1.0 and executed.abs().max() <= 1.0
    inside = storage.actions.abs() < 9.0  # beyond, float32 tanh rounds to exactly +-1
    assert (executed[inside].abs() < 1.0).all()
    assert torch.equal(executed, torch.tanh(storage.actions))
    evaluation = policy.evaluate_sequences(
        storage.obs, storage.actions, storage.sequence_states[0], storage.episode_starts
    )
    assert (evaluation.log_prob - storage.log_probs).abs().max() < 1e-4  # stored log-probs rescore exactly


def test_a_memory_reading_policy_shares_the_shapers_memory_and_learns_from_the_stored_scores() -> None:
    """One memory: each step is scored and remembered once (not again by the shaper, nor by the
    bootstrap values); the stored scores replay the acting log-probs exactly."""
    from navi_actor.config import ActorSettings
    from navi_actor.memory import EpisodicMemoryConfig
    from navi_actor.runners.shaping_adapter import build_actor_shaping

    memory_cfg = EpisodicMemoryConfig(exclusion_window=0, write_every=1)
    settings = ActorSettings(
        policy={"memory_input": True, "visit_input": False, "temporal_core": "gru", "azimuth": 16,
                "elevation": 8, "embed_dim": 32, "vit_dim": 32, "vit_layers": 1},
        shaping={"memory": memory_cfg.model_dump()},
    )  # fmt: skip
    torch.manual_seed(0)
    policy = NaviPolicy(settings.policy_config())
    assert policy.cfg.memory == memory_cfg  # the trainer's one memory setting reached the policy
    assert policy.memory_projection is not None
    with torch.no_grad():
        policy.memory_projection.weight.normal_(0.0, 2.0)
    env = PointGoalEnv(3, azimuth=16, elevation=8, max_steps=1000)  # none truncated in 16 steps
    storage = RolloutStorage(
        16, 3, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size, sequence_length=8
    )
    shaping = build_actor_shaping(settings, policy, 3, torch.device("cpu"))
    collector = RolloutCollector(env, policy, storage, shaping=shaping.reward, seed=0, memory=shaping.memory)
    collector.collect(0.99, 0.95)
    assert shaping.memory is not None and collector.memory is shaping.memory
    # observed once per step, by the policy: the steps since each drone's last episode start (the
    # point toy ends an episode where a drone reaches its goal)
    rows = torch.arange(16)[:, None].expand(16, 3)
    last_start = torch.where(storage.episode_starts.bool(), rows, torch.zeros_like(rows)).max(dim=0).values
    assert shaping.memory.steps.tolist() == (16 - last_start).tolist()
    later = ~storage.episode_starts.bool()  # an episode's first view has an empty memory (score 0)
    assert float(storage.loop_scores[later].min()) > 0.0  # the point toy's views look alike: scores
    replay = policy.evaluate_sequences(
        storage.obs, storage.actions, storage.sequence_states[0], storage.episode_starts,
        loop_scores=storage.loop_scores,
    )  # fmt: skip
    torch.testing.assert_close(replay.log_prob, storage.log_probs, atol=1e-4, rtol=1e-4)


def test_correlated_noise_reaches_the_stored_actions_and_their_log_probs_replay() -> None:
    """rollout.noise_correlation: consecutive stored actions share their noise, and the learner's
    replay of the stored actions gives the acting log-probs (PPO's first ratio is 1)."""
    torch.manual_seed(0)
    env = PointGoalEnv(64, azimuth=16, elevation=8, max_steps=1000)
    _, policy, _, _ = make()
    lag1 = {}
    for correlation in (0.0, 0.9):
        storage = RolloutStorage(
            16, 64, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size,
            sequence_length=8,
        )  # fmt: skip
        RolloutCollector(env, policy, storage, seed=0, noise_correlation=correlation).collect(0.99, 0.95)
        with torch.no_grad():
            replay = policy.evaluate_sequences(
                storage.obs, storage.actions, storage.sequence_states[0], storage.episode_starts
            )
            std = policy.actor.log_std_param.clamp(*policy.actor.log_std_range).exp()  # global mode
        torch.testing.assert_close(replay.log_prob, storage.log_probs, atol=1e-4, rtol=1e-4)
        eps = (storage.actions - replay.action_mean) / std
        same_episode = ~storage.episode_starts[1:].bool()
        lag1[correlation] = float((eps[1:] * eps[:-1])[same_episode].mean())
    assert abs(lag1[0.0]) < 0.1
    assert lag1[0.9] > 0.75
