"""The fast tracers against slow references: a one-ray-at-a-time numpy caster on the exact
distance field, and the torch tracer against the numba kernel on the same brick map."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from navi_environment.config import SensorSettings, TracerSettings
from navi_environment.runtime.analytic import RoomSpec, room_distance, room_scene
from navi_environment.runtime.atlas import pack_scenes
from navi_environment.tracer import Tracer, sensor_directions

SENSOR = SensorSettings(azimuth_bins=64, elevation_bins=16, horizon_m=12.0)
SPEC = RoomSpec(hi=(10.0, 8.0, 3.0), pillars=((3.0, 3.0, 0.4), (7.0, 5.0, 0.6)), thin_wall_x=5.0,
                thin_wall_thickness=0.2, thin_wall_gap=(3.5, 5.0))  # fmt: skip


def reference_cast(origin: np.ndarray, direction: np.ndarray, horizon: float, voxel: float) -> float:
    """Plain sphere tracing on the exact SDF, one ray, float64: the slow oracle (inf on a miss)."""
    t = 0.0
    for _ in range(10_000):
        d = float(room_distance(SPEC, (origin + t * direction)[None])[0][0])
        if d < 1e-4 * voxel:
            return t
        t += max(d, 1e-3 * voxel)
        if t > horizon:
            return np.inf
    return t


@pytest.fixture(scope="module")
def scene():  # type: ignore[no-untyped-def]
    return room_scene(SPEC, 128)


def _random_poses(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pos = rng.uniform((0.5, 0.5, 0.5), (9.5, 7.5, 2.5), size=(4 * n, 3))
    clear = room_distance(SPEC, pos)[0]
    pos = pos[clear > 0.3][:n]
    return pos.astype(np.float32), rng.uniform(-np.pi, np.pi, size=len(pos)).astype(np.float32)


def _trace(scene, kernel: str, pos: np.ndarray, yaw: np.ndarray) -> torch.Tensor:  # type: ignore[no-untyped-def]
    tracer = Tracer(pack_scenes([scene]), SENSOR, TracerSettings(device_kernel=kernel))  # type: ignore[arg-type]
    out = torch.empty(len(pos), 3, SENSOR.azimuth_bins, SENSOR.elevation_bins)
    tracer.trace_sensor(
        torch.from_numpy(pos), torch.from_numpy(yaw), torch.zeros(len(pos), dtype=torch.int32), out
    )
    return out


def test_numba_matches_one_ray_reference_on_random_poses(scene) -> None:  # type: ignore[no-untyped-def]
    pos, yaw = _random_poses(3, seed=1)
    out = _trace(scene, "numba", pos, yaw)
    dirs_local = sensor_directions(SENSOR.azimuth_bins, SENSOR.elevation_bins).astype(np.float64)
    rng = np.random.default_rng(2)
    errors, agree = [], []
    for b in range(len(pos)):
        c, s = np.cos(yaw[b]), np.sin(yaw[b])
        for r in rng.choice(len(dirs_local), size=120, replace=False):
            lx, ly, lz = dirs_local[r]
            direction = np.array([c * lx - s * ly, s * lx + c * ly, lz])
            expected = reference_cast(
                pos[b].astype(np.float64), direction, SENSOR.horizon_m, scene.voxel_size
            )
            a, e = divmod(int(r), SENSOR.elevation_bins)
            valid = bool(out[b, 2, a, e] > 0)
            got = float(out[b, 0, a, e]) * SENSOR.horizon_m
            agree.append(valid == np.isfinite(expected))
            if valid and np.isfinite(expected):
                errors.append(abs(got - expected) / scene.voxel_size)
    assert np.mean(agree) >= 0.99
    assert np.median(errors) <= 0.5
    assert np.percentile(errors, 99) <= 1.5


def test_torch_tracer_matches_numba(scene) -> None:  # type: ignore[no-untyped-def]
    pos, yaw = _random_poses(4, seed=3)
    fast = _trace(scene, "numba", pos, yaw)
    twin = _trace(scene, "torch", pos, yaw)
    valid_agree = (fast[:, 2] == twin[:, 2]).float().mean()
    assert valid_agree >= 0.999
    both = (fast[:, 2] > 0) & (twin[:, 2] > 0)
    depth_err = (fast[:, 0] - twin[:, 0]).abs()[both] * SENSOR.horizon_m / scene.voxel_size
    assert float(depth_err.max()) <= 0.05  # rounding only (float64 scalars vs float32 tensors)
    sem_agree = (fast[:, 1] == twin[:, 1])[both].float().mean()
    assert sem_agree >= 0.999


def test_torch_and_numba_cast_and_query_agree(scene) -> None:  # type: ignore[no-untyped-def]
    atlas = pack_scenes([scene])
    numba_tracer = Tracer(atlas, SENSOR, TracerSettings(device_kernel="numba"))
    torch_tracer = Tracer(atlas, SENSOR, TracerSettings(device_kernel="torch"))
    gen = torch.Generator().manual_seed(0)
    origins = torch.rand(200, 3, generator=gen) * torch.tensor([9.0, 7.0, 2.0]) + 0.5
    dirs = torch.nn.functional.normalize(torch.randn(200, 3, generator=gen), dim=1)
    t_max = torch.full((200,), 6.0)
    offsets = torch.full((200,), 0.2)
    ids = torch.zeros(200, dtype=torch.int32)
    t1, h1 = numba_tracer.cast(origins, dirs, t_max, offsets, ids)
    t2, h2 = torch_tracer.cast(origins, dirs, t_max, offsets, ids)
    assert (h1 == h2).float().mean() >= 0.99
    assert torch.allclose(t1[h1 & h2], t2[h1 & h2], atol=0.05 * scene.voxel_size)
    q1 = numba_tracer.query(origins, ids)
    q2 = torch_tracer.query(origins, ids)
    assert torch.allclose(q1, q2, atol=1e-4)
    exact = torch.from_numpy(room_distance(SPEC, origins.numpy())[0]).float()
    # in free space never above the true distance (bounds far away, interpolation near surfaces)
    free = exact > 0
    assert torch.all(q1[free] <= exact[free] + 0.1 * scene.voxel_size)
    near = exact.abs() < scene.band_m  # inside the brick band the interpolated distance is close
    assert near.any() and torch.allclose(q1[near], exact[near], atol=scene.voxel_size)


@pytest.mark.slow
def test_compiled_torch_march_matches_eager(scene) -> None:  # type: ignore[no-untyped-def]
    """``tracer.torch_compile`` fuses each march iteration; it must not change one ray (~30 s: compile)."""
    pos, yaw = _random_poses(2, seed=5)
    atlas = pack_scenes([scene])
    outs = []
    for compiled in (False, True):
        tracer = Tracer(
            atlas, SENSOR, TracerSettings(device_kernel="torch", torch_compile="on" if compiled else "off")
        )
        out = torch.empty(len(pos), 3, SENSOR.azimuth_bins, SENSOR.elevation_bins)
        ids = torch.zeros(len(pos), dtype=torch.int32)
        tracer.trace_sensor(torch.from_numpy(pos), torch.from_numpy(yaw), ids, out)
        origins = torch.from_numpy(pos).repeat(8, 1)
        dirs = torch.nn.functional.normalize(
            torch.randn(len(origins), 3, generator=torch.Generator().manual_seed(1))
        )
        n = len(origins)
        t_max, offsets = torch.full((n,), 6.0), torch.full((n,), 0.2)
        t, hit = tracer.cast(origins, dirs, t_max, offsets, torch.zeros(n, dtype=torch.int32))
        outs.append((out, t, hit))
    (eager, t0, h0), (fused, t1, h1) = outs
    assert (
        torch.equal(eager[:, 2], fused[:, 2])
        and torch.equal(eager[:, 1], fused[:, 1])
        and torch.equal(h0, h1)
    )
    assert torch.allclose(eager[:, 0], fused[:, 0], atol=1e-6) and torch.allclose(t0, t1, atol=1e-5)


def test_torch_compile_auto_is_on_for_cuda_with_triton_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from navi_environment.tracer.facade import compile_march

    assert compile_march("on", torch.device("cpu")) and not compile_march("off", torch.device("cuda"))
    assert not compile_march("auto", torch.device("cpu"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name == "triton" else None)
    assert compile_march("auto", torch.device("cuda"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert not compile_march("auto", torch.device("cuda"))
