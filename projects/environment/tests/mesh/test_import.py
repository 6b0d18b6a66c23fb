"""Mesh import: every kind of bad file fails with a message naming it; glTF scene graphs are baked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh

from navi_environment.mesh.load import MeshImportError, import_mesh, load_mesh
from navi_environment.scenes.export import export_layout, layout_mesh
from navi_environment.scenes.registry import generate


def _write_obj(path: Path, vertices: list[list[float]], faces: list[list[int]]) -> Path:
    lines = [f"v {x} {y} {z}" for x, y, z in vertices] + [f"f {a} {b} {c}" for a, b, c in faces]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("suffix", [".obj", ".glb", ".ply", ".stl"])
def test_exported_layouts_load_back_with_the_same_bounds(tmp_path: Path, suffix: str) -> None:
    layout = generate("maze", 1)
    path = export_layout(layout, tmp_path / f"maze{suffix}")
    # glTF is written +y up (its specification) and read back with the default up axis, auto;
    # the other formats keep z up.
    mesh = import_mesh(path).mesh if suffix == ".glb" else load_mesh(path)
    lo, hi = layout.bounds
    np.testing.assert_allclose(mesh.bounds, np.stack([lo, hi]), atol=1e-4)
    assert len(mesh.faces) == 12 * len(layout.boxes)


def test_gltf_scene_graph_is_baked_into_world_space(tmp_path: Path) -> None:
    scene = trimesh.Scene()
    box = trimesh.creation.box(extents=(1.0, 2.0, 3.0))
    transform = trimesh.transformations.translation_matrix((10.0, 0.0, -5.0))
    scene.add_geometry(box, node_name="moved", transform=transform)
    scene.add_geometry(trimesh.creation.box(extents=(1.0, 1.0, 1.0)), node_name="origin")
    path = tmp_path / "scene.glb"
    scene.export(path)
    mesh = load_mesh(path)
    np.testing.assert_allclose(mesh.bounds, [[-0.5, -1.0, -6.5], [10.5, 1.0, 0.5]], atol=1e-5)


def test_layout_mesh_boxes_are_closed_and_outward(tmp_path: Path) -> None:
    mesh = layout_mesh(generate("apartment", 0))
    first_box = trimesh.Trimesh(mesh.vertices[:8], mesh.faces[:12])
    assert first_box.is_watertight and first_box.volume > 0


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MeshImportError, match=r"nothing\.obj: file not found"):
        load_mesh(tmp_path / "nothing.obj")


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = tmp_path / "scene.fbx"
    path.write_bytes(b"x")
    with pytest.raises(MeshImportError, match=r"scene\.fbx: unsupported mesh format"):
        load_mesh(path)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.stl"
    path.write_bytes(b"")
    with pytest.raises(MeshImportError, match=r"empty\.stl: empty file"):
        load_mesh(path)


def test_not_a_mesh(tmp_path: Path) -> None:
    path = tmp_path / "garbage.glb"
    path.write_bytes(b"this is not a binary gltf file at all" * 10)
    with pytest.raises(MeshImportError, match=r"garbage\.glb"):
        load_mesh(path)


def test_obj_without_faces_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "points.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n")
    with pytest.raises(MeshImportError, match=r"points\.obj: (empty|not a triangle mesh|scene holds no)"):
        load_mesh(path)


def test_nan_vertices(tmp_path: Path) -> None:
    path = _write_obj(tmp_path / "nan.obj", [[0, 0, 0], [1, 0, 0], [0, float("nan"), 0]], [[1, 2, 3]])
    with pytest.raises(MeshImportError, match=r"nan\.obj: vertices contain NaN"):
        load_mesh(path)


def test_degenerate_mesh(tmp_path: Path) -> None:
    path = _write_obj(tmp_path / "flat.obj", [[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[1, 2, 3]])
    with pytest.raises(MeshImportError, match=r"flat\.obj: degenerate mesh"):
        load_mesh(path)


def test_absurd_size(tmp_path: Path) -> None:
    box = trimesh.creation.box(extents=(50_000.0, 1.0, 1.0))
    path = tmp_path / "millimetres.stl"
    box.export(path)
    with pytest.raises(MeshImportError, match=r"millimetres\.stl: absurd size"):
        load_mesh(path)


def test_repair_merges_vertices_and_orients_outward(tmp_path: Path) -> None:
    box = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    soup = trimesh.Trimesh(box.triangles.reshape(-1, 3), np.arange(36).reshape(12, 3)[:, ::-1], process=False)
    path = tmp_path / "soup.ply"
    soup.export(path)
    raw = load_mesh(path)
    repaired = load_mesh(path, repair=True)
    assert len(raw.vertices) == 36 and len(repaired.vertices) == 8
    assert repaired.is_watertight and repaired.volume > 0


def test_gltf_with_external_buffers_is_baked(tmp_path: Path) -> None:
    scene = trimesh.Scene()
    transform = trimesh.transformations.translation_matrix((5.0, 0.0, 0.0))
    scene.add_geometry(trimesh.creation.box(extents=(1.0, 2.0, 3.0)), node_name="b", transform=transform)
    for name, data in trimesh.exchange.gltf.export_gltf(scene).items():
        (tmp_path / name).write_bytes(data)
    mesh = load_mesh(tmp_path / "model.gltf")
    np.testing.assert_allclose(mesh.bounds, [[4.5, -1.0, -1.5], [5.5, 1.0, 1.5]], atol=1e-6)
