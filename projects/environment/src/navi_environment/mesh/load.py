"""Mesh import: .glb/.gltf (scene graph baked into world space), .obj, .ply, .stl through trimesh.

Every way a file can be unusable fails here with a :class:`MeshImportError` naming the file and the
problem, before any expensive distance computation starts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import structlog
import trimesh

log = structlog.get_logger()

SUPPORTED_SUFFIXES = (".glb", ".gltf", ".obj", ".ply", ".stl")
MIN_EXTENT_M = 1e-3


class MeshImportError(ValueError):
    """A mesh file cannot be used; the message names the file and the problem."""


def _read(path: Path) -> trimesh.Trimesh:
    try:
        loaded = trimesh.load(path, process=False)
    except Exception as error:  # trimesh raises many types for corrupt files
        raise MeshImportError(f"{path}: not a readable mesh ({type(error).__name__}: {error})") from error
    if isinstance(loaded, trimesh.Scene):
        if not loaded.geometry:
            raise MeshImportError(f"{path}: empty scene (no geometry)")
        meshes = [g for g in loaded.dump(concatenate=False) if isinstance(g, trimesh.Trimesh)]
        if not meshes:
            raise MeshImportError(f"{path}: scene holds no triangle mesh (points or lines only)")
        # dump() applies every node transform of the scene graph: vertices are in world space.
        combined = trimesh.util.concatenate(meshes)
        assert isinstance(combined, trimesh.Trimesh)
        return combined
    if not isinstance(loaded, trimesh.Trimesh):
        raise MeshImportError(f"{path}: not a triangle mesh (got {type(loaded).__name__})")
    return loaded


def _validate(mesh: trimesh.Trimesh, path: Path, max_extent_m: float) -> None:
    if len(mesh.faces) == 0 or len(mesh.vertices) == 0:
        raise MeshImportError(f"{path}: empty mesh (no triangles)")
    if not np.isfinite(mesh.vertices).all():
        raise MeshImportError(f"{path}: vertices contain NaN or infinity")
    if int(mesh.faces.max()) >= len(mesh.vertices) or int(mesh.faces.min()) < 0:
        raise MeshImportError(f"{path}: faces reference missing vertices")
    if not (mesh.area_faces > 0).any():
        raise MeshImportError(f"{path}: degenerate mesh (every triangle has zero area)")
    extent = float(np.ptp(mesh.vertices, axis=0).max())
    if extent < MIN_EXTENT_M:
        raise MeshImportError(f"{path}: degenerate mesh (bounding box {extent:.2e} m across)")
    if extent > max_extent_m:
        raise MeshImportError(
            f"{path}: absurd size: bounding box {extent:.1f} m across exceeds {max_extent_m:.0f} m "
            "(wrong units? scale the mesh to metres)"
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


def load_mesh(path: str | Path, *, repair: bool = False, max_extent_m: float = 2000.0) -> trimesh.Trimesh:
    """Load and validate a triangle mesh in metres.

    Args:
        path: .glb, .gltf, .obj, .ply or .stl file.
        repair: run :func:`repair_mesh` after loading.
        max_extent_m: largest accepted bounding-box edge (catches millimetre/centimetre files).

    Returns:
        One mesh in world coordinates.

    Raises:
        MeshImportError: missing or empty file, unsupported suffix, unreadable content, not a
            triangle mesh, NaN vertices, degenerate geometry or absurd size.
    """
    file_path = Path(path)
    if not file_path.is_file():
        raise MeshImportError(f"{file_path}: file not found")
    if file_path.suffix.lower() not in SUPPORTED_SUFFIXES:
        raise MeshImportError(
            f"{file_path}: unsupported mesh format {file_path.suffix!r}; use {', '.join(SUPPORTED_SUFFIXES)}"
        )
    if file_path.stat().st_size == 0:
        raise MeshImportError(f"{file_path}: empty file")
    mesh = _read(file_path)
    _validate(mesh, file_path, max_extent_m)
    if repair:
        mesh = repair_mesh(mesh)
        _validate(mesh, file_path, max_extent_m)
    log.info(
        "mesh.loaded",
        path=str(file_path),
        vertices=len(mesh.vertices),
        triangles=len(mesh.faces),
        watertight=bool(mesh.is_watertight),
        repaired=repair,
    )
    return mesh
