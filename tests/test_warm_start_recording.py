"""The warm start's recorder (navi-actor) writes files the auditor's demonstration reader accepts.

Two writers of one schema exist because navi-actor may not import the auditor; this test keeps the
actor's files valid under the auditor's own validation (``load_demonstration``), and checks what the
recorder promises: every scene gets its share, and a drone whose episode ends starts again in the
same scene.
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
    for seed in (0, 1):
        asset = compile_source(f"procedural:hall:seed={seed}", CompileSettings(), resolution=32).asset
        write_gmdag(asset, folder / f"hall_{seed:03d}.gmdag")
        paths.append(folder / f"hall_{seed:03d}.gmdag")
    return paths


def test_every_scene_gets_its_share_in_files_the_auditor_validates(
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
    assert recording.steps == 48 and recording.steps_per_scene == 12
    assert recording.scenes == [str(path) for path in scenes] and len(recording.files) == 4
    flown: dict[str, int] = {}
    for path in recording.files:
        demo = load_demonstration(path)  # the auditor's schema validation
        (scene,) = demo.segment_scenes.tolist()
        flown[scene] = flown.get(scene, 0) + len(demo)
        assert demo.metadata["pilot"] == "frontier" and demo.metadata["placed_starts"] is True
        starts = demo.episode_starts
        assert starts.sum() == 3 and starts[[0, 5, 10]].all()  # restarted, in the same file and scene
        assert (demo.frames["episode_ids"] == np.cumsum(starts) - 1).all()
        assert (demo.frames["segment_ids"] == 0).all()
    assert flown == {str(path): 24 for path in scenes}
    assert flying_in == [[0, 0]] * 12 + [[1, 1]] * 12
