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


def _scenes_flown(env: Any, monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """A list that fills with every step's scene per drone as ``env`` is stepped."""
    flying_in: list[list[int]] = []
    step = env.step

    def spy(actions: torch.Tensor) -> Any:
        flying_in.append(env.scene_index.tolist())
        return step(actions)

    monkeypatch.setattr(env, "step", spy)
    return flying_in


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
    flying_in = _scenes_flown(env, monkeypatch)  # each step's scene per drone, restarts included
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


def test_a_weighted_family_is_flown_as_often_as_training_flies_it(
    tmp_path: Path, scenes: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from navi_actor.bc.frontier_recording import record_frontier
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    settings = EnvironmentSettings(
        sensor={"azimuth_bins": 32, "elevation_bins": 8},
        episode={"max_steps": 5, "episodes_per_scene": 1, "family_weights": {"hall": 2}},
    )
    env = SdfDagBackend(settings, 2, scene_paths=scenes)
    assert env.rotation.tolist() == [0, 1, 2, 0, 1, 2]
    flying_in = _scenes_flown(env, monkeypatch)
    recording = record_frontier(env, 72, tmp_path, seed=3)
    # the rotation's 6 turns, 2 drones: 3 rounds, every hall flown twice
    assert flying_in == [[0, 1]] * 12 + [[2, 0]] * 12 + [[1, 2]] * 12
    assert recording.rounds == 3 and len(recording.files) == 6
    assert sorted(path.name.split("-")[-1] for path in recording.files) == [
        "hall_000.npz", "hall_000.npz", "hall_001.npz", "hall_001.npz", "hall_002.npz", "hall_002.npz",
    ]  # fmt: skip


def test_the_flight_plan_flies_every_scene_within_the_scene_cache() -> None:
    from navi_actor.bc.frontier_recording import flight_plan

    assert flight_plan(3, 2, 8) == [[0, 1], [2, 0]]
    assert flight_plan(1, 4, 8) == [[0, 0, 0, 0]]  # fewer scenes than drones: they share it
    assert flight_plan(5, 4, 2) == [[0, 1, 0, 1], [2, 3, 2, 3], [4, 0, 4, 0]]  # 2 scenes at once
    plan = flight_plan(40, 4, 8)
    assert len(plan) == 10 and sorted(scene for turn in plan for scene in turn) == list(range(40))


class _ConstantPilot:
    """A pilot that always asks for the same raw action; it counts the episode starts it was told of."""

    def __init__(self, action: list[float]) -> None:
        self.raw = torch.tensor(action)
        self.starts: list[list[bool]] = []

    def initial_state(self, batch_size: int, device: Any = None) -> torch.Tensor:
        return torch.zeros(batch_size, 1)

    def act(self, obs: torch.Tensor, state: torch.Tensor, starts: torch.Tensor, deterministic: bool) -> Any:
        assert deterministic  # DAgger flies the mean action, as the policy is deployed
        self.starts.append(starts.tolist())
        return type("Acted", (), {"action": self.raw.expand(obs.shape[0], 4) * 3.0, "state": state + 1})()

    def physics_action(self, raw: torch.Tensor) -> torch.Tensor:
        return raw.clamp(-1.0, 1.0)


def test_a_pilot_flies_while_the_planner_labels_every_step(
    tmp_path: Path, scenes: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """DAgger's correction flights: the simulator executes the pilot's action (in [-1, 1]), the files
    hold the planner's action at the pilot's states, under the round's own file names."""
    from navi_actor.bc.frontier_recording import record_frontier
    from navi_auditor.demos import load_demonstration
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    settings = EnvironmentSettings(
        sensor={"azimuth_bins": 32, "elevation_bins": 8}, episode={"max_steps": 5, "episodes_per_scene": 1}
    )
    env = SdfDagBackend(settings, 2, scene_paths=scenes[:2])
    executed: list[torch.Tensor] = []
    step = env.step

    def spy(actions: torch.Tensor) -> Any:
        executed.append(actions.clone())
        return step(actions)

    monkeypatch.setattr(env, "step", spy)
    pilot = _ConstantPilot([0.1, 0.0, 0.0, 0.2])
    recording = record_frontier(env, 24, tmp_path, seed=3, pilot=pilot, prefix="dagger1")
    assert len(executed) == 12 and all(
        torch.equal(action, torch.tensor([[0.3, 0.0, 0.0, 0.6]] * 2)) for action in executed
    )
    # its episodes restart every 5 steps: the pilot is told, so its recurrent state starts afresh
    assert [row[0] for row in pilot.starts] == [True, False, False, False, False] * 2 + [True, False]
    labels = []
    for path in recording.files:
        assert path.name.startswith("dagger1-r0000-")
        demo = load_demonstration(path)
        assert demo.metadata["labels"] == "frontier_on_pilot_flight"
        labels.append(demo.frames["actions"])
    labels_flat = np.concatenate(labels)
    assert labels_flat.shape == (24, 4) and np.abs(labels_flat).max() <= 1.0
    assert not np.allclose(labels_flat, [0.3, 0.0, 0.0, 0.6])  # the planner's own choice, not the pilot's


def test_a_warm_start_with_a_dagger_round_clones_on_the_clones_labelled_flights(
    tmp_path: Path, scenes: list[Path]
) -> None:
    """``warm_start.dagger_rounds``: the clone flies, the planner labels, cloning continues from the
    clone on both flights; PPO starts from the last clone."""
    from navi_actor.bc.warm_start import run_warm_start
    from navi_actor.checkpoints import load_checkpoint
    from navi_actor.config import ActorSettings
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    settings = ActorSettings(
        warm_start={"steps": 48, "epochs": 1, "dagger_rounds": 1, "dagger_steps": 24, "dagger_epochs": 1},
        bc={"streams": 2, "sequence_length": 4, "holdout_fraction": 0.0},
        encoder_backend="spherical_cnn",
        temporal_core="gru",
    )
    sensor = EnvironmentSettings(sensor={"azimuth_bins": 32, "elevation_bins": 8}, episode={"max_steps": 6})
    env = SdfDagBackend(sensor, 2, scene_paths=scenes)
    said: list[str] = []
    result = run_warm_start(settings, env, tmp_path / "warm", seed=1, note=said.append)
    folder = tmp_path / "warm" / "demonstrations"
    assert len(list(folder.glob("frontier-*.npz"))) == 4 and len(list(folder.glob("dagger1-*.npz"))) == 4
    (round_one,) = result.facts["dagger"]
    assert round_one["steps"] == 24 and round_one["bc_frames"] == 48 + 24
    assert result.checkpoint == tmp_path / "warm" / "clone-dagger1.pt"
    loaded = load_checkpoint(result.checkpoint)
    assert loaded.parent_checkpoint == str((tmp_path / "warm" / "clone.pt").resolve())
    assert result.facts["bc_frames"] == 48  # the top-level cloning facts are the first cloning's
    assert any("DAgger round 1/1" in line for line in said)
    assert "and 1 DAgger round in" in said[-1] and str(result.checkpoint) in said[-1]
