"""Gymnasium adapters over :class:`~navi_environment.backend.SdfDagBackend`.

* :class:`NaviVectorEnv` - a ``gymnasium.vector.VectorEnv`` of B drones (same-step autoreset: the
  returned observation of an ended drone is its new episode's first one, and the last one is in
  ``infos["final_obs"]`` with mask ``infos["_final_obs"]``), for libraries that train on vector envs.
* :class:`NaviGymEnv` - one drone as a plain ``gymnasium.Env`` (the caller resets after an end),
  which is what ``gymnasium.utils.env_checker.check_env`` validates.

Both take ``render_mode="rgb_array"``: ``render()`` returns the heading-centred depth panorama the
dashboard draws (:func:`navi_common.panorama.render_panorama`, uint8 ``(El, Az, 3)``), so
``gymnasium.wrappers.RecordVideo`` records what the drone sees. The registered ids (``Navi/Explore-v0``)
build these classes from ``scene=`` / ``corpus=`` keywords: :mod:`navi_environment.gym_registration`.

Arrays cross into numpy here (copies, so returned data is never overwritten by the next step); the
trainer in navi-actor uses the backend directly and stays tensor-native.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from navi_common.panorama import render_panorama
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.scene import RuntimeScene

MAX_SEMANTIC_ID = 65535.0
RENDER_MODES = ["rgb_array"]


def _checked_render_mode(render_mode: str | None) -> str | None:
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(f"render_mode {render_mode!r} is not supported; use one of {RENDER_MODES} or None")
    return render_mode


def panorama(observation: np.ndarray) -> np.ndarray:
    """The dashboard's panorama of one drone's observation ``(3, Az, El)``: uint8 ``(El, Az, 3)``."""
    return render_panorama(observation[0], observation[2])


def observation_space(settings: EnvironmentSettings) -> spaces.Box:
    """Box of one drone's observation ``(3, Az, El)``: depth in [0,1], semantic id, valid in {0,1}."""
    shape = (3, settings.sensor.azimuth_bins, settings.sensor.elevation_bins)
    high = np.ones(shape, dtype=np.float32)
    high[1] = MAX_SEMANTIC_ID
    return spaces.Box(low=np.zeros(shape, dtype=np.float32), high=high, dtype=np.float32)


def action_space() -> spaces.Box:
    """Box of one drone's action: forward, vertical, lateral, yaw rate in [-1, 1]."""
    return spaces.Box(low=-1.0, high=1.0, shape=(4,), dtype=np.float32)


class NaviVectorEnv(VectorEnv):  # type: ignore[misc]
    """B drones as a Gymnasium vector environment.

    Args:
        settings: environment settings.
        num_envs: number of drones.
        scene_paths / scenes: as for :class:`SdfDagBackend`.
        device: backend device.
    """

    metadata: dict[str, Any] = {  # noqa: RUF012
        "autoreset_mode": AutoresetMode.SAME_STEP,
        "render_modes": RENDER_MODES,
    }

    def __init__(
        self,
        settings: EnvironmentSettings,
        num_envs: int,
        *,
        scene_paths: list[Path] | None = None,
        scenes: Sequence[RuntimeScene] | None = None,
        device: str = "cpu",
        render_mode: str | None = None,
    ) -> None:
        self.render_mode = _checked_render_mode(render_mode)
        self.backend = SdfDagBackend(
            settings, num_envs, device=device, scene_paths=scene_paths, scenes=scenes
        )
        self.metadata = {**self.metadata, "render_fps": round(1.0 / settings.physics.dt)}
        self.num_envs = num_envs
        self.single_observation_space = observation_space(settings)
        self.single_action_space = action_space()
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every drone; a list of seeds uses its first entry (one generator drives the batch)."""
        first = seed[0] if isinstance(seed, list) else seed
        super().reset(seed=first)
        obs = self.backend.reset(seed=first)
        return obs.cpu().numpy().copy(), {}

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every drone; see the module docstring for the autoreset convention."""
        out = self.backend.step(np.asarray(actions, dtype=np.float32))  # type: ignore[arg-type]
        ended = (out.terminated | out.truncated).cpu().numpy()
        infos: dict[str, Any] = {key: value.cpu().numpy().copy() for key, value in out.info.items()}
        infos["final_obs"] = out.final_obs.cpu().numpy().copy()
        infos["_final_obs"] = ended
        return (
            out.obs.cpu().numpy().copy(),
            out.reward.cpu().numpy().copy(),
            out.terminated.cpu().numpy().copy(),
            out.truncated.cpu().numpy().copy(),
            infos,
        )

    def render(self) -> tuple[np.ndarray, ...] | None:
        """One panorama per drone of its current observation (``rgb_array``), else None."""
        if self.render_mode is None:
            return None
        observations = self.backend.obs.cpu().numpy()
        return tuple(panorama(observation) for observation in observations)


class NaviGymEnv(gymnasium.Env):  # type: ignore[misc]
    """One drone as a ``gymnasium.Env``.

    Args:
        settings: environment settings.
        scene_paths / scenes: as for :class:`SdfDagBackend`.
    """

    metadata: dict[str, Any] = {"render_modes": RENDER_MODES}  # noqa: RUF012

    def __init__(
        self,
        settings: EnvironmentSettings,
        *,
        scene_paths: list[Path] | None = None,
        scenes: Sequence[RuntimeScene] | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.render_mode = _checked_render_mode(render_mode)
        self.backend = SdfDagBackend(settings, 1, scene_paths=scene_paths, scenes=scenes)
        self.metadata = {**self.metadata, "render_fps": round(1.0 / settings.physics.dt)}
        self.observation_space = observation_space(settings)
        self.action_space = action_space()
        self._last_obs: np.ndarray | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode; the backend seed comes from this env's seeded ``np_random``."""
        super().reset(seed=seed)
        obs = self.backend.reset(seed=int(self.np_random.integers(0, 2**31 - 1)))
        self._last_obs = obs[0].cpu().numpy().copy()
        return self._last_obs.copy(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Step the drone. At an episode's end the observation is that episode's last one."""
        batch = np.asarray(action, dtype=np.float32).reshape(1, 4)
        out = self.backend.step(batch)  # type: ignore[arg-type]
        info = {key: float(value[0]) for key, value in out.info.items()}
        self._last_obs = out.final_obs[0].cpu().numpy().copy()
        return (
            self._last_obs.copy(),
            float(out.reward[0]),
            bool(out.terminated[0]),
            bool(out.truncated[0]),
            info,
        )

    def render(self) -> np.ndarray | None:
        """The panorama of the observation last returned (``rgb_array``), else None."""
        if self.render_mode is None:
            return None
        if self._last_obs is None:
            raise gymnasium.error.ResetNeeded("call reset() before render()")
        return panorama(self._last_obs)
