"""The occupancy maps' numba kernels against their torch reference: on random maps, flights and
windows (hits beyond the map's edge, many hits in one cell, windows leaving the map) both leave
the same maps and read the same windows, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from navi_environment.planning import occupancy_writes as writes
from navi_environment.planning.occupancy_writes import OCCUPIED

B, N = 3, 24


def random_layers(rng: np.random.Generator) -> tuple[torch.Tensor, ...]:
    """(grid, hit_low, hit_high, seen_free) [B, N, N] as a map a few steps old might hold them."""
    grid = rng.integers(0, 3, (B, N, N)).astype(np.int8)
    low = np.where(grid == OCCUPIED, rng.uniform(0.0, 3.0, (B, N, N)), np.inf).astype(np.float32)
    high = np.where(grid == OCCUPIED, low + rng.uniform(0.0, 1.0, (B, N, N)), -np.inf).astype(np.float32)
    seen = rng.random((B, N, N)) < 0.4
    return tuple(torch.from_numpy(a) for a in (grid, low, high, seen))


def clones(tensors: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    return tuple(t.clone() for t in tensors)


@pytest.mark.parametrize("seed", range(5))
def test_marking_free_cells_matches_the_torch_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    grid, _, _, seen = random_layers(rng)
    width = 9
    row = torch.from_numpy(rng.integers(0, N, (B, width, width)))  # repeated cells included
    col = torch.from_numpy(rng.integers(0, N, (B, width, width)))
    free = torch.from_numpy(rng.random((B, width, width)) < 0.5)
    kernel, reference = clones((grid, seen)), clones((grid, seen))
    writes.mark_free_cells(*kernel, free, row, col)
    writes._mark_free_torch(*reference, free, row, col)
    assert torch.equal(kernel[0], reference[0]) and torch.equal(kernel[1], reference[1])
    assert not torch.equal(kernel[0], grid)  # something was marked


@pytest.mark.parametrize(("seed", "cell_m", "horizon_m"), [(0, 0.25, 30.0), (1, 0.3, 12.5), (2, 0.5, 7.3)])
def test_placing_hits_matches_the_torch_reference(seed: int, cell_m: float, horizon_m: float) -> None:
    rng = np.random.default_rng(seed)
    grid, low, high, _ = random_layers(rng)
    azimuths, elevations = 48, 12
    hits = torch.from_numpy(rng.random((B, azimuths, elevations)) < 0.3)
    depth_share = torch.from_numpy(rng.uniform(0.0, 1.0, (B, azimuths, elevations)).astype(np.float32))
    edge = N * cell_m
    # some drones off the map, so that some of their hits are too
    position = torch.from_numpy(rng.uniform(-0.2 * edge, 1.2 * edge, (B, 3)).astype(np.float32))
    origin = torch.from_numpy(rng.uniform(-0.5, 0.5, (B, 2)).astype(np.float32))
    angle = torch.from_numpy(rng.uniform(-np.pi, np.pi, (B, azimuths)).astype(np.float32))
    elevation = torch.from_numpy(rng.uniform(-1.2, 1.2, elevations).astype(np.float32))
    geometry = (
        position,
        origin,
        torch.cos(angle),
        torch.sin(angle),
        torch.cos(elevation),
        torch.sin(elevation),
    )
    kernel, reference = clones((grid, low, high)), clones((grid, low, high))
    names = ("position", "origin", "cos_az", "sin_az", "cos_el", "sin_el")
    writes.place_hits(kernel, hits, depth_share, **dict(zip(names, geometry, strict=True)),
                      horizon_m=horizon_m, cell_m=cell_m)  # fmt: skip
    writes._place_hits_torch(reference, hits, depth_share, geometry, (horizon_m, cell_m))
    for ours, theirs in zip(kernel, reference, strict=True):
        assert torch.equal(ours, theirs)
    assert not torch.equal(kernel[1], low)  # some hits landed on the map


@pytest.mark.parametrize("seed", range(5))
def test_reading_a_window_at_the_drones_height_matches_the_torch_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    _, low, high, seen = random_layers(rng)
    here = torch.from_numpy(rng.integers(-4, N + 4, (B, 2)))  # windows leaving the map, drones beyond it
    z0 = torch.from_numpy(rng.uniform(0.5, 2.5, B).astype(np.float32))
    top, bottom = z0 + 0.5, z0 - 0.5
    ours = writes.slab_window((low, high, seen), top=top, bottom=bottom, here=here, reach=6)
    theirs = writes._slab_window_torch((low, high, seen), (top, bottom), here, 6)
    assert ours.dtype == theirs.dtype == torch.int8
    assert torch.equal(ours, theirs)
    assert len(torch.unique(ours)) == 3  # every state read somewhere
