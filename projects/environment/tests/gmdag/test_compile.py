"""GMDAG writer + sampler: analytic oracle, safety of bounds, determinism, dedup, other layouts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from navi_environment.gmdag.format import LEAF_FLAG, GmdagAsset
from navi_environment.gmdag.halffloat import float32_to_half_bits, half_bits_to_float32
from navi_environment.gmdag.reader import decode_gmdag, load_gmdag
from navi_environment.gmdag.sample import (
    cell_centres,
    query_points,
    sample_dense,
    sample_dense_refined,
    void_distance,
)
from navi_environment.gmdag.writer import compile_sdf_to_gmdag, encode_gmdag, write_gmdag

SQRT3 = math.sqrt(3.0)


def _reference_pool(sdf: np.ndarray, semantic: np.ndarray, voxel: float, coarse_leaf_edge: int) -> np.ndarray:
    """A deliberately different writer: no dedup, pre-order nodes, ALL pointer arrays at the end,
    and blocks of ``coarse_leaf_edge`` voxels without semantics stored as one leaf holding the
    block minimum (0 disables). Voids follow the spec rule (min SDF > block diagonal)."""
    resolution = sdf.shape[0]
    nodes: list[int] = []
    pointer_arrays: list[tuple[int, int, list[int]]] = []  # (node index, mask, child indices)

    def leaf(value: float, sem: int) -> int:
        half = int(float32_to_half_bits(np.array([value], dtype=np.float32))[0])
        nodes.append(int(LEAF_FLAG) | (sem << 16) | half)
        return len(nodes) - 1

    def build(x: int, y: int, z: int, size: int) -> int:
        block = sdf[x : x + size, y : y + size, z : z + size]
        block_sem = semantic[x : x + size, y : y + size, z : z + size]
        if size == 1:
            return leaf(float(block[0, 0, 0]), int(block_sem[0, 0, 0]))
        if size == coarse_leaf_edge and not block_sem.any():
            return leaf(float(block.min()), 0)
        index = len(nodes)
        nodes.append(0)  # patched once the pointer arrays are placed
        half = size // 2
        mask, children = 0, []
        for octant in range(8):
            cx, cy, cz = x + half * (octant & 1), y + half * ((octant >> 1) & 1), z + half * (octant >> 2)
            child_block = sdf[cx : cx + half, cy : cy + half, cz : cz + half]
            if child_block.min() > half * voxel * SQRT3:
                continue
            mask |= 1 << octant
            children.append(build(cx, cy, cz, half))
        pointer_arrays.append((index, mask, children))
        return index

    build(0, 0, 0, resolution)
    for index, mask, children in pointer_arrays:
        nodes[index] = (mask << 55) | len(nodes)
        nodes.extend(children)
    return np.array(nodes, dtype=np.uint64)


def _expand(block_values: np.ndarray, edge: int) -> np.ndarray:
    return np.repeat(np.repeat(np.repeat(block_values, edge, 0), edge, 1), edge, 2)


def _expected_dense(sdf: np.ndarray, semantic: np.ndarray, voxel: float, coarse: int) -> np.ndarray:
    """What the reference writer's file must decode to, computed independently with numpy:
    walking block sizes coarsest first, the first rule that applies to a voxel decides it."""
    resolution = sdf.shape[0]
    result = half_bits_to_float32(float32_to_half_bits(sdf))
    decided = np.zeros(sdf.shape, dtype=bool)
    edge = resolution // 2
    while edge >= 1:
        n = resolution // edge
        minima = sdf.reshape(n, edge, n, edge, n, edge).min(axis=(1, 3, 5))
        void = _expand(minima > edge * voxel * SQRT3, edge) & ~decided
        result[void] = void_distance(edge, voxel)
        decided |= void
        if edge == coarse:
            has_sem = semantic.reshape(n, edge, n, edge, n, edge).any(axis=(1, 3, 5))
            leaf_min = half_bits_to_float32(float32_to_half_bits(minima))
            collapsed = _expand(~has_sem, edge) & ~decided
            result[collapsed] = _expand(leaf_min, edge)[collapsed]
            decided |= collapsed
        edge //= 2
    return result


def test_sphere_oracle_leaves_within_one_voxel_and_voids_are_safe(sphere_grids) -> None:  # type: ignore[no-untyped-def]
    sdf, semantic, bmin, voxel = sphere_grids
    asset = decode_gmdag(encode_gmdag(compile_sdf_to_gmdag(sdf, semantic, bmin, voxel)))
    decoded, decoded_sem = sample_dense(asset)
    stored = decoded >= sdf - voxel  # voxels answered by a leaf (void answers are far below truth)
    assert np.abs(decoded - sdf)[stored].max() <= voxel * 1.001
    near = np.abs(sdf) < SQRT3 * voxel  # never pruned: exact up to half-float rounding
    assert np.abs(decoded - sdf)[near].max() <= 1e-3
    assert (decoded <= sdf + 1e-3).all(), "a decoded distance may never exceed the true distance"
    assert (np.sign(decoded[sdf < -voxel]) == -1).all()
    assert (decoded_sem[near] == semantic[near]).all()


def test_void_blocks_are_pruned_and_report_a_safe_bound(sphere_grid_factory) -> None:  # type: ignore[no-untyped-def]
    sdf, semantic, bmin, voxel = sphere_grid_factory(resolution=64, voxel=0.1, radius=0.5)
    # The pruning mechanism alone (exact_clearance_m=0 prunes every void block); the default's
    # stored band near surfaces is tested below.
    asset = compile_sdf_to_gmdag(sdf, semantic, bmin, voxel, exact_clearance_m=0.0)
    root_mask = (int(asset.nodes[0]) >> 55) & 0xFF
    assert root_mask == 0xFF  # the sphere touches all eight root octants
    corner = bmin + 0.05
    value, sem = query_points(asset, corner[None, :])
    true_distance = float(np.linalg.norm(corner)) - 0.5
    assert 0 < value[0] <= true_distance and sem[0] == 0
    assert value[0] >= void_distance(8, voxel)  # pruned high up, not voxel by voxel
    # Fewer words than voxels by a wide margin (dense fp16 would be 2 bytes per voxel).
    assert asset.nodes.nbytes * 10 < 2 * sdf.size


def test_identical_input_gives_identical_bytes(sphere_grids, tmp_path) -> None:  # type: ignore[no-untyped-def]
    sdf, semantic, bmin, voxel = sphere_grids
    first = encode_gmdag(compile_sdf_to_gmdag(sdf, semantic, bmin, voxel))
    second = encode_gmdag(compile_sdf_to_gmdag(sdf.copy(order="F"), semantic.copy(), bmin.copy(), voxel))
    assert first == second
    path = tmp_path / "sphere.gmdag"
    assert write_gmdag(load_gmdag_from(first), path) == len(first)
    assert path.read_bytes() == first
    assert [p.name for p in tmp_path.iterdir()] == ["sphere.gmdag"]  # no temp file left behind


def load_gmdag_from(data: bytes) -> GmdagAsset:
    return decode_gmdag(data, source="<test>")


def test_pool_has_no_structural_duplicates(sphere_grid_factory) -> None:  # type: ignore[no-untyped-def]
    sdf, semantic, bmin, voxel = sphere_grid_factory(resolution=32, voxel=0.1, radius=0.7)
    nodes = compile_sdf_to_gmdag(sdf, semantic, bmin, voxel).nodes
    seen_leaves: set[int] = set()
    seen_inner: set[tuple[int, ...]] = set()
    stack, visited = [0], set()
    while stack:
        index = stack.pop()
        if index in visited:
            continue
        visited.add(index)
        word = int(nodes[index])
        if word >> 63:
            assert word not in seen_leaves
            seen_leaves.add(word)
            continue
        mask, base = (word >> 55) & 0xFF, word & 0xFFFFFFFF
        children = tuple(int(nodes[base + r]) & 0xFFFFFFFF for r in range(bin(mask).count("1")))
        assert len(set(children)) < len(children) or children  # non-empty
        key = (mask, *children)
        assert key not in seen_inner, "two inner nodes with identical structure survived dedup"
        seen_inner.add(key)
        stack.extend(children)
    assert len(seen_inner) > 1 and len(seen_leaves) > 1


@pytest.mark.parametrize("coarse", [0, 4])
def test_other_layouts_decode_correctly(sphere_grid_factory, coarse: int) -> None:  # type: ignore[no-untyped-def]
    sdf, semantic, bmin, voxel = sphere_grid_factory(resolution=16, voxel=0.25, radius=1.2)
    pool = _reference_pool(sdf, semantic, voxel, coarse)
    foreign = GmdagAsset(resolution=16, bmin=bmin, voxel_size=voxel, nodes=pool, source="foreign")
    asset = decode_gmdag(encode_gmdag(foreign), source="foreign.gmdag")  # the reader accepts it
    decoded, _ = sample_dense(asset)
    expected = _expected_dense(sdf, semantic, voxel, coarse)
    np.testing.assert_allclose(decoded, expected, atol=1e-6)
    points = cell_centres(asset).reshape(-1, 3)
    queried, _ = query_points(asset, points)
    np.testing.assert_array_equal(queried, decoded.reshape(-1))
    # Our compiler agrees with the foreign file near the surface, where neither may prune.
    ours, _ = sample_dense(compile_sdf_to_gmdag(sdf, semantic, bmin, voxel))
    near = np.abs(sdf) < SQRT3 * voxel
    np.testing.assert_allclose(ours[near], decoded[near], atol=1e-6)


def test_coarse_levels_are_conservative_block_minima(sphere_grids) -> None:  # type: ignore[no-untyped-def]
    sdf, semantic, bmin, voxel = sphere_grids
    asset = compile_sdf_to_gmdag(sdf, semantic, bmin, voxel)
    full, _ = sample_dense(asset)
    for level in (16, 8, 1):
        coarse, _ = sample_dense(asset, level)
        edge = 32 // level
        block_min = full.reshape(level, edge, level, edge, level, edge).min(axis=(1, 3, 5))
        assert coarse.shape == (level, level, level)
        assert (coarse <= block_min + 1e-6).all()
        assert (coarse >= block_min - edge * voxel * SQRT3).all()
    with pytest.raises(ValueError, match="power of two"):
        sample_dense(asset, 3)


def test_points_outside_the_cube_get_a_safe_distance(sphere_grids) -> None:  # type: ignore[no-untyped-def]
    sdf, semantic, bmin, voxel = sphere_grids
    asset = compile_sdf_to_gmdag(sdf, semantic, bmin, voxel)
    points = np.array([[10.0, 0.0, 0.0], [0.0, -5.0, 3.0], [0.0, 0.0, 0.0]])
    values, semantic_ids = query_points(asset, points)
    true = np.linalg.norm(points, axis=1) - 0.9
    assert (values[:2] <= true[:2]).all()
    assert values[0] >= 10.0 - 1.6  # at least the distance to the cube
    assert values[2] < 0 and semantic_ids[:2].tolist() == [0, 0]


def test_far_field_collapse_keeps_error_within_tolerance(sphere_grids) -> None:  # type: ignore[no-untyped-def]
    sdf, semantic, bmin, voxel = sphere_grids
    exact = compile_sdf_to_gmdag(sdf, semantic, bmin, voxel, far_tolerance_voxels=0.0)
    loose = compile_sdf_to_gmdag(sdf, semantic, bmin, voxel, far_tolerance_voxels=3.0)
    assert loose.nodes.shape[0] < exact.nodes.shape[0]
    exact_values, _ = sample_dense(exact)
    loose_values, _ = sample_dense(loose)
    assert (loose_values <= exact_values + 1e-6).all()
    assert (exact_values - loose_values).max() <= 3.0 * voxel + 1e-3


def test_uniform_and_empty_grids_collapse_to_a_root_leaf(tmp_path) -> None:  # type: ignore[no-untyped-def]
    sdf = np.full((8, 8, 8), 0.25, dtype=np.float32)  # uniform but not void (diagonal 1.39 m)
    asset = compile_sdf_to_gmdag(sdf, np.zeros((8, 8, 8), np.uint16), np.zeros(3), 0.1)
    assert asset.nodes.shape == (1,) and int(asset.nodes[0]) >> 63 == 1
    path = tmp_path / "uniform.gmdag"
    write_gmdag(asset, path)
    values, _ = sample_dense(load_gmdag(path))
    assert np.allclose(values, 0.25, atol=1e-3)


@pytest.mark.parametrize(
    ("shape", "message"),
    [((8, 8, 4), "cubic"), ((12, 12, 12), "power of two"), ((1, 1, 1), "power of two")],
)
def test_bad_grids_are_rejected(shape: tuple[int, int, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compile_sdf_to_gmdag(np.ones(shape, np.float32), np.zeros(shape, np.uint16), np.zeros(3), 0.1)


def test_nan_distance_and_bad_box_are_rejected() -> None:
    sdf = np.ones((4, 4, 4), np.float32)
    semantic = np.zeros((4, 4, 4), np.uint16)
    sdf[1, 2, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        compile_sdf_to_gmdag(sdf, semantic, np.zeros(3), 0.1)
    with pytest.raises(ValueError, match="voxel_size"):
        compile_sdf_to_gmdag(np.ones((4, 4, 4), np.float32), semantic, np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="bmin"):
        compile_sdf_to_gmdag(np.ones((4, 4, 4), np.float32), semantic, np.array([0, np.inf, 0]), 0.1)


@pytest.mark.parametrize("coarse", [None, 4])
def test_refined_dense_is_a_tight_lower_bound(sphere_grid_factory, coarse: int | None) -> None:  # type: ignore[no-untyped-def]
    sdf, semantic, bmin, voxel = sphere_grid_factory(resolution=32, voxel=0.25, radius=1.0)
    if coarse is None:
        asset = compile_sdf_to_gmdag(sdf, semantic, bmin, voxel)
    else:  # a foreign file with conservative coarse leaves must stay safe too
        pool = _reference_pool(sdf, semantic, voxel, coarse)
        asset = GmdagAsset(resolution=32, bmin=bmin, voxel_size=voxel, nodes=pool, source="foreign")
    plain, _ = sample_dense(asset)
    refined, refined_semantic = sample_dense_refined(asset)
    assert (refined <= sdf + 2e-3).all(), "refinement overstated a distance"
    assert (refined >= plain).all()
    if coarse is None:
        assert (sdf - refined).max() <= 2 * voxel < (sdf - plain).max()
    coarse_grid, _ = sample_dense_refined(asset, 8)
    assert (coarse_grid <= sdf.reshape(8, 4, 8, 4, 8, 4).min(axis=(1, 3, 5)) + 2e-3).all()
    np.testing.assert_array_equal(refined_semantic, sample_dense(asset)[1])


@pytest.mark.parametrize("clearance", [0.0, 0.4, 0.8])
def test_distances_below_the_exact_clearance_are_stored_not_bounded(sphere_grids, clearance: float) -> None:  # type: ignore[no-untyped-def]
    """Everywhere, a reading is either the stored distance (within the far tolerance) or at least
    ``exact_clearance_m``: collision checks never see a void block's bound below a drone radius."""
    sdf, semantic, bmin, voxel = sphere_grids
    asset = compile_sdf_to_gmdag(sdf, semantic, bmin, voxel, exact_clearance_m=clearance)
    decoded, _ = sample_dense(asset)
    assert (decoded <= sdf + 1e-3).all()
    near = (sdf > 0) & (sdf < clearance)
    assert np.abs(decoded - sdf)[near].max(initial=0.0) <= voxel * 1.001
    assert ((decoded >= sdf - voxel * 1.001) | (decoded >= clearance - 1e-3)).all()
    if clearance == 0.0:  # the old rule: void blocks near the surface read far below the truth
        assert (sdf - decoded)[(sdf > 0) & (sdf < 0.8)].max() > 2 * voxel


def test_a_doorway_reads_its_true_clearance() -> None:
    """A 1 m clear doorway in a wall reads ~0.5 m at its centre, so a 0.3 m drone passes."""
    from navi_environment.scenes.layout import DOOR_WIDTH_M, LayoutBuilder
    from navi_environment.scenes.rasterize import layout_grids

    builder = LayoutBuilder("door", 0)
    builder.wall(0, 3.0, (0.0, 6.0), (0.0, 2.5), doors=(3.0,))
    sdf, semantic, bmin, voxel = layout_grids(builder.build(), 64)
    asset = compile_sdf_to_gmdag(sdf, semantic, bmin, voxel)
    centre = np.array([[3.0, 3.0, 1.0]])
    reading = float(query_points(asset, centre)[0][0])
    assert DOOR_WIDTH_M / 2 - 2 * voxel <= reading <= DOOR_WIDTH_M / 2 + 1e-3
