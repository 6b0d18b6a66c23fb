"""Autopilot demonstrations from B drones at once (benchmarks, large BC datasets).

The backend and the autopilot run batched (one step = one tensor op for all drones); each drone's
frames go to its own demonstration file, because a demonstration is one drone's sequence.
Files record ``batch_drones`` and ``drone_index`` in their metadata: re-flying one drone of a
batch needs the whole batch, so :func:`navi_auditor.demos.replay.replay_demonstration` checks it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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


Pilot = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
"""``(observations [B,3,Az,El], episode_starts [B] bool, positions [B,3], yaw [B]) -> actions [B,4]``."""


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
    return record_pilot_batch(
        backend, lambda obs, starts, position, yaw: pilot(obs), pilot_name="autopilot", steps=steps,
        out_dir=out_dir, stem=stem, seed=seed, part_frames=part_frames,
    )  # fmt: skip


def record_pilot_batch(
    backend: SdfDagBackend,
    pilot: Pilot,
    *,
    pilot_name: str,
    steps: int,
    out_dir: Path,
    stem: str,
    seed: int = 0,
    part_frames: int = 512,
) -> list[Path]:
    """Fly every drone of ``backend`` with ``pilot`` for ``steps`` steps; one file per drone.

    Why a pilot callable and a ready backend: any batched pilot (the scripted autopilot, the frontier
    planner, which also needs the poses) records into the one demonstration format, on any scene
    list (a multi-scene backend moves a drone to the next scene when its episode ends). The action
    recorded is the one passed to ``backend.step``: the pilot's, NaN -> 0 and clipped to [-1, 1],
    exactly what the environment executes. A drone's file starts a new segment whenever an episode
    starts it in another scene than its current segment's, so ``segment_scenes`` name every scene
    flown.

    Args:
        backend: the batched simulator (its ``reset(seed)`` starts the flight).
        pilot: see :data:`Pilot`.
        pilot_name: the ``pilot`` metadata entry.
        steps: steps per drone.
        out_dir: folder for ``<stem>-s<seed>-d<index>.npz``.
        stem: file name stem.
        seed: ``reset`` seed.
        part_frames: frames per crash-safe part.

    Returns:
        The written files, by drone index.
    """
    sensor, drones = backend.settings.sensor, backend.num_actors
    labels = [scene_label(scene) for scene in backend.scenes.corpus]
    meta: dict[str, Any] = {**provenance(), "pilot": pilot_name, "seed": seed, "batch_drones": drones,
                            "environment_settings": backend.settings.model_dump_json()}  # fmt: skip
    writers = [
        DemoWriter(
            out_dir / f"{stem}-s{seed}-d{index}.npz",
            (sensor.azimuth_bins, sensor.elevation_bins),
            {**meta, "drone_index": index},
            part_frames,
        )
        for index in range(drones)
    ]
    observation = backend.reset(seed)
    starts = torch.ones(drones, dtype=torch.bool)
    current: list[int | None] = [None] * drones
    for _ in range(steps):
        for index, scene in enumerate(backend.scene_index.tolist()):
            if current[index] != scene and bool(starts[index]):
                writers[index].begin_segment(labels[scene], seed)
                current[index] = scene
        position, yaw = backend.poses()
        actions = torch.nan_to_num(pilot(observation, starts, position, yaw), nan=0.0).clamp(-1.0, 1.0)
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
    log.info("auditor.demo.batch_recorded", pilot=pilot_name, scenes=len(labels), drones=drones,
             steps=steps, out_dir=str(out_dir))  # fmt: skip
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
