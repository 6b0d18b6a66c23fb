"""Environment step time on an accelerator: the torch kernels, eager and with ``tracer.torch_compile``.

Why: on CUDA the sphere tracer is one torch launch per operation per march iteration (~60 x up to
192 iterations per march), so small batches are launch-bound. This prints ONE JSON line with, for
each drone count and variant, ms per full step, ms per bare sensor trace and drone-steps/s on the
device, and the CPU numba step in the same run as the reference the default path uses.

    uv run python scripts/bench_device_step.py --device cuda [--actors 4,64,512] [--steps 10]
      [--gmdag-file artifacts/gmdag/corpus/hall_000.gmdag]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import torch

from navi_common import configure_logging
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.bench import bench_backend

REPO = Path(__file__).resolve().parents[1]


def _variant(settings: EnvironmentSettings, compiled: bool) -> EnvironmentSettings:
    tracer = settings.tracer.model_copy(
        update={"device_kernel": "torch", "torch_compile": "on" if compiled else "off"}
    )
    return settings.model_copy(update={"tracer": tracer})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--actors", default="4,64,512", help="comma-separated drone counts")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gmdag-file", type=Path, default=REPO / "artifacts/gmdag/corpus/hall_000.gmdag")
    parser.add_argument("--cpu-threads", type=int, default=2, help="torch/numba threads of the CPU reference")
    args = parser.parse_args()
    configure_logging("warning")  # logs to stderr: stdout carries only the JSON line
    if not args.gmdag_file.is_file():
        raise SystemExit(
            f"--gmdag-file {args.gmdag_file} does not exist (uv run navi-environment corpus prepare)"
        )
    base = EnvironmentSettings()
    counts = [int(x) for x in args.actors.split(",")]
    results: dict[str, Any] = {}
    for compiled in (False, True):
        name = "compiled" if compiled else "eager"
        for actors in counts:
            start = time.perf_counter()
            try:
                record = bench_backend(
                    _variant(base, compiled), actors, args.steps, scene_paths=[args.gmdag_file],
                    device=args.device, rounds=args.rounds,
                )  # fmt: skip
            except Exception as error:  # an experiment: record what failed and go on
                record = {"error": f"{type(error).__name__}: {error}"[:300]}
            record["wall_s_incl_warmup"] = round(time.perf_counter() - start, 1)
            results[f"{name}_{actors}"] = record
    torch.set_num_threads(args.cpu_threads)
    cpu_settings = base.model_copy(
        update={"tracer": base.tracer.model_copy(update={"threads": args.cpu_threads})}
    )
    cpu = {
        str(a): bench_backend(cpu_settings, a, args.steps, scene_paths=[args.gmdag_file], rounds=args.rounds)
        for a in counts[:2]
    }
    info: dict[str, Any] = {"device": args.device, "machine": platform.machine()}
    if args.device.startswith("cuda") and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    print(json.dumps({"benchmark": "device_step", **info, "scene": args.gmdag_file.name, "steps": args.steps,
                      "variants": results, "cpu_numba": cpu}))  # fmt: skip


if __name__ == "__main__":
    main()
