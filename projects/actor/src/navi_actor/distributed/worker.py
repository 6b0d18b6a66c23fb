"""The rollout worker: one environment, one policy copy, the local trainer's collector.

:class:`RolloutWorker` is a plain class (so it can be exercised without Ray); the worker pool turns
it into a Ray actor with ``ray.remote``. The policy is built on the first :meth:`collect`, from the
weights bundle, because the learner decides the architecture (a resumed checkpoint may differ from
the settings) only after a worker has reported the environment's observation shape. A restarted
worker (Ray re-runs ``__init__``) therefore rebuilds itself from the next bundle it receives.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import structlog
import torch

from navi_actor.config import ActorSettings
from navi_actor.distributed.fragment import RolloutFragment, fragment_from_storage
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.runners.env_factory import build_environment
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.runners.shaping_adapter import ActorShaping, build_actor_shaping
from navi_actor.storage import RolloutStorage

log = structlog.get_logger()


@dataclass(frozen=True)
class WeightsBundle:
    """What the learner broadcasts after each update (CPU tensors; put in Ray's store once).

    Attributes:
        run_id: the learner's run (a reused worker must not mistake another run's version numbers).
        version: learner update index these weights come from.
        policy_config: JSON of the policy architecture.
        policy: policy ``state_dict``.
        rnd: RND ``state_dict`` (predictor and its running statistics; the learner's is authoritative).
        step_id: environment steps learned so far (positions the novelty anneal).
    """

    run_id: str
    version: int
    policy_config: str
    policy: dict[str, torch.Tensor]
    rnd: dict[str, torch.Tensor]
    step_id: int


def _environment_settings(threads: int) -> Any:
    """Simulator settings whose numba pool fits the worker's CPU share, unless the user chose one.

    numba's default pool has one thread per core of the machine; with several workers (and a
    learner) per machine those pools oversubscribe the cores and stall torch in the same process.
    """
    from navi_environment.config import EnvironmentSettings

    settings = EnvironmentSettings()
    if settings.tracer.threads != 0:  # NAVI_ENV_TRACER__THREADS was set: respect it
        return settings
    return settings.model_copy(update={"tracer": settings.tracer.model_copy(update={"threads": threads})})


class RolloutWorker:
    """Steps ``settings.rollout.num_actors`` drones and returns rollout fragments.

    Args:
        settings: the run's settings (environment, rollout and shaping groups are used).
        worker_index: this worker's slot (seeds its environment differently from the others).
        device: torch device for the environment and the policy copy.
        torch_threads: torch intra-op threads in this process (also the simulator's numba threads
            unless ``NAVI_ENV_TRACER__THREADS`` is set).
    """

    def __init__(self, settings: ActorSettings, worker_index: int, device: str, torch_threads: int) -> None:
        torch.set_num_threads(torch_threads)
        self.settings, self.worker_index, self.device = settings, worker_index, torch.device(device)
        self.built = build_environment(
            settings.environment, settings.rollout.num_actors, device, _environment_settings(torch_threads)
        )
        self.weights_key: tuple[str, int] = ("", -1)  # (run_id, version) of the loaded weights
        self.policy: NaviPolicy | None = None
        self._policy_config = ""  # JSON of the architecture the policy copy was built with
        self.shaping: ActorShaping | None = None
        self.collector: RolloutCollector | None = None
        log.info("actor.distributed.worker_ready", worker=worker_index, pid=os.getpid())

    def observation_shape(self) -> tuple[int, int, int]:
        """``(3, Az, El)`` of this worker's environment."""
        return tuple(self.built.env.observation_shape)  # type: ignore[return-value]

    def corpus_summary(self) -> dict[str, Any]:
        """What the environment simulates (stored in checkpoints)."""
        return dict(self.built.corpus_summary)

    def pid(self) -> int:
        """Process id (tests kill workers by it)."""
        return os.getpid()

    def _build(self, policy_config: PolicyConfig, step_id: int) -> None:
        settings, device = self.settings, self.device
        torch.manual_seed(settings.train.seed + 7919 * (self.worker_index + 1))
        env = self.built.env
        self.policy = NaviPolicy(policy_config).to(device)
        self.shaping = build_actor_shaping(settings, self.policy, env.num_actors, device)
        rollout = settings.rollout
        storage = RolloutStorage(
            rollout.rollout_length,
            env.num_actors,
            obs_shape=tuple(env.observation_shape),
            action_dim=policy_config.action_dim,
            state_size=self.policy.state_size,
            sequence_length=rollout.sequence_length,
            visit_features=policy_config.visits.features if self.policy.keeps_visit_features else 0,
            device=device,
        )
        seed = settings.train.seed + 1_000_003 * (self.worker_index + 1) + step_id
        fraction = settings.ppo.open_loop_fraction if self.policy.actor.chunk is not None else 0.0
        self.collector = RolloutCollector(
            env,
            self.policy,
            storage,
            shaping=self.shaping.reward,
            seed=seed,
            open_loop_fraction=fraction,
            memory=self.shaping.memory,
            noise_correlation=rollout.noise_correlation,
        )

    def _load(self, bundle: WeightsBundle) -> None:
        if self.policy is None or bundle.policy_config != self._policy_config:
            self._build(PolicyConfig.model_validate_json(bundle.policy_config), bundle.step_id)
            self._policy_config = bundle.policy_config
        assert self.policy is not None and self.shaping is not None
        self.policy.load_state_dict(bundle.policy)
        self.shaping.modules["rnd"].load_state_dict(bundle.rnd)
        self.shaping.resume_at(bundle.step_id)
        self.weights_key = (bundle.run_id, bundle.version)

    def collect(self, bundle: WeightsBundle) -> RolloutFragment:
        """Adopt ``bundle`` if it is newer, collect one rollout, and return it as a fragment.

        Args:
            bundle: the learner's newest weights (Ray resolves the object reference).

        Returns:
            The :class:`RolloutFragment`, tagged with the version the actions were sampled with.
        """
        if (bundle.run_id, bundle.version) != self.weights_key:
            self._load(bundle)
        assert self.collector is not None and self.policy is not None
        rollout = self.settings.rollout
        stats = self.collector.collect(rollout.gamma, rollout.gae_lambda)
        collector = self.collector
        assert collector.last_values is not None
        return fragment_from_storage(
            collector.storage,
            collector.last_values,  # V(s_T) as the collector bootstrapped its own GAE
            stats,
            worker_index=self.worker_index,
            run_id=self.weights_key[0],
            version=self.weights_key[1],
        )
