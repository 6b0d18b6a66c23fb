"""The path follower's guard: the speed towards a wall is capped by the room left, and a reaction time
(actions that run late) lowers the cap so that the drone can fly that long and still stop."""

from __future__ import annotations

import pytest
import torch

from navi_environment.planning.follow import FollowCommand, PathFollower

from .test_frontier import SETTINGS, box_observation

WALL_X = 3.0  # the +x wall of the 6 x 4 x 3 m box


def forward_speed_towards_the_wall(reaction_s: float, x: float) -> float:
    """m/s the follower commands towards the +x wall from ``x`` (facing it, carrot far behind it)."""
    follower = PathFollower(SETTINGS, cruise_mps=4.0, device=torch.device("cpu"), reaction_s=reaction_s)
    position = torch.tensor([[x, 0.0, 1.5]])
    obs = box_observation(position[0].double().numpy(), 0.0, 64, 16)
    command = FollowCommand(
        carrot=torch.tensor([[20.0, 0.0]]), goal_distance=torch.tensor([20.0]),
        active=torch.tensor([True]), height=torch.tensor([1.5]),
    )  # fmt: skip
    action = follower(command, obs, position, torch.zeros(1))
    return float(action[0, 0]) * SETTINGS.physics.max_forward_mps


@pytest.mark.parametrize("x", [1.8, 2.2])
def test_the_speed_towards_a_wall_lets_the_drone_fly_its_reaction_time_and_still_stop(x: float) -> None:
    room = WALL_X - x - SETTINGS.physics.drone_radius_m - 0.1  # the stop margin
    plain = forward_speed_towards_the_wall(0.0, x)
    late = forward_speed_towards_the_wall(0.4, x)
    assert plain == pytest.approx(2.0 * room, rel=0.05)  # stops from its speed at 2 /s in the room
    assert late == pytest.approx(room / (0.5 + 0.4), rel=0.05)
    assert late * 0.4 + late * 0.5 == pytest.approx(room, rel=0.05)  # fly 0.4 s, then brake: just fits


def test_a_negative_reaction_time_is_refused() -> None:
    with pytest.raises(ValueError, match="reaction_s must be >= 0"):
        PathFollower(SETTINGS, cruise_mps=4.0, device=torch.device("cpu"), reaction_s=-0.1)


def test_the_planner_hands_its_reaction_time_to_the_follower() -> None:
    from navi_environment.planning import FrontierPlanner

    assert FrontierPlanner(SETTINGS, 1, reaction_s=0.4).follower.brake_gain == pytest.approx(1 / 0.9)
    assert FrontierPlanner(SETTINGS, 1).follower.brake_gain == 2.0
