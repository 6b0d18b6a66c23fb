"""One behaviour-cloning run: demonstrations -> trained policy -> v3 checkpoint with lineage."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import torch

from navi_actor.bc.config import BCConfig
from navi_actor.bc.dataset import (
    DemonstrationError,
    find_demonstration_files,
    load_demonstrations,
    split_episodes,
)
from navi_actor.bc.trainer import BCHistory, train_bc
from navi_actor.checkpoints import (
    Checkpoint,
    CheckpointError,
    checkpoint_path,
    load_checkpoint,
    save_checkpoint,
)
from navi_actor.memory.frontiers import map_finer_than_rays
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.runners.run_folder import RunFolder, new_run_id

log = structlog.get_logger()


@dataclass(frozen=True)
class PretrainResult:
    """Where the BC checkpoint went and how imitation went."""

    checkpoint: Path
    history: BCHistory
    frames: int
    holdout_frames: int


def _start_policy(
    policy_config: PolicyConfig, parent: Path | None, observation_shape: tuple[int, int, int], device: str
) -> tuple[NaviPolicy, Checkpoint | None]:
    """A fresh policy for the demonstrations' sensor, or the parent checkpoint's weights."""
    if parent is None:
        config = policy_config.model_copy(
            update={"azimuth": observation_shape[1], "elevation": observation_shape[2]}
        )
        return NaviPolicy(PolicyConfig.model_validate(config.model_dump())).to(device), None
    loaded = load_checkpoint(parent, map_location=device)
    stored = (loaded.policy_config.in_channels, loaded.policy_config.azimuth, loaded.policy_config.elevation)
    if stored != observation_shape:
        raise CheckpointError(
            f"{parent} expects observations {stored}, the demonstrations hold {observation_shape}"
        )
    policy = NaviPolicy(loaded.policy_config).to(device)
    policy.load_state_dict(loaded.model)
    return policy, loaded


def run_pretrain(
    config: BCConfig,
    policy_config: PolicyConfig,
    *,
    demonstrations: Path,
    runs_root: Path,
    parent: Path | None = None,
    out: Path | None = None,
    device: str = "cpu",
    seed: int = 0,
    settings_json: dict[str, Any] | None = None,
    on_epoch: Callable[[int, int, float], None] | None = None,
) -> PretrainResult:
    """Train a policy by behaviour cloning and write a v3 checkpoint (training_source="bc").

    Args:
        config: BC settings.
        policy_config: architecture of a fresh policy (ignored when ``parent`` is given).
        demonstrations: folder of ``.npz`` demonstrations.
        runs_root: ``artifacts/runs``; the run folder holds manifest, metrics and the checkpoint.
        parent: start from this checkpoint (recorded as ``parent_checkpoint``).
        out: checkpoint path (default: ``<run>/checkpoints/step_<parent step>.pt``).
        device: torch device.
        seed: torch seed (initial weights, episode shuffles, held-out split).
        settings_json: resolved settings to store in the checkpoint and manifest.
        on_epoch: progress after every epoch (:func:`~navi_actor.bc.trainer.train_bc`).

    Returns:
        :class:`PretrainResult`.

    Raises:
        DemonstrationError: no usable demonstrations.
        CheckpointError: unreadable or incompatible parent.
    """
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    files = find_demonstration_files(demonstrations)
    data = load_demonstrations(files)
    train, holdout = split_episodes(data, config.holdout_fraction, generator)
    sources, frames, observation_shape = data.sources, len(data), data.observation_shape
    del data  # the split holds every frame again: keep one copy while cloning
    if len(train) < config.streams:
        raise DemonstrationError(f"{len(train)} training frames are fewer than --streams {config.streams}")
    policy, loaded = _start_policy(policy_config, parent, observation_shape, device)
    run = RunFolder(runs_root, new_run_id("bc"))
    settings = {"bc": json.loads(config.model_dump_json()), **(settings_json or {})}
    run.write_manifest(
        settings, {"demonstrations": sources, "parent_checkpoint": str(parent) if parent else None}
    )
    with run.capturing_logs():
        log.info(
            "actor.bc.started",
            frames=len(train),
            holdout_frames=len(holdout),
            files=len(files),
            run=run.run_id,
        )
        warning = map_finer_than_rays(policy.cfg)
        if warning is not None:
            log.warning("actor.bc.frontier_map_finer_than_rays", **warning)
        history = train_bc(policy, train, holdout, config, generator, on_epoch=on_epoch)
        for epoch, nll in enumerate(history.train_nll):
            run.append_metrics({
                "epoch": epoch + 1, "losses/bc_nll": nll, "losses/bc_mse": history.train_mse[epoch],
                "charts/bc_holdout_mse": history.holdout_mse[epoch] if history.holdout_mse else None,
                "charts/bc_baseline_mse": history.baseline_mse,
            })  # fmt: skip
        step_id = loaded.step_id if loaded else 0
        checkpoint = Checkpoint(
            model={name: tensor.detach().cpu() for name, tensor in policy.state_dict().items()},
            policy_config=policy.cfg,
            step_id=step_id,
            episode_count=loaded.episode_count if loaded else 0,
            update_index=loaded.update_index if loaded else 0,
            wall_time_hours=(loaded.wall_time_hours if loaded else 0.0) + history.seconds / 3600.0,
            parent_checkpoint=str(parent.resolve()) if parent else None,
            training_source="bc",
            corpus_summary={"demonstrations": sources, "frames": frames},
            settings_json=json.dumps(settings, sort_keys=True, default=str),
        )
        path = save_checkpoint(checkpoint, out or checkpoint_path(run.checkpoints, step_id))
        log.info("actor.bc.checkpoint_written", path=str(path), holdout_mse=history.kept_holdout_mse)
        return PretrainResult(path, history, len(train), len(holdout))
