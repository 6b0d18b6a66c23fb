"""Shared fixtures of the navi-environment tests (compiler and runtime helpers both append here)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import trimesh

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


# --- mesh scene fixtures (mesh import, orientation, mesh runtime tests) ------------------------------


def fixture_room(
    width: float = 7.0, depth: float = 5.0, height: float = 3.0, *, ceiling: bool = True, furniture: int = 2
) -> trimesh.Trimesh:
    """A z-up room: floor slab, four walls, an optional ceiling and boxes standing on the floor."""
    t = 0.2
    boxes = [
        ((0, 0, -t), (width, depth, 0)),
        ((0, 0, 0), (t, depth, height)),
        ((width - t, 0, 0), (width, depth, height)),
        ((0, 0, 0), (width, t, height)),
        ((0, depth - t, 0), (width, depth, height)),
    ]
    if ceiling:
        boxes.append(((0, 0, height), (width, depth, height + t)))
    for k in range(furniture):
        x = 0.5 + k * (width - 2.0) / max(furniture, 1)
        boxes.append(((x, 0.6, 0), (x + 1.0, 1.4 + 0.3 * k, 0.8)))
    parts = [trimesh.creation.box(bounds=np.array(b, dtype=np.float64)) for b in boxes]
    return trimesh.util.concatenate(parts)


def fixture_site() -> trimesh.Trimesh:
    """An open site: a 30 x 30 m ground plane (two triangles) and three boxes on it."""
    plane = trimesh.Trimesh(
        [[-15, -15, 0], [15, -15, 0], [15, 15, 0], [-15, 15, 0]], [[0, 1, 2], [0, 2, 3]], process=False
    )
    boxes = [trimesh.creation.box(bounds=np.array(b, dtype=np.float64)) for b in (
        ((-5, -5, 0), (-2, -1, 3)), ((4, 2, 0), (8, 6, 5)), ((0, 8, 0), (1, 9, 2)))]  # fmt: skip
    return trimesh.util.concatenate([plane, *boxes])


@pytest.fixture(scope="session")
def scene_meshes() -> SimpleNamespace:
    """Builders of the fixture meshes: ``room(...)`` (z up) and ``site()`` (open ground, z up)."""
    return SimpleNamespace(room=fixture_room, site=fixture_site)
