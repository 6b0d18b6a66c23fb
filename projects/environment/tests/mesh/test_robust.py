"""Geometry-only import of ordinary files (textures, materials, instancing, bad triangles) and the
degenerate-triangle case of the distance kernel against an exact reference."""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path

import numpy as np
import pytest
import trimesh
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_environment.mesh.load import MeshImportError, clean_triangles, import_mesh
from navi_environment.sdf._triangles import point_triangle_distance
from navi_environment.sdf.mesh_sdf import mesh_grids

# --- fixtures written by the tests -----------------------------------------------------------------


def _box_obj_lines(lo: tuple[float, float, float], hi: tuple[float, float, float], base: int) -> list[str]:
    box = trimesh.creation.box(bounds=np.array([lo, hi]))
    lines = [f"v {x} {y} {z}" for x, y, z in box.vertices]
    lines += [f"f {a + base}/{a + 1} {b + base}/{b + 1} {c + base}/{c + 1}" for a, b, c in box.faces + 1]
    return lines


def write_multi_material_obj(folder: Path) -> Path:
    """Two ``usemtl`` groups with texture coordinates; one texture missing, one not an image."""
    (folder / "scene.mtl").write_text(
        "newmtl wood\nKd 0.8 0.6 0.4\nmap_Kd textures/wood.png\n"
        "newmtl stone\nKd 0.5 0.5 0.5\nmap_Kd stone.jpg\n"
    )
    (folder / "stone.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    uvs = [f"vt {u} {v}" for u in (0.0, 1.0) for v in (0.0, 1.0)] * 2
    lines = ["mtllib scene.mtl", "o floor", *uvs, "usemtl wood"]
    lines += _box_obj_lines((0, 0, -0.2), (6, 4, 0), base=0)
    lines += ["o block", "usemtl stone"]
    lines += _box_obj_lines((1, 1, 0), (2, 2, 1), base=8)
    path = folder / "scene.obj"
    path.write_text("\n".join(lines) + "\n")
    return path


def _accessor(blob: bytearray, views: list[dict], accessors: list[dict], array: np.ndarray, kind: str) -> int:
    data = array.tobytes()
    views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": len(data)})
    blob.extend(data + b"\0" * (-len(data) % 4))
    entry: dict = {
        "bufferView": len(views) - 1,
        "componentType": 5126 if array.dtype == np.float32 else 5125,
        "count": len(array),
        "type": kind,
    }
    if kind == "VEC3":
        entry |= {"min": array.min(axis=0).tolist(), "max": array.max(axis=0).tolist()}
    accessors.append(entry)
    return len(accessors) - 1


def write_textured_gltf(path: Path, image_uri: str) -> Path:
    """A glTF (JSON, buffers as data URIs) of one box mesh instanced by two nodes, with a textured
    material whose image is ``image_uri`` (missing file, or an embedded data URI)."""
    box = trimesh.creation.box(extents=(1.0, 1.0, 1.0))
    blob, views, accessors = bytearray(), [], []
    position = _accessor(blob, views, accessors, box.vertices.astype(np.float32), "VEC3")
    uv = _accessor(blob, views, accessors, np.zeros((len(box.vertices), 2), np.float32), "VEC2")
    indices = _accessor(blob, views, accessors, box.faces.astype(np.uint32).ravel(), "SCALAR")
    tree = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0, 1]}],
        "nodes": [{"mesh": 0, "translation": [3.0, 0.0, 0.0]}, {"mesh": 0, "translation": [0.0, 5.0, 0.0]}],
        "meshes": [
            {
                "primitives": [
                    {
                        "attributes": {"POSITION": position, "TEXCOORD_0": uv},
                        "indices": indices,
                        "material": 0,
                    }
                ]
            }
        ],
        "materials": [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}],
        "textures": [{"source": 0}],
        "images": [{"uri": image_uri}],
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [
            {
                "byteLength": len(blob),
                "uri": "data:application/octet-stream;base64," + base64.b64encode(blob).decode(),
            }
        ],
    }
    path.write_text(json.dumps(tree))
    return path


# --- loading ---------------------------------------------------------------------------------------


def test_multi_material_obj_with_uvs_and_missing_texture_loads_geometry(tmp_path: Path) -> None:
    imported = import_mesh(write_multi_material_obj(tmp_path), up_axis="z")
    assert len(imported.mesh.faces) == 24 and imported.dropped.total == 0
    np.testing.assert_allclose(imported.mesh.bounds, [[0, 0, -0.2], [6, 4, 1]], atol=1e-9)


@pytest.mark.parametrize(
    "image_uri",
    [
        "textures/missing.png",
        "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n broken").decode(),
    ],
    ids=["missing-texture", "embedded-texture"],
)
def test_gltf_with_textures_and_instancing_loads_geometry(tmp_path: Path, image_uri: str) -> None:
    imported = import_mesh(write_textured_gltf(tmp_path / "two.gltf", image_uri), up_axis="z")
    assert len(imported.mesh.faces) == 24  # one mesh, two instances
    np.testing.assert_allclose(imported.mesh.bounds, [[-0.5, -0.5, -0.5], [3.5, 5.5, 0.5]], atol=1e-6)


def test_gltf_auto_up_is_y(tmp_path: Path) -> None:
    imported = import_mesh(write_textured_gltf(tmp_path / "two.gltf", "missing.png"))
    assert imported.orientation.up_axis == "y" and "specification" in imported.orientation.reason
    # file +y becomes +z: the instance moved 5 m along y now stands 5 m up
    np.testing.assert_allclose(imported.mesh.bounds, [[-0.5, -0.5, -0.5], [3.5, 0.5, 5.5]], atol=1e-6)


def test_bad_triangles_are_dropped_and_counted(tmp_path: Path) -> None:
    box = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    vertices = [
        *box.vertices.tolist(),
        [5.0, 5.0, 5.0],
        [6.0, 6.0, 6.0],
        [7.0, 7.0, 7.0],
        [0.0, math.nan, 0.0],
    ]
    faces = [*box.faces.tolist()]
    faces += [[0, 0, 1], [8, 9, 10]]  # two coincident corners; three collinear corners
    faces += [list(np.roll(box.faces[3], 1)), box.faces[5].tolist()]  # duplicates (same winding)
    faces += [box.faces[7][::-1].tolist()]  # opposite winding: a different face, kept
    faces += [[0, 1, 11]]  # NaN corner
    path = tmp_path / "dirty.obj"
    lines = [f"v {x} {y} {z}" for x, y, z in vertices] + [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in faces]
    path.write_text("\n".join(lines) + "\n")
    imported = import_mesh(path, up_axis="z")
    assert (imported.dropped.non_finite, imported.dropped.degenerate, imported.dropped.duplicate) == (1, 2, 2)
    assert imported.triangles_read == 18 and len(imported.mesh.faces) == 13
    assert imported.record()["dropped"] == {"non_finite": 1, "degenerate": 2, "duplicate": 2}


def test_clean_triangles_keeps_order_of_first_copies() -> None:
    tri = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 0, 1], [1, 0, 1], [0, 1, 1]]], dtype=np.float64)
    kept, dropped = clean_triangles(np.concatenate([tri, tri[:1, [1, 2, 0]]]))
    np.testing.assert_array_equal(kept, tri)
    assert dropped.duplicate == 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 9\n", r"scene\.obj: "),
        ("mtllib nothing.mtl\nv 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n", r"scene\.obj: degenerate mesh"),
    ],
)
def test_every_failure_is_one_import_error(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "scene.obj"
    path.write_text(content)
    with pytest.raises(MeshImportError, match=problem):
        import_mesh(path)


def test_bad_options_name_the_file(tmp_path: Path) -> None:
    path = write_multi_material_obj(tmp_path)
    with pytest.raises(MeshImportError, match=r"scene\.obj: unknown up axis 'w'"):
        import_mesh(path, up_axis="w")
    with pytest.raises(MeshImportError, match=r"scene\.obj: scale must be a positive"):
        import_mesh(path, scale=-1.0)


def test_scale_applies_after_rotation_and_fixes_units(tmp_path: Path) -> None:
    box = trimesh.creation.box(bounds=np.array([[0.0, 0.0, 0.0], [5000.0, 300.0, 4000.0]]))
    path = tmp_path / "millimetres.stl"
    box.export(path)
    with pytest.raises(MeshImportError, match="--scale"):
        import_mesh(path, up_axis="y", max_extent_m=100.0)
    imported = import_mesh(path, up_axis="y", scale=0.001, max_extent_m=100.0)
    np.testing.assert_allclose(imported.mesh.bounds, [[0, -4, 0], [5, 0, 0.3]], atol=1e-9)
    assert imported.record()["scale"] == 0.001 and imported.record()["rotation"] == [
        [1, 0, 0],
        [0, 0, -1],
        [0, 1, 0],
    ]


# --- the distance kernel on degenerate triangles ---------------------------------------------------


def _segment_reference(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    u = b - a
    length2 = float(np.dot(u, u))
    t = 0.0 if length2 == 0.0 else float(np.clip(np.dot(p - a, u) / length2, 0.0, 1.0))
    return float(np.linalg.norm(p - (a + t * u)))


coordinate = st.floats(min_value=-3.0, max_value=3.0, allow_nan=False)
point = st.tuples(coordinate, coordinate, coordinate).map(np.array)


@settings(max_examples=300, deadline=None)
@given(p=point, a=point, b=point, t=st.floats(min_value=-1.0, max_value=2.0), which=st.sampled_from(range(3)))
def test_degenerate_triangle_distance_matches_segment_reference(
    p: np.ndarray, a: np.ndarray, b: np.ndarray, t: float, which: int
) -> None:
    """Coincident corners (t = 0 or 1) and collinear corners: the exact distance is the distance to
    the longest of the three edges (the segment the triangle collapses to)."""
    c = a + t * (b - a)
    corners = [[a, b, c], [c, a, b], [b, c, a]][which]
    reference = min(
        _segment_reference(p, corners[0], corners[1]),
        _segment_reference(p, corners[1], corners[2]),
        _segment_reference(p, corners[0], corners[2]),
    )
    assert point_triangle_distance(p, *corners) == pytest.approx(reference, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(p=point, a=point, b=point, c=point)
def test_triangle_distance_matches_trimesh_closest_point(
    p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray
) -> None:
    area = np.linalg.norm(np.cross(b - a, c - a))
    if area < 1e-3:  # trimesh's barycentric reference is itself unstable for slivers
        return
    closest = trimesh.triangles.closest_point(np.array([[a, b, c]]), p[None, :])[0]
    assert point_triangle_distance(p, a, b, c) == pytest.approx(float(np.linalg.norm(p - closest)), abs=1e-9)


def test_mesh_with_degenerate_triangles_rasterises_like_the_clean_mesh() -> None:
    box = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    v = box.vertices
    extra_vertices = np.array([v[0], v[0], v[1], 0.5 * (v[0] + v[1])])
    dirty = trimesh.Trimesh(
        np.concatenate([v, extra_vertices]),
        np.concatenate([box.faces, [[8, 9, 10], [8, 10, 11], [0, 0, 0]]]),
        process=False,
    )
    clean_sdf = mesh_grids(box, 16)[0]
    dirty_sdf = mesh_grids(dirty, 16)[0]
    np.testing.assert_allclose(dirty_sdf, clean_sdf, atol=1e-6)
