"""Evaluation is pure inference: no gradient, no parameter change; exact episode counts; reproducible."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch

from navi_actor.envs.point import PointGoalEnv
from navi_actor.evaluation import evaluate_policy
from navi_actor.evaluation.baselines import RandomPolicy, ReactiveHeuristic
from navi_actor.models import NaviPolicy, PolicyConfig


@dataclass(frozen=True)
class Act:
    action: torch.Tensor
    state: torch.Tensor


class ConstantPolicy:
    """Always the same action; records whether autograd was enabled when it acted."""

    def __init__(self, action: list[float]) -> None:
        self.action = torch.tensor(action)
        self.grad_enabled: list[bool] = []

    def initial_state(self, batch_size: int, device: object = None) -> torch.Tensor:
        return torch.zeros(batch_size, 0)

    def act(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor, deterministic: bool = False
    ) -> Act:
        self.grad_enabled.append(torch.is_grad_enabled())
        return Act(self.action.expand(obs.shape[0], 4).clone(), state)


def test_evaluation_never_trains_and_is_reproducible(small_config: PolicyConfig) -> None:
    torch.manual_seed(0)
    policy = NaviPolicy(small_config)
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    env = PointGoalEnv(3, azimuth=16, elevation=8, max_steps=7)
    first = evaluate_policy(policy, env, 5, deterministic=False, seed=4)
    second = evaluate_policy(
        policy, PointGoalEnv(3, azimuth=16, elevation=8, max_steps=7), 5, deterministic=False, seed=4
    )
    assert first.columns.keys() == second.columns.keys()
    assert all(np.array_equal(first.columns[k], second.columns[k], equal_nan=True) for k in first.columns)
    assert all(torch.equal(v, policy.state_dict()[k]) for k, v in before.items())
    assert all(p.grad is None for p in policy.parameters())
    assert policy.training  # mode restored
    assert first.episodes == 5 and first.mean_length <= 7


def test_known_answers_for_a_hovering_and_a_flying_policy() -> None:
    hover = ConstantPolicy([0.0, 0.0, 0.0, 0.0])
    report = evaluate_policy(hover, PointGoalEnv(2, azimuth=16, elevation=8, max_steps=5), 4, seed=1)
    assert report.path_length == pytest.approx(0.0) and report.collision_rate == 0.0
    assert not any(hover.grad_enabled)
    # full forward at 2 m/s for 0.25 s per step, every step of the episode counted (the last one too)
    flying = ConstantPolicy([1.0, 0.0, 0.0, 0.0])
    env = PointGoalEnv(1, azimuth=16, elevation=8, max_steps=3, arena_half_size=100.0)
    env.goal_radius = 0.0  # never reached: every episode lasts 3 steps
    report = evaluate_policy(flying, env, 2, seed=1)
    assert report.mean_length == 3 and report.path_length == pytest.approx(3 * 0.5, rel=1e-5)


def heuristic_action(depth_m: torch.Tensor, horizon_m: float = 30.0) -> torch.Tensor:
    """The heuristic's action for one drone seeing ``depth_m`` [Az, El] metres (16 x 8 rays)."""
    obs = torch.zeros(1, 3, *depth_m.shape)
    obs[0, 0] = (depth_m / horizon_m).clamp(max=1.0)
    return (
        ReactiveHeuristic(horizon_m=horizon_m)
        .act(obs, torch.zeros(1, 0), torch.zeros(1, dtype=torch.bool))
        .action[0]
    )


def test_heuristic_flies_straight_at_full_speed_when_clear_even_with_floor_and_ceiling_near() -> None:
    depth = torch.full((16, 8), 30.0)
    depth[:, :2] = 1.5  # floor rays (elevation -79 and -56 degrees) close below
    depth[:, -2:] = 1.5  # and the ceiling close above: neither is in the way of level flight
    action = heuristic_action(depth)
    assert action[0] == 1.0 and action[1] == 0.0 and action[2] == 0.0 and action[3] == 0.0


def test_heuristic_turns_on_the_spot_towards_the_open_side_when_blocked() -> None:
    depth = torch.full((16, 8), 0.8)  # walled in at 0.8 m ...
    depth[3:6] = 30.0  # ... except around +90 degrees (bins 3-5)
    action = heuristic_action(depth)
    assert action[0] == 0.0 and action[3] == 1.0
    mirrored = heuristic_action(depth.flip(0).roll(1, dims=0))  # the opening at -90 degrees
    assert mirrored[0] == 0.0 and mirrored[3] == -1.0


def test_heuristic_slows_as_the_way_ahead_closes_and_drifts_towards_the_open_front() -> None:
    speeds = []
    for wall_m in (1.0, 2.0, 3.0, 4.0):
        depth = torch.full((16, 8), wall_m)
        depth[1:5] = 30.0  # open at +22.5..+90 degrees: with the +-22.5 degree window, the corridor
        # at +45 degrees (bins 1-3) is the most open direction in the front sector
        action = heuristic_action(depth)
        speeds.append(float(action[0]))
        assert action[3] > 0.0  # steers towards the open side
    assert speeds[0] == 0.0 and speeds == sorted(speeds) and speeds[-1] == 1.0


def test_heuristic_rejects_inconsistent_thresholds() -> None:
    with pytest.raises(ValueError, match="stop_m"):
        ReactiveHeuristic(stop_m=4.0, full_speed_m=2.0)
    with pytest.raises(ValueError, match="horizon_m"):
        ReactiveHeuristic(horizon_m=0.0)


def test_random_baseline_acts_in_range() -> None:
    obs = torch.zeros(64, 3, 16, 8)
    random = RandomPolicy().act(obs, torch.zeros(64, 0), torch.zeros(64, dtype=torch.bool)).action
    assert random.abs().max() <= 1.0 and random.std() > 0.3


def test_episode_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="episodes"):
        evaluate_policy(RandomPolicy(), PointGoalEnv(1), 0)


def test_a_memory_reading_policy_flies_the_plan_with_one_memory_per_drone(small_config: PolicyConfig) -> None:
    """The evaluator gives such a policy one memory for the plan, cleared at every episode start."""
    from navi_actor.memory import EpisodicMemoryConfig

    eager = EpisodicMemoryConfig(exclusion_window=0, write_every=1)
    torch.manual_seed(0)
    policy = NaviPolicy(small_config.model_copy(update={"memory_input": True, "memory": eager}))
    seen: list[Any] = []
    act = policy.act

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("memory"))
        return act(*args, **kwargs)

    policy.act = spy  # type: ignore[method-assign]
    env = PointGoalEnv(2, azimuth=16, elevation=8, max_steps=5)
    first = evaluate_policy(policy, env, 3, deterministic=True, seed=2)
    assert first.episodes == 3  # the point toy is one scene
    memory = seen[0]
    assert memory is not None and all(m is memory for m in seen)  # one memory for the whole plan
    assert len(seen) > 5  # each drone acted more often than one episode lasts...
    assert int(memory.steps.max()) <= 5  # ...so its memory was cleared at every episode start
    env = PointGoalEnv(2, azimuth=16, elevation=8, max_steps=5)
    second = evaluate_policy(policy, env, 3, deterministic=True, seed=2)
    assert all(np.array_equal(first.columns[k], second.columns[k], equal_nan=True) for k in first.columns)


def test_a_visit_reading_policy_flies_the_plan_reading_its_poses(small_config: PolicyConfig) -> None:
    """The evaluator feeds such a policy its visit features from the drones' poses, cleared at
    every episode start, and flies the same plan to the same numbers again."""
    from navi_actor.memory import VisitMemoryConfig

    eager = VisitMemoryConfig(source="positions", write_every=1, exclusion_window=0, radius=50.0, height=50.0)
    torch.manual_seed(0)
    policy = NaviPolicy(small_config.model_copy(update={"visit_input": True, "visits": eager}))
    assert policy.visit_projection is not None
    with torch.no_grad():
        policy.visit_projection.weight.normal_(0.0, 1.0)
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    act = policy.act

    def spy(obs: Any, state: Any, start: Any, **kwargs: Any) -> Any:
        seen.append((start.clone(), kwargs["visit_features"].clone()))
        return act(obs, state, start, **kwargs)

    policy.act = spy  # type: ignore[method-assign]
    env = PointGoalEnv(2, azimuth=16, elevation=8, max_steps=5)
    first = evaluate_policy(policy, env, 3, deterministic=True, seed=2)
    assert first.episodes == 3
    starts = torch.stack([start for start, _ in seen])
    features = torch.stack([f for _, f in seen])
    assert int(starts[1:].sum()) >= 1  # some drone started a second episode mid-plan
    assert float(features[starts].abs().max()) == 0.0  # its visits were cleared there
    assert float(features.max()) > 0.0  # and read its past positions elsewhere
    second = evaluate_policy(
        policy, PointGoalEnv(2, azimuth=16, elevation=8, max_steps=5), 3, deterministic=True, seed=2
    )
    assert all(np.array_equal(first.columns[k], second.columns[k], equal_nan=True) for k in first.columns)
