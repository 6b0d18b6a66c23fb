"""Batched 2.5D occupancy grids built from the drone's own depth rays and pose (no scene access).

Each drone keeps a square grid of ``cell_m`` cells centred on where its episode started, describing
one horizontal *flight slab*: heights within ``slab_half_m`` of the start height ``z0``. A cell is

* ``OCCUPIED`` once a ray hits a surface inside the slab above it (sticky: the sensor is exact, so
  a hit is never noise; the heights of those hits are kept too, see below), and
* ``FREE`` once it lies, along its azimuth, nearer than the first in-slab hit and within the range
  up to which some ray of that azimuth stayed inside the slab unobstructed (capped by
  ``max_range_m``).

Why a polar inverse sensor model rather than marching every ray: the free test is evaluated once
per cell of a window around each drone (``[B, W, W]`` tensor ops, no loop over rays or drones), so
an update costs the same for a 32 x 8 test sensor and the 256 x 48 default one. Its one blind spot:
an obstacle that lies only between two elevation bins inside the slab (a thin horizontal beam) can
be missed at long range; ``max_range_m`` keeps the ranges where the elevation spacing is finer than
the slab.

A map whose slab follows the drone's height (the policy's frontier memory) reads the grid at the
drone's current height with :meth:`OccupancyGrids.state_at`: every in-slab hit also widens its cell's
range of hit heights (``hit_low`` .. ``hit_high``), every cell marked free is also noted as seen free
(``seen_free``, even where an earlier hit at another height left it occupied), and a cell blocks a
slab only when its range of hits reaches into it; a cell hit only at other heights and never seen
free stays unknown (the top of a wall seen from above says nothing of the wall lower down).
Why: a drone that starts at 1.85 m sees the lintels of 2 m doors inside its slab; the sticky grid
closes those doors for the rest of the episode, though the drone passes under them once it has
descended (every door of ``apartment_003``'s first room closed that way from the first step).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from navi_environment.planning.occupancy_writes import (
    FREE,
    OCCUPIED,
    UNKNOWN,
    mark_free_cells,
    place_hits,
    slab_states,
    slab_window,
)
from navi_environment.tracer import sensor_directions

__all__ = ["FREE", "OCCUPIED", "UNKNOWN", "OccupancyGrids"]


class OccupancyGrids:
    """``B`` occupancy grids (``[B, N, N]`` int8, row = y index, column = x index).

    Args:
        num_drones: B.
        azimuth_bins, elevation_bins: the sensor shape (Az, El) of the observations.
        horizon_m: depth channel 0 is depth / horizon_m.
        cell_m: grid cell edge, metres.
        size_m: edge of each drone's square map, centred on its start position.
        slab_half_m: half height of the flight slab mapped (obstacles outside it are ignored).
        max_range_m: free space is marked no farther than this from the drone.
        device: torch device of the grids.
    """

    def __init__(
        self,
        num_drones: int,
        azimuth_bins: int,
        elevation_bins: int,
        horizon_m: float,
        *,
        cell_m: float = 0.25,
        size_m: float = 80.0,
        slab_half_m: float = 0.5,
        max_range_m: float = 12.0,
        device: str | torch.device = "cpu",
    ) -> None:
        if cell_m <= 0 or size_m <= cell_m or slab_half_m <= 0 or max_range_m <= 0:
            raise ValueError("cell_m, size_m > cell_m, slab_half_m and max_range_m must be positive")
        self.device = torch.device(device)
        self.cell_m, self.horizon_m = float(cell_m), float(horizon_m)
        self.slab_half_m, self.max_range_m = float(slab_half_m), float(max_range_m)
        self.size = math.ceil(size_m / cell_m)
        self.azimuth_bins = azimuth_bins
        dirs = torch.from_numpy(sensor_directions(azimuth_bins, elevation_bins)).to(self.device)
        dirs = dirs.view(azimuth_bins, elevation_bins, 3)
        self.azimuth = torch.atan2(dirs[:, 0, 1], dirs[:, 0, 0])  # [Az] angle from the heading
        self.cos_el = dirs[0, :, :2].norm(dim=-1)  # [El] horizontal share of a unit ray
        self.sin_el = dirs[0, :, 2]  # [El]
        reach = math.ceil(self.max_range_m / self.cell_m)
        offsets = torch.arange(-reach, reach + 1, device=self.device)
        self.window_dy, self.window_dx = torch.meshgrid(offsets, offsets, indexing="ij")  # [W, W]
        self.grid = torch.zeros(num_drones, self.size, self.size, dtype=torch.int8, device=self.device)
        self.origin = torch.zeros(num_drones, 2, device=self.device)  # world xy of cell (0, 0)'s corner
        self.z0 = torch.zeros(num_drones, device=self.device)
        self.hit_low = torch.full_like(self.grid, math.inf, dtype=torch.float32)  # lowest hit, metres
        self.hit_high = torch.full_like(self.grid, -math.inf, dtype=torch.float32)  # highest hit
        self.seen_free = torch.zeros_like(self.grid, dtype=torch.bool)  # marked free at some height

    def reset(self, rows: torch.Tensor, position: torch.Tensor) -> None:
        """Forget ``rows`` (long [K]) and centre their maps on ``position`` [K, 3] (slab at its z)."""
        self.grid[rows] = UNKNOWN
        self.hit_low[rows] = math.inf
        self.hit_high[rows] = -math.inf
        self.seen_free[rows] = False
        self.origin[rows] = position[:, :2] - 0.5 * self.size * self.cell_m
        self.z0[rows] = position[:, 2]

    def cell_of(self, xy: torch.Tensor) -> torch.Tensor:
        """[B, 2] (column, row) integer cell of world points ``xy`` [B, 2] (may lie outside)."""
        return torch.floor((xy - self.origin) / self.cell_m).long()

    def free_ranges(self, obs: torch.Tensor, position: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-azimuth free range and the in-slab hits of one observation.

        Returns:
            ``(free [B, Az] metres, hits [B, Az, El] bool)``: how far each azimuth is known free in
            the slab, and which rays hit a surface inside the slab.
        """
        depth = obs[:, 0] * self.horizon_m  # [B, Az, El]; misses read as the horizon
        valid = obs[:, 2] > 0.5
        dz = (position[:, 2] - self.z0)[:, None, None]  # drone height above the slab centre
        hit_height = dz + depth * self.sin_el
        hits = valid & (hit_height.abs() <= self.slab_half_m)
        horizontal = depth * self.cos_el
        inf = torch.full_like(horizontal, math.inf)
        nearest_hit = torch.where(hits, horizontal, inf).amin(dim=2)  # [B, Az]
        sin = self.sin_el
        bound = torch.where(sin > 0, self.slab_half_m, -self.slab_half_m)  # slab face each ray leaves by
        with torch.no_grad():
            exit_t = torch.where(sin.abs() > 1e-6, (bound - dz) / sin, inf)  # [B, 1, El] -> broadcast
        seen = (torch.minimum(depth, exit_t) * self.cos_el).amax(dim=2)  # [B, Az]
        inside = (dz.view(-1, 1).abs() < self.slab_half_m).float()  # no free space from outside the slab
        free = torch.minimum(torch.minimum(nearest_hit, seen), torch.full_like(seen, self.max_range_m))
        return free * inside, hits

    def update(self, obs: torch.Tensor, position: torch.Tensor, yaw: torch.Tensor) -> None:
        """Fold one observation per drone into the maps (all drones at once)."""
        free_range, hits = self.free_ranges(obs, position)
        self._mark_free(free_range, position, yaw)
        self._mark_hits(hits, obs[:, 0], position, yaw)

    def _mark_free(self, free_range: torch.Tensor, position: torch.Tensor, yaw: torch.Tensor) -> None:
        """Cells of each drone's window nearer than their azimuth's free range become FREE."""
        here = self.cell_of(position[:, :2])  # [B, 2]
        col = here[:, 0, None, None] + self.window_dx  # [B, W, W]
        row = here[:, 1, None, None] + self.window_dy
        centre_x = self.origin[:, 0, None, None] + (col.float() + 0.5) * self.cell_m
        centre_y = self.origin[:, 1, None, None] + (row.float() + 0.5) * self.cell_m
        dx = centre_x - position[:, 0, None, None]
        dy = centre_y - position[:, 1, None, None]
        rho = torch.hypot(dx, dy)
        bearing = torch.atan2(dy, dx) - yaw[:, None, None]
        step = 2.0 * math.pi / self.azimuth_bins
        bins = torch.remainder(torch.round(bearing / step).long(), self.azimuth_bins)
        limit = torch.gather(free_range, 1, bins.flatten(1)).view_as(rho)
        in_slab = ((position[:, 2] - self.z0).abs() < self.slab_half_m)[:, None, None]
        own = (col == here[:, 0, None, None]) & (row == here[:, 1, None, None]) & in_slab
        free = ((rho < limit) | own) & self._inside(col, row)
        mark_free_cells(self.grid, self.seen_free, free, row, col)

    def _mark_hits(
        self, hits: torch.Tensor, depth_share: torch.Tensor, position: torch.Tensor, yaw: torch.Tensor
    ) -> None:
        """Cells holding an in-slab hit become OCCUPIED and widen their range of hit heights (in
        float32 whatever the caller's dtypes, so that the CPU kernel and torch place hits alike)."""
        angle = yaw[:, None].float() + self.azimuth[None, :]  # [B, Az]
        position, depth_share = position.float().contiguous(), depth_share.float()
        place_hits(
            (self.grid, self.hit_low, self.hit_high), hits, depth_share, position=position,
            origin=self.origin, cos_az=torch.cos(angle), sin_az=torch.sin(angle), cos_el=self.cos_el,
            sin_el=self.sin_el, horizon_m=self.horizon_m, cell_m=self.cell_m,
        )  # fmt: skip

    def snapshot(self) -> tuple[torch.Tensor, ...]:
        """Copies of everything an update changes, for :meth:`restore`."""
        layers = (self.grid, self.origin, self.z0, self.hit_low, self.hit_high, self.seen_free)
        return tuple(t.clone() for t in layers)

    def restore(self, saved: tuple[torch.Tensor, ...]) -> None:
        """Put back the maps as :meth:`snapshot` copied them."""
        self.grid, self.origin, self.z0, self.hit_low, self.hit_high, self.seen_free = saved

    def state_at(self, flat: torch.Tensor) -> torch.Tensor:
        """States of cells ``flat`` (long ``[B, ...]``, row b indexing drone b's cells in ``grid``
        flattened) in each drone's current slab (``z0`` +- ``slab_half_m``): ``OCCUPIED`` where a hit
        lies within it, else ``FREE`` where the cell was seen free (at any height), else ``UNKNOWN``.
        With a fixed slab this is ``grid`` itself."""
        shape = (-1,) + (1,) * (flat.dim() - 1)
        top, bottom = (self.z0 + self.slab_half_m).view(shape), (self.z0 - self.slab_half_m).view(shape)
        return slab_states((self.hit_low, self.hit_high, self.seen_free), (top, bottom), flat)

    def window(self, here: torch.Tensor, reach: int) -> torch.Tensor:
        """``[B, W, W]`` int8 states (:meth:`state_at`, ``W = 2 reach + 1``) of the cells within
        ``reach`` cells of ``here`` [B, 2] (column, row), UNKNOWN beyond the map's edge."""
        top, bottom = self.z0 + self.slab_half_m, self.z0 - self.slab_half_m
        layers = (self.hit_low, self.hit_high, self.seen_free)
        return slab_window(layers, top=top, bottom=bottom, here=here, reach=reach)

    def _inside(self, col: torch.Tensor, row: torch.Tensor) -> torch.Tensor:
        return (col >= 0) & (col < self.size) & (row >= 0) & (row < self.size)

    def numpy_grid(self, row: int) -> np.ndarray:
        """Drone ``row``'s map as a numpy array [N, N] int8 (a view on CPU)."""
        return self.grid[row].cpu().numpy()
