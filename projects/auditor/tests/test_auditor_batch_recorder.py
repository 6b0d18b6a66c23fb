"""record_pilot_batch: any batched pilot into the demonstration format, on a multi-scene backend.

What matters for behaviour cloning from these files: the label is the action the environment
executed (the pilot's, NaN -> 0, clipped to [-1, 1]), and each frame's segment names the scene the
drone was really in when a multi-scene backend moved it to the next scene at an episode end.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch

from navi_auditor.demos import load_demonstration
from navi_auditor.demos.batch_recorder import record_pilot_batch
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.scene import RuntimeScene

STEPS = 24


def test_labels_are_the_executed_actions_and_segments_follow_the_scenes(
    small_env_settings: EnvironmentSettings, room: RuntimeScene, tmp_path: Path
) -> None:
    settings = small_env_settings.model_copy(
        update={
            "episode": small_env_settings.episode.model_copy(update={"max_steps": 5, "episodes_per_scene": 1})
        }
    )
    other = dataclasses.replace(room, name=f"{room.name}-b")
    backend = SdfDagBackend(settings, 2, scenes=[room, other])
    scenes_seen: list[list[int]] = []
    asked: list[torch.Tensor] = []

    def pilot(
        obs: torch.Tensor, starts: torch.Tensor, position: torch.Tensor, yaw: torch.Tensor
    ) -> torch.Tensor:
        assert obs.shape[0] == starts.shape[0] == position.shape[0] == yaw.shape[0] == 2
        scenes_seen.append(backend.scene_index.tolist())
        action = torch.tensor([[2.0, float("nan"), -3.0, 0.25], [0.5, -0.5, 0.0, -1.5]])
        asked.append(action)
        return action

    files = record_pilot_batch(backend, pilot, pilot_name="test", steps=STEPS, out_dir=tmp_path, stem="two")
    assert [p.name for p in files] == ["two-s0-d0.npz", "two-s0-d1.npz"]
    expected = np.array([[1.0, 0.0, -1.0, 0.25], [0.5, -0.5, 0.0, -1.0]], dtype=np.float32)
    for drone, path in enumerate(files):
        demo = load_demonstration(path)
        assert demo.metadata["pilot"] == "test" and demo.metadata["batch_drones"] == 2
        np.testing.assert_array_equal(demo.actions, np.repeat(expected[drone : drone + 1], STEPS, axis=0))
        flown = [backend.scenes.corpus[row[drone]].name for row in scenes_seen]
        recorded = [str(demo.segment_scenes[i]) for i in demo.frames["segment_ids"]]
        assert recorded == flown
        assert len(set(flown)) == 2  # the drone did change scenes (episodes of 5 steps, one per scene)
        assert demo.episode_starts.sum() >= STEPS // 5
