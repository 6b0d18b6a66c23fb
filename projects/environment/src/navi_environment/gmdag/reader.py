"""GMDAG v1 reader: parse and validate every rule of the format before anything traces it.

Each violated rule raises :class:`GmdagFormatError` with its own message naming the source and the
rule, so a corrupt corpus file is diagnosable from the log line alone. The layout walk is compiled
(numba) and linear in the reachable pool; it runs on every load.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from navi_environment.gmdag import _walk
from navi_environment.gmdag.format import HEADER, HEADER_BYTES, MAGIC, VERSION, GmdagAsset, GmdagFormatError

MAX_READ_RESOLUTION = 1 << 16
"""Largest resolution the reader accepts (the walk depth is log2 of it)."""

_WALK_MESSAGES = {
    _walk.WALK_CHILD_BASE_RANGE: "child base out of range: node {node} points its child array at {detail}, "
    "past the end of the pool",
    _walk.WALK_CHILD_INDEX_RANGE: "child index out of range: node {node} references node {detail}",
    _walk.WALK_CYCLE: "cycle: node {node} references node {detail}, which is its own ancestor",
    _walk.WALK_TOO_DEEP: "too deep: inner node {node} at depth {detail} is below voxel level",
    _walk.WALK_LEAF_NOT_FINITE: "leaf distance is not finite: node {node} holds a half-float inf or NaN",
}


def _fail(source: str, rule: str) -> GmdagFormatError:
    return GmdagFormatError(f"{source}: invalid GMDAG v1 ({rule})")


def _check_header(data: bytes, source: str) -> tuple[int, np.ndarray, float, int]:
    if len(data) < HEADER_BYTES:
        raise _fail(source, f"truncated header: {len(data)} bytes, need {HEADER_BYTES}")
    magic, version, resolution, bx, by, bz, voxel_size, node_count = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise _fail(source, f"wrong magic {magic!r}, expected {MAGIC!r}")
    if version != VERSION:
        raise _fail(source, f"unsupported version {version}, expected {VERSION}")
    if resolution < 1 or resolution > MAX_READ_RESOLUTION or resolution & (resolution - 1):
        raise _fail(source, f"resolution {resolution} is not a power of two in [1, {MAX_READ_RESOLUTION}]")
    bmin = np.array([bx, by, bz], dtype=np.float32)
    if not np.isfinite(bmin).all():
        raise _fail(source, f"non-finite bounds: bmin = {bmin.tolist()}")
    if not (math.isfinite(voxel_size) and voxel_size > 0):
        raise _fail(source, f"non-positive voxel size {voxel_size}")
    with np.errstate(over="ignore"):
        bmax = bmin + np.float32(resolution * np.float64(voxel_size))
    if not np.isfinite(bmax).all():
        raise _fail(source, "non-finite bounds: bmax = bmin + resolution * voxel_size overflows")
    return resolution, bmin, float(voxel_size), node_count


def _check_payload(data: bytes, node_count: int, source: str) -> None:
    payload = len(data) - HEADER_BYTES
    if node_count == 0:
        raise _fail(source, "empty node pool: node_count is 0, the root is missing")
    if payload % 8:
        raise _fail(
            source, f"trailing bytes: payload of {payload} bytes is not a whole number of 8-byte words"
        )
    words = payload // 8
    if node_count > words:
        raise _fail(source, f"node_count {node_count} beyond the payload of {words} words")
    if node_count < words:
        raise _fail(source, f"node_count {node_count} short of the payload: {words - node_count} extra words")


def validate_nodes(nodes: np.ndarray, resolution: int, source: str) -> None:
    """Run the full layout walk (child ranges, cycles, depth, leaf values) over a node pool.

    Args:
        nodes: (node_count,) uint64 pool, root at index 0.
        resolution: voxels per axis (power of two).
        source: name used in error messages.

    Raises:
        GmdagFormatError: naming the first broken rule.
    """
    if nodes.shape[0] == 0:
        raise _fail(source, "empty node pool: node_count is 0, the root is missing")
    max_depth = resolution.bit_length() - 1
    code, node, detail = _walk.walk_pool(np.ascontiguousarray(nodes, dtype=np.uint64), max_depth)
    if code != _walk.WALK_OK:
        raise _fail(source, _WALK_MESSAGES[code].format(node=int(node), detail=int(detail)))


def decode_gmdag(data: bytes, source: str = "<bytes>") -> GmdagAsset:
    """Parse and validate GMDAG v1 bytes.

    Args:
        data: the whole file content.
        source: name used in error messages (usually the path).

    Returns:
        The validated asset (its ``nodes`` is a fresh native-endian uint64 array).

    Raises:
        GmdagFormatError: for any broken rule of the format, naming ``source`` and the rule.
    """
    resolution, bmin, voxel_size, node_count = _check_header(data, source)
    _check_payload(data, node_count, source)
    nodes = np.frombuffer(data, dtype="<u8", count=node_count, offset=HEADER_BYTES).astype(np.uint64)
    validate_nodes(nodes, resolution, source)
    return GmdagAsset(resolution=resolution, bmin=bmin, voxel_size=voxel_size, nodes=nodes, source=source)


def load_gmdag(path: str | Path) -> GmdagAsset:
    """Read and validate a ``.gmdag`` file.

    Raises:
        GmdagFormatError: when the file is missing, unreadable or breaks a format rule.
    """
    file_path = Path(path)
    try:
        data = file_path.read_bytes()
    except OSError as error:
        raise GmdagFormatError(f"{file_path}: cannot read GMDAG file ({error.strerror or error})") from error
    return decode_gmdag(data, source=str(file_path))
