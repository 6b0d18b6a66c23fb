"""Export a procedural layout as a triangle mesh (.obj, .glb, .ply, .stl) through trimesh."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import trimesh

from navi_environment.mesh.orient import Orientation
from navi_environment.scenes.layout import SceneLayout

_BOX_FACES = np.array(
    [
        [0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
        [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7],
    ],
    dtype=np.int64,
)  # fmt: skip


def layout_mesh(layout: SceneLayout) -> trimesh.Trimesh:
    """One mesh of all boxes: 8 vertices and 12 outward-facing triangles per box (not merged, so
    overlapping boxes stay separate closed shells and the winding number stays well defined)."""
    lo, hi = layout.boxes[:, :3].astype(np.float64), layout.boxes[:, 3:].astype(np.float64)
    corners = np.array(
        [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]],
        dtype=np.float64,
    )
    vertices = lo[:, None, :] + corners[None, :, :] * (hi - lo)[:, None, :]  # [N, 8, 3]
    faces = _BOX_FACES[None, :, :] + 8 * np.arange(len(layout.boxes))[:, None, None]  # [N, 12, 3]
    return trimesh.Trimesh(vertices.reshape(-1, 3), faces.reshape(-1, 3), process=False)


def export_layout(layout: SceneLayout, path: str | Path) -> Path:
    """Write the layout mesh; the format follows the suffix (.obj, .glb, .ply, .stl). OBJ, PLY and
    STL keep Navi's z up; glTF binary is written +y up, as its specification requires.

    Raises:
        ValueError: for a suffix trimesh cannot write.
    """
    target = Path(path)
    suffix = target.suffix.lower().lstrip(".")
    if suffix not in {"obj", "glb", "ply", "stl"}:
        raise ValueError(f"{target}: cannot export a mesh as {suffix!r}; use .obj, .glb, .ply or .stl")
    target.parent.mkdir(parents=True, exist_ok=True)
    mesh = layout_mesh(layout)
    if suffix == "glb":  # glTF is +y up by specification; Navi is +z up
        z_up_to_y_up = Orientation(up_axis="y").matrix.T
        mesh = trimesh.Trimesh(mesh.vertices @ z_up_to_y_up.T, mesh.faces, process=False)
    mesh.export(target)
    return target
