"""Gymnasium adapters pass Gymnasium's own checks and keep the backend's semantics."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from navi_environment.config import EnvironmentSettings
from navi_environment.gym_adapter import NaviGymEnv, NaviVectorEnv
from navi_environment.runtime.analytic import RoomSpec, room_scene

SETTINGS = EnvironmentSettings(sensor={"azimuth_bins": 16, "elevation_bins": 8}, episode={"max_steps": 3})


@pytest.fixture(scope="module")
def room():  # type: ignore[no-untyped-def]
    return room_scene(RoomSpec(hi=(8.0, 6.0, 3.0)), 64)


def test_single_env_passes_gymnasium_check_env(room) -> None:  # type: ignore[no-untyped-def]
    env = NaviGymEnv(SETTINGS, scenes=[room])
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and isinstance(reward, float)
    assert truncated and not terminated and info["episode_length"] == 3.0


def test_vector_env_same_step_autoreset(room) -> None:  # type: ignore[no-untyped-def]
    env = NaviVectorEnv(SETTINGS, 2, scenes=[room])
    obs, _ = env.reset(seed=1)
    assert obs.shape == (2, 3, 16, 8) and env.observation_space.contains(obs)
    again, _ = NaviVectorEnv(SETTINGS, 2, scenes=[room]).reset(seed=1)
    assert np.array_equal(obs, again)
    for _ in range(3):
        obs, reward, terminated, truncated, infos = env.step(env.action_space.sample())
        assert reward.shape == (2,) and reward.dtype == np.float32
    assert truncated.all() and not terminated.any() and infos["_final_obs"].all()
    assert not np.array_equal(infos["final_obs"], obs)
    assert np.all(infos["episode_length"] == 3)
