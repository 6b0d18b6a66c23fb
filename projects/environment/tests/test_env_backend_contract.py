"""SdfDagBackend: the batch contract the trainer relies on, determinism and the episode lifecycle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from navi_environment.backend import INFO_KEYS, SdfDagBackend, spread_start_scenes
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.analytic import RoomSpec, room_distance, room_scene

SPEC = RoomSpec(hi=(10.0, 8.0, 3.0), pillars=((3.0, 3.0, 0.4),))


def make_settings(**episode: int) -> EnvironmentSettings:
    return EnvironmentSettings(
        sensor={"azimuth_bins": 32, "elevation_bins": 8, "horizon_m": 30.0},
        episode=episode or {},
    )


@pytest.fixture(scope="module")
def room():  # type: ignore[no-untyped-def]
    return room_scene(SPEC, 64)


def _run(backend: SdfDagBackend, steps: int, seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    frames = [backend.reset(seed=seed).clone()]
    for _ in range(steps):
        out = backend.step(torch.rand(backend.num_actors, 4, generator=gen) * 2.0 - 1.0)
        frames.append(out.obs.clone())
        frames.append(out.reward.clone())
    return frames


def test_shapes_dtypes_and_buffers_are_reused(room) -> None:  # type: ignore[no-untyped-def]
    backend = SdfDagBackend(make_settings(), 3, scenes=[room])
    assert backend.observation_shape == (3, 32, 8)
    obs = backend.reset(seed=0)
    assert obs.shape == (3, 3, 32, 8) and obs.dtype == torch.float32
    out = backend.step(torch.zeros(3, 4))
    assert out.obs.data_ptr() == obs.data_ptr()
    assert out.reward.shape == (3,) and out.reward.dtype == torch.float32
    assert out.terminated.dtype == torch.bool and out.truncated.dtype == torch.bool
    assert set(out.info) == set(INFO_KEYS)
    assert all(v.shape == (3,) for v in out.info.values())
    terms = sum(out.info[k] for k in INFO_KEYS if k.startswith("reward/"))
    assert torch.allclose(terms, out.reward, atol=1e-5)
    again = backend.step(torch.zeros(3, 4))
    assert again.reward.data_ptr() == out.reward.data_ptr()
    depth, valid = out.obs[:, 0], out.obs[:, 2]
    assert float(depth.min()) >= 0.0 and float(depth.max()) <= 1.0
    assert set(valid.unique().tolist()) <= {0.0, 1.0}
    assert torch.all(depth[valid == 0] == 1.0)
    pos, yaw = backend.poses()
    assert pos.shape == (3, 3) and yaw.shape == (3,)


def test_same_seed_same_run_other_seed_differs(room) -> None:  # type: ignore[no-untyped-def]
    a = _run(SdfDagBackend(make_settings(), 2, scenes=[room]), 15, seed=5)
    b = _run(SdfDagBackend(make_settings(), 2, scenes=[room]), 15, seed=5)
    c = _run(SdfDagBackend(make_settings(), 2, scenes=[room]), 15, seed=6)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])


def test_bad_actions_are_rejected_or_clipped(room) -> None:  # type: ignore[no-untyped-def]
    backend = SdfDagBackend(make_settings(), 2, scenes=[room])
    with pytest.raises(RuntimeError, match="reset"):
        backend.step(torch.zeros(2, 4))
    backend.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        backend.step(torch.zeros(3, 4))
    before, _ = backend.poses()
    out = backend.step(torch.tensor([[1e6, float("nan"), -1e6, 0.0], [0.0, 0.0, 0.0, 0.0]]))
    moved = (backend.poses()[0] - before).norm(dim=1)
    # clipped to 1 -> at most max forward + lateral speed for one smoothed step
    assert float(moved[0]) <= 0.1 * np.hypot(5.0, 3.0) + 1e-5
    assert float(out.info["speed"][0]) <= np.hypot(5.0, 3.0) + 1e-4


def test_truncation_final_obs_and_auto_reset(room) -> None:  # type: ignore[no-untyped-def]
    backend = SdfDagBackend(make_settings(max_steps=4), 3, scenes=[room])
    backend.reset(seed=1)
    for _ in range(3):
        out = backend.step(torch.full((3, 4), 0.3))
        assert not out.truncated.any() and not out.terminated.any()
        assert torch.equal(out.final_obs, out.obs)
    out = backend.step(torch.full((3, 4), 0.3))
    assert out.truncated.all() and not out.terminated.any()
    assert torch.all(out.info["episode_length"] == 4)
    # obs are the new episodes' first observations, final_obs the old episodes' last ones
    assert not torch.equal(out.final_obs, out.obs)
    pos, _ = backend.poses()
    spawns = backend.scenes.report(0).positions
    assert all(np.isclose(spawns, p.numpy()).all(axis=1).any() for p in pos)
    nxt = backend.step(torch.zeros(3, 4))
    assert torch.all(nxt.info["episode_length"] == 1)


def test_starvation_truncates_only_after_grace() -> None:
    # A 12 m cube seen with a 5 m horizon: from anywhere inside, some rays find nothing.
    scene = room_scene(RoomSpec(hi=(12.0, 12.0, 12.0)), 64)
    settings = EnvironmentSettings(
        sensor={"azimuth_bins": 32, "elevation_bins": 8, "horizon_m": 5.0},
        episode={"starvation_grace_steps": 3, "starvation_truncate": 0.01},
    )
    backend = SdfDagBackend(settings, 2, scenes=[scene])
    backend.reset(seed=0)
    flags = []
    for _ in range(5):
        out = backend.step(torch.zeros(2, 4))
        flags.append(out.truncated.tolist())
        assert float(out.info["reward/starvation"].max()) < 0.0
    assert flags == [[False, False]] * 3 + [[True, True], [False, False]]


def test_a_scene_without_viable_spawns_is_refused() -> None:
    scene = room_scene(RoomSpec(hi=(12.0, 12.0, 12.0)), 64)
    settings = EnvironmentSettings(sensor={"azimuth_bins": 16, "elevation_bins": 8, "horizon_m": 1.0})
    with pytest.raises(ValueError, match="cannot host drones"):
        SdfDagBackend(settings, 1, scenes=[scene])


def test_scene_rotation_after_episodes_per_scene(room) -> None:  # type: ignore[no-untyped-def]
    other = room_scene(RoomSpec(hi=(6.0, 6.0, 3.0)), 64)
    settings = EnvironmentSettings(
        sensor={"azimuth_bins": 16, "elevation_bins": 8}, episode={"max_steps": 1, "episodes_per_scene": 2}
    )
    backend = SdfDagBackend(settings, 2, scenes=[room, other])
    backend.reset(seed=0)
    seen = []
    for _ in range(6):
        out = backend.step(torch.zeros(2, 4))
        seen.append(backend.scene_index.tolist())
        assert torch.equal(
            out.info["scene_index"], torch.tensor(seen[-2] if len(seen) > 1 else [0, 1]).float()
        )
    # drone 0 starts in scene 0 and drone 1 in scene 1; both switch every 2 episodes
    assert seen == [[0, 1], [1, 0], [1, 0], [0, 1], [0, 1], [1, 0]]
    pos, _ = backend.poses()
    for b, scene_index in enumerate(backend.scene_index.tolist()):
        spec = SPEC if scene_index == 0 else RoomSpec(hi=(6.0, 6.0, 3.0))
        assert room_distance(spec, pos[b : b + 1].numpy())[0][0] > 0.5


def test_gmdag_files_load_through_the_reader(tmp_path: Path) -> None:
    from navi_environment.gmdag.writer import compile_sdf_to_gmdag, write_gmdag

    spec = RoomSpec(hi=(6.0, 5.0, 3.0))
    bmin, voxel = spec.cube(64)
    axis = (np.arange(64) + 0.5) * voxel
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1).reshape(-1, 3) + bmin
    sdf, ids = room_distance(spec, grid)
    semantic = np.where(np.abs(sdf) < 2 * voxel, ids, 0).astype(np.uint16).reshape(64, 64, 64)
    asset = compile_sdf_to_gmdag(sdf.astype(np.float32).reshape(64, 64, 64), semantic, bmin, voxel)
    path = tmp_path / "room.gmdag"
    write_gmdag(asset, path)
    backend = SdfDagBackend(make_settings(), 2, scene_paths=[path])
    obs = backend.reset(seed=0)
    assert float(obs[:, 2].min()) == 1.0  # closed room: every ray hits
    out = backend.step(torch.zeros(2, 4))
    assert torch.isfinite(out.reward).all()


def test_torch_kernel_backend_matches_numba_backend(room) -> None:  # type: ignore[no-untyped-def]
    """The CUDA code path (torch tracer) runs the whole step on CPU and agrees with numba."""
    base = make_settings(max_steps=5)
    twin = base.model_copy(update={"tracer": base.tracer.model_copy(update={"device_kernel": "torch"})})
    fast = SdfDagBackend(base, 2, scenes=[room])
    slow = SdfDagBackend(twin, 2, scenes=[room])
    assert slow.tracer.kernel == "torch" and fast.tracer.kernel == "numba"
    a, b = fast.reset(seed=9), slow.reset(seed=9)
    assert (a[:, 2] == b[:, 2]).float().mean() >= 0.99
    gen = torch.Generator().manual_seed(9)
    for _ in range(6):
        actions = torch.rand(2, 4, generator=gen) * 2 - 1
        out_fast, out_slow = fast.step(actions), slow.step(actions)
        assert torch.allclose(fast.position, slow.position, atol=1e-3)
        assert torch.allclose(out_fast.reward, out_slow.reward, atol=1e-2)
        assert torch.equal(out_fast.truncated, out_slow.truncated)


def test_start_scenes_are_spread_over_the_corpus() -> None:
    # the manifest lists scenes family by family: 4 drones over 16 scenes start in 4 families
    assert spread_start_scenes(4, 16, 8).tolist() == [0, 4, 8, 12]
    assert spread_start_scenes(4, 20, 8).tolist() == [0, 5, 10, 15]
    # never more distinct scenes than the runtime cache holds, nor than drones or scenes
    assert spread_start_scenes(10, 16, 4).tolist() == [0, 4, 8, 12, 0, 4, 8, 12, 0, 4]
    assert spread_start_scenes(5, 2, 8).tolist() == [0, 1, 0, 1, 0]
    assert spread_start_scenes(3, 1, 8).tolist() == [0, 0, 0]


def test_backend_starts_drones_in_spread_scenes(room) -> None:  # type: ignore[no-untyped-def]
    small = room_scene(RoomSpec(hi=(6.0, 6.0, 3.0)), 64)
    settings = EnvironmentSettings(sensor={"azimuth_bins": 16, "elevation_bins": 8})
    backend = SdfDagBackend(settings, 2, scenes=[room, room, small, small])
    backend.reset(seed=0)
    assert backend.scene_index.tolist() == [0, 2]
    out = backend.step(torch.zeros(2, 4))
    assert out.info["scene_index"].tolist() == [0.0, 2.0]
