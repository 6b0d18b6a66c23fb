"""Backend throughput measurement shared by ``navi-environment bench-sdfdag`` and scripts/bench_tracer.py."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import torch

from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.scene import RuntimeScene


def bench_backend(
    settings: EnvironmentSettings,
    actors: int,
    steps: int,
    *,
    scene_paths: list[Path] | None = None,
    scenes: Sequence[RuntimeScene] | None = None,
    seed: int = 0,
    device: str = "cpu",
) -> dict[str, float]:
    """Time ``steps`` full backend steps with random actions, then the same number of bare traces.

    Returns:
        ``ms_per_step`` (wall), ``cpu_ms_per_step`` (process CPU time, all threads: on a shared
        machine it shows the work when wall time shows the queueing), ``steps_per_s``
        (drone-steps/s, wall), ``trace_ms`` (sensor trace of all drones at the final poses) and
        ``trace_share`` (trace_ms / ms_per_step), and the same two from process CPU time
        (``cpu_trace_ms``, ``cpu_trace_share``: the share of the work, unaffected by queueing).
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    backend = SdfDagBackend(settings, actors, device=device, scene_paths=scene_paths, scenes=scenes)
    backend.reset(seed=seed)
    gen = torch.Generator(device=backend.device).manual_seed(seed)
    actions = [torch.rand(actors, 4, generator=gen, device=backend.device) * 2 - 1 for _ in range(steps)]
    backend.step(actions[0])  # warm-up: kernels compiled or loaded from cache
    start, cpu_start = time.perf_counter(), time.process_time()
    for action in actions:
        backend.step(action)
    step_s = (time.perf_counter() - start) / steps
    cpu_s = (time.process_time() - cpu_start) / steps
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(steps):
        backend.tracer.trace_sensor(backend.position, backend.yaw, backend.atlas_ids, backend.obs)
    trace_s = (time.perf_counter() - start) / steps
    cpu_trace_s = (time.process_time() - cpu_start) / steps
    return {
        "actors": actors,
        "steps": steps,
        "ms_per_step": step_s * 1e3,
        "cpu_ms_per_step": cpu_s * 1e3,
        "steps_per_s": actors / step_s,
        "trace_ms": trace_s * 1e3,
        "cpu_trace_ms": cpu_trace_s * 1e3,
        "trace_share": trace_s / step_s,
        "cpu_trace_share": cpu_trace_s / cpu_s,
    }
