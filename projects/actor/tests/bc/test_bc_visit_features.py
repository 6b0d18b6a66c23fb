"""Cloning a policy that reads its visit memory: each frame gets the features of its recorded pose."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from navi_actor.bc import BCConfig
from navi_actor.bc.dataset import DemoData, DemonstrationError, load_demonstrations
from navi_actor.bc.trainer import BCHistory, train_bc
from navi_actor.bc.visit_features import demo_visit_features
from navi_actor.memory import VisitMemoryConfig
from navi_actor.memory.frontiers import new_visit_reader
from navi_actor.models import NaviPolicy, PolicyConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")

EAGER = VisitMemoryConfig(source="positions", write_every=1, exclusion_window=0)
FRONTIERS = VisitMemoryConfig(source="frontiers")


def posed_demo(path: Path, frames: int, episode_every: int, *, poses: bool = True, seed: int = 0) -> Path:
    """A demonstration whose drone walks along x at 0.5 m per frame, turning as it goes."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {
        "observations": rng.random((frames, 3, 16, 8), dtype=np.float32),
        "actions": rng.uniform(-1, 1, (frames, 4)).astype(np.float32),
        "episode_starts": np.arange(frames) % episode_every == 0,
        "segment_scenes": np.array(["room"]),
        "metadata": np.array(json.dumps({"schema_version": 1, "matrix_shape": [16, 8], "pilot": "test"})),
    }
    if poses:
        step = np.arange(frames) % episode_every
        arrays["positions"] = np.stack([0.5 * step, np.zeros(frames), np.zeros(frames)], 1).astype(np.float32)
        arrays["yaw"] = (0.3 * step).astype(np.float32)
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path


@pytest.mark.parametrize("cfg", [EAGER, FRONTIERS], ids=["positions", "frontiers"])
def test_frames_get_the_features_of_their_episode_replayed_from_its_first_pose(
    tmp_path: Path, cfg: VisitMemoryConfig
) -> None:
    data = load_demonstrations([posed_demo(tmp_path / "a.npz", 20, 7), posed_demo(tmp_path / "b.npz", 9, 9)])
    assert data.positions is not None and data.yaws is not None
    features = demo_visit_features(data, cfg)
    for start, end in data.episode_bounds.tolist():  # the reference: one memory per episode, in order
        memory = new_visit_reader(cfg, 1, 16, 8)
        for frame in range(start, end):
            expected = memory.observe(
                data.positions[frame : frame + 1],
                data.yaws[frame : frame + 1],
                torch.tensor([frame == start]),
                data.observations[frame : frame + 1].float(),  # the frontier map reads the rays
            )
            torch.testing.assert_close(features[frame], expected[0])
    assert float(features.max()) > 0.0
    if cfg.source == "positions":  # nothing remembered yet at a start; a map has the first view
        assert float(features[data.episode_starts].abs().max()) == 0.0
    picked = data.select_episodes(torch.tensor([2, 0]))
    assert picked.positions is not None and torch.equal(picked.positions[:2], data.positions[14:16])


def test_demonstrations_without_poses_are_refused_for_a_visit_reading_policy(tmp_path: Path) -> None:
    data = load_demonstrations(
        [posed_demo(tmp_path / "a.npz", 10, 5), posed_demo(tmp_path / "b.npz", 10, 5, poses=False)]
    )
    assert data.positions is None  # one file without poses: the data has none
    with pytest.raises(DemonstrationError, match="visit_input, visit_prediction"):
        demo_visit_features(data, EAGER)


def small_policy(**visits: bool) -> NaviPolicy:
    """A tiny GRU policy with the eager visit memory and the given visit settings (no input unless
    ``visit_input=True``)."""
    torch.manual_seed(0)
    sizes = {"azimuth": 16, "elevation": 8, "embed_dim": 32, "vit_dim": 32, "vit_layers": 1}
    settings = {"visit_input": False, **visits}
    return NaviPolicy(PolicyConfig(temporal_core="gru", visits=EAGER, **sizes, **settings))  # type: ignore[arg-type]


def cloned(policy: NaviPolicy, data: DemoData, epochs: int) -> BCHistory:
    bc = BCConfig(epochs=epochs, sequence_length=8, streams=2, learning_rate=1e-2)
    holdout = data.select_episodes(torch.tensor([0]))
    return train_bc(policy, data, holdout, bc, torch.Generator().manual_seed(0))


def test_cloning_trains_the_visit_projection_from_the_recorded_poses(tmp_path: Path) -> None:
    data: DemoData = load_demonstrations([posed_demo(tmp_path / "a.npz", 64, 16)])
    policy = small_policy(visit_input=True)
    history = cloned(policy, data, epochs=3)
    assert policy.visit_projection is not None
    assert float(policy.visit_projection.weight.detach().abs().max()) > 0.0  # it read non-zero features
    assert np.isfinite(history.holdout_mse[-1])


def test_cloning_trains_the_visit_head_towards_the_recorded_poses_features(tmp_path: Path) -> None:
    data: DemoData = load_demonstrations([posed_demo(tmp_path / "a.npz", 64, 16)])
    history = cloned(small_policy(visit_prediction=True), data, epochs=6)
    assert len(history.train_visit_bce) == 6
    assert history.train_visit_bce[-1] < 0.8 * history.train_visit_bce[0]  # it learns the episode's map
    assert cloned(small_policy(), data, epochs=1).train_visit_bce == []  # no head, nothing reported


def test_cloning_replays_the_training_and_held_out_episodes_once_whatever_the_epochs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay is as long as the longest episode: redoing the held-out one every epoch cost the
    default warm start's clone 1.4 s an epoch (16,400 frames, 500-step episodes), about 7 %."""
    from navi_actor.bc import trainer

    data: DemoData = load_demonstrations([posed_demo(tmp_path / "a.npz", 64, 16)])
    replays: list[int] = []

    def counted(demo: DemoData, cfg: VisitMemoryConfig) -> torch.Tensor:
        replays.append(len(demo))
        return demo_visit_features(demo, cfg)

    monkeypatch.setattr(trainer, "demo_visit_features", counted)
    policy = small_policy(visit_input=True)
    history = cloned(policy, data, epochs=4)
    assert replays == [64, 16]  # the training frames, then the held-out episode, once each
    holdout = data.select_episodes(torch.tensor([0]))
    assert history.kept_holdout_mse == trainer.sequence_mse(policy, holdout, 2, 8)  # the same as afresh


@pytest.mark.parametrize(("cell_m", "warned"), [(0.25, True), (2.0, False)])
def test_cloning_a_frontier_map_finer_than_the_gap_between_rays_is_warned_about(
    tmp_path: Path, cell_m: float, warned: bool
) -> None:
    """As training does: 16 azimuth rays lie 1.18 m apart at the map's 3 m sight."""
    from navi_actor.bc.pretrain import run_pretrain

    folder = tmp_path / "demos"
    folder.mkdir()
    posed_demo(folder / "a.npz", 48, 16)
    posed_demo(folder / "b.npz", 16, 16, seed=1)
    sizes = {"azimuth": 16, "elevation": 8, "embed_dim": 32, "vit_dim": 32, "vit_layers": 1}
    visits = VisitMemoryConfig(source="frontiers", frontier_cell_m=cell_m)
    policy_config = PolicyConfig(temporal_core="gru", visit_input=True, visits=visits, **sizes)  # type: ignore[arg-type]
    bc = BCConfig(epochs=1, sequence_length=8, streams=2)
    result = run_pretrain(bc, policy_config, demonstrations=folder, runs_root=tmp_path / "runs")
    lines = (result.checkpoint.parent.parent / "logs" / "events.jsonl").read_text().splitlines()
    found = [json.loads(line) for line in lines if "frontier_map_finer_than_rays" in line]
    if warned:
        assert [event["event"] for event in found] == ["actor.bc.frontier_map_finer_than_rays"]
        assert (
            found[0]["ray_gap_m"] == pytest.approx(1.178, abs=1e-3) and found[0]["frontier_cell_m"] == cell_m
        )
    else:
        assert not found
