"""The default policy's frontier map on the accelerator: its shortest paths and its features as on the CPU.

Why here: since the default policy reads the frontier map by path (``visits.source=frontiers``,
``frontier_distance=path``), every GPU training step runs :func:`grid_path_lengths` (the torch
relaxation) where the CPU runs the numba Dijkstra kernel. The two are bound on the CPU by
``test_grid_paths.py``; these tests bind the relaxation as it runs on the accelerator to the CPU
kernel, and the whole read (frontier cells, paths, sectors) to the CPU's on the same map.
"""

from __future__ import annotations

import math

import pytest
import torch

from navi_actor.memory import VisitMemoryConfig
from navi_actor.memory.frontiers import FrontierMemory
from navi_actor.memory.grid_paths import grid_path_lengths, shortest_path_lengths
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings, SensorSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene

AZ, EL = 64, 16
SETTINGS = EnvironmentSettings(sensor=SensorSettings(azimuth_bins=AZ, elevation_bins=EL))
TWO_ROOMS = RoomSpec(hi=(10.0, 8.0, 3.0), thin_wall_x=6.0, thin_wall_thickness=0.3, thin_wall_gap=(3.0, 5.5))
PATH_READ = VisitMemoryConfig(source="frontiers", frontier_distance="path")


def accelerator_paths(start: torch.Tensor, passable: torch.Tensor, dev: torch.device) -> torch.Tensor:
    """The path lengths as a policy on ``dev`` computes them: :func:`shortest_path_lengths` on a GPU
    (which runs the relaxation there); with ``NAVI_TEST_ACCEL_DEVICE=cpu`` the relaxation itself,
    the code path other devices take, so the comparison is not the kernel against itself."""
    start, passable = start.to(dev), passable.to(dev)
    if dev.type == "cpu":
        return grid_path_lengths(start, passable, passable.shape[-2] * passable.shape[-1])
    return shortest_path_lengths(start, passable)


@pytest.mark.parametrize("wall", [0.15, 0.35])
def test_shortest_paths_on_the_accelerator_equal_the_cpu_kernel_to_the_bit(
    wall: float, accel_device: str
) -> None:
    generator = torch.Generator().manual_seed(int(wall * 100))
    passable = torch.rand(6, 45, 45, generator=generator) >= wall
    start = torch.where(torch.rand(6, 45, 45, generator=generator) < 0.01, 0.0, math.inf)
    start[:, 22, 22] = 0.5  # every map has a start, with a length of its own
    expected = shortest_path_lengths(start, passable)  # the numba kernel
    got = accelerator_paths(start, passable, torch.device(accel_device))
    assert got.device.type == torch.device(accel_device).type
    assert torch.isfinite(expected).any() and torch.isinf(expected).any()  # reachable and walled-off cells
    assert torch.equal(got.cpu(), expected)


def test_the_frontier_memory_on_the_accelerator_reads_as_on_the_cpu(accel_device: str) -> None:
    """Two drones fly the two rooms; at every step the accelerator's memory, given the CPU memory's
    map, reads the CPU's features, and fed the same observations it builds nearly the same map."""
    dev = torch.device(accel_device)
    env = SdfDagBackend(SETTINGS, 2, scenes=[room_scene(TWO_ROOMS, 64)])
    cpu = FrontierMemory(PATH_READ, 2, AZ, EL)
    copied = FrontierMemory(PATH_READ, 2, AZ, EL, device=dev)  # reads the CPU's map
    own = FrontierMemory(PATH_READ, 2, AZ, EL, device=dev)  # builds its own
    obs = env.reset(seed=0)
    start = torch.ones(2, dtype=torch.bool)
    generator = torch.Generator().manual_seed(0)
    found = 0
    for _ in range(20):
        position, yaw = env.poses()
        expected = cpu.observe(position, yaw, start, obs)
        own.observe(position.to(dev), yaw.to(dev), start.to(dev), obs.to(dev))
        mine, theirs = copied.grids, cpu.grids
        mine.grid, mine.origin, mine.z0 = theirs.grid.to(dev), theirs.origin.to(dev), theirs.z0.to(dev)
        got = copied.features(position.to(dev), yaw.to(dev))
        assert got.device.type == dev.type
        torch.testing.assert_close(got.cpu(), expected, atol=1e-5, rtol=0.0)
        found += int((expected[:, : PATH_READ.sectors] > 0).sum())
        action = torch.rand(2, 4, generator=generator) * 2.0 - 1.0
        step = env.step(action)
        obs, start = step.obs, step.terminated | step.truncated  # ended rows start anew
    assert found > 0, "no sector ever read a frontier: the comparison tested nothing"
    agree = (own.grids.grid.cpu() == cpu.grids.grid).float().mean()
    assert agree >= 0.99, f"the maps agree on {agree:.4f} of cells"
