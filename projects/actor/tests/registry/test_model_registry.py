"""Model registry: promote, latest, best, file layout and refusal of bad checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from navi_actor.checkpoints import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.registry import ModelRegistry, RegistryError

SMALL = PolicyConfig(visit_input=False, temporal_core="gru", azimuth=16, elevation=8)


def write(tmp_path: Path, name: str, step_id: int, reward_ema: float | None) -> Path:
    policy = NaviPolicy(SMALL)
    checkpoint = Checkpoint(
        model=policy.state_dict(), policy_config=SMALL, step_id=step_id, reward_ema=reward_ema
    )
    return save_checkpoint(checkpoint, tmp_path / name)


def test_promote_latest_and_best(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "models")
    assert registry.latest() is None and registry.best() is None and registry.entries() == []
    first = registry.promote(write(tmp_path, "a.pt", 10, 2.0), notes="first", tags=["smoke"])
    second = registry.promote(write(tmp_path, "b.pt", 20, 5.0))
    third = registry.promote(write(tmp_path, "c.pt", 30, 1.0))
    assert [e.version for e in registry.entries()] == [1, 2, 3]
    assert first.file == "v001.pt" and first.notes == "first" and first.tags == ["smoke"]
    assert registry.latest() == third
    assert registry.best() == second
    assert load_checkpoint(registry.latest_path).step_id == 30
    assert load_checkpoint(registry.path_of(second)).step_id == 20
    on_disk = json.loads((tmp_path / "models" / "registry.json").read_text())
    assert on_disk["schema_version"] == 1 and len(on_disk["models"]) == 3
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [
        ".registry.lock",
        "latest.pt",
        "registry.json",
        "v001.pt",
        "v002.pt",
        "v003.pt",
    ]


def test_entries_without_reward_are_never_best(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "models")
    registry.promote(write(tmp_path, "bc.pt", 0, None))
    assert registry.best() is None
    scored = registry.promote(write(tmp_path, "rl.pt", 5, -3.0))
    assert registry.best() == scored


def test_refuses_unreadable_checkpoints(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "models")
    torch.save({"weights": torch.zeros(1)}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError):
        registry.promote(tmp_path / "foreign.pt")
    assert registry.entries() == []


def test_malformed_index_is_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "registry.json").write_text("{not json")
    with pytest.raises(RegistryError, match="malformed") as refused:
        ModelRegistry(folder).entries()
    assert "\n" not in str(refused.value)  # one line, printable by a command as is
    assert isinstance(refused.value, ValueError)  # callers refusing bad settings refuse it too


def test_a_folder_that_cannot_be_written_is_a_registry_error(tmp_path: Path) -> None:
    checkpoint = write(tmp_path, "a.pt", 1, 1.0)
    (tmp_path / "models").write_text("a file where the folder should be")
    with pytest.raises(RegistryError, match="cannot write the model registry"):
        ModelRegistry(tmp_path / "models").promote(checkpoint)


def test_concurrent_promotions_get_distinct_versions(tmp_path: Path) -> None:
    import threading

    paths = [write(tmp_path, f"c{i}.pt", i, float(i)) for i in range(4)]
    registry = ModelRegistry(tmp_path / "models")
    threads = [threading.Thread(target=registry.promote, args=(path,)) for path in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(entry.version for entry in registry.entries()) == [1, 2, 3, 4]
    assert sorted(entry.step_id for entry in registry.entries()) == [0, 1, 2, 3]
