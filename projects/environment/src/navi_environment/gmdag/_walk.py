"""Compiled layout walk used by the GMDAG reader on every load.

A depth-first walk from the root visits every reachable node once (three-colour marking), so it
is linear in the reachable pool even for heavily deduplicated DAGs. Every index is range-checked
before it is dereferenced: numba does not bounds-check, and the input is untrusted.
"""

from __future__ import annotations

import numba as nb
import numpy as np

WALK_OK = 0
WALK_CHILD_BASE_RANGE = 1
WALK_CHILD_INDEX_RANGE = 2
WALK_CYCLE = 3
WALK_TOO_DEEP = 4
WALK_LEAF_NOT_FINITE = 5

_LEAF_BIT = np.uint64(1 << 63)
_MASK_SHIFT = np.uint64(55)
_BYTE = np.uint64(0xFF)
_LOW32 = np.uint64(0xFFFFFFFF)
_HALF_EXPONENT = np.uint64(0x7C00)


@nb.njit(cache=True, nogil=True)
def popcount8(mask: int) -> int:
    """Number of set bits in an 8-bit child mask."""
    count = 0
    for octant in range(8):
        count += (mask >> octant) & 1
    return count


@nb.njit(cache=True, nogil=True)
def walk_pool(nodes: np.ndarray, max_depth: int) -> tuple[int, int, int]:  # noqa: PLR0911 - one exit per rule
    """Check every node reachable from the root.

    Args:
        nodes: (node_count,) uint64 pool, node_count >= 1.
        max_depth: log2(resolution): an inner node may not stand at this depth or deeper.

    Returns:
        (code, node index, detail): ``WALK_OK`` or the first violated rule, the offending node and
        a rule-specific number (child base, child index, or depth).
    """
    count = nodes.shape[0]
    colour = np.zeros(count, dtype=np.uint8)  # 0 unseen, 1 on the current path, 2 finished
    height = np.zeros(count, dtype=np.int64)  # inner levels below and including a finished node
    stack_node = np.empty(max_depth + 2, dtype=np.int64)
    stack_next = np.empty(max_depth + 2, dtype=np.int64)
    stack_height = np.zeros(max_depth + 2, dtype=np.int64)
    top = 0
    stack_node[0] = 0
    stack_next[0] = 0
    colour[0] = 1
    while top >= 0:
        node = stack_node[top]
        word = nodes[node]
        if word & _LEAF_BIT:
            if (word & _HALF_EXPONENT) == _HALF_EXPONENT:
                return WALK_LEAF_NOT_FINITE, node, 0
            colour[node] = 2
            top -= 1
            continue
        if top >= max_depth:
            return WALK_TOO_DEEP, node, top
        mask = int((word >> _MASK_SHIFT) & _BYTE)
        base = int(word & _LOW32)
        children = popcount8(mask)
        if base + children > count:
            return WALK_CHILD_BASE_RANGE, node, base
        rank = stack_next[top]
        if rank >= children:
            # Finished: record the height and pass it to the parent frame.
            height[node] = stack_height[top] + 1
            colour[node] = 2
            if top > 0:
                stack_height[top - 1] = max(stack_height[top - 1], height[node])
            top -= 1
            continue
        stack_next[top] = rank + 1
        child = int(nodes[base + rank] & _LOW32)
        if child >= count:
            return WALK_CHILD_INDEX_RANGE, node, child
        if colour[child] == 1:
            return WALK_CYCLE, node, child
        if colour[child] == 2:
            # Shared subtree seen before, possibly at a shallower depth: it must still fit here.
            if top + 1 + height[child] > max_depth:
                return WALK_TOO_DEEP, child, top + 1
            stack_height[top] = max(stack_height[top], height[child])
            continue
        colour[child] = 1
        top += 1
        stack_node[top] = child
        stack_next[top] = 0
        stack_height[top] = 0
    return WALK_OK, 0, 0
