"""DAgger under delay: the brain's actions fly, the frontier planner's actions are recorded."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch


@dataclass
class _Acted:
    action: torch.Tensor
    action_chunk: torch.Tensor
    state: torch.Tensor


class _SlowForward:
    """A chunked policy that always plans a slow forward flight."""

    def initial_state(self, drones: int) -> torch.Tensor:
        return torch.zeros(drones, 0)

    def act(self, obs: torch.Tensor, state: torch.Tensor, start: torch.Tensor, deterministic: bool) -> _Acted:
        chunk = torch.zeros(obs.shape[0], 4, 4)
        chunk[..., 0] = 0.25
        return _Acted(chunk[:, 0], chunk, state)

    def physics_action(self, action: torch.Tensor) -> torch.Tensor:
        return action


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag

    path = tmp_path_factory.mktemp("scene") / "hall.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=0", CompileSettings(), resolution=32).asset, path)
    return path


def test_the_policy_flies_and_the_planner_labels_every_frame_until_the_episode_ends(
    tmp_path: Path, scene: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from navi_actor.bc.dataset import load_demonstrations
    from navi_actor.bc.delayed_corrections import record_delayed_corrections
    from navi_actor.evaluation.baselines import FrontierPolicy
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings

    settings = EnvironmentSettings(
        sensor={"azimuth_bins": 32, "elevation_bins": 8}, episode={"max_steps": 6, "episodes_per_scene": 1}
    )
    backend = SdfDagBackend(settings, 2, scene_paths=[scene])
    labels: list[torch.Tensor] = []
    executed: list[torch.Tensor] = []
    planner_act, step = FrontierPolicy.act, backend.step

    def planner_spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        acted = planner_act(self, *args, **kwargs)
        labels.append(acted.action.clone())
        return acted

    def step_spy(actions: torch.Tensor) -> Any:
        executed.append(actions.clone())
        return step(actions)

    monkeypatch.setattr(FrontierPolicy, "act", planner_spy)
    monkeypatch.setattr(backend, "step", step_spy)
    out = tmp_path / "delayed"
    recorded = record_delayed_corrections(
        _SlowForward(), backend, out, rounds=2, ticks=10, delays=(3, 4), seed=7
    )
    # episodes of 6 steps end each drone's flight: 2 rounds x 2 drones x 6 frames
    assert len(recorded.files) == 4 and recorded.steps == 24 and recorded.drone_ticks == 24
    assert len(executed) == 12  # the rounds stop once every drone's episode has ended
    assert all(torch.equal(action[:, 0], torch.full((2,), 0.25)) for action in executed)  # the policy flew
    for turn, delay in ((0, 3), (1, 4)):
        for drone in range(2):
            with np.load(out / f"delayed-r{turn:04d}-d{drone}-hall.npz") as demo:
                meta = json.loads(str(demo["metadata"]))
                assert meta["labels"] == "frontier_on_delayed_flight" and meta["delay_ticks"] == delay
                assert meta["placed_starts"] is True
                expected = torch.stack(labels[turn * 6 : turn * 6 + 6])[:, drone].clamp(-1, 1)
                assert np.allclose(demo["actions"], expected.numpy())  # the planner's, not the policy's
                assert demo["episode_starts"].tolist() == [True] + [False] * 5
                assert demo["truncated"].tolist() == [False] * 5 + [True]
    assert not np.allclose(np.concatenate([np.load(path)["actions"] for path in recorded.files])[:, 0], 0.25)
    data = load_demonstrations(sorted(out.glob("*.npz")))  # behaviour cloning reads them
    assert len(data) == 24 and data.episode_bounds.shape[0] == 4


def test_nothing_to_fly_is_refused(tmp_path: Path) -> None:
    from navi_actor.bc.delayed_corrections import record_delayed_corrections

    with pytest.raises(ValueError, match="at least one delay"):
        record_delayed_corrections(_SlowForward(), object(), tmp_path, rounds=1, ticks=5, delays=(), seed=0)


def test_a_folder_that_holds_demonstrations_is_refused(tmp_path: Path) -> None:
    from navi_actor.bc.delayed_corrections import record_delayed_corrections

    (tmp_path / "earlier.npz").write_bytes(b"")
    with pytest.raises(FileExistsError, match="already holds demonstrations"):
        record_delayed_corrections(_SlowForward(), object(), tmp_path, rounds=1, ticks=5, delays=(3,), seed=0)
    assert (tmp_path / "earlier.npz").exists()
