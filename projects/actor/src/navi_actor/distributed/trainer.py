"""The Ray learner: the one training loop (:class:`OnPolicyRunner`) fed by Ray rollout workers.

Nothing of the loop lives here: :class:`DistributedTrainer` is an :class:`OnPolicyRunner` whose
rollout source is :class:`~navi_actor.distributed.ray_source.RayRollouts`, so checkpoints, the
registry, metrics and the summary are the local trainer's, and a run can move between
``--backend local`` and ``--backend ray`` and continue its curve either way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from navi_actor.config import ActorSettings
from navi_actor.distributed.config import DistributedConfig
from navi_actor.distributed.ray_source import RayRollouts, check_reusable, weights_bundle
from navi_actor.distributed.worker import WeightsBundle
from navi_actor.distributed.worker_pool import WorkerPool
from navi_actor.runners.on_policy_runner import OnPolicyRunner, TrainSummary
from navi_actor.telemetry import TrainingTelemetry

DistributedSummary = TrainSummary  #: the summary of a Ray run (its fault counts are filled in)


class DistributedTrainer(OnPolicyRunner):
    """Learner + worker pool for one run folder.

    Args:
        settings: resolved actor settings (same meaning as for local training).
        config: distributed settings.
        artifacts_dir: the ``artifacts/`` folder.
        checkpoint: explicit start checkpoint (``--checkpoint``).
        telemetry: optional live telemetry publisher.
        progress: callback receiving the human progress line.
        pool: an existing :class:`WorkerPool` to reuse (its workers keep their environments; the
            caller keeps ownership and shuts it down). Its settings must describe the same
            environment, rollout and shaping.
    """

    def __init__(
        self,
        settings: ActorSettings,
        config: DistributedConfig,
        *,
        artifacts_dir: Path,
        checkpoint: Path | None = None,
        telemetry: TrainingTelemetry | None = None,
        progress: Callable[[str], None] | None = None,
        pool: WorkerPool | None = None,
    ) -> None:
        if pool is not None:
            check_reusable(pool, settings, config)
        self.config = config
        self.pool = pool if pool is not None else WorkerPool(settings, config)
        try:
            source = RayRollouts(self.pool, config, owns_pool=pool is None)
            super().__init__(
                settings,
                source,
                artifacts_dir=artifacts_dir,
                checkpoint=checkpoint,
                telemetry=telemetry,
                progress=progress,
            )
        except BaseException:
            if pool is None:
                self.pool.shutdown()
            raise

    def weights_bundle(self) -> WeightsBundle:
        """The current policy and RND as CPU tensors, tagged with the learner's update index."""
        return weights_bundle(self)
