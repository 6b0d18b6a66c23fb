"""Planned episodes (paired evaluation): chosen starts, reproducible start draws, reachable cells."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene
from navi_environment.runtime.reachable import reachable_cell_count

ROOM = RoomSpec(hi=(10.0, 8.0, 3.0))
SMALL = RoomSpec(hi=(4.0, 3.0, 3.0))


def settings() -> EnvironmentSettings:
    return EnvironmentSettings(sensor={"azimuth_bins": 32, "elevation_bins": 8, "horizon_m": 30.0})


@pytest.fixture(scope="module")
def backend() -> SdfDagBackend:
    return SdfDagBackend(settings(), 2, scenes=[room_scene(ROOM, 64), room_scene(SMALL, 64)])


def test_start_episodes_places_drones_at_the_planned_pose(backend: SdfDagBackend) -> None:
    backend.reset(seed=0)
    for _ in range(3):
        backend.step(torch.ones(2, 4) * 0.5)
    rows = torch.tensor([1])
    start = torch.tensor([[2.0, 1.5, 1.5]])
    obs = backend.start_episodes(rows, torch.tensor([1]), start, torch.tensor([0.3]))
    position, yaw = backend.poses()
    assert position[1].tolist() == pytest.approx([2.0, 1.5, 1.5]) and float(yaw[1]) == pytest.approx(0.3)
    assert int(backend.scene_index[1]) == 1 and int(backend.episodes.length[1]) == 0
    assert float(backend.episodes.episode_return[1]) == 0.0
    fresh = SdfDagBackend(settings(), 1, scenes=[room_scene(SMALL, 64)])
    fresh.reset(seed=0)
    expected = fresh.start_episodes(torch.tensor([0]), torch.tensor([0]), position[1:], yaw[1:])
    assert torch.equal(obs[1], expected[0])  # the first observation of the planned start


def test_start_draws_are_reproducible_and_distinct(backend: SdfDagBackend) -> None:
    positions, yaws = backend.sample_starts(0, 8, seed=5)
    again, yaws_again = backend.sample_starts(0, 8, seed=5)
    assert torch.equal(positions, again) and torch.equal(yaws, yaws_again)
    assert len({tuple(p) for p in positions.tolist()}) == 8
    other, _ = backend.sample_starts(0, 8, seed=6)
    assert not torch.equal(positions, other)
    lo, hi = np.asarray(ROOM.lo), np.asarray(ROOM.hi)
    assert ((positions.numpy() > lo) & (positions.numpy() < hi)).all()


def test_reachable_cells_of_a_box_room_are_its_interior_cells(backend: SdfDagBackend) -> None:
    # free beyond the 0.3 m drone radius: x in (0.3, 9.7), y in (0.3, 7.7), z in (0.3, 2.7)
    # -> 1 m cells 10 x 8 x 3
    assert backend.reachable_cells(0) == 240
    assert backend.reachable_cells(1) == 4 * 3 * 3


def test_a_closed_off_room_is_not_reachable() -> None:
    divided = RoomSpec(hi=(10.0, 8.0, 3.0), thin_wall_x=5.0, thin_wall_thickness=0.2)
    scene = room_scene(divided, 64)
    left_only = reachable_cell_count(scene, np.array([[2.0, 4.0, 1.5]]), settings())
    both = reachable_cell_count(scene, np.array([[2.0, 4.0, 1.5], [8.0, 4.0, 1.5]]), settings())
    assert 0 < left_only < both <= 240
    door = RoomSpec(hi=(10.0, 8.0, 3.0), thin_wall_x=5.0, thin_wall_thickness=0.2, thin_wall_gap=(3.0, 4.5))
    through_door = reachable_cell_count(room_scene(door, 64), np.array([[2.0, 4.0, 1.5]]), settings())
    assert through_door > left_only
