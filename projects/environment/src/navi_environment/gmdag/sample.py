"""Evaluate a GMDAG asset: point queries and dense grids (tests, qualification, runtime set-up).

Works for any valid GMDAG v1 pool, whatever layout the writer chose (pointer arrays anywhere, no
deduplication, leaves at coarse levels). Distances are lower bounds where the format only stores
bounds: a void octant returns :func:`void_distance`; a coarse leaf returns its stored value.
"""

from __future__ import annotations

import numpy as np

from navi_environment.gmdag import _sample_kernels
from navi_environment.gmdag.format import GmdagAsset
from navi_environment.gmdag.halffloat import HALF_DECODE_TABLE


def void_distance(block_edge_voxels: float, voxel_size: float) -> float:
    """Safe (never too large) distance anywhere in a void block, metres.

    Args:
        block_edge_voxels: edge of the pruned block in voxels (its level's size).
        voxel_size: voxel edge in metres.

    Returns:
        ``sqrt(3) * (block_edge_voxels - 0.5) * voxel_size``; see ``docs/gmdag.md`` for the proof.
    """
    return float(_sample_kernels.void_distance(float(block_edge_voxels), float(voxel_size)))


def query_points(asset: GmdagAsset, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed distance and semantic id at world points.

    Each point reads the value of the voxel (or coarser leaf, or void block) containing it. A point
    outside the cube gets ``sqrt(d_out^2 + max(d_in, 0)^2)`` where ``d_out`` is its distance to the
    cube and ``d_in`` the value at its projection onto the cube: every surface lies inside the cube,
    so this never exceeds the true distance to the stored surfaces.

    Args:
        asset: a validated asset.
        points: (N, 3) float world coordinates, metres.

    Returns:
        (N,) float32 distances in metres and (N,) uint16 semantic ids (0 outside the cube).
    """
    world = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    if not np.isfinite(world).all():
        raise ValueError("query points must be finite")
    bmin = asset.bmin.astype(np.float64)
    extent = asset.resolution * float(asset.voxel_size)
    projected = np.clip(world, bmin, bmin + extent)
    outside = np.linalg.norm(world - projected, axis=1)
    cells = np.floor((projected - bmin) / asset.voxel_size).astype(np.int64)
    np.clip(cells, 0, asset.resolution - 1, out=cells)
    sdf, semantic = _sample_kernels.query_voxels(
        asset.nodes, HALF_DECODE_TABLE, asset.resolution, float(asset.voxel_size), cells
    )
    is_outside = outside > 0
    if is_outside.any():
        inside_value = np.maximum(sdf[is_outside].astype(np.float64), 0.0)
        sdf[is_outside] = np.sqrt(outside[is_outside] ** 2 + inside_value**2).astype(np.float32)
        semantic[is_outside] = 0
    return sdf, semantic


def sample_dense(asset: GmdagAsset, level_resolution: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Evaluate the DAG on a dense grid.

    At ``level_resolution == asset.resolution`` every voxel gets the value of the leaf or void block
    containing it (coarse leaves fill their whole block). At a coarser level each cell gets the
    conservative minimum over its voxels and the semantic id of its leaf closest to a surface.

    Args:
        asset: a validated asset.
        level_resolution: cells per axis, a power of two <= ``asset.resolution`` (default: full).

    Returns:
        (r, r, r) float32 distances in metres and (r, r, r) uint16 semantic ids, indexed [x, y, z];
        cell centres at ``bmin + (i + 0.5) * extent / r``.
    """
    level = asset.resolution if level_resolution is None else int(level_resolution)
    if level < 1 or level > asset.resolution or level & (level - 1):
        raise ValueError(
            f"level_resolution must be a power of two in [1, {asset.resolution}], got {level_resolution}"
        )
    return _sample_kernels.fill_dense(
        asset.nodes, HALF_DECODE_TABLE, asset.resolution, level, float(asset.voxel_size)
    )


def cell_centres(asset: GmdagAsset, level_resolution: int | None = None) -> np.ndarray:
    """(r, r, r, 3) float32 world coordinates of the cell centres of :func:`sample_dense`'s grid."""
    level = asset.resolution if level_resolution is None else int(level_resolution)
    step = asset.extent_m / level
    axis = (np.arange(level, dtype=np.float64) + 0.5) * step
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1)
    return (grid + asset.bmin.astype(np.float64)).astype(np.float32)


__all__ = ["cell_centres", "query_points", "sample_dense", "void_distance"]
