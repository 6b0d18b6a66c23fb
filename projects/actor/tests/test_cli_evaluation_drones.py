"""How many drones `navi-actor evaluate` flies a plan with: one per planned episode unless
``rollout.num_actors`` is set (flag or environment), at most ``MAX_EVALUATION_DRONES``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from navi_actor.cli import main

pytestmark = pytest.mark.usefixtures("restore_process_state")

TINY_SIMULATOR = {
    "NAVI_ENV_SENSOR__AZIMUTH_BINS": "32",
    "NAVI_ENV_SENSOR__ELEVATION_BINS": "8",
    "NAVI_ENV_EPISODE__MAX_STEPS": "12",
}


def evaluate(scene: Path, *options: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    arguments = ["evaluate", "--policy", "heuristic", "--gmdag-file", str(scene), "--torch-threads", "1",
                 "--episodes-per-scene", "3", "--json", *options]  # fmt: skip
    result = CliRunner().invoke(main, arguments, env={**TINY_SIMULATOR, **(env or {})})
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output.strip().splitlines()[-1])
    return report


def test_each_planned_episode_gets_its_own_drone_unless_num_actors_is_set(
    tiny_scene: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NAVI_ACTOR_ROLLOUT__NUM_ACTORS", raising=False)
    one_wave = evaluate(tiny_scene)
    assert one_wave["plan"]["drones"] == 3  # 1 scene x 3 starts, not the training default of 4
    one_drone = evaluate(tiny_scene, "--num-actors", "1")
    assert one_drone["plan"]["drones"] == 1
    assert evaluate(tiny_scene, env={"NAVI_ACTOR_ROLLOUT__NUM_ACTORS": "2"})["plan"]["drones"] == 2
    # a deterministic policy flies the same whatever the count (a learned one differs by float rounding)
    (alone,) = one_drone["results"]
    (together,) = one_wave["results"]
    for metric in ("coverage_cells", "collisions_per_step", "path_m", "return"):
        assert together[metric] == alone[metric], metric


def test_a_plan_bigger_than_the_cap_gets_the_cap_of_drones(
    tiny_scene: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from navi_actor.config import EnvironmentChoice
    from navi_actor.runners import env_factory
    from navi_environment.config import EnvironmentSettings

    monkeypatch.setattr(env_factory, "MAX_EVALUATION_DRONES", 4)
    env_settings = EnvironmentSettings(sensor={"azimuth_bins": 32, "elevation_bins": 8})
    choice = EnvironmentChoice(gmdag_file=tiny_scene)
    capped = env_factory.build_environment(choice, 2, "cpu", env_settings, drones_per_scene=6)
    assert capped.env.num_actors == 4
    planned = env_factory.build_environment(choice, 2, "cpu", env_settings, drones_per_scene=3)
    assert planned.env.num_actors == 3
    assert env_factory.build_environment(choice, 2, "cpu", env_settings).env.num_actors == 2
