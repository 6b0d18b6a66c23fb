"""The torch tracer on the accelerator against the CPU (numba) tracer, on one procedural room.

Tolerances are those of the CPU equivalence tests (projects/environment/tests/tracer/test_equivalence.py):
the two kernels differ by float rounding only, so nearly every ray agrees on hit/miss and semantic,
and depth within a twentieth of a voxel.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from navi_environment.config import SensorSettings, TracerSettings
from navi_environment.runtime.analytic import RoomSpec, room_distance, room_scene
from navi_environment.runtime.atlas import pack_scenes
from navi_environment.runtime.scene import RuntimeScene
from navi_environment.tracer import Tracer

SENSOR = SensorSettings(azimuth_bins=64, elevation_bins=16, horizon_m=12.0)
SPEC = RoomSpec(hi=(10.0, 8.0, 3.0), pillars=((3.0, 3.0, 0.4), (7.0, 5.0, 0.6)), thin_wall_x=5.0,
                thin_wall_thickness=0.2, thin_wall_gap=(3.5, 5.0))  # fmt: skip


@pytest.fixture(scope="module")
def scene() -> RuntimeScene:
    return room_scene(SPEC, 128)


def _poses(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(seed)
    pos = rng.uniform((0.5, 0.5, 0.5), (9.5, 7.5, 2.5), size=(4 * n, 3))
    pos = pos[room_distance(SPEC, pos)[0] > 0.3][:n]
    yaw = rng.uniform(-np.pi, np.pi, size=len(pos))
    return torch.from_numpy(pos).float(), torch.from_numpy(yaw).float()


def _tracers(scene: RuntimeScene, accel: str, compiled: bool = False) -> tuple[Tracer, Tracer]:
    """(CPU numba tracer, torch tracer on ``accel``): the kernel ``auto`` picks on CUDA, named."""
    atlas = pack_scenes([scene])
    cpu = Tracer(atlas, SENSOR, TracerSettings(), "cpu")
    fast = Tracer(
        atlas, SENSOR, TracerSettings(device_kernel="torch", torch_compile="on" if compiled else "off"), accel
    )
    assert cpu.kernel == "numba" and fast.kernel == "torch"
    return cpu, fast


def test_auto_picks_the_torch_kernel_on_cuda(scene: RuntimeScene, accel_device: str) -> None:
    tracer = Tracer(pack_scenes([scene]), SENSOR, TracerSettings(), accel_device)
    expected = "numba" if torch.device(accel_device).type == "cpu" else "torch"
    assert tracer.kernel == expected
    assert all(t.device.type == torch.device(accel_device).type for t in tracer._atlas_t.values())


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "torch_compile"])
def test_sensor_trace_on_the_accelerator_matches_the_cpu(
    scene: RuntimeScene, accel_device: str, compiled: bool
) -> None:
    cpu, fast = _tracers(scene, accel_device, compiled)
    pos, yaw = _poses(8, seed=3)
    B = len(pos)
    ids = torch.zeros(B, dtype=torch.int32)
    ref = torch.empty(B, 3, SENSOR.azimuth_bins, SENSOR.elevation_bins)
    ref_near, ref_share = cpu.trace_sensor(pos, yaw, ids, ref)
    dev = torch.device(accel_device)
    out = torch.empty(ref.shape, device=dev)
    copy = torch.empty(ref.shape, device=dev)
    near, share = fast.trace_sensor(pos.to(dev), yaw.to(dev), ids.to(dev), out, copy_to=copy)
    assert out.device.type == dev.type and near.device.type == dev.type and share.device.type == dev.type
    got = out.cpu()
    assert torch.equal(got, copy.cpu())
    assert (got[:, 2] == ref[:, 2]).float().mean() >= 0.999  # valid
    both = (got[:, 2] > 0) & (ref[:, 2] > 0)
    assert both.float().mean() > 0.5  # a closed room: most rays hit
    depth_err = (got[:, 0] - ref[:, 0]).abs()[both] * SENSOR.horizon_m / scene.voxel_size
    assert float(depth_err.max()) <= 0.05
    assert torch.all(got[:, 0][got[:, 2] == 0] == 1.0)  # misses read as the horizon
    assert (got[:, 1] == ref[:, 1])[both].float().mean() >= 0.999  # semantic
    torch.testing.assert_close(near.cpu(), ref_near, atol=0.05 * scene.voxel_size / SENSOR.horizon_m, rtol=0)
    torch.testing.assert_close(share.cpu(), ref_share, atol=2e-3, rtol=0)


def test_cast_and_query_on_the_accelerator_match_the_cpu(scene: RuntimeScene, accel_device: str) -> None:
    cpu, fast = _tracers(scene, accel_device)
    gen = torch.Generator().manual_seed(0)
    n = 500
    origins = torch.rand(n, 3, generator=gen) * torch.tensor([9.0, 7.0, 2.0]) + 0.5
    dirs = torch.nn.functional.normalize(torch.randn(n, 3, generator=gen), dim=1)
    t_max, offsets = torch.full((n,), 6.0), torch.full((n,), 0.2)
    ids = torch.zeros(n, dtype=torch.int32)
    dev = torch.device(accel_device)
    t1, h1 = cpu.cast(origins, dirs, t_max, offsets, ids)
    t2, h2 = fast.cast(origins.to(dev), dirs.to(dev), t_max.to(dev), offsets.to(dev), ids.to(dev))
    assert t2.device.type == dev.type and h2.device.type == dev.type
    t2, h2 = t2.cpu(), h2.cpu()
    assert (h1 == h2).float().mean() >= 0.99
    assert torch.allclose(t1[h1 & h2], t2[h1 & h2], atol=0.05 * scene.voxel_size)
    q = fast.query(origins.to(dev), ids.to(dev))
    assert q.device.type == dev.type
    assert torch.allclose(cpu.query(origins, ids), q.cpu(), atol=1e-4)
