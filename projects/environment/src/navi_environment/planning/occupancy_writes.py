"""The occupancy maps' per-step writes and windowed reads: torch for any device, numba kernels for CPU.

Why two: :class:`~navi_environment.planning.occupancy.OccupancyGrids` is updated for every drone at
every step (the policy's frontier memory, the frontier planner). Its arithmetic is a handful of dense
tensor operations, but placing a step's ~7,000 in-slab hits and ~9,000 free cells and reading a
drone's window at its height took 25-30 small indexing operations per step, each paying torch's
per-operation cost on a CPU: about 3.5 of the memory's 6-7 ms per step for 4 drones. Each function
here does one of those jobs in one numba loop on CPU tensors and as the torch operations elsewhere;
both compute the same float32 values in the same order (placements are multiplications, additions
and a division, reads are comparisons), so they agree to the bit; ``test_occupancy_writes.py`` binds
them on random flights.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit

UNKNOWN, FREE, OCCUPIED = 0, 1, 2


def mark_free_cells(
    grid: torch.Tensor, seen_free: torch.Tensor, free: torch.Tensor, row: torch.Tensor, col: torch.Tensor
) -> None:
    """Cells ``(row, col)`` [B, W, W] of drone b's map where ``free`` holds: UNKNOWN becomes FREE
    (an OCCUPIED cell stays so) and ``seen_free`` is set. ``free`` is False wherever the window
    leaves the map."""
    if grid.device.type == "cpu":
        _mark_free_kernel(grid.numpy(), seen_free.numpy(), free.numpy(), row.numpy(), col.numpy())
    else:
        _mark_free_torch(grid, seen_free, free, row, col)


def _mark_free_torch(
    grid: torch.Tensor, seen_free: torch.Tensor, free: torch.Tensor, row: torch.Tensor, col: torch.Tensor
) -> None:
    b = torch.arange(free.shape[0], device=grid.device)[:, None, None].expand_as(free)
    b, row, col = b[free], row[free], col[free]
    current = grid[b, row, col]
    grid[b, row, col] = torch.where(current == UNKNOWN, FREE, current).to(torch.int8)
    seen_free[b, row, col] = True


@njit(cache=True, nogil=True)
def _mark_free_kernel(grid, seen_free, free, row, col):  # type: ignore[no-untyped-def]  # bound by the test
    batch, height, width = free.shape
    for b in range(batch):
        for i in range(height):
            for j in range(width):
                if free[b, i, j]:
                    r, c = row[b, i, j], col[b, i, j]
                    if grid[b, r, c] == UNKNOWN:
                        grid[b, r, c] = FREE
                    seen_free[b, r, c] = True


def place_hits(
    maps: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    hits: torch.Tensor,
    depth_share: torch.Tensor,
    *,
    position: torch.Tensor,
    origin: torch.Tensor,
    cos_az: torch.Tensor,
    sin_az: torch.Tensor,
    cos_el: torch.Tensor,
    sin_el: torch.Tensor,
    horizon_m: float,
    cell_m: float,
) -> None:
    """Cells holding an in-slab hit become OCCUPIED, and each widens its cell's range of hit heights.

    ``hits`` / ``depth_share`` [B, Az, El] (the rays that hit inside the slab; depth / horizon),
    ``position`` [B, 3], ``origin`` [B, 2] (each map's corner), ``cos_az`` / ``sin_az`` [B, Az] of
    each azimuth's world angle, ``cos_el`` / ``sin_el`` [El]; ``grid`` [B, N, N] int8, ``hit_low``
    and ``hit_high`` [B, N, N] float32 are written in place. A hit at ``depth = share * horizon_m``
    lies ``depth * cos_el`` away horizontally, at height ``z + depth * sin_el``, in cell
    ``floor((x - origin) / cell_m)``; hits outside the map are dropped. ``maps``: ``(grid, hit_low,
    hit_high)``.
    """
    grid, hit_low, hit_high = maps
    if grid.device.type == "cpu":
        _place_hits_kernel(
            grid.numpy(), hit_low.numpy(), hit_high.numpy(), hits.numpy(), depth_share.numpy(),
            position.numpy(), origin.numpy(), cos_az.numpy(), sin_az.numpy(), cos_el.numpy(),
            sin_el.numpy(), np.float32(horizon_m), np.float32(cell_m),
        )  # fmt: skip
    else:
        geometry = (position, origin, cos_az, sin_az, cos_el, sin_el)
        _place_hits_torch(maps, hits, depth_share, geometry, (horizon_m, cell_m))


def _place_hits_torch(
    maps: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    hits: torch.Tensor,
    depth_share: torch.Tensor,
    geometry: tuple[torch.Tensor, ...],
    scales: tuple[float, float],
) -> None:
    grid, hit_low, hit_high = maps
    position, origin, cos_az, sin_az, cos_el, sin_el = geometry
    horizon_m, cell_m = scales
    size = grid.shape[-1]
    b, a, e = hits.nonzero(as_tuple=True)
    depth = depth_share[b, a, e] * horizon_m
    horizontal = depth * cos_el[e]
    x = position[b, 0] + horizontal * cos_az[b, a]
    y = position[b, 1] + horizontal * sin_az[b, a]
    col = torch.floor((x - origin[b, 0]) / cell_m).long()
    row = torch.floor((y - origin[b, 1]) / cell_m).long()
    keep = (col >= 0) & (col < size) & (row >= 0) & (row < size)
    b, row, col = b[keep], row[keep], col[keep]
    grid[b, row, col] = OCCUPIED
    height = position[b, 2] + depth[keep] * sin_el[e[keep]]
    flat = (b * size + row) * size + col
    hit_low.view(-1).scatter_reduce_(0, flat, height, reduce="amin")
    hit_high.view(-1).scatter_reduce_(0, flat, height, reduce="amax")


@njit(cache=True, nogil=True)
def _place_hits_kernel(  # type: ignore[no-untyped-def]  # noqa: PLR0917 - numba kernels take positional arrays
    grid, hit_low, hit_high, hits, depth_share, position, origin, cos_az, sin_az, cos_el, sin_el, horizon,
    cell,
):  # fmt: skip
    batch, azimuths, elevations = hits.shape
    size = grid.shape[-1]
    for b in range(batch):
        for a in range(azimuths):
            for e in range(elevations):
                if not hits[b, a, e]:
                    continue
                depth = depth_share[b, a, e] * horizon
                horizontal = depth * cos_el[e]
                x = position[b, 0] + horizontal * cos_az[b, a]
                y = position[b, 1] + horizontal * sin_az[b, a]
                col = math.floor((x - origin[b, 0]) / cell)
                row = math.floor((y - origin[b, 1]) / cell)
                if col < 0 or col >= size or row < 0 or row >= size:
                    continue
                grid[b, row, col] = OCCUPIED
                height = position[b, 2] + depth * sin_el[e]
                hit_low[b, row, col] = min(hit_low[b, row, col], height)
                hit_high[b, row, col] = max(hit_high[b, row, col], height)


def slab_window(
    layers: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    *,
    top: torch.Tensor,
    bottom: torch.Tensor,
    here: torch.Tensor,
    reach: int,
) -> torch.Tensor:
    """``[B, W, W]`` int8 states (``W = 2 reach + 1``) of the cells within ``reach`` cells of
    ``here`` [B, 2] (column, row) in each drone's slab ``bottom`` .. ``top`` [B]: OCCUPIED where the
    cell's range of hits reaches into it, else FREE where it was seen free, else UNKNOWN (also
    beyond the map's edge). Row i, column j of the window is map row ``here_row - reach + i``,
    column ``here_col - reach + j``. ``layers`` is ``(hit_low, hit_high, seen_free)`` [B, N, N]."""
    hit_low, hit_high, seen_free = layers
    if hit_low.device.type == "cpu":
        out = torch.empty(here.shape[0], 2 * reach + 1, 2 * reach + 1, dtype=torch.int8)
        _slab_window_kernel(
            hit_low.numpy(), hit_high.numpy(), seen_free.numpy(), top.numpy(), bottom.numpy(),
            here.numpy(), reach, out.numpy(),
        )  # fmt: skip
        return out
    return _slab_window_torch(layers, (top, bottom), here, reach)


def _slab_window_torch(
    layers: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    slab: tuple[torch.Tensor, torch.Tensor],
    here: torch.Tensor,
    reach: int,
) -> torch.Tensor:
    hit_low = layers[0]
    top, bottom = slab
    batch, size = hit_low.shape[0], hit_low.shape[-1]
    offsets = torch.arange(-reach, reach + 1, device=hit_low.device)
    dy, dx = torch.meshgrid(offsets, offsets, indexing="ij")
    col = here[:, 0, None, None] + dx
    row = here[:, 1, None, None] + dy
    inside = (col >= 0) & (col < size) & (row >= 0) & (row < size)
    b = torch.arange(batch, device=hit_low.device)[:, None, None]
    flat = (b * size + row.clamp(0, size - 1)) * size + col.clamp(0, size - 1)
    state = slab_states(layers, (top[:, None, None], bottom[:, None, None]), flat)
    return torch.where(inside, state, UNKNOWN).to(torch.int8)


def slab_states(
    layers: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    slab: tuple[torch.Tensor, torch.Tensor],
    flat: torch.Tensor,
) -> torch.Tensor:
    """int8 states of the cells ``flat`` (indices into ``layers`` flattened) in the slab ``(top,
    bottom)`` (broadcast against ``flat``): OCCUPIED where the cell's range of hits reaches into the
    slab, else FREE where it was seen free (at any height), else UNKNOWN. The rule
    ``_slab_window_kernel`` mirrors."""
    hit_low, hit_high, seen_free = layers
    top, bottom = slab
    blocked = (hit_low.view(-1)[flat] <= top) & (hit_high.view(-1)[flat] >= bottom)
    state = torch.where(seen_free.view(-1)[flat], FREE, UNKNOWN)
    return torch.where(blocked, OCCUPIED, state).to(torch.int8)


@njit(cache=True, nogil=True)
def _slab_window_kernel(  # type: ignore[no-untyped-def]  # noqa: PLR0917 - numba kernels take positional arrays
    hit_low, hit_high, seen_free, top, bottom, here, reach, out
):
    batch, width = out.shape[0], out.shape[1]
    size = hit_low.shape[-1]
    for b in range(batch):
        for i in range(width):
            r = here[b, 1] - reach + i
            for j in range(width):
                c = here[b, 0] - reach + j
                state = UNKNOWN
                if 0 <= r < size and 0 <= c < size:
                    if hit_low[b, r, c] <= top[b] and hit_high[b, r, c] >= bottom[b]:
                        state = OCCUPIED
                    elif seen_free[b, r, c]:
                        state = FREE
                out[b, i, j] = state
