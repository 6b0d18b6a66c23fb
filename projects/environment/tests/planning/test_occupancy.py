"""Occupancy maps from depth rays: a drone in an exact analytic box sees known rays, and the map marks
the right cells free, occupied and unknown."""

from __future__ import annotations

import math

import numpy as np
import torch

from navi_environment.planning.occupancy import FREE, OCCUPIED, UNKNOWN, OccupancyGrids
from navi_environment.runtime.analytic import RoomSpec, room_ray_distance
from navi_environment.tracer import sensor_directions

BOX = RoomSpec(lo=(-3.0, -2.0, 0.0), hi=(3.0, 2.0, 3.0))
AZ, EL, HORIZON = 128, 32, 30.0


def box_observation(
    spec: RoomSpec, position: np.ndarray, yaw: float, horizon: float = HORIZON
) -> torch.Tensor:
    """[1, 3, Az, El] what the sensor sees from ``position`` inside the plain box ``spec`` (exact)."""
    local = sensor_directions(AZ, EL).astype(np.float64)
    c, s = math.cos(yaw), math.sin(yaw)
    world = np.stack([c * local[:, 0] - s * local[:, 1], s * local[:, 0] + c * local[:, 1], local[:, 2]], 1)
    t = room_ray_distance(spec, position, world)
    obs = np.zeros((1, 3, AZ * EL), dtype=np.float32)
    obs[0, 0] = np.minimum(t / horizon, 1.0)
    obs[0, 2] = t < horizon
    return torch.from_numpy(obs.reshape(1, 3, AZ, EL))


def cell_centres(grids: OccupancyGrids) -> tuple[np.ndarray, np.ndarray]:
    """World x and y [N, N] of drone 0's cell centres (row = y, column = x)."""
    index = (np.arange(grids.size) + 0.5) * grids.cell_m
    origin = grids.origin[0].numpy()
    x, y = np.meshgrid(origin[0] + index, origin[1] + index)
    return x, y


def mapped_box(yaw: float) -> tuple[OccupancyGrids, np.ndarray, np.ndarray, np.ndarray]:
    position = np.array([0.1, 0.2, 1.5])
    grids = OccupancyGrids(1, AZ, EL, HORIZON, cell_m=0.5, size_m=20.0)
    pos = torch.tensor(position, dtype=torch.float32)[None]
    grids.reset(torch.tensor([0]), pos)
    grids.update(box_observation(BOX, position, yaw), pos, torch.tensor([yaw]))
    x, y = cell_centres(grids)
    return grids, grids.grid[0].numpy(), x, y


def test_a_box_seen_from_inside_maps_free_inside_occupied_walls_unknown_outside() -> None:
    for yaw in (0.0, 1.1):  # the map is in world frame whatever the heading
        _, grid, x, y = mapped_box(yaw)
        inside_by = np.minimum(np.minimum(x + 3.0, 3.0 - x), np.minimum(y + 2.0, 2.0 - y))  # > 0 inside
        assert (grid[inside_by >= 0.5] == FREE).all()  # the interior, away from the walls
        assert (grid[inside_by <= -0.5] == UNKNOWN).all()  # nothing behind the walls is known
        on_wall = (np.abs(inside_by) < 0.25) & ((np.abs(x) < 2.5) | (np.abs(y) < 1.5))  # not the corners
        assert on_wall.sum() > 20 and (grid[on_wall] == OCCUPIED).all()  # every wall cell was hit
        assert (grid[inside_by >= 0.3] != OCCUPIED).all()  # floor and ceiling lie outside the slab


def test_cells_are_addressed_from_the_map_origin_centred_on_the_start() -> None:
    grids, grid, _, _ = mapped_box(0.0)
    here = grids.cell_of(torch.tensor([[0.1, 0.2]]))[0].tolist()
    assert here == [grids.size // 2, grids.size // 2]
    assert grid[here[1], here[0]] == FREE
    assert grids.z0.tolist() == [1.5]


def test_misses_free_space_up_to_the_range_cap_and_a_drone_off_its_slab_marks_nothing_free() -> None:
    grids = OccupancyGrids(1, AZ, EL, HORIZON, cell_m=0.5, size_m=40.0, max_range_m=6.0)
    start = torch.tensor([[0.0, 0.0, 2.0]])
    grids.reset(torch.tensor([0]), start)
    void = torch.zeros(1, 3, AZ, EL)
    void[:, 0] = 1.0  # every ray misses
    grids.update(void, start, torch.zeros(1))
    x, y = cell_centres(grids)
    distance = np.hypot(x, y)
    grid = grids.grid[0].numpy()
    assert (grid[distance < 5.5] == FREE).all() and (grid[distance > 6.5] == UNKNOWN).all()
    grids.reset(torch.tensor([0]), start)
    grids.update(void, start + torch.tensor([[3.0, 0.0, 1.0]]), torch.zeros(1))  # 1 m above the slab
    assert (grids.grid[0] == UNKNOWN).all()


def test_maps_of_several_drones_update_independently_and_reset_by_row() -> None:
    grids = OccupancyGrids(2, AZ, EL, HORIZON, cell_m=0.5, size_m=20.0)
    positions = torch.tensor([[0.1, 0.2, 1.5], [-1.0, 0.5, 1.5]])
    grids.reset(torch.arange(2), positions)
    obs = torch.cat([box_observation(BOX, p.double().numpy(), 0.0) for p in positions])
    grids.update(obs, positions, torch.zeros(2))
    assert (grids.grid[0] == OCCUPIED).sum() > 20 and (grids.grid[1] == OCCUPIED).sum() > 20
    grids.reset(torch.tensor([1]), positions[1:])
    assert (grids.grid[1] == UNKNOWN).all() and (grids.grid[0] == OCCUPIED).sum() > 20


def test_a_drone_at_the_map_edge_maps_its_part_as_a_larger_map_does_and_nothing_beyond() -> None:
    """Rays and free space beyond the map are dropped, not folded onto its edge cells (as a marking
    that clamped its indices into the map would): the small map equals the large one's middle."""
    hall = RoomSpec(lo=(-6.0, -1.9, 0.0), hi=(6.0, 2.1, 3.0))  # walls off the cell edges: no rounding ties
    position = np.array([2.6, 0.3, 1.5])  # 0.4 m from the small map's +x edge, the wall 3.4 m beyond it
    maps = []
    for size_m in (6.0, 20.0):  # 12 and 40 cells, both centred on the origin
        grids = OccupancyGrids(1, AZ, EL, HORIZON, cell_m=0.5, size_m=size_m)
        grids.reset(torch.tensor([0]), torch.tensor([[0.0, 0.0, 1.5]]))  # the slab at the drone's height
        for yaw in (0.0, 2.0):
            obs = box_observation(hall, position, yaw)
            grids.update(obs, torch.tensor(position, dtype=torch.float32)[None], torch.tensor([yaw]))
        maps.append(grids.grid[0].numpy())
    small, large = maps
    assert (small == OCCUPIED).sum() > 10 and (small == FREE).sum() > 40
    np.testing.assert_array_equal(small, large[14:26, 14:26])


def test_a_ceiling_hit_inside_a_high_slab_blocks_that_slab_and_not_a_lower_one() -> None:
    low_room = RoomSpec(lo=(-3.0, -2.0, 0.0), hi=(3.0, 2.0, 2.0))  # a 2 m ceiling
    grids = OccupancyGrids(1, AZ, EL, HORIZON, cell_m=0.5, size_m=20.0)
    high, low = np.array([0.1, 0.2, 1.8]), np.array([0.1, 0.2, 1.0])  # slabs 1.3-2.3 m and 0.5-1.5 m
    grids.reset(torch.tensor([0]), torch.tensor(high, dtype=torch.float32)[None])
    flat = torch.arange(grids.size * grids.size)[None]
    x, y = (c.ravel() for c in cell_centres(grids))
    inside = (np.abs(x) < 2.2) & (np.abs(y) < 1.2)  # cells under the ceiling, clear of the walls
    for position in (high, low):
        pos = torch.tensor(position, dtype=torch.float32)[None]
        grids.z0.fill_(float(position[2]))  # the slab follows the drone down
        grids.update(box_observation(low_room, position, 0.0), pos, torch.zeros(1))
        if position is high:
            raw = grids.grid.view(-1).clone()
            assert torch.equal(grids.state_at(flat)[0], raw)  # at one height: the grid itself
            ceiling = inside & (raw == OCCUPIED).numpy()  # the ceiling, 0.2 m above, is in the slab
            assert ceiling.sum() > 0.5 * inside.sum()
    lower = grids.state_at(flat)[0].numpy()
    assert (grids.grid.view(-1).numpy()[ceiling] == OCCUPIED).all()  # the grid itself stays sticky
    assert (lower[ceiling] == FREE).all()  # under the ceiling, seen free from 1.0 m
    walls = (np.abs(x) > 3.0) | (np.abs(y) > 2.0)
    assert (lower[walls & (grids.grid.view(-1) == OCCUPIED).numpy()] != FREE).all()  # walls stay shut
    assert ((lower == OCCUPIED) & walls).sum() > 20
