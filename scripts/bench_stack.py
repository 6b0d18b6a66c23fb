"""Three-process stack versus in-process inference: steps/s and per-step latency at 1 and 4 drones.

Prints ONE JSON line (progress goes to stderr). For each drone count B, in the same run:

- ``inprocess``: the policy (``PolicyStepper``) stepping ``SdfDagBackend`` directly in this process;
  latency = one act + one environment step.
- ``stack``: ``navi-environment serve`` and ``navi-actor serve`` as separate processes talking over
  ZeroMQ on localhost; this process only listens to the brain's actions. Latency = time between
  consecutive actions (one full act -> REQ -> env step -> REP cycle); ``brain_p50_ms`` is the brain's
  own measure of the same cycle from its ``actor.service.stats`` telemetry.

Both paths use the same checkpoint (a fresh default policy saved once), scene, seed, sensor and torch
thread count. Target: stack steps/s >= 0.7x in-process at 4 drones.

    uv run python scripts/bench_stack.py [--drones 1,4] [--steps 200] [--azimuth 256 --elevation 48]
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import numpy as np
import torch

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.inference import PolicyStepper, build_policy, resolve_policy_source
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_common import Subscriber, configure_logging, free_tcp_endpoint
from navi_contracts import Action, TelemetryEvent, topics

TARGET_RATIO = 0.7
_ENV_ENTRY = "import sys; from navi_environment.cli import main; sys.exit(main())"


def _progress(message: str) -> None:
    click.echo(f"[bench_stack] {message}", err=True)


def _summary(periods_s: list[float]) -> dict[str, float]:
    periods = np.asarray(periods_s, dtype=np.float64)
    return {
        "steps_per_second": float(len(periods) / periods.sum()),
        "p50_ms": float(np.percentile(periods, 50) * 1e3),
        "p99_ms": float(np.percentile(periods, 99) * 1e3),
    }


def _in_process(files: dict[str, Path], sensor: dict[str, int], drones: int, steps: int, warmup: int) -> Any:
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    backend = SdfDagBackend(EnvironmentSettings(sensor=sensor), drones, scene_paths=[files["scene"]])  # type: ignore[arg-type]
    source = resolve_policy_source(files["checkpoint"], files["folder"])
    stepper = PolicyStepper(build_policy(source, PolicyConfig(), backend.observation_shape), drones)
    obs = backend.reset(0)
    periods: list[float] = []
    for index in range(warmup + steps):
        started = time.perf_counter()
        actions = stepper.act(obs, backend.poses())
        step = backend.step(actions)
        stepper.end_episodes(step.terminated | step.truncated)
        obs = step.obs
        if index >= warmup:
            periods.append(time.perf_counter() - started)
    return _summary(periods)


def _stack(
    files: dict[str, Path], sensor: dict[str, int], drones: int, *, steps: int, warmup: int, threads: int
) -> Any:
    rep, env_pub, brain_pub = free_tcp_endpoint(), free_tcp_endpoint(), free_tcp_endpoint()
    env_vars = {
        **os.environ,
        "NAVI_ENV_SENSOR__AZIMUTH_BINS": str(sensor["azimuth_bins"]),
        "NAVI_ENV_SENSOR__ELEVATION_BINS": str(sensor["elevation_bins"]),
        "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(files["folder"]),
        "NAVI_ACTOR_LOG_LEVEL": "warning",
        "NAVI_ENV_LOG_LEVEL": "warning",
    }
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env_vars}
    env_argv = [sys.executable, "-c", _ENV_ENTRY, "serve", "--rep-endpoint", rep, "--pub-endpoint", env_pub]
    brain_argv = [sys.executable, "-m", "navi_actor.service", "--step-endpoint", rep]
    brain_argv += ["--pub-endpoint", brain_pub]
    brain_argv += [
        "--checkpoint",
        str(files["checkpoint"]),
        "--deterministic",
        "--torch-threads",
        str(threads),
    ]
    brain_argv += ["--total-steps", str(warmup + steps), "--wait-for-subscribers", "1"]
    arrivals: list[float] = []
    stats: dict[str, float] = {}
    with Subscriber(brain_pub, [topics.ACTION, topics.TELEMETRY_EVENT]) as subscriber:
        env = subprocess.Popen(
            [*env_argv, "--gmdag-file", str(files["scene"]), "--actors", str(drones)], **quiet
        )  # type: ignore[call-overload]
        brain = subprocess.Popen(brain_argv, **quiet)  # type: ignore[call-overload]
        try:
            while len(arrivals) < warmup + steps:
                message = subscriber.recv(timeout_ms=180_000)
                if message is None:
                    raise RuntimeError(f"the stack stopped acting after {len(arrivals)} steps")
                if isinstance(message[1], Action):
                    arrivals.append(time.perf_counter())
                elif (
                    isinstance(message[1], TelemetryEvent) and message[1].event_type == "actor.service.stats"
                ):
                    stats = dict(message[1].payload)
            brain.wait(timeout=30)
            while (message := subscriber.recv(timeout_ms=500)) is not None:  # the final stats event
                if isinstance(message[1], TelemetryEvent) and message[1].event_type == "actor.service.stats":
                    stats = dict(message[1].payload)
        finally:
            for process in (brain, env):
                if process.poll() is None:
                    process.kill()
                process.wait()
    result = _summary(list(np.diff(arrivals[warmup - 1 :])))
    result["brain_p50_ms"] = stats.get("latency_p50_ms", float("nan"))
    result["brain_p99_ms"] = stats.get("latency_p99_ms", float("nan"))
    return result


def _prepare(
    folder: Path, source: str, resolution: int, sensor: dict[str, int], core: str
) -> dict[str, Path]:
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    scene = folder / "scene.gmdag"
    write_gmdag(compile_source(source, CompileSettings(), resolution=resolution).asset, scene)
    torch.manual_seed(0)
    config = PolicyConfig(
        temporal_core=core,  # type: ignore[arg-type]
        azimuth=sensor["azimuth_bins"],
        elevation=sensor["elevation_bins"],
    )
    checkpoint = save_checkpoint(
        Checkpoint(model=NaviPolicy(config).state_dict(), policy_config=config), folder / "policy.pt"
    )
    return {"scene": scene, "checkpoint": checkpoint, "folder": folder}


@click.command()
@click.option("--drones", default="1,4", show_default=True, help="Comma-separated drone counts.")
@click.option("--steps", default=200, show_default=True, help="Timed steps per measurement.")
@click.option("--warmup", default=20, show_default=True, help="Untimed steps first (JIT, caches).")
@click.option("--azimuth", default=256, show_default=True, help="Sensor azimuth bins.")
@click.option("--elevation", default=48, show_default=True, help="Sensor elevation bins.")
@click.option("--scene", default="procedural:hall:seed=1", show_default=True, help="Procedural source.")
@click.option("--resolution", default=64, show_default=True, help="Scene resolution (voxels per axis).")
@click.option("--temporal-core", default="mamba2", show_default=True, help="Policy core.")
@click.option("--torch-threads", default=1, show_default=True, help="torch threads (both paths).")
def main(
    *,
    drones: str,
    steps: int,
    warmup: int,
    azimuth: int,
    elevation: int,
    scene: str,
    resolution: int,
    temporal_core: str,
    torch_threads: int,
) -> None:
    """Measure the three-process stack against in-process inference and print one JSON line."""
    configure_logging("warning", production=False)  # logs go to stderr; stdout holds the JSON line
    torch.set_num_threads(torch_threads)
    sensor = {"azimuth_bins": azimuth, "elevation_bins": elevation}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench_stack_") as temporary:
        files = _prepare(Path(temporary), scene, resolution, sensor, temporal_core)
        for count in (int(value) for value in drones.split(",")):
            _progress(f"{count} drone(s): in-process")
            in_process = _in_process(files, sensor, count, steps, warmup)
            _progress(f"{count} drone(s): three-process stack")
            stack = _stack(files, sensor, count, steps=steps, warmup=warmup, threads=torch_threads)
            results[str(count)] = {
                "inprocess": in_process,
                "stack": stack,
                "ratio": stack["steps_per_second"] / in_process["steps_per_second"],
            }
            _progress(f"{count} drone(s): ratio {results[str(count)]['ratio']:.3f}")
    at_four = results.get("4", {}).get("ratio")
    line = {
        "bench": "stack",
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "device": "cpu",
        "sensor": [azimuth, elevation],
        "scene": scene,
        "resolution": resolution,
        "temporal_core": temporal_core,
        "torch_threads": torch_threads,
        "steps": steps,
        "results": results,
        "target_ratio_at_4": TARGET_RATIO,
        "target_met": None if at_four is None else at_four >= TARGET_RATIO,
    }
    click.echo(json.dumps(line))


if __name__ == "__main__":
    main()
