"""GMDAG v1: the compiled, on-disk form of a scene's signed distance field.

Layout (little-endian), see ``docs/gmdag.md``:

* 32-byte header, struct ``<4sIIffffI``: magic ``b"GDAG"``, version 1, resolution (power of two),
  bmin x/y/z (float32), voxel_size (float32, > 0), node_count.
* ``node_count`` uint64 words (the node pool). Node 0 is the root.

  - inner node, bit 63 = 0: bits 62..55 child mask (octant bit set = child present, clear = void);
    bits 31..0 child base = pool index where ``popcount(mask)`` child-pointer words start, in
    ascending octant order; the low 32 bits of each pointer word are the child's node index.
    Octant = x_bit | y_bit << 1 | z_bit << 2 (bit set = point lies in the upper half).
  - leaf, bit 63 = 1: bits 31..16 semantic id (non-zero = near surface, |sdf| < 2 voxels),
    bits 15..0 IEEE half-float signed distance in metres. A leaf may stand at any level: it then
    holds the block's value (uniform collapse, or a conservative block minimum).

This module owns only the constants and the in-memory asset type shared by the writer, the
reader and the runtime; it has no logic that depends on how a file was compiled.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

MAGIC = b"GDAG"
VERSION = 1
HEADER = struct.Struct("<4sIIffffI")
HEADER_BYTES = HEADER.size  # 32

LEAF_FLAG = np.uint64(1 << 63)
MASK_SHIFT = 55
MASK_BITS = np.uint64(0xFF)
CHILD_BASE_MASK = np.uint64(0xFFFF_FFFF)
SEMANTIC_SHIFT = 16
SEMANTIC_MASK = np.uint64(0xFFFF)
DISTANCE_MASK = np.uint64(0xFFFF)

# Padding added on every side of the cubified source bounding box, metres.
BOUNDS_PADDING_M = 2.0


@dataclass(frozen=True)
class GmdagAsset:
    """A validated GMDAG v1 asset in memory.

    Attributes:
        resolution: voxels along each axis of the cube (power of two).
        bmin: (3,) float32 minimum corner of the cube, metres.
        voxel_size: edge of one voxel, metres (> 0).
        nodes: (node_count,) uint64 node pool; index 0 is the root.
        source: where the asset came from (a path or ``"<bytes>"``), for error messages.
    """

    resolution: int
    bmin: np.ndarray
    voxel_size: float
    nodes: np.ndarray
    source: str = "<memory>"

    @property
    def bmax(self) -> np.ndarray:
        """(3,) float32 maximum corner: ``bmin + resolution * voxel_size``."""
        return (self.bmin + np.float32(self.resolution * self.voxel_size)).astype(np.float32)

    @property
    def extent_m(self) -> float:
        """Edge length of the cube in metres."""
        return float(self.resolution * self.voxel_size)


class GmdagFormatError(ValueError):
    """A file or buffer breaks a GMDAG v1 rule; the message names the source and the rule."""
