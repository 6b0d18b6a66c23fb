"""Rollouts from Ray workers: the :class:`RolloutSource` of ``navi-actor train --backend ray``.

Fragments from the :class:`WorkerPool` are laid side by side into the runner's ``[T, K*B]``
storage, GAE runs there, and the learner's RND folds every accepted observation into its running
statistics (as the local collector's RND does while stepping). After each update the new weights
go into Ray's object store once, as a versioned :class:`WeightsBundle` the workers adopt.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import torch

from navi_actor.config import ActorSettings
from navi_actor.distributed.config import DistributedConfig
from navi_actor.distributed.fragment import RolloutFragment, load_fragments, merge_stats
from navi_actor.distributed.worker import WeightsBundle
from navi_actor.distributed.worker_pool import PoolCounters, WorkerPool
from navi_actor.runners.progress import Stopwatch
from navi_actor.runners.rollout_collector import RolloutStats
from navi_actor.storage import RolloutStorage

if TYPE_CHECKING:
    from navi_actor.runners.learner_state import LearnerState
    from navi_actor.runners.on_policy_runner import OnPolicyRunner


def weights_bundle(runner: OnPolicyRunner) -> WeightsBundle:
    """The runner's current policy and RND as CPU tensors, tagged with the learner's update index."""

    def cpu(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {key: value.detach().to("cpu") for key, value in state.items()}

    return WeightsBundle(
        run_id=runner.run.run_id,
        version=runner.learner.update_index,
        policy_config=runner.policy.cfg.model_dump_json(),
        policy=cpu(runner.policy.state_dict()),
        rnd=cpu(runner.shaping.modules["rnd"].state_dict()),
        step_id=runner.counters.step_id,
    )


class RayRollouts:
    """``config.num_workers`` fragments per update from a :class:`WorkerPool`.

    Args:
        pool: the rollout workers (probed here for the observation shape and corpus).
        config: distributed settings (workers per update, staleness bound, collect-ahead).
        owns_pool: shut the workers down on :meth:`close` (False for a pool lent by the caller).
    """

    backend = "ray"

    def __init__(self, pool: WorkerPool, config: DistributedConfig, *, owns_pool: bool = True) -> None:
        self.pool, self.config, self.owns_pool = pool, config, owns_pool
        shape, self.corpus_summary = pool.probe()
        self.observation_shape = tuple(shape)
        # The learner's shaper holds the master RND; its per-drone memory is sized like a worker's.
        self.shaping_actors = pool.settings.rollout.num_actors
        self.columns = self.shaping_actors * config.num_workers
        self._pool_start = dataclasses.replace(pool.counters)
        self._runner: OnPolicyRunner | None = None
        self._bundle_ref: Any = None
        self._fragments: list[RolloutFragment] = []
        self._gather_seconds = 0.0

    def new_storage(self, state: LearnerState) -> RolloutStorage:
        return state.new_storage(self.observation_shape, self.columns)

    def start(self, runner: OnPolicyRunner) -> None:
        self._runner = runner
        self._pool_start = dataclasses.replace(self.pool.counters)
        self._bundle_ref = self.pool.ray.put(weights_bundle(runner))

    def _attached(self) -> OnPolicyRunner:
        assert self._runner is not None, "start() first"
        return self._runner

    def gather(self) -> list[RolloutFragment]:
        """The next update's fragments, fresh enough for the learner's weights version."""
        runner = self._attached()
        waited = Stopwatch()
        fragments = self.pool.gather(
            self.config.num_workers,
            runner.run.run_id,
            runner.learner.update_index,
            self._bundle_ref,
            max_staleness=self.config.max_staleness,
            collect_ahead=self.config.collect_ahead,
            on_wait=lambda: runner.heartbeat("collect"),  # alive, not updating
        )
        self._gather_seconds = waited.total()
        return fragments

    def collect(self, gamma: float, gae_lambda: float) -> RolloutStats:
        runner = self._attached()
        self._fragments = fragments = self.gather()
        last_values = load_fragments(runner.storage, fragments)
        runner.storage.compute_returns(last_values, gamma, gae_lambda)
        # The learner's RND is authoritative: its running statistics see every accepted observation,
        # as the local trainer's do during collection ([T, K*B, 3, Az, El] -> [T*K*B, 3, Az, El]).
        runner.shaping.modules["rnd"].intrinsic_reward(runner.storage.obs.flatten(0, 1), update_stats=True)
        return merge_stats(fragments)

    def before_update(self) -> None:
        """One learner: nothing to share."""

    def learned(self) -> None:
        self._bundle_ref = self.pool.ray.put(weights_bundle(self._attached()))

    def manifest(self) -> dict[str, Any]:
        return {"backend": self.backend, "distributed": self.config.model_dump(mode="json")}

    def run_counters(self) -> PoolCounters:
        """The pool's fault and staleness counts since this run started (a pool may be reused)."""
        now, start = self.pool.counters, self._pool_start
        return PoolCounters(
            dropped_fragments=now.dropped_fragments - start.dropped_fragments,
            dropped_steps=now.dropped_steps - start.dropped_steps,
            worker_restarts=now.worker_restarts - start.worker_restarts,
            workers_replaced=now.workers_replaced - start.workers_replaced,
            hung_workers_killed=now.hung_workers_killed - start.hung_workers_killed,
            staleness=list(now.staleness),
        )

    def record(self) -> dict[str, float]:
        counters = self.run_counters()
        staleness = counters.staleness
        return {
            "distributed/workers": float(self.config.num_workers),
            "distributed/weights_version": float(self._attached().learner.update_index),
            "distributed/dropped_fragments": float(counters.dropped_fragments),
            "distributed/dropped_steps": float(counters.dropped_steps),
            "distributed/worker_restarts": float(counters.worker_restarts),
            "distributed/workers_replaced": float(counters.workers_replaced),
            "distributed/hung_workers_killed": float(counters.hung_workers_killed),
            "distributed/mean_staleness": sum(staleness) / max(len(staleness), 1),
            "time/gather_wait": self._gather_seconds,
        }

    def publish(self) -> None:
        runner = self._attached()
        if runner.telemetry is None or not self._fragments:
            return
        first = min(self._fragments, key=lambda fragment: fragment.worker_index)  # worker 0's drone 0
        observation = torch.from_numpy(first.observation.copy())[None]  # [3, Az, El] -> [1, 3, Az, El]
        runner.telemetry.maybe_publish_observation(observation, runner.counters.step_id)

    def counters(self) -> dict[str, int]:
        counters = self.run_counters()
        return {
            "dropped_fragments": counters.dropped_fragments,
            "worker_restarts": counters.worker_restarts,
            "workers_replaced": counters.workers_replaced,
        }

    def settle(self) -> None:
        """The workers step their own simulators; nothing in this process to wait for."""

    def finish(self) -> None:
        """The workers' fragments in flight are dropped or reused by the pool; nothing to settle here."""

    def close(self) -> None:
        """Stop the workers (unless the pool was lent by the caller)."""
        if self.owns_pool:
            self.pool.shutdown()


def check_reusable(pool: WorkerPool, settings: ActorSettings, config: DistributedConfig) -> None:
    """A lent pool's workers must simulate and shape what this run expects."""
    for group in ("environment", "rollout", "shaping"):
        if getattr(pool.settings, group) != getattr(settings, group):
            raise ValueError(f"the worker pool was built for other {group} settings than this run's")
    if len(pool.slots) != config.num_workers:
        raise ValueError(
            f"the worker pool has {len(pool.slots)} workers, this run wants {config.num_workers}"
        )
