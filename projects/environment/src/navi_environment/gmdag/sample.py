"""Evaluate a GMDAG asset: point queries and dense grids (tests, qualification, runtime set-up).

Works for any valid GMDAG v1 pool, whatever layout the writer chose (pointer arrays anywhere, no
deduplication, leaves at coarse levels). Distances are lower bounds where the format only stores
bounds: a void octant returns :func:`void_distance`; a coarse leaf returns its stored value.
"""

from __future__ import annotations

from collections.abc import Callable

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
    sdf, semantic, _ = _fill(asset, level)
    return sdf, semantic


MAX_DENSE_CELLS = 1 << 31
"""Largest dense grid :func:`sample_dense` builds (2^31 cells = 1290^3, ~13 GiB with semantics)."""


def _fill(asset: GmdagAsset, level: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if level**3 > MAX_DENSE_CELLS:
        raise ValueError(f"{asset.source}: a dense {level}^3 grid exceeds {MAX_DENSE_CELLS} cells")
    void = np.empty((level, level, level), dtype=np.bool_)
    sdf, semantic = _sample_kernels.fill_dense(
        asset.nodes, HALF_DECODE_TABLE, asset.resolution, level, float(asset.voxel_size), void
    )
    return sdf, semantic, void


def cell_centres(asset: GmdagAsset, level_resolution: int | None = None) -> np.ndarray:
    """(r, r, r, 3) float32 world coordinates of the cell centres of :func:`sample_dense`'s grid."""
    level = asset.resolution if level_resolution is None else int(level_resolution)
    step = asset.extent_m / level
    axis = (np.arange(level, dtype=np.float64) + 0.5) * step
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1)
    return (grid + asset.bmin.astype(np.float64)).astype(np.float32)


__all__ = [
    "cell_centres",
    "dense_query",
    "query_points",
    "sample_dense",
    "sample_dense_refined",
    "void_distance",
]


def sample_dense_refined(
    asset: GmdagAsset, level_resolution: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Like :func:`sample_dense`, but with void octants replaced by a much tighter lower bound.

    A void value is only the bound its pruning rule implies (see :func:`void_distance`), which can
    be several times below the true distance: fine for sphere-tracing steps, wrong as clearance.
    Every surface point ``s`` lies in a voxel whose centre ``c`` has ``sdf(c) <= sqrt(3)/2`` voxels;
    ``c`` is never void (voids need more than ``sqrt(3)`` voxels) and a decoded leaf never exceeds
    the truth (beyond half-float rounding), so ``c`` is among the non-void voxels decoding to at
    most ``sqrt(3)/2`` voxels, whatever the writer's layout choices. With ``E(p)`` the distance
    from ``p`` to the nearest such voxel centre, ``d(p) >= E(p) - sqrt(3)/2 * voxel``.
    Voids get ``max(void bound, E - sqrt(3)/2 * voxel)``: still never above the true distance,
    and within about one voxel of it.

    Args:
        asset: a validated asset.
        level_resolution: cells per axis (power of two <= resolution); coarse cells take the
            minimum over their voxels.

    Returns:
        (r, r, r) float32 distances in metres and (r, r, r) uint16 semantic ids.
    """
    from navi_environment.sdf.edt import distance_to_features

    sdf, semantic, void = _fill(asset, asset.resolution)
    voxel = float(asset.voxel_size)
    half_diagonal = np.float32(0.5 * np.sqrt(3.0) * voxel)
    surface = (sdf <= half_diagonal * np.float32(1.001)) & ~void  # 1.001: half-float rounding
    del void
    if surface.any():
        # Decoded values never exceed the truth (leaves are samples or minima, voids are bounds),
        # so the larger of two lower bounds is still one.
        distance = distance_to_features(surface, voxel)
        np.maximum(sdf, distance - half_diagonal, out=sdf, where=~surface)
        del distance
    level = asset.resolution if level_resolution is None else int(level_resolution)
    if level == asset.resolution:
        return sdf, semantic
    _, coarse_semantic = sample_dense(asset, level)
    edge = asset.resolution // level
    blocks = sdf.reshape(level, edge, level, edge, level, edge).min(axis=(1, 3, 5))
    return blocks.astype(np.float32), coarse_semantic


def dense_query(
    asset: GmdagAsset, *, refined: bool = True
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """A point query backed by one dense decode of the asset (decoded once, answered by lookup).

    With ``refined=True`` the grid is :func:`sample_dense_refined`, so distances in empty space are
    within ~2 voxels of the truth instead of the void bound: use it where a distance is read as
    clearance (spawn selection, coarse acceleration grids). Memory: 6 bytes per voxel.

    Args:
        asset: a validated asset.
        refined: replace void bounds by the distance-transform lower bound.

    Returns:
        ``query(points (N, 3)) -> ((N,) float32 distance, (N,) uint16 semantic)``, same conventions
        as :func:`query_points` (voxel containing the point; safe bound outside the cube).
    """
    sdf, semantic = sample_dense_refined(asset) if refined else sample_dense(asset)
    bmin = asset.bmin.astype(np.float64)
    extent = asset.resolution * float(asset.voxel_size)
    last = asset.resolution - 1

    def query(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        world = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if not np.isfinite(world).all():
            raise ValueError("query points must be finite")
        projected = np.clip(world, bmin, bmin + extent)
        outside = np.linalg.norm(world - projected, axis=1)
        cells = np.clip(np.floor((projected - bmin) / asset.voxel_size).astype(np.int64), 0, last)
        values = sdf[cells[:, 0], cells[:, 1], cells[:, 2]]
        labels = semantic[cells[:, 0], cells[:, 1], cells[:, 2]]
        is_outside = outside > 0
        if is_outside.any():
            inside_value = np.maximum(values[is_outside].astype(np.float64), 0.0)
            values[is_outside] = np.sqrt(outside[is_outside] ** 2 + inside_value**2).astype(np.float32)
            labels[is_outside] = 0
        return values, labels

    return query
