"""Exact Euclidean distance transform (Felzenszwalb & Huttenlocher 2012), compiled and parallel.

scipy's ``distance_transform_edt`` is single-threaded and keeps an int32 feature transform of
12 bytes per voxel; this separable lower-envelope version works in place on one float32 grid
(4 bytes per voxel) and runs its 1-D passes in parallel, several times faster on 2 cores.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def _envelope_1d(f: np.ndarray, out: np.ndarray, v: np.ndarray, z: np.ndarray) -> None:
    """Squared distance of one line: out[q] = min_p (q - p)^2 + f[p] (f may hold inf)."""
    n = f.shape[0]
    k = -1
    for q in range(n):
        fq = f[q]
        if fq == np.inf:
            continue
        while k >= 0:
            p = v[k]
            s = ((fq + q * q) - (f[p] + p * p)) / (2.0 * q - 2.0 * p)
            if s <= z[k]:
                k -= 1
                continue
            break
        if k < 0:
            k = 0
            v[0] = q
            z[0] = -np.inf
        else:
            p = v[k]
            k += 1
            v[k] = q
            z[k] = ((fq + q * q) - (f[p] + p * p)) / (2.0 * q - 2.0 * p)
        z[k + 1] = np.inf
    if k < 0:
        out[:] = np.inf
        return
    k = 0
    for q in range(n):
        while z[k + 1] < q:
            k += 1
        p = v[k]
        out[q] = (q - p) * (q - p) + f[p]


@nb.njit(cache=True, parallel=True)
def _pass(grid: np.ndarray, axis: int) -> None:
    """Run the 1-D envelope along ``axis`` of a cubic float32 grid, in place."""
    n = grid.shape[0]
    for a in nb.prange(n):
        f = np.empty(n, dtype=np.float64)
        out = np.empty(n, dtype=np.float64)
        v = np.empty(n, dtype=np.int64)
        z = np.empty(n + 1, dtype=np.float64)
        for b in range(n):
            for c in range(n):
                if axis == 0:
                    f[c] = grid[c, a, b]
                elif axis == 1:
                    f[c] = grid[a, c, b]
                else:
                    f[c] = grid[a, b, c]
            _envelope_1d(f, out, v, z)
            for c in range(n):
                if axis == 0:
                    grid[c, a, b] = out[c]
                elif axis == 1:
                    grid[a, c, b] = out[c]
                else:
                    grid[a, b, c] = out[c]


def distance_to_features(features: np.ndarray, spacing: float = 1.0) -> np.ndarray:
    """Euclidean distance from every voxel centre to the nearest feature voxel centre.

    Args:
        features: (R, R, R) bool, True at feature voxels.
        spacing: voxel edge (result unit per voxel).

    Returns:
        (R, R, R) float32 distances (0 on features, inf everywhere when there is no feature).
    """
    if features.ndim != 3 or len(set(features.shape)) != 1:
        raise ValueError(f"features must be a cubic 3-D grid, got shape {features.shape}")
    grid = np.where(features, np.float32(0.0), np.float32(np.inf))
    for axis in (2, 1, 0):
        _pass(grid, axis)
    np.sqrt(grid, out=grid)
    if spacing != 1.0:
        grid *= np.float32(spacing)
    return grid


__all__ = ["distance_to_features"]
