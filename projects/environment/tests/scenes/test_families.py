"""Procedural families: determinism, realistic sizes, semantics, exact SDF, analytic oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from navi_environment.gmdag.sample import sample_dense
from navi_environment.gmdag.writer import compile_sdf_to_gmdag
from navi_environment.scenes.layout import DOOR_WIDTH_M, LayoutBuilder, SceneLayout, SemanticClass
from navi_environment.scenes.rasterize import cube_for_bounds, layout_grids
from navi_environment.scenes.registry import FAMILIES, generate, parse_procedural

SQRT3 = math.sqrt(3.0)


def _numpy_box_sdf(layout: SceneLayout, points: np.ndarray) -> np.ndarray:
    """Reference: exact union-of-boxes SDF by brute force over every box (numpy)."""
    lo, hi = layout.boxes[:, :3].astype(np.float64), layout.boxes[:, 3:].astype(np.float64)
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    q = np.abs(points[:, None, :] - centre[None]) - half[None]  # [N, B, 3]
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=2)
    inside = np.minimum(q.max(axis=2), 0.0)
    return (outside + inside).min(axis=1)


def _centres(bmin: np.ndarray, voxel: float, resolution: int) -> np.ndarray:
    axis = (np.arange(resolution) + 0.5) * voxel
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1).reshape(-1, 3)
    return grid + bmin.astype(np.float64)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_is_deterministic_and_seeds_differ(family: str) -> None:
    first, again, other = generate(family, 7), generate(family, 7), generate(family, 8)
    np.testing.assert_array_equal(first.boxes, again.boxes)
    np.testing.assert_array_equal(first.labels, again.labels)
    assert first.boxes.shape != other.boxes.shape or not np.array_equal(first.boxes, other.boxes)
    assert first.boxes.dtype == np.float32 and first.labels.dtype == np.uint16
    assert (first.boxes[:, 3:] > first.boxes[:, :3]).all()


@pytest.mark.parametrize(
    ("family", "size_range", "height_range", "labels"),
    [
        (
            "apartment",
            (8.0, 16.5),
            (2.5, 3.3),
            {SemanticClass.WALL, SemanticClass.DOOR_FRAME, SemanticClass.CLUTTER},
        ),
        ("maze", (10.0, 24.5), (3.0, 3.7), {SemanticClass.WALL, SemanticClass.FLOOR, SemanticClass.CEILING}),
        ("warehouse", (16.0, 32.5), (6.5, 9.5), {SemanticClass.SHELF, SemanticClass.PILLAR}),
        ("building", (10.0, 18.5), (6.5, 11.0), {SemanticClass.STAIRS, SemanticClass.DOOR_FRAME}),
        ("hall", (12.0, 26.5), (4.5, 7.5), {SemanticClass.CLUTTER, SemanticClass.WALL}),
    ],
)
def test_family_has_realistic_metric_size_and_semantics(
    family: str,
    size_range: tuple[float, float],
    height_range: tuple[float, float],
    labels: set[SemanticClass],
) -> None:
    for seed in range(3):
        layout = generate(family, seed)
        lo, hi = layout.bounds
        extent = hi - lo
        assert size_range[0] <= extent[0] <= size_range[1] and size_range[0] <= extent[1] <= size_range[1]
        # Vertical extent = interior height + floor and ceiling slabs (0.25 m each).
        assert height_range[0] <= extent[2] <= height_range[1], f"{family} seed {seed} height {extent[2]}"
        assert labels <= set(layout.labels.tolist())


def test_doors_are_one_metre_clear_openings() -> None:
    builder = LayoutBuilder("test", 0)
    builder.wall(0, 5.0, (0.0, 10.0), (0.0, 3.0), doors=(4.0,))
    layout = builder.build()
    # The frame posts stand outside the opening: one clear door width between them.
    posts = layout.boxes[(layout.labels == SemanticClass.DOOR_FRAME) & (layout.boxes[:, 2] == 0.0)]
    gap = posts[:, 0].max() - posts[:, 3].min()
    assert gap == pytest.approx(DOOR_WIDTH_M, abs=1e-3)
    # The door's centre at 1 m height is half a door width from everything (a 0.3 m drone passes);
    # the lintel above it is solid.
    points = np.array([[4.0, 5.0, 1.0], [4.0, 5.0, 2.5]])
    distance = _numpy_box_sdf(layout, points)
    assert distance[0] == pytest.approx(DOOR_WIDTH_M / 2, abs=1e-3) and distance[1] < 0


def test_slab_holes_leave_openings() -> None:
    builder = LayoutBuilder("test", 0)
    builder.slab(
        (0.0, 0.0, 10.0, 10.0), 3.0, SemanticClass.FLOOR, holes=((2.0, 2.0, 4.0, 4.0), (6.0, 6.0, 8.0, 9.0))
    )
    layout = builder.build()
    points = np.array([[3.0, 3.0, 3.1], [7.0, 7.5, 3.1], [5.0, 5.0, 3.1], [1.0, 8.5, 3.1]])
    inside = _numpy_box_sdf(layout, points) < 0
    assert inside.tolist() == [False, False, True, True]


def test_rasteriser_matches_brute_force_reference() -> None:
    layout = generate("apartment", 3)
    sdf, semantic, bmin, voxel = layout_grids(layout, 32, cutoff_m=1000.0, min_solid_voxels=0.0)
    reference = _numpy_box_sdf(layout, _centres(bmin, voxel, 32)).reshape(32, 32, 32)
    np.testing.assert_allclose(sdf, reference, atol=1e-4)
    near = np.abs(reference) < 2 * voxel
    assert (semantic[near] != 0).all() and (semantic[~near] == 0).all()


def test_cutoff_clamps_far_field_to_a_lower_bound() -> None:
    layout = generate("hall", 1)
    sdf, _, bmin, voxel = layout_grids(layout, 32, cutoff_m=1.5, min_solid_voxels=0.0)
    reference = _numpy_box_sdf(layout, _centres(bmin, voxel, 32)).reshape(32, 32, 32)
    assert (sdf <= reference + 1e-4).all()
    np.testing.assert_allclose(sdf[reference < 1.5], reference[reference < 1.5], atol=1e-4)


def test_cube_is_cubified_and_padded_by_two_metres() -> None:
    bmin, voxel = cube_for_bounds(np.array([0.0, 0.0, 0.0]), np.array([10.0, 4.0, 3.0]), 64)
    assert voxel * 64 == pytest.approx(14.0, rel=1e-6)
    assert bmin[0] == pytest.approx(-2.0) and bmin[1] == pytest.approx(2.0 - 7.0)


def _room_layout(thickness: float) -> SceneLayout:
    """A closed 6 x 4 x 3 m box room with walls/slabs of the given thickness (the oracle)."""
    builder = LayoutBuilder("oracle", 0)
    t = thickness
    builder.box((-t, -t, -t), (6 + t, 4 + t, 0.0), SemanticClass.FLOOR)
    builder.box((-t, -t, 3.0), (6 + t, 4 + t, 3 + t), SemanticClass.CEILING)
    builder.box((-t, -t, 0.0), (0.0, 4 + t, 3.0), SemanticClass.WALL)
    builder.box((6.0, -t, 0.0), (6 + t, 4 + t, 3.0), SemanticClass.WALL)
    builder.box((0.0, -t, 0.0), (6.0, 0.0, 3.0), SemanticClass.WALL)
    builder.box((0.0, 4.0, 0.0), (6.0, 4 + t, 3.0), SemanticClass.WALL)
    return builder.build()


def _room_interior_distance(points: np.ndarray) -> np.ndarray:
    """Analytic distance from inside the 6 x 4 x 3 m room to its nearest wall, floor or ceiling."""
    return np.minimum.reduce(
        [points[:, 0], 6 - points[:, 0], points[:, 1], 4 - points[:, 1], points[:, 2], 3 - points[:, 2]]
    )


@pytest.mark.parametrize("resolution", [32, 64])
def test_box_room_oracle_through_the_dag(resolution: int) -> None:
    layout = _room_layout(0.6)
    sdf, semantic, bmin, voxel = layout_grids(layout, resolution)
    decoded, _ = sample_dense(compile_sdf_to_gmdag(sdf, semantic, bmin, voxel))
    points = _centres(bmin, voxel, resolution)
    decoded = decoded.reshape(-1)
    room = (points > [0, 0, 0]).all(axis=1) & (points < [6, 4, 3]).all(axis=1)
    truth = _room_interior_distance(points[room])
    got = decoded[room]
    near = truth < SQRT3 * voxel
    assert np.abs(got - truth)[near].max() <= voxel  # exact leaves near every surface
    stored = got >= truth - voxel
    assert np.abs(got - truth)[stored].max() <= voxel
    assert (got <= truth + 1e-3).all()  # voids never overstate
    # Inside the 0.6 m solid walls the sign is negative.
    solid = _numpy_box_sdf(layout, points) < -1e-3
    assert solid.any() and (decoded[solid] < 0).all()


def test_corridor_oracle() -> None:
    builder = LayoutBuilder("corridor", 0)
    builder.box((0.0, -0.5, 0.0), (20.0, 0.0, 3.0), SemanticClass.WALL)
    builder.box((0.0, 2.0, 0.0), (20.0, 2.5, 3.0), SemanticClass.WALL)
    layout = builder.build()
    sdf, semantic, bmin, voxel = layout_grids(layout, 64)
    asset = compile_sdf_to_gmdag(sdf, semantic, bmin, voxel)
    decoded, decoded_semantic = sample_dense(asset)
    points = _centres(bmin, voxel, 64)
    corridor = (points[:, 0] > 1) & (points[:, 0] < 19) & (points[:, 1] > 0) & (points[:, 1] < 2)
    corridor &= (points[:, 2] > 0) & (points[:, 2] < 3)
    truth = np.minimum(points[corridor, 1], 2.0 - points[corridor, 1])
    got = decoded.reshape(-1)[corridor]
    near = truth < SQRT3 * voxel
    assert np.abs(got - truth)[near].max() <= voxel and (got <= truth + 1e-3).all()
    assert (decoded_semantic.reshape(-1)[corridor][truth < voxel] == SemanticClass.WALL).all()


@pytest.mark.parametrize(
    ("source", "family", "seed"),
    [
        ("procedural:maze", "maze", 0),
        ("procedural:hall:seed=12", "hall", 12),
        (" procedural:building:seed=3 ", "building", 3),
    ],
)
def test_parse_procedural(source: str, family: str, seed: int) -> None:
    spec = parse_procedural(source)
    assert (spec.family, spec.seed) == (family, seed)
    assert str(spec) == f"procedural:{family}:seed={seed}"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("procedural:castle", "unknown scene family"),
        ("procedural:maze:seed=-1", "bad procedural"),
        ("maze", "bad"),
    ],
)
def test_parse_procedural_rejects_bad_specs(source: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_procedural(source)


@pytest.mark.parametrize(
    ("family", "seeds"), [("apartment", range(8)), ("maze", range(4)), ("building", range(4))]
)
def test_ground_floor_free_space_is_one_connected_region(family: str, seeds: range) -> None:
    """Doors and corridors connect every room: at 1 m height, the space a 0.3 m drone fits in,
    inside the outer walls, is one 4-connected region apart from pockets under 1 m^2 (behind
    furniture); a room cut off by a blocked door would be several m^2."""
    from scipy import ndimage

    for seed in seeds:
        layout = generate(family, seed)
        lo, hi = layout.bounds
        xs = np.arange(lo[0] + 0.15, hi[0] - 0.15, 0.1)
        ys = np.arange(lo[1] + 0.15, hi[1] - 0.15, 0.1)
        grid = np.stack(np.meshgrid(xs, ys, [1.0], indexing="ij"), axis=-1).reshape(-1, 3)
        free = (_numpy_box_sdf(layout, grid) > 0.3).reshape(len(xs), len(ys))
        labels, _ = ndimage.label(free)
        sizes = np.sort(np.bincount(labels.ravel())[1:])[::-1] * 0.01  # m^2 per region
        assert len(sizes) >= 1 and (sizes[1:] < 1.0).all(), f"{family} seed {seed}: regions {sizes} m^2"


@given(family=st.sampled_from(sorted(FAMILIES)), seed=st.integers(min_value=0, max_value=10**9))
def test_procedural_spec_round_trips(family: str, seed: int) -> None:
    spec = parse_procedural(f"procedural:{family}:seed={seed}")
    assert parse_procedural(str(spec)) == spec and (spec.family, spec.seed) == (family, seed)


@given(text=st.text(max_size=40))
def test_procedural_parser_raises_only_value_error(text: str) -> None:
    try:
        spec = parse_procedural(text)
    except ValueError:
        return
    assert spec.family in FAMILIES and spec.seed >= 0


def test_sub_voxel_walls_are_thickened_so_every_crossing_has_a_solid_sample() -> None:
    builder = LayoutBuilder("thin", 0)
    builder.box((0.0, 0.0, 0.0), (10.0, 10.0, 0.1), SemanticClass.FLOOR)  # 10 cm slab
    builder.box((4.93, 0.0, 0.0), (5.05, 10.0, 3.0), SemanticClass.WALL)  # 12 cm wall
    layout = builder.build()
    exact, _, bmin, voxel = layout_grids(layout, 32, min_solid_voxels=0.0)
    assert voxel > 0.4 and (exact > 0).all(), "the oracle needs walls that fall between voxel centres"
    sdf, *_ = layout_grids(layout, 32)
    centres = _centres(bmin, voxel, 32).reshape(32, 32, 32, 3)
    # Every x-line through the wall's span, and every z-line over the slab, crosses a solid sample.
    wall_rows = (centres[0, :, :, 1] > 0.5) & (centres[0, :, :, 1] < 9.5) & (centres[0, :, :, 2] > 0.5)
    wall_rows &= centres[0, :, :, 2] < 2.5
    assert wall_rows.any() and (sdf.min(axis=0)[wall_rows] < 0).all()
    slab_columns = (np.abs(centres[:, :, 0, 0] - 2.5) < 2) & (np.abs(centres[:, :, 0, 1] - 5) < 4)
    assert slab_columns.any() and (sdf.min(axis=2)[slab_columns] < 0).all()
    # Geometry moves by at most min_solid_voxels / 2 voxels.
    assert np.abs(sdf - exact).max() <= 0.75 * voxel + 1e-4
