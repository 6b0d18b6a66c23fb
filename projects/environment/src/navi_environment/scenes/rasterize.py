"""Exact signed distance of a box layout on a voxel grid, plus the cube every compiled scene uses.

The SDF of a union of boxes is the minimum of the boxes' exact SDFs: exact outside the solids and
the right sign inside (depth inside overlapping boxes is underestimated, never the sign). Each box
only writes voxels within ``cutoff`` of itself; everything farther holds ``cutoff``, a lower bound
that keeps the far field conservative while the cost stays proportional to the scene's boxes.

Solids thinner than ``min_solid_voxels`` are widened (about their centre) to that thickness first:
a 15 cm wall between two voxel centres 40 cm apart would otherwise leave only positive samples on
both sides, and a sphere tracer would see straight through it. The geometry moves by at most
``min_solid_voxels / 2`` voxels, within the one-voxel accuracy the runtime promises.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from navi_environment.gmdag.format import BOUNDS_PADDING_M
from navi_environment.scenes.layout import SceneLayout

SEMANTIC_BAND_VOXELS = 2.0
"""Semantic ids are kept where |sdf| < this many voxels (elsewhere 0)."""

DEFAULT_MIN_SOLID_VOXELS = 1.5
"""Thinnest solid, in voxels: every solid then holds a voxel centre at least 0.25 voxel inside it."""

DEFAULT_CUTOFF_M = 3.0
"""Distances beyond this (or 16 voxels, whichever is larger) are clamped to it: a lower bound."""


def cube_for_bounds(
    lo: np.ndarray, hi: np.ndarray, resolution: int, padding: float = BOUNDS_PADDING_M
) -> tuple[np.ndarray, float]:
    """The cubified, padded box around ``[lo, hi]``.

    Args:
        lo: (3,) minimum corner of the source, metres.
        hi: (3,) maximum corner of the source, metres.
        resolution: voxels per axis.
        padding: metres added on every side after cubifying.

    Returns:
        ((3,) float32 bmin, voxel size in metres) with the source centred in the cube.
    """
    lo64, hi64 = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    edge = float((hi64 - lo64).max()) + 2.0 * padding
    voxel = float(np.float32(edge / resolution))
    centre = (lo64 + hi64) / 2.0
    bmin = (centre - voxel * resolution / 2.0).astype(np.float32)
    return bmin, voxel


@nb.njit(cache=True, nogil=True)
def _box_index_ranges(
    boxes: np.ndarray, bmin: np.ndarray, voxel: float, cutoff: float, resolution: int
) -> np.ndarray:
    """(N, 6) int64 inclusive voxel index ranges [lo xyz, hi xyz] each box can influence."""
    ranges = np.empty((boxes.shape[0], 6), dtype=np.int64)
    for b in range(boxes.shape[0]):
        for axis in range(3):
            ranges[b, axis] = max(0, math.floor((boxes[b, axis] - cutoff - bmin[axis]) / voxel - 0.5))
            ranges[b, axis + 3] = min(
                resolution - 1, math.ceil((boxes[b, axis + 3] + cutoff - bmin[axis]) / voxel - 0.5)
            )
    return ranges


@nb.njit(cache=True, parallel=True)
def _splat_boxes(  # noqa: PLR0917 - numba kernels take positional arrays
    boxes: np.ndarray,
    labels: np.ndarray,
    ranges: np.ndarray,
    bmin: np.ndarray,
    voxel: float,
    sdf: np.ndarray,
    owner: np.ndarray,
) -> None:
    """min-accumulate every box's exact SDF into its index range; x slices run in parallel."""
    resolution = sdf.shape[0]
    for i in nb.prange(resolution):
        px = bmin[0] + (i + 0.5) * voxel
        for b in range(boxes.shape[0]):
            if i < ranges[b, 0] or i > ranges[b, 3]:
                continue
            qx = abs(px - 0.5 * (boxes[b, 0] + boxes[b, 3])) - 0.5 * (boxes[b, 3] - boxes[b, 0])
            cy, hy = 0.5 * (boxes[b, 1] + boxes[b, 4]), 0.5 * (boxes[b, 4] - boxes[b, 1])
            cz, hz = 0.5 * (boxes[b, 2] + boxes[b, 5]), 0.5 * (boxes[b, 5] - boxes[b, 2])
            ox = max(qx, 0.0)
            for j in range(ranges[b, 1], ranges[b, 4] + 1):
                qy = abs(bmin[1] + (j + 0.5) * voxel - cy) - hy
                oy = max(qy, 0.0)
                for k in range(ranges[b, 2], ranges[b, 5] + 1):
                    qz = abs(bmin[2] + (k + 0.5) * voxel - cz) - hz
                    oz = max(qz, 0.0)
                    distance = math.sqrt(ox * ox + oy * oy + oz * oz) + min(max(qx, qy, qz), 0.0)
                    if distance < sdf[i, j, k]:
                        sdf[i, j, k] = distance
                        owner[i, j, k] = labels[b]


def thicken_boxes(boxes: np.ndarray, min_thickness: float) -> np.ndarray:
    """Widen every box to at least ``min_thickness`` along each axis, keeping its centre.

    Args:
        boxes: (N, 6) ``[x0, y0, z0, x1, y1, z1]``.
        min_thickness: metres.

    Returns:
        (N, 6) float64 boxes, unchanged where already thick enough.
    """
    lo, hi = boxes[:, :3].astype(np.float64), boxes[:, 3:].astype(np.float64)
    grow = np.maximum(min_thickness - (hi - lo), 0.0) / 2.0
    return np.concatenate([lo - grow, hi + grow], axis=1)


def layout_grids(
    layout: SceneLayout,
    resolution: int,
    cutoff_m: float | None = None,
    *,
    min_solid_voxels: float = DEFAULT_MIN_SOLID_VOXELS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Rasterise a layout into the compiler's dense inputs.

    Args:
        layout: the boxes.
        resolution: voxels per axis (power of two).
        cutoff_m: distance beyond which the field is clamped (a lower bound there). Default:
            :data:`DEFAULT_CUTOFF_M` or 16 voxels, whichever is larger.
        min_solid_voxels: thinner solids are thickened to this many voxels (0: exact geometry).

    Returns:
        (sdf (R, R, R) float32, semantic (R, R, R) uint16, bmin (3,) float32, voxel size).
    """
    lo, hi = layout.bounds
    bmin, voxel = cube_for_bounds(lo, hi, resolution)
    cutoff = max(DEFAULT_CUTOFF_M, 16.0 * voxel) if cutoff_m is None else float(cutoff_m)
    sdf = np.full((resolution,) * 3, np.float32(cutoff), dtype=np.float32)
    owner = np.zeros((resolution,) * 3, dtype=np.uint16)
    boxes, origin = thicken_boxes(layout.boxes, min_solid_voxels * voxel), bmin.astype(np.float64)
    ranges = _box_index_ranges(boxes, origin, voxel, cutoff, resolution)
    _splat_boxes(boxes, layout.labels, ranges, origin, voxel, sdf, owner)
    owner[np.abs(sdf) >= np.float32(SEMANTIC_BAND_VOXELS * voxel)] = 0
    return sdf, owner, bmin, voxel
