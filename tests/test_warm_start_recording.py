"""The warm start's recorder (navi-actor) writes files the auditor's demonstration reader accepts.

Two writers of one schema exist because navi-actor may not import the auditor; this test keeps the
actor's files valid under the auditor's own validation (``load_demonstration``), and checks what the
recorder promises: every scene is flown, round by round, and a drone whose episode ends starts again
in the same scene.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch


@pytest.fixture(scope="module")
def scenes(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    folder = tmp_path_factory.mktemp("scenes")
    paths = []
    for seed in (0, 1, 2):
        asset = compile_source(f"procedural:hall:seed={seed}", CompileSettings(), resolution=32).asset
        write_gmdag(asset, folder / f"hall_{seed:03d}.gmdag")
        paths.append(folder / f"hall_{seed:03d}.gmdag")
    return paths


def test_every_scene_is_flown_in_files_the_auditor_validates(
    tmp_path: Path, scenes: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from navi_actor.bc.frontier_recording import record_frontier
    from navi_auditor.demos import load_demonstration
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    settings = EnvironmentSettings(
        sensor={"azimuth_bins": 32, "elevation_bins": 8},
        episode={"max_steps": 5, "episodes_per_scene": 1},
    )  # each drone starts again twice in its 12-step share; the backend alone would move it on
    env = SdfDagBackend(settings, 2, scene_paths=scenes)
    flying_in: list[list[int]] = []  # each step's scene per drone, restarts included
    step = env.step

    def spy(actions: torch.Tensor) -> Any:
        flying_in.append(env.scene_index.tolist())
        return step(actions)

    monkeypatch.setattr(env, "step", spy)
    recording = record_frontier(env, 48, tmp_path, seed=3)
    # 3 scenes, 2 drones: round 1 flies scenes 0 and 1, round 2 scene 2 and (wrapping) scene 0 again
    assert flying_in == [[0, 1]] * 12 + [[2, 0]] * 12
    assert recording.steps == 48 and recording.rounds == 2 and recording.steps_per_flight == 12
    assert recording.scenes == [str(path) for path in scenes] and len(recording.files) == 4
    flown: dict[str, int] = {}
    for path in recording.files:
        demo = load_demonstration(path)  # the auditor's schema validation
        (scene,) = demo.segment_scenes.tolist()
        flown[Path(scene).name] = flown.get(Path(scene).name, 0) + len(demo)
        assert demo.metadata["pilot"] == "frontier" and demo.metadata["placed_starts"] is True
        starts = demo.episode_starts
        assert starts.sum() == 3 and starts[[0, 5, 10]].all()  # restarted, in the same file and scene
        assert (demo.frames["episode_ids"] == np.cumsum(starts) - 1).all()
        assert (demo.frames["segment_ids"] == 0).all()
    assert flown == {"hall_000.gmdag": 24, "hall_001.gmdag": 12, "hall_002.gmdag": 12}


def test_the_flight_plan_flies_every_scene_within_the_scene_cache() -> None:
    from navi_actor.bc.frontier_recording import flight_plan

    assert flight_plan(3, 2, 8) == [[0, 1], [2, 0]]
    assert flight_plan(1, 4, 8) == [[0, 0, 0, 0]]  # fewer scenes than drones: they share it
    assert flight_plan(5, 4, 2) == [[0, 1, 0, 1], [2, 3, 2, 3], [4, 0, 4, 0]]  # 2 scenes at once
    plan = flight_plan(40, 4, 8)
    assert len(plan) == 10 and sorted(scene for turn in plan for scene in turn) == list(range(40))
