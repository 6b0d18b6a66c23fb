"""Family weights change what training flies, never what an evaluation flies: a planned episode
starts where the plan says, whatever the scene rotation, so a weighted run is judged on the same
episodes as an unweighted one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from navi_actor.evaluation.baselines import RandomPolicy
from navi_actor.evaluation.evaluator import evaluate_policy
from navi_actor.evaluation.plan import make_plan
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene


def _backend(weights: dict[str, int]) -> SdfDagBackend:
    scenes = [
        dataclasses.replace(room_scene(RoomSpec(hi=(6.0, 6.0, 3.0)), 64), name="apartment_000"),
        dataclasses.replace(room_scene(RoomSpec(hi=(8.0, 5.0, 3.0)), 64), name="maze_000"),
    ]
    settings = EnvironmentSettings(
        sensor={"azimuth_bins": 16, "elevation_bins": 8},
        episode={"max_steps": 12, "episodes_per_scene": 1, "family_weights": weights},
    )
    return SdfDagBackend(settings, 2, scenes=scenes)


def test_a_weighted_rotation_flies_the_same_planned_episodes() -> None:
    plain, weighted = _backend({}), _backend({"apartment": 3})
    assert weighted.rotation.tolist() == [0, 0, 0, 1] and plain.rotation.tolist() == [0, 1]
    plan = make_plan(plain, 3, seed=4)
    assert plan.same_starts(make_plan(weighted, 3, seed=4))
    first = evaluate_policy(RandomPolicy(), plain, plan=plan, seed=2)
    second = evaluate_policy(RandomPolicy(), weighted, plan=plan, seed=2)
    assert set(first.columns) == set(second.columns)
    for name, column in first.columns.items():
        np.testing.assert_array_equal(column, second.columns[name], err_msg=name)
    assert np.bincount(plan.scenes.numpy()).tolist() == [3, 3]  # the plan is per scene, not per turn


def test_a_weighted_run_is_compared_only_with_runs_of_the_same_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry's comparison key hashes the corpus summary: a reward EMA over another mix of
    scenes must not be ranked against an unweighted one, and an unweighted run keeps the key it had
    before the setting existed."""
    import navi_environment.backend as backend_module
    from navi_actor.config import EnvironmentChoice
    from navi_actor.runners.env_factory import build_environment

    monkeypatch.setattr(backend_module, "SdfDagBackend", lambda *args, **kwargs: None)
    scene = tmp_path / "apartment_000.gmdag"
    scene.write_bytes(b"")
    choice = EnvironmentChoice(gmdag_file=scene)
    plain = build_environment(choice, 2, "cpu", EnvironmentSettings()).corpus_summary
    weighted = build_environment(
        choice, 2, "cpu", EnvironmentSettings(episode={"family_weights": {"apartment": 2}})
    ).corpus_summary
    assert "family_weights" not in plain and weighted["family_weights"] == {"apartment": 2}
    assert weighted["reward_settings"] == plain["reward_settings"]  # the returns mean the same
    assert {k: v for k, v in weighted.items() if k != "family_weights"} == plain
