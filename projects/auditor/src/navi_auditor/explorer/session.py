"""One drone flown in-process through a list of scenes, recorded and published as it flies.

The session is the explorer minus the terminal: the command line wraps it with keyboard input and
the live view, tests and benchmarks drive it directly. Each scene visit is a *segment*: a fresh
backend on that one scene, ``reset(base_seed + scene_number)``, then steps. The action recorded for
a frame is exactly the clipped action handed to ``backend.step``, so replaying a segment's actions
from the same scene and seed reproduces its observations.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import structlog
import torch

from navi_auditor.demos import DemoWriter
from navi_common import Publisher
from navi_contracts import DistanceMatrix, RobotPose, topics
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.scene import RuntimeScene

log = structlog.get_logger()

SceneSource = Path | RuntimeScene


def scene_label(scene: SceneSource) -> str:
    """What a demonstration records as the scene: the file path, or the in-memory scene's name."""
    return str(scene) if isinstance(scene, Path) else scene.name


def make_backend(
    settings: EnvironmentSettings, scene: SceneSource, device: str | torch.device = "cpu"
) -> SdfDagBackend:
    """A one-drone backend on one scene (file or in-memory)."""
    if isinstance(scene, Path):
        return SdfDagBackend(settings, 1, device=device, scene_paths=[scene])
    return SdfDagBackend(settings, 1, device=device, scenes=[scene])


@dataclass(frozen=True)
class StepReport:
    """What one explorer step did."""

    action: np.ndarray  #: [4] clipped action executed
    reward: float
    collided: bool
    episode_ended: bool


class ExplorerSession:
    """Flies one drone scene after scene.

    Args:
        env_settings: environment settings (sensor, physics, ...).
        scenes: scene files or in-memory scenes, flown in order.
        base_seed: scene number ``k`` is reset with ``base_seed + k``.
        device: torch device of the backend.
        writer: demonstration writer (None: do not record).
        publisher: where to publish each observation as ``DistanceMatrix`` (None: do not).
    """

    def __init__(
        self,
        env_settings: EnvironmentSettings,
        scenes: Sequence[SceneSource],
        *,
        base_seed: int = 0,
        device: str | torch.device = "cpu",
        writer: DemoWriter | None = None,
        publisher: Publisher | None = None,
    ) -> None:
        if not scenes:
            raise ValueError("the explorer needs at least one scene")
        self.env_settings = env_settings
        self.scenes = list(scenes)
        self.base_seed = base_seed
        self.device = torch.device(device)
        self.writer = writer
        self.publisher = publisher
        self.scene_number = -1
        self.scene_step = 0
        self.total_steps = 0
        self.episode_id = 0
        self.collisions = 0
        self.backend: SdfDagBackend | None = None
        self._observation = torch.empty(0)
        self._episode_start = True

    @property
    def scene(self) -> SceneSource:
        """The scene being flown."""
        return self.scenes[self.scene_number]

    @property
    def observation(self) -> torch.Tensor:
        """[1, 3, Az, El] what the drone sees now (a copy owned by the session)."""
        return self._observation

    def next_scene(self) -> bool:
        """Move to the next scene; False when every scene has been flown."""
        if self.scene_number + 1 >= len(self.scenes):
            return False
        self.scene_number += 1
        seed = self.base_seed + self.scene_number
        self.backend = make_backend(self.env_settings, self.scene, self.device)
        self._observation = self.backend.reset(seed).clone()
        self.scene_step = 0
        self._episode_start = True
        if self.writer is not None:
            self.writer.begin_segment(scene_label(self.scene), seed)
        log.info(
            "auditor.explore.scene_started",
            scene=scene_label(self.scene),
            number=self.scene_number,
            seed=seed,
        )
        self._publish()
        return True

    def step(self, action: np.ndarray) -> StepReport:
        """Execute one action (clipped to [-1, 1]; NaN -> 0), record the frame, publish the result.

        Args:
            action: [4] forward, vertical, lateral, yaw rate.

        Returns:
            :class:`StepReport`.
        """
        if self.backend is None:
            raise RuntimeError("call next_scene() before step()")
        executed = np.clip(np.nan_to_num(np.asarray(action, dtype=np.float32), nan=0.0), -1.0, 1.0)
        position, yaw = self.backend.poses()
        seen = self._observation
        out = self.backend.step(torch.from_numpy(executed)[None].to(self.device))
        ended = bool(out.terminated[0] | out.truncated[0])
        collided = bool(out.info["collision"][0] > 0)
        reward = float(out.reward[0])
        if self.writer is not None:
            self.writer.add(
                seen[0].cpu().numpy(), executed, episode_start=self._episode_start, reward=reward,
                terminated=bool(out.terminated[0]), truncated=bool(out.truncated[0]), collision=collided,
                position=position[0].cpu().numpy(), yaw=float(yaw[0]), timestamp=time.time(),
            )  # fmt: skip
        self._observation = out.obs.clone()
        self._episode_start = ended
        self.episode_id += int(ended)
        self.collisions += int(collided)
        self.scene_step += 1
        self.total_steps += 1
        self._publish()
        return StepReport(executed, reward, collided, ended)

    def _publish(self) -> None:
        if self.publisher is None or self.backend is None:
            return
        obs = self._observation[0].cpu().numpy()
        position, yaw = self.backend.poses()
        message = DistanceMatrix(
            env_ids=np.zeros(1, dtype=np.int32),
            matrix_shape=(int(obs.shape[1]), int(obs.shape[2])),
            depth=obs[0][None].clip(0.0, 1.0),
            semantic=obs[1][None].astype(np.int32),
            valid_mask=obs[2][None] > 0.5,
            poses=RobotPose(position=position.cpu().numpy(), yaw=yaw.cpu().numpy()),
            step_id=self.total_steps,
            episode_ids=np.array([self.episode_id], dtype=np.int64),
            timestamp=time.time(),
        )
        self.publisher.publish(topics.DISTANCE_MATRIX, message)

    def close(self) -> Path | None:
        """Finish the demonstration file (if recording); returns its path."""
        self.backend = None
        return self.writer.close() if self.writer is not None else None
