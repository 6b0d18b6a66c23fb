"""Compiled (numba) kernels of the GMDAG writer: level assembly with structural dedup, and layout.

Node references used during the build (int32): ``>= 0`` inner node id (row of the inner table),
``-1`` void octant, ``<= -2`` leaf id ``-(ref + 2)`` into the sorted leaf-key table.

Deduplication of inner nodes uses an open-addressing hash table whose hash only proposes a
candidate slot; a full comparison of the eight child references decides equality, so a hash
collision can never merge two different nodes.
"""

from __future__ import annotations

import numba as nb
import numpy as np

VOID_REF = -1
_EMPTY_SLOT = -1
_MASK_SHIFT = 55
_LEAF_FLAG = np.uint64(1 << 63)


@nb.njit(cache=True, nogil=True)
def _hash_row(row: np.ndarray) -> np.uint64:
    """64-bit mix of eight int32 child references (splitmix64 finaliser per element)."""
    h = np.uint64(0x9E3779B97F4A7C15)
    for i in range(8):
        v = np.uint64(np.int64(row[i]) & np.int64(0xFFFFFFFF)) ^ h
        v = (v ^ (v >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        v = (v ^ (v >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        h = v ^ (v >> np.uint64(31))
    return h


@nb.njit(cache=True, nogil=True)
def _intern_row(row: np.ndarray, rows: np.ndarray, slots: np.ndarray, n_rows: int) -> tuple[int, int]:
    """Return (id, new n_rows) of ``row`` in the inner table, inserting it when new."""
    mask = np.uint64(slots.shape[0] - 1)
    slot = _hash_row(row) & mask
    while True:
        candidate = slots[slot]
        if candidate == _EMPTY_SLOT:
            for i in range(8):
                rows[n_rows, i] = row[i]
            slots[slot] = n_rows
            return n_rows, n_rows + 1
        same = True
        for i in range(8):
            if rows[candidate, i] != row[i]:
                same = False
                break
        if same:
            return candidate, n_rows
        slot = (slot + np.uint64(1)) & mask


@nb.njit(cache=True, nogil=True)
def build_level(  # noqa: PLR0917 - numba kernels take positional arrays
    child_refs: np.ndarray,
    void_mask: np.ndarray,
    far_mask: np.ndarray,
    min_leaf_refs: np.ndarray,
    rows: np.ndarray,
    slots: np.ndarray,
    n_rows: int,
) -> tuple[np.ndarray, int]:
    """Assemble one level of blocks from the level below.

    Args:
        child_refs: (2n, 2n, 2n) int32 references of the level below.
        void_mask: (n, n, n) bool, block is pruned (min SDF exceeds its diagonal).
        far_mask: (n, n, n) bool, block collapses to its conservative minimum leaf.
        min_leaf_refs: (n, n, n) int32 leaf reference holding the block's minimum (semantic 0).
        rows: (capacity, 8) int32 inner table, filled in place.
        slots: (power of two,) int32 hash slots, filled in place.
        n_rows: rows used so far.

    Returns:
        ((n, n, n) int32 references of this level, rows used after this level).
    """
    n = void_mask.shape[0]
    refs = np.empty((n, n, n), dtype=np.int32)
    row = np.empty(8, dtype=np.int32)
    for x in range(n):
        for y in range(n):
            for z in range(n):
                if void_mask[x, y, z]:
                    refs[x, y, z] = VOID_REF
                    continue
                if far_mask[x, y, z]:
                    refs[x, y, z] = min_leaf_refs[x, y, z]
                    continue
                for octant in range(8):
                    i = 2 * x + (octant & 1)
                    j = 2 * y + ((octant >> 1) & 1)
                    row[octant] = child_refs[i, j, 2 * z + (octant >> 2)]
                first = row[0]
                uniform = True
                for octant in range(1, 8):
                    if row[octant] != first:
                        uniform = False
                        break
                if uniform and first <= -2:
                    refs[x, y, z] = first  # eight identical leaves: uniform-block collapse
                elif uniform and first == VOID_REF:
                    # Every octant is void yet the block itself is not: keep its minimum as a leaf.
                    refs[x, y, z] = min_leaf_refs[x, y, z]
                else:
                    node_id, n_rows = _intern_row(row, rows, slots, n_rows)
                    refs[x, y, z] = node_id
    return refs, n_rows


@nb.njit(cache=True, nogil=True)
def layout_pool(root_ref: int, rows: np.ndarray, n_rows: int, leaf_keys: np.ndarray) -> np.ndarray:
    """Serialise the DAG breadth-first: each inner node word is followed by its pointer array.

    Args:
        root_ref: reference of the root block (inner id or leaf reference; never void).
        rows: (capacity, 8) int32 inner table (first ``n_rows`` used).
        n_rows: number of inner nodes.
        leaf_keys: (n_leaves,) uint32 leaf payloads (semantic << 16 | half distance).

    Returns:
        (node_count,) uint64 node pool, root at index 0, only nodes reachable from the root.
    """
    n_leaves = leaf_keys.shape[0]
    capacity = n_rows * 9 + n_leaves + 1
    pool = np.zeros(capacity, dtype=np.uint64)
    inner_pos = np.full(max(n_rows, 1), -1, dtype=np.int64)
    leaf_pos = np.full(max(n_leaves, 1), -1, dtype=np.int64)
    queue = np.empty(n_rows + n_leaves + 1, dtype=np.int32)
    if root_ref <= -2:
        pool[0] = _LEAF_FLAG | np.uint64(leaf_keys[-(root_ref + 2)])
        return pool[:1]
    inner_pos[root_ref] = 0
    queue[0] = root_ref
    head, tail = 0, 1
    next_free = 1 + _popcount_children(rows, root_ref)
    while head < tail:
        node = queue[head]
        head += 1
        pos = inner_pos[node]
        mask = 0
        rank = 0
        for octant in range(8):
            child = rows[node, octant]
            if child == VOID_REF:
                continue
            mask |= 1 << octant
            if child <= -2:
                leaf = -(child + 2)
                if leaf_pos[leaf] < 0:
                    leaf_pos[leaf] = next_free
                    pool[next_free] = _LEAF_FLAG | np.uint64(leaf_keys[leaf])
                    next_free += 1
                child_pos = leaf_pos[leaf]
            else:
                if inner_pos[child] < 0:
                    inner_pos[child] = next_free
                    next_free += 1 + _popcount_children(rows, child)
                    queue[tail] = child
                    tail += 1
                child_pos = inner_pos[child]
            pool[pos + 1 + rank] = np.uint64(child_pos)
            rank += 1
        pool[pos] = (np.uint64(mask) << np.uint64(_MASK_SHIFT)) | np.uint64(pos + 1)
    return pool[:next_free]


@nb.njit(cache=True, nogil=True)
def _popcount_children(rows: np.ndarray, node: int) -> int:
    count = 0
    for octant in range(8):
        if rows[node, octant] != VOID_REF:
            count += 1
    return count


@nb.njit(cache=True, nogil=True)
def reduce_block_stats(
    minimum: np.ndarray, maximum: np.ndarray, has_semantic: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One pyramid step: min, max and any-semantic over 2x2x2 blocks.

    Args:
        minimum: (2n, 2n, 2n) float32 block minima of the level below.
        maximum: (2n, 2n, 2n) float32 block maxima of the level below.
        has_semantic: (2n, 2n, 2n) bool, block holds a non-zero semantic id.

    Returns:
        (n, n, n) float32 minima, (n, n, n) float32 maxima, (n, n, n) bool any-semantic.
    """
    n = minimum.shape[0] // 2
    out_min = np.empty((n, n, n), dtype=np.float32)
    out_max = np.empty((n, n, n), dtype=np.float32)
    out_sem = np.empty((n, n, n), dtype=np.bool_)
    for x in range(n):
        for y in range(n):
            for z in range(n):
                lo = np.float32(np.inf)
                hi = np.float32(-np.inf)
                sem = False
                for octant in range(8):
                    i = 2 * x + (octant & 1)
                    j = 2 * y + ((octant >> 1) & 1)
                    k = 2 * z + (octant >> 2)
                    lo = min(lo, minimum[i, j, k])
                    hi = max(hi, maximum[i, j, k])
                    sem = sem or has_semantic[i, j, k]
                out_min[x, y, z] = lo
                out_max[x, y, z] = hi
                out_sem[x, y, z] = sem
    return out_min, out_max, out_sem
