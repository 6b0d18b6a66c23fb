"""Kinematics and collisions: clipping, smoothing, speed limiter, yaw wrap, stop/slide, no tunnelling."""

from __future__ import annotations

import math

import torch

from navi_environment.config import PhysicsSettings, SensorSettings, TracerSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene
from navi_environment.runtime.atlas import pack_scenes
from navi_environment.step.physics import Kinematics, move_with_collisions, wrap_angle
from navi_environment.tracer import Tracer

CPU = torch.device("cpu")


def test_actions_are_clipped_scaled_and_nan_safe() -> None:
    kin = Kinematics(PhysicsSettings(smoothing=1.0), CPU)
    actions = torch.tensor([[2.0, -3.0, 0.5, float("nan")], [-1.0, 1.0, -7.0, 9.0]])
    smoothed, executed = kin.command(actions, torch.zeros(2, 4), torch.full((2,), 100.0))
    assert torch.allclose(smoothed, torch.tensor([[5.0, -2.0, 1.5, 0.0], [-5.0, 2.0, -3.0, 3.0]]))
    assert torch.equal(smoothed, executed)


def test_smoothing_moves_part_of_the_way() -> None:
    kin = Kinematics(PhysicsSettings(smoothing=0.25), CPU)
    smoothed, _ = kin.command(torch.ones(1, 4), torch.zeros(1, 4), torch.full((1,), 100.0))
    assert torch.allclose(smoothed, 0.25 * torch.tensor([[5.0, 2.0, 3.0, 3.0]]))


def test_forward_speed_slows_near_obstacles_ahead_but_not_backwards() -> None:
    settings = PhysicsSettings(smoothing=1.0, drone_radius_m=0.3, slowdown_distance_m=2.0)
    kin = Kinematics(settings, CPU)
    clearance = torch.tensor([10.0, 1.3, 0.2, 1.3])
    actions = torch.tensor([[1.0, 0, 0, 0], [1.0, 0, 0, 0], [1.0, 0, 0, 0], [-1.0, 0, 0, 0]])
    _, executed = kin.command(actions, torch.zeros(4, 4), clearance)
    assert torch.allclose(executed[:, 0], torch.tensor([5.0, 2.5, 0.0, -5.0]))


def test_displacement_follows_heading_and_yaw_wraps() -> None:
    kin = Kinematics(PhysicsSettings(dt=0.5), CPU)
    executed = torch.tensor([[2.0, 1.0, 4.0, 3.0]])
    disp, yaw = kin.displacement(executed, torch.tensor([math.pi / 2]))
    # heading +y: forward -> +y, lateral (left) -> -x, vertical -> +z
    assert torch.allclose(disp, torch.tensor([[-2.0, 1.0, 0.5]]), atol=1e-6)
    assert math.isclose(float(yaw), wrap_angle(torch.tensor(math.pi / 2 + 1.5)).item(), abs_tol=1e-6)
    assert -math.pi <= float(yaw) < math.pi
    assert torch.allclose(
        wrap_angle(torch.tensor([3 * math.pi, -3 * math.pi + 0.1])), torch.tensor([-math.pi, -math.pi + 0.1])
    )


def _tracer(spec: RoomSpec, resolution: int = 128) -> tuple[Tracer, float]:
    scene = room_scene(spec, resolution)
    return Tracer(pack_scenes([scene]), SensorSettings(), TracerSettings()), scene.voxel_size


def test_collision_stops_at_the_surface_with_impact_speed() -> None:
    tracer, voxel = _tracer(RoomSpec(hi=(10.0, 8.0, 3.0)))
    pos = torch.tensor([[9.2, 4.0, 1.5], [5.0, 4.0, 1.5]])
    disp = torch.tensor([[0.8, 0.0, 0.0], [0.5, 0.0, 0.0]])
    clearance = tracer.query(pos, torch.zeros(2, dtype=torch.int32))
    res = move_with_collisions(
        tracer,
        pos,
        disp,
        clearance,
        torch.zeros(2, dtype=torch.int32),
        radius=0.3,
        dt=0.1,
        normal_step=voxel,
        skin=0.1 * voxel,
    )
    assert res.collided.tolist() == [True, False]
    assert abs(float(res.position[0, 0]) - 9.7) <= voxel  # stopped one radius before the wall at x=10
    assert torch.allclose(res.position[1], torch.tensor([5.5, 4.0, 1.5]))
    assert abs(float(res.impact_speed[0]) - 8.0) < 0.1 and float(res.impact_speed[1]) == 0.0
    assert float(res.clearance[0]) >= 0.3 - voxel


def test_oblique_collision_slides_along_the_wall() -> None:
    tracer, voxel = _tracer(RoomSpec(hi=(10.0, 8.0, 3.0)))
    pos = torch.tensor([[9.5, 4.0, 1.5]])
    disp = torch.tensor([[0.4, 0.4, 0.0]])
    clearance = tracer.query(pos, torch.zeros(1, dtype=torch.int32))
    res = move_with_collisions(
        tracer,
        pos,
        disp,
        clearance,
        torch.zeros(1, dtype=torch.int32),
        radius=0.3,
        dt=0.1,
        normal_step=voxel,
        skin=0.1 * voxel,
    )
    assert bool(res.collided[0])
    assert float(res.position[0, 0]) <= 9.7 + voxel
    assert float(res.position[0, 1]) > 4.3  # slid along +y
    assert abs(float(res.impact_speed[0]) - 4.0) < 0.2  # only the normal component counts


def test_fast_drone_never_tunnels_through_a_thin_wall() -> None:
    spec = RoomSpec(hi=(10.0, 8.0, 3.0), thin_wall_x=5.0, thin_wall_thickness=0.1)
    tracer, voxel = _tracer(spec)
    gen = torch.Generator().manual_seed(0)
    pos = torch.rand(64, 3, generator=gen) * torch.tensor([3.0, 7.0, 2.0]) + torch.tensor([1.5, 0.5, 0.5])
    disp = torch.tensor([[0.6, 0.0, 0.0]]).repeat(64, 1)
    ids = torch.zeros(64, dtype=torch.int32)
    for _ in range(20):
        clearance = tracer.query(pos, ids)
        pos = move_with_collisions(
            tracer, pos, disp, clearance, ids, radius=0.3, dt=0.1, normal_step=voxel, skin=0.1 * voxel
        ).position
    assert float(pos[:, 0].max()) <= 5.0 - 0.05 - 0.3 + voxel
    # pushing into the wall for many steps never creeps inside the drone radius
    assert float(tracer.query(pos, ids).min()) >= 0.3 - 0.2 * voxel - 1e-3
