"""The frontier explorer as an evaluation baseline: the policy protocol with a pose, new maps at episode
starts, actions in range."""

from __future__ import annotations

import pytest
import torch

from navi_actor.evaluation.baselines import FrontierPolicy
from navi_environment.config import EnvironmentSettings, SensorSettings

SETTINGS = EnvironmentSettings(sensor=SensorSettings(azimuth_bins=32, elevation_bins=8))


def open_space(batch: int) -> torch.Tensor:
    """Observations of empty space: every ray misses (depth 1, not valid)."""
    obs = torch.zeros(batch, 3, 32, 8)
    obs[:, 0] = 1.0
    return obs


def test_frontier_policy_flies_towards_unknown_space_and_restarts_maps_at_episode_starts() -> None:
    policy = FrontierPolicy(SETTINGS, 2)
    assert FrontierPolicy.uses_pose
    state = policy.initial_state(2)
    position = torch.tensor([[0.0, 0.0, 1.5], [5.0, 5.0, 1.5]])
    yaw = torch.zeros(2)
    start = torch.ones(2, dtype=torch.bool)
    result = policy.act(open_space(2), state, start, pose=(position, yaw))
    assert result.action.shape == (2, 4) and result.state.shape == (2, 0)
    assert float(result.action.abs().max()) <= 1.0
    assert (result.action[:, [0, 2]].abs().sum(dim=1) > 0.1).all()  # both drones head for a frontier
    maps = policy.planner.maps
    known = int((maps.grid[0] != 0).sum())
    assert known > 0
    half = 0.5 * maps.size * maps.cell_m
    moved = position + torch.tensor([[0.1, 0.0, 0.0], [0.1, 0.0, 0.0]])
    policy.act(open_space(2), state, torch.tensor([False, True]), pose=(moved, yaw))
    assert torch.allclose(maps.origin[1], moved[1, :2] - half)  # episode start: a new map here
    assert torch.allclose(maps.origin[0], position[0, :2] - half)  # the other drone keeps its map
    assert int((maps.grid[0] != 0).sum()) >= known


def test_frontier_policy_needs_the_pose() -> None:
    policy = FrontierPolicy(SETTINGS, 1, cell_m=0.25)
    with pytest.raises(ValueError, match="pose"):
        policy.act(open_space(1), policy.initial_state(1), torch.ones(1, dtype=torch.bool))
