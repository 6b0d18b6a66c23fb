"""Runtime scene construction: memory budget, brick pruning, the LRU cache of loaded scenes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from structlog.testing import capture_logs

from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.analytic import RoomSpec, room_distance, room_query, room_scene
from navi_environment.runtime.loader import SceneCache
from navi_environment.runtime.scene import (
    BRICK_QUANTA,
    SceneBudgetError,
    build_runtime_scene,
    coarse_cell_minima,
    dense_grid_query,
    estimate_scene_bytes,
)

SPEC = RoomSpec(hi=(6.0, 5.0, 3.0))


def test_budget_error_names_the_scene_and_the_setting() -> None:
    bmin, voxel = SPEC.cube(64)
    with pytest.raises(SceneBudgetError, match=r"my-room.*scene\.max_scene_bytes"):
        build_runtime_scene(room_query(SPEC, voxel), bmin, voxel, 64, max_bytes=10_000, name="my-room")


def test_bricks_cover_surfaces_and_are_exact_there() -> None:
    scene = room_scene(SPEC, 64)
    assert scene.nbytes == estimate_scene_bytes(64, scene.bricks_sdf.shape[0])
    C = scene.coarse_cells
    with_brick = scene.brick_index.reshape(C, C, C) >= 0
    assert 0 < with_brick.sum() < C**3
    # every brick sample equals the exact distance rounded down to the int16 quantum
    cell = np.argwhere(with_brick)[0]
    b = scene.brick_index.reshape(C, C, C)[tuple(cell)]
    idx = np.clip(cell * 8 - 1 + np.array(np.unravel_index(np.arange(1000), (10, 10, 10))).T, 0, 63)
    exact = room_distance(SPEC, scene.bmin + (idx + 0.5) * scene.voxel_size)[0]
    stored = scene.bricks_sdf[b].astype(np.float64) * scene.voxel_size / BRICK_QUANTA
    quantum = scene.voxel_size / BRICK_QUANTA
    assert np.all(stored <= exact + 1e-6) and np.all(stored > exact - quantum - 1e-6)


def test_coarse_bounds_are_safe() -> None:
    big = RoomSpec(hi=(16.0, 12.0, 8.0), pillars=((8.0, 6.0, 1.0),))
    scene = room_scene(big, 128)
    C = scene.coarse_cells
    rng = np.random.default_rng(0)
    pts = rng.uniform(scene.bmin, scene.bmax, size=(4000, 3))
    u = (pts - scene.bmin) / scene.voxel_size
    cells = (u.astype(int) >> 3) @ np.array([C * C, C, 1])
    coarse = scene.brick_index[cells] < 0
    exact = room_distance(big, pts)[0]
    free = coarse & (scene.coarse_dist[cells] > 0)
    assert free.any() and np.all(scene.coarse_dist[cells][free] <= exact[free] + 1e-5)
    solid = coarse & (scene.coarse_dist[cells] < 0)
    assert np.all(exact[solid] < 0)


def test_cell_minima_tighten_free_bounds_and_stay_safe() -> None:
    big = RoomSpec(hi=(16.0, 12.0, 8.0), pillars=((8.0, 6.0, 1.0),))
    res = 64
    bmin, voxel = big.cube(res)
    axis = (np.arange(res) + 0.5) * voxel
    centres = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1).reshape(-1, 3) + bmin
    sdf, ids = room_distance(big, centres)
    sdf = sdf.astype(np.float32).reshape(res, res, res)
    query = dense_grid_query(sdf, ids.astype(np.uint16).reshape(res, res, res), bmin, voxel)
    loose = build_runtime_scene(query, bmin, voxel, res)
    tight = build_runtime_scene(query, bmin, voxel, res, cell_min=coarse_cell_minima(sdf))
    void = tight.brick_index < 0
    assert np.array_equal(void, loose.brick_index < 0)  # same bricks, only bounds change
    free = void & (loose.coarse_dist > 0)
    assert np.all(tight.coarse_dist[free] >= loose.coarse_dist[free])
    assert tight.coarse_dist[free].mean() > loose.coarse_dist[free].mean() + voxel  # really tighter
    assert np.array_equal(tight.coarse_dist[~free], loose.coarse_dist[~free])
    rng = np.random.default_rng(1)
    pts = rng.uniform(tight.bmin, tight.bmax, size=(20000, 3))
    u = (pts - tight.bmin) / voxel
    C = tight.coarse_cells
    cells = (u.astype(int) >> 3) @ np.array([C * C, C, 1])
    checked = free[cells]
    exact = room_distance(big, pts)[0]
    assert checked.any() and np.all(tight.coarse_dist[cells][checked] <= exact[checked] + 1e-5)


def _write_room(path: Path, spec: RoomSpec) -> Path:
    from navi_environment.gmdag.writer import compile_sdf_to_gmdag, write_gmdag

    bmin, voxel = spec.cube(32)
    axis = (np.arange(32) + 0.5) * voxel
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1).reshape(-1, 3) + bmin
    sdf, ids = room_distance(spec, grid)
    semantic = np.where(np.abs(sdf) < 2 * voxel, ids, 0).astype(np.uint16).reshape(32, 32, 32)
    write_gmdag(compile_sdf_to_gmdag(sdf.astype(np.float32).reshape(32, 32, 32), semantic, bmin, voxel), path)
    return path


def test_scene_cache_is_lru(tmp_path: Path) -> None:
    paths = [_write_room(tmp_path / f"room{i}.gmdag", RoomSpec(hi=(6.0 + i, 5.0, 3.0))) for i in range(3)]
    cache = SceneCache(EnvironmentSettings(scene={"max_cached_scenes": 2}))
    first = cache.get(paths[0])
    cache.get(paths[1])
    assert cache.get(paths[0]) is first  # hit, and now most recently used
    with capture_logs() as logs:
        cache.get(paths[2])
    assert len(cache) == 2 and paths[0] in cache and paths[1] not in cache
    assert any(e["event"] == "runtime.scene.evicted" for e in logs)


def test_a_held_scene_cache_keeps_every_scene_and_never_shrinks(tmp_path: Path) -> None:
    paths = [_write_room(tmp_path / f"room{i}.gmdag", RoomSpec(hi=(6.0 + i, 5.0, 3.0))) for i in range(3)]
    cache = SceneCache(EnvironmentSettings(scene={"max_cached_scenes": 2}))
    cache.hold(3)
    cache.hold(1)  # a smaller plan later does not shrink it
    with capture_logs() as logs:
        first = [cache.get(path) for path in paths]
        again = [cache.get(path) for path in paths]
    assert len(cache) == 3 and all(a is b for a, b in zip(first, again, strict=True))
    assert not any(e["event"] == "runtime.scene.evicted" for e in logs)


def test_a_backend_holding_its_plan_loads_each_scene_once(tmp_path: Path) -> None:
    """Planned episodes in three scene files, twice over, with a cache of one: held, each loads once."""
    from navi_environment.backend import SdfDagBackend

    paths = [_write_room(tmp_path / f"room{i}.gmdag", RoomSpec(hi=(6.0 + i, 5.0, 3.0))) for i in range(3)]
    settings = EnvironmentSettings(
        scene={"max_cached_scenes": 1}, sensor={"azimuth_bins": 16, "elevation_bins": 4, "horizon_m": 20.0}
    )
    backend = SdfDagBackend(settings, 1, scene_paths=paths)
    backend.hold_scenes(3)
    start = torch.tensor([[2.0, 2.0, 1.5]])
    with capture_logs() as logs:
        for scene in [0, 1, 2, 0, 1, 2]:
            backend.start_episodes(torch.tensor([0]), torch.tensor([scene]), start, torch.zeros(1))
    loaded = [e["path"] for e in logs if e["event"] == "runtime.scene.loaded"]
    assert sorted(loaded) == sorted({str(p.resolve()) for p in paths} - {str(paths[0].resolve())})
