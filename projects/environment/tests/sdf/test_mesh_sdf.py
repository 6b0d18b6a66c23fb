"""Mesh signed distance: exact magnitude near the surface, robust sign (holes, inverted normals,
closed rooms whose air is enclosed, thin walls), and the winding-number and distance kernels."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from navi_environment.gmdag.sample import query_points
from navi_environment.gmdag.writer import compile_sdf_to_gmdag
from navi_environment.scenes.export import layout_mesh
from navi_environment.scenes.layout import LayoutBuilder, SemanticClass
from navi_environment.scenes.rasterize import layout_grids
from navi_environment.sdf._triangles import point_triangle_distance
from navi_environment.sdf._winding import build_bvh, winding_numbers
from navi_environment.sdf.mesh_sdf import mesh_grids

SQRT3 = math.sqrt(3.0)


def _sphere_truth(resolution: int, bmin: np.ndarray, voxel: float, radius: float) -> np.ndarray:
    axis = (np.arange(resolution) + 0.5) * voxel
    x, y, z = np.meshgrid(axis + bmin[0], axis + bmin[1], axis + bmin[2], indexing="ij")
    return np.sqrt(x**2 + y**2 + z**2) - radius


def _axis_z(resolution: int, bmin: np.ndarray, voxel: float) -> np.ndarray:
    axis = (np.arange(resolution) + 0.5) * voxel + bmin[2]
    return np.broadcast_to(axis[None, None, :], (resolution,) * 3)


@pytest.fixture(scope="module")
def sphere_mesh() -> trimesh.Trimesh:
    return trimesh.creation.icosphere(subdivisions=4, radius=1.0)


def test_point_triangle_distance_regions() -> None:
    a, b, c = np.array([0.0, 0, 0]), np.array([1.0, 0, 0]), np.array([0.0, 1, 0])
    cases = {
        (0.2, 0.2, 0.5): 0.5,  # face
        (-1.0, -1.0, 0.0): math.sqrt(2),  # vertex a
        (2.0, 0.0, 0.0): 1.0,  # vertex b
        (0.5, -1.0, 0.0): 1.0,  # edge ab
        (1.0, 1.0, 0.0): math.sqrt(0.5),  # edge bc
        (-2.0, 0.5, 1.0): math.sqrt(5),  # edge ca
    }
    for point, expected in cases.items():
        assert point_triangle_distance(np.array(point), a, b, c) == pytest.approx(expected)
    degenerate = point_triangle_distance(np.array([0.5, 1.0, 0.0]), a, b, np.array([2.0, 0, 0]))
    assert degenerate == pytest.approx(1.0)


def test_winding_number_inside_outside_and_inverted(sphere_mesh: trimesh.Trimesh) -> None:
    triangles = sphere_mesh.triangles.astype(np.float64)
    points = np.array([[0.0, 0.0, 0.0], [0.5, 0.3, -0.2], [1.5, 0.0, 0.0], [0.0, -4.0, 2.0]])
    winding = winding_numbers(points, triangles, *build_bvh(triangles))
    np.testing.assert_allclose(winding, [1, 1, 0, 0], atol=0.05)
    inverted = np.ascontiguousarray(triangles[:, ::-1])
    np.testing.assert_allclose(
        winding_numbers(points, inverted, *build_bvh(inverted)), [-1, -1, 0, 0], atol=0.05
    )


def test_sphere_distance_within_one_voxel(sphere_mesh: trimesh.Trimesh) -> None:
    sdf, semantic, bmin, voxel = mesh_grids(sphere_mesh, 48)
    truth = _sphere_truth(48, bmin, voxel, 1.0)
    # The icosphere is inscribed: its faces sit up to ~0.002 m inside the true sphere.
    assert np.abs(sdf - truth).max() <= voxel
    assert (np.sign(sdf) == np.sign(truth))[np.abs(truth) > 0.01].all()
    near = np.abs(truth) < voxel
    assert np.isin(semantic[near], [SemanticClass.WALL, SemanticClass.FLOOR, SemanticClass.CEILING]).all()
    top = near & (truth > 0) & (_axis_z(48, bmin, voxel) > 0.9)  # outside, above the sphere's top
    assert (semantic[top] == SemanticClass.FLOOR).all()
    bottom = near & (truth < 0) & (_axis_z(48, bmin, voxel) < -0.9)  # inside, under its bottom
    assert (semantic[bottom] == SemanticClass.FLOOR).all()  # seen from above the triangle's plane


@pytest.mark.parametrize("mutation", ["holes", "inverted", "holes_and_inverted"])
def test_signs_survive_holes_and_inverted_normals(sphere_mesh: trimesh.Trimesh, mutation: str) -> None:
    faces = sphere_mesh.faces.copy()
    if "holes" in mutation:
        rng = np.random.default_rng(0)
        faces = np.delete(faces, rng.choice(len(faces), size=12, replace=False), axis=0)
    if "inverted" in mutation:
        faces = faces[:, ::-1]
    broken = trimesh.Trimesh(sphere_mesh.vertices, faces, process=False)
    assert not broken.is_watertight or "holes" not in mutation
    sdf, _, bmin, voxel = mesh_grids(broken, 48)
    truth = _sphere_truth(48, bmin, voxel, 1.0)
    clear = np.abs(truth) > voxel
    assert (np.sign(sdf) == np.sign(truth))[clear].all()


def test_enclosed_room_air_is_outside_and_thin_walls_inside() -> None:
    builder = LayoutBuilder("room", 0)
    builder.shell((0.0, 0.0, 6.0, 4.0), 2.8)  # closed: the room's air is unreachable from outside
    builder.box((2.0, 1.0, 0.0), (2.15, 3.0, 2.8), SemanticClass.WALL)  # 15 cm partition, < 1 voxel
    layout = builder.build()
    sdf, semantic, bmin, voxel = mesh_grids(layout_mesh(layout), 64)
    # Reference: the exact union-of-boxes SDF at every voxel centre.
    sdf_ref, *_ = layout_grids(layout, 64, cutoff_m=100.0, min_solid_voxels=0.0)  # exact geometry
    decided = np.abs(sdf_ref) > 1e-3
    assert (np.sign(sdf) == np.sign(sdf_ref))[decided].all()  # air, slabs, walls and the partition
    assert (sdf_ref < 0).sum() > 0 and ((sdf_ref < 0) & (np.abs(sdf_ref) < voxel)).any()
    band = (sdf_ref >= 0) & (sdf_ref < 2 * voxel)  # (inside overlapping boxes neither side is exact)
    assert np.abs(sdf - sdf_ref)[band].max() < 1e-3  # exact near surfaces
    assert np.abs(sdf - sdf_ref).max() <= 1.5 * voxel  # EDT fill: about a voxel everywhere
    asset = compile_sdf_to_gmdag(sdf, semantic, bmin, voxel)
    values, _ = query_points(asset, np.array([[1.0, 2.0, 1.4], [3.0, 2.0, -0.12], [3.0, 2.0, 8.0]]))
    assert values[0] > 0 and values[1] < 0 and values[2] > 0  # room air, floor slab, above the roof


def test_mesh_sdf_is_deterministic(sphere_mesh: trimesh.Trimesh) -> None:
    first = mesh_grids(sphere_mesh, 32)
    second = mesh_grids(sphere_mesh.copy(), 32)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])


@pytest.mark.parametrize("resolution", [1, 9, 32])
def test_distance_transform_matches_scipy(resolution: int) -> None:
    from scipy import ndimage

    from navi_environment.sdf.edt import distance_to_features

    rng = np.random.default_rng(resolution)
    features = rng.random((resolution,) * 3) < 0.02
    features.flat[0] = True
    expected = ndimage.distance_transform_edt(~features, sampling=0.25)
    np.testing.assert_allclose(distance_to_features(features, 0.25), expected, rtol=1e-6, atol=1e-6)
    assert np.isinf(distance_to_features(np.zeros((4, 4, 4), dtype=bool))).all()


def test_mesh_surfaces_get_the_classes_a_procedural_room_gives_them() -> None:
    """Floor, ceiling and walls of a mesh room are labelled as the procedural rasteriser labels the
    same layout (a policy trained on procedural scenes reads them), whichever way the faces wind."""
    builder = LayoutBuilder("room", 0)
    builder.shell((0.0, 0.0, 6.0, 4.0), 2.8)
    builder.box((2.0, 1.0, 0.0), (2.15, 3.0, 2.8), SemanticClass.WALL)
    layout = builder.build()
    _, reference, *_ = layout_grids(layout, 64, cutoff_m=100.0, min_solid_voxels=0.0)
    mesh = layout_mesh(layout)
    for candidate in (mesh, trimesh.Trimesh(mesh.vertices, mesh.faces[:, ::-1], process=False)):
        sdf, semantic, bmin, voxel = mesh_grids(candidate, 64)
        centres = bmin + (np.indices(sdf.shape).transpose(1, 2, 3, 0) + 0.5) * voxel
        inside_room = ((centres > (0.0, 0.0, 0.0)) & (centres < (6.0, 4.0, 2.8))).all(axis=-1)
        air = inside_room & (sdf > 0) & (reference > 0) & (semantic > 0)  # where drones fly
        labelled = reference[air]
        classes = {SemanticClass.WALL, SemanticClass.FLOOR, SemanticClass.CEILING}
        assert {int(c) for c in np.unique(labelled)} == classes
        assert (semantic[air] == labelled).mean() > 0.9  # corners may take either neighbour's class
