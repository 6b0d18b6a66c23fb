"""Compiled DAG evaluation kernels behind :mod:`navi_environment.gmdag.sample`.

Sizes are in voxel units (powers of two), positions are integer voxel coordinates, so the descent
is exact bit arithmetic with no floating-point boundary cases. Pools are assumed validated by the
reader (child ranges checked, acyclic, depth bounded).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

_LEAF_BIT = np.uint64(1 << 63)
_MASK_SHIFT = np.uint64(55)
_BYTE = np.uint64(0xFF)
_LOW32 = np.uint64(0xFFFFFFFF)
_LOW16 = np.uint64(0xFFFF)
_SQRT3 = math.sqrt(3.0)
_STACK = 8 * 18 + 1


@nb.njit(cache=True, nogil=True)
def void_distance(size_voxels: float, voxel: float) -> float:
    """Safe distance inside a void block of edge ``size_voxels`` voxels.

    The writer prunes a block only when every voxel-centre sample in it exceeds the block
    diagonal ``sqrt(3) * L``; the field is 1-Lipschitz and any point lies within half a voxel
    diagonal of a sample, so every point of the block is at least ``sqrt(3) * (L - voxel / 2)``
    from the nearest surface.
    """
    return _SQRT3 * (size_voxels - 0.5) * voxel


@nb.njit(cache=True, nogil=True)
def _rank(mask: int, octant: int) -> int:
    below = mask & ((1 << octant) - 1)
    count = 0
    while below:
        below &= below - 1
        count += 1
    return count


@nb.njit(cache=True, nogil=True)
def query_voxels(
    nodes: np.ndarray, table: np.ndarray, resolution: int, voxel: float, cells: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Descend the DAG for integer voxel coordinates.

    Args:
        nodes: (node_count,) uint64 validated pool.
        table: (65536,) float32 half-float decode table.
        resolution: voxels per axis.
        voxel: voxel edge, metres.
        cells: (N, 3) int64 voxel coordinates inside [0, resolution).

    Returns:
        (N,) float32 distance (leaf value or void bound), (N,) uint16 semantic id.
    """
    count = cells.shape[0]
    out_sdf = np.empty(count, dtype=np.float32)
    out_sem = np.zeros(count, dtype=np.uint16)
    for i in range(count):
        node = np.int64(0)
        size = np.int64(resolution)
        while True:
            word = nodes[node]
            if word & _LEAF_BIT:
                out_sdf[i] = table[int(word & _LOW16)]
                out_sem[i] = np.uint16((word >> np.uint64(16)) & _LOW16)
                break
            size >>= 1
            octant = 0
            if cells[i, 0] & size:
                octant |= 1
            if cells[i, 1] & size:
                octant |= 2
            if cells[i, 2] & size:
                octant |= 4
            mask = int((word >> _MASK_SHIFT) & _BYTE)
            if not (mask >> octant) & 1:
                out_sdf[i] = void_distance(float(size), voxel)
                break
            base = np.int64(word & _LOW32)
            node = np.int64(nodes[base + _rank(mask, octant)] & _LOW32)
    return out_sdf, out_sem


@nb.njit(cache=True, nogil=True)
def subtree_summary(
    nodes: np.ndarray, table: np.ndarray, root: int, size: int, voxel: float
) -> tuple[float, int]:
    """Conservative minimum of a block and the semantic id of its leaf closest to a surface."""
    stack_node = np.empty(_STACK, dtype=np.int64)
    stack_size = np.empty(_STACK, dtype=np.int64)
    stack_node[0] = root
    stack_size[0] = size
    top = 0
    minimum = np.inf
    closest = np.inf
    semantic = 0
    while top >= 0:
        node = stack_node[top]
        block = stack_size[top]
        top -= 1
        word = nodes[node]
        if word & _LEAF_BIT:
            value = table[int(word & _LOW16)]
            minimum = min(minimum, value)
            if abs(value) < closest:
                closest = abs(value)
                semantic = int((word >> np.uint64(16)) & _LOW16)
            continue
        mask = int((word >> _MASK_SHIFT) & _BYTE)
        base = int(word & _LOW32)
        rank = 0
        for octant in range(8):
            if (mask >> octant) & 1:
                top += 1
                stack_node[top] = int(nodes[base + rank] & _LOW32)
                stack_size[top] = block // 2
                rank += 1
            else:
                minimum = min(minimum, void_distance(block // 2, voxel))
    return minimum, semantic


@nb.njit(cache=True, nogil=True)
def fill_dense(  # noqa: PLR0917 - numba kernels take positional arrays
    nodes: np.ndarray, table: np.ndarray, resolution: int, level: int, voxel: float, void: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Evaluate the DAG on a (level, level, level) grid of cells of ``resolution // level`` voxels.

    A leaf or void block covering whole cells fills them with its value; an inner node exactly one
    cell big is summarised by :func:`subtree_summary` (conservative minimum).

    ``void`` ((level, level, level) bool, filled in place) marks cells covered by a void octant.

    Returns:
        (level, level, level) float32 distances and uint16 semantic ids.
    """
    cell = resolution // level
    void[:, :, :] = False
    out_sdf = np.empty((level, level, level), dtype=np.float32)
    out_sem = np.zeros((level, level, level), dtype=np.uint16)
    stack = np.empty((_STACK, 5), dtype=np.int64)  # node, size, x, y, z (voxel units)
    stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3], stack[0, 4] = 0, resolution, 0, 0, 0
    top = 0
    while top >= 0:
        node, size, x, y, z = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3], stack[top, 4]
        top -= 1
        word = nodes[node]
        if word & _LEAF_BIT:
            value = table[int(word & _LOW16)]
            semantic = int((word >> np.uint64(16)) & _LOW16)
            span = max(size // cell, 1)
            _fill_block(out_sdf, out_sem, x // cell, y // cell, z // cell, span, value, semantic)
            continue
        if size == cell:
            value, semantic_id = subtree_summary(nodes, table, node, size, voxel)
            out_sdf[x // cell, y // cell, z // cell] = value
            out_sem[x // cell, y // cell, z // cell] = semantic_id
            continue
        half = size // 2
        mask = int((word >> _MASK_SHIFT) & _BYTE)
        base = int(word & _LOW32)
        rank = 0
        for octant in range(8):
            cx = x + half * (octant & 1)
            cy = y + half * ((octant >> 1) & 1)
            cz = z + half * (octant >> 2)
            if (mask >> octant) & 1:
                top += 1
                stack[top, 0] = int(nodes[base + rank] & _LOW32)
                stack[top, 1], stack[top, 2], stack[top, 3], stack[top, 4] = half, cx, cy, cz
                rank += 1
            else:
                bound = void_distance(half, voxel)
                span = half // cell
                _fill_block(out_sdf, out_sem, cx // cell, cy // cell, cz // cell, span, bound, 0)
                void[
                    cx // cell : cx // cell + span,
                    cy // cell : cy // cell + span,
                    cz // cell : cz // cell + span,
                ] = True
    return out_sdf, out_sem


@nb.njit(cache=True, nogil=True)
def _fill_block(  # noqa: PLR0917 - numba kernels take positional arrays
    out_sdf: np.ndarray, out_sem: np.ndarray, x: int, y: int, z: int, span: int, value: float, semantic: int
) -> None:
    out_sdf[x : x + span, y : y + span, z : z + span] = value
    out_sem[x : x + span, y : y + span, z : z + span] = semantic
