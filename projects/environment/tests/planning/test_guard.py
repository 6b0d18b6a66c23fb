"""The collision guard on the real simulator's observations of exact analytic rooms: actions with room
to stop pass unchanged, speed towards a near wall, floor or side is capped to the room left (in the
body frame), a drone too close is pushed away, yaw passes, and a drone held flying into a wall never
collides with the guard while it does without."""

from __future__ import annotations

import math

import pytest
import torch

from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings, SensorSettings
from navi_environment.planning.guard import BRAKE_GAIN, STOP_MARGIN_M, SpeedGuard
from navi_environment.runtime.analytic import RoomSpec, room_scene

SETTINGS = EnvironmentSettings(sensor=SensorSettings(azimuth_bins=64, elevation_bins=16))
BOX = RoomSpec(lo=(-3.0, -2.0, 0.0), hi=(3.0, 2.0, 3.0))  # 6 x 4 x 3 m
HALL = RoomSpec(lo=(-6.0, -6.0, 0.0), hi=(6.0, 6.0, 4.0))  # every surface far enough for full speed
RADIUS = SETTINGS.physics.drone_radius_m
MAX_SPEED = SETTINGS.physics


@pytest.fixture(scope="module")
def box() -> SdfDagBackend:
    return SdfDagBackend(SETTINGS, 1, scenes=[room_scene(BOX, 64)])


@pytest.fixture(scope="module")
def guard() -> SpeedGuard:
    return SpeedGuard(SETTINGS, "cpu")


def seen_from(env: SdfDagBackend, x: float, y: float, z: float, yaw: float) -> torch.Tensor:
    """[1, 3, Az, El] the simulator's observation at this pose."""
    env.reset(0)
    rows = torch.zeros(1, dtype=torch.long)
    return env.start_episodes(rows, rows, torch.tensor([[x, y, z]]), torch.tensor([yaw])).clone()


def act(forward: float = 0.0, vertical: float = 0.0, lateral: float = 0.0, yaw: float = 0.0) -> torch.Tensor:
    return torch.tensor([[forward, vertical, lateral, yaw]])


def test_actions_with_room_to_stop_pass_unchanged(guard: SpeedGuard) -> None:
    hall = SdfDagBackend(SETTINGS, 1, scenes=[room_scene(HALL, 64)])
    obs = seen_from(hall, 0.0, 0.0, 2.0, 0.3).expand(256, -1, -1, -1)
    actions = torch.rand(256, 4, generator=torch.Generator().manual_seed(0)) * 2.0 - 1.0
    assert torch.equal(guard(actions, obs), actions)


def test_speed_towards_a_near_wall_is_capped_to_the_room_left(box: SdfDagBackend, guard: SpeedGuard) -> None:
    room = 0.5  # the wall x = 3 is 0.5 m ahead of the drone's centre
    cap = BRAKE_GAIN * (room - RADIUS - STOP_MARGIN_M) / MAX_SPEED.max_forward_mps
    obs = seen_from(box, 3.0 - room, 0.0, 1.5, 0.0)
    towards = guard(act(forward=1.0), obs)
    assert 0.0 <= float(towards[0, 0]) <= cap + 0.01
    assert torch.equal(guard(act(forward=-1.0), obs), act(forward=-1.0))  # away: untouched
    along = guard(act(lateral=1.0), obs)  # along the wall: slower (its oblique points count), never into it
    assert float(along[0, 2]) > 0.5 and float(along[0, 0]) <= 0.0
    # the same wall on the drone's right (heading +y; lateral is +left): the body frame is respected
    side = seen_from(box, 3.0 - room, 0.0, 1.5, math.pi / 2)
    cap_lateral = BRAKE_GAIN * (room - RADIUS - STOP_MARGIN_M) / MAX_SPEED.max_lateral_mps
    capped = guard(act(lateral=-1.0), side)
    assert -cap_lateral - 0.01 <= float(capped[0, 2]) <= 0.0
    assert abs(float(capped[0, 0])) < 0.01
    assert torch.equal(guard(act(lateral=1.0), side), act(lateral=1.0))


def test_a_corner_caps_both_walls(box: SdfDagBackend, guard: SpeedGuard) -> None:
    obs = seen_from(box, 2.5, 1.5, 1.5, 0.0)  # 0.5 m from x = 3 (ahead) and from y = 2 (left)
    out = guard(act(forward=1.0, lateral=1.0), obs)
    assert float(out[0, 0]) * MAX_SPEED.max_forward_mps <= 0.25
    assert float(out[0, 2]) * MAX_SPEED.max_lateral_mps <= 0.25


def test_vertical_speed_towards_floor_and_ceiling_is_capped(box: SdfDagBackend, guard: SpeedGuard) -> None:
    low = seen_from(box, 0.0, 0.0, 0.6, 0.0)
    cap = BRAKE_GAIN * (0.6 - RADIUS - STOP_MARGIN_M) / MAX_SPEED.max_vertical_mps
    assert -cap - 0.02 <= float(guard(act(vertical=-1.0), low)[0, 1]) <= 0.0
    assert torch.equal(guard(act(vertical=1.0), low), act(vertical=1.0))
    high = seen_from(box, 0.0, 0.0, 2.4, 0.0)
    assert 0.0 <= float(guard(act(vertical=1.0), high)[0, 1]) <= cap + 0.02


def test_too_close_is_pushed_away_and_yaw_passes(box: SdfDagBackend, guard: SpeedGuard) -> None:
    obs = seen_from(box, 2.62, 0.0, 1.5, 0.0)  # 0.38 m from the wall ahead: inside radius + push range
    out = guard(act(yaw=0.7), obs)
    assert float(out[0, 0]) < -0.05  # backs away from the wall
    assert float(out[0, 3]) == pytest.approx(0.7)
    assert bool(((out >= -1.0) & (out <= 1.0)).all())
    nan = guard(torch.tensor([[math.nan, 0.0, 2.0, -3.0]]), seen_from(box, 0.0, 0.0, 1.5, 0.0))
    assert torch.equal(nan, act(lateral=1.0, yaw=-1.0))  # NaN as 0 and clipped, as the physics does


def test_the_brake_gain_scales_the_cap(box: SdfDagBackend) -> None:
    room, gain = 0.5, 3.0  # the frontier planner's default gain: it brakes later than the server's guard
    cap = gain * (room - RADIUS - STOP_MARGIN_M) / MAX_SPEED.max_forward_mps
    obs = seen_from(box, 3.0 - room, 0.0, 1.5, 0.0)
    later = float(SpeedGuard(SETTINGS, "cpu", brake_gain=gain)(act(forward=1.0), obs)[0, 0])
    default = float(SpeedGuard(SETTINGS, "cpu")(act(forward=1.0), obs)[0, 0])
    assert cap - 0.05 <= later <= cap + 0.01
    assert later > default * 1.3


@pytest.mark.parametrize("brake_gain", [BRAKE_GAIN, 3.0])
@pytest.mark.parametrize("command", [act(lateral=1.0), act(forward=0.8, lateral=-1.0), act(vertical=-1.0)])
def test_a_drone_held_flying_into_a_wall_never_collides_with_the_guard(
    box: SdfDagBackend, command: torch.Tensor, brake_gain: float
) -> None:
    guard = SpeedGuard(SETTINGS, "cpu", brake_gain=brake_gain)

    def collisions(guarded: bool) -> int:
        obs, count = seen_from(box, 0.0, 0.0, 1.5, 0.4), 0
        for _ in range(60):
            out = box.step(guard(command, obs) if guarded else command)
            count += int(out.info["collision"][0] > 0.5)
            obs = out.obs
        return count

    assert collisions(guarded=False) > 0  # the scene and the command do reach the wall
    assert collisions(guarded=True) == 0
