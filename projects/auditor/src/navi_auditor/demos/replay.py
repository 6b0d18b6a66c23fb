"""Re-fly a demonstration's actions and compare the observations (determinism / integrity check)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from navi_auditor.explorer.session import SceneSource, make_backend
from navi_common.demonstrations import DemoFormatError, Demonstration
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.scene import RuntimeScene


@dataclass(frozen=True)
class ReplayCheck:
    """Result of re-flying a demonstration."""

    frames: int
    segments: int
    max_observation_error: float  #: largest |replayed - recorded| over all observation values
    first_mismatch: int | None  #: first frame whose observation differs beyond the tolerance


def environment_settings_of(demo: Demonstration) -> EnvironmentSettings:
    """The environment settings the demonstration was recorded with (from its metadata)."""
    raw = demo.metadata.get("environment_settings")
    if raw is None:
        raise DemoFormatError("demonstration metadata has no environment_settings; cannot re-fly it")
    values = json.loads(raw) if isinstance(raw, str) else dict(raw)
    return EnvironmentSettings(**values)


def _resolve(label: str, scenes: Mapping[str, RuntimeScene] | None) -> SceneSource:
    if scenes is not None and label in scenes:
        return scenes[label]
    path = Path(label)
    if not path.is_file():
        raise DemoFormatError(f"scene {label!r} of the demonstration is neither a file nor a given scene")
    return path


def replay_demonstration(
    demo: Demonstration,
    *,
    scenes: Mapping[str, RuntimeScene] | None = None,
    device: str | torch.device = "cpu",
    tolerance: float = 0.0,
) -> ReplayCheck:
    """Reset each segment's scene with its seed, step the recorded actions, compare observations.

    Args:
        demo: a loaded demonstration.
        scenes: in-memory scenes by label (segments recorded on files resolve by path).
        device: backend device.
        tolerance: largest accepted absolute difference (0: bit-identical).

    Returns:
        :class:`ReplayCheck`.
    """
    batch = int(demo.metadata.get("batch_drones", 1))
    if batch != 1:
        raise DemoFormatError(
            f"recorded as drone {demo.metadata.get('drone_index')} of a batch of {batch}: its trajectory "
            "depends on the whole batch's random stream, so it cannot be re-flown alone"
        )
    settings = environment_settings_of(demo)
    segment_ids = demo.frames["segment_ids"]
    worst, first_bad = 0.0, None
    for segment, (label, seed) in enumerate(
        zip(demo.segment_scenes.tolist(), demo.segment_seeds.tolist(), strict=True)
    ):
        frames = np.flatnonzero(segment_ids == segment)
        if frames.size == 0:
            continue
        backend = make_backend(settings, _resolve(str(label), scenes), device)
        observation = backend.reset(int(seed))
        for index in frames.tolist():
            error = float(np.abs(observation[0].cpu().numpy() - demo.observations[index]).max())
            worst = max(worst, error)
            if error > tolerance and first_bad is None:
                first_bad = index
            action = torch.from_numpy(demo.actions[index])[None].to(backend.device)
            observation = backend.step(action).obs
    return ReplayCheck(len(demo), len(demo.segment_seeds), worst, first_bad)
