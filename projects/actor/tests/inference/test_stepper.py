"""PolicyStepper is the trainer's acting step with memory; policy sources resolve as documented."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from structlog.testing import capture_logs

from navi_actor.checkpoints import Checkpoint, CheckpointError, save_checkpoint
from navi_actor.envs.point import PointGoalEnv
from navi_actor.inference import PolicyStepper, build_policy, resolve_policy_source
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.registry import ModelRegistry

pytestmark = pytest.mark.usefixtures("uncached_loggers")


@pytest.mark.parametrize(("core", "squash"), [("gru", "clip"), ("mamba2", "clip"), ("gru", "tanh")])
def test_stepper_matches_the_trainers_acting_loop(
    core: str, squash: str, small_policy: Callable[..., NaviPolicy]
) -> None:
    """Oracle: policy.act with state + episode-start masks, clamp (or tanh) before physics."""
    policy = small_policy(core, action_squash=squash)
    env_a, env_b = PointGoalEnv(3, max_steps=7), PointGoalEnv(3, max_steps=7)
    obs_a, obs_b = env_a.reset(5), env_b.reset(5)
    stepper = PolicyStepper(policy, 3, deterministic=True)
    state = policy.initial_state(3)
    episode_start = torch.ones(3, dtype=torch.bool)
    ended = 0
    for _ in range(20):
        acted = policy.act(obs_b, state, episode_start, deterministic=True)
        expected = acted.action.clamp(-1.0, 1.0) if squash == "clip" else torch.tanh(acted.action)
        actions = stepper.act(obs_a)
        assert torch.equal(actions, expected)
        step_a, step_b = env_a.step(actions), env_b.step(expected)
        stepper.end_episodes(step_a.terminated | step_a.truncated)
        state, episode_start = acted.state, step_b.terminated | step_b.truncated
        obs_a, obs_b = step_a.obs.clone(), step_b.obs.clone()
        ended += int(episode_start.sum())
    assert ended >= 3  # episodes really ended (max_steps=7), so the resets were exercised


def test_memory_is_reset_only_for_drones_whose_episode_ended(small_policy: Callable[..., NaviPolicy]) -> None:
    policy = small_policy("gru")
    env = PointGoalEnv(2)
    obs = env.reset(1)
    stepper = PolicyStepper(policy, 2, deterministic=True)
    for _ in range(5):
        stepper.act(obs)
        obs = env.step(torch.zeros(2, 4)).obs.clone()
    stepper.end_episodes(torch.tensor([False, True]))
    with_memory = stepper.act(obs)
    fresh = PolicyStepper(policy, 2, deterministic=True).act(obs)
    assert torch.equal(with_memory[1], fresh[1])  # drone 1 starts over
    assert not torch.equal(with_memory[0], fresh[0])  # drone 0 still remembers


def test_sampled_actions_never_leave_the_physics_range(small_policy: Callable[..., NaviPolicy]) -> None:
    policy = small_policy("gru", init_log_std=1.0, log_std_max=1.0)
    stepper = PolicyStepper(policy, 64, deterministic=False)
    actions = stepper.act(torch.rand(64, 3, 32, 8))
    assert actions.abs().max() <= 1.0
    assert (actions.abs() == 1.0).any()  # std e^1 makes clipping certain to matter


def test_stepper_resizes_for_a_new_batch(small_policy: Callable[..., NaviPolicy]) -> None:
    stepper = PolicyStepper(small_policy(), 2)
    stepper.reset(5)
    assert stepper.act(torch.rand(5, 3, 32, 8)).shape == (5, 4)
    with pytest.raises(ValueError, match="does not match 5 drones"):
        stepper.act(torch.rand(2, 3, 32, 8))


def _save(policy: NaviPolicy, path: Path) -> Path:
    return save_checkpoint(Checkpoint(model=policy.state_dict(), policy_config=policy.cfg, step_id=7), path)


def test_policy_sources_checkpoint_registry_and_fresh(
    tmp_path: Path, small_policy: Callable[..., NaviPolicy]
) -> None:
    policy = small_policy("gru", seed=3)
    path = _save(policy, tmp_path / "a.pt")
    obs = torch.rand(2, 3, 32, 8)
    explicit = resolve_policy_source(path, tmp_path / "models")
    assert explicit.policy_id == "a"
    loaded = build_policy(explicit, PolicyConfig(), (3, 32, 8))
    start = torch.ones(2, dtype=torch.bool)
    state = policy.initial_state(2)
    assert torch.equal(
        loaded.act(obs, state, start, deterministic=True).action,
        policy.act(obs, state, start, deterministic=True).action,
    )
    with capture_logs() as logs:
        fresh = resolve_policy_source(None, tmp_path / "models")
    assert fresh.checkpoint is None and fresh.policy_id == "fresh"
    assert any(entry["event"] == "actor.inference.fresh_policy" for entry in logs)
    ModelRegistry(tmp_path / "models").promote(path)
    latest = resolve_policy_source(None, tmp_path / "models")
    assert latest.policy_id == "v001" and latest.checkpoint is not None


def test_fresh_policies_are_reproducible_and_sized_from_the_observation() -> None:
    source = resolve_policy_source(None, Path("/nonexistent/models"))
    config = PolicyConfig(visit_input=False, temporal_core="gru", embed_dim=32, vit_dim=32, vit_layers=1)
    first = build_policy(source, config, (3, 32, 8), seed=4)
    second = build_policy(source, config, (3, 32, 8), seed=4)
    assert (first.cfg.azimuth, first.cfg.elevation) == (32, 8)
    for a, b in zip(first.state_dict().values(), second.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_checkpoint_for_another_sensor_is_refused_clearly(
    tmp_path: Path, small_policy: Callable[..., NaviPolicy]
) -> None:
    path = _save(small_policy(), tmp_path / "b.pt")
    source = resolve_policy_source(path, tmp_path)
    with pytest.raises(ValueError, match=r"expects observations \(3, 32, 8\).*sends \(3, 64, 16\)"):
        build_policy(source, PolicyConfig(), (3, 64, 16))
    (tmp_path / "broken.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError):
        resolve_policy_source(tmp_path / "broken.pt", tmp_path)


def test_a_memory_reading_policy_acts_with_its_memory_as_in_training(
    small_policy: Callable[..., NaviPolicy],
) -> None:
    """Oracle: policy.act with a memory carried as the collector carries it; reset forgets it."""
    from navi_actor.memory import EpisodicMemoryConfig

    eager = EpisodicMemoryConfig(exclusion_window=0, write_every=1)
    policy = small_policy("gru", memory_input=True, memory=eager)
    with torch.no_grad():
        policy.memory_projection.weight.normal_(0.0, 2.0)
    env_a, env_b = PointGoalEnv(2, max_steps=6), PointGoalEnv(2, max_steps=6)
    obs_a, obs_b = env_a.reset(3), env_b.reset(3)
    stepper = PolicyStepper(policy, 2, deterministic=True)
    memory, state = policy.new_memory(2), policy.initial_state(2)
    episode_start = torch.ones(2, dtype=torch.bool)
    for _ in range(10):
        acted = policy.act(obs_b, state, episode_start, deterministic=True, memory=memory)
        actions = stepper.act(obs_a)
        assert torch.equal(actions, acted.action.clamp(-1.0, 1.0))
        step_a, step_b = env_a.step(actions), env_b.step(actions)
        stepper.end_episodes(step_a.terminated | step_a.truncated)
        state, episode_start = acted.state, step_b.terminated | step_b.truncated
        obs_a, obs_b = step_a.obs.clone(), step_b.obs.clone()
    assert stepper.memory is not None and int(stepper.memory.steps.max()) > 0
    stepper.reset(3)
    assert stepper.memory is not None and stepper.memory.steps.tolist() == [0, 0, 0]
