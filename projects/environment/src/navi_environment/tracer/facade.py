"""Tracer facade: one object that traces the spherical sensor, casts rays and queries distances
on a :class:`SceneAtlas`, with the numba kernel on CPU and the torch kernel on CUDA (or on CPU
when asked, for equivalence tests). Inputs and outputs are torch tensors on the tracer's device;
on CPU the numba kernels read and write them through zero-copy numpy views.
"""

from __future__ import annotations

import importlib.util
import math
import os
from typing import Any, Literal

import numba
import numpy as np
import torch

from navi_environment.config import SensorSettings, TracerSettings
from navi_environment.runtime.atlas import SceneAtlas
from navi_environment.tracer import scalar, torch_kernel, wavefront

# numba dispatchers, typed loosely: their signatures are inferred at call time, not by mypy.
_trace_sensor_kernel: Any = wavefront.trace_sensor  # SIMD; scalar.trace_sensor is the packet kernel
_cast_rays_kernel: Any = scalar.cast_rays
_query_points_kernel: Any = scalar.query_points
_numba_config: Any = numba.config


def sensor_directions(azimuth_bins: int, elevation_bins: int) -> np.ndarray:
    """Unit ray directions of the spherical sensor in the drone frame (x ahead, y left, z up).

    Azimuth bin ``a`` points at angle ``2*pi*a/Az`` counter-clockwise from the heading, so bin 0 is
    straight ahead. Elevation bin ``e`` is at ``-pi/2 + pi*(e+0.5)/El``: the sphere minus the poles.

    Returns:
        [Az*El, 3] float32, azimuth-major (row ``a*El + e``), matching observations ``[..., Az, El]``.
    """
    az = 2.0 * np.pi * np.arange(azimuth_bins) / azimuth_bins
    el = -0.5 * np.pi + np.pi * (np.arange(elevation_bins) + 0.5) / elevation_bins
    az_grid, el_grid = np.meshgrid(az, el, indexing="ij")  # [Az, El]
    dirs = np.stack(
        [np.cos(el_grid) * np.cos(az_grid), np.cos(el_grid) * np.sin(az_grid), np.sin(el_grid)], axis=-1
    )
    return dirs.reshape(-1, 3).astype(np.float32)


def configure_numba(tracer: TracerSettings) -> None:
    """Apply the numba threading layer and thread count.

    The layer only takes effect if no numba parallel kernel has run yet in this process (numba
    picks it at the first parallel launch): call this before decoding scenes.

    Why: with the OpenMP layer, numba's and torch's OpenMP pools spin after each parallel region and
    starve each other on a 2-core machine (a 0.02 ms reduction took 20 ms). ``NUMBA_THREADING_LAYER``
    in the environment wins over the setting.
    """
    if "NUMBA_THREADING_LAYER" not in os.environ and tracer.threading_layer != "default":
        _numba_config.THREADING_LAYER = tracer.threading_layer
    if tracer.threads:
        numba.set_num_threads(min(tracer.threads, _numba_config.NUMBA_NUM_THREADS))


def resolve_kernel(choice: str, device: torch.device) -> Literal["numba", "torch"]:
    """``auto`` -> numba on CPU, torch elsewhere; numba on a non-CPU device is an error."""
    if choice == "auto":
        return "numba" if device.type == "cpu" else "torch"
    if choice == "numba" and device.type != "cpu":
        raise ValueError(f"tracer.device_kernel=numba needs a CPU device, got {device}")
    return "torch" if choice == "torch" else "numba"


def compile_march(choice: str, device: torch.device) -> bool:
    """``tracer.torch_compile``: ``auto`` compiles on CUDA when Triton (torch.compile's GPU backend) is there.

    Why on by default there: on an H200 the eager torch march is launch-bound (~60 launches per
    iteration); fused, a 4-drone step took 34 ms instead of 190, 64 drones 107 ms instead of 275
    (docs/experiments/2026-11-cuda-first-run.md).
    """
    if choice != "auto":
        return choice == "on"
    return device.type == "cuda" and importlib.util.find_spec("triton") is not None


class Tracer:
    """Traces rays through a scene atlas on one device.

    Args:
        atlas: packed scenes.
        sensor: sensor settings (bins, horizon).
        tracer: tracer settings (hit rules, kernel choice, threads).
        device: where inputs and outputs live.
    """

    def __init__(
        self,
        atlas: SceneAtlas,
        sensor: SensorSettings,
        tracer: TracerSettings,
        device: torch.device | str = "cpu",
    ) -> None:
        self.device = torch.device(device)
        self.kernel = resolve_kernel(tracer.device_kernel, self.device)
        self.horizon = float(sensor.horizon_m)
        self.rules = (float(tracer.hit_epsilon_voxels), float(tracer.min_step_voxels), int(tracer.max_steps))
        self._rules_kw: dict[str, Any] = {
            "eps_vox": self.rules[0], "min_step_vox": self.rules[1], "max_steps": self.rules[2],
            "compiled": compile_march(tracer.torch_compile, self.device),
        }  # fmt: skip
        if self.kernel == "numba":
            configure_numba(tracer)
        self._dirs_np = sensor_directions(sensor.azimuth_bins, sensor.elevation_bins)
        self.dirs_local = torch.from_numpy(self._dirs_np).to(self.device)
        self._stats = torch.empty(0, 0, 2)
        self.set_atlas(atlas)

    def set_atlas(self, atlas: SceneAtlas) -> None:
        """Swap the packed scenes (after the set of scenes in use changed)."""
        self.atlas = atlas
        self._atlas_args = atlas.kernel_args()
        self._atlas_t = atlas.torch_arrays(self.device) if self.kernel == "torch" else {}

    def trace_sensor(
        self,
        origins: torch.Tensor,
        yaw: torch.Tensor,
        scene_ids: torch.Tensor,
        out: torch.Tensor,
        copy_to: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Trace every drone's sensor into ``out`` (and ``copy_to``).

        Args:
            origins: [B,3] f32 positions. yaw: [B] f32 headings. scene_ids: [B] int32 atlas ids.
            out: [B,3,Az,El] f32 destination (contiguous): depth/horizon, semantic, valid.
            copy_to: optional second [B,3,Az,El] destination receiving the same values.

        Returns:
            ``(nearest [B], hit_share [B])``: the smallest normalised depth of each drone (1 when
            nothing is hit) and the share of its rays that hit something.
        """
        B = origins.shape[0]
        R = self.dirs_local.shape[0]
        second = out if copy_to is None else copy_to
        if self.kernel == "numba":
            packets = -(-R // scalar.PACKET)
            if self._stats.shape[:2] != (B, packets):
                self._stats = torch.empty(B, packets, 2)
            _trace_sensor_kernel(
                origins.numpy(), yaw.numpy(), scene_ids.numpy(), self._dirs_np, self.horizon,
                out.numpy().reshape(B, 3, -1), second.numpy().reshape(B, 3, -1), self._stats.numpy(),
                *self._atlas_args, *self.rules, wavefront.job_rays(B, R, numba.get_num_threads()),
            )  # fmt: skip
            return self._stats[:, :, 0].amin(dim=1), self._stats[:, :, 1].sum(dim=1) / R
        c, s = torch.cos(yaw)[:, None], torch.sin(yaw)[:, None]
        lx, ly, lz = self.dirs_local[:, 0][None], self.dirs_local[:, 1][None], self.dirs_local[:, 2][None]
        dirs = torch.stack([c * lx - s * ly, s * lx + c * ly, lz.expand(B, R)], dim=-1).reshape(-1, 3)
        rows = origins[:, None, :].expand(B, R, 3).reshape(-1, 3)
        t_max = torch.full((B * R,), self.horizon, device=self.device)
        ids = scene_ids.long()[:, None].expand(B, R).reshape(-1)
        t, hit, sem = torch_kernel.march_rays(
            rows, dirs, t_max, torch.zeros_like(t_max), ids, atlas=self._atlas_t, **self._rules_kw
        )
        flat = out.view(B, 3, R)
        flat[:, 0] = torch.where(hit, (t / self.horizon).clamp(max=1.0), 1.0).view(B, R)
        flat[:, 1] = sem.to(out.dtype).view(B, R)
        flat[:, 2] = hit.to(out.dtype).view(B, R)
        if copy_to is not None:
            copy_to.copy_(out)
        return flat[:, 0].amin(dim=1), flat[:, 2].mean(dim=1)

    def cast(
        self,
        origins: torch.Tensor,
        dirs: torch.Tensor,
        t_max: torch.Tensor,
        offsets: torch.Tensor,
        scene_ids: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Cast N rays against surfaces inflated by ``offsets`` (a sphere sweep for offset = radius).

        Args:
            origins, dirs: [N,3] f32 (dirs unit). t_max, offsets: [N] f32. scene_ids: [N] int32.

        Returns:
            ``t [N] f32`` (``t_max`` on a miss) and ``hit [N] bool``.
        """
        if self.kernel == "torch":
            t, hit, _ = torch_kernel.march_rays(
                origins, dirs, t_max, offsets, scene_ids.long(), atlas=self._atlas_t, **self._rules_kw
            )
            return t, hit
        n = origins.shape[0]
        t_out = torch.empty(n, dtype=torch.float32)
        hit_out = torch.empty(n, dtype=torch.bool)
        sem_out = np.empty(n, dtype=np.uint16)
        _cast_rays_kernel(
            origins.contiguous().numpy(), dirs.contiguous().numpy(), t_max.contiguous().numpy(),
            offsets.contiguous().numpy(), scene_ids.contiguous().numpy(), t_out.numpy(), hit_out.numpy(),
            sem_out, *self._atlas_args, *self.rules,
        )  # fmt: skip
        return t_out, hit_out

    def query(self, points: torch.Tensor, scene_ids: torch.Tensor) -> torch.Tensor:
        """Distance [N] f32 at points [N,3] (interpolated near surfaces, a safe bound elsewhere)."""
        if self.kernel == "torch":
            return torch_kernel.query_points(points, scene_ids.long(), self._atlas_t)
        out = torch.empty(points.shape[0], dtype=torch.float32)
        a = self._atlas_args
        _query_points_kernel(
            points.contiguous().numpy(),
            scene_ids.contiguous().numpy(),
            out.numpy(),
            a[0],
            a[1],
            a[2],
            a[4],
            a[5],
        )
        return out


def fibonacci_directions(count: int) -> np.ndarray:
    """[count,3] float32 near-uniform unit directions on the sphere (coarse probes, spawn scoring)."""
    i = np.arange(count) + 0.5
    z = 1.0 - 2.0 * i / count
    r = np.sqrt(np.maximum(0.0, 1.0 - z * z))
    phi = i * math.pi * (3.0 - math.sqrt(5.0))
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=-1).astype(np.float32)
