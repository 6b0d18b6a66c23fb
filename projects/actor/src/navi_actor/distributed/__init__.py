"""Distributed training on Ray (``navi-actor train --backend ray``; needs the ``distributed`` extra).

Rollout workers are Ray actors that each embed an environment and a policy copy and run the local
trainer's :class:`~navi_actor.runners.rollout_collector.RolloutCollector`; the learner in the driver
applies the local trainer's :class:`~navi_actor.algorithms.ppo.PPOLearner` update to their fragments
and broadcasts versioned weights. Nothing here imports Ray at module import time.
"""

from navi_actor.distributed.config import DistributedConfig
from navi_actor.distributed.entry import train_distributed
from navi_actor.distributed.ray_runtime import RayUnavailableError, require_ray
from navi_actor.distributed.trainer import DistributedSummary, DistributedTrainer

__all__ = [
    "DistributedConfig",
    "DistributedSummary",
    "DistributedTrainer",
    "RayUnavailableError",
    "require_ray",
    "train_distributed",
]
