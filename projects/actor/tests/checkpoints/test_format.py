"""Checkpoint v3: round trip, safe loading, wrong versions, atomicity under a crash, retention."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from navi_actor.checkpoints import (
    Checkpoint,
    CheckpointError,
    checkpoint_path,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from navi_actor.models import NaviPolicy, PolicyConfig

SMALL = PolicyConfig(visit_input=False, temporal_core="gru", azimuth=16, elevation=8)


def make_checkpoint(step_id: int = 123) -> Checkpoint:
    policy = NaviPolicy(SMALL)
    optimizer = torch.optim.Adam(policy.parameters())
    loss = sum(p.sum() for p in policy.parameters())
    loss.backward()
    optimizer.step()
    return Checkpoint(
        model=policy.state_dict(),
        policy_config=SMALL,
        step_id=step_id,
        episode_count=7,
        update_index=3,
        reward_ema=1.25,
        wall_time_hours=0.5,
        parent_checkpoint="/somewhere/parent.pt",
        training_source="bc",
        corpus_summary={"scenes": 2, "names": ["a", "b"]},
        settings_json='{"seed": 1}',
        optimizer=optimizer.state_dict(),
        rng={"torch": torch.get_rng_state()},
    )


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    original = make_checkpoint()
    path = save_checkpoint(original, tmp_path / "ckpt.pt")
    loaded = load_checkpoint(path)
    for name in (
        "step_id",
        "episode_count",
        "update_index",
        "reward_ema",
        "wall_time_hours",
        "parent_checkpoint",
        "training_source",
        "corpus_summary",
        "settings_json",
        "created_at",
    ):
        assert getattr(loaded, name) == getattr(original, name), name
    assert loaded.policy_config == SMALL
    assert loaded.temporal_core == "gru" and loaded.encoder_backend == "rayvit"
    for key, tensor in original.model.items():
        assert torch.equal(loaded.model[key], tensor)
    assert torch.equal(loaded.rng["torch"], original.rng["torch"])
    policy = NaviPolicy(loaded.policy_config)
    policy.load_state_dict(loaded.model)
    optimizer = torch.optim.Adam(policy.parameters())
    optimizer.load_state_dict(loaded.optimizer)
    assert optimizer.state_dict()["state"][0]["step"].item() == 1


def test_load_refuses_pickled_objects(tmp_path: Path) -> None:
    path = tmp_path / "evil.pt"
    payload = make_checkpoint().to_payload()
    payload["surprise"] = Path("/etc")  # an arbitrary object: weights_only must refuse it
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match="cannot be read safely") as refused:
        load_checkpoint(path)
    assert "pathlib.PosixPath" in str(refused.value) and "\n" not in str(refused.value)  # one line


@pytest.mark.parametrize("content", [b"# not a checkpoint\n", b"PK\x03\x04 cut short"])
def test_a_file_that_is_not_a_checkpoint_is_refused_in_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="cannot be read safely") as refused:
        load_checkpoint(path)
    assert "\n" not in str(refused.value) and "weights_only" not in str(refused.value)


def test_other_versions_fail_fast_with_a_clear_message(tmp_path: Path) -> None:
    payload = make_checkpoint().to_payload()
    payload["version"] = 2
    torch.save(payload, tmp_path / "old.pt")
    with pytest.raises(CheckpointError, match=r"format version 2; this navi-actor reads only version 3"):
        load_checkpoint(tmp_path / "old.pt")
    torch.save({"weights": torch.zeros(1)}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not a Navi actor checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")


def test_crash_during_replace_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ckpt.pt"
    save_checkpoint(make_checkpoint(step_id=1), path)
    before = path.read_bytes()

    def crash(*_args: object) -> None:
        raise OSError("simulated power cut")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="power cut"):
        save_checkpoint(make_checkpoint(step_id=2), path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert load_checkpoint(path).step_id == 1
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]  # no temporary left behind


def test_retention_keeps_the_newest(tmp_path: Path) -> None:
    for step in (5, 100, 20, 7000):
        checkpoint_path(tmp_path, step).write_bytes(b"x")
    deleted = prune_checkpoints(tmp_path, keep=2)
    assert sorted(p.name for p in deleted) == ["step_000000000005.pt", "step_000000000020.pt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_000000000100.pt", "step_000000007000.pt"]


def test_the_action_squash_travels_and_old_checkpoints_read_as_clip(tmp_path: Path) -> None:
    tanh = SMALL.model_copy(update={"action_squash": "tanh"})
    checkpoint = make_checkpoint()
    checkpoint.policy_config = tanh
    saved = save_checkpoint(checkpoint, tmp_path / "tanh.pt")
    assert load_checkpoint(saved).policy_config.action_squash == "tanh"
    payload = checkpoint.to_payload()
    payload["policy_config"] = SMALL.model_dump_json(exclude={"action_squash"})  # written before the field
    torch.save(payload, tmp_path / "old.pt")
    assert load_checkpoint(tmp_path / "old.pt").policy_config.action_squash == "clip"


def test_the_vit_readout_travels_and_old_checkpoints_read_as_cls(tmp_path: Path) -> None:
    """A sector-readout policy reloads into the same function; a file written before the field had a
    [CLS] token (its weights would not fit a sector readout's projection)."""
    sectors = SMALL.model_copy(update={"vit_readout": "sectors"})
    policy = NaviPolicy(sectors)
    checkpoint = make_checkpoint()
    checkpoint.policy_config, checkpoint.model = sectors, policy.state_dict()
    loaded = load_checkpoint(save_checkpoint(checkpoint, tmp_path / "sectors.pt"))
    assert loaded.policy_config.vit_readout == "sectors"
    rebuilt = NaviPolicy(loaded.policy_config)
    rebuilt.load_state_dict(loaded.model)
    obs = torch.rand(2, 3, 16, 8)
    torch.testing.assert_close(rebuilt.encode(obs), policy.encode(obs))
    payload = make_checkpoint().to_payload()
    payload["policy_config"] = SMALL.model_dump_json(exclude={"vit_readout"})  # written before the field
    torch.save(payload, tmp_path / "old.pt")
    assert load_checkpoint(tmp_path / "old.pt").policy_config.vit_readout == "cls"


def test_checkpoints_written_before_the_visit_defaults_read_as_they_were_trained(tmp_path: Path) -> None:
    """The default policy reads the frontier map by path (2026-12-02); a file written before
    ``visit_input`` read no visit memory, before ``visits.source`` past positions, and before
    ``visits.frontier_distance`` a frontier map by straight line, before ``visits.frontier_reading``
    each sector's distance alone. A current file keeps its values."""
    frontier = SMALL.model_copy(update={"visit_input": True})
    payload = make_checkpoint().to_payload()
    payload["policy_config"] = frontier.model_dump_json(exclude={"visit_input"})
    torch.save(payload, tmp_path / "no_input.pt")
    assert load_checkpoint(tmp_path / "no_input.pt").policy_config.visit_input is False
    payload["policy_config"] = frontier.model_dump_json(exclude={"visits": {"source", "frontier_distance"}})
    torch.save(payload, tmp_path / "positions.pt")
    assert load_checkpoint(tmp_path / "positions.pt").policy_config.visits.source == "positions"
    payload["policy_config"] = frontier.model_dump_json(exclude={"visits": {"frontier_distance"}})
    torch.save(payload, tmp_path / "straight.pt")
    old = load_checkpoint(tmp_path / "straight.pt").policy_config
    assert (old.visit_input, old.visits.source) == (True, "frontiers")
    assert old.visits.frontier_distance == "straight"
    path_visits = frontier.visits.model_copy(update={"frontier_distance": "path"})
    by_path = frontier.model_copy(update={"visits": path_visits})
    payload["policy_config"] = by_path.model_dump_json()
    torch.save(payload, tmp_path / "path.pt")
    assert load_checkpoint(tmp_path / "path.pt").policy_config.visits.frontier_distance == "path"
    payload["policy_config"] = by_path.model_dump_json(exclude={"visits": {"frontier_reading"}})
    torch.save(payload, tmp_path / "absolute.pt")
    assert load_checkpoint(tmp_path / "absolute.pt").policy_config.visits.frontier_reading == "absolute"
    relative_visits = path_visits.model_copy(update={"frontier_reading": "relative"})
    relative = by_path.model_copy(update={"visits": relative_visits})
    payload["policy_config"] = relative.model_dump_json()
    torch.save(payload, tmp_path / "relative.pt")
    assert load_checkpoint(tmp_path / "relative.pt").policy_config.visits.frontier_reading == "relative"
    defaults = PolicyConfig()
    assert defaults.visit_input and defaults.visits.source == "frontiers"
    assert defaults.visits.frontier_distance == "path"
