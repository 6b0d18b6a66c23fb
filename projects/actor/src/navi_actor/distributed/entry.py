"""``train_distributed``: the ``navi-actor train --backend ray`` entry point (CLI-independent)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from navi_actor.config import ActorSettings
from navi_actor.distributed.config import DistributedConfig
from navi_actor.distributed.learner_group import check_learners, train_data_parallel
from navi_actor.distributed.ray_runtime import check_resources, connect, require_ray
from navi_actor.distributed.trainer import DistributedSummary, DistributedTrainer
from navi_actor.telemetry import TrainingTelemetry


def train_distributed(
    settings: ActorSettings,
    config: DistributedConfig | None = None,
    *,
    artifacts_dir: Path,
    checkpoint: Path | None = None,
    telemetry: TrainingTelemetry | None = None,
    progress: Callable[[str], None] | None = None,
    ray_init: dict[str, Any] | None = None,
) -> DistributedSummary:
    """Train with Ray rollout workers and the local PPO learner; same artifacts as local training.

    Connects to (or starts) the cluster named by ``config.address``, runs one
    :class:`DistributedTrainer` to its step budget (or Ctrl+C), stops the workers, and disconnects
    if this call connected. With ``config.learners > 1`` the update runs on that many
    data-parallel ranks under Ray Train instead (:func:`train_data_parallel`); rank 0 then opens
    the telemetry socket itself, so ``telemetry`` must be None.

    Args:
        settings: resolved actor settings.
        config: distributed settings (default: ``settings.distributed`` when that group exists,
            else :class:`DistributedConfig` defaults).
        artifacts_dir: the ``artifacts/`` folder (runs and the model registry).
        checkpoint: explicit start checkpoint.
        telemetry: optional live telemetry publisher (the caller closes it).
        progress: callback receiving the human progress line.
        ray_init: extra ``ray.init`` keyword arguments when a local cluster is started.

    Returns:
        :class:`DistributedSummary`.

    Raises:
        RayUnavailableError: Ray is not installed (the message names the extra).
    """
    if config is None:
        config = getattr(settings, "distributed", None) or DistributedConfig()
    ray = require_ray()
    if config.learners > 1:
        check_learners(settings, config)  # before a cluster starts
    started = connect(config, **(ray_init or {}))
    try:
        check_resources(ray, config)
        if config.learners > 1:  # rank 0 owns telemetry, the run folder and the workers
            return train_data_parallel(
                settings, config, artifacts_dir=artifacts_dir, checkpoint=checkpoint, progress=progress
            )
        trainer = DistributedTrainer(
            settings,
            config,
            artifacts_dir=artifacts_dir,
            checkpoint=checkpoint,
            telemetry=telemetry,
            progress=progress,
        )
        try:
            return trainer.run_training()
        finally:
            trainer.close()
    finally:
        if started:
            ray.shutdown()
