"""Distributed training on Ray (``navi-actor train --backend ray``; needs the ``distributed`` extra).

Rollout workers are Ray actors that each embed an environment and a policy copy and run the local
trainer's :class:`~navi_actor.runners.rollout_collector.RolloutCollector`; the learner in the driver
applies the local trainer's :class:`~navi_actor.algorithms.ppo.PPOLearner` update to their fragments
and broadcasts versioned weights. Nothing here imports Ray at import time, and only the settings
group is imported eagerly, so ``navi_actor.config`` can hold ``DistributedConfig`` without a cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from navi_actor.distributed.config import DistributedConfig
from navi_common.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from navi_actor.distributed.entry import train_distributed
    from navi_actor.distributed.ray_runtime import RayUnavailableError, require_ray
    from navi_actor.distributed.trainer import DistributedSummary, DistributedTrainer

_LAZY = {
    "train_distributed": "navi_actor.distributed.entry",
    "RayUnavailableError": "navi_actor.distributed.ray_runtime",
    "require_ray": "navi_actor.distributed.ray_runtime",
    "DistributedSummary": "navi_actor.distributed.trainer",
    "DistributedTrainer": "navi_actor.distributed.trainer",
}

__all__ = [
    "DistributedConfig",
    "DistributedSummary",
    "DistributedTrainer",
    "RayUnavailableError",
    "require_ray",
    "train_distributed",
]


__getattr__ = lazy_getattr(__name__, _LAZY)
