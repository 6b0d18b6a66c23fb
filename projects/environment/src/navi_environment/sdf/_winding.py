"""Fast generalised winding number (Barill et al. 2018, "Fast Winding Numbers for Soups and Clouds").

The winding number w(p) = Σ Ω_t(p) / 4π over triangles t is ~1 inside a closed surface, ~0 outside,
and degrades gracefully for holes and soups, so ``|w| > 0.5`` is a robust inside test that does not
trust face orientation globally (``|w|`` also makes fully inverted meshes work). A bounding volume
hierarchy makes it O(log T) per point: clusters farther than ``beta`` times their radius contribute
through their first-order (dipole) expansion, near ones exactly (van Oosterom & Strackee).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

_LEAF_SIZE = 8
_BETA = 2.0
_FOUR_PI = 4.0 * math.pi


@nb.njit(cache=True, nogil=True)
def _solid_angle(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
    ax, ay, az = a[0] - p[0], a[1] - p[1], a[2] - p[2]
    bx, by, bz = b[0] - p[0], b[1] - p[1], b[2] - p[2]
    cx, cy, cz = c[0] - p[0], c[1] - p[1], c[2] - p[2]
    la = math.sqrt(ax * ax + ay * ay + az * az)
    lb = math.sqrt(bx * bx + by * by + bz * bz)
    lc = math.sqrt(cx * cx + cy * cy + cz * cz)
    det = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
    div = la * lb * lc + (ax * bx + ay * by + az * bz) * lc + (ax * cx + ay * cy + az * cz) * lb
    div += (bx * cx + by * cy + bz * cz) * la
    return 2.0 * math.atan2(det, div)


@nb.njit(cache=True, nogil=True)
def _node_moments(  # noqa: PLR0917 - numba kernels take positional arrays
    triangles: np.ndarray,
    centroid: np.ndarray,
    area_vec: np.ndarray,
    members: np.ndarray,
    centre: np.ndarray,
    moment: np.ndarray,
) -> None:
    """Area-weighted centre, summed area vector and bounding radius of a cluster (written in place)."""
    weight_sum = 1e-300
    centre[:] = 0.0
    moment[:] = 0.0
    for m in members:
        weight = math.sqrt(area_vec[m, 0] ** 2 + area_vec[m, 1] ** 2 + area_vec[m, 2] ** 2) + 1e-30
        weight_sum += weight
        for axis in range(3):
            centre[axis] += weight * centroid[m, axis]
            moment[axis] += area_vec[m, axis]
    centre /= weight_sum
    radius = 0.0
    for m in members:
        for v in range(3):
            dx = triangles[m, v, 0] - centre[0]
            dy = triangles[m, v, 1] - centre[1]
            dz = triangles[m, v, 2] - centre[2]
            radius = max(radius, math.sqrt(dx * dx + dy * dy + dz * dz))
    moment[3] = radius


@nb.njit(cache=True, nogil=True)
def _widest_axis(centroid: np.ndarray, members: np.ndarray) -> int:
    best_axis, best_spread = 0, -1.0
    for axis in range(3):
        lo, hi = np.inf, -np.inf
        for m in members:
            lo = min(lo, centroid[m, axis])
            hi = max(hi, centroid[m, axis])
        if hi - lo > best_spread:
            best_axis, best_spread = axis, hi - lo
    return best_axis


@nb.njit(cache=True, nogil=True)
def build_bvh(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Median-split BVH over triangle centroids.

    Args:
        triangles: (T, 3, 3) float64 vertices.

    Returns:
        order (T,) int64 triangle permutation; ranges (M, 2) int64 [start, end) into ``order``;
        children (M, 2) int64 (-1 for leaves); centres (M, 3) area-weighted centroids;
        moments (M, 4): dipole vector (sum of area vectors) and bounding radius around the centre.
    """
    count = triangles.shape[0]
    centroid = np.empty((count, 3))
    area_vec = np.empty((count, 3))
    for t in range(count):
        a, b, c = triangles[t, 0], triangles[t, 1], triangles[t, 2]
        centroid[t] = (a + b + c) / 3.0
        area_vec[t] = 0.5 * np.cross(b - a, c - a)
    capacity = count // 2 + 3  # leaves split from > 8 members keep >= 4, so <= count / 4 leaves
    order = np.arange(count)
    ranges = np.zeros((capacity, 2), dtype=np.int64)
    children = np.full((capacity, 2), -1, dtype=np.int64)
    centres = np.zeros((capacity, 3))
    moments = np.zeros((capacity, 4))
    ranges[0, 1] = count
    used = 1
    stack = np.empty(capacity, dtype=np.int64)
    stack[0] = 0
    top = 0
    while top >= 0:
        node = stack[top]
        top -= 1
        start, end = ranges[node, 0], ranges[node, 1]
        members = order[start:end]
        _node_moments(triangles, centroid, area_vec, members, centres[node], moments[node])
        if end - start <= _LEAF_SIZE:
            continue
        axis = _widest_axis(centroid, members)
        keys = np.empty(members.shape[0])
        for m in range(members.shape[0]):
            keys[m] = centroid[members[m], axis]
        order[start:end] = members[np.argsort(keys, kind="mergesort")]
        middle = (start + end) // 2
        for side, (lo, hi) in enumerate(((start, middle), (middle, end))):
            ranges[used, 0], ranges[used, 1] = lo, hi
            children[node, side] = used
            top += 1
            stack[top] = used
            used += 1
    return order, ranges[:used], children[:used], centres[:used], moments[:used]


@nb.njit(cache=True, parallel=True)
def winding_numbers(  # noqa: PLR0917 - numba kernels take positional arrays
    points: np.ndarray,
    triangles: np.ndarray,
    order: np.ndarray,
    ranges: np.ndarray,
    children: np.ndarray,
    centres: np.ndarray,
    moments: np.ndarray,
) -> np.ndarray:
    """(N,) float64 generalised winding numbers of (N, 3) float64 points."""
    out = np.empty(points.shape[0])
    for i in nb.prange(points.shape[0]):
        p = points[i]
        stack = np.empty(128, dtype=np.int64)
        stack[0] = 0
        top = 0
        total = 0.0
        while top >= 0:
            node = stack[top]
            top -= 1
            dx, dy, dz = centres[node, 0] - p[0], centres[node, 1] - p[1], centres[node, 2] - p[2]
            distance = math.sqrt(dx * dx + dy * dy + dz * dz)
            if distance > _BETA * moments[node, 3]:
                total += (moments[node, 0] * dx + moments[node, 1] * dy + moments[node, 2] * dz) / distance**3
            elif children[node, 0] < 0:
                for slot in range(ranges[node, 0], ranges[node, 1]):
                    t = order[slot]
                    total += _solid_angle(p, triangles[t, 0], triangles[t, 1], triangles[t, 2])
            else:
                top += 1
                stack[top] = children[node, 0]
                top += 1
                stack[top] = children[node, 1]
        out[i] = total / _FOUR_PI
    return out
