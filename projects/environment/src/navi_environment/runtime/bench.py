"""Backend throughput measurement shared by ``navi-environment bench-sdfdag`` and scripts/bench_tracer.py.

On CUDA the host returns from a launch before the work is done, so every clock read here is preceded
by :func:`synchronize`: without it a timed loop measures launches, and the work lands in whichever
later call waits for the device.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.scene import RuntimeScene


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA); nothing to wait for on the CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench_backend(
    settings: EnvironmentSettings,
    actors: int,
    steps: int,
    *,
    scene_paths: list[Path] | None = None,
    scenes: Sequence[RuntimeScene] | None = None,
    seed: int = 0,
    device: str = "cpu",
    rounds: int = 5,
) -> dict[str, float]:
    """Time full backend steps with random actions against bare sensor traces, interleaved.

    Each of ``rounds`` rounds times ``steps`` full steps, then ``steps`` bare traces of the same
    poses; every figure keeps its best round. Why: on a shared machine one pass was seen to vary
    2x between identical runs; interleaving gives both the same disturbances and the best round is
    the work, not the queueing.

    Returns:
        ``ms_per_step`` (wall), ``cpu_ms_per_step`` (process CPU time, all threads: on a shared
        machine it shows the work when wall time shows the queueing), ``steps_per_s``
        (drone-steps/s, wall), ``trace_ms`` (sensor trace of all drones) and ``trace_share``
        (trace_ms / ms_per_step), and the same two from process CPU time (``cpu_trace_ms``,
        ``cpu_trace_share``); ``in_step_trace_share``: wall time spent tracing inside the steps of
        the best step round over that round's step time (the issue's "trace share of a step").
    """
    if steps < 1 or rounds < 1:
        raise ValueError(f"steps and rounds must be >= 1, got {steps} and {rounds}")
    backend = SdfDagBackend(settings, actors, device=device, scene_paths=scene_paths, scenes=scenes)
    backend.reset(seed=seed)
    gen = torch.Generator(device=backend.device).manual_seed(seed)
    actions = [torch.rand(actors, 4, generator=gen, device=backend.device) * 2 - 1 for _ in range(steps)]
    backend.step(actions[0])  # warm-up: kernels compiled or loaded from cache
    best = dict.fromkeys(("step", "cpu_step", "trace", "cpu_trace"), float("inf"))
    in_step = _TraceClock(backend)
    on = backend.device
    for _ in range(rounds):
        in_step.seconds = 0.0
        synchronize(on)
        start, cpu_start = time.perf_counter(), time.process_time()
        for action in actions:
            backend.step(action)
        synchronize(on)
        step_seconds = (time.perf_counter() - start) / steps
        if step_seconds < best["step"]:  # the in-step share of the best step round
            best["in_step_share"] = in_step.seconds / steps / step_seconds
        best["step"] = min(best["step"], step_seconds)
        best["cpu_step"] = min(best["cpu_step"], (time.process_time() - cpu_start) / steps)
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(steps):
            in_step.original(backend.position, backend.yaw, backend.atlas_ids, backend.obs)
        synchronize(on)
        best["trace"] = min(best["trace"], (time.perf_counter() - start) / steps)
        best["cpu_trace"] = min(best["cpu_trace"], (time.process_time() - cpu_start) / steps)
    return {
        "actors": actors,
        "steps": steps,
        "rounds": rounds,
        "ms_per_step": best["step"] * 1e3,
        "cpu_ms_per_step": best["cpu_step"] * 1e3,
        "steps_per_s": actors / best["step"],
        "trace_ms": best["trace"] * 1e3,
        "cpu_trace_ms": best["cpu_trace"] * 1e3,
        "trace_share": best["trace"] / best["step"],
        "cpu_trace_share": best["cpu_trace"] / best["cpu_step"],
        "in_step_trace_share": best["in_step_share"],
    }


class _TraceClock:
    """Wraps the backend's ``tracer.trace_sensor`` to add up the wall time spent inside it.

    Why: ``trace_share`` divides a bare trace repeated at the final poses (warm caches, fixed ray
    lengths) by a step whose trace moves through the scene, so it swings from 0.7 to above 1.0 between
    runs; the time the steps themselves spend tracing (the sensor and the re-trace of reset rows) is
    the share the issue asks about. On CUDA the device is synchronised before and after each trace,
    so the trace's own work is counted (and not the work queued before it).
    """

    def __init__(self, backend: SdfDagBackend) -> None:
        self.original = backend.tracer.trace_sensor
        self.device = backend.device
        self.seconds = 0.0
        backend.tracer.trace_sensor = self  # type: ignore[method-assign]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        synchronize(self.device)
        start = time.perf_counter()
        try:
            return self.original(*args, **kwargs)
        finally:
            synchronize(self.device)
            self.seconds += time.perf_counter() - start
