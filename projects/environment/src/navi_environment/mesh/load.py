"""Mesh import: .glb/.gltf (scene graph baked into world space), .obj, .ply, .stl through trimesh.

Only geometry is read: materials, textures and colours are skipped (``skip_materials``) and every
node's triangles are copied out as plain arrays, so no image library is ever needed and a missing
or unreadable texture cannot break an import. Triangles with NaN/infinite corners, zero area or a
duplicate elsewhere in the file are dropped and counted. Every way a file can be unusable fails
here with a :class:`MeshImportError` naming the file and the problem, before any expensive distance
computation starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import structlog
import trimesh

from navi_environment.mesh.orient import UP_AXES, Orientation, choose_orientation

log = structlog.get_logger()

SUPPORTED_SUFFIXES = (".glb", ".gltf", ".obj", ".ply", ".stl")
MIN_EXTENT_M = 1e-3
DEGENERATE_RELATIVE_AREA = 1e-12
"""A triangle whose doubled area is below this times its longest edge squared has no area."""


class MeshImportError(ValueError):
    """A mesh file cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class DroppedTriangles:
    """Triangles left out of an import, by reason."""

    non_finite: int = 0
    degenerate: int = 0
    duplicate: int = 0

    @property
    def total(self) -> int:
        """All dropped triangles."""
        return self.non_finite + self.degenerate + self.duplicate

    def describe(self) -> str:
        """``"3 degenerate, 1 duplicate"`` (only non-zero counts), or ``"none"``."""
        parts = [
            f"{count} {name}"
            for name, count in (
                ("with NaN/infinite vertices", self.non_finite),
                ("degenerate (zero area)", self.degenerate),
                ("duplicate", self.duplicate),
            )
            if count
        ]
        return ", ".join(parts) or "none"


@dataclass(frozen=True)
class ImportedMesh:
    """A mesh ready to rasterise, and what the import did to the file's triangles.

    Attributes:
        mesh: triangles in Navi's frame (z up), metres.
        triangles_read: triangles in the file (all nodes, instances expanded).
        dropped: triangles left out, by reason.
        orientation: up axis and scale applied, and why.
    """

    mesh: trimesh.Trimesh
    triangles_read: int
    dropped: DroppedTriangles
    orientation: Orientation = field(default_factory=Orientation)

    def record(self) -> dict[str, object]:
        """JSON-friendly record of the import (manifest and provenance)."""
        return {
            "triangles_read": self.triangles_read,
            "triangles_kept": len(self.mesh.faces),
            "dropped": {
                "non_finite": self.dropped.non_finite,
                "degenerate": self.dropped.degenerate,
                "duplicate": self.dropped.duplicate,
            },
        } | self.orientation.record()


def _load_scene(path: Path) -> trimesh.Scene:
    try:
        # skip_materials: geometry only (no textures, so no Pillow); process=False keeps every
        # triangle as written (merging and cleaning happen below, counted).
        return trimesh.load_scene(path, process=False, skip_materials=True)
    except Exception as error:  # trimesh raises many types for corrupt files
        raise MeshImportError(f"{path}: not a readable mesh ({type(error).__name__}: {error})") from error


def _read_triangles(path: Path) -> np.ndarray:
    """(T, 3, 3) float64 world-space triangles of every mesh node (instances expanded)."""
    scene = _load_scene(path)
    if not scene.geometry:
        raise MeshImportError(f"{path}: empty scene (no geometry)")
    parts: list[np.ndarray] = []
    try:
        for node in scene.graph.nodes_geometry:
            transform, name = scene.graph[node]
            geometry = scene.geometry.get(name)
            if not isinstance(geometry, trimesh.Trimesh) or len(geometry.faces) == 0:
                continue
            faces = np.asarray(geometry.faces, dtype=np.int64)
            vertices = np.asarray(geometry.vertices, dtype=np.float64)
            if faces.ndim != 2 or faces.shape[1] != 3 or faces.min() < 0 or faces.max() >= len(vertices):
                raise MeshImportError(f"{path}: faces reference missing vertices")
            world = vertices @ np.asarray(transform, dtype=np.float64)[:3, :3].T + transform[:3, 3]
            parts.append(world[faces])
    except MeshImportError:
        raise
    except Exception as error:  # a malformed scene graph
        raise MeshImportError(f"{path}: broken scene graph ({type(error).__name__}: {error})") from error
    if not parts:
        raise MeshImportError(f"{path}: scene holds no triangle mesh (points or lines only)")
    return np.concatenate(parts)


def clean_triangles(triangles: np.ndarray) -> tuple[np.ndarray, DroppedTriangles]:
    """Drop triangles with non-finite corners, zero area, or an identical copy earlier in the array.

    Duplicates are the same three corners in the same cyclic order (same winding); a coincident
    face with the opposite winding is a different triangle (a double-sided wall) and is kept.

    Args:
        triangles: (T, 3, 3) corners.

    Returns:
        (kept triangles in their original order, counts of what was dropped).
    """
    finite = np.isfinite(triangles).all(axis=(1, 2))
    kept = triangles[finite]
    edges = np.stack([kept[:, 1] - kept[:, 0], kept[:, 2] - kept[:, 1], kept[:, 0] - kept[:, 2]], axis=1)
    longest2 = (edges**2).sum(axis=2).max(axis=1)
    doubled_area = np.linalg.norm(np.cross(edges[:, 0], -edges[:, 2]), axis=1)
    solid = (doubled_area > DEGENERATE_RELATIVE_AREA * longest2) & (longest2 > 0)
    kept = kept[solid]
    # Rotate each triangle so its lexicographically smallest corner comes first (winding kept).
    first = np.zeros(len(kept), dtype=np.int64)
    for corner in (1, 2):
        smaller = _lexicographically_less(kept[:, corner], kept[np.arange(len(kept)), first])
        first[smaller] = corner
    order = (first[:, None] + np.arange(3)[None, :]) % 3
    canonical = np.take_along_axis(kept, order[:, :, None], axis=1).reshape(len(kept), 9)
    _, unique_index = np.unique(canonical, axis=0, return_index=True)
    unique_index.sort()
    dropped = DroppedTriangles(
        non_finite=int((~finite).sum()),
        degenerate=int((~solid).sum()),
        duplicate=len(kept) - len(unique_index),
    )
    return kept[unique_index], dropped


def _lexicographically_less(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[T] bool: row of ``a`` < row of ``b`` comparing x, then y, then z."""
    less = np.zeros(len(a), dtype=bool)
    decided = np.zeros(len(a), dtype=bool)
    for axis in range(3):
        less |= ~decided & (a[:, axis] < b[:, axis])
        decided |= a[:, axis] != b[:, axis]
    return less


def _empty_message(read: int, dropped: DroppedTriangles) -> str:
    if read == 0:
        return "empty mesh (no triangles)"
    if dropped.non_finite == read:
        return "vertices contain NaN or infinity in every triangle"
    if dropped.degenerate == read:
        return "degenerate mesh (every triangle has zero area)"
    return f"no usable triangle: all {read} dropped ({dropped.describe()})"


def _validate_extent(mesh: trimesh.Trimesh, path: Path, max_extent_m: float) -> None:
    extent = float(np.ptp(mesh.vertices, axis=0).max())
    if extent < MIN_EXTENT_M:
        raise MeshImportError(f"{path}: degenerate mesh (bounding box {extent:.2e} m across)")
    if extent > max_extent_m:
        raise MeshImportError(
            f"{path}: absurd size: bounding box {extent:.1f} m across exceeds {max_extent_m:.0f} m "
            "(wrong units? scale the mesh to metres, e.g. --scale 0.01 for centimetres)"
        )


def repair_mesh(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    """Merge duplicate vertices, drop degenerate and duplicate faces, make winding consistent,
    orient normals outward and fill simple holes. Returns a repaired copy."""
    fixed = mesh.copy()
    fixed.merge_vertices()
    fixed.update_faces(fixed.nondegenerate_faces())
    fixed.update_faces(fixed.unique_faces())
    fixed.remove_unreferenced_vertices()
    trimesh.repair.fix_winding(fixed)
    trimesh.repair.fix_normals(fixed)
    trimesh.repair.fill_holes(fixed)
    return fixed


def _check_file(file_path: Path) -> None:
    if not file_path.is_file():
        raise MeshImportError(f"{file_path}: file not found")
    if file_path.suffix.lower() not in SUPPORTED_SUFFIXES:
        raise MeshImportError(
            f"{file_path}: unsupported mesh format {file_path.suffix!r}; use {', '.join(SUPPORTED_SUFFIXES)}"
        )
    if file_path.stat().st_size == 0:
        raise MeshImportError(f"{file_path}: empty file")


def import_mesh(
    path: str | Path,
    *,
    repair: bool = False,
    max_extent_m: float = 2000.0,
    up_axis: str = "auto",
    scale: float = 1.0,
) -> ImportedMesh:
    """Load, clean, orient (z up) and scale a triangle mesh.

    Args:
        path: .glb, .gltf, .obj, .ply or .stl file.
        repair: run :func:`repair_mesh` after cleaning.
        max_extent_m: largest accepted bounding-box edge after scaling (catches millimetre files).
        up_axis: the file's up direction (one of :data:`~navi_environment.mesh.orient.UP_AXES`);
            ``auto``: +y for glTF (the format says so), decided from the geometry otherwise.
        scale: multiply coordinates by this (file units -> metres), > 0.

    Returns:
        The mesh in Navi's frame with the import record.

    Raises:
        MeshImportError: missing or empty file, unsupported suffix, unreadable content, not a
            triangle mesh, no usable triangle, bad up axis or scale, or absurd size.
    """
    file_path = Path(path)
    if up_axis not in UP_AXES:
        raise MeshImportError(f"{file_path}: unknown up axis {up_axis!r}; use one of {', '.join(UP_AXES)}")
    if not (np.isfinite(scale) and scale > 0):
        raise MeshImportError(f"{file_path}: scale must be a positive number, got {scale}")
    _check_file(file_path)
    triangles = _read_triangles(file_path)
    kept, dropped = clean_triangles(triangles)
    if len(kept) == 0:
        raise MeshImportError(f"{file_path}: {_empty_message(len(triangles), dropped)}")
    orientation = choose_orientation(kept, file_path.suffix.lower(), up_axis, scale)
    oriented = (kept.reshape(-1, 3) @ orientation.matrix.T) * scale
    faces = np.arange(len(oriented)).reshape(-1, 3)
    mesh = trimesh.Trimesh(oriented, faces, process=False)
    if repair:
        mesh = repair_mesh(mesh)
        if len(mesh.faces) == 0:
            raise MeshImportError(f"{file_path}: repair left no triangle")
    _validate_extent(mesh, file_path, max_extent_m)
    log.info(
        "mesh.loaded",
        path=str(file_path),
        triangles_read=len(triangles),
        triangles=len(mesh.faces),
        dropped=dropped.describe(),
        up_axis=orientation.up_axis,
        up_reason=orientation.reason,
        scale=scale,
        repaired=repair,
    )
    if orientation.warning:
        log.warning("mesh.orientation.doubtful", path=str(file_path), warning=orientation.warning)
    return ImportedMesh(mesh, len(triangles), dropped, orientation)


def load_mesh(path: str | Path, *, repair: bool = False, max_extent_m: float = 2000.0) -> trimesh.Trimesh:
    """Load and validate a triangle mesh in the file's own axes (no rotation, no scaling).

    See :func:`import_mesh` (this is ``import_mesh(..., up_axis="z").mesh``).
    """
    return import_mesh(path, repair=repair, max_extent_m=max_extent_m, up_axis="z").mesh
