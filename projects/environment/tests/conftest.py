"""Shared fixtures of the navi-environment tests (compiler and runtime helpers both append here)."""

from __future__ import annotations

import numpy as np
import pytest

# --- compiler fixtures (gmdag / scenes / mesh / corpus tests) -------------------------------------


def analytic_sphere_grids(
    resolution: int = 32, voxel: float = 0.1, radius: float = 0.9
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(sdf, semantic, bmin, voxel) of a sphere centred in a cube, semantic 1 within 2 voxels."""
    bmin = np.full(3, -0.5 * resolution * voxel, dtype=np.float32)
    axis = (np.arange(resolution) + 0.5) * voxel + float(bmin[0])
    x, y, z = np.meshgrid(axis, axis, axis, indexing="ij")
    sdf = (np.sqrt(x**2 + y**2 + z**2) - radius).astype(np.float32)
    semantic = np.where(np.abs(sdf) < 2 * voxel, 1, 0).astype(np.uint16)
    return sdf, semantic, bmin, voxel


@pytest.fixture(scope="session")
def sphere_grids() -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """A 32^3 sphere of radius 0.9 m in a 3.2 m cube (analytic oracle)."""
    return analytic_sphere_grids()


@pytest.fixture(scope="session")
def sphere_grid_factory():  # type: ignore[no-untyped-def]
    """The :func:`analytic_sphere_grids` builder, for tests that need other sizes."""
    return analytic_sphere_grids
