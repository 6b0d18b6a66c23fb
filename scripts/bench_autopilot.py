"""How much of the time does the autopilot actually fly? Idle share per procedural family.

A frame is idle when the drone neither moved 1 cm nor turned 0.01 rad (issue 23: the autopilot
hovered against walls in 77-86% of frames). Run: ``uv run python scripts/bench_autopilot.py``.
"""

from __future__ import annotations

import argparse
import json

import torch

from navi_auditor.explorer.autopilot import Autopilot
from navi_auditor.settings import AutopilotSettings
from navi_common import configure_logging
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.gmdag.writer import compile_sdf_to_gmdag
from navi_environment.runtime.loader import scene_from_asset
from navi_environment.scenes.rasterize import layout_grids
from navi_environment.scenes.registry import FAMILIES, generate


def fly(family: str, seed: int, drones: int, steps: int, resolution: int) -> dict[str, float]:
    """Idle share, collisions per drone-step and metres flown per drone in one family scene."""
    settings = EnvironmentSettings()
    sdf, semantic, bmin, voxel = layout_grids(generate(family, seed), resolution)
    scene = scene_from_asset(compile_sdf_to_gmdag(sdf, semantic, bmin, voxel), settings)
    backend = SdfDagBackend(settings, drones, scenes=[scene])
    sensor = settings.sensor
    pilot = Autopilot(AutopilotSettings(), sensor.horizon_m, sensor.azimuth_bins, sensor.elevation_bins)
    observation = backend.reset(seed)
    idle = collisions = metres = torch.zeros(())
    for _ in range(steps):
        before, yaw_before = backend.poses()
        out = backend.step(pilot(observation))
        after, yaw_after = backend.poses()
        live = ~(out.terminated | out.truncated)
        moved = (after - before).norm(dim=1)
        turned = (torch.remainder(yaw_after - yaw_before + torch.pi, 2 * torch.pi) - torch.pi).abs()
        idle = idle + ((moved < 0.01) & (turned < 0.01) & live).sum()
        collisions = collisions + (out.info["collision"] > 0).sum()
        metres = metres + (moved * live).sum()
        observation = out.obs
    frames = drones * steps
    return {"idle_share": float(idle) / frames, "collisions_per_step": float(collisions) / frames,
            "metres_per_drone": float(metres) / drones}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drones", type=int, default=8)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resolution", type=int, default=128)
    args = parser.parse_args()
    configure_logging("warning")  # logs to stderr: stdout carries only the JSON lines
    torch.set_num_threads(1)
    for family in FAMILIES:
        result = fly(family, args.seed, args.drones, args.steps, args.resolution)
        print(json.dumps({"family": family, **{k: round(v, 4) for k, v in result.items()}}), flush=True)


if __name__ == "__main__":
    main()
