"""Evaluation is pure inference: no gradient, no parameter change; exact episode counts; reproducible."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from navi_actor.evaluation import evaluate_policy
from navi_actor.evaluation.baselines import RandomPolicy, ReactiveHeuristic
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.runners.point_env import PointGoalEnv

SMALL = PolicyConfig(temporal_core="gru", azimuth=16, elevation=8, embed_dim=32, vit_dim=32, vit_layers=1)


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


def test_evaluation_never_trains_and_is_reproducible() -> None:
    torch.manual_seed(0)
    policy = NaviPolicy(SMALL)
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    env = PointGoalEnv(3, azimuth=16, elevation=8, max_steps=7)
    first = evaluate_policy(policy, env, 5, deterministic=False, seed=4)
    second = evaluate_policy(
        policy, PointGoalEnv(3, azimuth=16, elevation=8, max_steps=7), 5, deterministic=False, seed=4
    )
    assert first == second
    assert all(torch.equal(v, policy.state_dict()[k]) for k, v in before.items())
    assert all(p.grad is None for p in policy.parameters())
    assert policy.training  # mode restored
    assert first.episodes == 5 and first.mean_length <= 7


def test_known_answers_for_a_hovering_and_a_flying_policy() -> None:
    hover = ConstantPolicy([0.0, 0.0, 0.0, 0.0])
    report = evaluate_policy(hover, PointGoalEnv(2, azimuth=16, elevation=8, max_steps=5), 4, seed=1)
    assert report.path_length == pytest.approx(0.0) and report.collision_rate == 0.0
    assert not any(hover.grad_enabled)
    # full forward at 2 m/s for 0.25 s per step; the episode's last step is not counted (respawn)
    flying = ConstantPolicy([1.0, 0.0, 0.0, 0.0])
    env = PointGoalEnv(1, azimuth=16, elevation=8, max_steps=3, arena_half_size=100.0)
    env.goal_radius = 0.0  # never reached: every episode lasts 3 steps
    report = evaluate_policy(flying, env, 2, seed=1)
    assert report.mean_length == 3 and report.path_length == pytest.approx(2 * 0.5, rel=1e-5)


def test_baselines_act_in_range_and_heuristic_turns_to_open_space() -> None:
    obs = torch.zeros(2, 3, 16, 8)
    obs[0, 0, 4] = 1.0  # drone 0: open space at +90 degrees
    obs[1, 0, 0] = 1.0  # drone 1: open space straight ahead
    obs[1, 0, 1] = 1.0
    obs[1, 0, 15] = 1.0
    action = ReactiveHeuristic().act(obs, torch.zeros(2, 0), torch.zeros(2, dtype=torch.bool)).action
    assert action[0, 3] > 0.9 and action[0, 0] == 0.0
    assert action[1, 0] > 0.9 and action[1, 3] == 0.0
    random = RandomPolicy().act(obs, torch.zeros(2, 0), torch.zeros(2, dtype=torch.bool)).action
    assert random.abs().max() <= 1.0


def test_episode_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="episodes"):
        evaluate_policy(RandomPolicy(), PointGoalEnv(1), 0)
