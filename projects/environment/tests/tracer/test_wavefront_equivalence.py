"""The SIMD wavefront sensor kernel against the scalar packet kernel (same rules, same answers),
on edge cases (ray counts that leave partial jobs and packets, origins outside the cube or inside
a wall, few iterations, several scenes in one atlas), and a guard that it really vectorises."""

from __future__ import annotations

import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from navi_environment.runtime.analytic import RoomSpec, room_distance, room_scene
from navi_environment.runtime.atlas import SceneAtlas, pack_scenes
from navi_environment.tracer import scalar, sensor_directions, wavefront

SPEC = RoomSpec(hi=(10.0, 8.0, 3.0), pillars=((3.0, 3.0, 0.4), (7.0, 5.0, 0.6)), thin_wall_x=5.0,
                thin_wall_thickness=0.2, thin_wall_gap=(3.5, 5.0))  # fmt: skip
HORIZON = 12.0


@pytest.fixture(scope="module")
def atlas() -> SceneAtlas:
    """The same room at two resolutions in one atlas (scene ids 0 and 1)."""
    return pack_scenes([room_scene(SPEC, 64), room_scene(SPEC, 128)])


def _wavefront(*args):  # type: ignore[no-untyped-def]
    """The wavefront kernel with the scalar kernel's arguments (jobs sized as the Tracer does)."""
    B, R = args[0].shape[0], args[3].shape[0]
    wavefront.trace_sensor(*args, wavefront.job_rays(B, R, numba.get_num_threads()))


def _run(kernel, atlas: SceneAtlas, pos, yaw, ids, dirs, max_steps: int = 192):  # type: ignore[no-untyped-def]  # noqa: PLR0917
    B, R = len(pos), len(dirs)
    out = np.full((B, 3, R), -7.0, dtype=np.float32)
    copy = np.full((B, 3, R), -7.0, dtype=np.float32)
    stats = np.full((B, -(-R // scalar.PACKET), 2), -7.0, dtype=np.float32)
    kernel(
        pos.astype(np.float32), yaw.astype(np.float32), ids.astype(np.int32), dirs, HORIZON, out, copy,
        stats, *atlas.kernel_args(), 0.05, 0.5, max_steps,
    )  # fmt: skip
    return out, copy, stats


def _assert_same(a: np.ndarray, b: np.ndarray, voxel: float) -> None:
    assert np.mean(a[:, 2] == b[:, 2]) >= 0.999
    both = (a[:, 2] > 0) & (b[:, 2] > 0)
    assert both.any()
    depth_err = np.abs(a[:, 0] - b[:, 0])[both] * HORIZON / voxel
    assert float(depth_err.max()) <= 0.01  # float32 vs float64 rounding only
    assert np.mean((a[:, 1] == b[:, 1])[both]) >= 0.999
    assert np.all(b[:, 0][b[:, 2] == 0] == 1.0) and np.all(b[:, 1][b[:, 2] == 0] == 0.0)


def _poses(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pos = rng.uniform((0.5, 0.5, 0.5), (9.5, 7.5, 2.5), size=(4 * n, 3))
    pos = pos[room_distance(SPEC, pos)[0] > 0.3][:n]
    return pos, rng.uniform(-np.pi, np.pi, size=len(pos))


@pytest.mark.parametrize(("az", "el"), [(64, 16), (37, 11), (256, 9)])
def test_wavefront_matches_scalar_kernel(atlas: SceneAtlas, az: int, el: int) -> None:
    """Random poses over two scenes; 37x11 = 407 and 256x9 = 2304 rays leave partial packets/jobs."""
    pos, yaw = _poses(6, seed=az)
    ids = np.arange(len(pos)) % 2
    dirs = sensor_directions(az, el)
    ref, _, _ = _run(scalar.trace_sensor, atlas, pos, yaw, ids, dirs)
    out, copy, stats = _run(_wavefront, atlas, pos, yaw, ids, dirs)
    _assert_same(ref, out, atlas.scenes[1].voxel_size)
    assert np.array_equal(out, copy)
    # stats are per-packet reductions of the written observation
    R, P = len(dirs), stats.shape[1]
    padded = np.pad(out, ((0, 0), (0, 0), (0, P * scalar.PACKET - R)), constant_values=np.nan)
    packets = padded.reshape(len(pos), 3, P, scalar.PACKET)
    np.testing.assert_allclose(stats[:, :, 0], np.fmin.reduce(packets[:, 0], axis=-1))
    np.testing.assert_allclose(stats[:, :, 1], np.nansum(packets[:, 2], axis=-1))


def test_wavefront_edge_origins_and_iteration_limit(atlas: SceneAtlas) -> None:
    """Outside the cube (no shared first step), inside a pillar, and a creeping iteration limit."""
    bmin = atlas.scene_f[0, :3].astype(np.float64)
    pos = np.array([bmin - 1.0, (3.0, 3.0, 1.5), (5.0, 4.0, 1.5), (1.0, 1.0, 1.0)])
    yaw = np.array([0.3, 0.0, 1.0, -2.0])
    ids = np.array([0, 1, 1, 0])
    dirs = sensor_directions(48, 12)
    for max_steps in (192, 8):
        ref, _, _ = _run(scalar.trace_sensor, atlas, pos, yaw, ids, dirs, max_steps)
        out, _, _ = _run(_wavefront, atlas, pos, yaw, ids, dirs, max_steps)
        _assert_same(ref, out, atlas.scenes[1].voxel_size)
    assert out[0, 2].max() == 0.0  # outside the cube: every ray misses
    assert out[1, 2].min() == 1.0 and out[1, 0].max() == 0.0  # inside a pillar: hits at distance 0


def test_wavefront_many_drones_threads(atlas: SceneAtlas) -> None:
    """More jobs than threads and drones in both scenes give the same answers with 1 or all threads."""
    pos, yaw = _poses(12, seed=5)
    ids = np.arange(len(pos)) % 2
    dirs = sensor_directions(32, 8)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one, _, _ = _run(_wavefront, atlas, pos, yaw, ids, dirs)
    finally:
        numba.set_num_threads(threads)
    many, _, _ = _run(_wavefront, atlas, pos, yaw, ids, dirs)
    assert np.array_equal(one, many)


@pytest.mark.parametrize("rays_per_job", [16, 48, 1000, 4096])
def test_wavefront_job_size_does_not_change_answers(atlas: SceneAtlas, rays_per_job: int) -> None:
    """Rays are independent: any split into jobs (and slot refill order) gives identical output."""
    pos, yaw = _poses(2, seed=9)
    dirs = sensor_directions(40, 20)
    ids = np.array([1, 0])
    whole, _, whole_stats = _run(lambda *a: wavefront.trace_sensor(*a, len(dirs)), atlas, pos, yaw, ids, dirs)
    split, _, split_stats = _run(
        lambda *a: wavefront.trace_sensor(*a, rays_per_job), atlas, pos, yaw, ids, dirs
    )
    assert np.array_equal(whole, split)
    assert np.array_equal(whole_stats, split_stats)
    assert wavefront.job_rays(1, 12288, 2) == 3072  # 2 threads x 2 jobs for one drone
    assert wavefront.job_rays(4, 12288, 2) == 12288  # one job per drone suffices
    assert wavefront.job_rays(3, 100, 8) % scalar.PACKET == 0


_GATHER_PROBE = """
import re, sys
import numba, numpy as np
from navi_environment.tracer import simd
for no_alias in (True, False):
    fresh = numba.njit(fastmath=simd._FAST, boundscheck=False, error_model="numpy", no_alias=no_alias)(
        simd._gather_corners.py_func
    )
    rows = [np.zeros(64, dtype=np.int32) for _ in range(5)]
    fresh(np.int64(64), rows[0], np.zeros(2000, dtype=np.int32), *rows[1:])
    print(no_alias, bool(re.search(r"vp?gather", fresh.inspect_asm(fresh.signatures[0]))))
"""


def test_vector_passes_compile_to_gathers() -> None:
    """Guard the speed: without numba's noalias flag LLVM silently falls back to scalar loops.

    Compiled for a Skylake target in a child process (``NUMBA_CPU_NAME``): LLVM's own cost model
    keeps gathers out of code for CPUs where they are slow (AMD Zen 1-3, ``znver3``), so on such a
    host the host target cannot show whether the flag works; Skylake's can, on any AVX2 host. The
    same loop without the flag is the negative control.
    """
    if not {"avx2", "avx512f"} & set(numba.config.CPU_FEATURES or _host_features()):
        pytest.skip("host CPU has no vector gathers (needs AVX2 or AVX-512)")
    env = {**os.environ, "NUMBA_CPU_NAME": "skylake", "NUMBA_CPU_FEATURES": ""}
    out = subprocess.run(
        [sys.executable, "-c", _GATHER_PROBE],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout.split()
    assert out == ["True", "True", "False", "False"], f"gathers with / without noalias: {out}"


def _host_features() -> set[str]:
    import llvmlite.binding as llvm

    return {name.lstrip("+") for name in llvm.get_host_cpu_features().flatten().split(",") if name[0] == "+"}
