"""Up axis: glTF is +y up, other formats are judged from the geometry, doubtful choices warn, and the
same room exported y-up and z-up compiles to the same scene."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import trimesh
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from navi_environment.corpus.settings import CompileSettings
from navi_environment.corpus.sources import compile_source
from navi_environment.gmdag.sample import sample_dense
from navi_environment.mesh.load import import_mesh
from navi_environment.mesh.orient import choose_orientation, objects_at_ends
from navi_environment.scenes.export import layout_mesh
from navi_environment.scenes.registry import generate


def proper_rotations() -> list[np.ndarray]:
    """The 24 rotations by multiples of 90 degrees (signed permutation matrices, det +1)."""
    found = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1, -1), repeat=3):
            matrix = np.zeros((3, 3))
            for row, (col, sign) in enumerate(zip(perm, signs, strict=True)):
                matrix[row, col] = sign
            if np.linalg.det(matrix) > 0:
                found.append(matrix)
    return found


ROTATIONS = proper_rotations()


def _up_name(direction: np.ndarray) -> str:
    axis = int(np.argmax(np.abs(direction)))
    return ("" if direction[axis] > 0 else "-") + "xyz"[axis]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rotation=st.sampled_from(range(24)),
    width=st.floats(4.0, 12.0),
    depth=st.floats(4.0, 12.0),
    height=st.floats(2.4, 3.5),
    ceiling=st.booleans(),
    furniture=st.integers(1, 3),
)
def test_rotated_room_is_detected_the_right_way_up(  # noqa: PLR0917 - hypothesis draws
    scene_meshes: SimpleNamespace,
    rotation: int,
    width: float,
    depth: float,
    height: float,
    ceiling: bool,
    furniture: int,
) -> None:
    matrix = ROTATIONS[rotation]
    mesh = scene_meshes.room(width, depth, height, ceiling=ceiling, furniture=furniture)
    rotated = mesh.triangles @ matrix.T
    expected = _up_name(matrix @ np.array([0.0, 0.0, 1.0]))
    orientation = choose_orientation(rotated, ".obj", "auto", 1.0)
    assert orientation.up_axis == expected, orientation.reason
    assert orientation.warning is None, orientation.warning
    back = rotated.reshape(-1, 3) @ orientation.matrix.T
    np.testing.assert_allclose(back.min(axis=0)[2], mesh.bounds[0][2], atol=1e-9)
    np.testing.assert_allclose(np.ptp(back[:, 2]), np.ptp(mesh.vertices[:, 2]), atol=1e-9)


def _hall_with_hanging_beams() -> trimesh.Trimesh:
    """A closed z-up hall: six 1 m crates on the floor, two beams hanging from the ceiling whose
    undersides hold twice the crates' top area (the horizontal surfaces between the ends sit high)."""
    width, depth, height, t = 12.0, 10.0, 5.0, 0.2
    boxes = [((0, 0, -t), (width, depth, 0)), ((0, 0, height), (width, depth, height + t))]
    boxes += [((0, 0, 0), (t, depth, height)), ((width - t, 0, 0), (width, depth, height))]
    boxes += [((1.0 + 1.6 * k, 1.0, 0), (2.0 + 1.6 * k, 2.0, 1.0)) for k in range(6)]
    boxes += [((0.5, 3.0 + 3.0 * k, height - 0.6), (10.5, 3.6 + 3.0 * k, height)) for k in range(2)]
    parts = [trimesh.creation.box(bounds=np.array(b, dtype=np.float64)) for b in boxes]
    return trimesh.util.concatenate(parts)


@pytest.mark.parametrize("rotation", range(24))
def test_hall_with_hanging_beams_is_up_from_what_stands_on_its_floor(rotation: int) -> None:
    hall = _hall_with_hanging_beams().triangles
    cross = np.cross(hall[:, 1] - hall[:, 0], hall[:, 2] - hall[:, 0])
    area, height = np.linalg.norm(cross, axis=1), hall[:, :, 2].mean(axis=1)
    ledges = (np.abs(cross[:, 2]) > 0.99 * area) & (height > 0.5) & (height < 4.7)
    assert np.average(height[ledges], weights=area[ledges]) > 2.6  # heights alone: upside down
    assert objects_at_ends(hall, 2, 0.1) == (6, 2)  # crates; beams (the shell shares corners)
    matrix = ROTATIONS[rotation]
    orientation = choose_orientation(hall @ matrix.T, ".stl", "auto", 1.0)
    assert orientation.up_axis == _up_name(matrix @ np.array([0.0, 0.0, 1.0])), orientation.reason
    assert orientation.warning is None, orientation.warning


@pytest.mark.parametrize(("family", "seed"), [("apartment", 0), ("apartment", 12), ("hall", 0), ("hall", 2)])
def test_exported_procedural_scenes_are_read_the_right_way_up(family: str, seed: int) -> None:
    """The tutorial's own apartment (seed 0, exported as OBJ) was read upside down: its cupboard tops
    and door lintels sit above the middle of the height, as the hanging beams of some halls do."""
    triangles = layout_mesh(generate(family, seed)).triangles
    upside_down = triangles @ np.diag([1.0, -1.0, -1.0]).T
    assert choose_orientation(triangles, ".obj", "auto", 1.0).up_axis == "z"
    assert choose_orientation(upside_down, ".obj", "auto", 1.0).up_axis == "-z"


def test_ground_with_boxes_is_up_from_the_ground_and_upside_down_warns(scene_meshes: SimpleNamespace) -> None:
    site = scene_meshes.site()
    decided = choose_orientation(site.triangles, ".stl", "auto", 1.0)
    assert decided.up_axis == "z" and decided.reason.startswith("auto: z up (open top")
    flipped = choose_orientation(site.triangles, ".stl", "-z", 1.0)
    assert flipped.warning is not None and "--up-axis" in flipped.warning


def test_explicit_wrong_axis_warns_naming_the_option(scene_meshes: SimpleNamespace) -> None:
    y_up = scene_meshes.room().triangles @ ROTATIONS[0].T  # identity: z up
    sideways = choose_orientation(y_up, ".obj", "y", 1.0)
    assert sideways.warning is not None and "--up-axis z" in sideways.warning


def _export_y_up(mesh: trimesh.Trimesh, path: Path) -> Path:
    to_y_up = np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])  # +z -> +y
    trimesh.Trimesh(mesh.vertices @ to_y_up.T, mesh.faces, process=False).export(path)
    return path


@pytest.mark.parametrize("ceiling", [True, False])
def test_same_room_y_up_and_z_up_compile_to_the_same_scene(
    scene_meshes: SimpleNamespace, tmp_path: Path, ceiling: bool
) -> None:
    mesh = scene_meshes.room(ceiling=ceiling)
    z_path = tmp_path / "room_z.obj"
    mesh.export(z_path)
    y_path = _export_y_up(mesh, tmp_path / "room_y.obj")
    settings = CompileSettings(resolution=32)
    assets = {
        (name, axis): compile_source(str(path), settings, up_axis=axis)
        for name, path, axes in (("z", z_path, ("auto", "z")), ("y", y_path, ("auto", "y")))
        for axis in axes
    }
    assert {key: c.mesh_import["up_axis"] for key, c in assets.items() if c.mesh_import} == {
        ("z", "auto"): "z", ("z", "z"): "z", ("y", "auto"): "y", ("y", "y"): "y"
    }  # fmt: skip
    reference = assets[("z", "z")].asset
    reference_sdf = sample_dense(reference)[0]
    for compiled in assets.values():
        np.testing.assert_allclose(compiled.asset.bmin, reference.bmin, atol=reference.voxel_size)
        assert compiled.asset.resolution == reference.resolution
        np.testing.assert_allclose(sample_dense(compiled.asset)[0], reference_sdf, atol=reference.voxel_size)


def test_gltf_export_of_a_y_up_file_round_trips_with_auto(
    scene_meshes: SimpleNamespace, tmp_path: Path
) -> None:
    mesh = scene_meshes.room()
    to_y_up = np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])
    path = tmp_path / "room.glb"
    trimesh.Trimesh(mesh.vertices @ to_y_up.T, mesh.faces, process=False).export(path)
    imported = import_mesh(path)
    np.testing.assert_allclose(imported.mesh.bounds, mesh.bounds, atol=1e-5)
