"""How long one real-time inference takes: the policy's chunk for every drone, per device.

The real-time brain's inference process runs :meth:`PolicyStepper.act_chunk` on the newest observation
of every drone; the time it takes is the inference delay that the action chunks must cover
(docs/service.md). This times exactly that call for the default model (rayvit + mamba2) on the
default 256 x 48 sensor, with a ``--chunk``-tick head, for each drone count, on the CPU with the
brain's one thread (the reference, always measured in the same run) and on ``--device`` when it is
not the CPU. Prints ONE JSON line: per device and drone count, the median and 95th-percentile
milliseconds and the delay they mean in control periods at ``--hz``.

    uv run python scripts/bench_inference.py [--device cuda] [--drones 1,16,64] [--calls 200]
"""

from __future__ import annotations

import json
import math
import time

import click
import numpy as np
import torch

from navi_actor.devices import DeviceUnavailableError, check_device
from navi_actor.inference import PolicyStepper
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_common import configure_logging


def _synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_inference(policy: NaviPolicy, drones: int, calls: int, warmup: int) -> list[float]:
    """Milliseconds of ``calls`` timed ``act_chunk`` calls on random observations, after ``warmup``
    (with the drones' poses, which a policy reading its visit memory folds into its map every call)."""
    device = next(policy.parameters()).device
    stepper = PolicyStepper(policy, drones, deterministic=True)
    cfg = policy.cfg
    obs = torch.rand(drones, 3, cfg.azimuth, cfg.elevation, device=device)
    poses = (torch.full((drones, 3), 1.5, device=device), torch.zeros(drones, device=device))
    times = []
    for call in range(warmup + calls):
        _synchronise(device)
        started = time.perf_counter()
        stepper.act_chunk(obs, poses).to("cpu")  # the brain copies the chunk to shared memory on the host
        _synchronise(device)
        if call >= warmup:
            times.append((time.perf_counter() - started) * 1e3)
    return times


def summary(times: list[float], period_ms: float) -> dict[str, float]:
    p50, p95 = (float(np.percentile(times, q)) for q in (50, 95))
    # the brain's delay estimate: the tick an answer can take effect, a period after the newest one
    return {"p50_ms": round(p50, 3), "p95_ms": round(p95, 3), "periods_p95": math.ceil(p95 / period_ms)}


def drone_counts(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
    """``--drones`` as positive integers, or one clear line."""
    try:
        counts = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"comma-separated whole numbers, got {value!r}") from None
    if not counts or min(counts) < 1:
        raise click.BadParameter(f"at least one drone count, each >= 1, got {value!r}")
    return counts


@click.command()
@click.option("--device", default="cpu", show_default=True, help="Device measured beside the CPU reference.")
@click.option(
    "--drones",
    default="1,16,64",
    show_default=True,
    callback=drone_counts,
    help="Comma-separated drone counts.",
)
@click.option(
    "--calls",
    default=200,
    show_default=True,
    type=click.IntRange(min=1),
    help="Timed inferences per measurement.",
)
@click.option(
    "--warmup",
    default=20,
    show_default=True,
    type=click.IntRange(min=0),
    help="Untimed inferences first (CUDA kernels load).",
)
@click.option(
    "--chunk",
    default=4,
    show_default=True,
    type=click.IntRange(min=1),
    help="Ticks of the chunk head (the brain's H).",
)
@click.option(
    "--hz",
    default=20.0,
    show_default=True,
    type=click.FloatRange(min=0.0, min_open=True),
    help="Control rate the delay is counted in.",
)
@click.option(
    "--cpu-threads",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="torch threads of the CPU reference.",
)
def main(
    *, device: str, drones: list[int], calls: int, warmup: int, chunk: int, hz: float, cpu_threads: int
) -> None:
    """Time the real-time brain's inference call per device and drone count; print one JSON line."""
    configure_logging("warning")  # logs to stderr: stdout carries only the JSON line
    try:
        check_device(device)
    except DeviceUnavailableError as error:
        raise click.ClickException(str(error)) from error
    counts = drones
    torch.manual_seed(0)
    policy = NaviPolicy(PolicyConfig(action_chunk=chunk)).eval()
    devices = ["cpu"] if torch.device(device).type == "cpu" else ["cpu", device]
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name in devices:
        torch.set_num_threads(cpu_threads)
        placed = policy.to(name)
        results[name] = {
            str(count): summary(time_inference(placed, count, calls, warmup), 1e3 / hz) for count in counts
        }
    sensor = [policy.cfg.azimuth, policy.cfg.elevation]
    line = {"benchmark": "inference", "model": "rayvit+mamba2", "sensor": sensor, "chunk": chunk, "hz": hz,
            "cpu_threads": cpu_threads, "results": results}  # fmt: skip
    if len(devices) == 2:
        line["speedup_p50"] = {
            count: round(results["cpu"][count]["p50_ms"] / results[device][count]["p50_ms"], 2)
            for count in results["cpu"]
        }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
