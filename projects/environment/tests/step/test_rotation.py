"""The scene rotation: family weights repeat each run of a family's scenes; no weights, corpus order."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from pydantic import ValidationError
from structlog.testing import capture_logs

from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene
from navi_environment.step.episodes import scene_rotation, unknown_families


def test_no_weights_fly_the_corpus_in_order() -> None:
    assert scene_rotation(["apartment", "apartment", "maze"], {}) == [0, 1, 2]
    assert scene_rotation(["apartment", "maze"], {"apartment": 1}) == [0, 1]


def test_a_weight_repeats_each_run_of_the_familys_scenes() -> None:
    families = ["apartment"] * 3 + ["maze"] * 2 + ["apartment"]
    # the run of three apartments twice (the order copies of their files made), the mazes once,
    # the lone apartment at the end twice
    assert scene_rotation(families, {"apartment": 2}) == [0, 1, 2, 0, 1, 2, 3, 4, 5, 5]
    assert scene_rotation(families, {"maze": 3}) == [0, 1, 2, 3, 4, 3, 4, 3, 4, 5]


def test_a_weight_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="'maze' must be >= 1"):
        scene_rotation(["maze"], {"maze": 0})
    with pytest.raises(ValidationError):
        EnvironmentSettings(episode={"family_weights": {"maze": 0}})


def test_weights_come_from_the_environment_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAVI_ENV_EPISODE__FAMILY_WEIGHTS", '{"apartment": 2, "hall": 3}')
    assert EnvironmentSettings().episode.family_weights == {"apartment": 2, "hall": 3}


def test_unknown_families_are_named() -> None:
    assert unknown_families(["apartment", "maze"], {"apartement": 2, "maze": 2, "hall": 1}) == [
        "apartement", "hall",
    ]  # fmt: skip


def _named(name: str, hi: tuple[float, float, float]):  # type: ignore[no-untyped-def]
    return dataclasses.replace(room_scene(RoomSpec(hi=hi), 64), name=name)


def test_drones_fly_the_weighted_rotation() -> None:
    scenes = [_named("apartment_000", (6.0, 6.0, 3.0)), _named("maze_000", (8.0, 6.0, 3.0))]
    settings = EnvironmentSettings(
        sensor={"azimuth_bins": 16, "elevation_bins": 8},
        episode={"max_steps": 1, "episodes_per_scene": 1, "family_weights": {"apartment": 2}},
    )
    with capture_logs() as logs:
        backend = SdfDagBackend(settings, 2, scenes=scenes)
    assert backend.rotation.tolist() == [0, 0, 1]
    (weighted,) = [e for e in logs if e["event"] == "env.rotation.weighted"]
    assert weighted["scenes"] == 2 and weighted["rotation"] == 3
    assert not [e for e in logs if e["log_level"] == "warning"]
    backend.reset(seed=0)
    # drone 0 starts at turn 0, drone 1 at turn 1 (spread over the 3 turns); every episode moves on
    seen = [backend.scene_index.tolist()]
    for _ in range(6):
        backend.step(torch.zeros(2, 4))
        seen.append(backend.scene_index.tolist())
    assert seen == [[0, 0], [0, 1], [1, 0], [0, 0], [0, 1], [1, 0], [0, 0]]
    backend.reset(seed=0)  # a reset starts the rotation over
    assert backend.scene_index.tolist() == [0, 0]


def test_a_weight_for_a_family_the_corpus_lacks_is_a_warning() -> None:
    settings = EnvironmentSettings(
        sensor={"azimuth_bins": 16, "elevation_bins": 8}, episode={"family_weights": {"apartement": 2}}
    )
    with capture_logs() as logs:
        backend = SdfDagBackend(settings, 1, scenes=[_named("apartment_000", (6.0, 6.0, 3.0))])
    assert backend.rotation.tolist() == [0]
    (warning,) = [e for e in logs if e["log_level"] == "warning"]
    assert warning["event"] == "env.rotation.unknown_family"
    assert warning["families"] == ["apartement"] and warning["known"] == ["apartment"]
