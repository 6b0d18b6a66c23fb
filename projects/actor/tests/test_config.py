"""One root .env serves every actor command: train reads the service groups' keys without error."""

from __future__ import annotations

from pathlib import Path

import pytest

from navi_actor.config import ActorSettings
from navi_actor.service.brain_settings import BrainSettings
from navi_contracts import limits as contract_limits


@pytest.fixture
def dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    env_file = tmp_path / ".env"
    monkeypatch.setattr(contract_limits, "dotenv_path", lambda: env_file)
    return env_file


def test_service_inference_and_launcher_keys_are_actor_settings(dotenv: Path) -> None:
    dotenv.write_text(
        "NAVI_ACTOR_SERVICE__MODE=async\nNAVI_ACTOR_INFERENCE__DETERMINISTIC=false\n"
        "NAVI_ACTOR_LAUNCHER__ON_EXIT=stop\n"
    )
    for settings in (ActorSettings(), BrainSettings()):
        assert settings.service.mode == "async"
        assert settings.inference.deterministic is False
        assert settings.launcher.on_exit == "stop"


def test_a_typo_inside_a_group_still_fails_loudly(dotenv: Path) -> None:
    dotenv.write_text("NAVI_ACTOR_SERVICE__MODDE=async\n")
    with pytest.raises(ValueError, match=r"(?i)modde"):
        ActorSettings()


def test_a_frontier_reading_policy_gets_the_sensors_horizon(dotenv: Path) -> None:
    dotenv.write_text("NAVI_ENV_SENSOR__HORIZON_M=12\n")  # the default policy reads the frontier map
    assert ActorSettings().policy_config().visits.horizon_m == 12.0  # depth is read in the sensor's metres
    dotenv.write_text("NAVI_ACTOR_POLICY__VISITS__SOURCE=positions\nNAVI_ENV_SENSOR__HORIZON_M=12\n")
    assert ActorSettings().policy_config().visits.horizon_m == 30.0  # unread for past positions: default


def test_a_memory_reading_policy_gets_the_shapers_memory_setting_and_refuses_ray(dotenv: Path) -> None:
    dotenv.write_text("NAVI_ACTOR_POLICY__MEMORY_INPUT=true\nNAVI_ACTOR_SHAPING__MEMORY__CAPACITY=7\n")
    assert ActorSettings().policy_config().memory.capacity == 7  # one memory setting, in the checkpoint
    dotenv.write_text("NAVI_ACTOR_SHAPING__MEMORY__CAPACITY=7\n")
    assert ActorSettings().policy_config().memory.capacity == 256  # unread without memory_input: default
    dotenv.write_text("NAVI_ACTOR_POLICY__MEMORY_INPUT=true\nNAVI_ACTOR_TRAIN__BACKEND=ray\n")
    with pytest.raises(ValueError, match=r"memory_input is not supported with train\.backend=ray"):
        ActorSettings()


def test_the_visit_settings_reach_the_policy_on_every_backend(dotenv: Path) -> None:
    dotenv.write_text("NAVI_ACTOR_POLICY__VISIT_INPUT=true\nNAVI_ACTOR_POLICY__VISITS__SECTORS=6\n")
    assert ActorSettings().policy_config().visits.features == 7  # six sectors and "here"
    for setting in ("VISIT_INPUT", "VISIT_PREDICTION"):  # Ray's fragments carry the features
        dotenv.write_text(f"NAVI_ACTOR_POLICY__{setting}=true\nNAVI_ACTOR_TRAIN__BACKEND=ray\n")
        assert ActorSettings().train.backend == "ray"


def test_quiet_drones_leave_a_loud_one_and_refuse_ray_and_open_loop_chunks(dotenv: Path) -> None:
    dotenv.write_text("NAVI_ACTOR_ROLLOUT__QUIET_DRONES=3\n")
    assert ActorSettings().rollout.quiet_drones == 3 and ActorSettings().rollout.quiet_noise_scale == 0.5
    dotenv.write_text("NAVI_ACTOR_ROLLOUT__QUIET_DRONES=4\n")  # of the default 4 drones
    with pytest.raises(ValueError, match=r"quiet_drones \(4\) must be fewer than rollout\.num_actors"):
        ActorSettings()
    dotenv.write_text("NAVI_ACTOR_ROLLOUT__QUIET_DRONES=1\nNAVI_ACTOR_TRAIN__BACKEND=ray\n")
    with pytest.raises(ValueError, match=r"quiet_drones needs train\.backend=local"):
        ActorSettings()
    dotenv.write_text(
        "NAVI_ACTOR_ROLLOUT__QUIET_DRONES=1\nNAVI_ACTOR_POLICY__ACTION_CHUNK=4\nNAVI_ACTOR_PPO__OPEN_LOOP_FRACTION=0.5\n"
    )
    with pytest.raises(ValueError, match=r"no open-loop chunks"):
        ActorSettings()


def test_null_from_the_environment_or_dotenv_is_none(dotenv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The refusal of a state std under the falling ceiling says "set ppo.final_log_std_max=null":
    # that has to work where users set things, not only as a Python None.
    dotenv.write_text("NAVI_ACTOR_POLICY__LOG_STD_MODE=state\nNAVI_ACTOR_PPO__FINAL_LOG_STD_MAX=null\n")
    settings = ActorSettings()
    assert settings.ppo.final_log_std_max is None
    assert settings.policy.log_std_mode == "state"
    dotenv.write_text("")
    monkeypatch.setenv("NAVI_ACTOR_PPO__FINAL_LOG_STD_MAX", "null")
    monkeypatch.setenv("NAVI_ACTOR_TRAIN__TOTAL_STEPS", "null")
    settings = ActorSettings()
    assert settings.ppo.final_log_std_max is None and settings.train.total_steps is None
    monkeypatch.setenv("NAVI_ACTOR_PPO__FINAL_LOG_STD_MAX", "-0.5")
    assert ActorSettings().ppo.final_log_std_max == -0.5
