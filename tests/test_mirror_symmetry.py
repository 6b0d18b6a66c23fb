"""The actor's left-right mirror is the simulator's: a drone in a mirrored scene at the mirrored pose
sees ``mirror_observation`` of what the original drone sees, and flying ``mirror_action`` keeps the
two drones mirror images (the symmetry loss, ``ppo.symmetry_coef``, relies on exactly this)."""

from __future__ import annotations

import numpy as np
import torch

from navi_actor.models.mirror import mirror_action, mirror_observation
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.gmdag.writer import compile_sdf_to_gmdag
from navi_environment.runtime.loader import scene_from_asset
from navi_environment.scenes.rasterize import layout_grids
from navi_environment.scenes.registry import generate

RESOLUTION = 64


def _scene_and_mirror(settings: EnvironmentSettings) -> SdfDagBackend:
    """Two drones: drone 0 in an apartment, drone 1 in the same apartment reflected through y = 0."""
    sdf, semantic, bmin, voxel = layout_grids(generate("apartment", 1), RESOLUTION)
    mirrored_bmin = bmin.copy()
    mirrored_bmin[1] = -(bmin[1] + RESOLUTION * voxel)  # voxel j's centre y -> -y
    scenes = [
        scene_from_asset(compile_sdf_to_gmdag(grid, sem, origin, voxel), settings)
        for grid, sem, origin in (
            (sdf, semantic, bmin),
            (np.ascontiguousarray(sdf[:, ::-1]), np.ascontiguousarray(semantic[:, ::-1]), mirrored_bmin),
        )
    ]
    return SdfDagBackend(settings, 2, scenes=scenes)


def _mirrored(position: torch.Tensor) -> torch.Tensor:
    return position * torch.tensor([1.0, -1.0, 1.0])


def _agreement(mirrored_drone: torch.Tensor, original_drone: torch.Tensor) -> float:
    """Share of rays whose depth agrees within 1 mm of a 30 m horizon and whose hit flag agrees."""
    expected = mirror_observation(original_drone)
    same = ((mirrored_drone[0] - expected[0]).abs() < 1e-3 / 30) & (mirrored_drone[2] == expected[2])
    return float(same.float().mean())


def test_a_mirrored_scene_is_seen_and_flown_as_the_mirror() -> None:
    settings = EnvironmentSettings.model_validate({"sensor": {"azimuth_bins": 64, "elevation_bins": 16}})
    backend = _scene_and_mirror(settings)
    backend.reset(0)
    positions, yaws = backend.sample_starts(0, 1, seed=3)
    yaw = yaws + 0.7  # not a multiple of the bin spacing
    obs = backend.start_episodes(
        torch.tensor([0, 1]),
        torch.tensor([0, 1]),
        torch.cat([positions, _mirrored(positions)]),
        torch.cat([yaw, -yaw]),
    )
    assert _agreement(obs[1], obs[0]) > 0.99
    assert not torch.equal(obs[1], obs[0])  # the apartment is not symmetric itself: the test can fail
    generator = torch.Generator().manual_seed(0)
    for _ in range(12):
        action = torch.rand(1, 4, generator=generator) * 2.0 - 1.0
        action[:, 0] = 0.8  # keep flying forward
        obs = backend.step(torch.cat([action, mirror_action(action)])).obs
        where, heading = backend.poses()
        torch.testing.assert_close(where[1], _mirrored(where[0]), atol=1e-4, rtol=0.0)
        torch.testing.assert_close(heading[1], -heading[0], atol=1e-5, rtol=0.0)
        assert _agreement(obs[1], obs[0]) > 0.99
