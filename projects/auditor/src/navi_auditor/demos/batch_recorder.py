"""Autopilot demonstrations from B drones at once (benchmarks, large BC datasets).

The backend and the autopilot run batched (one step = one tensor op for all drones); each drone's
frames go to its own demonstration file, because a demonstration is one drone's sequence.
Files record ``batch_drones`` and ``drone_index`` in their metadata: re-flying one drone of a
batch needs the whole batch, so :func:`navi_auditor.demos.replay.replay_demonstration` checks it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import structlog
import torch

from navi_auditor.demos.writer import DemoWriter
from navi_auditor.explorer.autopilot import Autopilot
from navi_auditor.explorer.session import SceneSource, scene_label
from navi_auditor.provenance import provenance
from navi_auditor.settings import AutopilotSettings
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings

log = structlog.get_logger()


def record_autopilot_batch(
    env_settings: EnvironmentSettings,
    scene: SceneSource,
    *,
    drones: int,
    steps: int,
    out_dir: Path,
    seed: int = 0,
    autopilot: AutopilotSettings | None = None,
    device: str | torch.device = "cpu",
    part_frames: int = 512,
) -> list[Path]:
    """Fly ``drones`` autopilot drones for ``steps`` steps in ``scene``; one file per drone.

    Args:
        env_settings: environment settings (sensor, physics, episodes).
        scene: a ``.gmdag`` path or an in-memory runtime scene.
        drones: B.
        steps: steps per drone.
        out_dir: folder for ``<scene>-s<seed>-d<index>.npz``.
        seed: ``reset`` seed.
        autopilot: steering settings (default settings when None).
        device: backend device.
        part_frames: frames per crash-safe part.

    Returns:
        The written files, by drone index.
    """
    backend = SdfDagBackend(env_settings, drones, device=device, **_scene_kwargs(scene))
    sensor = env_settings.sensor
    pilot = Autopilot(autopilot or AutopilotSettings(), sensor.horizon_m, sensor.azimuth_bins,
                      sensor.elevation_bins, backend.device)  # fmt: skip
    label = scene_label(scene)
    stem = Path(label).stem if isinstance(scene, Path) else label
    meta: dict[str, Any] = {**provenance(), "pilot": "autopilot", "seed": seed, "batch_drones": drones,
                            "environment_settings": env_settings.model_dump_json()}  # fmt: skip
    writers = [
        DemoWriter(
            out_dir / f"{stem}-s{seed}-d{index}.npz",
            (sensor.azimuth_bins, sensor.elevation_bins),
            {**meta, "drone_index": index},
            part_frames,
        )
        for index in range(drones)
    ]
    for writer in writers:
        writer.begin_segment(label, seed)
    observation = backend.reset(seed)
    starts = torch.ones(drones, dtype=torch.bool)
    for _ in range(steps):
        actions = pilot(observation)  # [B, 4] in [-1, 1]
        position, yaw = backend.poses()
        seen = observation.cpu().numpy().copy()
        out = backend.step(actions)
        frame = {
            "actions": actions.cpu().numpy(), "reward": out.reward.cpu().numpy(),
            "terminated": out.terminated.cpu().numpy(), "truncated": out.truncated.cpu().numpy(),
            "collision": out.info["collision"].cpu().numpy() > 0, "position": position.cpu().numpy(),
            "yaw": yaw.cpu().numpy(), "starts": starts.numpy(),
        }  # fmt: skip
        _append_rows(writers, seen, frame, time.time())
        starts = (out.terminated | out.truncated).cpu()
        observation = out.obs
    paths = [writer.close() for writer in writers]
    log.info("auditor.demo.batch_recorded", scene=label, drones=drones, steps=steps, out_dir=str(out_dir))
    return paths


def _scene_kwargs(scene: SceneSource) -> dict[str, Any]:
    return {"scene_paths": [scene]} if isinstance(scene, Path) else {"scenes": [scene]}


def _append_rows(
    writers: Sequence[DemoWriter], seen: np.ndarray, frame: dict[str, np.ndarray], now: float
) -> None:
    """One frame per drone into its own file (the per-drone part of recording is only disk I/O)."""
    for index, writer in enumerate(writers):
        writer.add(
            seen[index], frame["actions"][index], episode_start=bool(frame["starts"][index]),
            reward=float(frame["reward"][index]), terminated=bool(frame["terminated"][index]),
            truncated=bool(frame["truncated"][index]), collision=bool(frame["collision"][index]),
            position=frame["position"][index], yaw=float(frame["yaw"][index]), timestamp=now,
        )  # fmt: skip
