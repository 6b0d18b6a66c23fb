"""The other environment code with a device: the frontier planner (the auditor's autopilot), the
Gymnasium vector environment, ``navi-environment bench-sdfdag --device`` and the realtime server's
collision guard."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings, SensorSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene
from navi_environment.runtime.scene import RuntimeScene

TWO_ROOMS = RoomSpec(
    hi=(10.0, 8.0, 3.0), thin_wall_x=6.0, thin_wall_thickness=0.3, thin_wall_gap=(3.0, 5.5),
    pillars=((3.0, 4.0, 0.4),),
)  # fmt: skip
SETTINGS = EnvironmentSettings(sensor=SensorSettings(azimuth_bins=64, elevation_bins=16))


@pytest.fixture(scope="module")
def rooms() -> RuntimeScene:
    return room_scene(TWO_ROOMS, 64)


def test_frontier_planner_on_the_accelerator_maps_as_on_the_cpu(
    rooms: RuntimeScene, accel_device: str
) -> None:
    """Fed the same observations and poses, both planners build the same occupancy maps."""
    from navi_environment.planning import FrontierPlanner

    env = SdfDagBackend(SETTINGS, 2, scenes=[rooms])
    obs = env.reset(seed=0)
    dev = torch.device(accel_device)
    cpu, accel = FrontierPlanner(SETTINGS, 2), FrontierPlanner(SETTINGS, 2, device=accel_device)
    same = 0
    for _ in range(15):
        position, yaw = env.poses()
        action = cpu.act(obs, position, yaw)
        moved = accel.act(obs.to(dev), position.to(dev), yaw.to(dev))
        assert moved.device.type == dev.type and moved.shape == (2, 4)
        assert torch.isfinite(moved).all() and float(moved.abs().max()) <= 1.0
        same += int(torch.allclose(moved.cpu(), action, atol=1e-3))
        obs = env.step(action).obs
    agree = (accel.maps.grid.cpu() == cpu.maps.grid).float().mean()
    assert agree >= 0.99, f"occupancy maps agree on {agree:.4f} of cells"
    assert accel.visited.device.type == dev.type
    assert same >= 8, f"the same action on only {same} of 15 steps (maps agree on {agree:.4f})"


def test_gym_vector_env_on_the_accelerator(rooms: RuntimeScene, accel_device: str) -> None:
    from navi_environment.gym_adapter import NaviVectorEnv

    env = NaviVectorEnv(SETTINGS, 3, scenes=[rooms], device=accel_device, render_mode="rgb_array")
    assert env.backend.device.type == torch.device(accel_device).type
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, np.ndarray) and obs.shape == (3, 3, 64, 16)
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample() * 1.5)
        assert isinstance(reward, np.ndarray) and np.isfinite(reward).all()
        assert terminated.dtype == bool and truncated.dtype == bool
        assert info["final_obs"].shape == obs.shape
    frames = env.render()
    assert frames is not None and len(frames) == 3


def test_bench_sdfdag_runs_on_the_accelerator(tiny_scene: Path, accel_device: str) -> None:
    from navi_environment.cli import main

    env = {"NAVI_ENV_SENSOR__AZIMUTH_BINS": "32", "NAVI_ENV_SENSOR__ELEVATION_BINS": "8"}
    result = CliRunner().invoke(
        main, ["bench-sdfdag", "--gmdag-file", str(tiny_scene), "--actors", "4", "--steps", "3",
               "--device", accel_device, "--json"], env=env, catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["device"] == accel_device and report["ms_per_step"] > 0 and report["trace_share"] > 0


def test_collision_guard_on_the_accelerator_caps_as_on_the_cpu(
    rooms: RuntimeScene, accel_device: str
) -> None:
    """``serve --mode realtime --guard`` runs the guard on the backend's device: the same actions and
    observations give the CPU's guarded actions, and a realtime loop on the accelerator guards its ticks."""
    from navi_common import Publisher, RepServer, Subscriber, free_tcp_endpoint
    from navi_contracts import Action, StepRequest, topics
    from navi_environment.planning.guard import SpeedGuard
    from navi_environment.server import EnvironmentService, ServerConfig
    from navi_environment.server.realtime_loop import RealtimeLoop

    env = SdfDagBackend(SETTINGS, 8, scenes=[rooms])
    obs = env.reset(seed=1).clone()
    actions = torch.rand(8, 4, generator=torch.Generator().manual_seed(0)) * 2.0 - 1.0
    cpu = SpeedGuard(SETTINGS, "cpu")(actions, obs)
    accel = SpeedGuard(SETTINGS, accel_device)(actions.to(accel_device), obs.to(accel_device))
    torch.testing.assert_close(accel.cpu(), cpu, atol=1e-5, rtol=1e-5)

    backend = SdfDagBackend(SETTINGS, 2, device=accel_device, scenes=[rooms])
    brain_pub, env_pub, rep = free_tcp_endpoint(), free_tcp_endpoint(), free_tcp_endpoint()
    config = ServerConfig(mode="realtime", action_sub=brain_pub, guard=True)
    with (
        Publisher(env_pub) as publisher,
        Subscriber(brain_pub, [topics.ACTION]) as subscription,
        RepServer(rep, lambda request: request, accepts=(StepRequest,)) as server,
    ):
        service = EnvironmentService(backend, publisher, step_requests=False)
        service.reset(0)
        loop = RealtimeLoop(service, subscription, server, config)
        wall = np.tile(np.array([[0.3, 0.0, 1.0, 0.0]], np.float32), (2, 1))
        loop.on_message(Action(
            env_ids=np.arange(2, dtype=np.int32), actions=wall, policy_id="into-the-wall",
            step_id=service.step_id, timestamp=0.0,
        ), service.step_id + 1)  # fmt: skip
        collisions = 0
        for _ in range(60):
            loop.run_tick()
            collisions += int((backend.info["collision"] > 0.5).sum())
    assert collisions == 0 and (loop.stats.guarded_ticks > 0).all()
