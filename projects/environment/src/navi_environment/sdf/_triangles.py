"""Compiled triangle kernels: exact point-triangle distance splatting into a narrow band.

Each triangle writes only voxels within ``band`` of its bounding box; x slices run in parallel
(no two threads ever write the same voxel), so the cost is proportional to surface area, not to
the grid volume.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True, inline="always")
def _dot(  # noqa: PLR0917 - scalar helper inlined by numba
    ax: float, ay: float, az: float, bx: float, by: float, bz: float
) -> float:
    return ax * bx + ay * by + az * bz


DEGENERATE_NORMAL2 = 1e-24
"""|ab x ac|^2 at or below this times (longest edge^2)^2: the triangle is a segment (its width is at
most 1e-12 of its length, below what float64 corner coordinates resolve)."""


@nb.njit(cache=True, nogil=True, inline="always")
def _ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, 0 when the denominator rounded to zero (a corner case only
    rounding reaches: the exact denominators are squared edge lengths or the squared area)."""
    return numerator / denominator if denominator != 0.0 else 0.0


@nb.njit(cache=True, nogil=True)
def point_triangle_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
    """Exact Euclidean distance from point ``p`` to triangle ``abc`` (Ericson, Real-Time Collision
    Detection §5.1.5: closest point by Voronoi region).

    A degenerate triangle (two corners coincide, or all three are collinear to within
    :data:`DEGENERATE_NORMAL2`) has no interior: its closest point lies on one of its edges, so the
    distance is the least of the three segment distances. That case is decided before the Voronoi
    tests, whose edge parameters divide by the squared edge lengths and would divide by zero
    (``ZeroDivisionError`` inside the parallel splat).
    """
    abx, aby, abz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    acx, acy, acz = c[0] - a[0], c[1] - a[1], c[2] - a[2]
    nx, ny, nz = aby * acz - abz * acy, abz * acx - abx * acz, abx * acy - aby * acx
    normal2 = nx * nx + ny * ny + nz * nz
    bcx, bcy, bcz = c[0] - b[0], c[1] - b[1], c[2] - b[2]
    longest2 = max(_dot(abx, aby, abz, abx, aby, abz), _dot(acx, acy, acz, acx, acy, acz))
    longest2 = max(longest2, _dot(bcx, bcy, bcz, bcx, bcy, bcz))
    if normal2 <= DEGENERATE_NORMAL2 * longest2 * longest2:
        return min(_segment_distance(p, a, b), _segment_distance(p, a, c), _segment_distance(p, b, c))
    apx, apy, apz = p[0] - a[0], p[1] - a[1], p[2] - a[2]
    d1 = _dot(abx, aby, abz, apx, apy, apz)
    d2 = _dot(acx, acy, acz, apx, apy, apz)
    if d1 <= 0.0 and d2 <= 0.0:
        qx, qy, qz = a[0], a[1], a[2]
    else:
        bpx, bpy, bpz = p[0] - b[0], p[1] - b[1], p[2] - b[2]
        d3 = _dot(abx, aby, abz, bpx, bpy, bpz)
        d4 = _dot(acx, acy, acz, bpx, bpy, bpz)
        cpx, cpy, cpz = p[0] - c[0], p[1] - c[1], p[2] - c[2]
        d5 = _dot(abx, aby, abz, cpx, cpy, cpz)
        d6 = _dot(acx, acy, acz, cpx, cpy, cpz)
        vc = d1 * d4 - d3 * d2
        vb = d5 * d2 - d1 * d6
        va = d3 * d6 - d5 * d4
        if d3 >= 0.0 and d4 <= d3:
            qx, qy, qz = b[0], b[1], b[2]
        elif d6 >= 0.0 and d5 <= d6:
            qx, qy, qz = c[0], c[1], c[2]
        elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
            t = _ratio(d1, d1 - d3)
            qx, qy, qz = a[0] + t * abx, a[1] + t * aby, a[2] + t * abz
        elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
            t = _ratio(d2, d2 - d6)
            qx, qy, qz = a[0] + t * acx, a[1] + t * acy, a[2] + t * acz
        elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
            t = _ratio(d4 - d3, (d4 - d3) + (d5 - d6))
            qx, qy, qz = b[0] + t * (c[0] - b[0]), b[1] + t * (c[1] - b[1]), b[2] + t * (c[2] - b[2])
        else:
            # Inside the face: the distance to its plane, which stays exact for slivers where
            # rebuilding the closest point from barycentric ratios would not.
            return abs(_dot(apx, apy, apz, nx, ny, nz)) / math.sqrt(normal2)
    dx, dy, dz = p[0] - qx, p[1] - qy, p[2] - qz
    return math.sqrt(dx * dx + dy * dy + dz * dz)


@nb.njit(cache=True, nogil=True)
def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    ux, uy, uz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    length2 = ux * ux + uy * uy + uz * uz
    t = 0.0
    if length2 > 0.0:
        t = min(1.0, max(0.0, ((p[0] - a[0]) * ux + (p[1] - a[1]) * uy + (p[2] - a[2]) * uz) / length2))
    dx, dy, dz = p[0] - a[0] - t * ux, p[1] - a[1] - t * uy, p[2] - a[2] - t * uz
    return math.sqrt(dx * dx + dy * dy + dz * dz)


@nb.njit(cache=True, nogil=True)
def triangle_index_ranges(
    triangles: np.ndarray, bmin: np.ndarray, voxel: float, band: float, resolution: int
) -> np.ndarray:
    """(T, 6) int64 inclusive voxel index ranges [lo xyz, hi xyz] within ``band`` of each triangle."""
    ranges = np.empty((triangles.shape[0], 6), dtype=np.int64)
    for t in range(triangles.shape[0]):
        for axis in range(3):
            lo = min(triangles[t, 0, axis], triangles[t, 1, axis], triangles[t, 2, axis])
            hi = max(triangles[t, 0, axis], triangles[t, 1, axis], triangles[t, 2, axis])
            ranges[t, axis] = max(0, math.floor((lo - band - bmin[axis]) / voxel - 0.5))
            ranges[t, axis + 3] = min(resolution - 1, math.ceil((hi + band - bmin[axis]) / voxel - 0.5))
    return ranges


@nb.njit(cache=True, parallel=True)
def splat_unsigned_distance(  # noqa: PLR0917 - the kernel's arrays, in the order they are read
    triangles: np.ndarray,
    ranges: np.ndarray,
    bmin: np.ndarray,
    voxel: float,
    udf: np.ndarray,
    owner: np.ndarray,
) -> None:
    """min-accumulate exact unsigned distances of every triangle into ``udf`` (R, R, R) float32, and
    the index of the triangle each voxel's distance came from into ``owner`` (R, R, R) int32 (the
    first of equally near ones; -1 stays where no triangle reached)."""
    resolution = udf.shape[0]
    for i in nb.prange(resolution):
        p = np.empty(3, dtype=np.float64)
        p[0] = bmin[0] + (i + 0.5) * voxel
        for t in range(triangles.shape[0]):
            if i < ranges[t, 0] or i > ranges[t, 3]:
                continue
            a, b, c = triangles[t, 0], triangles[t, 1], triangles[t, 2]
            for j in range(ranges[t, 1], ranges[t, 4] + 1):
                p[1] = bmin[1] + (j + 0.5) * voxel
                for k in range(ranges[t, 2], ranges[t, 5] + 1):
                    p[2] = bmin[2] + (k + 0.5) * voxel
                    distance = point_triangle_distance(p, a, b, c)
                    if distance < udf[i, j, k]:
                        udf[i, j, k] = distance
                        owner[i, j, k] = t
