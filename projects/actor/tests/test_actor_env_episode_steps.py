"""The actor truncates its in-process simulator's episodes at ``environment.episode_steps``."""

from __future__ import annotations

from navi_actor.config import ActorSettings
from navi_actor.runners.env_factory import with_episode_steps
from navi_environment.config import EnvironmentSettings


def test_the_actor_default_shortens_training_episodes() -> None:
    assert ActorSettings().environment.episode_steps == 500
    assert EnvironmentSettings().episode.max_steps == 2000  # the simulator's own default is untouched
    assert with_episode_steps(EnvironmentSettings(), 500).episode.max_steps == 500


def test_an_explicit_simulator_setting_wins_and_null_keeps_it(monkeypatch) -> None:
    assert with_episode_steps(EnvironmentSettings(episode={"max_steps": 12}), 500).episode.max_steps == 12
    monkeypatch.setenv("NAVI_ENV_EPISODE__MAX_STEPS", "40")
    assert with_episode_steps(EnvironmentSettings(), 500).episode.max_steps == 40
    monkeypatch.delenv("NAVI_ENV_EPISODE__MAX_STEPS")
    assert with_episode_steps(EnvironmentSettings(), None).episode.max_steps == 2000


def test_other_settings_survive_the_override() -> None:
    settings = EnvironmentSettings(sensor={"azimuth_bins": 32, "elevation_bins": 8})
    shortened = with_episode_steps(settings, 300)
    assert shortened.episode.max_steps == 300 and shortened.sensor == settings.sensor
    assert shortened.episode.starvation_grace_steps == settings.episode.starvation_grace_steps
