"""Frontier memory: in which direction around it the drone's unexplored space lies, from its own map.

Why: the frontier planner covers 1.1-1.2x what the learned mean action covers, and the rooms behind
doorways are where the gap is: it knows from its map where space it has not yet passed begins; the
policy has to infer that from a recurrent state. This memory gives the policy the planner's map as
an input, read the same way as the visit memory (:mod:`navi_actor.memory.visits`): ``F = sectors +
1`` features, for each horizontal direction sector around the heading (sector 0 ahead, counted
towards positive yaw) ``exp(-d / frontier_scale_m)`` of the nearest frontier cell within
``frontier_radius_m`` in that sector (0 when there is none), and the share of the disc of that
radius the drone has not mapped. With ``frontier_reading="relative"`` a sector reads ``exp(-(d -
d_min) / frontier_scale_m)`` instead, ``d_min`` the nearest over all sectors, so the way to the nearest
frontier reads 1 however far it lies (a faint far frontier beside none is as clear as a near one),
and one more feature says how far that is, ``exp(-d_min / frontier_radius_m)`` (0: none within the
radius). ``d`` is, by default (``frontier_distance="path"``), the shortest
path over the map's free cells that leaves the drone through that sector (:func:`frontier_path_lengths`:
the doorway's sector carries the room behind it, a sector facing a wall reads 0); with
``"straight"``, the straight line to a frontier cell lying in that sector (which may cross a wall).

The map is :class:`navi_environment.planning.occupancy.OccupancyGrids`, the planner's own: 2.5D,
built from the depth rays and the drone's pose only (never the scene), free space marked up to
``frontier_sight_m`` as the planner marks it, so a frontier is space the drone has not yet come
near, the space coverage counts. Its flight slab follows the drone's height, and it is read at that
height (:meth:`~navi_environment.planning.occupancy.OccupancyGrids.state_at`: a door whose lintel
was seen from higher up is open again below it). A frontier is a free
cell with a 4-neighbour in unknown space that is not an isolated hole (at least 5 unknown cells in
the 3 x 3 block around that neighbour): single cells and small pockets the rays missed amid mapped
space are not frontiers (6-9 of 16-58 candidate cells in three corpus scenes after 60 random steps).

Rules as for the visit memory: rows whose ``episode_start`` is True are cleared first (the map is
centred on the new start), :meth:`FrontierMemory.observe` folds the observation in and then reads,
:meth:`FrontierMemory.peek` returns what ``observe`` would without changing the map. Batched over
drones as ``[B, N, N]`` tensors; not trained, not checkpointed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as nnf
from numba import njit

from navi_actor.memory.config import VisitMemoryConfig
from navi_actor.memory.grid_paths import shortest_path_lengths
from navi_actor.memory.visits import VisitMemory
from navi_environment.planning.occupancy import FREE, OCCUPIED, UNKNOWN, OccupancyGrids

MAP_M = 80.0  # edge of each drone's map (the planner's), centred on its episode start
SLAB_HALF_M = 0.5  # half height of the mapped slab around the drone's current height (the planner's)
HOLE_CELLS = 5  # unknown cells in a 3 x 3 block below which an unknown cell is a hole, not a frontier
RING_M = (1.0, 2.0)  # path mode: the ring of cells, metres from the drone, through which paths leave it
RING_SLACK = 1.5  # path mode: a ring cell counts when the path to it is at most this times the straight line


class FrontierMemory:
    """Occupancy maps of ``num_drones`` drones this episode, read as direction features ``[B, F]``.

    Args:
        cfg: the visit memory settings (``source="frontiers"``; the ``frontier_*`` fields, sectors).
        num_drones: B.
        azimuth_bins, elevation_bins: the sensor shape of the observations.
        device: where the maps live.
    """

    def __init__(
        self,
        cfg: VisitMemoryConfig,
        num_drones: int,
        azimuth_bins: int,
        elevation_bins: int,
        device: torch.device | str = "cpu",
    ) -> None:
        self.cfg = cfg
        self.grids = OccupancyGrids(
            num_drones, azimuth_bins, elevation_bins, cfg.horizon_m, cell_m=cfg.frontier_cell_m,
            size_m=MAP_M, slab_half_m=SLAB_HALF_M, max_range_m=cfg.frontier_sight_m, device=device,
        )  # fmt: skip
        # the window read: the radius and the 2 cells beyond it the frontier test looks at
        self.reach = math.ceil(cfg.frontier_radius_m / cfg.frontier_cell_m) + 2
        offsets = torch.arange(-self.reach, self.reach + 1, device=self.grids.device)
        self.window_dy, self.window_dx = torch.meshgrid(offsets, offsets, indexing="ij")  # [W, W]

    def observe(
        self,
        position: torch.Tensor,
        yaw: torch.Tensor,
        episode_start: torch.Tensor,
        obs: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Clear rows starting an episode, fold ``obs`` [B, 3, Az, El] into the maps, read ``[B, F]``."""
        if obs is None:
            raise ValueError("the frontier memory maps the depth rays: pass obs")
        grids = self.grids
        position = position.to(grids.device, torch.float32)
        yaw = yaw.to(grids.device, torch.float32)
        starting = torch.nonzero(episode_start.to(grids.device).bool()).flatten()
        if starting.numel():
            grids.reset(starting, position[starting])
        grids.z0.copy_(position[:, 2])  # the slab follows the drone's height
        grids.update(obs.to(grids.device, torch.float32), position, yaw)
        return self.features(position, yaw)

    def peek(
        self,
        position: torch.Tensor,
        yaw: torch.Tensor,
        episode_start: torch.Tensor,
        obs: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The features :meth:`observe` would return, leaving the maps as they were."""
        grids = self.grids
        saved = grids.snapshot()
        try:
            return self.observe(position, yaw, episode_start, obs)
        finally:
            grids.restore(saved)

    def features(self, position: torch.Tensor, yaw: torch.Tensor) -> torch.Tensor:
        """``[B, F]`` features of the drones at ``position [B, 3]`` heading ``yaw [B]`` (no writes).

        Only the window of cells within ``frontier_radius_m`` is tested (:func:`frontier_cells` on it,
        with the 2 cells beyond that the test looks at, the map's outside read as unknown): a
        tenth of the work of testing the whole map.
        """
        cfg, grids = self.cfg, self.grids
        B = grids.grid.shape[0]
        here = grids.cell_of(position[:, :2])  # [B, 2] (column, row)
        col = here[:, 0, None, None] + self.window_dx  # [B, W, W]
        row = here[:, 1, None, None] + self.window_dy
        window = grids.window(here, self.reach)  # at the drone's height; beyond the map: unknown
        frontier = frontier_cells(window)[:, 2:-2, 2:-2]
        known = window[:, 2:-2, 2:-2]
        unknown = known == UNKNOWN
        col, row = col[:, 2:-2, 2:-2], row[:, 2:-2, 2:-2]
        corner = grids.origin - position[:, :2]  # [B, 2] map corner relative to the drone
        dx = corner[:, 0, None, None] + (col.float() + 0.5) * cfg.frontier_cell_m
        dy = corner[:, 1, None, None] + (row.float() + 0.5) * cfg.frontier_cell_m
        distance = torch.hypot(dx, dy)
        disc = distance <= cfg.frontier_radius_m
        width = 2.0 * math.pi / cfg.sectors  # sector k is centred on bearing k * width
        bearing = torch.atan2(dy, dx) - yaw[:, None, None]
        sector = torch.remainder(torch.round(bearing / width), cfg.sectors).long().flatten(1)
        if cfg.frontier_distance == "path":
            counted = frontier_path_lengths(frontier & disc, known, distance, cfg.frontier_cell_m)
        else:
            counted = torch.where(frontier & disc, distance, math.inf)
        counted = counted.flatten(1)  # [B, W*W]
        nearest = torch.full((B, cfg.sectors), math.inf, device=grids.device)
        nearest = nearest.scatter_reduce(1, sector, counted, reduce="amin")
        disc_cells = disc.flatten(1).sum(1, keepdim=True).clamp(min=1)
        unmapped = (unknown & disc).flatten(1).sum(1, keepdim=True) / disc_cells
        if cfg.frontier_reading == "absolute":
            return torch.cat([torch.exp(-nearest / cfg.frontier_scale_m), unmapped.float()], dim=1)
        closest = nearest.amin(1, keepdim=True)  # [B, 1]
        found = torch.isfinite(closest)
        relative = torch.where(found, torch.exp(-(nearest - closest) / cfg.frontier_scale_m), 0.0)
        overall = torch.where(found, torch.exp(-closest / cfg.frontier_radius_m), 0.0)
        return torch.cat([relative, unmapped.float(), overall], dim=1)


def frontier_cells(grid: torch.Tensor) -> torch.Tensor:
    """``[B, H, W]`` bool of occupancy grids ``[B, H, W]``: free cells with a 4-neighbour in unknown
    space that is not an isolated hole (a neighbour with at least ``HOLE_CELLS`` unknown cells in its
    3 x 3 block; cells beyond the edge do not count). CPU grids go through a numba kernel that counts
    the same cells (integers: the two agree exactly; ``test_frontiers.py`` binds them)."""
    if grid.device.type == "cpu":
        out = torch.empty(grid.shape, dtype=torch.bool)
        _frontier_cells_kernel(grid.contiguous().numpy(), HOLE_CELLS, out.numpy())
        return out
    return _frontier_cells_torch(grid)


def _frontier_cells_torch(grid: torch.Tensor) -> torch.Tensor:
    unknown = (grid == UNKNOWN).float()[:, None]  # [B, 1, H, W]
    block = nnf.avg_pool2d(unknown, 3, stride=1, padding=1, count_include_pad=True) * 9.0
    region = (unknown > 0) & (block >= HOLE_CELLS - 0.5)
    cross = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], device=grid.device)
    near = nnf.conv2d(region.float(), cross.view(1, 1, 3, 3), padding=1)[:, 0] > 0
    return (grid == FREE) & near


@njit(cache=True, nogil=True)
def _frontier_cells_kernel(grid, hole_cells, out):  # type: ignore[no-untyped-def]  # bound by the test
    batch, height, width = grid.shape
    region = np.zeros((height, width), dtype=np.bool_)
    for b in range(batch):
        for r in range(height):
            for c in range(width):
                count = 0
                for rr in range(max(r - 1, 0), min(r + 2, height)):
                    for cc in range(max(c - 1, 0), min(c + 2, width)):
                        count += grid[b, rr, cc] == UNKNOWN
                region[r, c] = grid[b, r, c] == UNKNOWN and count >= hole_cells
        for r in range(height):
            for c in range(width):
                near = (
                    (r > 0 and region[r - 1, c])
                    or (r + 1 < height and region[r + 1, c])
                    or (c > 0 and region[r, c - 1])
                    or (c + 1 < width and region[r, c + 1])
                )
                out[b, r, c] = grid[b, r, c] == FREE and near


def frontier_path_lengths(
    frontier: torch.Tensor, known: torch.Tensor, distance: torch.Tensor, cell_m: float
) -> torch.Tensor:
    """``[B, w, w]`` metres of the shortest path over free cells of the map window ``known`` from the
    drone (``distance`` [B, w, w] from it to each cell's centre) through each cell of the ring
    ``RING_M`` around it on to the nearest ``frontier`` cell; inf elsewhere and where no such path
    lies in the window.

    A ring cell counts only when the path to it from the drone is at most ``RING_SLACK`` times the
    straight line (so a cell on the far side of a thin wall, mapped from the other side, does not), and
    its sector is the way the path leaves the drone: the sector of a doorway carries the rooms behind.
    Paths start at the drone's exact position (the cells within one cell of it that are not occupied,
    at their distance), so that mirrored poses read mirrored features; never through an occupied
    cell, however near (a drone touching a thin wall does not see through it).
    """
    near = (distance <= cell_m) & (known != OCCUPIED)
    passable = (known == FREE) | near  # the unmapped cells around the drone count as open
    no_path = torch.full_like(distance, math.inf)
    to_frontier = shortest_path_lengths(torch.where(frontier, 0.0, no_path), passable)
    # every path from the drone, however long (only those within RING_SLACK of the ring count)
    from_drone = shortest_path_lengths(torch.where(near, distance / cell_m, no_path), passable) * cell_m
    ring = (distance >= RING_M[0]) & (distance <= RING_M[1]) & (from_drone <= RING_SLACK * distance)
    return torch.where(ring, from_drone + to_frontier * cell_m, math.inf)


def ray_gap_m(sight_m: float, azimuth_bins: int) -> float:
    """Arc between neighbouring azimuth rays at ``sight_m``: where it exceeds the map's cell, cells
    between the rays near the sight's edge are never marked free and read as frontiers beside every
    wall (a 64-azimuth sensor on 0.25 m cells: 0.29 m)."""
    return 2 * math.pi * sight_m / azimuth_bins


def map_finer_than_rays(policy_cfg: Any) -> dict[str, Any] | None:
    """The fields of a warning when a policy (its ``PolicyConfig``) reads a frontier map whose cells
    are finer than :func:`ray_gap_m` at the map's sight, else None. Why: the unknown cells between
    rays then read as frontiers beside every wall, and the policy learns from false ones; a user who
    shrinks the sensor wants ``visits.frontier_cell_m`` at least that gap. Training and cloning
    both log it once at their start."""
    visits = policy_cfg.visits
    if not policy_cfg.visit_input or visits.source != "frontiers":
        return None
    gap = ray_gap_m(visits.frontier_sight_m, policy_cfg.azimuth)
    if gap <= visits.frontier_cell_m:
        return None
    return {
        "frontier_cell_m": visits.frontier_cell_m,
        "ray_gap_m": round(gap, 3),
        "azimuth_bins": policy_cfg.azimuth,
        "advice": "set NAVI_ACTOR_POLICY__VISITS__FRONTIER_CELL_M to at least ray_gap_m",
    }


def new_visit_reader(
    cfg: VisitMemoryConfig,
    num_drones: int,
    azimuth_bins: int,
    elevation_bins: int,
    device: torch.device | str = "cpu",
) -> FrontierMemory | VisitMemory:
    """The memory ``cfg.source`` names: past positions or the frontier map (same features' shape)."""
    if cfg.source == "frontiers":
        return FrontierMemory(cfg, num_drones, azimuth_bins, elevation_bins, device)
    return VisitMemory(cfg, num_drones, device)
