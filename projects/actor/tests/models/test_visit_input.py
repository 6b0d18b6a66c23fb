"""policy.visit_input: the visit memory's features enter the core; acting and learning agree on them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from env_bridge import observation_message
from point_rollouts import RecordingEnv

from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.config import PPOConfig
from navi_actor.envs.point import PointGoalEnv
from navi_actor.inference.policy_source import PolicySource
from navi_actor.inference.stepper import PolicyStepper
from navi_actor.memory import VisitMemoryConfig
from navi_actor.memory.visits import mirror_visit_features
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.models.mirror import mirror_action, mirror_observation
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.service.brain_core import BrainCore
from navi_actor.storage import RolloutStorage

AZ, EL, B = 16, 8, 3
EAGER = VisitMemoryConfig(source="positions", write_every=1, exclusion_window=0, radius=20.0, height=50.0)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def config(core: str = "gru", **extra: object) -> PolicyConfig:
    """A small policy; without the visit input unless ``extra`` turns it on."""
    sizes = {"azimuth": AZ, "elevation": EL, "embed_dim": 32, "vit_dim": 32, "vit_layers": 1}
    settings = {"visit_input": False, **extra}
    return PolicyConfig(temporal_core=core, ssm_head_dim=16, ssm_chunk=8, **sizes, **settings)  # type: ignore[arg-type]


def reading_policy(core: str = "gru", source: str = "positions") -> NaviPolicy:
    """A visit-reading policy whose projection is no longer zero (as after cloning or PPO)."""
    torch.manual_seed(0)
    wide = {"init_log_std": 0.0, "log_std_max": 1.0}
    visits = EAGER.model_copy(update={"source": source})
    policy = NaviPolicy(config(core, visit_input=True, visits=visits, **wide)).eval()
    assert policy.visit_projection is not None
    with torch.no_grad():
        policy.visit_projection.weight.normal_(0.0, 2.0)
    return policy


def collected(policy: NaviPolicy, max_steps: int = 1000) -> tuple[RolloutStorage, RolloutCollector]:
    env = PointGoalEnv(B, azimuth=AZ, elevation=EL, max_steps=max_steps)
    storage = RolloutStorage(
        16, B, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size,
        sequence_length=8, visit_features=EAGER.features,
    )  # fmt: skip
    collector = RolloutCollector(env, policy, storage, seed=0)
    collector.collect(0.99, 0.95)
    return storage, collector


def test_a_new_reading_policy_is_the_same_function_as_one_without_the_input() -> None:
    torch.manual_seed(0)
    plain = NaviPolicy(config()).eval()
    torch.manual_seed(0)
    reading = NaviPolicy(config(visit_input=True, visits=EAGER)).eval()
    assert reading.visit_projection is not None
    assert torch.count_nonzero(reading.visit_projection.weight) == 0
    obs, start = torch.rand(B, 3, AZ, EL), torch.ones(B, dtype=torch.bool)
    visits = torch.rand(B, EAGER.features)
    a = plain.act(obs, plain.initial_state(B), start, deterministic=True)
    b = reading.act(obs, reading.initial_state(B), start, deterministic=True, visit_features=visits)
    torch.testing.assert_close(a.action, b.action)
    torch.testing.assert_close(a.value, b.value)


def test_acting_without_the_features_is_refused() -> None:
    policy = reading_policy()
    obs, start = torch.rand(B, 3, AZ, EL), torch.ones(B, dtype=torch.bool)
    with pytest.raises(ValueError, match="visit_input"):
        policy.act(obs, policy.initial_state(B), start)
    with pytest.raises(ValueError, match="visit features has shape"):
        policy.act(obs, policy.initial_state(B), start, visit_features=torch.zeros(B, 3))
    assert NaviPolicy(config()).new_visit_memory(B) is None  # a policy without the input needs none


@pytest.mark.parametrize("source", ["positions", "frontiers"])
def test_the_stepper_reads_the_visit_memory_as_the_evaluator_does(source: str) -> None:
    """Oracle: the evaluator's acting (a visit memory fed ``env.poses()`` and the observation, then
    ``act(visit_features=)``); the stepper (infer, the brains) must act the same with the poses."""
    policy = reading_policy(source=source)
    env_a, env_b = (
        PointGoalEnv(B, azimuth=AZ, elevation=EL, max_steps=9),
        PointGoalEnv(B, azimuth=AZ, elevation=EL, max_steps=9),
    )
    obs_a, obs_b = env_a.reset(5), env_b.reset(5)
    stepper, blind = PolicyStepper(policy, B), PolicyStepper(policy, B)
    assert stepper.needs_poses
    memory = policy.new_visit_memory(B)
    assert memory is not None
    state, start = policy.initial_state(B), torch.ones(B, dtype=torch.bool)
    differs = ended = 0
    for _ in range(24):
        features = memory.observe(*env_b.poses(), start, obs_b)
        acted = policy.act(obs_b, state, start, deterministic=True, visit_features=features)
        expected = acted.action.clamp(-1.0, 1.0)
        actions = stepper.act(obs_a, env_a.poses())
        assert torch.equal(actions, expected)
        elsewhere = blind.act(obs_a, (torch.full((B, 3), 40.0), torch.zeros(B)))  # poses that lie
        differs += int(not torch.equal(elsewhere, actions))
        step_a, step_b = env_a.step(actions), env_b.step(expected)
        stepper.end_episodes(step_a.terminated | step_a.truncated)
        blind.end_episodes(step_a.terminated | step_a.truncated)
        state, start = acted.state, step_b.terminated | step_b.truncated
        obs_a, obs_b = step_a.obs.clone(), step_b.obs.clone()
        ended += int(start.sum())
    assert ended >= B  # episodes ended, so the memory's per-drone resets were exercised
    assert differs > 0  # the poses reach the policy: false ones change the actions


def test_the_stepper_refuses_to_act_without_the_poses() -> None:
    stepper = PolicyStepper(reading_policy(), B)
    obs = torch.rand(B, 3, AZ, EL)
    with pytest.raises(ValueError, match="needs the drones' poses"):
        stepper.act(obs)
    with pytest.raises(ValueError, match=r"poses have shapes \(3, 2\) and \(3,\)"):
        stepper.act(obs, (torch.zeros(B, 2), torch.zeros(B)))
    assert not PolicyStepper(NaviPolicy(config()), B).needs_poses
    with pytest.raises(ValueError, match="needs the drones' poses"):  # the brain, on a message without them
        BrainCore(PolicySource(None, "fresh", None), reading_policy().cfg).act(
            observation_message(obs, np.arange(B, dtype=np.int32), np.zeros(B, np.int64), 0)
        )


def test_the_collector_feeds_the_poses_and_the_stored_features_replay_the_acting_log_probs() -> None:
    policy = reading_policy()
    storage, collector = collected(policy)
    assert collector.visits is not None
    assert collector.visits.steps.tolist() == [16, 16, 16]  # remembered once per step, not by the bootstrap
    assert float(storage.visit_features[2:].max()) > 0.0  # the drones read their own past positions
    replay = policy.evaluate_sequences(
        storage.obs, storage.actions, storage.sequence_states[0], storage.episode_starts,
        visit_features=storage.visit_features,
    )  # fmt: skip
    torch.testing.assert_close(replay.log_prob, storage.log_probs, atol=1e-4, rtol=1e-4)
    blind = policy.evaluate_sequences(
        storage.obs, storage.actions, storage.sequence_states[0], storage.episode_starts,
        visit_features=torch.zeros_like(storage.visit_features),
    )  # fmt: skip
    assert (blind.value - replay.value).abs().max() > 1e-3  # the features really reach the core


def test_an_episode_start_clears_the_visits_the_collector_feeds() -> None:
    policy = reading_policy()
    storage, _ = collected(policy, max_steps=5)
    starts = storage.episode_starts
    assert bool(starts[1:].any())
    assert float(storage.visit_features[starts].abs().max()) == 0.0  # a new episode has no past


def test_ppo_replays_the_features_and_mirrors_them_for_the_symmetry_targets() -> None:
    policy = reading_policy()
    storage, _ = collected(policy)
    learner = PPOLearner(policy, PPOConfig(symmetry_coef=0.5, epochs=1, num_minibatches=1))
    expected = policy.evaluate_sequences(
        mirror_observation(storage.obs), mirror_action(storage.actions), storage.sequence_states[0],
        storage.episode_starts,
        visit_features=mirror_visit_features(storage.visit_features, policy.cfg.visits.sectors),
    )  # fmt: skip
    torch.testing.assert_close(learner._mirrored_means(storage), mirror_action(expected.action_mean))
    result = learner.update(storage)
    assert result.metrics["approx_kl"] >= 0.0
    assert policy.visit_projection is not None


def test_storage_without_the_input_keeps_no_features() -> None:
    env = RecordingEnv(B, azimuth=AZ, elevation=EL, max_steps=5)
    storage = RolloutStorage(
        8, B, obs_shape=env.observation_shape, action_dim=4, state_size=4, sequence_length=8
    )
    assert tuple(storage.visit_features.shape) == (8, B, 0)
