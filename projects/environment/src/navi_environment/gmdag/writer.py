"""GMDAG v1 writer: dense signed distance + semantic grids -> deduplicated sparse voxel DAG.

The build runs bottom-up over a min/max pyramid (see ``docs/gmdag.md``):

* a block is **void** (pruned from its parent's mask) when its minimum SDF exceeds its diagonal and
  the distance a reader then returns for it (:func:`~navi_environment.gmdag.sample.void_distance`,
  ``sqrt(3) * (edge - 0.5)`` voxels) is at least ``exact_clearance_m``: closer to a surface than that,
  distances stay stored, because collisions (a drone radius) and doorways need them, not just a
  lower bound. Without this rule a 0.84 m doorway read 0.17 m at its centre (a level-1 void block)
  and no 0.3 m drone could pass;
* a block with no semantic voxel whose SDF range is within ``far_tolerance_voxels`` collapses to a
  **conservative leaf** holding its minimum (a lower bound, so sphere-tracing steps stay safe);
* eight identical child leaves collapse into one leaf (**uniform-block collapse**);
* everything else becomes an inner node, deduplicated by structural equality of its children.

Output is a pure function of the inputs (fixed traversal orders, no hashing of pointers), so the
same grids always give byte-identical files.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import structlog

from navi_common.atomic import atomic_write_bytes
from navi_environment.corpus.settings import DEFAULT_EXACT_CLEARANCE_M
from navi_environment.gmdag import _build
from navi_environment.gmdag.format import HEADER, MAGIC, VERSION, GmdagAsset
from navi_environment.gmdag.halffloat import float32_to_half_bits

log = structlog.get_logger()

SQRT3 = math.sqrt(3.0)
MAX_RESOLUTION = 1 << 12


def _validate_grids(sdf: np.ndarray, semantic: np.ndarray, bmin: np.ndarray, voxel_size: float) -> int:
    if sdf.ndim != 3 or len(set(sdf.shape)) != 1:
        raise ValueError(f"sdf must be a cubic 3-D grid [R, R, R], got shape {sdf.shape}")
    resolution = int(sdf.shape[0])
    if resolution < 2 or resolution > MAX_RESOLUTION or resolution & (resolution - 1):
        raise ValueError(f"resolution must be a power of two in [2, {MAX_RESOLUTION}], got {resolution}")
    if semantic.shape != sdf.shape:
        raise ValueError(f"semantic shape {semantic.shape} differs from sdf shape {sdf.shape}")
    if bmin.shape != (3,) or not np.isfinite(bmin).all():
        raise ValueError(f"bmin must be three finite numbers, got {bmin!r}")
    if not (math.isfinite(voxel_size) and voxel_size > 0):
        raise ValueError(f"voxel_size must be finite and > 0, got {voxel_size}")
    if np.isnan(sdf).any():
        raise ValueError("sdf contains NaN; the distance field is broken upstream")
    return resolution


def _leaf_refs(keys: np.ndarray, leaf_table: np.ndarray) -> np.ndarray:
    """Leaf references ``-(id + 2)`` of uint32 keys already present in the sorted table."""
    ids = np.searchsorted(leaf_table, keys).astype(np.int32)
    return (-ids - 2).astype(np.int32)


def _void_reading(level: int, voxel: float) -> float:
    """Distance a reader returns inside a void block of 2^level voxels (``sample.void_distance``)."""
    return SQRT3 * ((1 << level) - 0.5) * voxel


def _classify_blocks(
    sdf: np.ndarray, semantic: np.ndarray, voxel: float, tolerance: np.float32, exact_clearance_m: float
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Per level k (blocks of 2^k voxels): block minima, void masks and far-collapse masks.

    Void: minimum SDF above the block diagonal (never the root), at a level whose void reading is
    at least ``exact_clearance_m``. Far: no semantic voxel and an SDF range within ``tolerance``.
    Level 0 has no far mask (a voxel is a leaf anyway).
    """
    depth = sdf.shape[0].bit_length() - 1
    minima, maxima, semantic_any = [sdf], [sdf], [semantic != 0]
    for _ in range(depth):
        lo, hi, sem = _build.reduce_block_stats(minima[-1], maxima[-1], semantic_any[-1])
        minima.append(lo)
        maxima.append(hi)
        semantic_any.append(sem)

    def void_at(level: int) -> np.ndarray:
        if level == depth or _void_reading(level, voxel) < exact_clearance_m:
            return np.zeros(minima[level].shape, dtype=bool)
        return minima[level] > np.float32(voxel * (1 << level) * SQRT3)

    void_masks, far_masks = [void_at(0)], [np.zeros((1, 1, 1), dtype=bool)]
    for level in range(1, depth + 1):
        void = void_at(level)
        void_masks.append(void)
        far_masks.append(~semantic_any[level] & (maxima[level] - minima[level] <= tolerance) & ~void)
    return minima, void_masks, far_masks


def compile_sdf_to_gmdag(
    sdf: np.ndarray,
    semantic: np.ndarray,
    bmin: np.ndarray | tuple[float, float, float],
    voxel_size: float,
    *,
    far_tolerance_voxels: float = 1.0,
    exact_clearance_m: float = DEFAULT_EXACT_CLEARANCE_M,
    source: str = "<memory>",
) -> GmdagAsset:
    """Compile dense grids into a GMDAG v1 asset.

    Args:
        sdf: (R, R, R) float32 signed distance in metres, indexed [x, y, z], sampled at voxel centres
            ``bmin + (i + 0.5) * voxel_size``; negative inside solids. R is a power of two.
        semantic: (R, R, R) uint16 semantic ids (non-zero near surfaces, zero elsewhere).
        bmin: (3,) minimum corner of the cube, metres.
        voxel_size: voxel edge, metres (> 0).
        far_tolerance_voxels: a block without semantic ids whose SDF range is at most this many
            voxels collapses to one leaf holding its minimum. 0 keeps only exact uniform collapse.
        exact_clearance_m: no block is pruned as void where a reader would then return less than
            this distance (metres): the field stays stored near surfaces. 0 prunes every void block.
        source: label recorded in the asset (for messages).

    Returns:
        The compiled asset; ``nodes[0]`` is the root.

    Raises:
        ValueError: for non-cubic or non-power-of-two grids, NaN distances or a bad box.
    """
    sdf = np.ascontiguousarray(sdf, dtype=np.float32)
    semantic = np.ascontiguousarray(semantic, dtype=np.uint16)
    bmin_array = np.asarray(bmin, dtype=np.float32).reshape(-1)
    resolution = _validate_grids(sdf, semantic, bmin_array, float(voxel_size))
    voxel = float(np.float32(voxel_size))
    depth = resolution.bit_length() - 1

    minima, void_masks, far_masks = _classify_blocks(
        sdf, semantic, voxel, np.float32(far_tolerance_voxels * voxel), float(exact_clearance_m)
    )

    voxel_keys = (semantic.astype(np.uint32) << np.uint32(16)) | float32_to_half_bits(sdf).astype(np.uint32)
    min_keys = [float32_to_half_bits(minima[level]).astype(np.uint32) for level in range(depth + 1)]
    candidates = [voxel_keys[~void_masks[0]]]
    candidates += [min_keys[level][~void_masks[level]] for level in range(1, depth + 1)]
    leaf_table = np.unique(np.concatenate(candidates))

    refs = np.where(void_masks[0], np.int32(_build.VOID_REF), _leaf_refs(voxel_keys, leaf_table))
    del voxel_keys
    capacity = sum(int(np.count_nonzero(~void_masks[k] & ~far_masks[k])) for k in range(1, depth + 1))
    rows = np.empty((max(capacity, 1), 8), dtype=np.int32)
    slots = np.full(1 << max(4, (2 * max(capacity, 1) - 1).bit_length()), -1, dtype=np.int32)
    n_rows = 0
    for level in range(1, depth + 1):
        min_leaf = _leaf_refs(min_keys[level], leaf_table)
        refs, n_rows = _build.build_level(
            refs, void_masks[level], far_masks[level], min_leaf, rows, slots, n_rows
        )
    nodes = _build.layout_pool(int(refs[0, 0, 0]), rows, n_rows, leaf_table)
    log.debug(
        "gmdag.compiled",
        source=source,
        resolution=resolution,
        node_count=int(nodes.shape[0]),
        inner_nodes=n_rows,
        leaf_keys=int(leaf_table.shape[0]),
    )
    return GmdagAsset(resolution=resolution, bmin=bmin_array, voxel_size=voxel, nodes=nodes, source=source)


def encode_gmdag(asset: GmdagAsset) -> bytes:
    """Serialise an asset to GMDAG v1 bytes (32-byte header + little-endian uint64 pool)."""
    bmin = np.asarray(asset.bmin, dtype=np.float32)
    header = HEADER.pack(
        MAGIC,
        VERSION,
        int(asset.resolution),
        float(bmin[0]),
        float(bmin[1]),
        float(bmin[2]),
        float(asset.voxel_size),
        int(asset.nodes.shape[0]),
    )
    return header + np.ascontiguousarray(asset.nodes, dtype="<u8").tobytes()


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (shared helper: :func:`navi_common.atomic.atomic_write`)."""
    atomic_write_bytes(path, data)


def write_gmdag(asset: GmdagAsset, path: str | Path) -> int:
    """Write an asset atomically; returns the number of bytes written."""
    data = encode_gmdag(asset)
    write_atomic(Path(path), data)
    return len(data)
